/* The executor's general loop: each chain (stream x chunk) has a
 * cursor; a pass over the chains posts what can be posted, completes
 * what has arrived, and never waits; passes repeat until every chain is
 * complete and every send taken. Staging windows and relays are kept
 * here. */
#include <stdint.h>
#include <string.h>

#include "exec_internal.h"
#include "reduce/reduce.h"

static int xfer_done(const mrc__xfer_t *xf)
{
    return __atomic_load_n(&xf->done, __ATOMIC_ACQUIRE);
}

/* A relay's op: receive the message into its slot (once the slot's last
 * send is done), then send it on from there. MRC_OK with *ready clear
 * while it waits. */
static mrc_status_t forward(mrc__exec_t *x, const mrc__transport_t *t, int i,
                            int *ready)
{
    const mrc__op_t *op = &x->plan.ops[i];
    mrc__xfer_t *in = &x->xfers[i];
    int f = x->fwd_of[i];
    mrc__xfer_t *out = &x->fwd_sends[f];
    char *slot = x->relay_mem + x->fwd_at[f];
    mrc_status_t st;
    *ready = 0;
    if (!in->posted) {
        if (x->fwd_prev[f] >= 0) {
            mrc__xfer_t *last = &x->fwd_sends[x->fwd_prev[f]];
            if (!xfer_done(last) && (st = t->ops->test(t->ctx, last)) != MRC_OK)
                return st;
            if (!xfer_done(last))
                return MRC_OK;
        }
        in->peer = op->from;
        in->tag = op->tag;
        in->count = op->count;
        in->bytes = op->count * x->elem;
        in->dtype = x->program->cfg.dtype;
        in->op = MRC_SUM;
        in->dst = slot;
        in->local = NULL;
        in->nontemporal = 0;
        st = t->ops->irecv(t->ctx, in);
        if (st != MRC_OK)
            return st == MRC_INPROGRESS ? MRC_OK : st;
    }
    if (!xfer_done(in)) {
        if ((st = t->ops->test(t->ctx, in)) != MRC_OK)
            return st;
        if (!xfer_done(in))
            return MRC_OK;
    }
    if (!out->posted) {
        out->peer = op->peer;
        out->tag = op->tag;
        out->count = op->count;
        out->bytes = op->count * x->elem;
        st = t->ops->isend(t->ctx, slot, out);
        if (st != MRC_OK)
            return st == MRC_INPROGRESS ? MRC_OK : st;
        if (mrc__log_level() >= MRC__LOG_TRACE)
            mrc__trace(x->plan.node,
                       "forwards stream %d step %d chunk %d (%llu elements) "
                       "from %d to %d, hop to %d",
                       op->stream, op->step, op->chunk,
                       (unsigned long long)op->count, op->from, op->peer,
                       op->ring_peer);
    }
    *ready = 1;
    return MRC_OK;
}

/* A SEND: posted (from its staging slot, if it sends a staged partial).
 * *ready once posted. */
static mrc_status_t send_op(mrc__exec_t *x, const mrc__transport_t *t, int i,
                            const void *sb, void *rb, void *xb, int *ready)
{
    const mrc__op_t *op = &x->plan.ops[i];
    mrc__xfer_t *xf = &x->xfers[i];
    *ready = 1;
    if (xf->posted)
        return MRC_OK;
    xf->peer = op->peer;
    xf->tag = op->tag;
    xf->count = op->count;
    xf->bytes = op->count * x->elem;
    int slot = x->stage_of[i];
    const char *src = slot >= 0
                          ? x->staging + (size_t)slot * x->slot_bytes
                          : MRC__EXEC_AT(x, op->src, op->src_off, sb, rb, xb);
    mrc_status_t st = t->ops->isend(t->ctx, src, xf);
    *ready = st == MRC_OK;
    if (st == MRC_OK && slot >= 0)
        x->slot_user[slot] = i;
    return st == MRC_INPROGRESS ? MRC_OK : st;
}

/* A RECV: posted (into its staging slot once the slot's last send is
 * done, for a partial the chain only sends on), then tested. *ready once
 * it has arrived. */
static mrc_status_t recv_op(mrc__exec_t *x, const mrc__transport_t *t, int i,
                            const void *sb, void *rb, void *xb, int *ready)
{
    const mrc__op_t *op = &x->plan.ops[i];
    mrc__xfer_t *xf = &x->xfers[i];
    mrc_status_t st;
    *ready = 0;
    if (!xf->posted) {
        int slot = x->stage_of[i];
        if (slot >= 0 && x->slot_user[slot] >= 0) {
            /* The slot's last send may still be read; a transport may
             * learn that it is done only when asked. */
            mrc__xfer_t *last = &x->xfers[x->slot_user[slot]];
            if (!xfer_done(last) && (st = t->ops->test(t->ctx, last)) != MRC_OK)
                return st;
            if (!xfer_done(last))
                return MRC_OK;
        }
        xf->peer = op->peer;
        xf->tag = op->tag;
        xf->count = op->count;
        xf->bytes = op->count * x->elem;
        xf->dtype = x->program->cfg.dtype;
        xf->op = x->program->cfg.op == MRC_AVG ? MRC_SUM : x->program->cfg.op;
        xf->dst = MRC__EXEC_AT(x, op->dst, op->dst_off, sb, rb, xb);
        xf->local = op->local
                        ? MRC__EXEC_AT(x, op->local, op->local_off, sb, rb, xb)
                        : NULL;
        xf->nontemporal = x->nontemporal;
        if (slot >= 0) { /* a partial: into a cached slot */
            xf->dst = x->staging + (size_t)slot * x->slot_bytes;
            xf->nontemporal = 0;
        }
        st = t->ops->irecv(t->ctx, xf);
        if (st != MRC_OK)
            return st == MRC_INPROGRESS ? MRC_OK : st;
    }
    st = t->ops->test(t->ctx, xf);
    *ready = st == MRC_OK && xfer_done(xf);
    return st;
}

/* Op i of a chain, once: *ready if it is done (the cursor moves on). */
static mrc_status_t chain_op(mrc__exec_t *x, const mrc__transport_t *t, int i,
                             const void *sb, void *rb, void *xb, int *ready)
{
    const mrc__op_t *op = &x->plan.ops[i];
    mrc_status_t st;
    *ready = 1;
    switch (op->kind) {
    case MRC__SEND: return send_op(x, t, i, sb, rb, xb, ready);
    case MRC__RECV: return recv_op(x, t, i, sb, rb, xb, ready);
    case MRC__FWD: return forward(x, t, i, ready);
    case MRC__COPY:
        (x->nontemporal ? mrc__copy_nontemporal : mrc__copy)(
            MRC__EXEC_AT(x, op->dst, op->dst_off, sb, rb, xb),
            MRC__EXEC_AT(x, op->src, op->src_off, sb, rb, xb),
            op->count * x->elem);
        return MRC_OK;
    case MRC__SCALE:
        mrc__scale(MRC__EXEC_AT(x, op->dst, op->dst_off, sb, rb, xb), op->count,
                   x->program->cfg.dtype, x->group_size);
        return MRC_OK;
    case MRC__EXPOSE:
    case MRC__GET:
    case MRC__SIGNAL:
    case MRC__WAIT:
    case MRC__BARRIER:
        st = mrc__exec_memory_op(x, t, op, &x->xfers[i], sb, rb, xb);
        *ready = st == MRC_OK;
        return st == MRC_INPROGRESS ? MRC_OK : st;
    default:
        return mrc__error(MRC_ERR_INTERNAL, "unknown operation %d", op->kind);
    }
}

/* Advances one chain as far as it can go; sets *moved if it did. */
static mrc_status_t advance(mrc__exec_t *x, const mrc__transport_t *t, int ch,
                            const void *sb, void *rb, void *xb, int *moved)
{
    const mrc__plan_t *pl = &x->plan;
    int begin = pl->chain_off[ch], end = pl->chain_off[ch + 1];
    mrc_status_t st;
    while (begin + x->cursor[ch] < end) {
        int i = begin + x->cursor[ch];
        const mrc__op_t *op = &pl->ops[i];
        mrc__exec_hand_ports(x, t, op->step);
        if (op->kind == MRC__GET) {
            int done = mrc__exec_get_run(x, t, i, end, sb, rb, xb, &st);
            if (st != MRC_OK)
                return st;
            if (done < 0)
                return MRC_OK; /* a wait of the run: later */
            if (done > 0) {
                x->cursor[ch] += done;
                *moved = 1;
                continue;
            }
        }
        int ready;
        if ((st = chain_op(x, t, i, sb, rb, xb, &ready)) != MRC_OK)
            return st;
        if (!ready)
            return MRC_OK;
        x->cursor[ch]++;
        *moved = 1;
    }
    return MRC_OK;
}

/* A chain is complete when its last op has run and every send it made has
 * been taken (so its staging slots are free for the next chain). */
/* Whether chain ch is complete; a transport's failure goes to *st. */
static int chain_complete(mrc__exec_t *x, const mrc__transport_t *t, int ch,
                          mrc_status_t *st)
{
    const mrc__plan_t *pl = &x->plan;
    if (pl->chain_off[ch] + x->cursor[ch] < pl->chain_off[ch + 1])
        return 0;
    for (int i = pl->chain_off[ch]; i < pl->chain_off[ch + 1]; i++) {
        mrc__xfer_t *xf = pl->ops[i].kind == MRC__FWD
                              ? &x->fwd_sends[x->fwd_of[i]]
                              : &x->xfers[i];
        if ((pl->ops[i].kind != MRC__SEND && pl->ops[i].kind != MRC__FWD) ||
            __atomic_load_n(&xf->done, __ATOMIC_ACQUIRE))
            continue;
        if ((*st = t->ops->test(t->ctx, xf)) != MRC_OK ||
            !__atomic_load_n(&xf->done, __ATOMIC_ACQUIRE))
            return 0;
    }
    return 1;
}

/* One pass over the chains: each advanced as far as it goes, complete
 * ones marked (and their stream's window moved on); the chains not yet
 * complete in *left. */
static mrc_status_t pass(mrc__exec_t *x, const mrc__transport_t *t,
                         const void *sb, void *rb, void *xb, int *left,
                         int *moved)
{
    const mrc__plan_t *pl = &x->plan;
    mrc_status_t st = MRC_OK;
    *left = 0;
    for (int ch = 0; ch < pl->num_chains; ch++) {
        if (x->complete[ch])
            continue;
        int sid = x->chain_group[ch];
        if (x->staging && !x->relay_chain[ch] &&
            x->chain_rank[ch] >= x->first_open[sid] + x->window) {
            ++*left; /* outside its stream's window for now */
            continue;
        }
        if (pl->chain_off[ch] + x->cursor[ch] < pl->chain_off[ch + 1]) {
            st = advance(x, t, ch, sb, rb, xb, moved);
            if (st != MRC_OK)
                return st;
        }
        int complete = chain_complete(x, t, ch, &st);
        if (st != MRC_OK)
            return st;
        if (!complete) {
            ++*left;
            continue;
        }
        x->complete[ch] = 1;
        *moved = 1;
        /* The window starts at the stream's first open chain. */
        int first = ch - x->chain_rank[ch];
        while (first + x->first_open[sid] < pl->num_chains &&
               x->chain_group[first + x->first_open[sid]] == sid &&
               x->complete[first + x->first_open[sid]])
            x->first_open[sid]++;
    }
    return MRC_OK;
}

/* Counts down *left, the sends not yet seen taken, from the last posted. */
static mrc_status_t sends_taken(mrc__exec_t *x, const mrc__transport_t *t,
                                size_t *left, int *moved)
{
    while (*left > 0) {
        mrc__xfer_t *xf = &x->xfers[x->send_list[*left - 1]];
        if (!xf->posted)
            break;
        if (!__atomic_load_n(&xf->done, __ATOMIC_ACQUIRE)) {
            mrc_status_t st = t->ops->test(t->ctx, xf);
            if (st != MRC_OK)
                return st;
            if (!__atomic_load_n(&xf->done, __ATOMIC_ACQUIRE))
                break;
        }
        --*left;
        *moved = 1;
    }
    return MRC_OK;
}

mrc_status_t mrc__exec_run_chains(mrc__exec_t *x, const mrc__transport_t *t,
                                  const void *sb, void *rb, void *xb,
                                  double timeout_s)
{
    double start = 0;
    size_t sends_left = x->num_sends, idle = 0;
    int chains_left = x->plan.num_chains;
    while (chains_left > 0 || sends_left > 0) {
        int moved = 0;
        mrc_status_t st = pass(x, t, sb, rb, xb, &chains_left, &moved);
        if (st == MRC_OK)
            st = sends_taken(x, t, &sends_left, &moved);
        if (st != MRC_OK)
            return st;
        if (moved) {
            idle = 0;
            start = 0; /* the timeout counts time without progress */
            continue;
        }
        st =
            mrc__exec_stalled(x, t, MRC__SPIN_PASSES, &idle, &start, timeout_s);
        if (st != MRC_OK)
            return st;
    }
    mrc_status_t st = x->agree ? mrc__exec_agree(x, t, MRC__SPIN_PASSES, &idle,
                                                 &start, timeout_s)
                               : MRC_OK;
    return st != MRC_OK ? st : t->ops->end(t->ctx);
}
