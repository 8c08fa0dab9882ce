/*
 * mrc calibrate --check: the validation sweep. For every family, P ranks
 * as threads of this process run allreduces of 4 KiB to 64 MiB; each row
 * is the median of several timed loops (the slowest rank's time per
 * call), beside the simulator's time for the very program the calls ran
 * (pipelined, with the profile's node model), and their ratio.
 *
 * Accepts: the threads transport (the ranks share this process). Limits:
 * shm is not swept yet (its ranks are processes that `mrc launch`
 * starts); allreduce only.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/comm_internal.h"
#include "calibrate.h"
#include "cli.h"

enum { REPS = 5, MAX_RANKS = 64 };

typedef struct sweep_job {
    mrc_comm_t **comms;
    size_t count;
    int iters, nranks;
    pthread_barrier_t barrier;
    double t[MAX_RANKS][REPS];
    mrc_status_t st[MAX_RANKS];
} sweep_job_t;

typedef struct sweep_rank {
    sweep_job_t *job;
    int rank;
} sweep_rank_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One rank: a warm-up, then REPS loops of iters calls, each loop started
 * together with the other ranks. */
static void *sweep_rank(void *arg)
{
    sweep_rank_t *me = arg;
    sweep_job_t *j = me->job;
    mrc_comm_t *c = j->comms[me->rank];
    float *send = calloc(j->count + 1, sizeof *send);
    float *recv = calloc(j->count + 1, sizeof *recv);
    mrc_status_t st = send && recv ? MRC_OK : MRC_ERR_NO_MEMORY;
    for (size_t i = 0; i < j->count && st == MRC_OK; i++)
        send[i] = (float)((i + (size_t)me->rank) % 7);
    for (int w = 0; w < 2 && st == MRC_OK; w++)
        st = mrc_allreduce(send, recv, j->count, MRC_FLOAT32, MRC_SUM, c);
    for (int r = 0; r < REPS; r++) {
        pthread_barrier_wait(&j->barrier);
        double t0 = now_s();
        for (int i = 0; i < j->iters && st == MRC_OK; i++)
            st = mrc_allreduce(send, recv, j->count, MRC_FLOAT32, MRC_SUM,
                               c);
        j->t[me->rank][r] = (now_s() - t0) / j->iters;
    }
    j->st[me->rank] = st;
    free(send);
    free(recv);
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median over the loops of the slowest rank's time per call (us). */
static double slowest_median(const sweep_job_t *j)
{
    double loop[REPS];
    for (int r = 0; r < REPS; r++) {
        loop[r] = 0;
        for (int k = 0; k < j->nranks; k++)
            loop[r] = j->t[k][r] > loop[r] ? j->t[k][r] : loop[r];
    }
    qsort(loop, REPS, sizeof loop[0], by_value);
    return loop[REPS / 2] * 1e6;
}

/* Times one size on the communicators: *us measured, *pred predicted. */
static mrc_status_t time_size(mrc_comm_t **comms, int nranks, size_t bytes,
                              const mrc_profile_t *prof, double *us,
                              double *pred)
{
    sweep_job_t *j = calloc(1, sizeof *j);
    sweep_rank_t who[MAX_RANKS];
    pthread_t th[MAX_RANKS];
    if (!j)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    j->comms = comms;
    j->nranks = nranks;
    j->count = bytes / sizeof(float);
    /* A loop of a few milliseconds at least, whatever the size. */
    size_t per = ((size_t)64 << 20) / bytes;
    j->iters = per < 2 ? 2 : per > 400 ? 400 : (int)per;
    pthread_barrier_init(&j->barrier, NULL, (unsigned)nranks);
    for (int r = 0; r < nranks; r++) {
        who[r] = (sweep_rank_t){j, r};
        pthread_create(&th[r], NULL, sweep_rank, &who[r]);
    }
    mrc_status_t st = MRC_OK;
    for (int r = 0; r < nranks; r++) {
        pthread_join(th[r], NULL);
        if (st == MRC_OK)
            st = j->st[r];
    }
    pthread_barrier_destroy(&j->barrier);
    if (st == MRC_OK) {
        *us = slowest_median(j);
        mrc_sim_config_t cfg = {.mode = MRC_SIM_PIPELINED, .profile = prof};
        mrc_sim_result_t *res = NULL;
        st = mrc__comm_predict(comms[0], &cfg, &res);
        *pred = st == MRC_OK ? res->time_us : 0;
        mrc_sim_result_destroy(res);
    }
    free(j);
    return st;
}

int cal_check(const char *cmd, const mrc_profile_t *prof, int nranks,
              int quick, int json)
{
    if (strcmp(prof->transport, "threads") != 0)
        return cli_usage(cmd, "calibrate", "--check sweeps the threads "
                         "transport; this profile is of %s",
                         prof->transport);
    if (nranks > MAX_RANKS)
        return cli_usage(cmd, "calibrate", "--check runs at most %d ranks",
                         MAX_RANKS);
    static const mrc_algo_t families[] = {MRC_ALGO_RINGS, MRC_ALGO_DIRECT1,
                                          MRC_ALGO_DIRECT2, MRC_ALGO_TREE};
    char topo[32];
    snprintf(topo, sizeof topo, "ring:%d", nranks);
    /* Ranks outnumbering cores swing more (docs/simulator.md). */
    double lo = nranks > prof->cores ? 0.67 : 0.8,
           hi = nranks > prof->cores ? 1.5 : 1.25;
    int rows = 0, within = 0;
    if (json)
        printf("{\"transport\": \"threads\", \"ranks\": %d, \"rows\": [",
               nranks);
    else
        printf("%-8s %10s %12s %12s %9s\n", "family", "bytes",
               "measured(us)", "predicted", "pred/meas");
    mrc_comm_t *comms[MAX_RANKS];
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
        mrc_config_t cfg = {.topology = topo,
                            .algo = mrc_algo_name(families[f])};
        mrc_status_t st = mrc_comm_init_all(comms, nranks, &cfg);
        if (st != MRC_OK)
            return cli_fail(cmd, st);
        for (size_t b = 4096; b <= ((size_t)(quick ? 256 : 65536) << 10);
             b *= 4) {
            double us = 0, pred = 0;
            st = time_size(comms, nranks, b, prof, &us, &pred);
            if (st == MRC_ERR_UNSUPPORTED)
                continue; /* the family does not take this size */
            if (st != MRC_OK)
                break;
            double ratio = us > 0 ? pred / us : 0;
            int ok = ratio >= lo && ratio <= hi;
            within += ok;
            if (json)
                printf("%s\n  {\"family\": \"%s\", \"bytes\": %zu, "
                       "\"measured_us\": %.3f, \"predicted_us\": %.3f, "
                       "\"ratio\": %.4f, \"within\": %s}",
                       rows ? "," : "", mrc_algo_name(families[f]), b, us,
                       pred, ratio, ok ? "true" : "false");
            else
                printf("%-8s %10zu %12.1f %12.1f %9.3f%s\n",
                       mrc_algo_name(families[f]), b, us, pred, ratio,
                       ok ? "" : "  *");
            rows++;
            fflush(stdout);
        }
        for (int r = 0; r < nranks; r++)
            mrc_comm_destroy(comms[r]);
        if (st != MRC_OK && st != MRC_ERR_UNSUPPORTED)
            return cli_fail(cmd, st);
    }
    if (json)
        printf("\n], \"within\": %d, \"lo\": %.2f, \"hi\": %.2f}\n", within,
               lo, hi);
    else
        printf("%d of %d rows within %.2f-%.2f (*: outside)\n", within, rows,
               lo, hi);
    return CLI_OK;
}
