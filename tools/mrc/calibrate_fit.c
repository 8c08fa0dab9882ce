/*
 * `mrc calibrate`'s fits (calibrate.h): a figure of the profile set so
 * that the simulator times the probes' own calls as measured, by
 * bisection over the logarithm of the time.
 */
#include <math.h>
#include <string.h>

#include "calibrate.h"

static void knob_set(const fit_knob_t *k, mrc_profile_t *p,
                     const mrc_profile_t *base, double x)
{
    if (k->set)
        k->set(p, base, x);
    else
        memcpy((char *)p + k->at, &x, sizeof x);
}

/* How far the simulator's times of n probes on `ranks` nodes are from
 * their measured us, with the knob at x: the sum of log(simulated /
 * measured), 0 where the misses of those over and those under balance. */
static mrc_status_t fit_miss(mrc_profile_t *p, const fit_knob_t *set,
                             const mrc_profile_t *base, double x, int ranks,
                             const cal_probe_t *pr, const double *us, int n,
                             double *miss)
{
    mrc_status_t st = MRC_OK;
    knob_set(set, p, base, x);
    *miss = 0;
    for (int i = 0; i < n && st == MRC_OK; i++) {
        double t = 0;
        st = cal_sim_probe(p, ranks, &pr[i], &t);
        *miss += log(t > 0 ? t : 1e-12) - log(us[i] > 0 ? us[i] : 1e-12);
    }
    return st;
}

/* Sets x in [lo, hi] into p so that the simulator times n probes' calls
 * on `ranks` nodes as measured (us), as near as one figure can: one call
 * exactly, several with their misses balanced (fit_miss). Each time is
 * monotonic in x (it falls as a rate grows, rises with a cost), so a
 * bisection over its logarithm, the direction read at the bounds.
 * *clamped: measurements no x in range explains (x is then the bound). */
mrc_status_t cal_fit_probes(mrc_profile_t *p, const fit_knob_t *set, double lo,
                            double hi, int ranks, const cal_probe_t *pr,
                            const double *us, int n, int *clamped)
{
    mrc_profile_t base = *p;
    double m_lo = 0, m_hi = 0;
    mrc_status_t st = fit_miss(p, set, &base, lo, ranks, pr, us, n, &m_lo);
    if (st == MRC_OK)
        st = fit_miss(p, set, &base, hi, ranks, pr, us, n, &m_hi);
    if (st != MRC_OK)
        return st;
    int falls = m_lo >= m_hi;
    double x0 = lo, x1 = hi;
    for (int i = 0; i < 48; i++) {
        double m = 0, x = sqrt(x0 * x1);
        if ((st = fit_miss(p, set, &base, x, ranks, pr, us, n, &m)) != MRC_OK)
            return st;
        if ((m > 0) == falls)
            x0 = x;
        else
            x1 = x;
    }
    double x = sqrt(x0 * x1);
    knob_set(set, p, &base, x);
    *clamped = x > hi * (1 - CAL_AT_BOUND) || x < lo * (1 + CAL_AT_BOUND);
    return MRC_OK;
}

/* cal_fit_probes on one call. */
mrc_status_t cal_fit_family(mrc_profile_t *p, const fit_knob_t *set, double lo,
                            double hi, int ranks, const cal_probe_t *pr,
                            double us, int *clamped)
{
    return cal_fit_probes(p, set, lo, hi, ranks, pr, &us, 1, clamped);
}

/* cal_fit_family on a rings allreduce of `count` floats. */
mrc_status_t cal_fit_rings(mrc_profile_t *p, const fit_knob_t *set, double lo,
                           double hi, int ranks, size_t count, double us,
                           int *clamped)
{
    cal_probe_t pr = {.count = count};
    return cal_fit_family(p, set, lo, hi, ranks, &pr, us, clamped);
}
