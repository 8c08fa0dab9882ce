/*
 * The rates a calibration left at its fits' lower bound (0.01 GB/s):
 * a fit stops there when no rate in range explains its probe's time (a
 * host that changed speed during it, or a call that did not depend on
 * the rate), and a prediction that uses such a figure is off by as much
 * as 1,000 times (a node's copies past its core's cache, on a host
 * whose 1 MiB probe never left it). calibrate names them.
 *
 * Accepts: any profile. Limits: the rates whose fits are read as none
 * at a bound (the windows', the stream's, a node's own level) are 0
 * and never named; a rate fitted just above the bound is not named.
 */
#include <stddef.h>

#include "calibrate.h"

#define FLOOR_GBPS 0.01

int cal_rates_at_floor(const mrc_profile_t *p, const char **names, int max)
{
    const struct {
        const char *name;
        double gbps;
    } rates[] = {
        {"slot_gbps", p->slot_gbps},
        {"peer_gbps_cache", p->peer_gbps_cache},
        {"peer_gbps_shared", p->peer_gbps_shared},
        {"kernel_gbps", p->kernel_gbps},
        {"copy_gbps_shared", p->copy_gbps_shared},
        {"window_gbps", p->window_gbps},
        {"stream_gbps", p->stream_gbps},
        {"memory_gbps_shared", p->memory_gbps_shared},
    };
    int n = 0;
    for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++)
        /* (a fit is at its bound below 1.001 of it: fit_probes) */
        if (rates[i].gbps > 0 && rates[i].gbps < FLOOR_GBPS * 1.001) {
            if (n < max)
                names[n] = rates[i].name;
            n++;
        }
    return n;
}
