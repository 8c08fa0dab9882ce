/*
 * Whether the host held its speed while `mrc calibrate` measured it
 * (calibrate.h). A VM's cores can run at a fraction of their speed for a
 * minute at a time (on the build machine a 4 KiB allreduce of two threads
 * took 0.8 us in one minute and 3.9 in the next), and a probe timed in
 * such a spell fits a figure the host's other calls do not have: a
 * profile whose slot rate is half the real one, silently. Each collective
 * probe is therefore bracketed by a canary, that short call on two
 * threads: when the canary runs slower than twice the fastest one seen,
 * the probe is timed again, after waiting for the host to settle (within
 * the plan's budget), and a probe never bracketed by steady canaries is
 * counted. The run's report says how steady the host was.
 *
 * Accepts: any probe of cal_probe_once. Limits: a spell shorter than a
 * probe, between its canaries, is not seen; a calibration that starts in
 * a slow spell and never leaves it takes the slow speed as the host's
 * (its canaries all agree).
 */
#include <math.h>
#include <time.h>

#include "calibrate.h"

enum { STEADY_TRIES = 4, CANARY_COUNT = 1024, CANARY_ITERS = 300 };
#define STEADY_FACTOR 2.0
#define SETTLE_STEP_S 0.5

static cal_steady_t steady;
static double wait_budget_s;

void cal_steady_begin(double wait_s)
{
    steady = (cal_steady_t){.best_us = INFINITY};
    wait_budget_s = wait_s > 0 ? wait_s : 0;
}

cal_steady_t cal_steady_report(void)
{
    return steady;
}

static mrc_status_t canary(double *us)
{
    cal_probe_t pr = {.count = CANARY_COUNT,
                      .iters = CANARY_ITERS,
                      .reps = 3,
                      .algo = MRC_ALGO_RINGS};
    mrc_status_t st = cal_probe_once("threads", 2, &pr, us);
    /* (best_us 0: no calibration began, as for a probe made alone) */
    if (st == MRC_OK && (!(steady.best_us > 0) || *us < steady.best_us))
        steady.best_us = *us;
    return st;
}

static int slow(double us)
{
    return us > STEADY_FACTOR * steady.best_us;
}

/* A canary, and while it is slow and the budget lasts, another after a
 * pause: the last one's time. */
static mrc_status_t settle(double *us)
{
    mrc_status_t st = canary(us);
    while (st == MRC_OK && slow(*us) && steady.waited_s < wait_budget_s) {
        struct timespec pause = {0, (long)(SETTLE_STEP_S * 1e9)};
        nanosleep(&pause, NULL);
        steady.waited_s += SETTLE_STEP_S;
        st = canary(us);
    }
    return st;
}

/* The canary after a probe: right after an shm probe's processes exit
 * it ran at 16 us where it had run at 0.8 before the probe and did again
 * a moment later (the kernel freeing their memory on a core), so a slow
 * one is taken again, up to three times 20 ms apart: the fastest. A slow
 * spell of the host outlasts that. */
static mrc_status_t canary_after(double *us)
{
    mrc_status_t st = canary(us);
    for (int i = 0; i < 3 && st == MRC_OK && slow(*us); i++) {
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
        double again = 0;
        st = canary(&again);
        *us = fmin(*us, again);
    }
    return st;
}

mrc_status_t cal_probe_allreduce(const char *transport, int ranks,
                                 const cal_probe_t *pr, double *out)
{
    steady.probes++;
    for (int attempt = 1;; attempt++) {
        double before = 0, after = 0, us = 0;
        mrc_status_t st = settle(&before);
        if (st == MRC_OK)
            st = cal_probe_once(transport, ranks, pr, &us);
        if (st == MRC_OK)
            st = canary_after(&after);
        if (st != MRC_OK)
            return st;
        double worse = fmax(before, after);
        int steady_run = !slow(worse);
        if (steady_run || attempt == STEADY_TRIES ||
            steady.waited_s >= wait_budget_s) {
            steady.unsteady += !steady_run;
            if (worse > steady.worst_us)
                steady.worst_us = worse;
            *out = us;
            return MRC_OK;
        }
        steady.retried++;
    }
}

int cal_steady_held(const cal_steady_t *s)
{
    return s->probes == 0 || s->worst_us <= STEADY_FACTOR * s->best_us;
}
