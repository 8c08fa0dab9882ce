/*
 * mrc calibrate --check: the validation sweep. For every family, P ranks
 * run the collective (allreduce unless --collective says another) on
 * vectors of 4 KiB to 64 MiB; each row is the median of several
 * timed loops (the slowest rank's time per call), beside the simulator's
 * time for the very program the calls ran (pipelined, with the profile's
 * node model), and their ratio.
 *
 * Accepts: threads (the ranks are threads of this process, here) and shm
 * (P processes of this program as one job, calibrate_check_shm.c); the
 * profile must be of the transport swept. Limits: float32 sum only,
 * root 0; the header says what was measured (transport, P, profile,
 * host, load at the start, runs per row), the table does not judge the
 * machine's state.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/comm_internal.h"
#include "calibrate.h"
#include "cli.h"
#include "warm.h"

enum { MAX_RANKS = 256 };

const mrc_algo_t cal_check_families[4] = {MRC_ALGO_RINGS, MRC_ALGO_DIRECT1,
                                          MRC_ALGO_DIRECT2, MRC_ALGO_TREE};

size_t cal_check_last_bytes(int quick)
{
    return (size_t)(quick ? 256 : 65536) << 10;
}

int cal_check_iters(size_t bytes, int quick)
{
    /* --quick (tests): an eighth of the data, rougher figures. A loop
     * of small calls takes at least a few ms (400 calls of 4 KiB, 1 ms,
     * swung 3-5x between sweeps: the first row of a sweep measured 8-13
     * us where the same call takes 2.5). */
    size_t per = ((size_t)(quick ? 8 : 64) << 20) / bytes;
    int most = quick ? 50 : 4000;
    return per < 2 ? 2 : per > (size_t)most ? most : (int)per;
}

/* One call of the row's collective on a node's vector of `count` floats
 * (its blocks for reduce-scatter and allgather; root 0). */
static mrc_status_t row_call(mrc_comm_t *c, mrc_collective_t coll,
                             const float *send, float *recv, size_t count)
{
    size_t block = count / (size_t)mrc_comm_size(c);
    switch (coll) {
    case MRC_REDUCE:
        return mrc_reduce(send, recv, count, MRC_FLOAT32, MRC_SUM, 0, c);
    case MRC_BROADCAST:
        return mrc_broadcast(send, recv, count, MRC_FLOAT32, 0, c);
    case MRC_REDUCE_SCATTER:
        return mrc_reduce_scatter(send, recv, block, MRC_FLOAT32, MRC_SUM, c);
    case MRC_ALLGATHER: return mrc_allgather(send, recv, block, MRC_FLOAT32, c);
    default: return mrc_allreduce(send, recv, count, MRC_FLOAT32, MRC_SUM, c);
    }
}

/* The canary beside a row: an allreduce of CANARY_COUNT floats on the
 * sweep's rings communicator, after the warm-up (warm.h); the
 * fastest us a call of CANARY_REPS loops (a slow spell slows them all;
 * with more ranks than cores the median swung 2x between rows on a
 * steady host, and 31 of 29 rows' tries at P = 4 were timed again). The
 * same call for every row of the sweep, so that a slower one tells a
 * slower host: on each family's own communicator the canary was a call
 * of that family, its fastest taken afresh, and a spell that began
 * before a family's first row and outlasted its last went unseen
 * (threads at P = 2: direct1, direct2 and the tree all at 3x their
 * time, 0 of their rows timed again). */
enum { CANARY_COUNT = 1024, CANARY_ITERS = 100, CANARY_REPS = 3 };

typedef struct canary_call {
    mrc_comm_t *c;
    const float *x;
    float *y;
} canary_call_t;

static mrc_status_t canary_call(void *ctx)
{
    const canary_call_t *cc = ctx;
    return mrc_allreduce(cc->x, cc->y, CANARY_COUNT, MRC_FLOAT32, MRC_SUM,
                         cc->c);
}

static mrc_status_t canary(mrc_comm_t *c, double *us)
{
    float x[CANARY_COUNT] = {0}, y[CANARY_COUNT];
    double loop[CANARY_REPS];
    mrc_status_t st = MRC_OK;
    canary_call_t cc = {c, x, y};
    st = mrc__warm_up(10, canary_call, &cc, mrc__warm_agree_comm, c);
    for (int r = 0; r < CANARY_REPS && st == MRC_OK; r++) {
        double t0 = mrc__ref_now_s();
        for (int i = 0; i < CANARY_ITERS && st == MRC_OK; i++)
            st = mrc_allreduce(x, y, CANARY_COUNT, MRC_FLOAT32, MRC_SUM, c);
        loop[r] = (mrc__ref_now_s() - t0) / CANARY_ITERS * 1e6;
    }
    double fastest = loop[0];
    for (int r = 1; st == MRC_OK && r < CANARY_REPS; r++)
        fastest = fmin(fastest, loop[r]);
    *us = st == MRC_OK ? fastest : 0;
    return st;
}

mrc_status_t cal_check_loops(mrc_comm_t *c, mrc_comm_t *canary_comm,
                             mrc_collective_t coll, size_t count, int iters,
                             int runs,
                             mrc_status_t (*sync)(void *, mrc_status_t),
                             void *ctx, double *t, double canaries[2])
{
    float *send = calloc(count + 1, sizeof *send);
    float *recv = calloc(count + 1, sizeof *recv);
    mrc_status_t st = send && recv ? MRC_OK
                                   : mrc__error(MRC_ERR_NO_MEMORY,
                                                "out of memory for %zu "
                                                "floats",
                                                2 * count);
    int rank = mrc_comm_rank(c);
    for (size_t i = 0; i < count && st == MRC_OK; i++)
        send[i] = (float)((i + (size_t)rank) % 7);
    if (st == MRC_OK)
        st = canary(canary_comm, &canaries[0]);
    /* Warm: the buffers' pages, the communicator's plan, the peers
     * spinning (a quarter of a loop, at least 2 calls). */
    for (int w = 0; w < (iters / 4 > 2 ? iters / 4 : 2) && st == MRC_OK; w++)
        st = row_call(c, coll, send, recv, count);
    /* Every loop syncs, even after a failure: the threads' barrier
     * waits for all of them. */
    for (int r = 0; r < runs; r++) {
        st = sync(ctx, st);
        double t0 = mrc__ref_now_s();
        for (int i = 0; i < iters && st == MRC_OK; i++)
            st = row_call(c, coll, send, recv, count);
        t[r] = (mrc__ref_now_s() - t0) / iters;
    }
    /* The canary after, every rank's slowest pair (so that all ranks
     * decide alike on timing the row again), then the row's call once
     * more: the prediction is of the communicator's last call. */
    if (st == MRC_OK)
        st = canary(canary_comm, &canaries[1]);
    if (st == MRC_OK)
        st = mrc_allreduce(canaries, canaries, 2, MRC_FLOAT64, MRC_MAX, c);
    if (st == MRC_OK)
        st = row_call(c, coll, send, recv, count);
    free(send);
    free(recv);
    return st;
}

mrc_status_t cal_check_predict(const mrc_comm_t *c, const mrc_profile_t *prof,
                               int calls, double *us)
{
    mrc_sim_config_t cfg = {
        .mode = MRC_SIM_PIPELINED, .profile = prof, .calls = calls};
    mrc_sim_result_t *res = NULL;
    mrc_status_t st = mrc__comm_predict(c, &cfg, &res);
    *us = st == MRC_OK ? res->time_us : 0;
    mrc_sim_result_destroy(res);
    return st;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cal_check_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

cal_meas_t cal_check_meas(double *v, int n)
{
    double med = cal_check_median(v, n); /* sorts v */
    return (cal_meas_t){med * 1e6, v[0] * 1e6, v[n - 1] * 1e6};
}

/* ---- the table ---- */

void cal_table_init(cal_table_t *t, const cal_check_t *o,
                    const mrc_profile_t *prof)
{
    /* Ranks outnumbering cores swing more (docs/simulator.md). */
    int over = o->nranks > prof->cores;
    *t = (cal_table_t){
        .json = o->json, .lo = over ? 0.67 : 0.8, .hi = over ? 1.5 : 1.25};
}

/* The profile file's modification time, UTC ("" when it has none): the
 * format records no date of its own. */
static void file_date(const char *path, char *out, size_t n)
{
    struct stat info;
    struct tm tm;
    out[0] = '\0';
    if (path && stat(path, &info) == 0 && gmtime_r(&info.st_mtime, &tm))
        strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* What the run is measured under: this host's name, cores and load. */
typedef struct host_state {
    char name[256];
    long cores;
    double load[3];
    double uptime_s;
} host_state_t;

static void host_state(host_state_t *h)
{
    memset(h, 0, sizeof *h);
    if (gethostname(h->name, sizeof h->name - 1) != 0)
        snprintf(h->name, sizeof h->name, "?");
    h->cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (getloadavg(h->load, 3) != 3)
        h->load[0] = h->load[1] = h->load[2] = -1;
    FILE *f = fopen("/proc/uptime", "r");
    if (!f || fscanf(f, "%lf", &h->uptime_s) != 1)
        h->uptime_s = -1;
    if (f)
        fclose(f);
}

static void head_json(const cal_check_t *o, const mrc_profile_t *prof,
                      const host_state_t *h, const char *date,
                      const cal_rates_t *r, const cal_canary_t *k)
{
    char *file = o->profile ? cli_json_quote(o->profile) : NULL;
    char *host = cli_json_quote(h->name);
    printf("{\"transport\": \"%s\", \"collective\": \"%s\", "
           "\"ranks\": %d, \"runs\": %d, \"calls\": %d, \"host\": %s, "
           "\"cores\": %ld, "
           "\"uptime_s\": %.0f, "
           "\"load\": [%.2f, %.2f, %.2f],\n \"profile\": {\"file\": %s, "
           "\"written\": %s%s%s, \"transport\": \"%s\", \"ranks\": %d, "
           "\"cores\": %d, \"copy_gbps\": [%.2f, %.2f], "
           "\"canary_us\": %.3f},\n "
           "\"host_copy_gbps\": [%.2f, %.2f], \"host_canary_us\": %.3f, "
           "\"as_calibrated\": %s,\n "
           "\"rows\": [",
           o->transport, mrc_collective_name(o->collective), o->nranks, o->runs,
           o->calls > 1 ? o->calls : 1, host, h->cores, h->uptime_s, h->load[0],
           h->load[1], h->load[2], file ? file : "null", *date ? "\"" : "",
           *date ? date : "null", *date ? "\"" : "", prof->transport,
           prof->ranks, prof->cores, prof->copy_gbps_cache,
           prof->copy_gbps_memory, prof->canary_us, r->cache, r->memory, k->us,
           r->as_calibrated && k->held ? "true" : "false");
    free(file);
    free(host);
}

void cal_table_head(const char *cmd, const cal_table_t *t, const cal_check_t *o,
                    const mrc_profile_t *prof)
{
    host_state_t h;
    cal_rates_t r;
    cal_canary_t k;
    char date[32];
    host_state(&h);
    cal_rates_beside(prof, &r);
    /* The host's speed beside the profile's, waited for while slower (a
     * check begun in a slow spell after a calibration in a quiet one has
     * no faster canary of its own to see it by). */
    cal_canary_beside(prof, o->wait_s, &k);
    file_date(o->profile, date, sizeof date);
    if (t->json) {
        head_json(o, prof, &h, date, &r, &k);
    } else {
        printf("# check: %s, %s, P = %d, %d run%s per row; host %s, %ld "
               "cores, up %.0f s, load %.2f %.2f %.2f at the start\n",
               mrc_collective_name(o->collective), o->transport, o->nranks,
               o->runs, o->runs == 1 ? "" : "s", h.name, h.cores, h.uptime_s,
               h.load[0], h.load[1], h.load[2]);
        printf("# profile: %s (%s, %d ranks on %d cores%s%s)\n",
               o->profile ? o->profile : "measured just now", prof->transport,
               prof->ranks, prof->cores, *date ? ", written " : "", date);
        printf("# host now: copies at %.1f GB/s in cache, %.1f beyond (the "
               "profile's: %.1f, %.1f)\n",
               r.cache, r.memory, prof->copy_gbps_cache,
               prof->copy_gbps_memory);
        if (prof->canary_us > 0)
            printf("# host now: a 4 KiB allreduce of two threads takes %.2f "
                   "us (the profile's: %.2f)\n",
                   k.us, prof->canary_us);
        if (o->calls > 1)
            printf("# predicted: a call in a run of %d back to back\n",
                   o->calls);
        printf("%-8s %10s %12s %7s %12s %9s\n", "family", "bytes",
               "measured(us)", "spread", "predicted", "pred/meas");
    }
    fflush(stdout);
    if (!r.as_calibrated)
        fprintf(stderr,
                "%s: warning: this host copies at %.2f (in cache) and %.2f "
                "(beyond) times the rates its profile measured; the "
                "predictions are for the host as it was then: calibrate "
                "again when it is quiet\n",
                cmd, r.cache_ratio, r.mem_ratio);
    if (!k.held)
        fprintf(stderr,
                "%s: warning: a 4 KiB allreduce of two threads takes %.2f "
                "times its time when the profile was measured%s; the "
                "predictions are for the host as it was then\n",
                cmd, k.ratio,
                k.ratio > 1 ? " (the host runs slower than it did then)"
                            : " (the calibration ran in a slow spell: "
                              "calibrate again)");
}

void cal_table_row(cal_table_t *t, mrc_algo_t family, size_t bytes,
                   cal_meas_t m, double pred)
{
    double us = m.median, ratio = us > 0 ? pred / us : 0;
    /* The runs' spread: the slowest over the fastest. */
    double spread = m.fastest > 0 ? m.slowest / m.fastest : 0;
    int ok = ratio >= t->lo && ratio <= t->hi;
    int reach = !ok && m.fastest > 0 && pred / m.slowest <= t->hi &&
                pred / m.fastest >= t->lo;
    t->within += ok;
    t->reach += reach;
    if (t->json)
        printf("%s\n  {\"family\": \"%s\", \"bytes\": %zu, "
               "\"measured_us\": %.3f, \"fastest_us\": %.3f, "
               "\"slowest_us\": %.3f, \"predicted_us\": %.3f, "
               "\"ratio\": %.4f, \"within\": %s, \"a_run_within\": %s}",
               t->rows ? "," : "", mrc_algo_name(family), bytes, us, m.fastest,
               m.slowest, pred, ratio, ok ? "true" : "false",
               ok || reach ? "true" : "false");
    else
        printf("%-8s %10zu %12.1f %7.2f %12.1f %9.3f%s\n",
               mrc_algo_name(family), bytes, us, spread, pred, ratio,
               ok      ? ""
               : reach ? "  *~"
                       : "  *");
    t->rows++;
    fflush(stdout);
}

void cal_table_end(const cal_table_t *t, const cal_guard_t *g)
{
    if (t->json)
        printf("\n], \"within\": %d, \"a_run_within\": %d, \"lo\": %.2f, "
               "\"hi\": %.2f, \"timed_again\": %d, \"kept_slow\": %d}\n",
               t->within, t->within + t->reach, t->lo, t->hi, g->retried,
               g->unsteady);
    else
        printf("%d of %d rows within %.2f-%.2f (*: outside; *~: outside, "
               "but one of its runs is within: %d)\n"
               "host: %d rows timed again beside a slow canary (%.0f s "
               "waited), %d kept beside one\n",
               t->within, t->rows, t->lo, t->hi, t->reach, g->retried,
               g->waited_s, g->unsteady);
    fflush(stdout);
}

/* ---- the threads sweep ---- */

typedef struct sweep_job {
    mrc_comm_t **comms, **canaries_on;
    mrc_collective_t coll;
    size_t count;
    int iters, nranks, runs;
    pthread_barrier_t barrier;
    double *t; /* [rank][run] */
    mrc_status_t st[MAX_RANKS];
    double canaries[MAX_RANKS][2];
} sweep_job_t;

typedef struct sweep_rank {
    sweep_job_t *job;
    int rank;
} sweep_rank_t;

static mrc_status_t barrier_sync(void *ctx, mrc_status_t st)
{
    pthread_barrier_wait(ctx);
    return st;
}

static void *sweep_rank(void *arg)
{
    sweep_rank_t *me = arg;
    sweep_job_t *j = me->job;
    j->st[me->rank] = cal_check_loops(
        j->comms[me->rank], j->canaries_on[me->rank], j->coll, j->count,
        j->iters, j->runs, barrier_sync, &j->barrier,
        j->t + (size_t)me->rank * (size_t)j->runs, j->canaries[me->rank]);
    return NULL;
}

/* Over the loops of the slowest rank's time per call. */
static cal_meas_t slowest_runs(const sweep_job_t *j)
{
    double loop[CAL_CHECK_MAX_RUNS];
    for (int r = 0; r < j->runs; r++) {
        loop[r] = 0;
        for (int k = 0; k < j->nranks; k++)
            loop[r] = fmax(loop[r], j->t[(size_t)k * (size_t)j->runs + r]);
    }
    return cal_check_meas(loop, j->runs);
}

/* Times one size on the communicators once: *us measured, *pred
 * predicted, the canaries beside it. */
static mrc_status_t time_once(mrc_comm_t **comms, mrc_comm_t **canary,
                              const cal_check_t *o, size_t bytes,
                              const mrc_profile_t *prof, cal_meas_t *us,
                              double *pred, double canaries[2])
{
    sweep_job_t *j = calloc(1, sizeof *j);
    double *t = calloc((size_t)o->nranks * (size_t)o->runs, sizeof *t);
    sweep_rank_t who[MAX_RANKS];
    pthread_t th[MAX_RANKS];
    mrc_status_t st = MRC_OK;
    if (!j || !t) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    *j = (sweep_job_t){.comms = comms,
                       .canaries_on = canary,
                       .coll = o->collective,
                       .nranks = o->nranks,
                       .runs = o->runs,
                       .count = bytes / sizeof(float),
                       .iters = cal_check_iters(bytes, o->quick),
                       .t = t};
    pthread_barrier_init(&j->barrier, NULL, (unsigned)o->nranks);
    int started = 0;
    for (; started < o->nranks; started++) {
        who[started] = (sweep_rank_t){j, started};
        pthread_attr_t attr;
        int has = cal_pin_rank(&attr, started, o->nranks);
        int bad = pthread_create(&th[started], has ? &attr : NULL, sweep_rank,
                                 &who[started]);
        if (has)
            pthread_attr_destroy(&attr);
        if (bad)
            break;
    }
    if (started < o->nranks) { /* the others wait at the barrier */
        fprintf(stderr,
                "mrc calibrate: --check: cannot start the thread "
                "of rank %d of %d\n",
                started, o->nranks);
        exit(CLI_FAIL);
    }
    for (int r = 0; r < o->nranks; r++) {
        pthread_join(th[r], NULL);
        if (st == MRC_OK)
            st = j->st[r];
    }
    pthread_barrier_destroy(&j->barrier);
    if (st == MRC_OK) {
        *us = slowest_runs(j);
        canaries[0] = j->canaries[0][0];
        canaries[1] = j->canaries[0][1];
        st = cal_check_predict(comms[0], prof, o->calls, pred);
    }
done:
    free(t);
    free(j);
    return st;
}

/* Times one size, again while the host runs slow (cal_guard_again). */
static mrc_status_t time_size(mrc_comm_t **comms, mrc_comm_t **canary,
                              const cal_check_t *o, size_t bytes,
                              const mrc_profile_t *prof, cal_guard_t *g,
                              cal_meas_t *us, double *pred)
{
    double canaries[2] = {0, 0};
    mrc_status_t st;
    int attempt = 0;
    do
        st = time_once(comms, canary, o, bytes, prof, us, pred, canaries);
    while (st == MRC_OK && cal_guard_again(g, canaries, ++attempt));
    return st;
}

/* One family's rows on threads; MRC_OK or the failure. */
static mrc_status_t sweep_family(cal_table_t *tab, const cal_check_t *o,
                                 const mrc_profile_t *prof, mrc_algo_t f,
                                 mrc_comm_t **canary, cal_guard_t *g)
{
    char topo[32];
    snprintf(topo, sizeof topo, "ring:%d", o->nranks);
    /* Writing around the caches where the profile's runs do. */
    mrc_config_t cfg = {.topology = topo,
                        .algo = mrc_algo_name(f),
                        .stream_bytes = mrc_profile_stream_bytes(prof)};
    mrc_comm_t *comms[MAX_RANKS];
    mrc_status_t st = mrc_comm_init_all(comms, o->nranks, &cfg);
    if (st != MRC_OK)
        return st;
    for (size_t b = 4096; b <= cal_check_last_bytes(o->quick); b *= 4) {
        cal_meas_t us = {0, 0, 0};
        double pred = 0;
        st = time_size(comms, canary, o, b, prof, g, &us, &pred);
        if (st == MRC_ERR_UNSUPPORTED) {
            st = MRC_OK; /* the family does not take this size */
            continue;
        }
        if (st != MRC_OK)
            break;
        cal_table_row(tab, f, b, us, pred);
    }
    for (int r = 0; r < o->nranks; r++)
        mrc_comm_destroy(comms[r]);
    return st;
}

static int check_threads(const char *cmd, const mrc_profile_t *prof,
                         const cal_check_t *o)
{
    cal_table_t tab;
    cal_table_init(&tab, o, prof);
    cal_table_head(cmd, &tab, o, prof);
    cal_guard_t g = cal_guard_new(o->nranks, o->wait_s);
    char topo[32];
    snprintf(topo, sizeof topo, "ring:%d", o->nranks);
    mrc_config_t cfg = {.topology = topo,
                        .algo = "rings",
                        .stream_bytes = mrc_profile_stream_bytes(prof)};
    mrc_comm_t *canary[MAX_RANKS];
    mrc_status_t st = mrc_comm_init_all(canary, o->nranks, &cfg);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    for (size_t f = 0; f < 4 && st == MRC_OK; f++)
        st = sweep_family(&tab, o, prof, cal_check_families[f], canary, &g);
    for (int r = 0; r < o->nranks; r++)
        mrc_comm_destroy(canary[r]);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    cal_table_end(&tab, &g);
    return CLI_OK;
}

int cal_check(const char *cmd, const mrc_profile_t *prof, const cal_check_t *o)
{
    if (strcmp(prof->transport, o->transport) != 0)
        return cli_usage(cmd, "calibrate",
                         "--check --transport %s: %s is a profile of the %s "
                         "transport (measure one with 'mrc calibrate "
                         "--transport %s')",
                         o->transport, o->profile ? o->profile : "the profile",
                         prof->transport, o->transport);
    if (o->nranks > MAX_RANKS)
        return cli_usage(cmd, "calibrate", "--check runs at most %d ranks",
                         MAX_RANKS);
    /* The host's copy rates now, timed as its calibration timed them. */
    cal_set_stream_bytes(mrc_profile_stream_bytes(prof));
    if (strcmp(o->transport, "threads") == 0)
        return check_threads(cmd, prof, o);
    return cal_check_shm(cmd, prof, o);
}
