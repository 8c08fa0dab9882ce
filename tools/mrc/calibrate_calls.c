/*
 * `mrc calibrate`'s probe calls (calibrate.h): collectives over real
 * communicators of the transport (threads of this process, or shm
 * processes it starts as one job), timed, and the simulator's time for
 * the same call.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/comm_internal.h"
#include "calibrate.h"
#include "common/common.h"
#include "warm.h"
#include "clock.h"

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
 * Median over reps of the us a call. On P ranks the message probe's
 * vector is cal_probe_count(P) floats: every fragment of both streams holds
 * some (with 2 floats on 2 ranks half the messages were empty, and the
 * transport skips those: the fitted message cost was half the real). */
enum { PROBE_COUNT = 16 };

size_t cal_probe_count(int ranks)
{
    size_t n = 4 * (size_t)(ranks > 0 ? ranks : 1);
    return n > PROBE_COUNT ? n : PROBE_COUNT;
}

typedef struct loop_call {
    mrc_comm_t *c;
    const float *send;
    float *recv;
    size_t count;
    int allgather, broadcast;
} loop_call_t;

static mrc_status_t loop_call(void *ctx)
{
    const loop_call_t *l = ctx;
    if (l->allgather)
        return mrc_allgather(l->send, l->recv, l->count, MRC_FLOAT32, l->c);
    if (l->broadcast)
        return mrc_broadcast(l->send, l->recv, l->count, MRC_FLOAT32, 0, l->c);
    return mrc_allreduce(l->send, l->recv, l->count, MRC_FLOAT32, MRC_SUM,
                         l->c);
}

/* reps loops of `iters` calls of lc (allreduces, allgathers or
 * broadcasts of `count` floats from send to recv, which may be send),
 * after the warm-up (warm.h): the median us a call. */
static mrc_status_t call_loop(loop_call_t lc, int iters, int reps, double *out)
{
    double us[MAX_REPS];
    int warmup = lc.count > ((size_t)1 << 18) ? 2 : WARMUP;
    mrc_comm_t *c = lc.c;
    mrc_status_t st =
        mrc__warm_up(warmup, loop_call, &lc, mrc__warm_agree_comm, c);
    for (int r = 0; r < reps && st == MRC_OK; r++) {
        double t0 = mrc__ref_now_s();
        for (int i = 0; i < iters && st == MRC_OK; i++)
            st = loop_call(&lc);
        us[r] = (mrc__ref_now_s() - t0) / iters * 1e6;
    }
    if (st != MRC_OK)
        return st;
    qsort(us, (size_t)reps, sizeof *us, cmp_double);
    *out = reps % 2 ? us[reps / 2] : (us[reps / 2 - 1] + us[reps / 2]) / 2;
    return MRC_OK;
}

mrc_status_t cal_turns(mrc_comm_t *c, int trips, int reps, double *out)
{
    float x[PROBE_COUNT] = {0};
    return call_loop((loop_call_t){c, x, x, PROBE_COUNT, 0, 0}, 2 * trips, reps,
                     out);
}

/* What a rank of a timed probe runs: `count` floats, `iters` calls a
 * loop, out of place as applications mostly call (the working set the
 * node model counts: a send and a receive buffer a node). */
static mrc_status_t probe_calls(mrc_comm_t *c, const cal_probe_t *pr,
                                double *out)
{
    size_t out_count =
        pr->allgather ? pr->count * (size_t)mrc_comm_size(c) : pr->count;
    float *send = malloc(pr->count * sizeof *send);
    float *recv = malloc(out_count * sizeof *recv);
    /* Written, not merely allocated: untouched pages all map the one
     * zero page, which reads from cache at any size (a 64 MiB probe ran
     * twice as fast as the same call on written buffers). */
    for (size_t i = 0; send && recv && i < out_count; i++) {
        if (i < pr->count)
            send[i] = (float)(i % 7);
        recv[i] = 0;
    }
    mrc_status_t st =
        send && recv
            ? call_loop((loop_call_t){c, send, recv, pr->count, pr->allgather,
                                      pr->broadcast},
                        pr->iters, pr->reps, out)
            : mrc__error(MRC_ERR_NO_MEMORY,
                         "calibrate: no memory for %zu floats", out_count);
    free(send);
    free(recv);
    return st;
}

mrc_status_t cal_sim_probe(const mrc_profile_t *p, int ranks,
                           const cal_probe_t *pr, double *us)
{
    char spec[32];
    snprintf(spec, sizeof spec, "ring:%d", ranks);
    mrc_topo_t *t = NULL;
    mrc_embedding_t *e = NULL;
    mrc_program_t *prog = NULL;
    mrc_sim_result_t *r = NULL;
    mrc_embed_config_t ec = {.strategy = "ring"};
    mrc_compile_config_t cc = {.collective = pr->allgather   ? MRC_ALLGATHER
                                             : pr->broadcast ? MRC_BROADCAST
                                                             : MRC_ALLREDUCE,
                               .count = pr->count,
                               .dtype = MRC_FLOAT32,
                               .op = MRC_SUM,
                               .algo = pr->algo};
    mrc_sim_config_t sc = {.mode = MRC_SIM_PIPELINED,
                           .profile = p,
                           .calls = pr->broadcast ? CAL_RUN_CALLS : 0};
    mrc_status_t st = mrc_topo_create(spec, &t);
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

static size_t stream_from; /* cal_set_stream_bytes; 0: the built-in */

void cal_set_stream_bytes(size_t bytes)
{
    stream_from = bytes;
}

size_t cal_stream_bytes(void)
{
    return stream_from ? stream_from : mrc_profile_stream_bytes(NULL);
}

/* The probes' communicators: ring:P running the probe's family (the
 * rings unless it names another), whatever the selector would pick,
 * writing around the caches where the probe or the calibration says. */
static mrc_config_t probe_config(int ranks, const cal_probe_t *pr, char *spec,
                                 size_t len)
{
    snprintf(spec, len, "ring:%d", ranks);
    mrc_config_t cfg = cal_turn_config;
    cfg.topology = spec;
    cfg.algo = mrc_algo_name(pr->algo);
    cfg.stream_bytes = pr->stream_bytes ? pr->stream_bytes : cal_stream_bytes();
    return cfg;
}

typedef struct probe_rank {
    mrc_comm_t *comm;
    const cal_probe_t *probe;
    double us;
    mrc_status_t st;
    char err[256];
} probe_rank_t;

static void *probe_thread(void *arg)
{
    probe_rank_t *t = arg;
    t->st = probe_calls(t->comm, t->probe, &t->us);
    if (t->st != MRC_OK)
        snprintf(t->err, sizeof t->err, "%s", mrc_last_error());
    return NULL;
}

enum { MAX_PROBE_RANKS = 256 };

/* Rank `rank` of `ranks`'s CPU in *set: in blocks of consecutive ranks
 * (4 ranks on 2 CPUs: 0 and 1 on the first, 2 and 3 on the second);
 * 0 on a host of one CPU. */
static int rank_cpu(int rank, int ranks, cpu_set_t *set)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 2 || ranks < 1)
        return 0;
    long cpu = ranks > cpus ? (long)rank * cpus / ranks : rank % cpus;
    CPU_ZERO(set);
    CPU_SET((int)cpu, set);
    return 1;
}

int cal_pin_rank(pthread_attr_t *attr, int rank, int ranks)
{
    cpu_set_t set;
    if (!rank_cpu(rank, ranks, &set) || pthread_attr_init(attr) != 0)
        return 0;
    if (pthread_attr_setaffinity_np(attr, sizeof set, &set) != 0) {
        pthread_attr_destroy(attr);
        return 0;
    }
    return 1;
}

void cal_pin_self(int rank, int ranks)
{
    cpu_set_t set;
    if (rank_cpu(rank, ranks, &set))
        (void)sched_setaffinity(0, sizeof set, &set);
}

/* Rank 0 of a probe is the calling thread: on its CPU while it runs, its
 * own CPUs again after (*saved; 0 if they could not be read). */
static int pin_caller(int ranks, cpu_set_t *saved)
{
    cpu_set_t set;
    if (!rank_cpu(0, ranks, &set) ||
        pthread_getaffinity_np(pthread_self(), sizeof *saved, saved) != 0)
        return 0;
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

/* The probe on `ranks` threads of this process; rank 0's figure. */
static mrc_status_t probe_threads(int ranks, const cal_probe_t *pr, double *out)
{
    static mrc_comm_t *comms[MAX_PROBE_RANKS];
    static probe_rank_t peer[MAX_PROBE_RANKS];
    pthread_t tid[MAX_PROBE_RANKS];
    char spec[32];
    mrc_config_t cfg = probe_config(ranks, pr, spec, sizeof spec);
    mrc_status_t st = mrc_comm_init_all(comms, ranks, &cfg);
    if (st != MRC_OK)
        return st;
    cpu_set_t saved;
    int pinned = pin_caller(ranks, &saved);
    int started = 1;
    for (; started < ranks; started++) {
        peer[started] = (probe_rank_t){.comm = comms[started], .probe = pr};
        pthread_attr_t attr;
        int has = cal_pin_rank(&attr, started, ranks);
        int bad = pthread_create(&tid[started], has ? &attr : NULL,
                                 probe_thread, &peer[started]);
        if (has)
            pthread_attr_destroy(&attr);
        if (bad)
            break;
    }
    if (started < ranks) {
        /* The started ranks wait for this one until their timeout. */
        st = mrc__error(MRC_ERR_INTERNAL, "cannot start a thread");
        mrc_comm_destroy(comms[0]);
        comms[0] = NULL;
    } else
        st = probe_calls(comms[0], pr, out);
    for (int k = 1; k < started; k++) {
        pthread_join(tid[k], NULL);
        if (st == MRC_OK && peer[k].st != MRC_OK)
            st = mrc__error(peer[k].st, "%s", peer[k].err);
    }
    for (int k = 0; k < ranks; k++)
        mrc_comm_destroy(comms[k]);
    if (pinned)
        pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
    return st;
}

/* What rank 0 of the shm probe reports through its pipe. */
typedef struct turn_report {
    mrc_status_t st;
    double us;
    char err[256];
} turn_report_t;

static void shm_rank(int ranks, int rank, const char *job,
                     const cal_probe_t *pr, int fd)
{
    turn_report_t rep = {0};
    mrc_comm_t *c = NULL;
    char spec[32];
    cal_pin_self(rank, ranks);
    mrc_config_t cfg = probe_config(ranks, pr, spec, sizeof spec);
    rep.st = mrc_comm_init_rank(&c, ranks, rank, job, &cfg);
    /* (whatever a $MRC_PROFILE of the caller's says: the fits time the
     * sends copied in) */
    if (rep.st == MRC_OK)
        mrc__comm_set_send_by_ref(c, pr->send_by_ref);
    if (rep.st == MRC_OK)
        rep.st = probe_calls(c, pr, &rep.us);
    if (rep.st != MRC_OK)
        snprintf(rep.err, sizeof rep.err, "%s", mrc_last_error());
    mrc_comm_destroy(c);
    if (rank == 0 && write(fd, &rep, sizeof rep) != (ssize_t)sizeof rep)
        _exit(1);
    _exit(rep.st == MRC_OK ? 0 : 1);
}

/* `ranks` processes of this program, joined as an shm job the way `mrc
 * launch` joins its ranks (a random job id, a private segment). */
static mrc_status_t probe_shm(int ranks, const cal_probe_t *pr, double *out)
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
    pid_t pid[MAX_PROBE_RANKS];
    int forked = 1;
    for (int k = 0; k < ranks; k++) {
        pid[k] = fork();
        if (pid[k] == 0) {
            close(fd[0]);
            shm_rank(ranks, k, job, pr, fd[1]);
        }
        forked &= pid[k] > 0;
    }
    close(fd[1]);
    turn_report_t rep = {.st = MRC_ERR_TRANSPORT};
    ssize_t got = forked ? read(fd[0], &rep, sizeof rep) : -1;
    close(fd[0]);
    for (int k = 0; k < ranks; k++)
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

/* The median us of a rings allreduce of `count` floats on `ranks` ranks
 * of the transport. */
mrc_status_t cal_probe_once(const char *transport, int ranks,
                            const cal_probe_t *pr, double *out)
{
    if (ranks < 2 || ranks > MAX_PROBE_RANKS)
        return mrc__error(MRC_ERR_INVALID_ARG, "calibrate: %d ranks (2..%d)",
                          ranks, MAX_PROBE_RANKS);
    if (strcmp(transport, "threads") == 0)
        return probe_threads(ranks, pr, out);
    if (strcmp(transport, "shm") == 0)
        return probe_shm(ranks, pr, out);
    return mrc__error(MRC_ERR_UNSUPPORTED,
                      "no message probe for the %s transport", transport);
}

mrc_status_t cal_message_us(const char *transport, int ranks, int trips,
                            int reps, double *out)
{
    reps = reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;
    trips = trips < 1 ? 1 : trips;
    cal_probe_t pr = {
        .count = cal_probe_count(ranks), .iters = 2 * trips, .reps = reps};
    return cal_probe_allreduce(transport, ranks, &pr, out);
}
