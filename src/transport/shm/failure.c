/* The shared-memory transport's failures: peers lost (seen by their
 * pids), calls failed (said in the failing rank's post, so that the ranks
 * waiting on it fail too), and ranks whose calls disagree. */
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

/* ---- peers ------------------------------------------------------------ */

/* A rank that has left cleanly has sent all it had to: its data stays in
 * the segment for the others to take. Only a rank that vanished without
 * leaving is lost. */
int mrc__shm_peer_alive(const mrc__shm_endpoint_t *e, int r)
{
    pid_t pid = __atomic_load_n(&e->info[r].pid, __ATOMIC_ACQUIRE);
    return pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH;
}

/* The job has lost rank r: every rank fails from now on, naming it (a
 * survivor that gave up may leave descriptors that can no longer be
 * read; those failures are this loss too). */
mrc_status_t mrc__shm_job_lost(mrc__shm_endpoint_t *e, int r)
{
    int32_t none = 0;
    __atomic_compare_exchange_n(&e->hdr->lost, &none, r + 1, 0,
                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    r = __atomic_load_n(&e->hdr->lost, __ATOMIC_ACQUIRE) - 1;
    int32_t pid = e->info[r].pid;
    e->lost = mrc__error(MRC_ERR_PEER_LOST, "rank %d: rank %d (pid %d) is gone",
                         e->rank, r, pid < 0 ? -pid : pid);
    return e->lost;
}

static mrc_status_t pending_failed(mrc__shm_endpoint_t *e);
static mrc_status_t failure_error(const mrc__shm_endpoint_t *e,
                                  const struct rank_post *p);

/* Called while waiting: every few ms, checks that the peers are there
 * (and that none this rank waits on has failed its call). */
mrc_status_t mrc__shm_check_peers(mrc__shm_endpoint_t *e)
{
    if (e->lost != MRC_OK)
        return e->lost;
    const rank_post_t *mine = post_at(e, e->rank);
    if (__atomic_load_n(&mine->failed, __ATOMIC_ACQUIRE) == 2)
        return failure_error(e, mine);
    int32_t lost = __atomic_load_n(&e->hdr->lost, __ATOMIC_ACQUIRE);
    if (lost > 0)
        return mrc__shm_job_lost(e, lost - 1);
    if (++e->idle % 256)
        return MRC_OK;
    double t = mrc__shm_now();
    if (t - e->last_check < 0.005)
        return MRC_OK;
    e->last_check = t;
    for (int r = 0; r < e->n; r++)
        if (r != e->rank && !mrc__shm_peer_alive(e, r))
            return mrc__shm_job_lost(e, r);
    return pending_failed(e);
}

/* ---- failures and disagreements ---------------------------------------- */

/* Records in this rank's post why its call failed (the first reason
 * stays): a disagreement between ranks a and b (b >= 0, their calls ca
 * and cb), or status st of rank a. */
void mrc__shm_post_failure(mrc__shm_endpoint_t *e, mrc_status_t st, int a,
                           int b, mrc__call_t ca, mrc__call_t cb)
{
    rank_post_t *p = post_at(e, e->rank);
    int32_t none = 0;
    if (!__atomic_compare_exchange_n(&p->failed, &none, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;
    p->status = st;
    p->a = a;
    p->b = b;
    p->ca = ca;
    p->cb = cb;
    __atomic_store_n(&p->failed, 2, __ATOMIC_RELEASE);
}

/* Ranks a and b called different collectives (or counts, ...): the
 * message, kept in this rank's post for the ranks waiting on it. */
mrc_status_t mrc__shm_disagree(mrc__shm_endpoint_t *e, int a, mrc__call_t ca,
                               int b, mrc__call_t cb)
{
    mrc__shm_post_failure(e, MRC_ERR_INVALID_ARG, a, b, ca, cb);
    return mrc__call_mismatch(a, ca, b, cb);
}

/* The failure recorded in post p, as the error it was. */
static mrc_status_t failure_error(const mrc__shm_endpoint_t *e,
                                  const struct rank_post *p)
{
    if (p->status == MRC_ERR_INVALID_ARG && p->b >= 0)
        return mrc__call_mismatch(p->a, p->ca, p->b, p->cb);
    return mrc__error((mrc_status_t)p->status,
                      "rank %d: rank %d failed its call (%s), so this call "
                      "cannot complete",
                      e->rank, p->a, mrc_status_name((mrc_status_t)p->status));
}

/* MRC_OK, or the failure of peer r, taken on as this rank's own (so the
 * ranks waiting on this one learn it in turn). */
mrc_status_t mrc__shm_peer_failed(mrc__shm_endpoint_t *e, int r)
{
    const rank_post_t *p = post_at(e, r);
    if (__atomic_load_n(&p->failed, __ATOMIC_ACQUIRE) != 2)
        return MRC_OK;
    /* A lost rank is named as such, whoever saw it first. */
    if (p->status == MRC_ERR_PEER_LOST &&
        __atomic_load_n(&e->hdr->lost, __ATOMIC_ACQUIRE) > 0)
        return mrc__shm_job_lost(e, 0);
    mrc__shm_post_failure(e, (mrc_status_t)p->status, p->a, p->b, p->ca, p->cb);
    return failure_error(e, p);
}

/* This rank begins a call (either path): says which in its post. */
void mrc__shm_post_call(mrc__shm_endpoint_t *e, mrc__call_t call)
{
    rank_post_t *p = post_at(e, e->rank);
    e->now = call;
    __atomic_store_n(&p->nth, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&p->now.count, call.count, __ATOMIC_RELAXED);
    __atomic_store_n(&p->now.meta, call.meta, __ATOMIC_RELAXED);
    __atomic_store_n(&p->nth, ++e->nth, __ATOMIC_RELEASE);
}

/* Whether peer r, in the same call as this rank (its nth too), called
 * it with another collective, count, type, op or root: then it may wait
 * in another path, or for messages this rank will never send. */
mrc_status_t mrc__shm_call_differs(mrc__shm_endpoint_t *e, int r)
{
    rank_post_t *p = post_at(e, r);
    if (__atomic_load_n(&p->nth, __ATOMIC_ACQUIRE) != e->nth)
        return MRC_OK;
    /* A seqlock: the peer may be on to its next call meanwhile. */
    mrc__call_t theirs = {__atomic_load_n(&p->now.count, __ATOMIC_RELAXED),
                          __atomic_load_n(&p->now.meta, __ATOMIC_RELAXED)};
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&p->nth, __ATOMIC_RELAXED) != e->nth ||
        mrc__call_same(theirs, e->now))
        return MRC_OK;
    return mrc__shm_disagree(e, r, theirs, e->rank, e->now);
}

/* Rank r's log entry of call seq, its words after the stamp into w: 1,
 * or 0 when the entry is not that call's (or was rewritten meanwhile). */
static int log_entry(const mrc__shm_endpoint_t *e, int r, uint64_t seq,
                     uint64_t w[3])
{
    const uint64_t *c = post_at(e, r)->log[seq % RECORDS];
    if (__atomic_load_n(&c[0], __ATOMIC_ACQUIRE) != seq + 1)
        return 0;
    for (int i = 0; i < 3; i++)
        w[i] = __atomic_load_n(&c[i + 1], __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&c[0], __ATOMIC_RELAXED) == seq + 1;
}

int mrc__shm_call_of(const mrc__shm_endpoint_t *e, int r, uint64_t seq,
                     mrc__call_t *out)
{
    uint64_t w[3];
    if (!log_entry(e, r, seq, w))
        return 0;
    out->count = w[0];
    out->meta = w[1];
    return 1;
}

int mrc__shm_chain_of(const mrc__shm_endpoint_t *e, int r, uint64_t seq,
                      uint64_t *chain)
{
    uint64_t w[3];
    if (!log_entry(e, r, seq, w))
        return 0;
    *chain = w[2];
    return 1;
}

mrc_status_t mrc__shm_agree(void *ctx, const int32_t *members, int num_members)
{
    mrc__shm_endpoint_t *e = ctx;
    if (e->lost != MRC_OK)
        return e->lost;
    for (int i = 0; i < num_members; i++) {
        int r = members[i];
        if (r < 0 || r >= e->n)
            return mrc__error(MRC_ERR_INTERNAL, "rank %d: no rank %d", e->rank,
                              r);
        if (r == e->rank)
            continue;
        const rank_post_t *p = post_at(e, r);
        uint64_t nth = __atomic_load_n(&p->nth, __ATOMIC_ACQUIRE);
        mrc_status_t st;
        if (nth > e->nth + 1) /* two calls on: it compared ours in this */
            continue;         /* one, by a wait, a message or agreeing */
        if (nth > e->nth) {
            /* On to its next call: this one's entry by parity was written
             * before, and is rewritten only two calls on. */
            mrc__call_t theirs = {
                __atomic_load_n(&p->calls[e->seq & 1].count, __ATOMIC_RELAXED),
                __atomic_load_n(&p->calls[e->seq & 1].meta, __ATOMIC_RELAXED)};
            /* Still one call on (no call lets a rank end one before every
             * member began it; checked, should one ever). */
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (__atomic_load_n(&p->nth, __ATOMIC_RELAXED) > e->nth + 1)
                continue;
            if (!mrc__call_same(theirs, e->call))
                return mrc__shm_disagree(e, r, theirs, e->rank, e->call);
            continue;
        }
        if (nth == e->nth) { /* in this call: its `now` (a seqlock) */
            st = mrc__shm_call_differs(e, r);
            if (st != MRC_OK)
                return st;
            if (__atomic_load_n(&p->nth, __ATOMIC_ACQUIRE) == e->nth)
                continue;
        }
        /* Not yet begun (or beginning, or just gone on: look again); its
         * failure and the job's state now and then, as a wait looks. */
        st = ++e->looks % 16 == 0 ? mrc__shm_waiting_on(e, r) : MRC_OK;
        return st != MRC_OK ? st : MRC_INPROGRESS;
    }
    e->heard = 1;
    return MRC_OK;
}

/* The program's peers this rank waits on: has one failed? */
static mrc_status_t pending_failed(mrc__shm_endpoint_t *e)
{
    for (size_t i = 0; i < e->num_recvs + e->num_sends + e->num_rdvs; i++) {
        size_t j = i - e->num_recvs, k = j - e->num_sends;
        int p = i < e->num_recvs   ? e->recvs[i]->peer
                : j < e->num_sends ? e->sends[j]->peer
                                   : e->rdvs[k]->peer;
        mrc_status_t st = mrc__shm_peer_failed(e, p);
        if (st == MRC_OK)
            st = mrc__shm_call_differs(e, p);
        if (st != MRC_OK)
            return st; /* and in this rank's post: said at every look */
    }
    return MRC_OK;
}

/* While this rank waits on peer r (a flag, a window to reuse): MRC_OK, or
 * why it never will come (the job lost a rank, r failed its call, or r
 * is in this call with another descriptor). */
mrc_status_t mrc__shm_waiting_on(mrc__shm_endpoint_t *e, int r)
{
    mrc_status_t st = mrc__shm_check_peers(e);
    if (st == MRC_OK)
        st = mrc__shm_peer_failed(e, r);
    if (st == MRC_OK)
        st = mrc__shm_call_differs(e, r);
    return st;
}
