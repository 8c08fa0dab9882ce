/*
 * The differential sweep: every collective on real buffers in threads,
 * checked element by element against a plain sequential reduction, over
 * node counts, the seed topologies and their strategies and groups,
 * counts 0, 1, < N, not divisible by N and large, every dtype and op, in
 * place and not. Inputs are small integers (or +-1 for products) so that
 * every result is exact whatever the order of reduction.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "reduce/reduce.h"
#include "reference.h"
#include "mrc/mrc.h"
#include "program/plan.h"
#include "support/sweep.h"

/* Exact inputs and the sequential reference live in exec/reference.c,
 * shared with `mrc run`. */
/* ---- the cases ----------------------------------------------------------- */

typedef struct sweep {
    const char *name;
    mrc_config_t cfg;
    int nranks;
    int full; /* every dtype x op, or a sample */
} sweep_t;

typedef struct worker {
    const sweep_t *sw;
    mrc_comm_t *comm;
    long cases, wrong, failures, skipped;
    char first[512];
} worker_t;

static size_t count_of(int kind, int n)
{
    switch (kind) {
    case 0: return 0;
    case 1: return 1;
    case 2: return n > 1 ? (size_t)(n - 1) : 1; /* fewer than N */
    case 3: return (size_t)(3 * n + 1);         /* not divisible */
    default: return 20011;                      /* large: many chunks */
    }
}

static void note(worker_t *w, const char *fmt, ...)
{
    if (w->first[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->first, sizeof w->first, fmt, ap);
    va_end(ap);
}

/* Under MRC_ALGO=hier, a group of n ranks that $MRC_HOSTS does not
 * split: the tests of one size skip it. */
static int hier_skips(int n)
{
    const char *a = getenv("MRC_ALGO"), *h = getenv("MRC_HOSTS");
    return a && strcmp(a, "hier") == 0 && h && atoi(h) > 0 && n % atoi(h) != 0;
}

static void run_case(worker_t *w, mrc_collective_t coll, size_t count,
                     mrc_dtype_t d, mrc_op_t op, int in_place, int root)
{
    mrc_comm_t *c = w->comm;
    int r = mrc_comm_rank(c), n = mrc_comm_size(c);
    size_t es = mrc_dtype_size(d);
    size_t in_elems = coll == MRC_REDUCE_SCATTER ? count * (size_t)n : count;
    size_t out_elems = coll == MRC_ALLGATHER ? count * (size_t)n : count;
    size_t big = (in_elems > out_elems ? in_elems : out_elems) + 1;
    char *a = malloc(big * es), *b = malloc(big * es);
    unsigned char want[8];
    memset(a, 0xab, big * es);
    memset(b, 0xcd, big * es);
    void *send = a, *recv = b;
    if (coll == MRC_ALLGATHER) {
        /* block r holds rank r's elements mrc__ref_input(r, j) */
        if (in_place) {
            send = a + (size_t)r * count * es;
            recv = a;
        }
        for (size_t j = 0; j < count; j++)
            mrc__ref_store(send, j, d, mrc__ref_input(r, j, d, op));
    } else {
        for (size_t j = 0; j < in_elems; j++)
            mrc__ref_store(a, j, d, mrc__ref_input(r, j, d, op));
        if (in_place)
            recv = coll == MRC_REDUCE_SCATTER ? a + (size_t)r * count * es : a;
    }
    mrc_status_t st;
    switch (coll) {
    case MRC_ALLREDUCE: st = mrc_allreduce(send, recv, count, d, op, c); break;
    case MRC_REDUCE_SCATTER:
        st = mrc_reduce_scatter(send, recv, count, d, op, c);
        break;
    case MRC_ALLGATHER: st = mrc_allgather(send, recv, count, d, c); break;
    case MRC_REDUCE:
        st = mrc_reduce(send, r == root || in_place ? recv : NULL, count, d, op,
                        root, c);
        break;
    default:
        st = mrc_broadcast(r == root ? send : NULL, recv, count, d, root, c);
        break;
    }
    w->cases++;
    if (st == MRC_ERR_UNSUPPORTED &&
        !mrc__ref_family_applies(coll, count, d, op, n)) {
        w->skipped++; /* MRC_ALGO forced a family that cannot do it */
        goto done;
    }
    if (st != MRC_OK) {
        w->failures++;
        note(w, "%s: %s %s %s count %zu%s: %s", w->sw->name,
             mrc_collective_name(coll), mrc_dtype_name(d), mrc_op_name(op),
             count, in_place ? " in place" : "", mrc_last_error());
        goto done;
    }
    for (size_t j = 0; j < out_elems; j++) {
        size_t src;
        int owner = -1;
        switch (coll) {
        case MRC_REDUCE_SCATTER:
            src = (size_t)r * count + j;
            mrc__ref_expect(want, src, n, d, op);
            break;
        case MRC_ALLGATHER:
            owner = (int)(j / (count ? count : 1));
            mrc__ref_store(want, 0, d, mrc__ref_input(owner, j % count, d, op));
            break;
        case MRC_BROADCAST:
            mrc__ref_store(want, 0, d, mrc__ref_input(root, j, d, op));
            break;
        case MRC_REDUCE:
            if (r != root)
                goto done;
            mrc__ref_expect(want, j, n, d, op);
            break;
        default: mrc__ref_expect(want, j, n, d, op);
        }
        if (memcmp((char *)recv + j * es, want, es) != 0) {
            w->wrong++;
            note(w,
                 "%s: %s %s %s count %zu%s root %d: rank %d element %zu "
                 "wrong",
                 w->sw->name, mrc_collective_name(coll), mrc_dtype_name(d),
                 mrc_op_name(op), count, in_place ? " in place" : "", root, r,
                 j);
        }
    }
done:
    free(a);
    free(b);
}

/* The large count on a sample of types and ops; the sample sweeps when
 * the run is not full. */
static int keep_case(const sweep_case_t *c, void *ctx)
{
    const worker_t *w = ctx;
    mrc_dtype_t d = c->dtype;
    mrc_op_t op = c->op;
    if (!c->reducing && op != MRC_SUM)
        return 0;
    int sample = (d == MRC_FLOAT32 || d == MRC_INT8 || d == MRC_BFLOAT16) &&
                 (op == MRC_SUM || op == MRC_MAX || !c->reducing);
    return !((c->kind == 4 || !w->sw->full) && !sample &&
             !(d == MRC_FLOAT16 && op == MRC_AVG));
}

static int work_case(const sweep_case_t *c, void *ctx)
{
    worker_t *w = ctx;
    int n = mrc_comm_size(w->comm);
    int root = (int)(((size_t)c->kind + (size_t)c->dtype) % (size_t)n);
    run_case(w, c->coll, c->count, c->dtype, c->op, c->in_place, root);
    return 0;
}

static void *work(void *arg)
{
    worker_t *w = arg;
    int n = mrc_comm_size(w->comm);
    size_t counts[5];
    for (int kind = 0; kind < 5; kind++)
        counts[kind] = count_of(kind, n);
    sweep_plan_t plan = {.counts = counts,
                         .ncounts = 5,
                         .keep = keep_case,
                         .run = work_case,
                         .ctx = w};
    sweep_cases(&plan);
    return NULL;
}

static void run_sweep(const sweep_t *sw)
{
    mrc_comm_t *comms[64];
    assert_true(sw->nranks <= 64);
    mrc_status_t st = mrc_comm_init_all(comms, sw->nranks, &sw->cfg);
    if (st != MRC_OK)
        fail_msg("%s: init: %s", sw->name, mrc_last_error());
    worker_t w[64];
    pthread_t th[64];
    memset(w, 0, sizeof w);
    for (int r = 0; r < sw->nranks; r++) {
        w[r].sw = sw;
        w[r].comm = comms[r];
        assert_int_equal(pthread_create(&th[r], NULL, work, &w[r]), 0);
    }
    long cases = 0, wrong = 0, failures = 0, skipped = 0;
    const char *first = NULL;
    for (int r = 0; r < sw->nranks; r++) {
        pthread_join(th[r], NULL);
        cases += w[r].cases;
        wrong += w[r].wrong;
        failures += w[r].failures;
        skipped += w[r].skipped;
        if (!first && w[r].first[0])
            first = w[r].first;
    }
    for (int r = 0; r < sw->nranks; r++)
        mrc_comm_destroy(comms[r]);
    printf("%-32s %6ld rank-cases, %ld wrong elements, %ld failed calls, "
           "%ld not for the family\n",
           sw->name, cases, wrong, failures, skipped);
    if (wrong || failures)
        fail_msg("%s", first);
}

static void test_ring_sizes(void **state)
{
    (void)state;
    const int sizes[] = {1, 2, 3, 5, 8, 13, 16};
    for (int i = 0; i < 7; i++) {
        char name[32];
        snprintf(name, sizeof name, "ring:%d auto, 1 KiB chunks", sizes[i]);
        sweep_t sw = {name, {.chunk_bytes = 1024}, sizes[i], sizes[i] <= 5};
        run_sweep(&sw);
    }
}

static void test_seed_topologies(void **state)
{
    (void)state;
    const sweep_t sweeps[] = {
        {"hcm8 hcm8 (3 rings)", {.topology = "hcm8", .strategy = "hcm8"}, 8, 1},
        {"hcm8 hcm8 4+2+2",
         {.topology = "hcm8",
          .strategy = "hcm8",
          .groups = "4+2+2",
          .chunk_bytes = 512},
         8,
         0},
        {"hcm8 auto 2+2+2+2", {.topology = "hcm8", .groups = "2+2+2+2"}, 8, 0},
        {"hcm8 auto (routed, one-way)",
         {.topology = "hcm8", .chunk_bytes = 2048},
         8,
         0},
        {"torus-ladder:8 barley-twist",
         {.topology = "torus-ladder:8", .strategy = "barley-twist"},
         8,
         0},
        {"ladder:8 ring-on-line",
         {.topology = "ladder:8",
          .strategy = "ring-on-line",
          .replica_size = 2},
         8,
         0},
        {"ladder:16 rung-ring-4",
         {.topology = "ladder:16",
          .strategy = "rung-ring-4",
          .replica_size = 4,
          .chunk_bytes = 256},
         16,
         0},
        {"prism:3,3 prism-faces",
         {.topology = "prism:3,3", .strategy = "prism-faces"},
         9,
         0},
        {"torus2d:3,3 auto", {.topology = "torus2d:3,3"}, 9, 0},
    };
    for (size_t i = 0; i < sizeof sweeps / sizeof sweeps[0]; i++)
        run_sweep(&sweeps[i]);
}

/* avg on integers is the exact mean, rounded toward zero, however near
 * the type's limits the inputs lie: a partial sum in the element type
 * would wrap (int8 {100, 100, 100, 100} over 4 ranks gave -28). The
 * reference's avg inputs are the types' extremes (exec/reference.c). */
typedef struct ref_worker {
    mrc_comm_t *comm;
    long wrong, failures;
    char first[256];
} ref_worker_t;

/* n ranks (communicators over threads from cfg), each running work on
 * its ref_worker_t (rank_work); fails naming the first rank that saw a wrong
 * element or a failure. */
static void run_ref_workers(int n, const mrc_config_t *cfg,
                            void *(*rank_work)(void *))
{
    enum { MAX = 8 };
    mrc_comm_t *comms[MAX];
    ref_worker_t w[MAX];
    pthread_t th[MAX];
    assert_true(n <= MAX);
    memset(w, 0, sizeof w);
    assert_int_equal(mrc_comm_init_all(comms, n, cfg), MRC_OK);
    for (int r = 0; r < n; r++) {
        w[r].comm = comms[r];
        assert_int_equal(pthread_create(&th[r], NULL, rank_work, &w[r]), 0);
    }
    for (int r = 0; r < n; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < n; r++) {
        mrc_comm_destroy(comms[r]);
        if (w[r].wrong || w[r].failures)
            fail_msg("rank %d: %s", r, w[r].first);
    }
}

/* Case c on a and b as mrc__ref_place lays them out: filled, called
 * and checked; *bad gets the wrong elements. A family that MRC_ALGO
 * forces and that does not apply to the case (on `family_n` ranks) is
 * MRC_OK. */
static mrc_status_t ref_case(const sweep_case_t *c, mrc_comm_t *comm, char *a,
                             char *b, int root, int family_n, size_t *bad)
{
    int r = mrc_comm_rank(comm), n = mrc_comm_size(comm);
    size_t es = mrc_dtype_size(c->dtype);
    char *send, *recv;
    mrc__ref_place(c->coll, c->in_place, c->count, es, r, a, b, &send, &recv);
    mrc__ref_fill(send, c->coll, c->count, r, n, c->dtype, c->op);
    mrc_status_t st = mrc__ref_call(c->coll, send, recv, c->count, c->dtype,
                                    c->op, root, comm);
    *bad = st == MRC_OK ? mrc__ref_check(recv, c->coll, c->count, r, n, root,
                                         c->dtype, c->op)
                        : 0;
    if (st == MRC_ERR_UNSUPPORTED &&
        !mrc__ref_family_applies(c->coll, c->count, c->dtype, c->op, family_n))
        st = MRC_OK; /* not for the forced family */
    return st;
}

static int avg_case(const sweep_case_t *c, void *ctx)
{
    ref_worker_t *w = ctx;
    int n = mrc_comm_size(w->comm);
    size_t es = mrc_dtype_size(c->dtype);
    size_t bytes = c->count * (size_t)n * es, bad = 0;
    char *a = calloc(1, bytes), *b = calloc(1, bytes);
    mrc_status_t st = ref_case(c, w->comm, a, b, n - 1, n, &bad);
    w->failures += st != MRC_OK;
    w->wrong += (long)bad;
    if ((st != MRC_OK || bad) && !w->first[0])
        snprintf(w->first, sizeof w->first,
                 "%d ranks, %s %s avg count %zu%s: %s, %zu "
                 "wrong",
                 n, mrc_collective_name(c->coll), mrc_dtype_name(c->dtype),
                 c->count, c->in_place ? " in place" : "",
                 st == MRC_OK ? "ok" : mrc_last_error(), bad);
    free(a);
    free(b);
    return 0;
}

static void *avg_work(void *arg)
{
    static const mrc_dtype_t ints[] = {MRC_INT8,   MRC_UINT8, MRC_INT32,
                                       MRC_UINT32, MRC_INT64, MRC_UINT64};
    static const mrc_collective_t colls[] = {MRC_ALLREDUCE, MRC_REDUCE_SCATTER,
                                             MRC_REDUCE};
    static const size_t counts[] = {1, 11, 21};
    static const mrc_op_t avg[] = {MRC_AVG};
    ref_worker_t *w = arg;
    /* The case of the report: int8 100 on every rank. */
    int8_t hundred = 100, mean = 0;
    if (mrc_allreduce(&hundred, &mean, 1, MRC_INT8, MRC_AVG, w->comm) !=
            MRC_OK ||
        mean != 100) {
        w->wrong++;
        snprintf(w->first, sizeof w->first, "int8 avg of 100s gave %d: %s",
                 mean, mrc_last_error());
    }
    sweep_plan_t plan = {.colls = colls,
                         .ncolls = 3,
                         .counts = counts,
                         .ncounts = 3,
                         .dtypes = ints,
                         .ndtypes = 6,
                         .ops = avg,
                         .nops = 1,
                         .run = avg_case,
                         .ctx = w};
    sweep_cases(&plan);
    return NULL;
}

static void test_avg_integers_exact(void **state)
{
    (void)state;
    for (int n = 2; n <= 5; n++) {
        if (hier_skips(n))
            continue;
        mrc_config_t cfg = {.timeout_s = 20};
        run_ref_workers(n, &cfg, avg_work);
    }
}

/* Buffers at odd addresses (legal for char buffers, and what an MPI
 * program reducing byte-addressed data passes): every collective, dtype
 * and op, in place and not, must give the right elements without loading
 * a value from a misaligned address (the sanitizer build checks that). */
static int odd_keep(const sweep_case_t *c, void *ctx)
{
    (void)ctx;
    return !((!c->reducing && c->op != MRC_SUM) ||
             (c->kind == 2 && c->op != MRC_SUM && c->op != MRC_AVG));
}

static int odd_case(const sweep_case_t *c, void *ctx)
{
    ref_worker_t *w = ctx;
    int n = mrc_comm_size(w->comm);
    size_t es = mrc_dtype_size(c->dtype);
    size_t bytes = c->count * (size_t)n * es + 1, bad = 0;
    char *a = malloc(bytes), *b = malloc(bytes);
    int root = ((int)c->dtype + (int)c->op) % n;
    mrc_status_t st = ref_case(c, w->comm, a + 1, b + 1, root, 3, &bad);
    w->failures += st != MRC_OK;
    w->wrong += (long)bad;
    if ((st != MRC_OK || bad) && !w->first[0])
        snprintf(w->first, sizeof w->first,
                 "%s %s %s count %zu%s: %s, %zu wrong",
                 mrc_collective_name(c->coll), mrc_dtype_name(c->dtype),
                 mrc_op_name(c->op), c->count, c->in_place ? " in place" : "",
                 st == MRC_OK ? "ok" : mrc_last_error(), bad);
    free(a);
    free(b);
    return 0;
}

static void *odd_work(void *arg)
{
    static const size_t counts[] = {1, 7, 1500};
    sweep_plan_t plan = {.counts = counts,
                         .ncounts = 3,
                         .keep = odd_keep,
                         .run = odd_case,
                         .ctx = arg};
    sweep_cases(&plan);
    return NULL;
}

static void test_misaligned_buffers(void **state)
{
    (void)state;
    mrc_config_t cfg = {.timeout_s = 20, .chunk_bytes = 1024};
    run_ref_workers(3, &cfg, odd_work);
}

/* ---- calls repeated on the same buffers ---------------------------------- */

/* A loop over buffers, as applications and the benchmarks make: the
 * communicator takes a call with the last one's arguments straight to its
 * plan, and a call of the last one's shape on other buffers to it once
 * they pass the checks. New data each time, the count changed under the
 * same pointers, two pairs of buffers in turn, the in-place form, and bad
 * calls of the same shape in between must each still be seen. */
static void *repeat_work(void *arg)
{
    ref_worker_t *w = arg;
    int r = mrc_comm_rank(w->comm), n = mrc_comm_size(w->comm);
    int32_t sends[2][8], recvs[2][8];
    for (int it = 0; it < 60; it++) {
        size_t count = it % 20 < 10 ? 5 : 7; /* same pointers, new count */
        int in_place = it % 7 == 6;
        int32_t *send = sends[it / 3 % 2], *recv = recvs[it / 3 % 2];
        for (size_t i = 0; i < 8; i++) {
            send[i] = (int32_t)(r * 100 + it * 10 + (int)i);
            recv[i] = in_place ? send[i] : -1;
        }
        mrc_status_t st = mrc_allreduce(in_place ? recv : send, recv, count,
                                        MRC_INT32, MRC_SUM, w->comm);
        long bad = 0;
        for (size_t i = 0; st == MRC_OK && i < 8; i++) {
            int32_t want =
                i < count
                    ? (int32_t)(100 * n * (n - 1) / 2 + n * (it * 10 + (int)i))
                    : (in_place ? send[i] : -1);
            bad += recv[i] != want;
        }
        /* A bad call between two good ones is refused, not run: no
         * receive buffer, or buffers that overlap, in the last shape. */
        if (it == 30 && mrc_allreduce(send, NULL, count, MRC_INT32, MRC_SUM,
                                      w->comm) != MRC_ERR_INVALID_ARG)
            bad++;
        if (it == 40 && mrc_allreduce(recv + 1, recv, count, MRC_INT32, MRC_SUM,
                                      w->comm) != MRC_ERR_INVALID_ARG)
            bad++;
        w->failures += st != MRC_OK;
        w->wrong += bad;
        if ((st != MRC_OK || bad) && !w->first[0])
            snprintf(w->first, sizeof w->first,
                     "call %d count %zu%s: %s, %ld wrong", it, count,
                     in_place ? " in place" : "",
                     st == MRC_OK ? "ok" : mrc_last_error(), bad);
    }
    return NULL;
}

static void test_repeated_calls(void **state)
{
    (void)state;
    mrc_config_t cfg = {.timeout_s = 20};
    run_ref_workers(4, &cfg, repeat_work); /* hier: 4 ranks on 2 hosts */
}

static void expect_bad(mrc_status_t st, const char *says)
{
    if (st != MRC_ERR_INVALID_ARG || !strstr(mrc_last_error(), says))
        fail_msg("status %d, '%s' (wanted '%s')", st, mrc_last_error(), says);
}

/* Bad arguments are refused on the calling rank before anything moves, so
 * a single thread can make every mistake in turn. */
static void test_bad_arguments(void **state)
{
    (void)state;
    mrc_comm_t *comms[4];
    mrc_config_t cfg = {.timeout_s = 5};
    assert_int_equal(mrc_comm_init_all(comms, 4, &cfg), MRC_OK);
    assert_int_equal(mrc_comm_rank(comms[2]), 2);
    assert_int_equal(mrc_comm_size(comms[2]), 4);
    mrc_comm_t *c = comms[1];
    float buf[64] = {0};
    expect_bad(mrc_allreduce(NULL, buf, 4, MRC_FLOAT32, MRC_SUM, c),
               "sendbuf is NULL");
    expect_bad(mrc_allreduce(buf, NULL, 4, MRC_FLOAT32, MRC_SUM, c),
               "recvbuf is NULL");
    expect_bad(mrc_allreduce(buf, buf, 4, (mrc_dtype_t)77, MRC_SUM, c),
               "dtype 77");
    expect_bad(mrc_allreduce(buf, buf, 4, MRC_FLOAT32, (mrc_op_t)9, c), "op 9");
    expect_bad(mrc_allreduce(buf, buf + 1, 4, MRC_FLOAT32, MRC_SUM, c),
               "overlap but are not the in-place form");
    expect_bad(mrc_reduce_scatter(buf, buf, 4, MRC_FLOAT32, MRC_SUM, c),
               "overlap"); /* in place is buf + rank*4 */
    expect_bad(mrc_allgather(buf, buf, 4, MRC_FLOAT32, c), "overlap");
    expect_bad(mrc_reduce(buf, buf, 4, MRC_FLOAT32, MRC_SUM, 4, c),
               "root 4 out of range");
    expect_bad(mrc_broadcast(buf, buf, 4, MRC_FLOAT32, -1, c),
               "root -1 out of range");
    expect_bad(mrc_allreduce(buf, buf, 4, MRC_FLOAT32, MRC_SUM, NULL),
               "comm is NULL");
    /* Joining a job of processes: bad arguments are named. */
    mrc_comm_t *one = NULL;
    expect_bad(mrc_comm_init_rank(&one, 4, 4, "job", NULL), "rank 4");
    expect_bad(mrc_comm_init_rank(&one, 0, 0, "job", NULL), "nranks 0");
    expect_bad(mrc_comm_init_rank(&one, 2, 0, "../etc", NULL),
               "job id '../etc'");
    expect_bad(mrc_comm_init_rank(&one, 2, 0, "", NULL), "job id ''");
    expect_bad(mrc_comm_init_rank(NULL, 2, 0, "job", NULL), "comm is NULL");
    assert_null(one);
    /* Count 0 succeeds at once, whatever the buffers. */
    assert_int_equal(mrc_allreduce(NULL, NULL, 0, MRC_FLOAT32, MRC_SUM, c),
                     MRC_OK);
    assert_int_equal(mrc_broadcast(NULL, NULL, 0, MRC_INT8, 0, c), MRC_OK);
    /* A rank left alone times out, naming where it waited. */
    mrc_status_t st = mrc_allreduce(buf, buf, 64, MRC_FLOAT32, MRC_SUM, c);
    assert_int_equal(st, MRC_ERR_TIMEOUT);
    assert_non_null(strstr(mrc_last_error(), "timed out"));
    /* (hier: where rank 1 waits depends on the hosts: for its leader
     * after the gathering, or for its ring neighbour) */
    const char *algo = getenv("MRC_ALGO");
    const char *where = algo && strcmp(algo, "hier") == 0
                            ? "at stream 0, step "
                            : "at stream 0, step 0";
    if (!strstr(mrc_last_error(), where))
        fail_msg("the timeout does not say '%s': %s", where, mrc_last_error());
    for (int r = 0; r < 4; r++)
        assert_int_equal(mrc_comm_destroy(comms[r]), MRC_OK);
    assert_int_equal(mrc_comm_destroy(NULL), MRC_OK);

    mrc_config_t wrong = {.topology = "hcm8"};
    expect_bad(mrc_comm_init_all(comms, 4, &wrong),
               "hcm8 has 8 nodes but there are 4 ranks");
    assert_null(comms[0]);
    expect_bad(mrc_comm_init_all(comms, 0, NULL), "nranks 0");
    mrc_config_t bad_strategy = {.strategy = "twist"};
    assert_int_equal(mrc_comm_init_all(comms, 4, &bad_strategy),
                     MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "unknown strategy"));
}

/* ---- ranks that disagree ------------------------------------------------ */

/* The last rank's call differs in one thing: its count, dtype, op, root
 * (of a broadcast or a reduce), or collective; or, with every rank
 * averaging integers (which runs as a sum of 64-bit words whatever the
 * type), its dtype. */
enum {
    DIFF_COUNT,
    DIFF_DTYPE,
    DIFF_OP,
    DIFF_ROOT,
    DIFF_REDUCE_ROOT,
    DIFF_COLLECTIVE,
    DIFF_AVG_DTYPE
};

typedef struct disagreeing {
    mrc_comm_t *comm;
    int diff;
    size_t count;
    mrc_status_t st, again;
    char msg[512], again_msg[512];
} disagreeing_t;

static void *disagreeing_rank(void *arg)
{
    disagreeing_t *d = arg;
    mrc_comm_t *c = d->comm;
    int odd = mrc_comm_rank(c) == mrc_comm_size(c) - 1;
    size_t count = d->count + (d->diff == DIFF_COUNT && odd);
    mrc_dtype_t dt = d->diff == DIFF_DTYPE && odd ? MRC_INT32 : MRC_FLOAT32;
    mrc_op_t op = d->diff == DIFF_OP && odd ? MRC_MAX : MRC_SUM;
    float *a = calloc(count, sizeof *a), *b = calloc(count, sizeof *b);
    if (!a || !b)
        d->st = MRC_ERR_NO_MEMORY;
    else if (d->diff == DIFF_ROOT)
        d->st = mrc_broadcast(a, b, count, dt, odd, c);
    else if (d->diff == DIFF_REDUCE_ROOT)
        d->st = mrc_reduce(a, b, count, dt, op, odd, c);
    else if (d->diff == DIFF_COLLECTIVE && odd)
        d->st = mrc_reduce(a, b, count, dt, op, 0, c);
    else if (d->diff == DIFF_AVG_DTYPE)
        d->st =
            mrc_allreduce(a, b, count, odd ? MRC_INT32 : MRC_INT8, MRC_AVG, c);
    else
        d->st = mrc_allreduce(a, b, count, dt, op, c);
    snprintf(d->msg, sizeof d->msg, "%s", mrc_last_error());
    /* Freed at once: no peer may read them any more (ASan watches). */
    free(a);
    free(b);
    float x = 1;
    d->again = mrc_allreduce(&x, &x, 1, MRC_FLOAT32, MRC_SUM, c);
    snprintf(d->again_msg, sizeof d->again_msg, "%s", mrc_last_error());
    return NULL;
}

/* Every rank fails, naming both calls, whether it disagrees with a peer
 * it talks to or learns it from one (3 and 4 ranks); none reads a buffer
 * that is not its peer's any more; the next call is refused at once (the
 * communicator is poisoned, whatever the status). Repeated: a peer
 * reading a failed rank's freed buffer was a race. The families by
 * messages too (`algo`): in their reduce and broadcast a rank need not
 * hear from the one that disagrees (the root of a broadcast hears from
 * nobody), and it must fail all the same. */
static void test_disagreeing_ranks(void **state)
{
    (void)state;
    static const struct {
        int n, diff;
        size_t count;
        const char *one, *other, *algo; /* algo NULL: the selector's */
    } cases[] = {
        {2, DIFF_COUNT, 1000, "allreduce of 1000 float32 (sum)",
         "allreduce of 1001 float32 (sum)", NULL},
        {3, DIFF_COUNT, 20011, "allreduce of 20011 float32 (sum)",
         "allreduce of 20012 float32 (sum)", NULL},
        {4, DIFF_COUNT, 7, "allreduce of 7 float32 (sum)",
         "allreduce of 8 float32 (sum)", NULL},
        {2, DIFF_DTYPE, 1000, "allreduce of 1000 float32 (sum)",
         "allreduce of 1000 int32 (sum)", NULL},
        {3, DIFF_OP, 1000, "allreduce of 1000 float32 (sum)",
         "allreduce of 1000 float32 (max)", NULL},
        {3, DIFF_ROOT, 1000, "broadcast of 1000 float32 from root 0",
         "broadcast of 1000 float32 from root 1", NULL},
        {2, DIFF_COLLECTIVE, 1000, "allreduce of 1000 float32 (sum)",
         "reduce of 1000 float32 from root 0 (sum)", NULL},
        {3, DIFF_AVG_DTYPE, 1000, "allreduce of 1000 int8 (avg)",
         "allreduce of 1000 int32 (avg)", NULL},
        {3, DIFF_ROOT, 16, "broadcast of 16 float32 from root 0",
         "broadcast of 16 float32 from root 1", "rings"},
        {4, DIFF_ROOT, 16, "broadcast of 16 float32 from root 0",
         "broadcast of 16 float32 from root 1", "tree"},
        {3, DIFF_REDUCE_ROOT, 16, "reduce of 16 float32 from root 0 (sum)",
         "reduce of 16 float32 from root 1 (sum)", "tree"},
        {4, DIFF_REDUCE_ROOT, 1000, "reduce of 1000 float32 from root 0 (sum)",
         "reduce of 1000 float32 from root 1 (sum)", "rings"},
    };
    for (int round = 0; round < 10; round++)
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            int n = cases[k].n;
            if (hier_skips(n))
                continue;
            mrc_comm_t *comms[4];
            mrc_config_t cfg = {.timeout_s = 5, .algo = cases[k].algo};
            assert_int_equal(mrc_comm_init_all(comms, n, &cfg), MRC_OK);
            disagreeing_t d[4];
            pthread_t th[4];
            for (int r = 0; r < n; r++) {
                d[r] = (disagreeing_t){.comm = comms[r],
                                       .diff = cases[k].diff,
                                       .count = cases[k].count};
                assert_int_equal(
                    pthread_create(&th[r], NULL, disagreeing_rank, &d[r]), 0);
            }
            for (int r = 0; r < n; r++)
                pthread_join(th[r], NULL);
            for (int r = 0; r < n; r++) {
                if (d[r].st != MRC_ERR_INVALID_ARG ||
                    !strstr(d[r].msg, "ranks disagree") ||
                    !strstr(d[r].msg, cases[k].one) ||
                    !strstr(d[r].msg, cases[k].other))
                    fail_msg("case %zu, rank %d of %d: %s: '%s'", k, r, n,
                             mrc_status_name(d[r].st), d[r].msg);
                if (d[r].again != MRC_ERR_INVALID_ARG ||
                    !strstr(d[r].again_msg, "earlier call failed"))
                    fail_msg("case %zu, rank %d of %d: then %s: '%s'", k, r, n,
                             mrc_status_name(d[r].again), d[r].again_msg);
                mrc_comm_destroy(comms[r]);
            }
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_avg_integers_exact),
        cmocka_unit_test(test_misaligned_buffers),
        cmocka_unit_test(test_repeated_calls),
        cmocka_unit_test(test_disagreeing_ranks),
        cmocka_unit_test(test_ring_sizes),
        cmocka_unit_test(test_seed_topologies),
    };
    /* Under MRC_ALGO the sweeps run, with the calls that the family does
     * not do skipped; MRC_TEST_FILTER picks tests (cmocka's pattern). */
    const char *filter = getenv("MRC_TEST_FILTER");
    if (filter)
        cmocka_set_test_filter(filter);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
