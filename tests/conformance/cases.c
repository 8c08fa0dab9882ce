/*
 * The conformance cases (see conform.h). Each runs on every rank with the
 * same arguments and asserts exact results and statuses; expected values
 * are computed here (small integers, exact in float32), never with the
 * library's kernels.
 */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "conform.h"

/* Long enough for a loaded machine, short against the transports' own
 * timeouts: a rank that waits this long has not been told. */
#define TIMEOUT_S 10.0

/* Flags of the memory cases. */
enum { F_CHECKED = 0, F_WRITTEN = 1, F_DONE = 2, F_NEVER = 3 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static enum conform_result fail(conform_t *c, const char *fmt, ...)
    MRC_PRINTF(2, 3);
static enum conform_result fail(conform_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
    return CONFORM_FAIL;
}

/* Lets the transport progress while a rank has nothing to do. */
static void pause_rank(conform_t *c)
{
    if (c->t.ops->idle)
        c->t.ops->idle(c->t.ctx);
    sched_yield();
}

/* The value rank r sends as element i of its message k. */
static int32_t val(int r, int k, size_t i)
{
    return (int32_t)(r * 131 + k * 17 + (int)(i % 1009));
}

/* The local operand of element i of a receive that reduces. */
static int32_t loc(size_t i)
{
    return (int32_t)(i % 17) - 8;
}

/* 1 when msg names rank r ("rank 3" not followed by a digit). */
static int names_rank(const char *msg, int r)
{
    char want[24];
    int len = snprintf(want, sizeof want, "rank %d", r);
    for (const char *p = strstr(msg, want); p; p = strstr(p + 1, want))
        if (p[len] < '0' || p[len] > '9')
            return 1;
    return 0;
}

/* ---- driving transfers ------------------------------------------------- */

/* One transfer of a case: a send of buf, or a receive into x.dst. */
typedef struct op {
    int send;
    const void *buf;
    int in; /* posted */
    mrc__xfer_t x;
} op_t;

static void op_send(op_t *o, int peer, uint64_t tag, const void *buf,
                    size_t bytes)
{
    memset(o, 0, sizeof *o);
    o->send = 1;
    o->buf = buf;
    o->x.peer = peer;
    o->x.tag = tag;
    o->x.bytes = bytes;
}

/* A receive: copied into dst, or reduced (sum) with local into dst. The
 * destination is never NULL, even for no bytes (a transport tells sends
 * from receives by it). */
static void op_recv(op_t *o, int peer, uint64_t tag, void *dst,
                    const void *local, size_t count, mrc_dtype_t dtype)
{
    memset(o, 0, sizeof *o);
    o->x.peer = peer;
    o->x.tag = tag;
    o->x.dst = dst;
    o->x.local = local;
    o->x.count = count;
    o->x.dtype = dtype;
    o->x.op = MRC_SUM;
    o->x.bytes = count * mrc_dtype_size(dtype);
}

/* Begins call `call` with the receives among ops announced. */
static mrc_status_t begin_ops(conform_t *c, mrc__call_t call, const op_t *ops,
                              size_t n)
{
    mrc__xfer_t *recvs = calloc(n ? n : 1, sizeof *recvs);
    if (!recvs)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!ops[i].send)
            recvs[k++] = ops[i].x;
    mrc_status_t st = c->t.ops->begin(c->t.ctx, c->seq, &call, recvs, k);
    free(recvs);
    return st;
}

/* Posts ops in array order (again, where refused for now) and tests them
 * until every one is done: MRC_OK, the first failure, or MRC_ERR_TIMEOUT
 * after TIMEOUT_S. */
static mrc_status_t drive(conform_t *c, op_t *ops, size_t n)
{
    const mrc__transport_ops_t *t = c->t.ops;
    double end = now() + TIMEOUT_S;
    for (;;) {
        size_t left = 0;
        for (size_t i = 0; i < n; i++) {
            op_t *o = &ops[i];
            mrc_status_t st;
            if (!o->in) {
                st = o->send ? t->isend(c->t.ctx, o->buf, &o->x)
                             : t->irecv(c->t.ctx, &o->x);
                if (st == MRC_INPROGRESS) {
                    left++;
                    continue;
                }
                if (st != MRC_OK)
                    return st;
                o->in = 1;
            }
            if (__atomic_load_n(&o->x.done, __ATOMIC_ACQUIRE))
                continue;
            st = t->test(c->t.ctx, &o->x);
            if (st != MRC_OK)
                return st;
            left += !__atomic_load_n(&o->x.done, __ATOMIC_ACQUIRE);
        }
        if (left == 0)
            return MRC_OK;
        if (now() > end)
            return mrc__error(MRC_ERR_TIMEOUT,
                              "rank %d: %zu of %zu transfers not done after "
                              "%.0f s",
                              c->rank, left, n, TIMEOUT_S);
        pause_rank(c);
    }
}

/* Calls fn until it says anything but MRC_INPROGRESS, or TIMEOUT_S. */
#define POLL(c, st, expr)                                                      \
    do {                                                                       \
        double poll_end_ = now() + TIMEOUT_S;                                  \
        while (((st) = (expr)) == MRC_INPROGRESS && now() < poll_end_)         \
            pause_rank(c);                                                     \
    } while (0)

/* A case's call failed on this rank: tell the transport, as the executor
 * would, and say why. */
static enum conform_result call_failed(conform_t *c, mrc_status_t st,
                                       const char *what)
{
    char msg[400];
    snprintf(msg, sizeof msg, "%s", mrc_last_error());
    if (c->t.ops->cancel)
        c->t.ops->cancel(c->t.ctx, st);
    return fail(c, "%s: %s: %s", what, mrc_status_name(st), msg);
}

static mrc_status_t end_call(conform_t *c)
{
    mrc_status_t st = c->t.ops->end(c->t.ctx);
    c->seq++;
    return st;
}

/* ---- message matching -------------------------------------------------- */

/* The messages of the matching case: tags not in posting order, copies
 * and reductions (int32, float32), no bytes, an odd number of bytes. */
typedef struct msg_kind {
    uint64_t tag;
    mrc_dtype_t dtype;
    size_t count;
    int reduce;
} msg_kind_t;

static const msg_kind_t match_kinds[] = {
    {0x907, MRC_INT32, 1001, 0}, {0x15, MRC_FLOAT32, 1001, 1},
    {0x3000, MRC_INT32, 777, 1}, {0x2, MRC_INT32, 0, 0},
    {0x41, MRC_INT8, 13, 0},     {0x800000001ull, MRC_FLOAT32, 0, 1},
    {0x77, MRC_UINT8, 1, 0},
};
enum { MATCH_KINDS = sizeof match_kinds / sizeof *match_kinds };

static void fill(void *buf, mrc_dtype_t d, size_t count, int r, int k)
{
    for (size_t i = 0; i < count; i++) {
        int32_t v = val(r, k, i);
        if (d == MRC_FLOAT32)
            ((float *)buf)[i] = (float)v;
        else if (d == MRC_INT32)
            ((int32_t *)buf)[i] = v;
        else
            ((uint8_t *)buf)[i] = (uint8_t)v;
    }
}

/* The first wrong element of a receive of kind k from rank r, or -1. */
static long check(const void *dst, const msg_kind_t *m, int r, int k)
{
    for (size_t i = 0; i < m->count; i++) {
        int32_t want = val(r, k, i) + (m->reduce ? loc(i) : 0);
        int ok;
        if (m->dtype == MRC_FLOAT32)
            ok = ((const float *)dst)[i] == (float)want;
        else if (m->dtype == MRC_INT32)
            ok = ((const int32_t *)dst)[i] == want;
        else
            ok = ((const uint8_t *)dst)[i] == (uint8_t)want;
        if (!ok)
            return (long)i;
    }
    return -1;
}

static enum conform_result case_match(conform_t *c)
{
    int next = (c->rank + 1) % c->n, prev = (c->rank + c->n - 1) % c->n;
    enum conform_result res = CONFORM_PASS;
    /* Every buffer has 8 guard bytes past its message. */
    void *sbuf[MATCH_KINDS] = {0}, *rbuf[MATCH_KINDS] = {0},
         *lbuf[MATCH_KINDS] = {0};
    op_t ops[2 * MATCH_KINDS];
    int ok = 1;
    for (int k = 0; k < MATCH_KINDS; k++) {
        const msg_kind_t *m = &match_kinds[k];
        size_t bytes = m->count * mrc_dtype_size(m->dtype) + 8;
        sbuf[k] = malloc(bytes);
        rbuf[k] = malloc(bytes);
        lbuf[k] = malloc(bytes);
        ok = ok && sbuf[k] && rbuf[k] && lbuf[k];
        if (!ok)
            continue;
        fill(sbuf[k], m->dtype, m->count, c->rank, k);
        memset(rbuf[k], 0xee, bytes);
        for (size_t i = 0; i < m->count && m->reduce; i++) {
            if (m->dtype == MRC_FLOAT32)
                ((float *)lbuf[k])[i] = (float)loc(i);
            else
                ((int32_t *)lbuf[k])[i] = loc(i);
        }
        /* sends in the reverse order of the receives */
        op_send(&ops[MATCH_KINDS - 1 - k], next, m->tag, sbuf[k],
                m->count * mrc_dtype_size(m->dtype));
        op_recv(&ops[MATCH_KINDS + k], prev, m->tag, rbuf[k],
                m->reduce ? lbuf[k] : NULL, m->count, m->dtype);
    }
    if (!ok) {
        res = fail(c, "out of memory");
        goto out;
    }
    mrc__call_t call = mrc__call_make(MRC_ALLREDUCE, 1, MRC_INT32, MRC_SUM, 0);
    mrc_status_t st = begin_ops(c, call, ops, 2 * MATCH_KINDS);
    if (st == MRC_OK)
        st = drive(c, ops, 2 * MATCH_KINDS);
    if (st != MRC_OK) {
        res = call_failed(c, st, "matching call");
        goto out;
    }
    st = end_call(c);
    if (st != MRC_OK) {
        res = fail(c, "end: %s", mrc_status_name(st));
        goto out;
    }
    for (int k = 0; k < MATCH_KINDS && res == CONFORM_PASS; k++) {
        const msg_kind_t *m = &match_kinds[k];
        size_t bytes = m->count * mrc_dtype_size(m->dtype);
        long bad = check(rbuf[k], m, prev, k);
        static const unsigned char guard[8] = {0xee, 0xee, 0xee, 0xee,
                                               0xee, 0xee, 0xee, 0xee};
        if (bad >= 0)
            res = fail(c, "tag %llx from rank %d: element %ld wrong",
                       (unsigned long long)m->tag, prev, bad);
        else if (memcmp((char *)rbuf[k] + bytes, guard, 8) != 0)
            res = fail(c, "tag %llx: bytes written past the %zu received",
                       (unsigned long long)m->tag, bytes);
    }
out:
    for (int k = 0; k < MATCH_KINDS; k++) {
        free(sbuf[k]);
        free(rbuf[k]);
        free(lbuf[k]);
    }
    return res;
}

/* Many small messages, received in an order of their own. */
enum { BURST = 512 };

static enum conform_result case_burst(conform_t *c)
{
    int next = (c->rank + 1) % c->n, prev = (c->rank + c->n - 1) % c->n;
    enum conform_result res = CONFORM_PASS;
    int32_t *s = malloc(BURST * 2 * sizeof *s);
    int32_t *r = malloc(BURST * 2 * sizeof *r);
    op_t *ops = malloc(2 * BURST * sizeof *ops);
    if (!s || !r || !ops) {
        res = fail(c, "out of memory");
        goto out;
    }
    for (int i = 0; i < BURST; i++) {
        s[2 * i] = val(c->rank, i, 0);
        s[2 * i + 1] = val(c->rank, i, 1);
        op_send(&ops[i], next, (uint64_t)(BURST - 1 - i),
                &s[2 * (BURST - 1 - i)], 2 * sizeof *s);
        /* 331 is prime to BURST: a permutation of the tags */
        int k = (int)((unsigned)i * 331u % BURST);
        op_recv(&ops[BURST + i], prev, (uint64_t)k, &r[2 * k], NULL, 2,
                MRC_INT32);
    }
    mrc__call_t call =
        mrc__call_make(MRC_ALLGATHER, BURST, MRC_INT32, MRC_SUM, 0);
    mrc_status_t st = begin_ops(c, call, ops, 2 * BURST);
    if (st == MRC_OK)
        st = drive(c, ops, 2 * BURST);
    if (st != MRC_OK) {
        res = call_failed(c, st, "burst");
        goto out;
    }
    if ((st = end_call(c)) != MRC_OK) {
        res = fail(c, "end: %s", mrc_status_name(st));
        goto out;
    }
    for (int k = 0; k < BURST; k++)
        if (r[2 * k] != val(prev, k, 0) || r[2 * k + 1] != val(prev, k, 1)) {
            res = fail(c, "message %d of %d from rank %d: wrong data", k, BURST,
                       prev);
            break;
        }
out:
    free(s);
    free(r);
    free(ops);
    return res;
}

/* Several MiB each way, copied and reduced (a transport's large-message
 * path: rendezvous, pieces). */
static enum conform_result case_large(conform_t *c)
{
    int next = (c->rank + 1) % c->n, prev = (c->rank + c->n - 1) % c->n;
    const msg_kind_t kinds[2] = {{11, MRC_FLOAT32, ((size_t)1 << 20) + 3, 0},
                                 {12, MRC_INT32, ((size_t)3 << 19) + 1, 1}};
    enum conform_result res = CONFORM_PASS;
    void *s[2] = {0}, *r[2] = {0}, *l[2] = {0};
    op_t ops[4];
    for (int k = 0; k < 2; k++) {
        size_t bytes = kinds[k].count * 4;
        s[k] = malloc(bytes);
        r[k] = malloc(bytes);
        l[k] = malloc(bytes);
        if (!s[k] || !r[k] || !l[k]) {
            res = fail(c, "out of memory");
            goto out;
        }
        fill(s[k], kinds[k].dtype, kinds[k].count, c->rank, k);
        for (size_t i = 0; i < kinds[k].count; i++)
            ((int32_t *)l[k])[i] = loc(i);
        op_send(&ops[k], next, kinds[k].tag, s[k], bytes);
        op_recv(&ops[3 - k], prev, kinds[k].tag, r[k],
                kinds[k].reduce ? l[k] : NULL, kinds[k].count, kinds[k].dtype);
    }
    mrc__call_t call = mrc__call_make(MRC_REDUCE_SCATTER, kinds[0].count,
                                      MRC_FLOAT32, MRC_SUM, 0);
    mrc_status_t st = begin_ops(c, call, ops, 4);
    if (st == MRC_OK)
        st = drive(c, ops, 4);
    if (st != MRC_OK) {
        res = call_failed(c, st, "large messages");
        goto out;
    }
    if ((st = end_call(c)) != MRC_OK) {
        res = fail(c, "end: %s", mrc_status_name(st));
        goto out;
    }
    for (int k = 0; k < 2 && res == CONFORM_PASS; k++) {
        long bad = check(r[k], &kinds[k], prev, k);
        if (bad >= 0)
            res = fail(c, "%zu-byte message from rank %d: element %ld wrong",
                       kinds[k].count * 4, prev, bad);
    }
out:
    for (int k = 0; k < 2; k++) {
        free(s[k]);
        free(r[k]);
        free(l[k]);
    }
    return res;
}

/* ---- agreement --------------------------------------------------------- */

/* The last rank's call has one element more. Every rank sends to and
 * receives from every other, so each meets the odd one directly: all
 * fail with MRC_ERR_INVALID_ARG, and the message names both calls. */
static mrc__call_t agree_call(const conform_t *c, int rank)
{
    return mrc__call_make(MRC_ALLREDUCE, rank == c->n - 1 ? 100001 : 100000,
                          MRC_FLOAT32, MRC_SUM, 0);
}

static enum conform_result names_both_calls(conform_t *c, mrc_status_t st,
                                            const char *msg)
{
    char a[128], b[128];
    mrc__call_describe(agree_call(c, 0), a, sizeof a);
    mrc__call_describe(agree_call(c, c->n - 1), b, sizeof b);
    if (st != MRC_ERR_INVALID_ARG)
        return fail(c, "wanted MRC_ERR_INVALID_ARG, got %s: %s",
                    mrc_status_name(st), msg);
    if (!strstr(msg, a) || !strstr(msg, b))
        return fail(c, "the message does not name both '%s' and '%s': %s", a, b,
                    msg);
    return CONFORM_PASS;
}

static enum conform_result case_agree(conform_t *c)
{
    enum conform_result res = CONFORM_PASS;
    int peers = c->n - 1;
    int32_t *s = calloc(4, sizeof *s), *r = calloc((size_t)c->n * 4, 4);
    op_t *ops = calloc((size_t)(2 * peers), sizeof *ops);
    if (!s || !r || !ops) {
        res = fail(c, "out of memory");
        goto out;
    }
    for (int p = 0, k = 0; p < c->n; p++) {
        if (p == c->rank)
            continue;
        op_send(&ops[k], p, 5, s, 4 * sizeof *s);
        op_recv(&ops[peers + k], p, 5, &r[4 * p], NULL, 4, MRC_INT32);
        k++;
    }
    mrc_status_t st =
        begin_ops(c, agree_call(c, c->rank), ops, (size_t)(2 * peers));
    if (st == MRC_OK)
        st = drive(c, ops, (size_t)(2 * peers));
    if (st == MRC_OK) {
        end_call(c);
        res = fail(c,
                   "the call completed on this rank although rank %d "
                   "called differently",
                   c->n - 1);
        goto out;
    }
    char msg[400];
    snprintf(msg, sizeof msg, "%s", mrc_last_error());
    if (c->t.ops->cancel)
        c->t.ops->cancel(c->t.ctx, st);
    res = names_both_calls(c, st, msg);
out:
    free(s);
    free(r);
    free(ops);
    return res;
}

/* ---- memory semantics -------------------------------------------------- */

static int has_memory(conform_t *c)
{
    const mrc__transport_ops_t *t = c->t.ops;
    if (t->publish && t->get && t->signal && t->wait)
        return 1;
    snprintf(c->why, sizeof c->why, "transport %s has no memory semantics",
             t->name);
    return 0;
}

/* Polls wait(peer, flag) on every peer until all say MRC_OK. */
static mrc_status_t wait_all(conform_t *c, int flag)
{
    for (int p = 0; p < c->n; p++) {
        if (p == c->rank)
            continue;
        mrc_status_t st;
        POLL(c, st, c->t.ops->wait(c->t.ctx, p, flag));
        if (st != MRC_OK)
            return st == MRC_INPROGRESS
                       ? mrc__error(MRC_ERR_TIMEOUT,
                                    "rank %d: flag %d of rank %d not set "
                                    "after %.0f s",
                                    c->rank, flag, p, TIMEOUT_S)
                       : st;
    }
    return MRC_OK;
}

/* A get into x, polled; MRC_INPROGRESS after TIMEOUT_S. */
static mrc_status_t get(conform_t *c, int peer, int buf, uint64_t off,
                        mrc__xfer_t *x)
{
    mrc_status_t st;
    POLL(c, st, c->t.ops->get(c->t.ctx, peer, buf, off, x));
    return st;
}

static void xfer(mrc__xfer_t *x, void *dst, const void *local, size_t count)
{
    memset(x, 0, sizeof *x);
    x->dst = dst;
    x->local = local;
    x->count = count;
    x->bytes = count * 4;
    x->dtype = MRC_INT32;
    x->op = MRC_SUM;
}

/* Values of call j: what rank r sends (k 0), keeps in its receive buffer
 * (k 1) and writes in its window (k 2). */
static int32_t mem_val(int r, int j, int k, size_t i)
{
    return val(r, 3 * j + k, i) + 1000000 * j;
}

/* The reads of call j from peer p: the window by copy (at an offset) and
 * reduced, the send and receive buffers by reference, then reads outside
 * what p published, which must fail and leave dst alone. */
static enum conform_result read_peer(conform_t *c, int p, int j, size_t count,
                                     int32_t *dst, const int32_t *local)
{
    mrc__xfer_t x;
    mrc_status_t st;
    const size_t off = 5;
    xfer(&x, dst, NULL, count - off);
    if ((st = get(c, p, MRC__MEM_WINDOW, off * 4, &x)) != MRC_OK)
        return call_failed(c, st, "get of a window");
    for (size_t i = 0; i < count - off; i++)
        if (dst[i] != mem_val(p, j, 2, i + off))
            return fail(c,
                        "call %d: window of rank %d at %zu: %d, not %d "
                        "(an older call's?)",
                        j, p, i + off, dst[i], mem_val(p, j, 2, i + off));
    xfer(&x, dst, local, count);
    if ((st = get(c, p, MRC__MEM_WINDOW, 0, &x)) != MRC_OK)
        return call_failed(c, st, "get of a window, reduced");
    for (size_t i = 0; i < count; i++)
        if (dst[i] != mem_val(p, j, 2, i) + loc(i))
            return fail(c,
                        "call %d: reduced get of rank %d's window: "
                        "element %zu wrong",
                        j, p, i);
    for (int b = 0; b < 2; b++) {
        xfer(&x, dst, NULL, count);
        st = get(c, p, b ? MRC__MEM_RECV : MRC__MEM_SEND, 0, &x);
        if (st != MRC_OK)
            return call_failed(c, st, "get by reference");
        for (size_t i = 0; i < count; i++)
            if (dst[i] != mem_val(p, j, b, i))
                return fail(c,
                            "call %d: rank %d's %s buffer by reference: "
                            "element %zu wrong",
                            j, p, b ? "receive" : "send", i);
    }
    /* Outside: one element past the end, an offset past the end, more
     * window than there is, a buffer not published. */
    const struct {
        int buf;
        uint64_t off;
        size_t count;
    } bad[] = {{MRC__MEM_SEND, (count - 1) * 4, 2},
               {MRC__MEM_RECV, (count + 1) * 4, 1},
               {MRC__MEM_WINDOW, 0, count + 1},
               {MRC__MEM_SCRATCH, 0, 1},
               {MRC__MEM_SEND, UINT64_MAX - 3, 2}};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        for (size_t i = 0; i <= count; i++)
            dst[i] = -7;
        xfer(&x, dst, NULL, bad[k].count);
        st = get(c, p, bad[k].buf, bad[k].off, &x);
        if (st == MRC_OK || st == MRC_INPROGRESS)
            return fail(c,
                        "a get of %zu bytes at %llu of rank %d's buffer "
                        "%d (%zu bytes) was not refused: %s",
                        x.bytes, (unsigned long long)bad[k].off, p, bad[k].buf,
                        count * 4, mrc_status_name(st));
        for (size_t i = 0; i <= count; i++)
            if (dst[i] != -7)
                return fail(c, "a refused get wrote element %zu", i);
    }
    return CONFORM_PASS;
}

/* One call of the memory case (j: its number in the case). */
static enum conform_result memory_call(conform_t *c, int j, int32_t *send,
                                       int32_t *recv, int32_t *dst,
                                       const int32_t *local)
{
    const mrc__transport_ops_t *t = c->t.ops;
    size_t count = 1000 + (size_t)j;
    for (size_t i = 0; i < count; i++) {
        send[i] = mem_val(c->rank, j, 0, i);
        recv[i] = mem_val(c->rank, j, 1, i);
    }
    int32_t *members = malloc((size_t)c->n * sizeof *members);
    if (!members)
        return fail(c, "out of memory");
    for (int p = 0; p < c->n; p++)
        members[p] = p;
    mrc__exposure_t ex = {0};
    ex.buf[MRC__MEM_SEND] = send;
    ex.bytes[MRC__MEM_SEND] = count * 4;
    ex.buf[MRC__MEM_RECV] = recv;
    ex.bytes[MRC__MEM_RECV] = count * 4;
    ex.window_bytes = count * 4;
    ex.members = members;
    ex.num_members = c->n;
    mrc__call_t call =
        mrc__call_make(MRC_ALLREDUCE, count, MRC_INT32, MRC_SUM, 0);
    void *window = NULL;
    mrc_status_t st = t->begin(c->t.ctx, c->seq, &call, NULL, 0);
    if (st == MRC_OK)
        POLL(c, st, t->publish(c->t.ctx, &ex, &window));
    free(members);
    if (st != MRC_OK)
        return call_failed(c, st, "publish");
    for (size_t i = 0; i < count; i++)
        ((int32_t *)window)[i] = mem_val(c->rank, j, 2, i);
    /* Before anyone signals F_WRITTEN in this call (a flag of the call
     * before does not count), every wait on it is in progress. */
    for (int p = 0; p < c->n; p++) {
        if (p == c->rank)
            continue;
        st = t->wait(c->t.ctx, p, F_WRITTEN);
        if (st != MRC_INPROGRESS) {
            if (t->cancel)
                t->cancel(c->t.ctx, MRC_ERR_INTERNAL);
            return fail(c,
                        "call %d: wait on rank %d's flag before it was "
                        "set: %s, not MRC_INPROGRESS",
                        j, p, mrc_status_name(st));
        }
    }
    if ((st = t->signal(c->t.ctx, F_CHECKED)) != MRC_OK ||
        (st = wait_all(c, F_CHECKED)) != MRC_OK ||
        (st = t->signal(c->t.ctx, F_WRITTEN)) != MRC_OK ||
        (st = wait_all(c, F_WRITTEN)) != MRC_OK)
        return call_failed(c, st, "signal and wait");
    for (int p = 0; p < c->n; p++) {
        if (p == c->rank)
            continue;
        enum conform_result res = read_peer(c, p, j, count, dst, local);
        if (res != CONFORM_PASS) {
            if (t->cancel)
                t->cancel(c->t.ctx, MRC_ERR_INTERNAL);
            return res;
        }
    }
    /* Nobody ends (and so frees or rewrites) what the others still read. */
    if ((st = t->signal(c->t.ctx, F_DONE)) != MRC_OK ||
        (st = wait_all(c, F_DONE)) != MRC_OK)
        return call_failed(c, st, "final signal and wait");
    if ((st = end_call(c)) != MRC_OK)
        return fail(c, "end: %s", mrc_status_name(st));
    return CONFORM_PASS;
}

/* Three calls in a row: the third reuses the first's window (parity), and
 * every read must see its own call's data. */
static enum conform_result case_memory(conform_t *c)
{
    if (!has_memory(c))
        return CONFORM_SKIP;
    enum { CALLS = 3, MAX = 1000 + CALLS };
    enum conform_result res = CONFORM_PASS;
    int32_t *send = malloc(MAX * 4), *recv = malloc(MAX * 4);
    int32_t *dst = malloc((MAX + 1) * 4), *local = malloc(MAX * 4);
    if (!send || !recv || !dst || !local)
        res = fail(c, "out of memory");
    for (size_t i = 0; local && i < MAX; i++)
        local[i] = loc(i);
    for (int j = 0; j < CALLS && res == CONFORM_PASS; j++)
        res = memory_call(c, j, send, recv, dst, local);
    free(send);
    free(recv);
    free(dst);
    free(local);
    return res;
}

/* The last rank's call differs; everyone publishes and waits on a flag
 * nobody will set: the wait must find the disagreement, not time out. */
static enum conform_result case_memory_agree(conform_t *c)
{
    if (!has_memory(c))
        return CONFORM_SKIP;
    const mrc__transport_ops_t *t = c->t.ops;
    float buf[4] = {0};
    int32_t *members = malloc((size_t)c->n * sizeof *members);
    if (!members)
        return fail(c, "out of memory");
    for (int p = 0; p < c->n; p++)
        members[p] = p;
    mrc__exposure_t ex = {0};
    ex.buf[MRC__MEM_SEND] = buf;
    ex.bytes[MRC__MEM_SEND] = sizeof buf;
    ex.window_bytes = 64;
    ex.members = members;
    ex.num_members = c->n;
    mrc__call_t call = agree_call(c, c->rank);
    void *window = NULL;
    mrc_status_t st = t->begin(c->t.ctx, c->seq, &call, NULL, 0);
    if (st == MRC_OK)
        POLL(c, st, t->publish(c->t.ctx, &ex, &window));
    free(members);
    int peer = c->rank == c->n - 1 ? 0 : c->n - 1;
    if (st == MRC_OK)
        POLL(c, st, t->wait(c->t.ctx, peer, F_NEVER));
    if (st == MRC_INPROGRESS)
        return call_failed(c, MRC_ERR_TIMEOUT,
                           "a wait on a peer that called differently did "
                           "not fail");
    if (st == MRC_OK)
        return fail(c, "a wait on a flag never set succeeded");
    char msg[400];
    snprintf(msg, sizeof msg, "%s", mrc_last_error());
    if (t->cancel)
        t->cancel(c->t.ctx, st);
    return names_both_calls(c, st, msg);
}

/* ---- cancel ------------------------------------------------------------ */

/* The last rank cancels mid-call. Every other rank sends to it, receives
 * a large message from it, and waits for one it never sends: each must
 * fail naming it within TIMEOUT_S. The cancelling rank frees its buffers
 * as soon as cancel returns (under the sanitizers, a peer that still read
 * them would be caught). */
enum { CANCEL_BYTES = 1 << 20 };

static enum conform_result cancel_quitter(conform_t *c)
{
    int peers = c->n - 1;
    char *s = malloc(CANCEL_BYTES), *r = malloc((size_t)peers * 64);
    op_t *ops = calloc((size_t)(2 * peers), sizeof *ops);
    if (!s || !r || !ops) {
        free(s);
        free(r);
        free(ops);
        return fail(c, "out of memory");
    }
    for (size_t i = 0; i < CANCEL_BYTES; i++)
        s[i] = (char)(i * 7);
    for (int p = 0; p < peers; p++) {
        op_send(&ops[p], p, 2, s, CANCEL_BYTES);
        op_recv(&ops[peers + p], p, 1, r + 64 * p, NULL, 16, MRC_INT32);
    }
    mrc__call_t call =
        mrc__call_make(MRC_BROADCAST, CANCEL_BYTES, MRC_UINT8, MRC_SUM, 0);
    mrc_status_t st = begin_ops(c, call, ops, (size_t)(2 * peers));
    /* Post the sends (its receives it never posts), then give up at
     * once. */
    double end = now() + TIMEOUT_S;
    for (int p = 0; st == MRC_OK && p < peers; p++) {
        while ((st = c->t.ops->isend(c->t.ctx, s, &ops[p].x)) ==
                   MRC_INPROGRESS &&
               now() < end)
            pause_rank(c);
    }
    if (c->t.ops->cancel)
        c->t.ops->cancel(c->t.ctx, MRC_ERR_INTERNAL);
    memset(s, 0x5a, CANCEL_BYTES); /* what a late reader would see */
    free(s);
    free(r);
    free(ops);
    if (st != MRC_OK)
        return fail(c, "before its cancel: %s: %s", mrc_status_name(st),
                    mrc_last_error());
    return CONFORM_PASS;
}

static enum conform_result case_cancel(conform_t *c)
{
    if (c->skip_cancel) {
        snprintf(c->why, sizeof c->why, "%s", c->skip_cancel);
        return CONFORM_SKIP;
    }
    if (!c->t.ops->cancel) {
        snprintf(c->why, sizeof c->why, "transport %s has no cancel",
                 c->t.ops->name);
        return CONFORM_FAIL;
    }
    int quitter = c->n - 1;
    if (c->rank == quitter)
        return cancel_quitter(c);
    enum conform_result res = CONFORM_PASS;
    char *s = malloc(64), *big = malloc(CANCEL_BYTES), *never = malloc(64);
    op_t ops[3];
    if (!s || !big || !never) {
        res = fail(c, "out of memory");
        goto out;
    }
    memset(s, 1, 64);
    memset(big, 0, CANCEL_BYTES);
    op_recv(&ops[0], quitter, 2, big, NULL, CANCEL_BYTES, MRC_UINT8);
    op_recv(&ops[1], quitter, 3, never, NULL, 16, MRC_INT32);
    op_send(&ops[2], quitter, 1, s, 64);
    mrc__call_t call =
        mrc__call_make(MRC_BROADCAST, CANCEL_BYTES, MRC_UINT8, MRC_SUM, 0);
    mrc_status_t st = begin_ops(c, call, ops, 3);
    /* The large receive starts late, most likely after the cancel (the
     * quitter cancels as soon as its sends are posted): it must then fail,
     * not read what the quitter freed. On a slow day it comes first and
     * must hold the quitter's data. */
    if (st == MRC_OK)
        POLL(c, st, c->t.ops->isend(c->t.ctx, s, &ops[2].x));
    ops[2].in = st == MRC_OK;
    struct timespec late = {0, 50 * 1000 * 1000};
    nanosleep(&late, NULL);
    if (st == MRC_OK)
        st = drive(c, ops, 3);
    char msg[400];
    snprintf(msg, sizeof msg, "%s", mrc_last_error());
    if (st == MRC_OK)
        res = fail(c, "the call completed although rank %d cancelled it",
                   quitter);
    else if (st == MRC_ERR_TIMEOUT && strstr(msg, "not done after"))
        res = fail(c, "not told of rank %d's cancel within %.0f s", quitter,
                   TIMEOUT_S);
    else if (!names_rank(msg, quitter))
        res = fail(c, "%s does not name rank %d: %s", mrc_status_name(st),
                   quitter, msg);
    /* What arrived before the cancel is the sender's, whole. */
    for (size_t i = 0; res == CONFORM_PASS && ops[0].x.done && i < CANCEL_BYTES;
         i++)
        if (big[i] != (char)(i * 7))
            res = fail(c, "byte %zu of a completed receive is wrong", i);
    if (st != MRC_OK && c->t.ops->cancel)
        c->t.ops->cancel(c->t.ctx, st);
out:
    free(s);
    free(big);
    free(never);
    return res;
}

/* ---- the list ---------------------------------------------------------- */

const conform_case_t conform_cases[] = {
    {"match", 2, 0, case_match},   {"burst", 2, 0, case_burst},
    {"large", 2, 0, case_large},   {"memory", 2, 0, case_memory},
    {"agree", 2, 1, case_agree},   {"memory-agree", 2, 1, case_memory_agree},
    {"cancel", 2, 1, case_cancel},
};
const int conform_num_cases = sizeof conform_cases / sizeof *conform_cases;

const conform_case_t *conform_find(const char *name)
{
    for (int i = 0; i < conform_num_cases; i++)
        if (strcmp(conform_cases[i].name, name) == 0)
            return &conform_cases[i];
    return NULL;
}

enum conform_result conform_run(conform_t *c, const conform_case_t *k)
{
    c->why[0] = '\0';
    enum conform_result res =
        c->n < k->min_ranks
            ? (snprintf(c->why, sizeof c->why, "needs %d ranks", k->min_ranks),
               CONFORM_SKIP)
            : k->run(c);
    static const char *word[] = {"ok", "FAIL", "skip"};
    printf("rank %d of %d: %s %s: %s%s%s\n", c->rank, c->n, c->t.ops->name,
           k->name, word[res], c->why[0] ? ": " : "", c->why);
    fflush(stdout);
    return res;
}
