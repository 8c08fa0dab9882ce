/*
 * `mrc calibrate`'s measurement (calibrate.h): the transport's message
 * probe over real communicators, and the whole profile from every probe.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "calibrate.h"
#include "common/common.h"

enum { MAX_REPS = 64, WARMUP = 20 };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Two ranks of ring:2 running the rings family: one broadcast is one
 * message and one wait, whatever the selector would pick. */
const mrc_config_t cal_turn_config = {
    .topology = "ring:2", .algo = "rings", .timeout_s = 20};

/* The probe's call: an allreduce of PROBE_COUNT floats by the rings on
 * two ranks, every call the same shape (the communicator's fast path, as
 * a program's steady calls run), each waiting on its peer's messages.
 * Median over reps of the us a call. */
enum { PROBE_COUNT = 2 };

mrc_status_t cal_turns(mrc_comm_t *c, int trips, int reps, double *out)
{
    float x[PROBE_COUNT] = {0};
    double us[MAX_REPS];
    mrc_status_t st = MRC_OK;
    for (int i = 0; i < WARMUP && st == MRC_OK; i++)
        st = mrc_allreduce(x, x, PROBE_COUNT, MRC_FLOAT32, MRC_SUM, c);
    for (int r = 0; r < reps && st == MRC_OK; r++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < 2 * trips && st == MRC_OK; i++)
            st = mrc_allreduce(x, x, PROBE_COUNT, MRC_FLOAT32, MRC_SUM, c);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double t = (double)(t1.tv_sec - t0.tv_sec) +
                   1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        us[r] = t / (2.0 * trips) * 1e6;
    }
    if (st != MRC_OK)
        return st;
    qsort(us, (size_t)reps, sizeof *us, cmp_double);
    *out = reps % 2 ? us[reps / 2] : (us[reps / 2 - 1] + us[reps / 2]) / 2;
    return MRC_OK;
}

/* The simulator's time (us) of the probe's call under profile p. */
static mrc_status_t probe_time(const mrc_profile_t *p, double *us)
{
    mrc_topo_t *t = NULL;
    mrc_embedding_t *e = NULL;
    mrc_program_t *prog = NULL;
    mrc_sim_result_t *r = NULL;
    mrc_embed_config_t ec = {.strategy = "ring"};
    mrc_compile_config_t cc = {.collective = MRC_ALLREDUCE,
                               .count = PROBE_COUNT,
                               .dtype = MRC_FLOAT32,
                               .op = MRC_SUM};
    mrc_sim_config_t sc = {.mode = MRC_SIM_PIPELINED, .profile = p};
    mrc_status_t st = mrc_topo_create(cal_turn_config.topology, &t);
    if (st == MRC_OK)
        st = mrc_embed_create(t, &ec, &e);
    if (st == MRC_OK)
        st = mrc_program_compile(e, &cc, &prog);
    if (st == MRC_OK)
        st = mrc_sim_run(prog, t, &sc, &r);
    if (st == MRC_OK)
        *us = r->time_us;
    mrc_sim_result_destroy(r);
    mrc_program_destroy(prog);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
    return st;
}

typedef struct turn_rank {
    mrc_comm_t *comm;
    int trips, reps;
    double us;
    mrc_status_t st;
    char err[256];
} turn_rank_t;

static void *turn_thread(void *arg)
{
    turn_rank_t *t = arg;
    t->st = cal_turns(t->comm, t->trips, t->reps, &t->us);
    if (t->st != MRC_OK)
        snprintf(t->err, sizeof t->err, "%s", mrc_last_error());
    return NULL;
}

static mrc_status_t message_threads(int trips, int reps, double *out)
{
    mrc_comm_t *comms[2] = {0};
    mrc_status_t st = mrc_comm_init_all(comms, 2, &cal_turn_config);
    if (st != MRC_OK)
        return st;
    turn_rank_t peer = {.comm = comms[1], .trips = trips, .reps = reps};
    pthread_t tid;
    if (pthread_create(&tid, NULL, turn_thread, &peer) != 0) {
        st = mrc__error(MRC_ERR_INTERNAL, "cannot start a thread");
        goto done;
    }
    st = cal_turns(comms[0], trips, reps, out);
    pthread_join(tid, NULL);
    if (st == MRC_OK && peer.st != MRC_OK)
        st = mrc__error(peer.st, "%s", peer.err);
done:
    mrc_comm_destroy(comms[0]);
    mrc_comm_destroy(comms[1]);
    return st;
}

/* What rank 0 of the shm probe reports through its pipe. */
typedef struct turn_report {
    mrc_status_t st;
    double us;
    char err[256];
} turn_report_t;

static void shm_rank(int rank, const char *job, int trips, int reps, int fd)
{
    turn_report_t rep = {0};
    mrc_comm_t *c = NULL;
    rep.st = mrc_comm_init_rank(&c, 2, rank, job, &cal_turn_config);
    if (rep.st == MRC_OK)
        rep.st = cal_turns(c, trips, reps, &rep.us);
    if (rep.st != MRC_OK)
        snprintf(rep.err, sizeof rep.err, "%s", mrc_last_error());
    mrc_comm_destroy(c);
    if (rank == 0 && write(fd, &rep, sizeof rep) != (ssize_t)sizeof rep)
        _exit(1);
    _exit(rep.st == MRC_OK ? 0 : 1);
}

/* Two processes of this program, joined as an shm job the way `mrc
 * launch` joins its ranks (a random job id, a private segment). */
static mrc_status_t message_shm(int trips, int reps, double *out)
{
    unsigned char r[16];
    char job[64];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        return mrc__error(MRC_ERR_INTERNAL, "no random job id");
    int n = snprintf(job, sizeof job, "cal-");
    for (size_t i = 0; i < sizeof r; i++)
        n += snprintf(job + n, sizeof job - (size_t)n, "%02x", r[i]);
    int fd[2];
    if (pipe(fd) != 0)
        return mrc__error(MRC_ERR_INTERNAL, "cannot make a pipe");
    fflush(NULL);
    pid_t pid[2] = {-1, -1};
    for (int k = 0; k < 2; k++) {
        pid[k] = fork();
        if (pid[k] == 0) {
            close(fd[0]);
            shm_rank(k, job, trips, reps, fd[1]);
        }
    }
    close(fd[1]);
    turn_report_t rep = {.st = MRC_ERR_TRANSPORT};
    ssize_t got = pid[0] > 0 && pid[1] > 0 ? read(fd[0], &rep, sizeof rep) : -1;
    close(fd[0]);
    for (int k = 0; k < 2; k++)
        if (pid[k] > 0)
            waitpid(pid[k], NULL, 0);
    if (got != (ssize_t)sizeof rep)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "the shm probe's ranks did not report");
    if (rep.st != MRC_OK)
        return mrc__error(rep.st, "shm probe: %s", rep.err);
    *out = rep.us;
    return MRC_OK;
}

mrc_status_t cal_message_us(const char *transport, int trips, int reps,
                            double *out)
{
    reps = reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;
    trips = trips < 1 ? 1 : trips;
    if (strcmp(transport, "threads") == 0)
        return message_threads(trips, reps, out);
    if (strcmp(transport, "shm") == 0)
        return message_shm(trips, reps, out);
    return mrc__error(MRC_ERR_UNSUPPORTED,
                      "no message probe for the %s transport", transport);
}

/* The probes' steps, for the progress bar: sizes of the copy sweep, the
 * shared copy, the reductions, the sync, the messages. */
enum { SWEEP = 6 };

static void tell(const cal_plan_t *plan, double done, const char *what)
{
    if (plan->progress)
        plan->progress(plan->ctx, done, what);
}

/* Copy rates of one node over vector sizes: the best in cache, the rate
 * well beyond, and where the cache ends (the largest size still above
 * the geometric mean of the two). */
static void copy_sweep(const cal_plan_t *plan, mrc_profile_t *p)
{
    size_t size[SWEEP] = {(size_t)64 << 10, (size_t)256 << 10,
                          (size_t)1 << 20,  (size_t)4 << 20,
                          (size_t)16 << 20, plan->memory_bytes};
    double rate[SWEEP];
    for (int i = 0; i < SWEEP; i++) {
        tell(plan, 0.05 * i / SWEEP, "copy");
        rate[i] = cal_copy_gbps(size[i], plan->rep_bytes, plan->reps);
    }
    p->copy_gbps_cache = rate[0];
    for (int i = 1; i < 3; i++)
        p->copy_gbps_cache = fmax(p->copy_gbps_cache, rate[i]);
    p->copy_gbps_memory = rate[SWEEP - 1];
    double edge = sqrt(p->copy_gbps_cache * p->copy_gbps_memory);
    p->cache_bytes = (double)size[0];
    for (int i = 1; i < SWEEP - 1; i++)
        if (rate[i] >= edge)
            p->cache_bytes = (double)size[i];
}

static void reduce_rates(const cal_plan_t *plan, mrc_profile_t *p)
{
    size_t cache = (size_t)256 << 10, memory = plan->memory_bytes / 2;
    int reps = plan->reps > 3 ? 3 : plan->reps;
    for (int d = 0; d < MRC_NUM_DTYPES; d++) {
        tell(plan, 0.15 + 0.6 * d / MRC_NUM_DTYPES, "reduce");
        for (int o = 0; o < MRC_NUM_OPS; o++) {
            p->reduce_gbps_cache[d][o] =
                cal_reduce_gbps((mrc_dtype_t)d, (mrc_op_t)o, cache,
                                plan->rep_bytes, plan->reps);
            if (o == MRC_SUM || plan->all_ops_beyond)
                p->reduce_gbps_memory[d][o] = cal_reduce_gbps(
                    (mrc_dtype_t)d, (mrc_op_t)o, memory, memory, reps);
        }
    }
}

mrc_status_t cal_measure_host(const cal_plan_t *plan, mrc_profile_t *p)
{
    memset(p, 0, sizeof *p);
    p->version = MRC_PROFILE_VERSION;
    snprintf(p->transport, sizeof p->transport, "%s", plan->transport);
    p->ranks = plan->ranks;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    p->cores = cores > 0 ? (int)cores : 1;
    /* The probes' ranks are this host's: they share its memory. */
    p->nodes_per_memory = plan->ranks;
    copy_sweep(plan, p);
    tell(plan, 0.05, "shared copy");
    p->memory_gbps_shared =
        cal_shared_gbps(plan->ranks, plan->memory_bytes / 2, plan->reps);
    reduce_rates(plan, p);
    cal_release();
    if (p->copy_gbps_cache <= 0 || p->copy_gbps_memory <= 0 ||
        p->memory_gbps_shared <= 0)
        return mrc__error(MRC_ERR_NO_MEMORY,
                          "the copy probes could not allocate %zu bytes",
                          plan->memory_bytes);
    return MRC_OK;
}

mrc_status_t cal_set_costs(mrc_profile_t *p, double sync_us, double call_us)
{
    /* message_us is fitted through the simulator, so that the model
     * times the probe's own call as measured: the program's time with a
     * message cost of 0 and of 1 us gives how many messages follow one
     * another in it, and the rest of the call is theirs. */
    p->sync_us = sync_us;
    double t0 = 0, t1 = 0;
    p->message_us = 0;
    mrc_status_t st = probe_time(p, &t0);
    p->message_us = 1;
    if (st == MRC_OK)
        st = probe_time(p, &t1);
    if (st != MRC_OK)
        return st;
    double chain = t1 - t0;
    p->message_us = chain > 0 && call_us > t0 ? (call_us - t0) / chain : 0;
    return MRC_OK;
}

mrc_status_t cal_measure(const cal_plan_t *plan, mrc_profile_t *p)
{
    mrc_status_t st = cal_measure_host(plan, p);
    if (st != MRC_OK)
        return st;
    tell(plan, 0.75, "sync");
    int processes = strcmp(plan->transport, "shm") == 0;
    double sync = cal_sync_us(processes, plan->trips, plan->reps);
    if (sync < 0)
        return MRC_ERR_INTERNAL;
    tell(plan, 0.85, "messages");
    double msg = 0;
    st =
        cal_message_us(plan->transport, plan->trips / 10 + 1, plan->reps, &msg);
    if (st != MRC_OK)
        return st;
    st = cal_set_costs(p, sync, msg);
    tell(plan, 1, "done");
    return st;
}
