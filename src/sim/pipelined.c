/*
 * The pipelined walk: every chunk moves as soon as its data is ready. An
 * event simulation: chains (a node's ops of one stream and chunk) run
 * until they wait for a message; messages share the channels max-min
 * fairly (fluid.c) while in flight, a node sending on one link in the
 * order it posted; arrivals wake their receivers. Memory-semantic ops: a
 * GET is a transfer from the owner, a SIGNAL wakes its waiters a path's
 * latency later, a BARRIER releases its group when the last node reaches
 * it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/heap.h"
#include "sim/sim_internal.h"

/* ---- pipelined: every chunk moves as soon as its data is ready --------- */
typedef struct pmeta {
    double start;
    int32_t src, dst;
    uint64_t tag;
} pmeta_t;

typedef struct arrival {
    double time;
    int32_t src, dst;
    uint64_t tag;
    uint64_t order; /* among arrivals at one time: see arrival_order */
} arrival_t;

/* A message waiting for its sender's link: a node sends on one link in
 * the order it posted (its chunks pipeline instead of all sharing the
 * link at once). */
typedef struct queued {
    mrc__sim_flow_t f;
    pmeta_t m;
    int32_t next;
} queued_t;

/* A message posted at the current time, before it takes its link. */
typedef struct pending {
    queued_t item;
    uint64_t order; /* arrival_order of what it carries */
    int32_t seq;    /* the order posted, among equal orders */
} pending_t;

/* Memory-semantic ops in flight: a WAIT before its peer's SIGNAL, a node
 * at a BARRIER before the rest of its group. */
typedef struct pwait {
    int32_t chain, peer, flag;
} pwait_t;

typedef struct pbar {
    int32_t group, flag, chain; /* chain -1: the count of (group, flag) */
    int32_t count;
} pbar_t;

typedef struct pipe {
    mrc__sim_t *s;
    pending_t *pending; /* posted now, not yet on their links */
    int npending, cap_pending;
    queued_t *queue; /* pool of waiting messages */
    int nqueue, cap_queue;
    int32_t q_free; /* slots of the pool taken off their queue, -1 none */
    int32_t *q_head, *q_tail; /* per first channel, -1 empty */
    uint8_t *q_busy;          /* a message of this queue is in flight */
    mrc__sim_chain_t *chains;
    size_t esize;
    double now;
    mrc__sim_flow_t *act; /* the flows in flight, compact */
    pmeta_t *meta;        /* beside them */
    int nact, cap_act, cap_meta;
    arrival_t *heap; /* arrivals, by time */
    int nheap, cap_heap;
    mrc__msgmap_t msgs; /* arrived and unclaimed, or awaited: w[0] = 1
                           once arrived, i[0] = the waiting chain or -1 */
    int32_t *ready;
    int nready;
    int32_t *phys_active; /* flows in flight per physical link */
    double *busy_from;    /* start of its current busy period */
    mrc__sim_acct_t *acct;
    int dirty;
    mrc__msgmap_t flags; /* (node, -1, flag): w[0] = when it was set */
    pwait_t *waits;      /* WAITs whose flag is not set yet */
    int nwaits, cap_waits;
    pbar_t *bars; /* nodes at a barrier, and the counts */
    int nbars, cap_bars;
    int32_t *group_chains; /* [groups]: chains of the group */
    uint8_t *worked;       /* [chains]: its op's own work is under way (node
                              model) */
} pipe_t;

/* An arrival from WAKE wakes chain `dst` (a GET's data, a signal, a
 * barrier's release) instead of matching a RECV. */
enum { WAKE = -2 };

/* Arrivals at one time are delivered in an order that is the same at
 * every node: messages before wake-ups, each by its tag (stream, step,
 * chunk), a wake-up by its chain's stream and chunk. Which node's comes
 * first is left to the heap: where nodes share no queue it changes
 * nothing, and it does not depend on the node's number, so that a group
 * whose nodes all do the same runs alike at every node (the symmetric
 * walk, pipelined_sym.c, takes one node for all). */
static uint64_t arrival_order(const pipe_t *pp, int32_t src, int32_t dst,
                              uint64_t tag)
{
    if (src != WAKE)
        return tag;
    const mrc__chain_iter_t *it = &pp->chains[dst].it;
    return (uint64_t)1 << 63 | (uint64_t)it->k << 24 | (uint64_t)it->chunk;
}

static int arrival_before(const void *x, const void *y)
{
    const arrival_t *a = x, *b = y;
    return a->time < b->time || (a->time == b->time && a->order < b->order);
}

static void arrival_push(pipe_t *pp, arrival_t a)
{
    a.order = arrival_order(pp, a.src, a.dst, a.tag);
    mrc__heap_push(pp->heap, &pp->nheap, sizeof a, &a, arrival_before);
}

static arrival_t arrival_pop(pipe_t *pp)
{
    arrival_t top;
    mrc__heap_pop(pp->heap, &pp->nheap, sizeof top, &top, arrival_before);
    return top;
}

static mrc_status_t post(pipe_t *pp, int route, int32_t src, int32_t dst,
                         uint64_t tag, double bytes);

/* The node model's own work of chain i's op, once its data is there (a
 * reduction of what it received or read, a local copy): 1 if it is now
 * posted on the node's memory and the chain waits for it, 0 if there is
 * none or it is done (the op is then done), -1 on an error (*st). */
static int own_work(pipe_t *pp, int i, mrc_status_t *st)
{
    mrc__sim_chain_t *ch = &pp->chains[i];
    mrc__sim_flow_t f;
    if (pp->worked[i] ||
        !mrc__sim_local_flow(pp->s, ch->it.node, &ch->op, pp->esize, &f)) {
        pp->worked[i] = 0;
        return 0;
    }
    pp->worked[i] = 1;
    *st = post(pp, f.route, WAKE, i, 0, f.bytes);
    return *st == MRC_OK ? 1 : -1;
}

/* Chain i's op has what it waited for: it runs on, or (node model) waits
 * for its own work on it. */
static mrc_status_t resume(pipe_t *pp, int i)
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
static mrc_status_t deliver(pipe_t *pp, const arrival_t *a)
{
    if (a->src == WAKE)
        return resume(pp, a->dst);
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

static mrc_status_t activate(pipe_t *pp, const mrc__sim_flow_t *f,
                             const pmeta_t *m);

/* Posts `bytes` over `route` at the current time ((src, dst, tag) is
 * what arrives): it takes its link, or queues behind the earlier messages
 * on it, once the chains due now have run (flush_posts). */
static mrc_status_t post(pipe_t *pp, int route, int32_t src, int32_t dst,
                         uint64_t tag, double bytes)
{
    const mrc__sim_route_t *rt = &pp->s->routes[route];
    if (rt->len == 0 || bytes == 0) {
        arrival_t a = {pp->now + rt->latency, src, dst, tag, 0};
        if (mrc__grow((void **)&pp->heap, &pp->cap_heap, pp->nheap + 1,
                      sizeof *pp->heap))
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        arrival_push(pp, a);
        return MRC_OK;
    }
    if (mrc__grow((void **)&pp->pending, &pp->cap_pending, pp->npending + 1,
                  sizeof *pp->pending))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    pp->pending[pp->npending] = (pending_t){
        {{bytes, 0, bytes, route, 0, 0}, {pp->now, src, dst, tag}, -1},
        arrival_order(pp, src, dst, tag),
        pp->npending};
    pp->npending++;
    return MRC_OK;
}

/* A message posted now: on the wire, or queued behind the earlier ones
 * on its first link. */
static mrc_status_t enqueue(pipe_t *pp, const queued_t *item)
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
    const pending_t *x = a, *y = b;
    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The messages posted at this time take their links in the order of
 * arrival_order, not in the order their chains ran: a queue that two
 * nodes post to at once (a memory of the node model, which its own
 * reductions and its predecessor's copies share) then takes them in the
 * same order at every node. */
static mrc_status_t flush_posts(pipe_t *pp)
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
static mrc_status_t start_flow(pipe_t *pp, const mrc__sim_chain_t *ch)
{
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
    if (pp->s->sym_self)
        return post(pp, route, ns->prev, ch->it.node, op->tag, bytes);
    return post(pp, route, ch->it.node, op->ring_peer, op->tag, bytes);
}

/* Wakes chain i at time t (not before now). */
static mrc_status_t wake_at(pipe_t *pp, int i, double t)
{
    if (mrc__grow((void **)&pp->heap, &pp->cap_heap, pp->nheap + 1,
                  sizeof *pp->heap))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    arrival_push(pp, (arrival_t){fmax(t, pp->now), WAKE, i, 0, 0});
    return MRC_OK;
}

/* A node's SIGNAL: its flag is set now, and every node already waiting
 * for it hears of it a path's latency later (a zero-byte message). */
static mrc_status_t signal_now(pipe_t *pp, int node, int flag)
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
        pwait_t wt = pp->waits[j];
        if (wt.peer != node || wt.flag != flag)
            continue;
        pp->waits[j] = pp->waits[--pp->nwaits];
        int route;
        st = mrc__sim_signal_route(pp->s, node, pp->chains[wt.chain].it.node,
                                   &route);
        if (st == MRC_OK)
            st = post(pp, route, WAKE, wt.chain, 0, 0);
    }
    return st;
}

/* A node at a BARRIER: the group's last node to reach it releases every
 * one of them the group's largest path latency later. */
static mrc_status_t barrier_reach(pipe_t *pp, int i, int flag)
{
    int g = pp->s->p->nodes[pp->chains[i].it.node].group;
    if (mrc__grow((void **)&pp->bars, &pp->cap_bars, pp->nbars + 2,
                  sizeof *pp->bars))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    pbar_t *count = NULL;
    for (int j = 0; j < pp->nbars && !count; j++)
        if (pp->bars[j].chain < 0 && pp->bars[j].group == g &&
            pp->bars[j].flag == flag)
            count = &pp->bars[j];
    if (!count) {
        count = &pp->bars[pp->nbars++];
        *count = (pbar_t){g, flag, -1, 0};
    }
    pp->bars[pp->nbars++] = (pbar_t){g, flag, i, 0};
    if (++count->count < pp->group_chains[g])
        return MRC_OK;
    int route;
    mrc_status_t st = mrc__sim_barrier_route(pp->s, g, &route);
    double release = pp->now + pp->s->routes[route].latency;
    for (int j = pp->nbars - 1; j >= 0 && st == MRC_OK; j--) {
        pbar_t b = pp->bars[j];
        if (b.group != g || b.flag != flag)
            continue;
        pp->bars[j] = pp->bars[--pp->nbars];
        if (b.chain >= 0)
            st = wake_at(pp, b.chain, release);
    }
    return st;
}

/* A memory-semantic op of chain i: 1 if the chain now waits (for a GET's
 * data, a signal, a barrier), 0 if it runs on, -1 on an error (*st). A
 * GET moves its bytes from the owner to the reader like a message; a
 * node's own data and an EXPOSE cost nothing in this model. */
static int memory_op(pipe_t *pp, int i, mrc_status_t *st)
{
    mrc__sim_chain_t *ch = &pp->chains[i];
    const mrc__op_t *op = &ch->op;
    int node = ch->it.node, route;
    switch (op->kind) {
    case MRC__GET:
        if (op->peer == node)
            return own_work(pp, i, st);
        if ((*st = mrc__sim_path_route(pp->s, op->peer, node, &route)) !=
                MRC_OK ||
            (*st = post(pp, route, WAKE, i, 0,
                        (double)op->count * (double)pp->esize)) != MRC_OK)
            return -1;
        return 1;
    case MRC__SIGNAL:
        *st = signal_now(pp, node, op->flag);
        return *st == MRC_OK ? 0 : -1;
    case MRC__WAIT: {
        if (op->peer == node)
            return 0;
        int32_t *slot =
            mrc__msgmap_find(&pp->flags, op->peer, -1, (uint64_t)op->flag);
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
        pp->waits[pp->nwaits++] = (pwait_t){i, op->peer, op->flag};
        return 1;
    }
    case MRC__BARRIER:
        *st = barrier_reach(pp, i, op->flag);
        return *st == MRC_OK ? 1 : -1;
    default: /* a local copy or scaling: the node model's own work */
        return own_work(pp, i, st);
    }
}

/* Puts a message on the wire now. */
static mrc_status_t activate(pipe_t *pp, const mrc__sim_flow_t *f,
                             const pmeta_t *m)
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

/* Runs a chain until it waits for a message or ends. */
static mrc_status_t run_chain_now(pipe_t *pp, int i)
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
            st = start_flow(pp, ch);
            if (st != MRC_OK)
                return st;
        } else if (ch->op.kind == MRC__RECV) {
            int32_t *link = mrc__msgmap_find(&pp->msgs, ch->op.ring_peer,
                                             ch->it.node, ch->op.tag);
            if (*link < 0) { /* not here yet: wait for it */
                mrc__msg_t *m = mrc__msgmap_add(&pp->msgs, ch->op.ring_peer,
                                                ch->it.node, ch->op.tag);
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
    return MRC_OK;
}

static mrc_status_t finish_flow(pipe_t *pp, int f)
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
    arrival_t arr = {pp->now + rt->latency, pp->meta[f].src, pp->meta[f].dst,
                     pp->meta[f].tag, 0};
    arrival_push(pp, arr);
    int q = pp->s->chan_pool[rt->first];
    pp->act[f] = pp->act[pp->nact - 1];
    pp->meta[f] = pp->meta[pp->nact - 1];
    pp->nact--;
    pp->dirty = 1;
    pp->q_busy[q] = 0;
    int next = pp->q_head[q];
    if (next < 0)
        return MRC_OK;
    pp->q_head[q] = pp->queue[next].next;
    if (pp->q_head[q] < 0)
        pp->q_tail[q] = -1;
    queued_t item = pp->queue[next]; /* activate may grow nothing here */
    pp->queue[next].next = pp->q_free;
    pp->q_free = next;
    return activate(pp, &item.f, &item.m);
}

/* The pipelined walk's scratch, per chain, channel and physical link. */
static mrc_status_t pipe_init(pipe_t *pp, mrc__sim_t *s,
                              mrc__sim_chain_t *chains, int nchains)
{
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
    for (int i = 0; i < nchains; i++)
        pp->group_chains[s->p->nodes[chains[i].it.node].group]++;
    for (int c = 0; c <= s->num_chan; c++)
        pp->q_head[c] = pp->q_tail[c] = -1;
    pp->q_free = -1;
    for (int i = 0; i < nchains; i++)
        pp->ready[pp->nready++] = i;
    return MRC_OK;
}

static void pipe_free(pipe_t *pp)
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
}

/* The time of the next event: an arrival, or a flow in flight ending
 * (its rates shared anew if the flows changed). */
static mrc_status_t next_event(pipe_t *pp, mrc__sim_ws_t *w, double *next)
{
    *next = pp->nheap ? pp->heap[0].time : INFINITY;
    if (pp->nact == 0)
        return MRC_OK;
    if (pp->dirty) {
        mrc_status_t st = mrc__sim_reserve_for(pp->s, w, pp->act, pp->nact);
        if (st != MRC_OK)
            return st;
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
static mrc_status_t move_on(pipe_t *pp, double next)
{
    double dt = next - pp->now;
    mrc_status_t st = MRC_OK;
    for (int f = 0; f < pp->nact; f++)
        pp->act[f].remaining -= pp->act[f].rate * dt;
    pp->now = next;
    for (int f = pp->nact - 1; f >= 0 && st == MRC_OK; f--)
        if (pp->act[f].remaining <= 1e-9 * pp->act[f].bytes) {
            if (mrc__grow((void **)&pp->heap, &pp->cap_heap, pp->nheap + 1,
                          sizeof *pp->heap))
                return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
            st = finish_flow(pp, f);
        }
    while (st == MRC_OK && pp->nheap > 0 &&
           pp->heap[0].time <= pp->now * (1 + 1e-12)) {
        arrival_t a = arrival_pop(pp);
        st = deliver(pp, &a);
    }
    return st;
}

mrc_status_t mrc__sim_run_pipelined(mrc__sim_t *s, mrc__sim_chain_t *chains,
                                    int nchains, size_t esize, mrc__sim_ws_t *w,
                                    mrc__sim_acct_t *acct)
{
    pipe_t pp;
    memset(&pp, 0, sizeof pp);
    pp.s = s;
    pp.chains = chains;
    pp.esize = esize;
    pp.acct = acct;
    mrc_status_t st = pipe_init(&pp, s, chains, nchains);
    while (st == MRC_OK) {
        while (pp.nready > 0 && st == MRC_OK)
            st = run_chain_now(&pp, pp.ready[--pp.nready]);
        if (st == MRC_OK)
            st = flush_posts(&pp);
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
                            "step %d",
                            chains[i].it.node, chains[i].op.stream,
                            chains[i].op.step);
    if (st == MRC_OK)
        acct->total_ns = pp.now;
    pipe_free(&pp);
    return st;
}
