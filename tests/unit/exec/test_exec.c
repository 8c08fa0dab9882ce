/* The executor on its own: one node's plan run over a scripted fake
 * transport, which plays the peers. The fake delivers what the peers
 * would send, late or at once as the script says, fails where it says,
 * and logs every call the executor makes, so that these tests check what
 * the transport conformance suite cannot: the executor's order of calls,
 * its retries, its timeouts and its hand-over of errors, whatever the
 * transport underneath.
 *
 * The data: on ring:2 the only peer's partial sum is its input, and
 * what comes back in the allgather is the whole sum; in the direct
 * families every peer's window holds its input. So the fake knows what
 * to deliver without running the peers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/exec.h"
#include "mrc/mrc.h"
#include "reduce/reduce.h"

enum { MAX_PEERS = 4, MAX_XFERS = 256, MAX_COUNT = 1024 };

typedef struct fake {
    /* The script. */
    int node, nodes;
    size_t count;
    const float *input[MAX_PEERS]; /* every node's input */
    const char *recvbuf;           /* this node's, to place what arrives */
    int delay;                     /* tests before a transfer is done */
    int never;                     /* receives never arrive */
    mrc_status_t test_fails;       /* test's status, where not MRC_OK */
    int wait_misses;               /* waits refused before each succeeds */
    int publish_misses;            /* publishes refused at first */
    /* The log. */
    int begins, ends, cancels, publishes, signals, waits, gets, tests;
    mrc_status_t cancel_st;
    int posted, done;
    mrc__xfer_t *pending[MAX_XFERS];
    int tests_of[MAX_XFERS];
    uint8_t is_send[MAX_XFERS];
    int num_pending;
    int signalled;         /* flags set by this node */
    int waited[MAX_PEERS]; /* waits that succeeded, per peer */
    int misses[MAX_PEERS]; /* waits refused in a row, per peer */
    int get_order[MAX_PEERS * 4];
    int num_gets;
    int early_get;   /* a get of a peer not yet waited for */
    int after_end;   /* a call after end */
    int get_fail_at; /* the get (counted from 1) that fails, or 0 */
    int get_delay;   /* gets refused once each (posted) before done */
    int dirty_gets;  /* gets that found their transfer not cleared */
    uint64_t call;   /* the call running, as the gets mark their transfers */
    float window[MAX_COUNT];
} fake_t;

/* What arrives for receive x: on ring:2, the peer's input (a partial sum
 * to reduce) or the whole sum (the allgather's copy), at x's offset. */
static void deliver(fake_t *f, mrc__xfer_t *x)
{
    size_t at = (size_t)((const char *)x->dst - f->recvbuf) / sizeof(float);
    assert_true(at + x->count <= f->count);
    float src[MAX_COUNT];
    for (size_t i = 0; i < x->count; i++)
        src[i] = x->local ? f->input[x->peer][at + i]
                          : f->input[0][at + i] + f->input[1][at + i];
    if (x->local)
        mrc__reduce(x->dst, x->local, src, x->count, x->dtype, x->op);
    else
        memcpy(x->dst, src, x->count * sizeof(float));
    __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
    f->done++;
}

static int pending_at(fake_t *f, const mrc__xfer_t *x)
{
    for (int i = 0; i < f->num_pending; i++)
        if (f->pending[i] == x)
            return i;
    return -1;
}

static mrc_status_t f_begin(void *ctx, uint64_t seq, const mrc__call_t *call,
                            const mrc__xfer_t *recvs, size_t n)
{
    (void)seq, (void)call, (void)recvs, (void)n;
    fake_t *f = ctx;
    f->begins++;
    return MRC_OK;
}

static mrc_status_t post(fake_t *f, mrc__xfer_t *x, int is_recv)
{
    f->after_end += f->ends > 0;
    assert_true(f->num_pending < MAX_XFERS);
    x->posted = 1;
    f->posted++;
    f->tests_of[f->num_pending] = 0;
    f->is_send[f->num_pending] = (uint8_t)!is_recv;
    f->pending[f->num_pending++] = x;
    if (f->delay == 0 && !(is_recv && f->never)) {
        if (is_recv)
            deliver(f, x);
        else {
            __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
            f->done++;
        }
    }
    return MRC_OK;
}

static mrc_status_t f_isend(void *ctx, const void *buf, mrc__xfer_t *x)
{
    (void)buf;
    return post(ctx, x, 0);
}

static mrc_status_t f_irecv(void *ctx, mrc__xfer_t *x)
{
    return post(ctx, x, 1);
}

static mrc_status_t f_test(void *ctx, mrc__xfer_t *x)
{
    fake_t *f = ctx;
    f->tests++;
    if (f->test_fails != MRC_OK)
        return mrc__error(f->test_fails, "the fake's test fails");
    int i = pending_at(f, x);
    assert_true(i >= 0);
    if (x->done || ++f->tests_of[i] < f->delay)
        return MRC_OK;
    if (f->is_send[i]) {
        __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
        f->done++;
    } else if (!f->never) {
        deliver(f, x);
    }
    return MRC_OK;
}

static mrc_status_t f_end(void *ctx)
{
    fake_t *f = ctx;
    f->ends++;
    for (int i = 0; i < f->num_pending; i++)
        assert_true(f->pending[i]->done);
    return MRC_OK;
}

static void f_cancel(void *ctx, mrc_status_t st)
{
    fake_t *f = ctx;
    f->cancels++;
    f->cancel_st = st;
}

static mrc_status_t f_publish(void *ctx, const mrc__exposure_t *x,
                              void **window)
{
    fake_t *f = ctx;
    f->publishes++;
    if (f->publishes <= f->publish_misses)
        return MRC_INPROGRESS;
    assert_true(x->window_bytes <= sizeof f->window);
    *window = f->window;
    return MRC_OK;
}

static mrc_status_t f_signal(void *ctx, int flag)
{
    fake_t *f = ctx;
    f->signals++;
    f->signalled |= 1 << flag;
    return MRC_OK;
}

static mrc_status_t f_wait(void *ctx, int peer, int flag)
{
    fake_t *f = ctx;
    f->waits++;
    assert_true(peer >= 0 && peer < f->nodes);
    if (peer == f->node) /* its own flag: set by now */
        return f->signalled >> flag & 1 ? MRC_OK : MRC_INPROGRESS;
    if (f->never)
        return MRC_INPROGRESS;
    if (f->misses[peer] < f->wait_misses) {
        f->misses[peer]++;
        return MRC_INPROGRESS;
    }
    f->misses[peer] = 0;
    f->waited[peer]++;
    return MRC_OK;
}

/* A peer's window holds its input (direct1: exposed whole, by copy);
 * this node's is the window the executor wrote. */
static mrc_status_t f_get(void *ctx, int peer, int buf, uint64_t off,
                          mrc__xfer_t *x)
{
    fake_t *f = ctx;
    assert_int_equal(buf, MRC__MEM_WINDOW);
    /* A transfer the transport has not seen in this call: cleared. */
    if (x->posted ? x->priv[1] != f->call
                  : x->done || x->priv[0] || x->priv[1] || x->priv[3])
        f->dirty_gets++;
    if (f->get_delay && !x->posted) {
        x->posted = 1;
        x->priv[0] = 0xdead;
        x->priv[1] = f->call;
        return MRC_INPROGRESS;
    }
    x->priv[3] = 1;
    if (++f->gets == f->get_fail_at)
        return mrc__error(MRC_ERR_TRANSPORT, "the fake's get fails");
    if (peer != f->node && !f->waited[peer])
        f->early_get++;
    if (f->num_gets < (int)(sizeof f->get_order / sizeof *f->get_order))
        f->get_order[f->num_gets++] = peer;
    const char *src = peer == f->node ? (const char *)f->window
                                      : (const char *)f->input[peer];
    if (x->local)
        mrc__reduce(x->dst, x->local, src + off, x->count, x->dtype, x->op);
    else
        memcpy(x->dst, src + off, x->bytes);
    __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
    return MRC_OK;
}

static const mrc__transport_ops_t fake_ops = {
    .name = "fake",
    .begin = f_begin,
    .isend = f_isend,
    .irecv = f_irecv,
    .test = f_test,
    .end = f_end,
    .cancel = f_cancel,
    .publish = f_publish,
    .get = f_get,
    .signal = f_signal,
    .wait = f_wait,
};

/* Point-to-point only: no memory semantics. */
static const mrc__transport_ops_t fake_p2p_ops = {
    .name = "fake-p2p",
    .begin = f_begin,
    .isend = f_isend,
    .irecv = f_irecv,
    .test = f_test,
    .end = f_end,
    .cancel = f_cancel,
};

static mrc_program_t *compile(const char *spec, mrc_algo_t algo, size_t count,
                              mrc_op_t op, size_t chunk)
{
    mrc_topo_t *t = NULL;
    mrc_embedding_t *e = NULL;
    mrc_embed_config_t ec = {.strategy = "auto"};
    if (mrc_topo_create(spec, &t) != MRC_OK ||
        mrc_embed_create(t, &ec, &e) != MRC_OK)
        fail_msg("%s: %s", spec, mrc_last_error());
    mrc_compile_config_t cc = {.collective = MRC_ALLREDUCE,
                               .count = count,
                               .dtype = MRC_FLOAT32,
                               .op = op,
                               .algo = algo,
                               .chunk_bytes = chunk};
    mrc_program_t *p = NULL;
    if (mrc_program_compile(e, &cc, &p) != MRC_OK)
        fail_msg("%s: %s", spec, mrc_last_error());
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
    return p;
}

/* Inputs whose sums are exact in float: small integers. */
static void fill(float in[MAX_PEERS][MAX_COUNT], int nodes, size_t count)
{
    for (int r = 0; r < nodes; r++)
        for (size_t i = 0; i < count; i++)
            in[r][i] = (float)((int)(i % 97) * (r + 1) + r);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One run of program p on `node` over the fake, in place or not:
 * returns the status; out holds the result. */
static mrc_status_t run_once(const mrc_program_t *p, fake_t *f,
                             const mrc__transport_ops_t *ops, int in_place,
                             float *out, double timeout_s)
{
    mrc__exec_t x;
    memset(&x, 0, sizeof x);
    assert_int_equal(
        mrc__exec_prepare(&x, p, f->node, in_place, 1, MRC__NONTEMPORAL_BYTES),
        MRC_OK);
    float send[MAX_COUNT];
    memcpy(send, f->input[f->node], f->count * sizeof(float));
    if (in_place)
        memcpy(out, send, f->count * sizeof(float));
    f->recvbuf = (const char *)out;
    mrc__transport_t t = {ops, f};
    mrc_status_t st = mrc__exec_run(&x, &t, NULL, 1, in_place ? out : send, out,
                                    NULL, timeout_s);
    mrc__exec_release(&x);
    return st;
}

/* ---- point to point ----------------------------------------------------- */

/* ring:2 allreduce, both nodes, transfers done at once or after some
 * tests, in place or not, several chunks or one: the exact sum, every
 * transfer posted is done before end, end once, no cancel. */
static void test_ring_exact(void **state)
{
    (void)state;
    static float in[MAX_PEERS][MAX_COUNT];
    const size_t counts[] = {1, 7, 1001};
    const int delays[] = {0, 1, 5};
    for (size_t ci = 0; ci < 3; ci++) {
        size_t count = counts[ci];
        fill(in, 2, count);
        for (int chunk = 0; chunk < 2; chunk++) {
            mrc_program_t *p = compile("ring:2", MRC_ALGO_RINGS, count, MRC_SUM,
                                       chunk ? 256 : 0);
            for (int node = 0; node < 2; node++)
                for (int di = 0; di < 3; di++)
                    for (int ip = 0; ip < 2; ip++) {
                        fake_t f = {.node = node,
                                    .nodes = 2,
                                    .count = count,
                                    .delay = delays[di]};
                        f.input[0] = in[0];
                        f.input[1] = in[1];
                        float out[MAX_COUNT];
                        assert_int_equal(
                            run_once(p, &f, &fake_ops, ip, out, 10), MRC_OK);
                        for (size_t i = 0; i < count; i++)
                            if (out[i] != in[0][i] + in[1][i])
                                fail_msg("count %zu chunk %d node %d delay "
                                         "%d%s: element %zu is %g, not %g",
                                         count, chunk, node, delays[di],
                                         ip ? " in place" : "", i, out[i],
                                         in[0][i] + in[1][i]);
                        assert_int_equal(f.begins, 1);
                        assert_int_equal(f.ends, 1);
                        assert_int_equal(f.cancels, 0);
                        assert_int_equal(f.after_end, 0);
                        assert_int_equal(f.done, f.posted);
                        assert_true(f.posted >= 2);
                        if (delays[di] > 0)
                            assert_true(f.tests >= f.posted);
                    }
            mrc_program_destroy(p);
        }
    }
}

/* Node `node` of program p on `nodes` nodes, over a fake whose peers
 * never come: the run gives up after the 0.2 s timeout (not much later,
 * and not before), says `says`, and cancels with the timeout (never
 * ending the call); *f is left as the run left it. */
static void expect_timeout(const mrc_program_t *p, int nodes, int node,
                           size_t count, const char *says, fake_t *f)
{
    static float in[MAX_PEERS][MAX_COUNT];
    fill(in, nodes, count);
    *f = (fake_t){.node = node, .nodes = nodes, .count = count, .never = 1};
    for (int r = 0; r < nodes; r++)
        f->input[r] = in[r];
    float out[MAX_COUNT];
    double t0 = now_s();
    assert_int_equal(run_once(p, f, &fake_ops, 0, out, 0.2), MRC_ERR_TIMEOUT);
    double dt = now_s() - t0;
    assert_true(dt >= 0.2 && dt < 5);
    if (!strstr(mrc_last_error(), says))
        fail_msg("the timeout says: %s", mrc_last_error());
    assert_int_equal(f->cancels, 1);
    assert_int_equal(f->cancel_st, MRC_ERR_TIMEOUT);
    assert_int_equal(f->ends, 0);
}

/* A receive that never comes: the timeout names where the node waited. */
static void test_ring_timeout(void **state)
{
    (void)state;
    mrc_program_t *p = compile("ring:2", MRC_ALGO_RINGS, 64, MRC_SUM, 0);
    fake_t f;
    expect_timeout(p, 2, 1, 64, "node 1 timed out after 0.2 s at stream", &f);
    mrc_program_destroy(p);
}

/* The transport fails a transfer: the run returns its status and
 * message at once, and cancels with it. */
static void test_ring_transport_error(void **state)
{
    (void)state;
    static float in[MAX_PEERS][MAX_COUNT];
    fill(in, 2, 64);
    mrc_program_t *p = compile("ring:2", MRC_ALGO_RINGS, 64, MRC_SUM, 0);
    fake_t f = {.node = 0,
                .nodes = 2,
                .count = 64,
                .delay = 3,
                .test_fails = MRC_ERR_TRANSPORT};
    f.input[0] = in[0];
    f.input[1] = in[1];
    float out[MAX_COUNT];
    double t0 = now_s();
    assert_int_equal(run_once(p, &f, &fake_ops, 0, out, 10), MRC_ERR_TRANSPORT);
    assert_true(now_s() - t0 < 5);
    assert_non_null(strstr(mrc_last_error(), "the fake's test fails"));
    assert_int_equal(f.cancels, 1);
    assert_int_equal(f.cancel_st, MRC_ERR_TRANSPORT);
    assert_int_equal(f.ends, 0);
    mrc_program_destroy(p);
}

/* ---- memory semantics --------------------------------------------------- */

/* direct1 allreduce on 3 nodes, each node in turn: the sum in rank
 * order, exact; the window published (asked again while refused)
 * before the flag is set; a peer read only once its flag was seen;
 * the peers read in rank order; each refused wait asked again. */
static void test_direct1_exact(void **state)
{
    (void)state;
    static float in[MAX_PEERS][MAX_COUNT];
    const size_t counts[] = {1, 7, 255};
    for (size_t ci = 0; ci < 3; ci++) {
        size_t count = counts[ci];
        fill(in, 3, count);
        for (int max = 0; max < 2; max++) {
            mrc_program_t *p = compile("ring:3", MRC_ALGO_DIRECT1, count,
                                       max ? MRC_MAX : MRC_SUM, 0);
            for (int node = 0; node < 3; node++)
                for (int misses = 0; misses < 3; misses += 2)
                    for (int ip = 0; ip < 2; ip++) {
                        fake_t f = {.node = node,
                                    .nodes = 3,
                                    .count = count,
                                    .wait_misses = misses,
                                    .publish_misses = misses};
                        for (int r = 0; r < 3; r++)
                            f.input[r] = in[r];
                        float out[MAX_COUNT];
                        assert_int_equal(
                            run_once(p, &f, &fake_ops, ip, out, 10), MRC_OK);
                        for (size_t i = 0; i < count; i++) {
                            float want =
                                max ? in[2][i] : in[0][i] + in[1][i] + in[2][i];
                            if (out[i] != want)
                                fail_msg("count %zu node %d%s%s: element "
                                         "%zu is %g, not %g",
                                         count, node, max ? " max" : "",
                                         ip ? " in place" : "", i, out[i],
                                         want);
                        }
                        assert_int_equal(f.publishes, misses + 1);
                        assert_int_equal(f.signalled & 1, 1);
                        assert_int_equal(f.early_get, 0);
                        /* The peers' windows through the transport, in
                         * rank order; its own window is this process's
                         * memory, read by the executor itself. */
                        assert_int_equal(f.num_gets, 2);
                        for (int r = 0, k = 0; r < 3; r++)
                            if (r != node)
                                assert_int_equal(f.get_order[k++], r);
                        /* Each peer's wait refused `misses` times, then
                         * granted; none on its own flag. */
                        assert_int_equal(f.waits, 2 * (misses + 1));
                        assert_int_equal(f.ends, 1);
                        assert_int_equal(f.cancels, 0);
                    }
            mrc_program_destroy(p);
        }
    }
}

/* One prepared plan run call after call, as a communicator does, with a
 * get left posted a while at each call, a call whose get fails in the
 * middle, and the buffers changed between calls: every get finds its
 * transfer cleared (a call's state does not leak into the next, even
 * after a failure), and every call that succeeds is exact. */
static void test_direct1_repeated(void **state)
{
    (void)state;
    static float in[MAX_PEERS][MAX_COUNT];
    size_t count = 7;
    fill(in, 3, count);
    mrc_program_t *p = compile("ring:3", MRC_ALGO_DIRECT1, count, MRC_SUM, 0);
    mrc__exec_t x;
    memset(&x, 0, sizeof x);
    assert_int_equal(mrc__exec_prepare(&x, p, 1, 0, 1, MRC__NONTEMPORAL_BYTES),
                     MRC_OK);
    fake_t f = {.node = 1, .nodes = 3, .count = count, .get_delay = 1};
    for (int r = 0; r < 3; r++)
        f.input[r] = in[r];
    mrc__transport_t t = {&fake_ops, &f};
    float send[MAX_COUNT], out[2][MAX_COUNT];
    memcpy(send, in[1], count * sizeof(float));
    for (int call = 0; call < 6; call++) {
        float *o = out[call / 2 % 2]; /* a new recvbuf every other call */
        memset(o, 0, sizeof out[0]);
        f.recvbuf = (const char *)o;
        f.get_fail_at = call == 2 ? f.gets + 1 : 0;
        f.call = (uint64_t)call + 1;
        f.signalled = 0;
        memset(f.waited, 0, sizeof f.waited);
        mrc_status_t st =
            mrc__exec_run(&x, &t, NULL, (uint64_t)call + 1, send, o, NULL, 10);
        if (call == 2) {
            assert_int_equal(st, MRC_ERR_TRANSPORT);
            continue;
        }
        assert_int_equal(st, MRC_OK);
        for (size_t i = 0; i < count; i++)
            if (o[i] != in[0][i] + in[1][i] + in[2][i])
                fail_msg("call %d: element %zu is %g", call, i, o[i]);
    }
    assert_int_equal(f.dirty_gets, 0);
    assert_int_equal(f.cancels, 1);
    mrc__exec_release(&x);
    mrc_program_destroy(p);
}

/* Past the streaming threshold (lowered here to 4 KiB), the rings stage
 * the partial sums a node only forwards, and the tree does not: its
 * inner node (2 of ring:4, which reduces 3's input and sends it on to 0)
 * sends from scratch, free to run ahead of its parent. */
static int staged_ops(const mrc__exec_t *x)
{
    int k = 0;
    for (int i = 0; i < x->plan.num_ops; i++)
        k += x->stage_of[i] >= 0;
    return k;
}

static void test_staging_families(void **state)
{
    (void)state;
    int staged[2];
    const mrc_algo_t algo[2] = {MRC_ALGO_RINGS, MRC_ALGO_TREE};
    for (int f = 0; f < 2; f++) {
        mrc_program_t *p = compile("ring:4", algo[f], 4096, MRC_SUM, 4096);
        mrc__exec_t x;
        memset(&x, 0, sizeof x);
        assert_int_equal(mrc__exec_prepare(&x, p, 2, 0, 1, 4096), MRC_OK);
        assert_true(x.nontemporal);
        staged[f] = staged_ops(&x);
        mrc__exec_release(&x);
        mrc_program_destroy(p);
    }
    assert_true(staged[0] > 0);
    assert_int_equal(staged[1], 0);
}

/* A plan writes around the caches from the communicator's threshold on:
 * at its receive buffer's size (16 KiB here), not a byte above. */
static void test_stream_threshold(void **state)
{
    (void)state;
    const uint64_t recv = 4096 * sizeof(float);
    const struct {
        uint64_t stream;
        int nontemporal;
    } cases[] = {{1, 1},
                 {recv, 1},
                 {recv + 1, 0},
                 {MRC__NONTEMPORAL_BYTES, 0},
                 {UINT64_MAX, 0}};
    mrc_program_t *p = compile("ring:4", MRC_ALGO_RINGS, 4096, MRC_SUM, 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mrc__exec_t x;
        assert_int_equal(mrc__exec_prepare(&x, p, 2, 0, 1, cases[i].stream),
                         MRC_OK);
        if (x.nontemporal != cases[i].nontemporal)
            fail_msg("stream_bytes %llu: nontemporal %d",
                     (unsigned long long)cases[i].stream, x.nontemporal);
        mrc__exec_release(&x);
    }
    mrc_program_destroy(p);
}

/* A get's reducing block goes around the caches from 16 MiB, or from
 * the threshold where that is later; never under UINT64_MAX, however
 * large the block (the rule the executor's gets and the simulator's
 * node model share, reduce.h). */
static void test_get_threshold(void **state)
{
    (void)state;
    const size_t get = (size_t)MRC__GET_NONTEMPORAL_BYTES;
    const struct {
        uint64_t stream;
        size_t block;
        int around;
    } cases[] = {{1, get, 1},
                 {1, get - 1, 0},
                 {MRC__NONTEMPORAL_BYTES, get, 1},
                 {2 * (uint64_t)get, get, 0},
                 {2 * (uint64_t)get, 2 * get, 1},
                 {UINT64_MAX, 8 * get, 0},
                 {UINT64_MAX, SIZE_MAX, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (mrc__get_around(cases[i].block, cases[i].stream) != cases[i].around)
            fail_msg("stream_bytes %llu, a block of %zu: around %d",
                     (unsigned long long)cases[i].stream, cases[i].block,
                     !cases[i].around);
    }
}

/* A small call's buffers are fetched as it starts (all of them, up to
 * MRC__WARM_BYTES), a larger call's not at all. */
static void test_warm_small_calls(void **state)
{
    (void)state;
    const struct {
        uint64_t count;
        size_t send, recv;
    } cases[] = {{1, 4, 4}, {1024, 4096, 4096}, {1025, 0, 0}, {1 << 20, 0, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mrc_program_t *p =
            compile("ring:4", MRC_ALGO_RINGS, cases[i].count, MRC_SUM, 0);
        mrc__exec_t x;
        assert_int_equal(
            mrc__exec_prepare(&x, p, 1, 0, 1, MRC__NONTEMPORAL_BYTES), MRC_OK);
        assert_int_equal(x.warm_send, cases[i].send);
        assert_int_equal(x.warm_recv, cases[i].recv);
        mrc__exec_release(&x);
        mrc_program_destroy(p);
    }
}

/* A flag that never comes: the timeout names the wait and its peer. */
static void test_direct1_timeout(void **state)
{
    (void)state;
    mrc_program_t *p = compile("ring:3", MRC_ALGO_DIRECT1, 8, MRC_SUM, 0);
    fake_t f;
    expect_timeout(p, 3, 0, 8, "waiting for a flag of node 1", &f);
    assert_int_equal(f.gets, 0); /* its own input is read locally */
    mrc_program_destroy(p);
}

/* Where a node's get of its own window reads: out of place, the send
 * buffer the window was copied from (its elements, at the same offset);
 * in place, where an earlier get of the call wrote the receive buffer
 * that the send buffer is, or may be, part of, the window itself. */
static void test_direct1_own_read(void **state)
{
    (void)state;
    mrc_program_t *p = compile("ring:3", MRC_ALGO_DIRECT1, 7, MRC_SUM, 0);
    for (int ip = 0; ip < 2; ip++)
        for (int node = 0; node < 3; node++) {
            mrc__exec_t x;
            assert_int_equal(
                mrc__exec_prepare(&x, p, node, ip, 1, MRC__NONTEMPORAL_BYTES),
                MRC_OK);
            assert_true(x.straight);
            assert_non_null(x.own_read);
            int own = 0;
            for (int i = 0; i < x.plan.num_ops; i++) {
                const mrc__op_t *op = &x.plan.ops[i];
                if (op->kind != MRC__GET || op->peer != node)
                    continue;
                own++;
                if (ip) {
                    assert_int_equal(x.own_read[i].buf, MRC__BUF_NONE);
                } else {
                    assert_int_equal(x.own_read[i].buf, MRC__BUF_SEND);
                    assert_int_equal(x.own_read[i].off, op->src_off);
                }
            }
            assert_int_equal(own, 1);
            for (int i = 0; i < x.plan.num_ops; i++)
                if (x.plan.ops[i].kind != MRC__GET ||
                    x.plan.ops[i].peer != node)
                    assert_int_equal(x.own_read[i].buf, MRC__BUF_NONE);
            mrc__exec_release(&x);
        }
    mrc_program_destroy(p);
}

/* A transport without memory semantics cannot run a direct family: the
 * run says so, naming both, and touches nothing of the peers. */
static void test_direct1_unsupported(void **state)
{
    (void)state;
    static float in[MAX_PEERS][MAX_COUNT];
    fill(in, 3, 8);
    mrc_program_t *p = compile("ring:3", MRC_ALGO_DIRECT1, 8, MRC_SUM, 0);
    fake_t f = {.node = 0, .nodes = 3, .count = 8};
    for (int r = 0; r < 3; r++)
        f.input[r] = in[r];
    float out[MAX_COUNT];
    assert_int_equal(run_once(p, &f, &fake_p2p_ops, 0, out, 10),
                     MRC_ERR_UNSUPPORTED);
    if (!strstr(mrc_last_error(), "fake-p2p transport cannot read peers' "
                                  "memory, which direct1 needs"))
        fail_msg("says: %s", mrc_last_error());
    assert_int_equal(f.gets + f.waits + f.signals, 0);
    mrc_program_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_exact),
        cmocka_unit_test(test_ring_timeout),
        cmocka_unit_test(test_ring_transport_error),
        cmocka_unit_test(test_direct1_exact),
        cmocka_unit_test(test_direct1_repeated),
        cmocka_unit_test(test_direct1_timeout),
        cmocka_unit_test(test_staging_families),
        cmocka_unit_test(test_stream_threshold),
        cmocka_unit_test(test_get_threshold),
        cmocka_unit_test(test_warm_small_calls),
        cmocka_unit_test(test_direct1_own_read),
        cmocka_unit_test(test_direct1_unsupported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
