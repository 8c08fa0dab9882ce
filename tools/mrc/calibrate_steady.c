/*
 * Whether the host held its speed while `mrc calibrate` measured it, or
 * while --check timed a row (calibrate.h, cal_guard_t). A VM's cores can run at
 * a fraction of their speed for a minute at a time (on the build machine a 4
 * KiB allreduce of two threads took 0.8 us in one minute and 3.9 in the next),
 * and a probe timed in such a spell fits a figure the host's other calls do not
 * have: a profile whose slot rate is half the real one, silently. Each
 * collective probe is therefore bracketed by a canary, a 4 KiB allreduce of two
 * threads (a --check row: of its own communicator): when the canary runs
 * slower than twice the fastest one seen, the measurement is timed
 * again, after waiting for the host to settle (within a budget), and one
 * never bracketed by steady canaries is counted. The run's report says
 * how steady the host was.
 *
 * Accepts: any probe of cal_probe_once (and the host's probes, the sync's:
 * cal_steady_run), any row of --check. Limits: a spell
 * shorter than a probe, between its canaries, is not seen; a calibration that
 * starts in a slow spell and never leaves it takes the slow speed as the host's
 * (its canaries all agree).
 */
#include <math.h>
#include <time.h>
#include <unistd.h>

#include "calibrate.h"
#include "common/common.h"

enum { CANARY_COUNT = 1024, CANARY_ITERS = 300 };
#define GUARD_FACTOR         2.0
#define GUARD_CROWDED_FACTOR 3.0
#define GUARD_PAUSE_S        0.5

cal_guard_t cal_guard_new(int ranks, double budget_s)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return (cal_guard_t){.factor = cores > 0 && ranks > cores
                                       ? GUARD_CROWDED_FACTOR
                                       : GUARD_FACTOR,
                         .budget_s = budget_s > 0 ? budget_s : 0};
}

void cal_guard_saw(cal_guard_t *g, double us)
{
    if (!(g->best_us > 0) || us < g->best_us)
        g->best_us = us;
}

int cal_guard_slow(const cal_guard_t *g, double us)
{
    return us > g->factor * g->best_us;
}

/* A pause of `s` seconds, or what the budget has left of them: 1, or 0
 * when it has none. */
static int guard_wait(cal_guard_t *g, double s)
{
    double left = g->budget_s - g->waited_s;
    if (left <= 0)
        return 0;
    s = s < left ? s : left;
    struct timespec pause = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    nanosleep(&pause, NULL);
    g->waited_s += s;
    return 1;
}

int cal_guard_pause(cal_guard_t *g)
{
    return guard_wait(g, GUARD_PAUSE_S);
}

int cal_guard_again(cal_guard_t *g, const double canaries[2], int attempt)
{
    cal_guard_saw(g, fmin(canaries[0], canaries[1]));
    double worse = fmax(canaries[0], canaries[1]);
    int steady = !cal_guard_slow(g, worse);
    /* Each try waits four times the last: a spell of minutes outlasts
     * a few half seconds (an shm sweep at P = 2 kept 3 rows of 11 timed
     * again beside slow canaries, 6 s waited of 300). */
    if (!steady && attempt < CAL_GUARD_TRIES &&
        guard_wait(g, GUARD_PAUSE_S * pow(4, attempt - 1))) {
        g->retried++;
        return 1;
    }
    g->measured++;
    g->unsteady += !steady;
    if (worse > g->worst_us)
        g->worst_us = worse;
    return 0;
}

int cal_guard_held(const cal_guard_t *g)
{
    return g->measured == 0 || g->worst_us <= g->factor * g->best_us;
}

/* ---- calibrate's probes ---- */

static cal_guard_t steady = {.factor = GUARD_FACTOR};

void cal_steady_begin(double wait_s)
{
    steady = cal_guard_new(2, wait_s);
}

cal_guard_t cal_steady_report(void)
{
    return steady;
}

mrc_status_t cal_host_canary(double *us)
{
    cal_probe_t pr = {.count = CANARY_COUNT,
                      .iters = CANARY_ITERS,
                      .reps = 3,
                      .algo = MRC_ALGO_RINGS};
    return cal_probe_once("threads", 2, &pr, us);
}

static mrc_status_t canary(double *us)
{
    mrc_status_t st = cal_host_canary(us);
    if (st == MRC_OK)
        cal_guard_saw(&steady, *us);
    return st;
}

void cal_canary_beside(const mrc_profile_t *prof, double budget_s,
                       cal_canary_t *k)
{
    double then = prof->canary_us;
    cal_guard_t g = cal_guard_new(2, budget_s);
    g.best_us = then;
    *k = (cal_canary_t){0, 0, 1};
    mrc_status_t st = cal_host_canary(&k->us);
    /* As a row's guard waits: each try four times the last. */
    for (int attempt = 0;
         st == MRC_OK && then > 0 && cal_guard_slow(&g, k->us) &&
         guard_wait(&g, GUARD_PAUSE_S * pow(4, attempt));
         attempt++)
        st = cal_host_canary(&k->us);
    if (st != MRC_OK || !(then > 0)) {
        k->us = st == MRC_OK ? k->us : 0;
        return;
    }
    k->ratio = k->us / then;
    k->held = k->ratio <= g.factor && k->ratio * g.factor >= 1;
}

/* A canary, and while it is slow and the budget lasts, another after a
 * pause: the last one's time. */
static mrc_status_t settle(double *us)
{
    mrc_status_t st = canary(us);
    while (st == MRC_OK && cal_guard_slow(&steady, *us) &&
           cal_guard_pause(&steady))
        st = canary(us);
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
    for (int i = 0; i < 3 && st == MRC_OK && cal_guard_slow(&steady, *us);
         i++) {
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
        double again = 0;
        st = canary(&again);
        *us = fmin(*us, again);
    }
    return st;
}

mrc_status_t cal_steady_run(mrc_status_t (*measure)(void *ctx), void *ctx)
{
    for (int attempt = 1;; attempt++) {
        double canaries[2] = {0, 0};
        mrc_status_t st = settle(&canaries[0]);
        if (st == MRC_OK)
            st = measure(ctx);
        if (st == MRC_OK)
            st = canary_after(&canaries[1]);
        if (st != MRC_OK)
            return st;
        mrc__log(MRC__LOG_INFO, -1,
                 "calibrate: canaries %.2f / %.2f us (best %.2f), try %d",
                 canaries[0], canaries[1], steady.best_us, attempt);
        if (!cal_guard_again(&steady, canaries, attempt))
            return MRC_OK;
    }
}

typedef struct probe_call {
    const char *transport;
    int ranks;
    const cal_probe_t *pr;
    double *out;
} probe_call_t;

static mrc_status_t probe_call(void *ctx)
{
    const probe_call_t *c = ctx;
    mrc_status_t st = cal_probe_once(c->transport, c->ranks, c->pr, c->out);
    mrc__log(MRC__LOG_INFO, -1, "calibrate: %s, %d ranks, %s of %zu B: %.2f us",
             c->transport, c->ranks, mrc_algo_name(c->pr->algo),
             c->pr->count * sizeof(float), *c->out);
    return st;
}

mrc_status_t cal_probe_allreduce(const char *transport, int ranks,
                                 const cal_probe_t *pr, double *out)
{
    probe_call_t c = {transport, ranks, pr, out};
    return cal_steady_run(probe_call, &c);
}
