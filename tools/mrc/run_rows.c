/*
 * mrc run's rows: one collective on every rank in threads (one per node),
 * timed over the iterations, then run once more on fresh inputs and
 * checked element by element; and the rows printed as nccl-tests does.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/comm_internal.h"
#include "cli.h"
#include "reference.h"
#include "run.h"
#include "warm.h"
#include "clock.h"

typedef struct shared_run {
    pthread_barrier_t barrier;
    const run_cfg_t *rc;
    double t0, t1;
    int more; /* node 0's word: the warm-up goes on */
} shared_run_t;

typedef struct worker {
    shared_run_t *sh;
    mrc_comm_t *comm;
    int node; /* the thread's: the clock is node 0's (rank 0 is each
                 group's) */
    mrc_status_t st;
    char error[512];
    size_t wrong;
} worker_t;

/* k calls (while they succeed), then every rank waits for the others;
 * node 0 then reads the clock into *t. */
static void calls(worker_t *w, void *send, void *recv, int k, double *t)
{
    const run_cfg_t *rc = w->sh->rc;
    for (int i = 0; i < k && w->st == MRC_OK; i++)
        w->st = mrc__ref_call(rc->coll, send, recv, rc->count, rc->dtype,
                              rc->op, rc->root, w->comm);
    pthread_barrier_wait(&w->sh->barrier);
    if (w->node == 0)
        *t = mrc__ref_now_s();
}

/* The warm-up (warm.h): rc->warmup calls, then 20 ms more, node 0's
 * clock deciding between two barriers. A node's failure stays in its
 * w->st, and it goes on meeting the barriers with no more calls. */
typedef struct warm_ctx {
    worker_t *w;
    void *send, *recv;
} warm_ctx_t;

static mrc_status_t warm_call(void *ctx)
{
    warm_ctx_t *c = ctx;
    const run_cfg_t *rc = c->w->sh->rc;
    if (c->w->st == MRC_OK)
        c->w->st = mrc__ref_call(rc->coll, c->send, c->recv, rc->count,
                                 rc->dtype, rc->op, rc->root, c->w->comm);
    return MRC_OK;
}

static mrc_status_t warm_agree(void *ctx, int *more)
{
    warm_ctx_t *c = ctx;
    shared_run_t *sh = c->w->sh;
    if (c->w->node == 0)
        sh->more = *more;
    pthread_barrier_wait(&sh->barrier);
    *more = sh->more;
    pthread_barrier_wait(&sh->barrier); /* all have read it */
    return MRC_OK;
}

static void warm_up(worker_t *w, void *send, void *recv)
{
    warm_ctx_t c = {w, send, recv};
    (void)mrc__warm_up(w->sh->rc->warmup, warm_call, &c, warm_agree, &c);
    calls(w, send, recv, 0, &w->sh->t0); /* the clock starts here */
}

static void *work(void *arg)
{
    worker_t *w = arg;
    const run_cfg_t *rc = w->sh->rc;
    int n = mrc_comm_size(w->comm), rank = mrc_comm_rank(w->comm);
    size_t es = mrc_dtype_size(rc->dtype), big = 0, bytes = 0;
    char *send = NULL, *recv = NULL;
    /* cmd_run refused sizes that overflow; checked again all the same. */
    if (mrc__mul_size(rc->count, (size_t)n, &big) != 0 ||
        mrc__add_size(big, 1, &big) != 0 || mrc__mul_size(big, es, &bytes) != 0)
        w->st = mrc__error(MRC_ERR_INVALID_ARG, "count %zu is too large",
                           rc->count);
    else if (!(send = malloc(bytes)) || !(recv = malloc(bytes)))
        w->st = mrc__error(MRC_ERR_NO_MEMORY,
                           "out of memory for two "
                           "buffers of %zu bytes",
                           bytes);
    else
        w->st = MRC_OK;
    if (w->st == MRC_OK) {
        mrc__ref_fill(send, rc->coll, rc->count, rank, n, rc->dtype, rc->op);
        memset(recv, 0, bytes); /* touch every page before timing */
    }
    warm_up(w, send, recv);
    calls(w, send, recv, rc->iters, &w->sh->t1);
    /* The checked run: fresh inputs, a cleared output, every element. */
    if (w->st == MRC_OK) {
        mrc__ref_fill(send, rc->coll, rc->count, rank, n, rc->dtype, rc->op);
        memset(recv, 0x5a, bytes);
        w->st = mrc__ref_call(rc->coll, send, recv, rc->count, rc->dtype,
                              rc->op, rc->root, w->comm);
    }
    if (w->st == MRC_OK)
        w->wrong = mrc__ref_check(recv, rc->coll, rc->count, rank, n, rc->root,
                                  rc->dtype, rc->op);
    else
        snprintf(w->error, sizeof w->error, "%s", mrc_last_error());
    free(send);
    free(recv);
    return NULL;
}

/* --predict: the simulator's time for the program the row's calls ran
 * (pipelined, as the executor runs chunks), with the profile's node
 * model; -1 (and the error on stderr) if it cannot be had. */
int run_predict(const char *cmd, const mrc_comm_t *c, row_t *row)
{
    row->predicted_us = 0;
    if (!row->rc.predict || row->failed)
        return 0;
    mrc_sim_config_t cfg = {.mode = MRC_SIM_PIPELINED,
                            .profile = row->rc.predict};
    mrc_sim_result_t *r = NULL;
    mrc_status_t st = mrc__comm_predict(c, &cfg, &r);
    if (st != MRC_OK) {
        fprintf(stderr, "%s: --predict: %s\n", cmd, mrc_last_error());
        return -1;
    }
    row->predicted_us = r->time_us;
    mrc_sim_result_destroy(r);
    return 0;
}

/* Runs one collective on all ranks; fills the row. */
int run_row(mrc_comm_t **comms, int nranks, row_t *row, char *error,
            size_t errlen)
{
    shared_run_t sh;
    memset(&sh, 0, sizeof sh);
    sh.rc = &row->rc;
    pthread_barrier_init(&sh.barrier, NULL, (unsigned)nranks);
    worker_t *w = calloc((size_t)nranks, sizeof *w);
    pthread_t *th = calloc((size_t)nranks, sizeof *th);
    if (!w || !th) {
        free(w);
        free(th);
        pthread_barrier_destroy(&sh.barrier);
        return -1;
    }
    for (int r = 0; r < nranks; r++) {
        w[r].sh = &sh;
        w[r].comm = comms[r];
        w[r].node = r;
        pthread_create(&th[r], NULL, work, &w[r]);
    }
    row->wrong = 0;
    row->failed = 0;
    for (int r = 0; r < nranks; r++) {
        pthread_join(th[r], NULL);
        row->wrong += w[r].wrong;
        if (w[r].st != MRC_OK && !row->failed) {
            row->failed = 1;
            row->unsupported = w[r].st == MRC_ERR_UNSUPPORTED;
            snprintf(error, errlen, "rank %d: %s", r, w[r].error);
        }
    }
    int n = mrc_comm_size(comms[0]);
    size_t es = mrc_dtype_size(row->rc.dtype);
    int block =
        row->rc.coll == MRC_REDUCE_SCATTER || row->rc.coll == MRC_ALLGATHER;
    row->elems = row->rc.count * (block ? (size_t)n : 1);
    row->bytes = row->elems * es;
    double t = row->rc.iters > 0 ? (sh.t1 - sh.t0) / row->rc.iters : 0;
    row->time_us = t * 1e6;
    row->algbw = t > 0 ? (double)row->bytes / t / 1e9 : 0;
    double f = 1;
    if (row->rc.coll == MRC_ALLREDUCE)
        f = 2.0 * (n - 1) / n;
    else if (block)
        f = (double)(n - 1) / n;
    row->busbw = row->algbw * f;
    free(w);
    free(th);
    pthread_barrier_destroy(&sh.barrier);
    return 0;
}

void run_print_header(int predict)
{
    printf("%12s %12s %8s %6s %5s %10s %8s %8s %7s  %-16s %s%s\n", "size",
           "count", "type", "redop", "root", "time(us)", "algbw", "busbw",
           "#wrong", "strategy", "efficiency",
           predict ? "  collective    pred(us) pred/meas" : "");
    printf("%12s %12s %8s %6s %5s %10s %8s %8s %7s\n", "(B)", "(elements)", "",
           "", "", "", "(GB/s)", "(GB/s)", "");
}

void run_print_row(const row_t *r)
{
    int reducing = r->rc.coll != MRC_ALLGATHER && r->rc.coll != MRC_BROADCAST;
    int rooted = r->rc.coll == MRC_REDUCE || r->rc.coll == MRC_BROADCAST;
    char root[16], wrong[24];
    snprintf(root, sizeof root, "%d", r->rc.root);
    snprintf(wrong, sizeof wrong, "%zu", r->wrong);
    printf("%12zu %12zu %8s %6s %5s %10.1f %8.2f %8.2f %7s  %-16s %.4f  %s",
           r->bytes, r->elems, mrc_dtype_name(r->rc.dtype),
           reducing ? mrc_op_name(r->rc.op) : "none", rooted ? root : "-1",
           r->time_us, r->algbw, r->busbw, r->failed ? "FAIL" : wrong,
           r->strategy, r->efficiency, mrc_collective_name(r->rc.coll));
    if (r->rc.predict)
        printf("%*s %9.1f %9.3f",
               12 - (int)strlen(mrc_collective_name(r->rc.coll)), "",
               r->predicted_us,
               r->time_us > 0 ? r->predicted_us / r->time_us : 0);
    printf("\n");
}

/* The rows as one JSON object. */
void run_print_json(const char *topology, int nranks, const row_t *rows,
                    int nrows)
{
    char *topo = cli_json_quote(topology);
    printf("{\"topology\": %s, \"nodes\": %d, \"results\": [\n", topo, nranks);
    free(topo);
    for (int i = 0; i < nrows; i++) {
        const row_t *r = &rows[i];
        char *strat = cli_json_quote(r->strategy);
        printf("  {\"strategy\": %s, \"efficiency\": %.6f, "
               "\"collective\": \"%s\", \"bytes\": %zu, \"count\": %zu, "
               "\"dtype\": \"%s\", \"op\": \"%s\", \"root\": %d, "
               "\"time_us\": %.3f, \"algbw_gbps\": %.4f, \"busbw_gbps\": "
               "%.4f, \"wrong\": %zu, \"ok\": %s",
               strat, r->efficiency, mrc_collective_name(r->rc.coll), r->bytes,
               r->elems, mrc_dtype_name(r->rc.dtype), mrc_op_name(r->rc.op),
               r->rc.root, r->time_us, r->algbw, r->busbw, r->wrong,
               r->failed ? "false" : "true");
        if (r->rc.predict)
            printf(", \"predicted_us\": %.3f, \"predicted_over_measured\": "
                   "%.4f",
                   r->predicted_us,
                   r->time_us > 0 ? r->predicted_us / r->time_us : 0);
        printf("}%s\n", i + 1 < nrows ? "," : "");
        free(strat);
    }
    printf("]}\n");
}

/* Bytes the buffers of nranks ranks take (two of count x ranks elements
 * and one more each): refused with the figure rather than found out by
 * malloc or by the kernel. */
mrc_status_t run_check_buffers(uint64_t count, int nranks, mrc_dtype_t dt)
{
    char what[64];
    snprintf(what, sizeof what, "buffers (%d ranks, two each)", nranks);
    uint64_t es = mrc_dtype_size(dt);
    uint64_t per_rank = mrc__sat_mul_add(
        mrc__sat_mul_add(count, (uint64_t)nranks, 1), 2 * es, 0);
    return mrc__check_memory(mrc__sat_mul_add(per_rank, (uint64_t)nranks, 0),
                             what);
}
