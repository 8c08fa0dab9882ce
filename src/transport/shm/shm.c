/*
 * The shared-memory transport: ranks are processes of one host.
 *
 * One POSIX shared-memory segment per job, "/mrc-JOB-seg", created by rank
 * 0 (O_EXCL, mode 0600) and unlinked as soon as every rank has attached
 * (the name is 128 random bits from the launcher, so it cannot be
 * guessed). The other ranks open it without following links and refuse
 * it unless it is this user's, mode 0600 exactly, of the size the job
 * needs, with a header of the right magic and version and the job's token
 * (from the launcher): a segment another user made first, or one left by
 * an earlier job of the same name, is refused with the reason. It holds
 * the header (the ranks' pids), each rank's rendezvous completion flags,
 * and one channel per ordered pair of ranks: a ring of slots, each
 * written by the sender only while empty and read by the receiver only
 * while full (one writer, one reader, no locks).
 *
 * Agreement: before any rank reads a peer's data it compares the peer's
 * call (collective, count, dtype, op, root), published beside the first
 * signal the peer gives anyway (a slot's stamp, a message's header), with
 * its own; on a difference every rank that sees it fails naming both
 * ranks and both calls, and a rank whose call fails says so in its post,
 * so the peers waiting on it fail with the same message instead of
 * waiting out the timeout.
 *
 * Small messages are eager: a send is copied into the channel piece by
 * piece and is done when its last piece is in; the receiver reduces (or copies)
 * each piece straight from the slot into its destination. A piece for a
 * receive not yet posted (the sender may be ahead, even a call ahead) is
 * kept in private memory until it is. So a channel never stays full and
 * no order of posting can deadlock.
 *
 * Large messages go by rendezvous when the kernel lets ranks read each
 * other's memory (cross-memory attach, probed when the job starts): the
 * slot carries only the sender's address, the receiver reads the data
 * straight from the sender's buffer (into its destination for a copy, or
 * through a small cache-resident bounce buffer for a reduction) and sets
 * the sender's completion flag. One copy instead of two.
 *
 * Memory semantics, for the direct programs: a rank publishes its
 * buffers of a call (their addresses and sizes, stamped with the call's
 * number and its descriptor) and gets a window in the segment, one of two
 * by the call's parity, which it may reuse once every member has ended
 * the call two before. A get from a window is a plain load from the
 * segment; a get from a buffer published by reference reads it with
 * cross-memory attach (through the bounce buffer when it reduces),
 * pinned by a reader count in the owner's post, so that an owner whose
 * call fails revokes its buffers and waits for the reads in flight before
 * it returns. Reads outside what the owner published are refused. Flags
 * are bits of the record a rank publishes for a call, in the line that
 * holds the call, the window's size and a small call's data, so that a
 * peer that waits for a flag and then reads polls one line of the
 * owner's, not two; a wait is one look (the executor polls), and while
 * the flag is not there it watches the peers as a receive does.
 *
 * The files: this one the operations of a call (begin, end, cancel);
 * segment.c the segment; failure.c peers lost and calls failed or
 * disagreeing; p2p.c messages; memory.c memory semantics.
 *
 * A peer that dies is seen directly: a rank that waits checks its peers'
 * pids every few milliseconds and fails with MRC_ERR_PEER_LOST.
 */
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

/* ---- the transport operations ----------------------------------------- */

static mrc_status_t shm_begin(void *ctx, uint64_t seq, const mrc__call_t *call,
                              const mrc__xfer_t *recvs, size_t n)
{
    (void)recvs;
    mrc__shm_endpoint_t *e = ctx;
    if (e->lost != MRC_OK)
        return e->lost;
    /* Before any address of this call goes out (regions.c). */
    mrc__shm_regions_publish(e);
    mrc__shm_regions_look(e);
    e->seq = seq;
    e->call = *call;
    e->pending = 0;
    e->heard = n > 0; /* a receive compares the sender's call */
    /* direct1's reduce and broadcast with local completion: a rank may
     * wait on nobody (its records in the ring: shm_internal.h) */
    uint64_t family = call->meta >> 24 & 0xff;
    mrc_collective_t coll = (mrc_collective_t)(call->meta & 0xff);
    e->deep = family == (0x80 | MRC_ALGO_DIRECT1) &&
              (coll == MRC_REDUCE || coll == MRC_BROADCAST);
    /* Every rank's window of it in the ring, so no rank's gate asks for
     * the end of the call before last (its end may be written late). */
    e->small_deep =
        e->deep &&
        call->count * mrc_dtype_size((mrc_dtype_t)(call->meta >> 8 & 0xff)) <=
            DEEP_WINDOW;
    /* A call that is not deep may wait on a peer's gate of two calls
     * back (memory.c): the end of every call before it written. */
    if (e->ended_behind && !e->deep)
        mrc__shm_write_ended(e, seq);
    mrc__shm_post_call(e, *call);
    /* For a peer's message when this call and its sender's differ: read
     * only after a message of this call, which is sent after this. */
    mrc__call_t *mine = &post_at(e, e->rank)->calls[seq & 1];
    __atomic_store_n(&mine->count, call->count, __ATOMIC_RELAXED);
    __atomic_store_n(&mine->meta, call->meta, __ATOMIC_RELAXED);
    if (e->deep) { /* in the log too, for a peer's later look */
        uint64_t *log = post_at(e, e->rank)->log[seq % RECORDS];
        __atomic_store_n(&log[0], 0, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        __atomic_store_n(&log[1], call->count, __ATOMIC_RELAXED);
        __atomic_store_n(&log[2], call->meta, __ATOMIC_RELAXED);
        e->chain = mrc__shm_chain(e->chain, seq, *call);
        __atomic_store_n(&log[3], e->chain, __ATOMIC_RELAXED);
        __atomic_store_n(&log[0], seq + 1, __ATOMIC_RELEASE);
    }
    /* Nothing of this call came early: a rank takes a peer's pieces of
     * its own call only (p2p.c, drain), and compares their call there. */
    return MRC_OK;
}

static mrc_status_t shm_end(void *ctx)
{
    mrc__shm_endpoint_t *e = ctx;
    /* The windows of this call may be reused: a small deep call's end
     * written one call in ENDED_EVERY (shm_internal.h), a peer's gate
     * finding the rest by this rank's log (memory.c). */
    if (e->lost == MRC_OK &&
        (!e->small_deep || (e->seq + 1) % ENDED_EVERY == 0))
        mrc__shm_write_ended(e, e->seq + 1);
    else if (e->lost == MRC_OK)
        e->ended_behind = 1;
    if (!e->heard && !e->unconfirmed)
        e->unconfirmed = e->seq + 1;
    return e->lost;
}

/* Takes back a rendezvous send no receiver has started to read; waits
 * for one being read (one copy, or the reader's death). */
static void take_back(mrc__shm_endpoint_t *e, const mrc__xfer_t *x)
{
    int32_t *flag =
        &e->tokens[(size_t)e->rank * TOKENS + (uint32_t)x->priv[2] - 1];
    int32_t posted = RDV_POSTED;
    if (__atomic_compare_exchange_n(flag, &posted, RDV_REVOKED, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == RDV_READING &&
           mrc__shm_peer_alive(e, x->peer))
        sched_yield();
}

/* This rank's call failed: says so in its post (the ranks waiting on it
 * fail too, naming the cause), and takes back every rendezvous send, the
 * listed ones and those out but not yet listed. Eager sends are copies:
 * nothing to take back. */
static void shm_cancel(void *ctx, mrc_status_t st)
{
    mrc__shm_endpoint_t *e = ctx;
    mrc__call_t none = {0, 0};
    mrc__shm_post_failure(e, st, e->rank, -1, none, none);
    for (size_t i = 0; i < e->num_rdvs; i++)
        take_back(e, e->rdvs[i]);
    for (size_t i = 0; i < e->num_sends; i++) /* out, not yet listed */
        if (e->sends[i]->priv[3] && e->sends[i]->priv[2])
            take_back(e, e->sends[i]);
    /* No get of this rank's buffers starts from now on, and the ones in
     * flight are waited for (or their reader's death). */
    rank_post_t *mine = post_at(e, e->rank);
    __atomic_store_n(&mine->revoked, e->seq + 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&mine->readers, __ATOMIC_ACQUIRE) > 0) {
        int gone = 0;
        for (int r = 0; r < e->n; r++)
            gone |= !mrc__shm_peer_alive(e, r);
        if (gone)
            break;
        sched_yield();
    }
    /* The tokens stay spent, and nothing is left to send: the
     * communicator refuses further calls. */
    e->num_rdvs = 0;
    e->num_sends = 0;
    e->num_recvs = 0;
    e->unlisted = 0;
    for (int p = 0; p < e->n; p++) {
        e->held[p] = NULL;
        e->sends_to[p] = 0;
    }
}

int mrc__shm_reads_buffers(void *ctx)
{
    const mrc__shm_endpoint_t *e = ctx;
    return e->all_read && e->bounce != NULL;
}

static const mrc__transport_ops_t shm_ops = {
    .name = "shm",
    .begin = shm_begin,
    .isend = mrc__shm_isend,
    .irecv = mrc__shm_irecv,
    .test = mrc__shm_test,
    .end = shm_end,
    .agree = mrc__shm_agree,
    .cancel = shm_cancel,
    .publish = mrc__shm_publish,
    .get = mrc__shm_get,
    .signal = mrc__shm_signal,
    .wait = mrc__shm_wait,
    .reads_buffers = mrc__shm_reads_buffers,
};

void mrc__shm_set_send_by_ref(mrc__shm_endpoint_t *e, int on)
{
    e->send_by_ref = on != 0;
}

int mrc__shm_sends_by_ref(const mrc__shm_endpoint_t *e)
{
    return e->send_by_ref;
}

void mrc__shm_set_idle(mrc__shm_endpoint_t *e, void (*idle)(void *), void *arg)
{
    e->on_idle = idle;
    e->on_idle_arg = arg;
}

/* The executor's idle, handed on to the endpoint's (the MPI job's). */
static void shm_idle(void *ctx)
{
    mrc__shm_endpoint_t *e = ctx;
    e->on_idle(e->on_idle_arg);
}

mrc__transport_t mrc__shm_transport(mrc__shm_endpoint_t *e)
{
    mrc__transport_t t = {&shm_ops, e};
    return t;
}

mrc__transport_t mrc__shm_transport_named(mrc__shm_endpoint_t *e,
                                          const char *name)
{
    e->named = shm_ops;
    e->named.name = name;
    e->named.profiled_as = shm_ops.name;
    e->named.idle = e->on_idle ? shm_idle : NULL;
    mrc__transport_t t = {&e->named, e};
    return t;
}
