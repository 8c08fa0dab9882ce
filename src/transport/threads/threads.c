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
 *
 * Agreement: the table carries the receiver's call (collective, count,
 * dtype, op, root); a sender compares it with its own before it posts
 * anything, so no rank reads a buffer sized for another call.
 *
 * Failure: a rank whose call fails writes why in its failure record, and
 * revokes the sends it posted that no receiver has taken (a receiver
 * that is reading one is waited for), so no peer touches its buffers once
 * it has returned. A rank waiting on a peer that failed fails too, with
 * the same message, and so on around the group: nobody waits out the
 * timeout for a peer that has given up.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "reduce/reduce.h"
#include "transport/transport.h"

typedef struct rkey {
    int32_t peer;
    uint64_t tag;
} rkey_t;

/* A slot's state (atomic): the receiver takes a sent slot by moving it to
 * READING, and leaves the sender's memory alone once it is TAKEN; a
 * sender that gives up moves a slot still SENT to REVOKED. */
enum { SLOT_EMPTY, SLOT_SENT, SLOT_READING, SLOT_TAKEN, SLOT_REVOKED };

typedef struct slot {
    const void *buf;
    size_t bytes;
    volatile int *sender_done;
    int state;
} slot_t;

typedef struct table {
    uint64_t stamp;   /* seq + 1 of the call it serves (atomic) */
    mrc__call_t call; /* the receiver's call, set before the stamp */
    size_t n, cap;
    rkey_t *keys;
    slot_t *slots;
} table_t;

/* Why a rank's call failed: a disagreement between ranks a and b (their
 * calls ca and cb), or another status of rank a. */
typedef struct failure {
    int state; /* atomic: 0 none, 1 being written, 2 written */
    mrc_status_t status;
    int a, b;
    mrc__call_t ca, cb;
} failure_t;

/* What a rank exposes in one call (by parity of its number). */
typedef struct published {
    uint64_t seq; /* atomic: seq + 1 of the call, set after the rest */
    const char *buf[MRC__MEM_BUFS];
    size_t bytes[MRC__MEM_BUFS];
} published_t;

typedef struct rank_state {
    table_t tables[2];
    uint64_t seq;
    mrc__call_t call;
    failure_t failed;
    /* Memory semantics: flags (seq + 1 of the call that set each), the
     * buffers published by parity, the windows, how far the rank is, and
     * the peers reading its memory now. */
    uint64_t flags[MRC__FLAGS];
    published_t pub[2];
    char *window[2];
    size_t window_cap[2];
    uint64_t ended;   /* atomic: seq + 1 of the last call ended */
    uint64_t revoked; /* atomic: seq + 1 of a call that failed here */
    int readers;      /* atomic: peers inside a get of this rank */
} rank_state_t;

struct mrc__threads_hub {
    int n;
    rank_state_t *ranks;
    struct ctx *ctxs;
};

typedef struct ctx {
    mrc__threads_hub_t *f;
    int rank;
    mrc__xfer_t **sends; /* posted in this call, for cancel */
    size_t num_sends, cap_sends;
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

/* Records why this rank's call failed (once: the first reason stays). */
static void set_failed(ctx_t *c, const failure_t *why)
{
    failure_t *f = &c->f->ranks[c->rank].failed;
    int none = 0;
    if (!__atomic_compare_exchange_n(&f->state, &none, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;
    f->status = why->status;
    f->a = why->a;
    f->b = why->b;
    f->ca = why->ca;
    f->cb = why->cb;
    __atomic_store_n(&f->state, 2, __ATOMIC_RELEASE);
}

/* The message of a failure, for any rank that reports it. */
static mrc_status_t failure_error(const failure_t *f, int rank)
{
    if (f->status == MRC_ERR_INVALID_ARG && f->b >= 0)
        return mrc__call_mismatch(f->a, f->ca, f->b, f->cb);
    return mrc__error(f->status,
                      "rank %d: rank %d failed its call (%s), so this call "
                      "cannot complete",
                      rank, f->a, mrc_status_name(f->status));
}

/* MRC_OK, or the failure of peer p, which this rank takes on as its own
 * (so the ranks waiting on this one learn it too). */
static mrc_status_t peer_failed(ctx_t *c, int p)
{
    const failure_t *f = &c->f->ranks[p].failed;
    if (__atomic_load_n(&f->state, __ATOMIC_ACQUIRE) != 2)
        return MRC_OK;
    set_failed(c, f);
    return failure_error(f, c->rank);
}

/* A table's call is read by peers while its owner may rewrite it for a
 * later call (a peer lingering in its last wait of the call before): it
 * is written and read word by word, atomically, between the stamp's
 * invalidation and its new value, and a reader takes it only if the
 * stamp is the same before and after (a seqlock). */
static void store_call(table_t *t, const mrc__call_t *call)
{
    __atomic_store_n(&t->call.count, call->count, __ATOMIC_RELAXED);
    __atomic_store_n(&t->call.meta, call->meta, __ATOMIC_RELAXED);
}

/* The table's call for call number seq: 1 and *out, or 0 if the table is
 * not (or no longer) that call's. */
static int load_call(const table_t *t, uint64_t seq, mrc__call_t *out)
{
    if (__atomic_load_n(&t->stamp, __ATOMIC_ACQUIRE) != seq + 1)
        return 0;
    out->count = __atomic_load_n(&t->call.count, __ATOMIC_RELAXED);
    out->meta = __atomic_load_n(&t->call.meta, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&t->stamp, __ATOMIC_RELAXED) == seq + 1;
}

static mrc_status_t th_begin(void *vctx, uint64_t seq, const mrc__call_t *call,
                             const mrc__xfer_t *recvs, size_t n)
{
    ctx_t *c = vctx;
    rank_state_t *r = &c->f->ranks[c->rank];
    table_t *t = &r->tables[seq & 1];
    c->num_sends = 0;
    /* Rewritten from here on: a peer still in the call two before (in its
     * last wait) must not take this table for that call's. */
    __atomic_store_n(&t->stamp, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
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
    store_call(t, call);
    r->seq = seq;
    r->call = *call;
    __atomic_store_n(&t->stamp, seq + 1, __ATOMIC_RELEASE);
    return MRC_OK;
}

static mrc_status_t th_isend(void *vctx, const void *buf, mrc__xfer_t *x)
{
    ctx_t *c = vctx;
    rank_state_t *me = &c->f->ranks[c->rank];
    uint64_t seq = me->seq;
    table_t *t = &c->f->ranks[x->peer].tables[seq & 1];
    if (__atomic_load_n(&t->stamp, __ATOMIC_ACQUIRE) != seq + 1) {
        mrc_status_t st = peer_failed(c, x->peer);
        return st != MRC_OK ? st : MRC_INPROGRESS; /* not there yet */
    }
    mrc__call_t theirs;
    if (!load_call(t, seq, &theirs)) /* rewritten since: not there yet */
        return MRC_INPROGRESS;
    if (!mrc__call_same(theirs, me->call)) {
        failure_t why = {0,     MRC_ERR_INVALID_ARG, c->rank, x->peer, me->call,
                         theirs};
        set_failed(c, &why);
        return failure_error(&why, c->rank);
    }
    if (c->num_sends == c->cap_sends) {
        size_t cap = c->cap_sends ? 2 * c->cap_sends : 64;
        mrc__xfer_t **q = realloc(c->sends, cap * sizeof *q);
        if (!q)
            return mrc__error(MRC_ERR_NO_MEMORY,
                              "rank %d: out of memory for %zu sends", c->rank,
                              cap);
        c->sends = q;
        c->cap_sends = cap;
    }
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
    x->priv[0] = (uintptr_t)s;
    c->sends[c->num_sends++] = x;
    __atomic_store_n(&s->state, SLOT_SENT, __ATOMIC_RELEASE);
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
    if (__atomic_load_n(&x->done, __ATOMIC_ACQUIRE))
        return MRC_OK;
    if (x->dst == NULL) /* a send: the receiver completes it, unless it */
        return peer_failed(c, x->peer); /* has given up */
    rank_state_t *r = &c->f->ranks[c->rank];
    slot_t *s = &r->tables[r->seq & 1].slots[x->priv[0]];
    int sent = SLOT_SENT;
    if (!__atomic_compare_exchange_n(&s->state, &sent, SLOT_READING, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return peer_failed(c, x->peer); /* not sent yet, or revoked */
    if (s->bytes != x->bytes) {
        /* Cannot happen once the calls agree; leave the buffer alone. */
        __atomic_store_n(&s->state, SLOT_SENT, __ATOMIC_RELEASE);
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: %zu bytes arrived from rank %d where %zu "
                          "were expected",
                          c->rank, s->bytes, x->peer, x->bytes);
    }
    mrc__take(x->dst, x->local, s->buf, x->count, x->bytes, x->dtype, x->op,
              x->nontemporal);
    __atomic_store_n(s->sender_done, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&s->state, SLOT_TAKEN, __ATOMIC_RELEASE);
    __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
    return MRC_OK;
}

static mrc_status_t th_end(void *vctx)
{
    ctx_t *c = vctx;
    rank_state_t *r = &c->f->ranks[c->rank];
    c->num_sends = 0;
    __atomic_store_n(&r->ended, r->seq + 1, __ATOMIC_RELEASE);
    return MRC_OK;
}

/* ---- memory semantics ---------------------------------------------------
 * A peer's buffers are read in place (plain loads: one address space). */

static mrc_status_t th_publish(void *vctx, const mrc__exposure_t *x,
                               void **window)
{
    ctx_t *c = vctx;
    rank_state_t *r = &c->f->ranks[c->rank];
    uint64_t seq = r->seq;
    int par = (int)(seq & 1);
    /* The window of call seq - 2 may be read until its readers end it. */
    for (int i = 0; seq >= 2 && i < x->num_members; i++) {
        int m = x->members[i];
        if (m == c->rank ||
            __atomic_load_n(&c->f->ranks[m].ended, __ATOMIC_ACQUIRE) >= seq - 1)
            continue;
        mrc_status_t st = peer_failed(c, m);
        return st != MRC_OK ? st : MRC_INPROGRESS;
    }
    if (x->window_bytes > r->window_cap[par]) {
        char *w = malloc(x->window_bytes);
        if (!w)
            return mrc__error(MRC_ERR_NO_MEMORY,
                              "rank %d: out of memory for a window of %zu "
                              "bytes",
                              c->rank, x->window_bytes);
        free(r->window[par]);
        r->window[par] = w;
        r->window_cap[par] = x->window_bytes;
    }
    published_t *p = &r->pub[par];
    for (int b = 1; b < MRC__MEM_BUFS; b++) {
        p->buf[b] = x->buf[b];
        p->bytes[b] = x->buf[b] ? x->bytes[b] : 0;
    }
    p->buf[MRC__MEM_WINDOW] = r->window[par];
    p->bytes[MRC__MEM_WINDOW] = x->window_bytes;
    __atomic_store_n(&p->seq, seq + 1, __ATOMIC_RELEASE);
    *window = r->window[par];
    return MRC_OK;
}

static mrc_status_t th_signal(void *vctx, int flag)
{
    ctx_t *c = vctx;
    rank_state_t *r = &c->f->ranks[c->rank];
    if (flag < 0 || flag >= MRC__FLAGS)
        return mrc__error(MRC_ERR_INTERNAL, "rank %d: no flag %d", c->rank,
                          flag);
    __atomic_store_n(&r->flags[flag], r->seq + 1, __ATOMIC_RELEASE);
    return MRC_OK;
}

/* The peer's call of this call number, compared with ours. */
static mrc_status_t same_call(ctx_t *c, int peer)
{
    rank_state_t *me = &c->f->ranks[c->rank];
    const table_t *t = &c->f->ranks[peer].tables[me->seq & 1];
    mrc__call_t theirs;
    if (!load_call(t, me->seq, &theirs) || mrc__call_same(theirs, me->call))
        return MRC_OK; /* a peer ahead compared with us in its turn */
    failure_t why = {0, MRC_ERR_INVALID_ARG, c->rank, peer, me->call, theirs};
    set_failed(c, &why);
    return failure_error(&why, c->rank);
}

static mrc_status_t th_wait(void *vctx, int peer, int flag)
{
    ctx_t *c = vctx;
    rank_state_t *me = &c->f->ranks[c->rank];
    if (flag < 0 || flag >= MRC__FLAGS || peer < 0 || peer >= c->f->n)
        return mrc__error(MRC_ERR_INTERNAL, "rank %d: no flag %d of rank %d",
                          c->rank, flag, peer);
    /* The calls are compared as soon as the peer has begun this one, so
     * that ranks that disagree fail even where no flag would ever come;
     * and again once the flag is seen: the peer stamped its table before
     * it signalled, so a wait that returns has compared (a peer that
     * began between a first look at its table and the flag's would
     * otherwise pass unchecked, and this rank end its call while the
     * others fail theirs). */
    if (__atomic_load_n(&c->f->ranks[peer].flags[flag], __ATOMIC_ACQUIRE) <
        me->seq + 1) {
        mrc_status_t st = same_call(c, peer);
        if (st == MRC_OK)
            st = peer_failed(c, peer);
        return st != MRC_OK ? st : MRC_INPROGRESS;
    }
    return same_call(c, peer);
}

/* Every peer has begun this call and called it alike (transport.h); a
 * peer's table of it is rewritten two calls on, after this rank's next. */
static mrc_status_t th_agree(void *vctx, const int32_t *members,
                             int num_members)
{
    ctx_t *c = vctx;
    rank_state_t *me = &c->f->ranks[c->rank];
    for (int i = 0; i < num_members; i++) {
        mrc__call_t theirs;
        int p = members[i];
        if (p < 0 || p >= c->f->n)
            return mrc__error(MRC_ERR_INTERNAL, "rank %d: no rank %d", c->rank,
                              p);
        if (p == c->rank)
            continue;
        if (load_call(&c->f->ranks[p].tables[me->seq & 1], me->seq, &theirs)) {
            mrc_status_t st = same_call(c, p);
            if (st != MRC_OK)
                return st;
            continue;
        }
        /* Two calls on (table rewritten): it compared ours in this one. */
        if (__atomic_load_n(&c->f->ranks[p].ended, __ATOMIC_ACQUIRE) >
            me->seq + 1)
            continue;
        mrc_status_t st = peer_failed(c, p);
        return st != MRC_OK ? st : MRC_INPROGRESS;
    }
    return MRC_OK;
}

static mrc_status_t th_get(void *vctx, int peer, int buf, uint64_t off,
                           mrc__xfer_t *x)
{
    ctx_t *c = vctx;
    rank_state_t *me = &c->f->ranks[c->rank];
    if (peer < 0 || peer >= c->f->n || buf < 1 || buf >= MRC__MEM_BUFS)
        return mrc__error(MRC_ERR_INTERNAL, "rank %d: no buffer %d of rank %d",
                          c->rank, buf, peer);
    rank_state_t *r = &c->f->ranks[peer];
    uint64_t seq = me->seq;
    const published_t *p = &r->pub[seq & 1];
    mrc_status_t st = same_call(c, peer);
    if (st != MRC_OK)
        return st;
    if (__atomic_load_n(&p->seq, __ATOMIC_ACQUIRE) != seq + 1) {
        st = peer_failed(c, peer);
        return st != MRC_OK
                   ? st
                   : mrc__error(MRC_ERR_TRANSPORT,
                                "rank %d reads rank %d's memory, "
                                "which has not published its "
                                "buffers of call %llu",
                                c->rank, peer, (unsigned long long)seq);
    }
    if (!p->buf[buf] || off > p->bytes[buf] || x->bytes > p->bytes[buf] - off)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d reads %zu bytes at %llu of rank %d's "
                          "buffer %d, which holds %zu",
                          c->rank, x->bytes, (unsigned long long)off, peer, buf,
                          p->bytes[buf]);
    /* Pinned while it reads: a peer that fails waits for us to finish,
     * and after it has revoked the call no read starts. */
    __atomic_add_fetch(&r->readers, 1, __ATOMIC_ACQ_REL);
    if (__atomic_load_n(&r->revoked, __ATOMIC_ACQUIRE) == seq + 1) {
        __atomic_sub_fetch(&r->readers, 1, __ATOMIC_ACQ_REL);
        st = peer_failed(c, peer);
        return st != MRC_OK ? st
                            : mrc__error(MRC_ERR_TRANSPORT,
                                         "rank %d failed its call", peer);
    }
    mrc__take(x->dst, x->local, p->buf[buf] + off, x->count, x->bytes, x->dtype,
              x->op, x->nontemporal);
    __atomic_sub_fetch(&r->readers, 1, __ATOMIC_ACQ_REL);
    x->done = 1;
    return MRC_OK;
}

/* This rank's call failed: says so to the peers, and takes back every
 * send no receiver has taken. A send not done is in a table of this call
 * (its receiver cannot have finished the call without it), so the slot is
 * still its own; a receiver reading it now is waited for, which takes no
 * longer than one copy. */
static void th_cancel(void *vctx, mrc_status_t st)
{
    ctx_t *c = vctx;
    failure_t why = {0, st, c->rank, -1, {0, 0}, {0, 0}};
    set_failed(c, &why);
    for (size_t i = 0; i < c->num_sends; i++) {
        mrc__xfer_t *x = c->sends[i];
        if (__atomic_load_n(&x->done, __ATOMIC_ACQUIRE))
            continue;
        slot_t *s = (slot_t *)x->priv[0];
        int sent = SLOT_SENT;
        if (__atomic_compare_exchange_n(&s->state, &sent, SLOT_REVOKED, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            continue;
        while (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == SLOT_READING)
            sched_yield();
    }
    c->num_sends = 0;
    /* No get of this rank's memory starts from now on, and the ones in
     * flight are waited for. */
    rank_state_t *r = &c->f->ranks[c->rank];
    __atomic_store_n(&r->revoked, r->seq + 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&r->readers, __ATOMIC_ACQUIRE) > 0)
        sched_yield();
}

static const mrc__transport_ops_t threads_ops = {
    .name = "threads",
    .begin = th_begin,
    .isend = th_isend,
    .irecv = th_irecv,
    .test = th_test,
    .end = th_end,
    .agree = th_agree,
    .cancel = th_cancel,
    .publish = th_publish,
    .get = th_get,
    .signal = th_signal,
    .wait = th_wait,
};

mrc_status_t mrc__threads_hub_create(int nranks, mrc__threads_hub_t **out)
{
    *out = NULL;
    mrc__threads_hub_t *f = calloc(1, sizeof *f);
    if (!f)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    f->n = nranks;
    f->ranks = calloc((size_t)nranks, sizeof *f->ranks);
    f->ctxs = calloc((size_t)nranks, sizeof *f->ctxs);
    if (!f->ranks || !f->ctxs) {
        mrc__threads_hub_destroy(f);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    for (int i = 0; i < nranks; i++) {
        f->ctxs[i].f = f;
        f->ctxs[i].rank = i;
    }
    *out = f;
    return MRC_OK;
}

void mrc__threads_hub_destroy(mrc__threads_hub_t *f)
{
    if (!f)
        return;
    for (int i = 0; f->ranks && i < f->n; i++)
        for (int t = 0; t < 2; t++) {
            free(f->ranks[i].tables[t].keys);
            free(f->ranks[i].tables[t].slots);
        }
    for (int i = 0; f->ranks && i < f->n; i++) {
        free(f->ranks[i].window[0]);
        free(f->ranks[i].window[1]);
    }
    for (int i = 0; f->ctxs && i < f->n; i++)
        free(f->ctxs[i].sends);
    free(f->ranks);
    free(f->ctxs);
    free(f);
}

mrc__transport_t mrc__threads_transport(mrc__threads_hub_t *f, int rank)
{
    mrc__transport_t t = {&threads_ops, &f->ctxs[rank]};
    return t;
}
