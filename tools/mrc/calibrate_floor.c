/*
 * The rates a calibration left at their fits' lower bound
 * (CAL_RATE_FLOOR_GBPS): a fit stops there when no rate in range explains
 * its probe's time (a host that changed speed during it, or a call that
 * did not depend on the rate), and a prediction that uses such a figure
 * is off by as much as 1,000 times (a node's copies past its core's
 * cache, on a host whose 1 MiB probe never left it). calibrate names
 * them.
 *
 * Accepts: any profile. Limits: only the rates whose fits keep a bound
 * (the windows', the stream's and a node's own level are none, 0, at
 * one, and their summary lines say so); a fit within CAL_AT_BOUND of the
 * bound counts as at it, as cal_fit_probes counts it.
 */
#include <stddef.h>

#include "calibrate.h"

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
        {"memory_gbps_shared", p->memory_gbps_shared},
    };
    int n = 0;
    for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++)
        if (rates[i].gbps > 0 &&
            rates[i].gbps < CAL_RATE_FLOOR_GBPS * (1 + CAL_AT_BOUND)) {
            if (n < max)
                names[n] = rates[i].name;
            n++;
        }
    return n;
}
