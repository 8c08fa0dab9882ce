/* The executor's memory-semantic ops (expose, get, signal, wait,
 * barrier), the tiled runs of gets a direct program reduces a block
 * with, the publication of a call's buffers, and the straight plans
 * these programs make (one chain of local and memory ops, run without
 * the general loop's bookkeeping). */
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "exec_internal.h"
#include "reduce/reduce.h"

_Static_assert((int)MRC__MEM_SEND == (int)MRC__BUF_SEND &&
                   (int)MRC__MEM_RECV == (int)MRC__BUF_RECV &&
                   (int)MRC__MEM_SCRATCH == (int)MRC__BUF_SCRATCH &&
                   (int)MRC__MEM_WINDOW == (int)MRC__BUF_WINDOW,
               "the transport numbers buffers as the program does");

/* Gets: the tile of a run into one destination (get_run). */
enum { GET_TILE = 64 << 10 };

/* Where a get's transfer reads into, for these buffers. */
static void rebase_get(const mrc__exec_t *x, const mrc__op_t *op,
                       mrc__xfer_t *xf, const void *sb, void *rb, void *xb)
{
    xf->dst = mrc__exec_buffer(op->dst, sb, rb, xb) + op->dst_off * x->elem;
    xf->local = op->local ? mrc__exec_buffer(op->local, sb, rb, xb) +
                                op->local_off * x->elem
                          : NULL;
}

/* The transfer of a get: what the transport reads into where. */
static void fill_get(const mrc__exec_t *x, const mrc__op_t *op, mrc__xfer_t *xf,
                     const void *sb, void *rb, void *xb)
{
    mrc_op_t cfg_op = x->program->cfg.op;
    xf->peer = op->peer;
    xf->count = op->count;
    xf->bytes = op->count * x->elem;
    xf->dtype = x->program->cfg.dtype;
    xf->op = cfg_op == MRC_AVG ? MRC_SUM : cfg_op;
    rebase_get(x, op, xf, sb, rb, xb);
    /* A reduction of a block past the caches is written around them, as
     * are large copies. */
    xf->nontemporal = op->local ? mrc__get_around(xf->bytes, x->stream_bytes)
                                : x->nontemporal;
}

/* An expose: by copy into this call's window (by reference, the
 * buffer is already published). */
static void expose(const mrc__exec_t *x, const mrc__op_t *op, const void *sb,
                   void *rb, void *xb)
{
    if (!op->ref)
        mrc__copy(x->win + op->dst_off * x->elem,
                  mrc__exec_buffer(op->src, sb, rb, xb) + op->src_off * x->elem,
                  op->count * x->elem);
}

/* A get whose transfer is filled, at byte `at` of the peer's buffer:
 * through the transport, or, from this
 * node's own window, here (the window is this process's memory, which
 * the executor wrote: the transport's look at its own record is not
 * needed; on a small call a node's own get and wait came to a sixth of
 * its instructions), from the buffer the window's elements were copied
 * from where the plan allows (own_read). */
static mrc_status_t get(const mrc__exec_t *x, const mrc__transport_t *t,
                        const mrc__op_t *op, uint64_t at, mrc__xfer_t *xf,
                        const void *sb, void *rb, void *xb)
{
    if (op->peer == x->plan.node && op->src == MRC__MEM_WINDOW) {
        const struct mrc__own_read *o =
            x->own_read ? &x->own_read[op - x->plan.ops] : NULL;
        const char *from = o && o->buf != MRC__BUF_NONE
                               ? mrc__exec_buffer(o->buf, sb, rb, xb) +
                                     o->off * x->elem +
                                     (at - op->src_off * x->elem)
                               : x->win + at;
        mrc__take(xf->dst, xf->local, from, xf->count, xf->bytes, xf->dtype,
                  xf->op, xf->nontemporal);
        xf->done = 1;
        return MRC_OK;
    }
    return t->ops->get(t->ctx, op->peer, op->src, at, xf);
}

/* A memory-semantic op: MRC_OK once done, MRC_INPROGRESS while it waits
 * (a flag, a barrier, a get the transport cannot do yet). A barrier is
 * this rank's flag and a wait on every member's, in rank order; xf
 * remembers how far it is. */
mrc_status_t mrc__exec_memory_op(mrc__exec_t *x, const mrc__transport_t *t,
                                 const mrc__op_t *op, mrc__xfer_t *xf,
                                 const void *sb, void *rb, void *xb)
{
    const mrc__transport_ops_t *o = t->ops;
    switch (op->kind) {
    case MRC__EXPOSE: expose(x, op, sb, rb, xb); return MRC_OK;
    case MRC__GET:
        fill_get(x, op, xf, sb, rb, xb);
        return get(x, t, op, op->src_off * x->elem, xf, sb, rb, xb);
    case MRC__SIGNAL: return o->signal(t->ctx, op->flag);
    case MRC__WAIT: return o->wait(t->ctx, op->peer, op->flag);
    default: { /* MRC__BARRIER */
        int flag = MRC__BARRIER_FLAG + op->flag;
        if (!xf->posted) {
            mrc_status_t st = o->signal(t->ctx, flag);
            if (st != MRC_OK)
                return st;
            xf->posted = 1;
            xf->priv[0] = 0;
        }
        while ((int)xf->priv[0] < x->exposure.num_members) {
            mrc_status_t st =
                o->wait(t->ctx, x->exposure.members[xf->priv[0]], flag);
            if (st != MRC_OK)
                return st;
            xf->priv[0]++;
        }
        return MRC_OK;
    }
    }
}

/* A run of gets into one destination, as the direct programs reduce a
 * block over the peers (GET, then WAIT and GET for each further peer,
 * each reading the destination as its local operand), is done a tile at
 * a time: each tile of the destination stays in cache while every peer's
 * tile is added to it, in the program's order per element (so the same
 * bits), instead of N - 1 passes over the whole block. The run's waits
 * are looked at first (nothing in between signals, so waiting for them
 * early cannot deadlock). Returns the number of ops done (0: op i is not
 * such a run and runs alone), or -1 while a wait is not satisfied. */
int mrc__exec_get_run(mrc__exec_t *x, const mrc__transport_t *t, int i, int end,
                      const void *sb, void *rb, void *xb, mrc_status_t *st)
{
    const mrc__op_t *ops = x->plan.ops, *first = &ops[i];
    size_t bytes = first->count * x->elem;
    *st = MRC_OK;
    if (!first->local || bytes < 2 * (size_t)GET_TILE)
        return 0;
    int last = i;
    while (last + 2 < end && ops[last + 1].kind == MRC__WAIT &&
           ops[last + 2].kind == MRC__GET) {
        const mrc__op_t *g = &ops[last + 2];
        if (g->dst != first->dst || g->dst_off != first->dst_off ||
            g->count != first->count || g->local != first->dst ||
            g->local_off != first->dst_off)
            break;
        last += 2;
    }
    if (last == i)
        return 0;
    for (int k = i + 1; k < last; k += 2) {
        mrc__xfer_t *w = &x->xfers[k];
        if (w->done)
            continue;
        *st = t->ops->wait(t->ctx, ops[k].peer, ops[k].flag);
        if (*st == MRC_INPROGRESS) {
            *st = MRC_OK;
            return -1;
        }
        if (*st != MRC_OK)
            return 0;
        w->done = 1;
    }
    size_t tile = GET_TILE / x->elem * x->elem;
    for (size_t off = 0; off < bytes; off += tile) {
        size_t len = bytes - off < tile ? bytes - off : tile;
        for (int k = i; k <= last; k += 2) {
            const mrc__op_t *op = &ops[k];
            mrc__xfer_t *xf = &x->xfers[k];
            fill_get(x, op, xf, sb, rb, xb); /* the block's, cut to a tile */
            xf->count = len / x->elem;
            xf->bytes = len;
            xf->dst = (char *)xf->dst + off;
            xf->local = (const char *)xf->local + off;
            /* The last write of a block past the caches goes around them. */
            xf->nontemporal =
                k == last && mrc__get_around(bytes, x->stream_bytes);
            xf->done = 0;
            while ((*st = get(x, t, op, op->src_off * x->elem + off, xf, sb, rb,
                              xb)) == MRC_INPROGRESS)
                sched_yield();
            if (*st != MRC_OK)
                return 0;
        }
    }
    return last - i + 1;
}

/* The publish of a call the transport refused at first (a peer may
 * still read the window of two calls ago): tried again, with the
 * timeout. */
static mrc_status_t publish_wait(mrc__exec_t *x, const mrc__transport_t *t,
                                 void **w, double timeout_s)
{
    double start = 0;
    for (unsigned spin = 0;; spin++) {
        if (t->ops->idle && spin % 16 == 15)
            t->ops->idle(t->ctx);
        if (spin % 64 == 63) {
            double now = mrc__exec_now();
            if (start == 0)
                start = now;
            else if (timeout_s > 0 && now - start > timeout_s)
                return mrc__error(MRC_ERR_TIMEOUT,
                                  "node %d timed out after %g s: a peer "
                                  "has not ended the call before last",
                                  x->plan.node, timeout_s);
        }
        sched_yield();
        mrc_status_t st = t->ops->publish(t->ctx, &x->exposure, w);
        if (st != MRC_INPROGRESS)
            return st;
    }
}

/* Publishes a memory program's buffers; waits (with the timeout) while
 * the transport still lets a peer read the window of two calls ago. */
mrc_status_t mrc__exec_publish(mrc__exec_t *x, const mrc__transport_t *t,
                               const void *sendbuf, void *recvbuf,
                               void *scratch, double timeout_s)
{
    if (x->published_on != t->ops &&
        (!t->ops->publish || !t->ops->get || !t->ops->signal || !t->ops->wait))
        return mrc__error(MRC_ERR_UNSUPPORTED,
                          "the %s transport cannot read peers' memory, "
                          "which %s needs",
                          t->ops->name, mrc_algo_name(x->program->cfg.algo));
    /* Buffers only where the program exposes some by reference: none
     * is read by reference otherwise, and the transport need not publish
     * their addresses. */
    if (x->by_ref) {
        x->exposure.buf[MRC__MEM_SEND] = sendbuf;
        x->exposure.buf[MRC__MEM_RECV] = recvbuf;
        x->exposure.buf[MRC__MEM_SCRATCH] = scratch;
    }
    void *w = NULL;
    mrc_status_t st = t->ops->publish(t->ctx, &x->exposure, &w);
    if (st == MRC_INPROGRESS)
        st = publish_wait(x, t, &w, timeout_s);
    x->win = w;
    x->published_on = t->ops; /* has memory semantics */
    return st;
}

/* A transfer's state cleared (done, posted, what the transport keeps). */
static void clear_xfer(mrc__xfer_t *xf)
{
    xf->done = 0;
    xf->posted = 0;
    memset(xf->priv, 0, sizeof xf->priv);
}

/* A straight plan's transfers before the first op that uses one: the
 * gets' filled for these buffers, and every state cleared if the last
 * call did not leave them so (each op clears its own as it ends, which
 * saves a small call a pass over its ops). A call on the buffers of the
 * last one finds its gets filled (a small call's gets are most of its
 * bookkeeping otherwise); a tiled run rewrites its transfers tile by
 * tile, and they are filled again at the next call. Done after the
 * call's first signal, while the peers catch up, not before it, where it
 * would delay them. */
static void prepare_straight(mrc__exec_t *x, const void *sb, void *rb, void *xb)
{
    const mrc__plan_t *pl = &x->plan;
    int moved = x->filled_buf[0] != sb || x->filled_buf[1] != rb ||
                x->filled_buf[2] != xb;
    if (x->gets_filled && !moved && x->xfers_clean)
        return;
    /* Other buffers of filled gets (a loop over buffers): their
     * addresses alone (a cold 4-byte reduce at 2 ranks: 1846
     * instructions a call with every field filled again). */
    for (int i = 0; i < pl->num_ops; i++) {
        int kind = pl->ops[i].kind;
        if (!x->xfers_clean &&
            (kind == MRC__WAIT || kind == MRC__GET || kind == MRC__BARRIER))
            clear_xfer(&x->xfers[i]);
        if (kind != MRC__GET)
            continue;
        if (!x->gets_filled)
            fill_get(x, &pl->ops[i], &x->xfers[i], sb, rb, xb);
        else if (moved)
            rebase_get(x, &pl->ops[i], &x->xfers[i], sb, rb, xb);
    }
    x->gets_filled = 1;
    x->xfers_clean = 1;
    x->filled_buf[0] = sb;
    x->filled_buf[1] = rb;
    x->filled_buf[2] = xb;
}

/* Op i of a straight plan that neither waits, gets nor exposes: a local
 * op or a barrier (MRC_INPROGRESS while the barrier waits). */
static mrc_status_t straight_op(mrc__exec_t *x, const mrc__transport_t *t,
                                int i, const void *sb, void *rb, void *xb)
{
    const mrc__op_t *op = &x->plan.ops[i];
    switch (op->kind) {
    case MRC__COPY:
        (x->nontemporal ? mrc__copy_nontemporal : mrc__copy)(
            mrc__exec_buffer(op->dst, sb, rb, xb) + op->dst_off * x->elem,
            mrc__exec_buffer(op->src, sb, rb, xb) + op->src_off * x->elem,
            op->count * x->elem);
        return MRC_OK;
    case MRC__SCALE:
        mrc__scale(mrc__exec_buffer(op->dst, sb, rb, xb) +
                       op->dst_off * x->elem,
                   op->count, x->program->cfg.dtype, x->group_size);
        return MRC_OK;
    default: return mrc__exec_memory_op(x, t, op, &x->xfers[i], sb, rb, xb);
    }
}

/* Op i of a straight plan, a get: a run of gets tiled (of blocks worth
 * it), else the get alone, its transfer filled at the call's start.
 * *done: the ops taken. */
static mrc_status_t straight_get(mrc__exec_t *x, const mrc__transport_t *t,
                                 int i, const void *sb, void *rb, void *xb,
                                 int *done)
{
    const mrc__op_t *op = &x->plan.ops[i];
    mrc_status_t st = MRC_OK;
    *done = 1;
    if (op->count * x->elem >= 2 * (size_t)GET_TILE && op->local) {
        x->gets_filled = 0; /* a run's tiles rewrite the transfers */
        int n = mrc__exec_get_run(x, t, i, x->plan.num_ops, sb, rb, xb, &st);
        if (st != MRC_OK || n < 0)
            return st != MRC_OK ? st : MRC_INPROGRESS;
        if (n > 0) {
            *done = n;
            return MRC_OK;
        }
    }
    return get(x, t, op, op->src_off * x->elem, &x->xfers[i], sb, rb, xb);
}

/* Waits on the spot for op i, a wait whose flag was not there at the
 * first look: the look is then a load and a pause, and the flag is seen
 * sooner once it comes (a small call's time is mostly this wait). */
static mrc_status_t straight_wait(mrc__exec_t *x, const mrc__transport_t *t,
                                  int i, double timeout_s)
{
    const mrc__op_t *op = &x->plan.ops[i];
    size_t idle = 0;
    double start = 0;
    mrc_status_t st;
    x->cursor[0] = i; /* for the timeout's message */
    /* The first looks bare (a pause and the look): a small call's peer
     * is a few hundred nanoseconds behind, and each look's bookkeeping
     * would delay seeing its flag once it comes. */
    for (int k = 0; k < x->spin_looks; k++) {
        mrc__exec_relax();
        if ((st = t->ops->wait(t->ctx, op->peer, op->flag)) != MRC_INPROGRESS)
            return st;
    }
    idle = (size_t)x->spin_looks; /* spun: the looks from here yield */
    do {
        st = mrc__exec_stalled(x, t, (size_t)x->spin_looks, &idle, &start,
                               timeout_s);
        if (st != MRC_OK)
            return st;
        st = t->ops->wait(t->ctx, op->peer, op->flag);
    } while (st == MRC_INPROGRESS);
    return st;
}

/* A straight plan (x->straight: one chain of local and memory ops, as a
 * direct family's), after begin and publish: each op in turn, waiting on
 * the spot for the one that cannot go yet. The same ops as advance runs,
 * in the same order, without the chains' and sends' bookkeeping, which
 * cost a small call more than its data did. */
mrc_status_t mrc__exec_run_straight(mrc__exec_t *x, const mrc__transport_t *t,
                                    const void *sb, void *rb, void *xb,
                                    double timeout_s)
{
    const mrc__plan_t *pl = &x->plan;
    const mrc__transport_ops_t *o = t->ops;
    double start = 0;
    size_t idle = 0;
    /* The op before which the transfers are prepared (-1: done). The ops
     * before it neither wait nor use one, so the loop reaches it. */
    int prepare_at = x->first_use;
    for (int i = 0; i < pl->num_ops;) {
        const mrc__op_t *op = &pl->ops[i];
        if (op->step >= x->ports_until) /* a look costs less without */
            mrc__exec_hand_ports(x, t, op->step);
        if (i == prepare_at) {
            prepare_straight(x, sb, rb, xb);
            x->xfers_clean = 0; /* until the call ends well */
            prepare_at = -1;
        }
        int done = 1;
        mrc_status_t st;
        switch (op->kind) {
        case MRC__WAIT:
            /* Its own flag: one chain, so signalled before (with several
             * chains a signal may be in another, not yet run). */
            if (op->peer == pl->node) {
                st = MRC_OK;
                break;
            }
            st = o->wait(t->ctx, op->peer, op->flag);
            if (st == MRC_INPROGRESS)
                st = straight_wait(x, t, i, timeout_s);
            break;
        case MRC__GET:
            st = straight_get(x, t, i, sb, rb, xb, &done);
            for (int k = i; st == MRC_OK && k < i + done; k++)
                clear_xfer(&x->xfers[k]); /* left clean: see above */
            break;
        case MRC__SIGNAL: st = o->signal(t->ctx, op->flag); break;
        case MRC__EXPOSE:
            expose(x, op, sb, rb, xb);
            st = MRC_OK;
            break;
        default:
            st = straight_op(x, t, i, sb, rb, xb);
            if (st == MRC_OK && op->kind == MRC__BARRIER)
                clear_xfer(&x->xfers[i]);
            break;
        }
        if (st == MRC_INPROGRESS) { /* a get or a barrier not yet */
            x->cursor[0] = i;
            st = mrc__exec_stalled(x, t, (size_t)x->spin_looks, &idle, &start,
                                   timeout_s);
            if (st != MRC_OK)
                return st;
            continue;
        }
        if (st != MRC_OK) {
            x->cursor[0] = i;
            return st;
        }
        i += done;
        if (idle) { /* the timeout counts time without progress */
            idle = 0;
            start = 0;
        }
    }
    x->cursor[0] = pl->num_ops;
    x->xfers_clean = 1;
    mrc_status_t st = x->agree ? mrc__exec_agree(x, t, (size_t)x->spin_looks,
                                                 &idle, &start, timeout_s)
                               : MRC_OK; /* no call on a small call's path */
    return st != MRC_OK ? st : o->end(t->ctx);
}
