/*
 * The pipelined walk: every chunk moves as soon as its data is ready. An
 * event simulation: chains (a node's ops of one stream and chunk) run
 * until they wait for a message; messages share the channels max-min
 * fairly (fluid.c) while in flight, a node sending on one link in the
 * order it posted; arrivals wake their receivers. Memory-semantic ops: a
 * GET is a transfer from the owner, a SIGNAL wakes its waiters a path's
 * latency later, a BARRIER releases its group when the last node reaches
 * it. This file owns the chains, the memory-semantic ops and the clock;
 * the messages' side (posting, link queues, the wire, arrivals) is in
 * pipelined_wire.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/pipelined.h"

/* The node model's own work of chain i's op, once its data is there (a
 * reduction of what it received or read, a local copy): 1 if it is now
 * posted on the node's memory and the chain waits for it, 0 if there is
 * none or it is done (the op is then done), -1 on an error (*st). */
static int own_work(mrc__sim_pipe_t *pp, int i, mrc_status_t *st)
{
    mrc__sim_chain_t *ch = &pp->chains[i];
    mrc__sim_flow_t f;
    if (pp->worked[i] ||
        !mrc__sim_local_flow(pp->s, ch->it.node, &ch->op, pp->esize, &f)) {
        pp->worked[i] = 0;
        return 0;
    }
    pp->worked[i] = 1;
    *st = mrc__sim_pipe_post(pp, f.route, MRC__SIM_WAKE, i, 0, f.bytes);
    return *st == MRC_OK ? 1 : -1;
}

/* Chain i's op has what it waited for: it runs on, or (node model) waits
 * for its own work on it. */
static mrc_status_t resume(mrc__sim_pipe_t *pp, int i)
{
    mrc_status_t st = MRC_OK;
    int waits = own_work(pp, i, &st);
    if (waits != 0)
        return st;
    pp->ready[pp->nready++] = i;
    mrc__cursor_take(&pp->chains[i]); /* its op is done */
    return MRC_OK;
}

/* A message arrives: the chain that waits for it runs on, or it waits
 * for its receiver. */
static mrc_status_t deliver(mrc__sim_pipe_t *pp, const mrc__sim_arrival_t *a)
{
    if (a->src == MRC__SIM_WAKE)
        return resume(pp, a->dst);
    if (a->src == MRC__SIM_BEGIN)
        return mrc__sim_calls_begin(pp, a->dst, (int)a->tag);
    int32_t *link = mrc__msgmap_find(&pp->msgs, a->src, a->dst, a->tag);
    if (*link >= 0) { /* its RECV is satisfied */
        int i = pp->msgs.pool[*link].i[0];
        mrc__msgmap_remove(&pp->msgs, link);
        return resume(pp, i);
    }
    mrc__msg_t *m = mrc__msgmap_add(&pp->msgs, a->src, a->dst, a->tag);
    if (!m)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    m->w[0] = 1;
    m->i[0] = -1;
    return MRC_OK;
}

/* Wakes chain i at time t (not before now). */
static mrc_status_t wake_at(mrc__sim_pipe_t *pp, int i, double t)
{
    if (mrc__grow((void **)&pp->heap, &pp->cap_heap, pp->nheap + 1,
                  sizeof *pp->heap))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    mrc__sim_pipe_arrival_push(
        pp, (mrc__sim_arrival_t){fmax(t, pp->now), MRC__SIM_WAKE, i, 0, 0});
    return MRC_OK;
}

/* A node's SIGNAL: its flag is set now, and every node already waiting
 * for it hears of it a path's latency later (a zero-byte message). A
 * flag is keyed by its call too (mrc__sim_call_flag). */
static mrc_status_t signal_now(mrc__sim_pipe_t *pp, int node, int32_t flag)
{
    int32_t *slot = mrc__msgmap_find(&pp->flags, node, -1, (uint64_t)flag);
    if (*slot < 0) {
        mrc__msg_t *m = mrc__msgmap_add(&pp->flags, node, -1, (uint64_t)flag);
        if (!m)
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        memcpy(&m->w[0], &pp->now, sizeof pp->now);
    }
    mrc_status_t st = MRC_OK;
    for (int j = pp->nwaits - 1; j >= 0 && st == MRC_OK; j--) {
        mrc__sim_pwait_t wt = pp->waits[j];
        if (wt.peer != node || wt.flag != flag)
            continue;
        pp->waits[j] = pp->waits[--pp->nwaits];
        int route;
        st = mrc__sim_signal_route(pp->s, node, pp->chains[wt.chain].it.node,
                                   &route);
        if (st == MRC_OK)
            st = mrc__sim_pipe_post(pp, route, MRC__SIM_WAKE, wt.chain, 0, 0);
    }
    return st;
}

/* A node at a BARRIER: the group's last node to reach it releases every
 * one of them the group's largest path latency later. */
static mrc_status_t barrier_reach(mrc__sim_pipe_t *pp, int i, int32_t flag)
{
    int g = pp->s->p->nodes[pp->chains[i].it.node].group;
    if (mrc__grow((void **)&pp->bars, &pp->cap_bars, pp->nbars + 2,
                  sizeof *pp->bars))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    mrc__sim_pbar_t *count = NULL;
    for (int j = 0; j < pp->nbars && !count; j++)
        if (pp->bars[j].chain < 0 && pp->bars[j].group == g &&
            pp->bars[j].flag == flag)
            count = &pp->bars[j];
    if (!count) {
        count = &pp->bars[pp->nbars++];
        *count = (mrc__sim_pbar_t){g, flag, -1, 0};
    }
    pp->bars[pp->nbars++] = (mrc__sim_pbar_t){g, flag, i, 0};
    if (++count->count < pp->group_chains[g])
        return MRC_OK;
    int route;
    mrc_status_t st = mrc__sim_barrier_route(pp->s, g, &route);
    double release = pp->now + pp->s->routes[route].latency;
    for (int j = pp->nbars - 1; j >= 0 && st == MRC_OK; j--) {
        mrc__sim_pbar_t b = pp->bars[j];
        if (b.group != g || b.flag != flag)
            continue;
        pp->bars[j] = pp->bars[--pp->nbars];
        if (b.chain >= 0)
            st = wake_at(pp, b.chain, release);
    }
    return st;
}

/* A memory-semantic op of chain i: 1 if the chain now waits (for a GET's
 * data, a signal, a barrier, its own work), 0 if it runs on, -1 on an
 * error (*st). A GET moves its bytes from the owner to the reader like a
 * message; an EXPOSE by copy is the node's own work (the node model's:
 * without one it costs nothing). */
static int memory_op(mrc__sim_pipe_t *pp, int i, mrc_status_t *st)
{
    mrc__sim_chain_t *ch = &pp->chains[i];
    const mrc__op_t *op = &ch->op;
    int node = ch->it.node, route;
    switch (op->kind) {
    case MRC__GET: {
        if (op->peer == node)
            return own_work(pp, i, st);
        double bytes = (double)op->count * (double)pp->esize;
        double work = mrc__sim_node_msg_work(pp->s, node, op, bytes);
        if ((*st = mrc__sim_path_route(pp->s, op->peer, node, &route)) !=
                MRC_OK ||
            (*st = mrc__sim_pipe_post_work(pp, route, MRC__SIM_WAKE, i, 0,
                                           bytes, work)) != MRC_OK)
            return -1;
        return 1;
    }
    case MRC__SIGNAL:
        *st = signal_now(pp, node, mrc__sim_call_flag(pp, i, op->flag));
        return *st == MRC_OK ? 0 : -1;
    case MRC__WAIT: {
        if (op->peer == node)
            return 0;
        int32_t flag = mrc__sim_call_flag(pp, i, op->flag);
        int32_t *slot =
            mrc__msgmap_find(&pp->flags, op->peer, -1, (uint64_t)flag);
        if (*slot >= 0) { /* set already: its message may be on its way */
            double set;
            memcpy(&set, &pp->flags.pool[*slot].w[0], sizeof set);
            if ((*st = mrc__sim_signal_route(pp->s, op->peer, node, &route)) !=
                    MRC_OK ||
                (*st = wake_at(pp, i, set + pp->s->routes[route].latency)) !=
                    MRC_OK)
                return -1;
            return 1;
        }
        if (mrc__grow((void **)&pp->waits, &pp->cap_waits, pp->nwaits + 1,
                      sizeof *pp->waits)) {
            *st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
            return -1;
        }
        pp->waits[pp->nwaits++] = (mrc__sim_pwait_t){i, op->peer, flag};
        return 1;
    }
    case MRC__BARRIER:
        *st = barrier_reach(pp, i, mrc__sim_call_flag(pp, i, op->flag));
        return *st == MRC_OK ? 1 : -1;
    default: /* a local copy or scaling: the node model's own work */
        return own_work(pp, i, st);
    }
}

/* Runs a chain until it waits or ends. */
static mrc_status_t run_chain_now(mrc__sim_pipe_t *pp, int i)
{
    mrc__sim_chain_t *ch = &pp->chains[i];
    mrc_status_t st = MRC_OK;
    while (!ch->done) {
        int rr = mrc__cursor_peek(ch, &st);
        if (rr < 0)
            return st;
        if (rr == 0)
            break;
        if (ch->op.kind == MRC__SEND) {
            int waits = 0;
            st = mrc__sim_pipe_start_flow(pp, i, &waits);
            if (st != MRC_OK || waits)
                return st;
        } else if (ch->op.kind == MRC__RECV) {
            uint64_t tag = mrc__sim_call_tag(pp, i, ch->op.tag);
            int32_t *link =
                mrc__msgmap_find(&pp->msgs, ch->op.ring_peer, ch->it.node, tag);
            if (*link < 0) { /* not here yet: wait for it */
                mrc__msg_t *m = mrc__msgmap_add(&pp->msgs, ch->op.ring_peer,
                                                ch->it.node, tag);
                if (!m)
                    return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
                m->i[0] = i;
                return MRC_OK;
            }
            mrc__msgmap_remove(&pp->msgs, link);
            int waits = own_work(pp, i, &st);
            if (waits != 0)
                return st;
        } else {
            int waits = memory_op(pp, i, &st);
            if (waits < 0)
                return st;
            if (waits)
                return MRC_OK;
        }
        mrc__cursor_take(ch);
    }
    return mrc__sim_calls_chain_ended(pp, i);
}

/* The pipelined walk's scratch, per chain, channel and physical link. Of
 * a run of calls (calls > 1), call 0's chains are ready, the rest wait
 * for their node to begin their call; the barriers count a call's
 * chains, and the node model's crowding is a call's. */
static mrc_status_t pipe_init(mrc__sim_pipe_t *pp, mrc__sim_t *s,
                              mrc__sim_chain_t *chains, int nchains, int calls)
{
    int per_call = calls > 1 ? nchains / calls : nchains;
    pp->ready = malloc(((size_t)nchains + 1) * sizeof *pp->ready);
    pp->phys_active = calloc((size_t)s->num_phys + 1, sizeof *pp->phys_active);
    pp->busy_from = calloc((size_t)s->num_phys + 1, sizeof *pp->busy_from);
    pp->q_head = malloc(((size_t)s->num_chan + 1) * sizeof *pp->q_head);
    pp->q_tail = malloc(((size_t)s->num_chan + 1) * sizeof *pp->q_tail);
    pp->q_busy = calloc((size_t)s->num_chan + 1, 1);
    pp->group_chains =
        calloc((size_t)s->p->num_groups + 1, sizeof *pp->group_chains);
    pp->worked = calloc((size_t)nchains + 1, 1);
    if (!pp->ready || !pp->phys_active || !pp->busy_from || !pp->q_head ||
        !pp->q_tail || !pp->q_busy || !pp->group_chains || !pp->worked ||
        mrc__msgmap_init(&pp->msgs, (size_t)nchains) ||
        (s->memory && mrc__msgmap_init(&pp->flags, (size_t)nchains)))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    for (int i = 0; i < per_call; i++)
        pp->group_chains[s->p->nodes[chains[i].it.node].group]++;
    for (int c = 0; c <= s->num_chan; c++)
        pp->q_head[c] = pp->q_tail[c] = -1;
    pp->q_free = -1;
    for (int i = 0; i < per_call; i++)
        pp->ready[pp->nready++] = i;
    mrc_status_t st = mrc__sim_calls_init(pp, calls, per_call);
    return st == MRC_OK ? mrc__sim_node_crowd(s, chains, per_call) : st;
}

static void pipe_free(mrc__sim_pipe_t *pp)
{
    free(pp->pending);
    free(pp->act);
    free(pp->meta);
    free(pp->heap);
    free(pp->ready);
    free(pp->phys_active);
    free(pp->busy_from);
    free(pp->queue);
    free(pp->q_head);
    free(pp->q_tail);
    free(pp->q_busy);
    free(pp->group_chains);
    free(pp->worked);
    free(pp->waits);
    free(pp->bars);
    mrc__msgmap_free(&pp->msgs);
    mrc__msgmap_free(&pp->flags);
    mrc__sim_calls_free(&pp->run);
}

/* The time of the next event: an arrival, or a flow in flight ending
 * (its rates shared anew if the flows changed). */
static mrc_status_t next_event(mrc__sim_pipe_t *pp, mrc__sim_ws_t *w,
                               double *next)
{
    *next = pp->nheap ? pp->heap[0].time : INFINITY;
    if (pp->nact == 0)
        return MRC_OK;
    if (pp->dirty) {
        mrc_status_t st = mrc__sim_reserve_for(pp->s, w, pp->act, pp->nact);
        if (st != MRC_OK)
            return st;
        mrc__sim_node_cores(pp->s, pp->act, pp->nact);
        mrc__sim_share(pp->s, pp->act, pp->nact, w);
        pp->dirty = 0;
    }
    for (int f = 0; f < pp->nact; f++)
        if (pp->act[f].rate > 0)
            *next =
                fmin(*next, pp->now + pp->act[f].remaining / pp->act[f].rate);
    return MRC_OK;
}

/* Moves time on to `next`: flows move, those finished arrive, and the
 * arrivals due are delivered. */
static mrc_status_t move_on(mrc__sim_pipe_t *pp, double next)
{
    double dt = next - pp->now;
    mrc_status_t st = MRC_OK;
    for (int f = 0; f < pp->nact; f++)
        pp->act[f].remaining -= pp->act[f].rate * dt;
    pp->now = next;
    for (int f = pp->nact - 1; f >= 0 && st == MRC_OK; f--)
        if (mrc__sim_flow_over(&pp->act[f], pp->now)) {
            /* (its arrival, and its sender's wake) */
            if (mrc__grow((void **)&pp->heap, &pp->cap_heap, pp->nheap + 2,
                          sizeof *pp->heap))
                return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
            st = mrc__sim_pipe_finish_flow(pp, f);
        }
    while (st == MRC_OK && pp->nheap > 0 &&
           pp->heap[0].time <= pp->now * (1 + 1e-12)) {
        mrc__sim_arrival_t a = mrc__sim_pipe_arrival_pop(pp);
        st = deliver(pp, &a);
    }
    return st;
}

mrc_status_t mrc__sim_run_pipelined(mrc__sim_t *s, mrc__sim_chain_t *chains,
                                    int nchains, int calls, size_t esize,
                                    mrc__sim_ws_t *w, mrc__sim_acct_t *acct)
{
    mrc__sim_pipe_t pp;
    memset(&pp, 0, sizeof pp);
    pp.s = s;
    pp.chains = chains;
    pp.esize = esize;
    pp.acct = acct;
    mrc_status_t st = pipe_init(&pp, s, chains, nchains, calls);
    while (st == MRC_OK) {
        while (pp.nready > 0 && st == MRC_OK)
            st = run_chain_now(&pp, pp.ready[--pp.nready]);
        if (st == MRC_OK)
            st = mrc__sim_pipe_flush_posts(&pp);
        if (st != MRC_OK || (pp.nact == 0 && pp.nheap == 0))
            break;
        double next;
        if ((st = next_event(&pp, w, &next)) == MRC_OK)
            st = move_on(&pp, next);
    }
    for (int i = 0; st == MRC_OK && i < nchains; i++)
        if (!chains[i].done)
            st = mrc__error(MRC_ERR_INVALID_PROGRAM,
                            "simulation stalled: node %d waits at stream %d, "
                            "step %d (call %d of %d)",
                            chains[i].it.node, chains[i].op.stream,
                            chains[i].op.step, mrc__sim_call_of(&pp, i) + 1,
                            calls > 1 ? calls : 1);
    if (st == MRC_OK && calls > 1)
        mrc__sim_calls_book(&pp);
    else if (st == MRC_OK)
        acct->total_ns = pp.now;
    pipe_free(&pp);
    return st;
}
