/*
 * One rank of the shared-memory tests, started by `mrc launch`:
 *
 *   shm_rank sweep [TOPOLOGY [STRATEGY [REPLICA_SIZE]]]
 *                               every collective, dtype and op, counts
 *                               0, 1, < N, odd and large, in place and
 *                               not, checked element by element
 *   shm_rank quick [TOPOLOGY [STRATEGY [REPLICA_SIZE]]]
 *                               every collective once (1001 int32)
 *   shm_rank die-small          the same with 2 elements (the one-step path)
 *   shm_rank sweep-odd          the sweep's sums and averages with every
 *                               buffer at an odd address
 *   shm_rank sweep-shared       the sweep with every buffer from
 *                               mrc_mem_alloc (the peers map it)
 *   shm_rank die                the last rank kills itself in the middle of
 *                               an allreduce; the others must see the lost
 *                               peer and then a poisoned communicator
 *   shm_rank runahead           MRC_ALGO=rings: 2000 reduces of 4 KiB to
 *                               rank 0, busy 50 us between calls: the
 *                               others may run only a few calls ahead of it
 *                               (the channel's slots), not all of them into
 *                               its memory (so every rank takes about as
 *                               long as the root, and 50 ms at least);
 *                               results exact
 *   shm_rank endsbehind         (3 ranks, direct1, local completion) five
 *                               small reduces that rank 1 runs ahead of
 *                               rank 0, then a 128 KiB broadcast by rank 1
 *                               while rank 0 sleeps 1.5 s: rank 1's must
 *                               return within 0.5 s; results exact
 *   shm_rank wideahead          (2 ranks, direct1, local completion) 40
 *                               reduces of 4 KiB while rank 0 sleeps 1 s:
 *                               rank 1 runs 12 within 0.5 s and is held
 *                               before its 40th (0.9 s); results exact
 *   shm_rank sendcopy           (2 ranks, MRC_ALGO=direct1) allgathers of
 *                               64 KiB blocks on send buffers a, a, in
 *                               place, b; reduce-scatters on b, b;
 *                               allgathers of blocks past 8 MiB on a, a;
 *                               an allgather on b, a small allreduce, b:
 *                               new contents each call, results exact
 *                               (the script reads from MRC_DEBUG=TRACE
 *                               how each send buffer went)
 *   shm_rank mismatch WHAT      the last rank calls differently (WHAT:
 *                               count, large, path, dtype, op, root, or
 *                               split: count, and the last rank takes the
 *                               program's path, MRC_NO_DIRECT): every
 *                               rank must fail naming both calls, and then
 *                               refuse the next call at once
 *   shm_rank mismatch-local WHAT  with local completion (MRC_COMPLETION):
 *                               a reduce to rank 0 whose last rank has 17
 *                               elements against 16 (WHAT: count), or in
 *                               which each rank names the next the root
 *                               (WHAT: roots: at 2 ranks nobody receives);
 *                               every rank must fail, in that call or the
 *                               next; rootsloop: such reduces, 40 in a row,
 *                               until one fails (within 17 calls on a
 *                               rank that began them with its peer: the
 *                               ranks look at their unheard calls every
 *                               16), then an allreduce;
 *                               rootthenleaf: broadcasts, the first with
 *                               two roots, then 40 that the first's roots
 *                               only receive
 *
 * Under MRC_ALGO the sweep's cases that the family does not apply to
 * must fail as such (MRC_ERR_UNSUPPORTED) and are counted as skipped.
 *
 * Prints one line per rank; exits 0 only when everything held.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "reduce/reduce.h"
#include "reference.h"
#include "mrc/mrc.h"
#include "program/plan.h"
#include "support/sweep.h"

/* 1: buffers start one byte past malloc's (sweep-odd). */
static size_t odd;
/* 1: buffers from mrc_mem_alloc (sweep-shared). */
static int shared;

static char *buf_alloc(size_t bytes)
{
    void *p = NULL;
    if (!shared)
        return malloc(bytes);
    return mrc_mem_alloc(bytes, &p) == MRC_OK ? p : NULL;
}

static void buf_free(void *p)
{
    if (!shared)
        free(p);
    else if (mrc_mem_free(p) != MRC_OK)
        abort(); /* it returned it: a free that fails is a bug */
}

/* Cases MRC_ALGO's family does not apply to. */
static long skipped;

/* One case; returns the number of wrong elements, or -1 if the call
 * failed. */
static long one_case(mrc_comm_t *comm, mrc_collective_t c, size_t count,
                     mrc_dtype_t d, mrc_op_t op, int in_place, int root)
{
    int r = mrc_comm_rank(comm), n = mrc_comm_size(comm);
    size_t es = mrc_dtype_size(d);
    size_t in = c == MRC_REDUCE_SCATTER ? count * (size_t)n : count;
    size_t out = c == MRC_ALLGATHER ? count * (size_t)n : count;
    size_t big = (in > out ? in : out) + 1;
    char *a = buf_alloc(big * es + odd), *b = buf_alloc(big * es + odd);
    if (!a || !b) {
        buf_free(a);
        buf_free(b);
        return -1;
    }
    memset(a, 0xab, big * es + odd);
    memset(b, 0xcd, big * es + odd);
    char *send, *recv;
    mrc__ref_place(c, in_place, count, es, r, a + odd, b + odd, &send, &recv);
    mrc__ref_fill(send, c, count, r, n, d, op);
    mrc_status_t st = mrc__ref_call(c, send, recv, count, d, op, root, comm);
    if (st == MRC_ERR_UNSUPPORTED &&
        !mrc__ref_family_applies(c, count, d, op, n)) {
        skipped++;
        buf_free(a);
        buf_free(b);
        return 0;
    }
    long wrong = st == MRC_OK
                     ? (long)mrc__ref_check(recv, c, count, r, n, root, d, op)
                     : -1;
    if (st != MRC_OK)
        fprintf(stderr, "rank %d: %s\n", r, mrc_last_error());
    buf_free(a);
    buf_free(b);
    return wrong;
}

/* Exactly three calls (for MRC_DEBUG=TRACE: one line each). */
static int three(mrc_comm_t *comm)
{
    long w = one_case(comm, MRC_ALLREDUCE, 1001, MRC_FLOAT32, MRC_SUM, 0, 0);
    w += one_case(comm, MRC_BROADCAST, 1001, MRC_FLOAT32, MRC_SUM, 0, 0);
    w += one_case(comm, MRC_REDUCE_SCATTER, 7, MRC_INT32, MRC_MAX, 0, 0);
    return w != 0;
}

/* Call k's value of element i of rank r's block: new in every call, so
 * that a read of a buffer as an earlier call left it shows. */
static int32_t send_value(int r, int k, size_t i)
{
    return (int32_t)(r * 1000003 + k * 7919 + (int)i);
}

/* One call of sendcopy: an allgather from `send` (or a reduce-scatter
 * from 2 blocks there) of `count` int32 a block; wrong elements, or -1. */
static long send_copy_call(mrc_comm_t *comm, int k, int32_t *send,
                           int32_t *recv, size_t count, int scatter)
{
    int r = mrc_comm_rank(comm), n = mrc_comm_size(comm);
    size_t in = scatter ? count * (size_t)n : count;
    for (size_t i = 0; i < in; i++)
        send[i] = send_value(r, k, i);
    mrc_status_t st =
        scatter
            ? mrc_reduce_scatter(send, recv, count, MRC_INT32, MRC_SUM, comm)
            : mrc_allgather(send, recv, count, MRC_INT32, comm);
    if (st != MRC_OK) {
        fprintf(stderr, "rank %d: call %d: %s\n", r, k, mrc_last_error());
        return -1;
    }
    long wrong = 0;
    for (size_t i = 0; i < (scatter ? count : count * (size_t)n); i++) {
        int64_t want = 0;
        if (scatter)
            for (int q = 0; q < n; q++)
                want += send_value(q, k, (size_t)r * count + i);
        else
            want = send_value((int)(i / count), k, i % count);
        wrong += recv[i] != (int32_t)want;
    }
    return wrong;
}

/* sendcopy's call between two of b: an allreduce of 4 int32 (its
 * input through the window: no send buffer by reference); wrong
 * elements, or -1. */
static long between_call(mrc_comm_t *comm, int32_t *v)
{
    int r = mrc_comm_rank(comm), n = mrc_comm_size(comm);
    for (int i = 0; i < 4; i++)
        v[i] = r + i;
    if (mrc_allreduce(v, v, 4, MRC_INT32, MRC_SUM, comm) != MRC_OK) {
        fprintf(stderr, "rank %d: the call between: %s\n", r, mrc_last_error());
        return -1;
    }
    long wrong = 0;
    for (int i = 0; i < 4; i++)
        wrong += v[i] != n * (n - 1) / 2 + n * i;
    return wrong;
}

static int send_copy(mrc_comm_t *comm)
{
    /* 64 KiB blocks (by reference at 2 ranks, and into the area), and
     * blocks past the area's 8 MiB (mrc__stage_max(2)) */
    enum { COUNT = 16384, BIG = (1 << 21) + 1024 };
    int r = mrc_comm_rank(comm), n = mrc_comm_size(comm);
    size_t whole = (size_t)BIG * (size_t)n;
    int32_t *a = malloc(whole * 4), *b = malloc(whole * 4),
            *recv = malloc(whole * 4);
    long wrong = 0, failed = 0, calls = 0;
    if (a && b && recv) {
        /* a, a again, in place, b; reduce-scatters on b, b; big, big;
         * b, an allreduce that exposes no send buffer, b again */
        int32_t *sends[] = {a, a, recv + (size_t)r * COUNT, b, b, b, a, a, b};
        for (int k = 0; k < 11; k++, calls++) {
            long w = k == 9
                         ? between_call(comm, recv)
                         : send_copy_call(comm, k, sends[k < 9 ? k : 8], recv,
                                          k == 6 || k == 7 ? BIG : COUNT,
                                          k == 4 || k == 5);
            failed += w < 0;
            wrong += w > 0 ? w : 0;
        }
    } else {
        failed = 1;
    }
    printf("rank %d of %d: %ld calls, %ld wrong elements, %ld failed\n", r, n,
           calls, wrong, failed);
    free(a);
    free(b);
    free(recv);
    return wrong || failed;
}

/* What a sweep of this rank has seen so far. */
typedef struct tally {
    mrc_comm_t *comm;
    long cases, wrong, failed;
} tally_t;

static int sweep_keep(const sweep_case_t *c, void *ctx)
{
    (void)ctx;
    mrc_dtype_t d = c->dtype;
    mrc_op_t op = c->op;
    if ((!c->reducing || odd) && op != MRC_SUM && !(odd && op == MRC_AVG))
        return 0;
    /* the large count on a sample of types and ops */
    if (c->kind == 4 && !(d == MRC_FLOAT32 || d == MRC_INT8) && op != MRC_SUM)
        return 0;
    /* 8 MiB of float32: allreduce blocks of 1 MiB or more, written around
     * the cache */
    return !(c->kind == 5 && (c->coll != MRC_ALLREDUCE || d != MRC_FLOAT32 ||
                              (op != MRC_SUM && op != MRC_AVG)));
}

/* One case of the sweep; the first failure stops it. */
static int sweep_case(const sweep_case_t *c, void *ctx)
{
    tally_t *t = ctx;
    int r = mrc_comm_rank(t->comm), n = mrc_comm_size(t->comm);
    int root = (c->kind + (int)c->dtype) % n;
    long w = one_case(t->comm, c->coll, c->count, c->dtype, c->op, c->in_place,
                      root);
    t->cases++;
    if (w < 0)
        t->failed++;
    else
        t->wrong += w;
    if (w != 0 && t->failed + (w > 0) <= 3)
        fprintf(stderr,
                "rank %d: %s %s %s count %zu%s root "
                "%d: %ld wrong\n",
                r, mrc_collective_name(c->coll), mrc_dtype_name(c->dtype),
                mrc_op_name(c->op), c->count, c->in_place ? " in place" : "",
                root, w);
    return t->failed != 0;
}

static int sweep(mrc_comm_t *comm)
{
    int r = mrc_comm_rank(comm), n = mrc_comm_size(comm);
    const size_t counts[] = {0,    1,      (size_t)n - 1 ? (size_t)n - 1 : 1,
                             1001, 300007, ((size_t)1 << 21) + 5};
    tally_t t = {.comm = comm};
    sweep_plan_t plan = {.counts = counts,
                         .ncounts = 6,
                         .keep = sweep_keep,
                         .run = sweep_case,
                         .ctx = &t};
    sweep_cases(&plan);
    printf("rank %d of %d: %ld cases, %ld wrong elements, %ld failed, %ld "
           "skipped\n",
           r, n, t.cases, t.wrong, t.failed, skipped);
    return t.wrong || t.failed;
}

/* Every collective once, in place and not, on a count that no group
 * size divides: for embeddings whose sweep would take too long (the
 * routed hops of a ladder: 8 or 16 processes). */
static int quick(mrc_comm_t *comm)
{
    int r = mrc_comm_rank(comm), n = mrc_comm_size(comm);
    long wrong = 0, failed = 0;
    for (int c = 0; c < MRC_NUM_COLLECTIVES; c++)
        for (int ip = 0; ip < 2; ip++) {
            long w = one_case(comm, (mrc_collective_t)c, 1001, MRC_INT32,
                              MRC_SUM, ip, n - 1);
            failed += w < 0;
            wrong += w > 0 ? w : 0;
        }
    printf("rank %d of %d: quick, %ld wrong elements, %ld failed\n", r, n,
           wrong, failed);
    return wrong || failed;
}

static int die(mrc_comm_t *comm, size_t count)
{
    int r = mrc_comm_rank(comm), n = mrc_comm_size(comm);
    float *a = calloc(count, sizeof *a);
    if (!a)
        return 1;
    struct timespec t0, t1;
    mrc_status_t st = MRC_OK;
    for (int i = 0; i < 1000 && st == MRC_OK; i++) {
        if (r == n - 1 && i == 5)
            raise(SIGKILL);
        /* the time of the call that fails: how long the loss took to see */
        clock_gettime(CLOCK_MONOTONIC, &t0);
        st = mrc_allreduce(a, a, count, MRC_FLOAT32, MRC_SUM, comm);
        clock_gettime(CLOCK_MONOTONIC, &t1);
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) +
                  (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    int ok = st == MRC_ERR_PEER_LOST || st == MRC_ERR_TIMEOUT;
    printf("rank %d: %s after %.2f s: %s\n", r, mrc_status_name(st), secs,
           mrc_last_error());
    /* The communicator is poisoned: the next call fails at once. */
    mrc_status_t again = mrc_allreduce(a, a, count, MRC_FLOAT32, MRC_SUM, comm);
    printf("rank %d: then %s: %s\n", r, mrc_status_name(again),
           mrc_last_error());
    free(a);
    return !(ok && again == st);
}

/* The last rank's call differs from the others' in one thing. */
static int mismatch(mrc_comm_t *comm, const char *what)
{
    int r = mrc_comm_rank(comm), last = r == mrc_comm_size(comm) - 1;
    mrc_collective_t c = MRC_ALLREDUCE;
    size_t count = 100000;
    mrc_dtype_t d = MRC_FLOAT32;
    mrc_op_t op = MRC_SUM;
    int root = 0;
    if (strcmp(what, "count") == 0 || strcmp(what, "split") == 0)
        count += (size_t)last;
    else if (strcmp(what, "large") == 0) /* reading the peers' buffers */
        count = last ? (size_t)4 << 20 : (size_t)2 << 20;
    else if (strcmp(what, "path") == 0) /* one step against two */
        count = last ? 2000 : 1000;
    else if (strcmp(what, "family") == 0) /* $MRC_ALGO differs */
        count = 1000;
    else if (strcmp(what, "dtype") == 0)
        d = last ? MRC_INT32 : MRC_FLOAT32;
    else if (strcmp(what, "op") == 0)
        op = last ? MRC_MAX : MRC_SUM;
    else if (strcmp(what, "root") == 0 || strcmp(what, "rootsmall") == 0) {
        c = MRC_BROADCAST;
        root = last;
        count = what[4] ? 16 : count; /* eager messages: no rendezvous */
    } else if (strcmp(what, "reduceroot") == 0) {
        c = MRC_REDUCE;
        root = last;
        count = 16;
    } else {
        fprintf(stderr, "shm_rank: mismatch of what? '%s'\n", what);
        return 2;
    }
    float *a = calloc(count, sizeof *a), *b = calloc(count, sizeof *b);
    if (!a || !b)
        return 1;
    mrc_status_t st = mrc__ref_call(c, a, b, count, d, op, root, comm);
    printf("rank %d: %s: %s\n", r, mrc_status_name(st),
           st != MRC_OK ? mrc_last_error() : "");
    /* Gone at once: no peer may still read them. */
    free(a);
    free(b);
    float x = 1;
    mrc_status_t again = mrc_allreduce(&x, &x, 1, MRC_FLOAT32, MRC_SUM, comm);
    printf("rank %d: then %s: %s\n", r, mrc_status_name(again),
           mrc_last_error());
    return !(st == MRC_ERR_INVALID_ARG && again == st);
}

/* Calls 0 .. calls - 1 of call(comm, k) until one fails (printed, "rank
 * R: failed at call K"), then, if none did, an allreduce (a call that
 * waits, which finds a peer's failure): 0 when the first failure was a
 * disagreement. */
static int until_disagreement(mrc_comm_t *comm, int calls,
                              mrc_status_t (*call)(mrc_comm_t *comm, int k))
{
    int r = mrc_comm_rank(comm);
    for (int k = 0; k < calls; k++) {
        mrc_status_t st = call(comm, k);
        if (st != MRC_OK) {
            printf("rank %d: failed at call %d: %s: %s\n", r, k,
                   mrc_status_name(st), mrc_last_error());
            return st != MRC_ERR_INVALID_ARG;
        }
    }
    float x = 1;
    mrc_status_t st = mrc_allreduce(&x, &x, 1, MRC_FLOAT32, MRC_SUM, comm);
    printf("rank %d: %d calls, then %s: %s\n", r, calls, mrc_status_name(st),
           st != MRC_OK ? mrc_last_error() : "");
    return st != MRC_ERR_INVALID_ARG;
}

/* rootsloop: every rank names the next the root of each reduce. */
static mrc_status_t reduce_to_next(mrc_comm_t *comm, int k)
{
    (void)k;
    float a[16] = {0}, b[16] = {0};
    int r = mrc_comm_rank(comm), n = mrc_comm_size(comm);
    return mrc_reduce(a, b, 16, MRC_FLOAT32, MRC_SUM, (r + 1) % n, comm);
}

/* rootthenleaf: the last rank names itself the root of the first
 * broadcast, the others rank 0; rank 1 is the root of the rest. */
static mrc_status_t broadcast_two_roots_first(mrc_comm_t *comm, int k)
{
    float a[16] = {0}, b[16] = {0};
    int r = mrc_comm_rank(comm), n = mrc_comm_size(comm);
    int root = k > 0 ? 1 : r == n - 1 ? n - 1 : 0;
    return mrc_broadcast(a, b, 16, MRC_FLOAT32, root, comm);
}

/* Local completion: a rank that only sends returns at once, so a rank
 * may learn of a disagreement at its next call only. */
static int mismatch_local(mrc_comm_t *comm, const char *what)
{
    int r = mrc_comm_rank(comm), n = mrc_comm_size(comm);
    size_t count = 16;
    int root = 0;
    /* A rank that ran all of them ahead, before its peer began: the next
     * call that waits (the allreduce) finds the peer's failure. */
    if (strcmp(what, "rootsloop") == 0)
        return until_disagreement(comm, 40, reduce_to_next);
    /* The first broadcast's two roots hear from nobody; in the 40 after
     * they only wait and get, and must still compare their unheard first
     * call within 17 calls (the one whose look came before its peer had
     * begun it learns from that peer). */
    if (strcmp(what, "rootthenleaf") == 0)
        return until_disagreement(comm, 41, broadcast_two_roots_first);
    if (strcmp(what, "count") == 0)
        count += r == n - 1;
    else if (strcmp(what, "roots") == 0)
        root = (r + 1) % n;
    else {
        fprintf(stderr, "shm_rank: mismatch-local of what? '%s'\n", what);
        return 2;
    }
    float a[17] = {0}, b[17] = {0}, x = 1;
    mrc_status_t st = mrc_reduce(a, b, count, MRC_FLOAT32, MRC_SUM, root, comm);
    printf("rank %d: %s: %s\n", r, mrc_status_name(st),
           st != MRC_OK ? mrc_last_error() : "");
    mrc_status_t again = mrc_allreduce(&x, &x, 1, MRC_FLOAT32, MRC_SUM, comm);
    printf("rank %d: then %s: %s\n", r, mrc_status_name(again),
           again != MRC_OK ? mrc_last_error() : "");
    return !(st == MRC_ERR_INVALID_ARG || again == MRC_ERR_INVALID_ARG);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Reduce number k of a run to rank 0 (rank r's input r + k % 7 + i % 5,
 * so that the sum is exact); at the root, adds the wrong elements of the
 * result to *wrong. */
static mrc_status_t reduce_kth(mrc_comm_t *comm, float *in, float *out,
                               int count, int k, long *wrong)
{
    int r = mrc_comm_rank(comm), n = mrc_comm_size(comm);
    for (int i = 0; i < count; i++)
        in[i] = (float)(r + k % 7 + i % 5);
    mrc_status_t st = mrc_reduce(in, out, count, MRC_FLOAT32, MRC_SUM, 0, comm);
    for (int i = 0; r == 0 && st == MRC_OK && i < count; i++)
        *wrong += out[i] != (float)(n * (n - 1) / 2 + n * (k % 7 + i % 5));
    return st;
}

/* A leaf of a reduce never waits for the root: with eager sends it can
 * run ahead. It must not run far: the root would keep its messages in
 * private memory, without bound, and take longer over each. The root is
 * busy 50 us between calls (100 ms over the loop): a leaf held to a few
 * calls ahead takes nearly as long; one let run takes a few ms. */
static int runahead(mrc_comm_t *comm)
{
    enum { CALLS = 2000, COUNT = 1024 };
    int r = mrc_comm_rank(comm), n = mrc_comm_size(comm);
    float *in = malloc(COUNT * sizeof *in), *out = malloc(COUNT * sizeof *out);
    if (!in || !out)
        return 1;
    double start = now_s();
    long wrong = 0;
    mrc_status_t st = MRC_OK;
    for (int k = 0; k < CALLS && st == MRC_OK; k++) {
        st = reduce_kth(comm, in, out, COUNT, k, &wrong);
        for (double t = now_s(); r == 0 && now_s() - t < 50e-6;)
            ;
    }
    double took = now_s() - start, least = took, most = took;
    if (st == MRC_OK)
        st = mrc_allreduce(&took, &least, 1, MRC_FLOAT64, MRC_MIN, comm);
    if (st == MRC_OK)
        st = mrc_allreduce(&took, &most, 1, MRC_FLOAT64, MRC_MAX, comm);
    printf("rank %d of %d: runahead %s, %.0f ms, the fastest rank %.0f ms, "
           "the slowest %.0f, %ld wrong elements\n",
           r, n, mrc_status_name(st), took * 1e3, least * 1e3, most * 1e3,
           wrong);
    free(in);
    free(out);
    /* Held: every rank ends with the root (before the change a leaf
     * took 26 ms beside the root's 165). */
    return st != MRC_OK || wrong || least < 0.05 || least < 0.7 * most;
}

/* endsbehind (MRC_ALGO=direct1 MRC_COMPLETION=local): a rank writes
 * the end of its small reduces and broadcasts one call in 16, so after
 * five its `ended` says none. Rank 1 then broadcasts 128 KiB (past the
 * rings' windows: its gate asks that every rank ended the call before
 * last) while rank 0 is away for 1.5 s: rank 1 must find rank 0's ends
 * by its log once rank 0 has begun its fifth reduce (0.1 s in), not wait
 * for rank 0's broadcast (or time out). */
static int ends_behind(mrc_comm_t *comm)
{
    enum { SMALL = 16, LARGE = 32768 };
    int r = mrc_comm_rank(comm), n = mrc_comm_size(comm);
    float a[SMALL], b[SMALL];
    static float big[LARGE];
    long wrong = 0;
    mrc_status_t st = MRC_OK;
    /* Rank 1 runs its five ahead, so rank 0 never waits in them (a rank
     * writes its ends before it waits): its `ended` stays behind. */
    if (r == 0)
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    for (int k = 0; k < 5 && st == MRC_OK; k++) {
        for (int i = 0; i < SMALL; i++)
            a[i] = (float)(r + k + i);
        st = mrc_reduce(a, b, SMALL, MRC_FLOAT32, MRC_SUM, 0, comm);
        for (int i = 0; r == 0 && st == MRC_OK && i < SMALL; i++)
            wrong += b[i] != (float)(n * (n - 1) / 2 + n * (k + i));
    }
    if (r == 0)
        nanosleep(&(struct timespec){1, 500000000}, NULL);
    for (int i = 0; i < LARGE; i++)
        big[i] = r == 1 ? (float)(i % 97) : -1;
    double start = now_s();
    if (st == MRC_OK)
        st = mrc_broadcast(big, big, LARGE, MRC_FLOAT32, 1, comm);
    double took = now_s() - start;
    for (int i = 0; st == MRC_OK && i < LARGE; i++)
        wrong += big[i] != (float)(i % 97);
    printf("rank %d of %d: endsbehind %s, the broadcast took %.3f s, %ld "
           "wrong elements%s%s\n",
           r, n, mrc_status_name(st), took, wrong, st != MRC_OK ? ": " : "",
           st != MRC_OK ? mrc_last_error() : "");
    return st != MRC_OK || wrong || (r == 1 && took > 0.5);
}

/* wideahead (2 ranks, MRC_ALGO=direct1 MRC_COMPLETION=local): reduces
 * of 4 KiB to rank 0, whose leaf's window is in the ring of wide windows
 * (16 entries), while rank 0 is away for 1 s. Rank 1 must run its first
 * 12 within 0.5 s (a window in the call's area would hold it at its
 * third, until rank 0 ended its first), and be held before its 40th
 * until rank 0 is back (0.9 s at least: the ring bounds it); results
 * exact. */
static int wide_ahead(mrc_comm_t *comm)
{
    enum { COUNT = 1024, FREE = 12, CALLS = 40 };
    int r = mrc_comm_rank(comm), n = mrc_comm_size(comm);
    float in[COUNT], out[COUNT];
    long wrong = 0;
    mrc_status_t st = MRC_OK;
    double start = now_s(), free_s = 0;
    if (r == 0)
        nanosleep(&(struct timespec){1, 0}, NULL);
    for (int k = 0; k < CALLS && st == MRC_OK; k++) {
        st = reduce_kth(comm, in, out, COUNT, k, &wrong);
        if (k == FREE - 1)
            free_s = now_s() - start;
    }
    double took = now_s() - start;
    printf("rank %d of %d: wideahead %s, %d reduces in %.3f s, %d in %.3f "
           "s, %ld wrong elements%s%s\n",
           r, n, mrc_status_name(st), FREE, free_s, CALLS, took, wrong,
           st != MRC_OK ? ": " : "", st != MRC_OK ? mrc_last_error() : "");
    return st != MRC_OK || wrong || (r == 1 && (free_s > 0.5 || took < 0.9));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: shm_rank sweep [TOPOLOGY [STRATEGY [REPLICA_SIZE]]] | "
                "quick [...] | sweep-odd | sweep-shared | die | "
                "die-small | mismatch WHAT | mismatch-local WHAT\n");
        return 2;
    }
    int mis = strncmp(argv[1], "mismatch", 8) == 0;
    /* The last rank alone without the direct paths: it waits for
     * messages while the others wait in the two-step path. */
    const char *nr = getenv("MRC_NRANKS"), *rk = getenv("MRC_RANK");
    if (mis && argc > 2 && strcmp(argv[2], "split") == 0 && nr && rk &&
        atoi(rk) == atoi(nr) - 1)
        setenv("MRC_NO_DIRECT", "1", 1);
    mrc_config_t cfg = {.topology = argc > 2 && !mis ? argv[2] : NULL,
                        .strategy = argc > 3 && !mis ? argv[3] : NULL,
                        .replica_size = argc > 4 && !mis ? atoi(argv[4]) : 0};
    mrc_comm_t *comm = NULL;
    if (mrc_comm_init_env(&comm, &cfg) != MRC_OK) {
        fprintf(stderr, "shm_rank: %s\n", mrc_last_error());
        return 1;
    }
    odd = strcmp(argv[1], "sweep-odd") == 0;
    shared = strcmp(argv[1], "sweep-shared") == 0;
    int rc = strcmp(argv[1], "mismatch-local") == 0
                 ? mismatch_local(comm, argc > 2 ? argv[2] : "")
             : mis ? mismatch(comm, argc > 2 ? argv[2] : "")
             : strcmp(argv[1], "die") == 0        ? die(comm, 1 << 20)
             : strcmp(argv[1], "die-small") == 0  ? die(comm, 2)
             : strcmp(argv[1], "quick") == 0      ? quick(comm)
             : strcmp(argv[1], "three") == 0      ? three(comm)
             : strcmp(argv[1], "runahead") == 0   ? runahead(comm)
             : strcmp(argv[1], "endsbehind") == 0 ? ends_behind(comm)
             : strcmp(argv[1], "wideahead") == 0  ? wide_ahead(comm)
             : strcmp(argv[1], "sendcopy") == 0   ? send_copy(comm)
                                                  : sweep(comm);
    mrc_comm_destroy(comm);
    return rc;
}
