/* The shared-memory transport's messages: the channels between ranks,
 * eager pieces through their slots, rendezvous reads of the sender's
 * buffer, and what comes before its receive is posted. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "reduce/reduce.h"
#include "shm_internal.h"

/* ---- moving data ------------------------------------------------------ */

static int push(void ***list, size_t *n, size_t *cap, void *item)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        void **q = realloc(*list, c * sizeof *q);
        if (!q)
            return -1;
        *list = q;
        *cap = c;
    }
    (*list)[(*n)++] = item;
    return 0;
}

/* Applies `len` bytes at `offset` of a message to its receive. */
static void apply(mrc__xfer_t *x, uint64_t offset, const void *src, size_t len)
{
    size_t esize = mrc_dtype_size(x->dtype);
    char *dst = (char *)x->dst + offset;
    if (x->local)
        mrc__reduce(dst, (const char *)x->local + offset, src, len / esize,
                    x->dtype, x->op);
    else
        memcpy(dst, src, len);
    x->priv[1] += len;
    if (x->priv[1] == x->bytes)
        __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
}

/* A rendezvous: reads the whole message from the sender's buffer (into
 * the destination for a copy; through the bounce buffer for a reduction)
 * and raises the sender's completion flag. */
static mrc_status_t take_rdv(mrc__shm_endpoint_t *e, mrc__xfer_t *x,
                             uint64_t addr, uint32_t token)
{
    if (token == TAKE_COUNT || token >= TOKENS)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: rank %d named rendezvous token %u, "
                          "which it cannot hold (1 to %d)",
                          e->rank, x->peer, token, TOKENS - 1);
    int32_t *flag = &e->tokens[(size_t)x->peer * TOKENS + token];
    int32_t posted = RDV_POSTED;
    if (!__atomic_compare_exchange_n(flag, &posted, RDV_READING, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        /* The sender gave up its call and took its buffer back. */
        mrc_status_t st = mrc__shm_peer_failed(e, x->peer);
        return st != MRC_OK ? st
                            : mrc__error(MRC_ERR_TRANSPORT,
                                         "rank %d: rank %d withdrew its "
                                         "data",
                                         e->rank, x->peer);
    }
    mrc_status_t st = MRC_OK;
    const char *view = mrc__shm_peer_view(e, x->peer, addr, x->bytes);
    if (view) { /* a shared region: one pass, no kernel copy */
        apply(x, 0, view, x->bytes);
    } else if (!x->local) {
        st = mrc__shm_read_peer(e, x->peer, x->dst, addr, x->bytes);
        x->priv[1] = x->bytes;
    } else {
        size_t esize = mrc_dtype_size(x->dtype);
        size_t step = BOUNCE / esize * esize;
        for (size_t off = 0; off < x->bytes && st == MRC_OK; off += step) {
            size_t len = x->bytes - off < step ? x->bytes - off : step;
            st = mrc__shm_read_peer(e, x->peer, e->bounce, addr + off, len);
            if (st == MRC_OK)
                apply(x, off, e->bounce, len);
        }
    }
    /* Failed, the buffer is the sender's to revoke again. */
    __atomic_store_n(flag, st == MRC_OK ? RDV_TAKEN : RDV_POSTED,
                     __ATOMIC_RELEASE);
    if (st != MRC_OK)
        return st;
    __atomic_fetch_add(&e->tokens[(size_t)x->peer * TOKENS + TAKE_COUNT], 1,
                       __ATOMIC_RELEASE);
    __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
    return MRC_OK;
}

static mrc__xfer_t *posted_recv(mrc__shm_endpoint_t *e, int peer, uint64_t seq,
                                uint64_t tag, size_t *at)
{
    for (size_t i = 0; i < e->num_recvs; i++) {
        mrc__xfer_t *x = e->recvs[i];
        if (x->peer == peer && x->tag == tag && x->priv[2] == seq) {
            *at = i;
            return x;
        }
    }
    return NULL;
}

/* The sender of a message of this rank's call is in another call: the
 * message naming both (the sender's call is in its post, written before
 * its first message). */
mrc_status_t mrc__shm_message_differs(mrc__shm_endpoint_t *e, int peer)
{
    /* The sender may be a call ahead, with an eager send out: its call of
     * the other parity is the one to read. */
    mrc__call_t *c = &post_at(e, peer)->calls[e->seq & 1];
    mrc__call_t theirs = {__atomic_load_n(&c->count, __ATOMIC_RELAXED),
                          __atomic_load_n(&c->meta, __ATOMIC_RELAXED)};
    return mrc__shm_disagree(e, peer, theirs, e->rank, e->call);
}

void mrc__shm_early_free(early_t *list)
{
    while (list) {
        early_t *x = list;
        list = x->next;
        free(x->data);
        free(x);
    }
}

/* A record for an early message of `bytes`: the last spare taken back,
 * if its buffer holds it (a call's early messages are mostly of one
 * size, its chunk's), else a new one. */
static early_t *new_early(mrc__shm_endpoint_t *e, uint64_t bytes)
{
    if (e->spare && e->spare->cap >= bytes) {
        early_t *x = e->spare;
        e->spare = x->next;
        e->spare_bytes -= x->cap;
        char *data = x->data;
        size_t cap = x->cap;
        memset(x, 0, sizeof *x);
        x->data = data;
        x->cap = cap;
        return x;
    }
    early_t *x = calloc(1, sizeof *x);
    if (x && bytes && !(x->data = malloc(bytes))) {
        free(x);
        return NULL;
    }
    if (x)
        x->cap = bytes;
    return x;
}

/* Keeps a taken record for the next early message, while the spares'
 * buffers hold at most EARLY_SPARE_BYTES; past that it goes. */
static void spare_early(mrc__shm_endpoint_t *e, early_t *x)
{
    if (e->spare_bytes + x->cap > EARLY_SPARE_BYTES) {
        x->next = NULL;
        mrc__shm_early_free(x);
        return;
    }
    x->next = e->spare;
    e->spare = x;
    e->spare_bytes += x->cap;
}

static mrc_status_t keep_early(mrc__shm_endpoint_t *e, int peer,
                               const slot_t *s, const void *data)
{
    /* A message of this call (drain takes no later one) sent for another
     * call than this rank's: the ranks disagree. */
    if (s->call != mrc__call_hash(e->call))
        return mrc__shm_message_differs(e, peer);
    if (mrc__log_level() >= MRC__LOG_TRACE)
        mrc__log(MRC__LOG_TRACE, e->rank,
                 "call %llu: a piece of %u bytes from rank %d kept early "
                 "(its receive is not posted)",
                 (unsigned long long)e->seq, s->len, peer);
    /* A message's first piece (offset 0: a channel is in order) starts a
     * record; a later one continues its peer's newest. */
    early_t *x = s->offset == 0 ? NULL : e->early_newest[peer];
    if (x && !(x->seq == s->seq && x->tag == s->tag))
        x = NULL;
    if (!x) {
        /* (a byte at least: an empty message is a piece too) */
        x = new_early(e, s->rdv ? 0 : s->total ? s->total : 1);
        if (!x)
            return mrc__error(MRC_ERR_NO_MEMORY,
                              "rank %d: out of memory for %llu early bytes "
                              "from rank %d",
                              e->rank, (unsigned long long)s->total, peer);
        x->peer = peer;
        x->seq = s->seq;
        x->tag = s->tag;
        x->total = s->total;
        x->call = s->call;
        x->rdv = (int)s->rdv;
        x->addr = s->addr;
        x->token = s->token;
        if (e->early_last)
            e->early_last->next = x;
        else
            e->early = x;
        e->early_last = e->early_newest[peer] = x;
        if (s->rdv)
            return MRC_OK;
    }
    if (s->offset + s->len > x->total)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: a piece from rank %d runs past its "
                          "message (%llu + %u > %llu bytes)",
                          e->rank, peer, (unsigned long long)s->offset, s->len,
                          (unsigned long long)x->total);
    memcpy(x->data + s->offset, data, s->len);
    x->got += s->len;
    return MRC_OK;
}

/* Takes every full slot addressed to this rank, up to a rendezvous for
 * a posted receive other than `target`: that read waits for its own
 * receive's test. Read here, a whole window of them went before the
 * executor could send on the first: the tree's root at 2 ranks read
 * every chunk of a 4 MiB allreduce before its leaf read one, and the
 * call took the reduce's time plus the broadcast's.
 * A piece whose receive is not posted yet is copied out of its slot
 * (kept early) only while `target` is not done (without a target,
 * always): what the target waits for may be behind it, in its channel
 * or, through a peer held by full slots, in another's. Past that it
 * stays in its slot for its own receive to take, one copy instead of
 * two. A sender that runs ahead (a reduce's leaf, a broadcast's root)
 * has the next stream's pieces in the slots behind this one's: kept
 * early, the root of a 512 KiB reduce at 2 ranks spent as long copying
 * them out as summing them (`perf`: 41% of its time in memcpy, 36% in
 * the sum). Kept from another peer's channel only after 64 looks in
 * vain, a 4-32 B allreduce of 4 ranks on 2 cores took 11-31 us a call
 * instead of 4-5 (their waits are turns for the cores, and long). */
static mrc_status_t drain(mrc__shm_endpoint_t *e, const mrc__xfer_t *target,
                          int *moved)
{
    for (int p = 0; p < e->n; p++) {
        if (p == e->rank || (e->held[p] && e->held[p] != target))
            continue;
        for (;;) {
            char *at = slot_at(e, p, e->rank, e->recv_slot[p]);
            slot_t *s = (slot_t *)at;
            if (!__atomic_load_n(&s->full, __ATOMIC_ACQUIRE))
                break;
            /* A sender a call ahead waits for this rank there: its
             * pieces stay in their slots until this rank begins that
             * call (a channel is in order, so every piece of this call
             * from p is before them). Taken early, a sender that never
             * waits (a reduce's leaf) ran thousands of calls ahead into
             * this rank's memory: P = 2, a 4 KiB reduce on the rings
             * took 24-32 us a call over 2000 calls, 1-3 over 20. */
            if (s->seq > e->seq)
                break;
            size_t i;
            mrc_status_t st = MRC_OK;
            mrc__xfer_t *x = posted_recv(e, p, s->seq, s->tag, &i);
            if (x && s->call != mrc__call_hash(e->call))
                return mrc__shm_message_differs(e, p);
            if (x && (s->total != x->bytes || s->offset + s->len > x->bytes))
                return mrc__error(MRC_ERR_TRANSPORT,
                                  "rank %d: %llu bytes arrived from rank %d "
                                  "where %zu were expected",
                                  e->rank, (unsigned long long)s->total, p,
                                  x->bytes);
            if (x && s->rdv && x != target) {
                e->held[p] = x;
                break;
            }
            if (!x && target &&
                __atomic_load_n(&target->done, __ATOMIC_ACQUIRE))
                break;
            e->held[p] = NULL;
            if (x && s->rdv)
                st = take_rdv(e, x, s->addr, s->token);
            else if (x)
                apply(x, s->offset, at + SLOT_HEADER, s->len);
            else
                st = keep_early(e, p, s, at + SLOT_HEADER);
            if (st != MRC_OK)
                return st;
            if (x && x->done)
                e->recvs[i] = e->recvs[--e->num_recvs];
            __atomic_store_n(&s->full, 0, __ATOMIC_RELEASE);
            e->recv_slot[p] = (e->recv_slot[p] + 1) % SLOTS;
            *moved = 1;
        }
    }
    return MRC_OK;
}

/* Sends: priv[0] the buffer, priv[1] bytes out, priv[3] 1 once a piece
 * (an empty message is one piece too) or the rendezvous is out, priv[2]
 * the rendezvous token + 1, priv[4] 1 when it goes by rendezvous
 * (by_rendezvous, asked once at the send: a fill pass looks at every
 * send waiting for a slot, and the region lookup takes a lock). */
static int by_rendezvous(const mrc__shm_endpoint_t *e, const mrc__xfer_t *x)
{
    if (!e->bounce ||
        !__atomic_load_n(&e->info[x->peer].can_read, __ATOMIC_ACQUIRE))
        return 0;
    /* From a shared region the receiver maps the buffer and reads it
     * with plain loads: one copy, and the sender's core free. */
    return x->bytes >= e->rendezvous_bytes ||
           (x->bytes >= MAPPED_RENDEZVOUS_BYTES &&
            mrc__shm_region_holds((const void *)x->priv[0], x->bytes));
}

static int slot_free(const mrc__shm_endpoint_t *e, int peer)
{
    const slot_t *s =
        (const slot_t *)slot_at(e, e->rank, peer, e->send_slot[peer]);
    return !__atomic_load_n(&s->full, __ATOMIC_ACQUIRE);
}

/* Whether a send waits for a slot that is now free. */
static int fill_may_move(const mrc__shm_endpoint_t *e)
{
    for (int p = 0; p < e->n; p++)
        if (e->sends_to[p] > 0 && slot_free(e, p))
            return 1;
    return 0;
}

/* Puts out what pending sends can: pieces where slots are free, or a
 * rendezvous (then the send is done when its receiver says so). A
 * channel's next slot full, the sends after to that peer are passed
 * over (mark: the peer's pending count with its top bit set). */
#define FULL ((size_t)1 << (sizeof(size_t) * 8 - 1))
static void fill(mrc__shm_endpoint_t *e, int *moved)
{
    if (e->num_sends == 0 || (!e->unlisted && !fill_may_move(e)))
        return;
    size_t keep = 0;
    for (size_t i = 0; i < e->num_sends; i++) {
        mrc__xfer_t *x = e->sends[i];
        int was_out = (int)x->priv[3];
        int full = (e->sends_to[x->peer] & FULL) != 0;
        int rdv = full && !was_out ? 0 : (int)x->priv[4];
        if (full && (!was_out || !rdv)) {
            e->sends[keep++] = x; /* wants a slot: none this time */
            continue;
        }
        const char *buf = (const char *)x->priv[0];
        while (!x->priv[3] || (!rdv && x->priv[1] < x->bytes)) {
            uint64_t off = x->priv[1];
            char *at = slot_at(e, e->rank, x->peer, e->send_slot[x->peer]);
            slot_t *s = (slot_t *)at;
            if (__atomic_load_n(&s->full, __ATOMIC_ACQUIRE)) {
                e->sends_to[x->peer] |= FULL;
                break;
            }
            if (rdv && e->num_free == 0)
                break; /* every token in flight: later */
            size_t len = x->bytes - off;
            if (rdv) {
                uint32_t t = e->free_tokens[--e->num_free];
                __atomic_store_n(&e->tokens[(size_t)e->rank * TOKENS + t],
                                 RDV_POSTED, __ATOMIC_RELAXED);
                x->priv[2] = t + 1;
                s->addr = (uint64_t)(uintptr_t)buf;
                s->token = t;
                len = 0;
            } else {
                if (len > e->slot_bytes)
                    len = e->slot_bytes;
                memcpy(at + SLOT_HEADER, buf + off, len);
            }
            s->rdv = (uint32_t)rdv;
            s->len = (uint32_t)len;
            s->call = mrc__call_hash(e->call);
            s->seq = e->seq;
            s->tag = x->tag;
            s->total = x->bytes;
            s->offset = off;
            __atomic_store_n(&s->full, 1, __ATOMIC_RELEASE);
            e->send_slot[x->peer] = (e->send_slot[x->peer] + 1) % SLOTS;
            x->priv[1] = off + len;
            x->priv[3] = 1;
            *moved = 1;
        }
        if (x->priv[3] && !rdv && x->priv[1] >= x->bytes) {
            e->sends_to[x->peer]--;
            __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
        } else if (!x->priv[3] || !rdv)
            e->sends[keep++] = x;
        else if (push((void ***)&e->rdvs, &e->num_rdvs, &e->cap_rdvs, x)) {
            e->sends[keep++] = x; /* no memory: listed later */
            e->unlisted += !was_out;
        } else {
            e->sends_to[x->peer]--;
            if (was_out) {
                /* Out since an earlier fill: a reap may have counted
                 * its take before it was listed. Look again. */
                e->unlisted--;
                e->reaped =
                    __atomic_load_n(
                        &e->tokens[(size_t)e->rank * TOKENS + TAKE_COUNT],
                        __ATOMIC_ACQUIRE) -
                    1;
            }
        }
    }
    e->num_sends = keep;
    for (int p = 0; p < e->n; p++)
        e->sends_to[p] &= ~FULL;
}
#undef FULL

/* Rendezvous sends whose receivers have read them are done: looked for
 * only when the count of those taken moved. */
static void reap_rdvs(mrc__shm_endpoint_t *e, int *moved)
{
    int32_t taken = __atomic_load_n(
        &e->tokens[(size_t)e->rank * TOKENS + TAKE_COUNT], __ATOMIC_ACQUIRE);
    if (taken == e->reaped)
        return;
    e->reaped = taken;
    size_t keep = 0;
    for (size_t i = 0; i < e->num_rdvs; i++) {
        mrc__xfer_t *x = e->rdvs[i];
        uint32_t t = (uint32_t)x->priv[2] - 1;
        if (__atomic_load_n(&e->tokens[(size_t)e->rank * TOKENS + t],
                            __ATOMIC_ACQUIRE) != RDV_TAKEN) {
            e->rdvs[keep++] = x;
            continue;
        }
        e->free_tokens[e->num_free++] = t;
        x->priv[2] = 0;
        __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
        *moved = 1;
    }
    e->num_rdvs = keep;
}

mrc_status_t mrc__shm_take_early(mrc__shm_endpoint_t *e)
{
    int moved = 0;
    return drain(e, NULL, &moved);
}

static mrc_status_t progress(mrc__shm_endpoint_t *e, const mrc__xfer_t *target)
{
    int moved = 0;
    mrc_status_t st = drain(e, target, &moved);
    if (st != MRC_OK)
        return st;
    reap_rdvs(e, &moved);
    fill(e, &moved);
    if (moved) {
        e->idle = 0;
        return MRC_OK;
    }
    return mrc__shm_check_peers(e);
}

mrc_status_t mrc__shm_isend(void *ctx, const void *buf, mrc__xfer_t *x)
{
    mrc__shm_endpoint_t *e = ctx;
    x->priv[0] = (uintptr_t)buf;
    x->priv[1] = 0;
    x->priv[2] = 0;
    x->priv[3] = 0;
    x->priv[4] = (uintptr_t)by_rendezvous(e, x);
    if (push((void ***)&e->sends, &e->num_sends, &e->cap_sends, x))
        return mrc__error(MRC_ERR_NO_MEMORY, "rank %d: out of memory", e->rank);
    e->sends_to[x->peer]++;
    x->posted = 1;
    int moved = 0;
    fill(e, &moved);
    return MRC_OK;
}

mrc_status_t mrc__shm_irecv(void *ctx, mrc__xfer_t *x)
{
    mrc__shm_endpoint_t *e = ctx;
    x->priv[1] = 0;
    x->priv[2] = e->seq;
    x->posted = 1;
    /* What came early is taken first. A channel delivers a message's
     * pieces in order, so what came is a prefix; then the receive is
     * posted, and the rest goes straight into it from the slots. */
    mrc_status_t st = MRC_OK;
    early_t *prev = NULL;
    for (early_t **pp = &e->early; *pp; prev = *pp, pp = &(*pp)->next) {
        early_t *m = *pp;
        if (m->peer != x->peer || m->seq != e->seq || m->tag != x->tag)
            continue;
        if (m->call != mrc__call_hash(e->call))
            return mrc__shm_message_differs(e, x->peer);
        if (m->total != x->bytes)
            return mrc__error(MRC_ERR_TRANSPORT,
                              "rank %d: %llu bytes arrived from rank %d "
                              "where %zu were expected",
                              e->rank, (unsigned long long)m->total, x->peer,
                              x->bytes);
        if (m->rdv)
            st = take_rdv(e, x, m->addr, m->token);
        else
            apply(x, 0, m->data, m->got);
        *pp = m->next;
        if (m == e->early_last)
            e->early_last = prev;
        if (m == e->early_newest[m->peer])
            e->early_newest[m->peer] = NULL;
        spare_early(e, m);
        if (st != MRC_OK)
            return st;
        break;
    }
    if (!x->done && push((void ***)&e->recvs, &e->num_recvs, &e->cap_recvs, x))
        return mrc__error(MRC_ERR_NO_MEMORY, "rank %d: out of memory", e->rank);
    return MRC_OK;
}

mrc_status_t mrc__shm_test(void *ctx, mrc__xfer_t *x)
{
    mrc__shm_endpoint_t *e = ctx;
    if (__atomic_load_n(&x->done, __ATOMIC_ACQUIRE))
        return MRC_OK;
    return progress(e, x);
}
