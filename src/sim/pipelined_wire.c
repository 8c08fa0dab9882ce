/*
 * The pipelined walk's messages (pipelined.h): the arrivals in time
 * order, a message posted now and sorted with the others of its time,
 * queued behind the earlier ones on its sender's link or put on the wire
 * (the physical links' busy periods and energy accounted), and taken off
 * it when its bytes are through. The walk (pipelined.c) runs the chains
 * that post them and delivers what arrives.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/heap.h"
#include "sim/pipelined.h"

/* Arrivals at one time are delivered in an order that is the same at
 * every node: messages before wake-ups, each by its tag (stream, step,
 * chunk), a wake-up by its chain's stream and chunk. Which node's comes
 * first is left to the heap: where nodes share no queue it changes
 * nothing, and it does not depend on the node's number, so that a group
 * whose nodes all do the same runs alike at every node (the symmetric
 * walk, pipelined_sym.c, takes one node for all). */
static uint64_t arrival_order(const mrc__sim_pipe_t *pp, int32_t src,
                              int32_t dst, uint64_t tag)
{
    if (src == MRC__SIM_BEGIN) /* a node's next call: after the rest */
        return UINT64_MAX;
    if (src != MRC__SIM_WAKE)
        return tag;
    const mrc__chain_iter_t *it = &pp->chains[dst].it;
    return (uint64_t)1 << 63 |
           (uint64_t)mrc__sim_call_of(pp, dst) << MRC__SIM_CALL_SHIFT |
           (uint64_t)it->k << 24 | (uint64_t)it->chunk;
}

static int arrival_before(const void *x, const void *y)
{
    const mrc__sim_arrival_t *a = x, *b = y;
    return a->time < b->time || (a->time == b->time && a->order < b->order);
}

void mrc__sim_pipe_arrival_push(mrc__sim_pipe_t *pp, mrc__sim_arrival_t a)
{
    a.order = arrival_order(pp, a.src, a.dst, a.tag);
    mrc__heap_push(pp->heap, &pp->nheap, sizeof a, &a, arrival_before);
}

mrc__sim_arrival_t mrc__sim_pipe_arrival_pop(mrc__sim_pipe_t *pp)
{
    mrc__sim_arrival_t top;
    mrc__heap_pop(pp->heap, &pp->nheap, sizeof top, &top, arrival_before);
    return top;
}

/* Posts `bytes` over `route` at the current time ((src, dst, tag) is
 * what arrives): it takes its link, or queues behind the earlier messages
 * on it, once the chains due now have run (flush_posts). */
mrc_status_t mrc__sim_pipe_post(mrc__sim_pipe_t *pp, int route, int32_t src,
                                int32_t dst, uint64_t tag, double bytes)
{
    return mrc__sim_pipe_post_work(pp, route, src, dst, tag, bytes, bytes);
}

mrc_status_t mrc__sim_pipe_post_work(mrc__sim_pipe_t *pp, int route,
                                     int32_t src, int32_t dst, uint64_t tag,
                                     double bytes, double work)
{
    const mrc__sim_route_t *rt = &pp->s->routes[route];
    if (rt->len == 0 || bytes == 0) {
        mrc__sim_arrival_t a = {
            pp->now + mrc__sim_node_latency(pp->s, route, src, dst, tag), src,
            dst, tag, 0};
        if (mrc__grow((void **)&pp->heap, &pp->cap_heap, pp->nheap + 1,
                      sizeof *pp->heap))
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        mrc__sim_pipe_arrival_push(pp, a);
        return MRC_OK;
    }
    if (mrc__grow((void **)&pp->pending, &pp->cap_pending, pp->npending + 1,
                  sizeof *pp->pending))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    pp->pending[pp->npending] = (mrc__sim_pending_t){
        {{work, 0, bytes, route, 0, 0}, {pp->now, src, dst, tag, -1}, -1},
        arrival_order(pp, src, dst, tag),
        pp->npending};
    pp->npending++;
    return MRC_OK;
}

/* Puts a message on the wire now. */
static mrc_status_t activate(mrc__sim_pipe_t *pp, const mrc__sim_flow_t *f,
                             const mrc__sim_pmeta_t *m)
{
    const mrc__sim_route_t *rt = &pp->s->routes[f->route];
    if (mrc__grow((void **)&pp->act, &pp->cap_act, pp->nact + 1,
                  sizeof *pp->act) ||
        mrc__grow((void **)&pp->meta, &pp->cap_meta, pp->nact + 1,
                  sizeof *pp->meta))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    pp->act[pp->nact] = *f;
    pp->meta[pp->nact] = *m;
    pp->meta[pp->nact].start = pp->now;
    pp->nact++;
    pp->dirty = 1;
    pp->q_busy[pp->s->chan_pool[rt->first]] = 1;
    /* A physical link whose busy period starts now pays for its gap: on
     * throughout, or off and woken (whichever costs less). */
    for (int q = 0; q < rt->len; q++) {
        int ph = pp->s->phys_pool[rt->first + q];
        if (ph < 0) /* a node's memory (node model): no link */
            continue;
        if (pp->phys_active[ph]++ == 0) {
            double gap = pp->now - pp->acct->phys_last[ph];
            pp->acct->phys_on[ph] += fmin(gap, pp->acct->wake_ns);
            pp->busy_from[ph] = pp->now;
        }
    }
    return MRC_OK;
}

/* A message posted now: on the wire, or queued behind the earlier ones
 * on its first link. */
static mrc_status_t enqueue(mrc__sim_pipe_t *pp, const mrc__sim_queued_t *item)
{
    int q = pp->s->chan_pool[pp->s->routes[item->f.route].first];
    if (pp->q_busy[q]) { /* the link is sending an earlier message */
        /* A slot of the pool freed earlier, or a new one: the pool holds
         * what waits at once, not every message of the run. */
        int i = pp->q_free;
        if (i >= 0)
            pp->q_free = pp->queue[i].next;
        else if (mrc__grow((void **)&pp->queue, &pp->cap_queue, pp->nqueue + 1,
                           sizeof *pp->queue))
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        else
            i = pp->nqueue++;
        pp->queue[i] = *item;
        pp->queue[i].next = -1;
        if (pp->q_tail[q] >= 0)
            pp->queue[pp->q_tail[q]].next = i;
        else
            pp->q_head[q] = i;
        pp->q_tail[q] = i;
        return MRC_OK;
    }
    return activate(pp, &item->f, &item->m);
}

static int pending_cmp(const void *a, const void *b)
{
    const mrc__sim_pending_t *x = a, *y = b;
    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The messages posted at this time take their links in the order of
 * arrival_order, not in the order their chains ran: a queue that two
 * nodes post to at once (a memory of the node model, which its own
 * reductions and its predecessor's copies share) then takes them in the
 * same order at every node. */
mrc_status_t mrc__sim_pipe_flush_posts(mrc__sim_pipe_t *pp)
{
    if (pp->npending > 1)
        qsort(pp->pending, (size_t)pp->npending, sizeof *pp->pending,
              pending_cmp);
    mrc_status_t st = MRC_OK;
    for (int i = 0; i < pp->npending && st == MRC_OK; i++)
        st = enqueue(pp, &pp->pending[i].item);
    pp->npending = 0;
    return st;
}

/* A SEND: its message over its hop. */
mrc_status_t mrc__sim_pipe_start_flow(mrc__sim_pipe_t *pp, int i, int *waits)
{
    *waits = 0;
    const mrc__sim_chain_t *ch = &pp->chains[i];
    const mrc_program_t *p = pp->s->p;
    const mrc__op_t *op = &ch->op;
    const mrc__node_stream_t *ns = mrc__node_stream(p, ch->it.node, op->stream);
    int route = (int)(ns - p->node_streams);
    if (p->cfg.algo != MRC_ALGO_RINGS) { /* the tree's: a shortest path */
        mrc_status_t st =
            mrc__sim_path_route(pp->s, ch->it.node, op->ring_peer, &route);
        if (st != MRC_OK)
            return st;
    }
    /* A routed hop is timed over its route as one message (its relays'
     * ops are not walked): to the ring's next node; in the symmetric
     * walk, to the node itself from its predecessor. */
    double bytes = (double)op->count * (double)pp->esize;
    double work = mrc__sim_node_msg_work(pp->s, ch->it.node, op, bytes);
    mrc_status_t st = mrc__sim_node_send_route(pp->s, ch->it.node,
                                               op->ring_peer, bytes, &route);
    if (st != MRC_OK)
        return st;
    uint64_t tag = mrc__sim_call_tag(pp, i, op->tag);
    int posted = pp->npending;
    st = pp->s->sym_self
             ? mrc__sim_pipe_post_work(pp, route, ns->prev, ch->it.node, tag,
                                       bytes, work)
             : mrc__sim_pipe_post_work(pp, route, ch->it.node, op->ring_peer,
                                       tag, bytes, work);
    /* Through shm's slots a send is its sender's core's copy, done once
     * its bytes are through: the chain goes on then, not as it posts
     * them (posted and left, a broadcast's root ran its next call's
     * local copy beside this send: 0.55 of a 256 KiB loop's time at 2
     * ranks). Also with more nodes than cores, where the sender is not
     * counted busy meanwhile (mrc__sim_node_cores): it yields its core
     * as it waits. (A send read in place, shm's rendezvous or the
     * threads', holds its sender's call, not its chain: not modelled.) */
    if (st == MRC_OK && pp->npending > posted &&
        mrc__sim_route_slots(&pp->s->routes[route])) {
        pp->pending[posted].item.m.sender = i;
        *waits = 1;
    }
    return st;
}

mrc_status_t mrc__sim_pipe_finish_flow(mrc__sim_pipe_t *pp, int f)
{
    const mrc__sim_flow_t *fl = &pp->act[f];
    const mrc__sim_route_t *rt = &pp->s->routes[fl->route];
    mrc__sim_acct_t *a = pp->acct;
    double dur = pp->now - pp->meta[f].start;
    for (int q = 0; q < rt->len; q++) {
        int ch = pp->s->chan_pool[rt->first + q];
        int ph = pp->s->phys_pool[rt->first + q];
        if (ch >= pp->s->link_chan) /* a node's memory: no link */
            continue;
        a->r->link_bytes[ch] += fl->bytes;
        a->r->link_utilisation[ch] += fl->bytes / pp->s->cap[ch];
        a->move_j += fl->bytes * 8 * a->pj * 1e-12;
        if (--pp->phys_active[ph] == 0) {
            a->phys_on[ph] += pp->now - pp->busy_from[ph];
            a->phys_last[ph] = pp->now;
        }
    }
    (void)dur;
    const mrc__sim_pmeta_t *mt = &pp->meta[f];
    /* The node's latency (turns and all) and, through slots, the fill. */
    mrc__sim_arrival_t arr = {
        pp->now +
            mrc__sim_node_latency(pp->s, fl->route, mt->src, mt->dst, mt->tag) +
            mrc__sim_route_fill(rt, fl->bytes),
        mt->src, mt->dst, mt->tag, 0};
    mrc__sim_pipe_arrival_push(pp, arr);
    /* A slot send's own cost: its sender's core, held before its chain
     * goes on and before the next message it queued takes the core (the
     * chain's node: in the symmetric walk the message's src stands for
     * the walked node's predecessor). */
    int hold_route = -1;
    double hold = 0;
    if (mt->sender >= 0 &&
        !mrc__sim_node_hold(pp->s, pp->chains[mt->sender].it.node, &hold_route,
                            &hold))
        mrc__sim_pipe_arrival_push(
            pp, (mrc__sim_arrival_t){pp->now, MRC__SIM_WAKE, mt->sender, 0, 0});
    int sender = mt->sender;
    int q = pp->s->chan_pool[rt->first];
    pp->act[f] = pp->act[pp->nact - 1];
    pp->meta[f] = pp->meta[pp->nact - 1];
    pp->nact--;
    pp->dirty = 1;
    pp->q_busy[q] = 0;
    if (hold_route >= 0)
        return activate(
            pp, &(mrc__sim_flow_t){hold, 0, hold, hold_route, 0, 0},
            &(mrc__sim_pmeta_t){pp->now, MRC__SIM_WAKE, sender, 0, -1});
    int next = pp->q_head[q];
    if (next < 0)
        return MRC_OK;
    pp->q_head[q] = pp->queue[next].next;
    if (pp->q_head[q] < 0)
        pp->q_tail[q] = -1;
    mrc__sim_queued_t item =
        pp->queue[next]; /* activate may grow nothing here */
    pp->queue[next].next = pp->q_free;
    pp->q_free = next;
    return activate(pp, &item.f, &item.m);
}
