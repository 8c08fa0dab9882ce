/*
 * Threads transport bandwidth against the memory-bandwidth floor, measured
 * in the same run.
 *
 * An allreduce of S bytes on P ranks must at least read every input once
 * and write every output once: 2*P*S bytes of memory traffic. At the
 * machine's memory bandwidth (measured here with a parallel copy on every
 * core) that bounds the bus bandwidth at membw * (P-1) / P^2 (nccl-tests'
 * busbw = algbw * 2(P-1)/P). The table gives busbw beside that floor.
 *
 * This machine is shared, and its speed drifts by a factor of two from one
 * second to the next; both figures are therefore measured in alternation,
 * ROUNDS times each, and the best of each is kept (noise only slows).
 *
 * Usage: bench_threads [--sizes 1M,16M,64M] [--ranks 2,4,8] [--iters K]
 *                      [--rounds R]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "mrc/mrc.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- memory bandwidth: a copy on every core ----------------------------- */

typedef struct copy_job {
    char *dst, *src;
    size_t bytes;
    int reps;
} copy_job_t;

static void *copy_worker(void *arg)
{
    copy_job_t *j = arg;
    for (int r = 0; r < j->reps; r++)
        memcpy(j->dst, j->src, j->bytes);
    return NULL;
}

/* Bytes read plus written per second, best of a few runs. */
static double memory_bandwidth(int threads, size_t bytes)
{
    double best = 0;
    char *src = malloc(bytes * (size_t)threads),
         *dst = malloc(bytes * (size_t)threads);
    memset(src, 1, bytes * (size_t)threads);
    memset(dst, 2, bytes * (size_t)threads);
    for (int trial = 0; trial < 2; trial++) {
        pthread_t th[64];
        copy_job_t job[64];
        double t0 = now_s();
        for (int i = 0; i < threads; i++) {
            job[i] = (copy_job_t){dst + (size_t)i * bytes,
                                  src + (size_t)i * bytes, bytes, 4};
            pthread_create(&th[i], NULL, copy_worker, &job[i]);
        }
        for (int i = 0; i < threads; i++)
            pthread_join(th[i], NULL);
        double bw = 2.0 * 4 * (double)bytes * threads / (now_s() - t0);
        best = bw > best ? bw : best;
    }
    free(src);
    free(dst);
    return best;
}

/* ---- allreduce ---------------------------------------------------------- */

typedef struct rank_job {
    mrc_comm_t *comm;
    float *send, *recv;
    size_t count;
    int iters;
    pthread_barrier_t *barrier;
    double *t0, *t1;
    mrc_status_t st;
} rank_job_t;

static void *rank_worker(void *arg)
{
    rank_job_t *j = arg;
    /* Touch every page first: fresh buffers fault on first use. */
    for (size_t i = 0; i < j->count; i++) {
        j->send[i] = (float)(i % 5);
        j->recv[i] = 0;
    }
    j->st = mrc_allreduce(j->send, j->recv, j->count, MRC_FLOAT32, MRC_SUM,
                          j->comm); /* warm-up */
    pthread_barrier_wait(j->barrier);
    if (mrc_comm_rank(j->comm) == 0)
        *j->t0 = now_s();
    for (int i = 0; i < j->iters && j->st == MRC_OK; i++)
        j->st = mrc_allreduce(j->send, j->recv, j->count, MRC_FLOAT32, MRC_SUM,
                              j->comm);
    pthread_barrier_wait(j->barrier);
    if (mrc_comm_rank(j->comm) == 0)
        *j->t1 = now_s();
    return NULL;
}

static double allreduce_busbw(int P, size_t bytes, int iters, double *us)
{
    mrc_comm_t *comms[64];
    char spec[32];
    snprintf(spec, sizeof spec, "ring:%d", P);
    mrc_config_t cfg = {.topology = spec};
    if (mrc_comm_init_all(comms, P, &cfg) != MRC_OK) {
        fprintf(stderr, "bench: %s\n", mrc_last_error());
        exit(1);
    }
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, (unsigned)P);
    rank_job_t job[64];
    pthread_t th[64];
    double t0 = 0, t1 = 0;
    size_t count = bytes / sizeof(float);
    for (int r = 0; r < P; r++) {
        job[r] =
            (rank_job_t){comms[r], malloc(bytes), malloc(bytes), count, iters,
                         &barrier, &t0,           &t1,           MRC_OK};
        pthread_create(&th[r], NULL, rank_worker, &job[r]);
    }
    for (int r = 0; r < P; r++) {
        pthread_join(th[r], NULL);
        if (job[r].st != MRC_OK) {
            fprintf(stderr, "bench: %s\n", mrc_last_error());
            exit(1);
        }
        free(job[r].send);
        free(job[r].recv);
        mrc_comm_destroy(comms[r]);
    }
    pthread_barrier_destroy(&barrier);
    double t = (t1 - t0) / iters;
    *us = t * 1e6;
    return (double)bytes / t * 2.0 * (P - 1) / P;
}

static int parse_list(const char *s, uint64_t *out, int max)
{
    int n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && n < max;
         tok = strtok_r(NULL, ",", &save))
        if (mrc__parse_size(tok, &out[n]) == 0 && out[n] > 0)
            n++;
    return n;
}

int main(int argc, char **argv)
{
    uint64_t sizes[16] = {1 << 20, 16 << 20, 64 << 20}, ranks[16] = {2, 4, 8};
    int nsizes = 3, nranks = 3, iters = 10, rounds = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--sizes") == 0)
            nsizes = parse_list(argv[i + 1], sizes, 16);
        else if (strcmp(argv[i], "--ranks") == 0)
            nranks = parse_list(argv[i + 1], ranks, 16);
        else if (strcmp(argv[i], "--iters") == 0)
            iters = atoi(argv[i + 1]) > 0 ? atoi(argv[i + 1]) : 10;
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = atoi(argv[i + 1]) > 0 ? atoi(argv[i + 1]) : 5;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = (int)(cores > 0 ? cores : 1);
    printf("# memory bandwidth: a parallel copy on %d cores (read + write), "
           "best of %d rounds\n# floor: busbw <= membw * (P-1) / P^2; each "
           "row's membw is measured in alternation with it\n",
           threads, rounds);
    printf("%5s %10s %12s %10s %10s %10s %8s\n", "ranks", "size(B)", "time(us)",
           "busbw", "membw", "floor", "%floor");
    for (int r = 0; r < nranks; r++)
        for (int s = 0; s < nsizes; s++) {
            int P = (int)ranks[r];
            double best_bus = 0, best_mem = 0, best_us = 0;
            for (int round = 0; round < rounds; round++) {
                double mem = memory_bandwidth(threads, 64 << 20);
                double us = 0;
                double bus = allreduce_busbw(P, (size_t)sizes[s], iters, &us);
                best_mem = mem > best_mem ? mem : best_mem;
                if (bus > best_bus) {
                    best_bus = bus;
                    best_us = us;
                }
            }
            double floor = best_mem * (P - 1) / ((double)P * P);
            printf("%5d %10llu %12.1f %10.2f %10.2f %10.2f %7.0f%%\n", P,
                   (unsigned long long)sizes[s], best_us, best_bus / 1e9,
                   best_mem / 1e9, floor / 1e9, 100 * best_bus / floor);
            fflush(stdout);
        }
    return 0;
}
