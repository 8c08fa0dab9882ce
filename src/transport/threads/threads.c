/*
 * The threads transport: every rank a thread of one process, so a receiver
 * reads the sender's buffer directly and reduces (or copies) it into its
 * own in one pass: no staging copy at all.
 *
 * Rendezvous without locks. At the start of a call each rank publishes a
 * table of the receives it will post, sorted by (sender, tag), stamped with
 * the call's number. A sender looks its message up in the receiver's table
 * (binary search, read-only), writes its buffer address into the slot and
 * marks it sent. The receiver, polling its slot, does the reduction and
 * then marks the sender's transfer done, which frees the sender's buffer.
 *
 * Two tables per rank, used by alternate calls: a sender can be at most one
 * call ahead of a receiver (it cannot finish a call before its receivers
 * have consumed its sends), so it finds either the table of its call or an
 * older stamp, and waits.
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "exec/kernels.h"
#include "transport/transport.h"

typedef struct rkey {
    int32_t peer;
    uint64_t tag;
} rkey_t;

typedef struct slot {
    const void *buf;
    size_t bytes;
    volatile int *sender_done;
    int state; /* 0 empty, 1 sent (atomic) */
} slot_t;

typedef struct table {
    uint64_t stamp; /* seq + 1 of the call it serves (atomic) */
    size_t n, cap;
    rkey_t *keys;
    slot_t *slots;
} table_t;

typedef struct rank_state {
    table_t tables[2];
    uint64_t seq;
} rank_state_t;

struct mrc__threads_fabric {
    int n;
    rank_state_t *ranks;
    struct ctx *ctxs;
};

typedef struct ctx {
    mrc__threads_fabric_t *f;
    int rank;
} ctx_t;

static int key_cmp(const void *a, const void *b)
{
    const rkey_t *x = a, *y = b;
    if (x->peer != y->peer)
        return x->peer < y->peer ? -1 : 1;
    return x->tag < y->tag ? -1 : x->tag > y->tag;
}

static long find(const table_t *t, int peer, uint64_t tag)
{
    size_t lo = 0, hi = t->n;
    rkey_t k = {peer, tag};
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = key_cmp(&t->keys[mid], &k);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static mrc_status_t th_begin(void *vctx, uint64_t seq, const mrc__xfer_t *recvs,
                             size_t n)
{
    ctx_t *c = vctx;
    rank_state_t *r = &c->f->ranks[c->rank];
    table_t *t = &r->tables[seq & 1];
    if (n > t->cap) {
        size_t cap = t->cap ? t->cap : 64;
        while (cap < n)
            cap *= 2;
        rkey_t *k = malloc(cap * sizeof *k);
        slot_t *s = malloc(cap * sizeof *s);
        if (!k || !s) {
            free(k);
            free(s);
            return mrc__error(MRC_ERR_NO_MEMORY,
                              "rank %d: out of memory for %zu receives",
                              c->rank, n);
        }
        /* Nobody reads this table until it is stamped below. */
        free(t->keys);
        free(t->slots);
        t->keys = k;
        t->slots = s;
        t->cap = cap;
    }
    for (size_t i = 0; i < n; i++) {
        t->keys[i].peer = recvs[i].peer;
        t->keys[i].tag = recvs[i].tag;
    }
    if (n > 0) {
        qsort(t->keys, n, sizeof *t->keys, key_cmp);
        memset(t->slots, 0, n * sizeof *t->slots);
    }
    t->n = n;
    r->seq = seq;
    __atomic_store_n(&t->stamp, seq + 1, __ATOMIC_RELEASE);
    return MRC_OK;
}

static mrc_status_t th_isend(void *vctx, const void *buf, mrc__xfer_t *x)
{
    ctx_t *c = vctx;
    uint64_t seq = c->f->ranks[c->rank].seq;
    table_t *t = &c->f->ranks[x->peer].tables[seq & 1];
    if (__atomic_load_n(&t->stamp, __ATOMIC_ACQUIRE) != seq + 1)
        return MRC_INPROGRESS; /* the receiver has not reached this call */
    long i = find(t, c->rank, x->tag);
    if (i < 0)
        return mrc__error(MRC_ERR_INTERNAL,
                          "rank %d sends tag %llx to rank %d, which does not "
                          "expect it",
                          c->rank, (unsigned long long)x->tag, x->peer);
    slot_t *s = &t->slots[i];
    s->buf = buf;
    s->bytes = x->bytes;
    s->sender_done = &x->done;
    __atomic_store_n(&s->state, 1, __ATOMIC_RELEASE);
    x->posted = 1;
    return MRC_OK;
}

static mrc_status_t th_irecv(void *vctx, mrc__xfer_t *x)
{
    ctx_t *c = vctx;
    rank_state_t *r = &c->f->ranks[c->rank];
    long i = find(&r->tables[r->seq & 1], x->peer, x->tag);
    if (i < 0)
        return mrc__error(MRC_ERR_INTERNAL,
                          "rank %d: receive of tag %llx from rank %d was not "
                          "announced",
                          c->rank, (unsigned long long)x->tag, x->peer);
    x->priv[0] = (uintptr_t)i;
    x->posted = 1;
    return MRC_OK;
}

static mrc_status_t th_test(void *vctx, mrc__xfer_t *x)
{
    ctx_t *c = vctx;
    if (x->dst == NULL || __atomic_load_n(&x->done, __ATOMIC_ACQUIRE))
        return MRC_OK; /* a send (the receiver completes it), or done */
    rank_state_t *r = &c->f->ranks[c->rank];
    slot_t *s = &r->tables[r->seq & 1].slots[x->priv[0]];
    if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != 1)
        return MRC_OK;
    if (s->bytes != x->bytes)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: %zu bytes arrived from rank %d where %zu "
                          "were expected",
                          c->rank, s->bytes, x->peer, x->bytes);
    if (x->local && x->stream)
        mrc__reduce_stream(x->dst, x->local, s->buf, x->count, x->dtype,
                           x->op);
    else if (x->local)
        mrc__reduce(x->dst, x->local, s->buf, x->count, x->dtype, x->op);
    else if (x->stream)
        mrc__copy_stream(x->dst, s->buf, x->bytes);
    else
        memcpy(x->dst, s->buf, x->bytes);
    __atomic_store_n(s->sender_done, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
    return MRC_OK;
}

static mrc_status_t th_end(void *vctx)
{
    (void)vctx;
    return MRC_OK;
}

static const mrc__transport_ops_t threads_ops = {
    "threads", th_begin, th_isend, th_irecv, th_test, th_end, NULL, NULL,
};

mrc_status_t mrc__threads_fabric_create(int nranks,
                                        mrc__threads_fabric_t **out)
{
    *out = NULL;
    mrc__threads_fabric_t *f = calloc(1, sizeof *f);
    if (!f)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    f->n = nranks;
    f->ranks = calloc((size_t)nranks, sizeof *f->ranks);
    f->ctxs = calloc((size_t)nranks, sizeof *f->ctxs);
    if (!f->ranks || !f->ctxs) {
        mrc__threads_fabric_destroy(f);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    for (int i = 0; i < nranks; i++) {
        f->ctxs[i].f = f;
        f->ctxs[i].rank = i;
    }
    *out = f;
    return MRC_OK;
}

void mrc__threads_fabric_destroy(mrc__threads_fabric_t *f)
{
    if (!f)
        return;
    for (int i = 0; f->ranks && i < f->n; i++)
        for (int t = 0; t < 2; t++) {
            free(f->ranks[i].tables[t].keys);
            free(f->ranks[i].tables[t].slots);
        }
    free(f->ranks);
    free(f->ctxs);
    free(f);
}

mrc__transport_t mrc__threads_transport(mrc__threads_fabric_t *f, int rank)
{
    mrc__transport_t t = {&threads_ops, &f->ctxs[rank]};
    return t;
}
