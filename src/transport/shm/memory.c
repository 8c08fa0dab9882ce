/* The shared-memory transport's memory semantics: a call's buffers
 * published, areas by the call's parity (a deep call's record in a ring),
 * gets from a window or by reference, flags in the record a peer
 * polls. */
#define _GNU_SOURCE
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
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

/* ---- memory semantics --------------------------------------------------- */

/* The bytes of a peer's window a wait that sees its flag fetches ahead:
 * 1 KiB, not 512, took a 1 KiB allreduce at P = 2 from 0.65-0.70 us to
 * 0.61-0.64; 4 KiB ahead slowed 4 and 8 KiB by 10-20% (mrc launch -n 2
 * -- mrc-bench -b 64 -e 8K -f 2 -n 20000, three runs each). */
enum { WAIT_PREFETCH = 1024 };

/* How many calls a rank that hears from nobody (local completion: a
 * leaf of a reduce, the root of a broadcast) goes before it compares
 * them with its peers', when they are all such calls: the look reads a
 * line of each peer's log, and at every call it was a third of a 4-byte
 * reduce's time at 2 ranks (0.15 us a call against 0.09). */
enum { LOOK_EVERY = 16 };

/* Whether rank m's chain of deep calls meets this rank's at the latest
 * call of [from, seq) that both have in their logs (1 also when they
 * have none in common: m compares this rank's, or received from it, or
 * another did). Equal chains mean every deep call up to it agreed: one
 * look a member instead of one a call (the root of a 4-byte broadcast
 * at 4 ranks spent 332 instructions a call in its publish, most of them
 * comparing its last 16 calls with each peer's, call by call). */
static int chains_meet(const mrc__shm_endpoint_t *e, int m, uint64_t from,
                       uint64_t seq)
{
    for (uint64_t c = seq; c-- > from;) {
        uint64_t mine, theirs;
        if (mrc__shm_chain_of(e, m, c, &theirs) &&
            mrc__shm_chain_of(e, e->rank, c, &mine))
            return mine == theirs;
    }
    return 1;
}

/* The first call of [from, seq) on which rank m and this one disagree,
 * named as a wait would name it (their chains did not meet). */
static mrc_status_t first_disagreement(mrc__shm_endpoint_t *e, int m,
                                       uint64_t from, uint64_t seq)
{
    for (uint64_t c = from; c < seq; c++) {
        mrc__call_t mine, theirs;
        if (!mrc__shm_call_of(e, e->rank, c, &mine) ||
            !mrc__shm_call_of(e, m, c, &theirs) || mrc__call_same(theirs, mine))
            continue;
        mrc_status_t st = mrc__shm_disagree(e, m, theirs, e->rank, mine);
        if (c + 1 == seq)
            mrc__error_prefix("the call before this one (rank %d)", e->rank);
        else
            mrc__error_prefix("%llu calls before this one (rank %d)",
                              (unsigned long long)(seq - c), e->rank);
        return st;
    }
    return MRC_OK;
}

/* The calls since the first in which this rank heard from none of its
 * members, compared with theirs, so that ranks that disagree on a call
 * in which no rank received (each naming another the root of a reduce)
 * fail at a later call: the first call that is not such (a reduce or
 * broadcast that may wait on nobody), or LOOK_EVERY such calls on; and a
 * member's failure, found meanwhile, taken on. Only deep calls are in
 * the logs: an unheard call of a message program (a tree's leaf with
 * local completion) is not compared here. A member's entry of a call it
 * has not begun, or has gone RECORDS calls past, is not compared: that
 * member compares this rank's, or received from it, or another did. */
static mrc_status_t compare_unheard_calls(mrc__shm_endpoint_t *e,
                                          const mrc__exposure_t *x)
{
    uint64_t seq = e->seq, from = e->unconfirmed;
    if (!from || (e->deep && seq + 1 - from < LOOK_EVERY))
        return MRC_OK;
    e->unconfirmed = 0;
    /* A member that found a disagreement (or failed otherwise) while this
     * rank waited on nobody: its failure, as a wait would see it. */
    for (int i = 0; i < x->num_members; i++) {
        mrc_status_t st = x->members[i] >= 0 && x->members[i] < e->n
                              ? mrc__shm_peer_failed(e, x->members[i])
                              : MRC_OK;
        if (st != MRC_OK)
            return st;
    }
    from = seq - from < RECORDS ? from - 1 : seq - RECORDS + 1;
    for (int i = 0; i < x->num_members; i++) {
        int m = x->members[i];
        mrc_status_t st =
            m >= 0 && m < e->n && m != e->rank && !chains_meet(e, m, from, seq)
                ? first_disagreement(e, m, from, seq)
                : MRC_OK;
        if (st != MRC_OK)
            return st;
    }
    return MRC_OK;
}

int mrc__shm_prefetches_for_write(void)
{
#if defined(__x86_64__) || defined(__i386__)
    /* PREFETCHW (CPUID 8000_0001h, ECX bit 8); without it GCC's write
     * prefetch is a plain one, which takes the line shared. */
    unsigned a, b, c, d;
    return __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c >> 8 & 1);
#else
    return 1;
#endif
}

/* This rank's entry of the ring WRITE_AHEAD calls on, taken for writing
 * now (its record's line and a window like this call's): its peer read
 * it RECORDS calls before (and the gate keeps it RING_SLACK - WRITE_AHEAD
 * calls past that read), and a store that finds it there waits for it,
 * and every store after (shm_internal.h, ENDED_EVERY). */
static void take_entry_ahead(const mrc__shm_endpoint_t *e, uint64_t seq,
                             size_t window_bytes)
{
    if (!e->prefetch_w)
        return;
    const char *ahead = ring_record_at(e, e->rank, seq + WRITE_AHEAD);
    /* A window of at most SMALL_WINDOW rides in the record's line. */
    size_t lines =
        1 + (window_bytes > SMALL_WINDOW ? (window_bytes + 63) / 64 : 0);
    if (lines > WRITE_AHEAD_LINES)
        return;
    for (size_t i = 0; i < lines; i++) {
#if defined(__x86_64__) || defined(__i386__)
        __asm__ volatile("prefetchw %0" : : "m"(ahead[64 * i]));
#else
        __builtin_prefetch(ahead + 64 * i, 1);
#endif
    }
}

/* Whether rank m has begun call q (so ended every call before it), by
 * its log: a deep call's entry is written at its begin, and an entry
 * rewritten since holds a later call (its stamp seq + 1). A rank writes
 * the end of its deep calls one in ENDED_EVERY: one that ended a deep
 * call and then began another has its `ended` behind its calls. */
static int begun(const mrc__shm_endpoint_t *e, int m, uint64_t q)
{
    return __atomic_load_n(&post_at(e, m)->log[q % RECORDS][0],
                           __ATOMIC_ACQUIRE) > q;
}

/* Whether every member has ended the call that last used what call seq
 * writes, `back` calls back: RECORDS - RING_SLACK for a deep call's
 * record and window in the ring of records (shm_internal.h), WIDE_RECORDS
 * for a window in the wide ring, two for an area (a window past
 * WIDE_WINDOW, or any of a call that is not deep; buffers by reference,
 * or clearing the address line of an earlier call). By the member's `ended`,
 * or, where that is behind (a small deep call's end is written late), by its
 * log: a member that began the next call ended that one. MRC_INPROGRESS: not
 * yet. */
static mrc_status_t gate(mrc__shm_endpoint_t *e, const mrc__exposure_t *x,
                         uint64_t back)
{
    uint64_t seq = e->seq;
    for (int i = 0; seq >= back && i < x->num_members; i++) {
        int m = x->members[i];
        if (m < 0 || m >= e->n)
            return mrc__error(MRC_ERR_INTERNAL, "rank %d: no rank %d", e->rank,
                              m);
        if (m == e->rank || e->ended[m] > seq - back)
            continue;
        e->ended[m] = __atomic_load_n(&post_at(e, m)->ended, __ATOMIC_ACQUIRE);
        if (e->ended[m] > seq - back)
            continue;
        if (begun(e, m, seq - back + 1)) {
            e->ended[m] = seq - back + 1;
            continue;
        }
        /* About to wait: what this rank ended goes out first, so that no
         * two ranks wait on each other's unwritten ends. */
        if (e->ended_behind)
            mrc__shm_write_ended(e, seq);
        mrc_status_t st = mrc__shm_waiting_on(e, m);
        return st != MRC_OK ? st : MRC_INPROGRESS;
    }
    return MRC_OK;
}

/* Whether this call's send buffer, exposed by reference, goes into the
 * area instead, where its peers read it with plain loads. A new buffer
 * does: its pages and lines are cold, and a read through the kernel
 * costs many times the owner's copy (docs/performance.md: direct1's
 * allgather of 256 KiB a rank at 2 ranks on new buffers each call,
 * 357.62 us by reference and 43.28 copied in, Open MPI 348.35). The
 * buffer the last call exposed too stays where it is where send_by_ref
 * says so (without a profile, and where the host's profile measured the
 * read faster): the kernel's one copy, as Open MPI's, against the
 * owner's copy and its reader's (on the Intel Xeon host the same
 * allgather of 256 KiB on the same buffers took 25.5 us read and 50.1
 * copied in, Open MPI 28.7; on the Zen 5 host 34.05 read and 23.44
 * copied in, Open MPI 33.23, and its profile says copy). Only a send
 * buffer that no buffer the call writes overlaps (the executor writes
 * no other: it cannot change while a peer reads it), that fits in the
 * area beside the window, and that is not in a shared region (which the
 * peers map). The last call's means the one exposed in the call just
 * before (nth), not any earlier: a buffer last exposed calls ago has
 * cold lines again. (A rank that cannot read its peers' memory never
 * runs a program that exposes by reference, the selector refuses it:
 * all_read is a guard here.) The record says which; every reader
 * follows it. */
static int copy_send(mrc__shm_endpoint_t *e, const mrc__exposure_t *x, char *to)
{
    const void *sb = x->buf[MRC__MEM_SEND];
    size_t bytes = x->bytes[MRC__MEM_SEND];
    size_t at = (size_t)(to - (area_at(e, e->rank, e->seq) + 64));
    size_t room = at < e->win_max ? e->win_max - at : 0;
    int repeated = sb == e->last_send && bytes == e->last_send_bytes &&
                   e->last_send_nth + 1 == e->nth;
    e->last_send = sb;
    e->last_send_bytes = bytes;
    e->last_send_nth = e->nth;
    const char *why = bytes > room ? "larger than its area's room"
                      : mrc__overlap(sb, bytes, x->buf[MRC__MEM_RECV],
                                     x->bytes[MRC__MEM_RECV]) ||
                              mrc__overlap(sb, bytes, x->buf[MRC__MEM_SCRATCH],
                                           x->bytes[MRC__MEM_SCRATCH])
                          ? "a buffer the call writes overlaps it"
                      : mrc__shm_region_holds(sb, bytes) ? "in a shared region"
                      : e->send_by_ref && repeated && e->all_read
                          ? "the last call's, read where it is"
                          : NULL;
    if (why) {
        if (mrc__log_level() >= MRC__LOG_TRACE)
            mrc__log(MRC__LOG_TRACE, e->rank,
                     "call %llu: its send buffer (%zu bytes) by reference: %s",
                     (unsigned long long)e->seq, bytes, why);
        return 0;
    }
    mrc__copy(to, sb, bytes);
    if (mrc__log_level() >= MRC__LOG_TRACE)
        mrc__log(MRC__LOG_TRACE, e->rank,
                 "call %llu: its send buffer (%zu bytes) copied into its area",
                 (unsigned long long)e->seq, bytes);
    return 1;
}

size_t mrc__shm_send_copied_max(int nranks)
{
    return window_max(nranks);
}

mrc_status_t mrc__shm_publish(void *ctx, const mrc__exposure_t *x,
                              void **window)
{
    mrc__shm_endpoint_t *e = ctx;
    uint64_t seq = e->seq;
    if (e->lost != MRC_OK)
        return e->lost;
    if (x->window_bytes > e->win_max)
        return mrc__error(MRC_ERR_UNSUPPORTED,
                          "rank %d: a window of %zu bytes is more than the "
                          "%zu a rank of this job has in shared memory",
                          e->rank, x->window_bytes, e->win_max);
    int any = 0;
    for (int b = 1; b < MRC__MEM_BUFS; b++)
        any |= b != MRC__MEM_WINDOW && x->buf[b];
    mrc_status_t st = compare_unheard_calls(e, x);
    int in_area =
        !e->deep || x->window_bytes > WIDE_WINDOW || any || e->ref_set[seq & 1];
    uint64_t back = in_area                         ? 2
                    : x->window_bytes > DEEP_WINDOW ? WIDE_RECORDS
                                                    : RECORDS - RING_SLACK;
    if (st == MRC_OK)
        st = gate(e, x, back);
    if (st != MRC_OK)
        return st;
    /* The buffers' addresses go to the address line now (read only by
     * a get by reference, after the record says they are there); the
     * record itself at the first signal (write_record). */
    if (any || e->ref_set[seq & 1]) {
        by_ref_t *ref = ref_at(e, e->rank, seq);
        for (int b = 1; b < MRC__MEM_BUFS; b++) {
            int by_ref = b != MRC__MEM_WINDOW && x->buf[b];
            ref->addr[b - 1] = by_ref ? (uint64_t)(uintptr_t)x->buf[b] : 0;
            ref->bytes[b - 1] = by_ref ? x->bytes[b] : 0;
        }
        if (x->buf[MRC__MEM_SEND] && x->bytes[MRC__MEM_SEND] &&
            copy_send(e, x, copied_at(e, e->rank, seq, x->window_bytes)))
            ref->bytes[MRC__MEM_SEND - 1] |= REF_COPIED;
        e->ref_set[seq & 1] = (uint8_t)any;
    }
    if (!in_area)
        take_entry_ahead(e, seq, x->window_bytes);
    e->pending_window = (uint32_t)x->window_bytes;
    e->pending = 1;
    *window = window_at(e, e->rank, seq, x->window_bytes);
    return MRC_OK;
}

/* Reduces (or copies) the len bytes at src into x's destination at byte
 * `at`; x->nontemporal: written around the cache (no read for ownership;
 * the executor asks for it where the block is past the caches anyway). */
static void take(const mrc__xfer_t *x, const char *src, size_t at, size_t len)
{
    mrc__take(
        (char *)x->dst + at, x->local ? (const char *)x->local + at : NULL, src,
        len / mrc_dtype_size(x->dtype), len, x->dtype, x->op, x->nontemporal);
}

/* Reads x->bytes at addr of peer r's memory into x (through the bounce
 * buffer, a piece at a time, when it reduces), pinned against r's
 * revoking its buffers. */
static mrc_status_t read_pinned(mrc__shm_endpoint_t *e, int r, uint64_t addr,
                                mrc__xfer_t *x)
{
    if (!e->bounce || !__atomic_load_n(&e->info[r].can_read, __ATOMIC_ACQUIRE))
        return mrc__error(MRC_ERR_UNSUPPORTED,
                          "rank %d cannot read rank %d's memory (the kernel "
                          "forbids cross-memory attach here): a program "
                          "that reads buffers by reference cannot run; use "
                          "rings",
                          e->rank, r);
    rank_post_t *rp = post_at(e, r);
    __atomic_add_fetch(&rp->readers, 1, __ATOMIC_ACQ_REL);
    mrc_status_t st = MRC_OK;
    const char *view = NULL;
    if (__atomic_load_n(&rp->revoked, __ATOMIC_ACQUIRE) == e->seq + 1) {
        st = mrc__shm_peer_failed(e, r);
        if (st == MRC_OK)
            st =
                mrc__error(MRC_ERR_TRANSPORT,
                           "rank %d: rank %d withdrew its buffers", e->rank, r);
    } else if ((view = mrc__shm_peer_view(e, r, addr, x->bytes))) {
        take(x, view, 0, x->bytes); /* a shared region: no kernel copy */
    } else if (!x->local) {
        st = mrc__shm_read_peer(e, r, x->dst, addr, x->bytes);
    } else {
        size_t es = mrc_dtype_size(x->dtype), step = BOUNCE / es * es;
        for (size_t off = 0; off < x->bytes && st == MRC_OK; off += step) {
            size_t len = x->bytes - off < step ? x->bytes - off : step;
            st = mrc__shm_read_peer(e, r, e->bounce, addr + off, len);
            if (st == MRC_OK)
                take(x, e->bounce, off, len);
        }
    }
    __atomic_sub_fetch(&rp->readers, 1, __ATOMIC_ACQ_REL);
    return st;
}

/* This call's record, with `flags` set and the stamp last: one burst of
 * writes to the line the peers poll. No peer reads the record of call seq
 * - 2 in this place any more: every member has ended that call. */
static void write_record(mrc__shm_endpoint_t *e, uint32_t flags)
{
    published_t *p = pub_at(e, e->rank, e->seq);
    __atomic_store_n(&p->flags, flags, __ATOMIC_RELAXED);
    p->call = e->call;
    p->window_bytes = e->pending_window;
    __atomic_store_n(&p->seq, e->seq + 1, __ATOMIC_RELEASE);
    e->pending = 0;
}

mrc_status_t mrc__shm_get(void *ctx, int peer, int buf, uint64_t off,
                          mrc__xfer_t *x)
{
    mrc__shm_endpoint_t *e = ctx;
    uint64_t seq = e->seq;
    if (peer < 0 || peer >= e->n || buf < 1 || buf >= MRC__MEM_BUFS)
        return mrc__error(MRC_ERR_INTERNAL, "rank %d: no buffer %d of rank %d",
                          e->rank, buf, peer);
    if (peer == e->rank && e->pending) /* a get of its own before any */
        write_record(e, 0);            /* signal: the record first */
    const published_t *p = pub_at(e, peer, seq);
    if (__atomic_load_n(&p->seq, __ATOMIC_ACQUIRE) != seq + 1) {
        mrc_status_t st = mrc__shm_peer_failed(e, peer);
        return st != MRC_OK
                   ? st
                   : mrc__error(MRC_ERR_TRANSPORT,
                                "rank %d reads rank %d's memory, "
                                "which has not published its "
                                "buffers of call %llu",
                                e->rank, peer, (unsigned long long)seq);
    }
    if (buf == MRC__MEM_WINDOW) /* while the bounds are checked */
        __builtin_prefetch(window_at(e, peer, seq, p->window_bytes) + off);
    if (!mrc__call_same(p->call, e->call))
        return mrc__shm_disagree(e, peer, p->call, e->rank, e->call);
    const by_ref_t *ref = ref_at(e, peer, seq);
    uint64_t size = buf == MRC__MEM_WINDOW ? p->window_bytes
                                           : ref->bytes[buf - 1] & ~REF_COPIED;
    int copied = buf != MRC__MEM_WINDOW && ref->bytes[buf - 1] & REF_COPIED;
    if ((buf != MRC__MEM_WINDOW && !ref->addr[buf - 1]) || off > size ||
        x->bytes > size - off)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d reads %zu bytes at %llu of rank %d's "
                          "buffer %d, which holds %llu",
                          e->rank, x->bytes, (unsigned long long)off, peer, buf,
                          (unsigned long long)size);
    mrc_status_t st = MRC_OK;
    if (buf == MRC__MEM_WINDOW)
        take(x, window_at(e, peer, seq, p->window_bytes) + off, 0, x->bytes);
    else if (copied)
        take(x, copied_at(e, peer, seq, p->window_bytes) + off, 0, x->bytes);
    else if (peer == e->rank)
        take(x, (const char *)(uintptr_t)ref->addr[buf - 1] + off, 0, x->bytes);
    else
        st = read_pinned(e, peer, ref->addr[buf - 1] + off, x);
    if (st == MRC_OK)
        __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
    return st;
}

mrc_status_t mrc__shm_signal(void *ctx, int flag)
{
    mrc__shm_endpoint_t *e = ctx;
    if (flag < 0 || flag >= MRC__FLAGS)
        return mrc__error(MRC_ERR_INTERNAL, "rank %d: no flag %d", e->rank,
                          flag);
    if (e->pending) { /* the call's first signal writes its record */
        write_record(e, (uint32_t)1 << flag);
        return MRC_OK;
    }
    /* The flags are in this call's record: only after publish. */
    published_t *p = pub_at(e, e->rank, e->seq);
    if (__atomic_load_n(&p->seq, __ATOMIC_RELAXED) != e->seq + 1)
        return mrc__error(MRC_ERR_INTERNAL,
                          "rank %d signals flag %d of call %llu before it "
                          "published its buffers",
                          e->rank, flag, (unsigned long long)e->seq);
    uint32_t bits = __atomic_load_n(&p->flags, __ATOMIC_RELAXED);
    __atomic_store_n(&p->flags, bits | (uint32_t)1 << flag, __ATOMIC_RELEASE);
    return MRC_OK;
}

mrc_status_t mrc__shm_wait(void *ctx, int peer, int flag)
{
    mrc__shm_endpoint_t *e = ctx;
    if (flag < 0 || flag >= MRC__FLAGS || peer < 0 || peer >= e->n)
        return mrc__error(MRC_ERR_INTERNAL, "rank %d: no flag %d of rank %d",
                          e->rank, flag, peer);
    if (e->lost != MRC_OK)
        return e->lost;
    /* The peer's record of this call: its stamp first, so that the flags
     * read after it are this call's (they are reset before the stamp is
     * written), and the peer does not rewrite the record before this
     * rank has ended the call (publish waits for that). */
    const published_t *p = pub_at(e, peer, e->seq);
    if (__atomic_load_n(&p->seq, __ATOMIC_ACQUIRE) == e->seq + 1 &&
        (__atomic_load_n(&p->flags, __ATOMIC_ACQUIRE) >> flag & 1)) {
        /* What the get after a wait reads next, fetched alongside (each
         * line a peer's core wrote costs a transfer between cores): a
         * window past the record's line, its first WAIT_PREFETCH bytes
         * (a larger window is streamed by the get). */
        const char *w = window_at(e, peer, e->seq, p->window_bytes);
        size_t n =
            p->window_bytes < WAIT_PREFETCH ? p->window_bytes : WAIT_PREFETCH;
        for (size_t at = p->window_bytes <= SMALL_WINDOW ? n : 0; at < n;
             at += 64)
            __builtin_prefetch(w + at);
        /* A deep call's peer never waits on this rank, so it is usually
         * calls ahead: its next record is written already, and fetching
         * it now overlaps that transfer with the rest of this call. */
        if (e->deep)
            __builtin_prefetch(ring_record_at(e, peer, e->seq + 1));
        /* A peer that set a flag of this call has begun it, so it has
         * ended the one before: the next publish need not read its
         * `ended` line (one transfer between cores less a call). */
        if (e->ended[peer] < e->seq)
            e->ended[peer] = e->seq;
        if (!mrc__call_same(p->call, e->call))
            return mrc__shm_disagree(e, peer, p->call, e->rank, e->call);
        e->heard = 1;
        return MRC_OK;
    }
    if (e->ended_behind) /* about to wait (see gate) */
        mrc__shm_write_ended(e, e->seq);
    /* Not yet: look at the peers now and then (their posts are lines
     * they write at every call; polling them would slow them down), and
     * at this rank's own state one look in 16: a look is the loop a
     * waiting rank spins in, and its spin before it yields the core is
     * counted in looks. */
    if (++e->looks % 16 != 0)
        return MRC_INPROGRESS;
    mrc_status_t st = mrc__shm_check_peers(e);
    if (st == MRC_OK && e->idle % 64 == 0) {
        st = mrc__shm_take_early(e);
        if (st == MRC_OK)
            st = mrc__shm_waiting_on(e, peer);
    }
    return st != MRC_OK ? st : MRC_INPROGRESS;
}
