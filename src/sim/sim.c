/*
 * The link-level simulator, bulk-synchronous mode.
 *
 * The program's own expansion gives every node's sends, step by step. A
 * step's messages form flows over channels (link directions); the step is
 * a fluid simulation: rates are max-min fair over channel capacities,
 * recomputed whenever a flow finishes; each message also pays the latency
 * of every link on its route (cut-through). The step ends when its last
 * message has arrived, and the next starts (the barrier of BSP).
 *
 * For a ring of N nodes with bandwidth B and latency A, an allreduce of S
 * bytes on one bidirectional ring and one chunk is 2(N-1) steps of
 * A + S/(2NB) each: the unit tests hold the simulator to that exactly.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrc/sim.h"
#include "program/program_internal.h"
#include "sim/sim_internal.h"

typedef struct route {
    int32_t first, len; /* into chan_pool / phys_pool */
    double latency;     /* ns, sum over its links */
} route_t;

typedef struct sim {
    const mrc_program_t *p;
    const mrc_topo_t *t;
    int num_chan, num_phys;
    double *cap; /* bytes per ns */
    double *lat; /* ns */
    int32_t *phys_base; /* [links]: first physical link of the entry */
    route_t *routes;    /* [num_entries]: node-stream -> its hop */
    int32_t *chan_pool, *phys_pool;
    int pool_len, chan_cap, phys_cap;
    /* The program's port mask: the physical link of each port in use
     * (-1: none); the links a phase leaves idle are switched off. */
    int32_t *use_phys;
} sim_t;

typedef struct flow {
    double remaining; /* bytes */
    double rate;      /* bytes per ns */
    double bytes;
    int32_t route;
    int done;
} flow_t;

static void sim_free(sim_t *s)
{
    free(s->cap);
    free(s->lat);
    free(s->phys_base);
    free(s->routes);
    free(s->chan_pool);
    free(s->phys_pool);
    free(s->use_phys);
}

/* The physical link behind each port of the mask: a port's lane of its
 * link, as the routes count them. */
static mrc_status_t build_mask(sim_t *s)
{
    const mrc_program_t *p = s->p;
    mrc_status_t st = mrc__port_mask_ready(p);
    if (st != MRC_OK || p->num_port_phases == 0)
        return st;
    s->use_phys = malloc(((size_t)p->num_port_uses + 1) *
                         sizeof *s->use_phys);
    if (!s->use_phys)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    for (int i = 0; i < p->num_port_uses; i++) {
        int v = p->port_uses[i].node, port = p->port_uses[i].port;
        int link = -1, peer = -1;
        s->use_phys[i] = -1;
        if (mrc_topo_port(s->t, v, port, &link, &peer, NULL) != MRC_OK)
            return mrc__error(MRC_ERR_INVALID_ARG,
                              "the program's port mask names port %d of "
                              "node %d, which %s does not have (is it "
                              "compiled for this topology?)",
                              port, v, mrc_topo_name(s->t));
        const mrc_link_t *l = mrc_topo_link(s->t, link);
        int first_port = l->a == v ? l->port_a : l->port_b;
        s->use_phys[i] = s->phys_base[link] + (port - first_port);
    }
    return MRC_OK;
}

/* The links switched on for a step of phase ph (the mask's ports in use)
 * for dur ns, `times` over: the same figures as booking the step's
 * flows' links, taken from the program's mask instead. */
static void book_mask(const sim_t *s, int ph, double start, double dur,
                      double times, double *phys_on, double *phys_last,
                      double wake_ns, uint8_t *used)
{
    const mrc_program_t *p = s->p;
    if (ph < 0)
        return;
    int lo = p->port_phases[ph].first_use, hi = p->port_phases[ph + 1].first_use;
    for (int i = lo; i < hi; i++) {
        int q = s->use_phys[i];
        if (q < 0 || used[q])
            continue;
        used[q] = 1;
        double gap = start - phys_last[q];
        phys_on[q] += fmin(gap, wake_ns) + dur * times;
        phys_last[q] = start + dur * times;
    }
    for (int i = lo; i < hi; i++)
        if (s->use_phys[i] >= 0)
            used[s->use_phys[i]] = 0;
}

/* Channels and, for every node and stream, the channels and physical
 * links of its hop to the next node (from the program's route pool). */
static mrc_status_t build(sim_t *s)
{
    const mrc_program_t *p = s->p;
    const mrc_topo_t *t = s->t;
    int nl = mrc_topo_num_links(t);
    s->num_chan = 2 * nl;
    s->cap = malloc(((size_t)s->num_chan + 1) * sizeof *s->cap);
    s->lat = malloc(((size_t)s->num_chan + 1) * sizeof *s->lat);
    s->phys_base = malloc(((size_t)nl + 1) * sizeof *s->phys_base);
    s->routes = calloc((size_t)p->num_entries + 1, sizeof *s->routes);
    if (!s->cap || !s->lat || !s->phys_base || !s->routes)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    for (int i = 0; i < nl; i++) {
        const mrc_link_t *l = mrc_topo_link(t, i);
        s->cap[2 * i] = s->cap[2 * i + 1] = l->count * l->bandwidth_gbps;
        s->lat[2 * i] = s->lat[2 * i + 1] = l->latency_ns;
        s->phys_base[i] = s->num_phys;
        s->num_phys += l->count;
    }
    for (int u = 0; u < p->num_nodes; u++) {
        int g = p->nodes[u].group;
        if (g < 0)
            continue;
        for (int j = 0; j < p->groups[g].num_streams; j++) {
            int k = p->groups[g].first_stream + j;
            const mrc__node_stream_t *ns = mrc__node_stream(p, u, k);
            route_t *rt = &s->routes[ns - p->node_streams];
            rt->first = s->pool_len;
            if (ns->route < 0)
                continue;
            for (int q = p->route_off[ns->route];
                 q + 1 < p->route_off[ns->route + 1]; q++) {
                int v = p->route_nodes[q], link = -1, peer = -1;
                if (mrc_topo_port(t, v, p->route_ports[q], &link, &peer,
                                  NULL) != MRC_OK ||
                    peer != p->route_nodes[q + 1])
                    return mrc__error(MRC_ERR_INVALID_ARG,
                                      "the program's route leaves node %d by "
                                      "port %d, which %s does not lead to "
                                      "node %d (is it compiled for this "
                                      "topology?)",
                                      v, p->route_ports[q], mrc_topo_name(t),
                                      p->route_nodes[q + 1]);
                const mrc_link_t *l = mrc_topo_link(t, link);
                int dir = l->a == v ? 0 : 1;
                int first_port = dir ? l->port_b : l->port_a;
                if (mrc__grow((void **)&s->chan_pool, &s->chan_cap,
                              s->pool_len + 1, sizeof *s->chan_pool) ||
                    mrc__grow((void **)&s->phys_pool, &s->phys_cap,
                              s->pool_len + 1, sizeof *s->phys_pool))
                    return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
                s->chan_pool[s->pool_len] = 2 * link + dir;
                s->phys_pool[s->pool_len] =
                    s->phys_base[link] + (p->route_ports[q] - first_port);
                s->pool_len++;
                rt->latency += l->latency_ns;
            }
            rt->len = s->pool_len - rt->first;
        }
    }
    return MRC_OK;
}

/* ---- one step: max-min fair fluid flows --------------------------------- */

typedef struct hent {
    double key;
    int32_t chan, version;
} hent_t;
_Static_assert(offsetof(hent_t, key) == 0 && sizeof(hent_t) <= 64,
               "heap elements start with their key");

typedef struct step_ws {
    double *residual; /* per channel */
    int32_t *count;   /* unfrozen flows per channel */
    int32_t *chan_start, *chan_fill, *chan_flows; /* channel -> flows */
    int32_t *touched; /* channels in use this step */
    int num_touched;
    uint8_t *frozen;
    int cap_flows, cap_chan_flows;
    int32_t *version;  /* per channel */
    hent_t *heap;      /* room for every channel push of a step */
    int heap_n, heap_cap;
} step_ws_t;

/* A min-heap of (fair share, channel); entries go stale when a channel's
 * share changes, and carry the version they were pushed with. */
/* A binary min-heap of `n` elements of `size` bytes whose first member is
 * their key (a double); shared by the fluid step and the pipelined
 * events. */
static double heap_key(const char *heap, int i, size_t size)
{
    double k;
    memcpy(&k, heap + (size_t)i * size, sizeof k);
    return k;
}

static void heap_push(void *base, int *n, size_t size, const void *e)
{
    char *heap = base;
    double key;
    memcpy(&key, e, sizeof key);
    int i = (*n)++;
    while (i > 0 && heap_key(heap, (i - 1) / 2, size) > key) {
        memcpy(heap + (size_t)i * size, heap + (size_t)((i - 1) / 2) * size,
               size);
        i = (i - 1) / 2;
    }
    memcpy(heap + (size_t)i * size, e, size);
}

static void heap_pop(void *base, int *n, size_t size, void *top)
{
    char *heap = base, last[64];
    memcpy(top, heap, size);
    memcpy(last, heap + (size_t)--(*n) * size, size);
    double key;
    memcpy(&key, last, sizeof key);
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && heap_key(heap, c + 1, size) < heap_key(heap, c, size))
            c++;
        if (heap_key(heap, c, size) >= key)
            break;
        memcpy(heap + (size_t)i * size, heap + (size_t)c * size, size);
        i = c;
    }
    memcpy(heap + (size_t)i * size, last, size);
}

static void hpush(step_ws_t *w, double key, int chan)
{
    hent_t e = {key, chan, w->version[chan]};
    heap_push(w->heap, &w->heap_n, sizeof e, &e);
}

static hent_t hpop(step_ws_t *w)
{
    hent_t top;
    heap_pop(w->heap, &w->heap_n, sizeof top, &top);
    return top;
}

/* Max-min fair rates for the unfinished flows (progressive filling): the
 * channel with the smallest fair share freezes its flows at that share,
 * which lowers the others' residual capacity; repeat. A heap keeps it
 * O((channels + flow hops) log channels). */
static void allocate(const sim_t *s, flow_t *fl, int nf, step_ws_t *w)
{
    for (int i = 0; i < w->num_touched; i++) {
        int c = w->touched[i];
        w->residual[c] = s->cap[c];
        w->count[c] = 0;
        w->version[c]++;
    }
    for (int f = 0; f < nf; f++) {
        w->frozen[f] = (uint8_t)fl[f].done;
        if (fl[f].done)
            continue;
        const route_t *rt = &s->routes[fl[f].route];
        for (int q = 0; q < rt->len; q++)
            w->count[s->chan_pool[rt->first + q]]++;
    }
    w->heap_n = 0;
    for (int i = 0; i < w->num_touched; i++) {
        int c = w->touched[i];
        if (w->count[c] > 0)
            hpush(w, w->residual[c] / w->count[c], c);
    }
    while (w->heap_n > 0) {
        hent_t e = hpop(w);
        int best = e.chan;
        if (e.version != w->version[best] || w->count[best] == 0)
            continue;
        double share = e.key;
        for (int j = w->chan_start[best]; j < w->chan_fill[best]; j++) {
            int f = w->chan_flows[j];
            if (w->frozen[f])
                continue;
            w->frozen[f] = 1;
            fl[f].rate = share;
            const route_t *rt = &s->routes[fl[f].route];
            for (int q = 0; q < rt->len; q++) {
                int c = s->chan_pool[rt->first + q];
                w->residual[c] -= share;
                w->count[c]--;
                w->version[c]++;
                if (c != best && w->count[c] > 0)
                    hpush(w, w->residual[c] / w->count[c], c);
            }
        }
    }
}

/* Runs a step's flows to completion; returns its duration (ns). */
/* Channel -> flows for the flows fl[0..nf) (chan_fill counts, then
 * fills); the channels used are listed in touched. */
static void index_channels(const sim_t *s, const flow_t *fl, int nf,
                           step_ws_t *w)
{
    w->num_touched = 0;
    for (int f = 0; f < nf; f++) {
        const route_t *rt = &s->routes[fl[f].route];
        for (int q = 0; q < rt->len; q++) {
            int c = s->chan_pool[rt->first + q];
            if (w->chan_fill[c]++ == 0)
                w->touched[w->num_touched++] = c;
        }
    }
    int total = 0;
    for (int i = 0; i < w->num_touched; i++) {
        int c = w->touched[i];
        w->chan_start[c] = total;
        total += w->chan_fill[c];
        w->chan_fill[c] = w->chan_start[c];
    }
    for (int f = 0; f < nf; f++) {
        const route_t *rt = &s->routes[fl[f].route];
        for (int q = 0; q < rt->len; q++) {
            int c = s->chan_pool[rt->first + q];
            w->chan_flows[w->chan_fill[c]++] = f;
        }
    }
}

static void clear_index(step_ws_t *w)
{
    for (int i = 0; i < w->num_touched; i++)
        w->chan_fill[w->touched[i]] = 0;
    w->num_touched = 0;
}

/* Room in the work space for nf flows over `hops` channel crossings. */
static int reserve(step_ws_t *w, int nf, size_t hops, int num_chan)
{
    if (nf > w->cap_flows) {
        uint8_t *q = realloc(w->frozen, (size_t)nf);
        if (!q)
            return -1;
        w->frozen = q;
        w->cap_flows = nf;
    }
    int cap = w->cap_chan_flows;
    if (mrc__grow((void **)&w->chan_flows, &cap, (int)hops + 1,
                  sizeof *w->chan_flows))
        return -1;
    w->cap_chan_flows = cap;
    return mrc__grow((void **)&w->heap, &w->heap_cap,
                     (int)(hops + (size_t)num_chan + 1), sizeof *w->heap);
}

static double run_step(const sim_t *s, flow_t *fl, int nf, step_ws_t *w)
{
    index_channels(s, fl, nf, w);
    double now = 0, end = 0;
    int left = 0;
    for (int f = 0; f < nf; f++) {
        const route_t *rt = &s->routes[fl[f].route];
        if (fl[f].remaining <= 0 || rt->len == 0) {
            fl[f].done = 1;
            end = fmax(end, rt->latency);
        } else {
            left++;
        }
    }
    while (left > 0) {
        allocate(s, fl, nf, w);
        double dt = INFINITY;
        for (int f = 0; f < nf; f++)
            if (!fl[f].done && fl[f].rate > 0)
                dt = fmin(dt, fl[f].remaining / fl[f].rate);
        now += dt;
        for (int f = 0; f < nf; f++) {
            if (fl[f].done)
                continue;
            fl[f].remaining -= fl[f].rate * dt;
            /* Finished, allowing for rounding in the subtraction. */
            if (fl[f].remaining <= 1e-9 * fl[f].bytes) {
                fl[f].done = 1;
                left--;
                end = fmax(end, now + s->routes[fl[f].route].latency);
            }
        }
    }
    clear_index(w);
    return end;
}

typedef struct chain {
    mrc__chain_iter_t it;
    mrc__op_t op;
    int has_op, done;
} chain_t;

/* ---- pipelined: every chunk moves as soon as its data is ready --------- */

typedef struct pipe_acct {
    mrc_sim_result_t *r;
    double *phys_on;   /* ns a physical link was on */
    double *phys_last; /* end of its last busy period */
    double pj, wake_ns;
    double total_ns, move_j;
} pipe_acct_t;

typedef struct pmeta {
    double start;
    int32_t src, dst;
    uint64_t tag;
} pmeta_t;

typedef struct arrival {
    double time;
    int32_t src, dst;
    uint64_t tag;
} arrival_t;
_Static_assert(offsetof(arrival_t, time) == 0 && sizeof(arrival_t) <= 64,
               "heap elements start with their key");

/* A message waiting for its sender's link: a node sends on one link in
 * the order it posted (its chunks pipeline instead of all sharing the
 * link at once). */
typedef struct queued {
    flow_t f;
    pmeta_t m;
    int32_t next;
} queued_t;

typedef struct pipe {
    const sim_t *s;
    queued_t *queue; /* pool of waiting messages */
    int nqueue, cap_queue;
    int32_t *q_head, *q_tail; /* per first channel, -1 empty */
    uint8_t *q_busy;          /* a message of this queue is in flight */
    chain_t *chains;
    size_t esize;
    double now;
    flow_t *act;   /* the flows in flight, compact */
    pmeta_t *meta; /* beside them */
    int nact, cap_act, cap_meta;
    arrival_t *heap; /* arrivals, by time */
    int nheap, cap_heap;
    mrc__msgmap_t msgs; /* arrived and unclaimed, or awaited: w[0] = 1
                           once arrived, i[0] = the waiting chain or -1 */
    int32_t *ready;
    int nready;
    int32_t *phys_active; /* flows in flight per physical link */
    double *busy_from;    /* start of its current busy period */
    pipe_acct_t *acct;
    int dirty;
} pipe_t;

static void arrival_push(pipe_t *pp, arrival_t a)
{
    heap_push(pp->heap, &pp->nheap, sizeof a, &a);
}

static arrival_t arrival_pop(pipe_t *pp)
{
    arrival_t top;
    heap_pop(pp->heap, &pp->nheap, sizeof top, &top);
    return top;
}

/* A message arrives: the chain that waits for it runs on, or it waits
 * for its receiver. */
static mrc_status_t deliver(pipe_t *pp, const arrival_t *a)
{
    int32_t *link = mrc__msgmap_find(&pp->msgs, a->src, a->dst, a->tag);
    if (*link >= 0) {
        mrc__msg_t *m = &pp->msgs.pool[*link];
        pp->ready[pp->nready++] = m->i[0];
        pp->chains[m->i[0]].has_op = 0; /* its RECV is satisfied */
        mrc__msgmap_remove(&pp->msgs, link);
        return MRC_OK;
    }
    mrc__msg_t *m = mrc__msgmap_add(&pp->msgs, a->src, a->dst, a->tag);
    if (!m)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    m->w[0] = 1;
    m->i[0] = -1;
    return MRC_OK;
}

static mrc_status_t activate(pipe_t *pp, const flow_t *f, const pmeta_t *m);

/* Posts a message at the current time: on the wire, or queued behind the
 * sender's earlier message on the same link. */
static mrc_status_t start_flow(pipe_t *pp, const chain_t *ch)
{
    const mrc_program_t *p = pp->s->p;
    const mrc__op_t *op = &ch->op;
    const mrc__node_stream_t *ns = mrc__node_stream(p, ch->it.node,
                                                    op->stream);
    int route = (int)(ns - p->node_streams);
    double bytes = (double)op->count * (double)pp->esize;
    const route_t *rt = &pp->s->routes[route];
    if (rt->len == 0 || bytes == 0) {
        arrival_t a = {pp->now + rt->latency, ch->it.node, op->ring_peer,
                       op->tag};
        if (mrc__grow((void **)&pp->heap, &pp->cap_heap, pp->nheap + 1,
                      sizeof *pp->heap))
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        arrival_push(pp, a);
        return MRC_OK;
    }
    flow_t f = {bytes, 0, bytes, route, 0};
    pmeta_t m = {pp->now, ch->it.node, op->ring_peer, op->tag};
    int q = pp->s->chan_pool[rt->first];
    if (pp->q_busy[q]) { /* the link is sending an earlier message */
        if (mrc__grow((void **)&pp->queue, &pp->cap_queue, pp->nqueue + 1,
                      sizeof *pp->queue))
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        int i = pp->nqueue++;
        pp->queue[i] = (queued_t){f, m, -1};
        if (pp->q_tail[q] >= 0)
            pp->queue[pp->q_tail[q]].next = i;
        else
            pp->q_head[q] = i;
        pp->q_tail[q] = i;
        return MRC_OK;
    }
    return activate(pp, &f, &m);
}

/* Puts a message on the wire now. */
static mrc_status_t activate(pipe_t *pp, const flow_t *f, const pmeta_t *m)
{
    const route_t *rt = &pp->s->routes[f->route];
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
    chain_t *ch = &pp->chains[i];
    mrc_status_t st = MRC_OK;
    while (!ch->done) {
        if (!ch->has_op) {
            int rr = mrc__chain_next(&ch->it, &ch->op, &st);
            if (rr < 0)
                return st;
            if (rr == 0) {
                ch->done = 1;
                break;
            }
            ch->has_op = 1;
        }
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
        }
        ch->has_op = 0;
    }
    return MRC_OK;
}

static mrc_status_t finish_flow(pipe_t *pp, int f)
{
    const flow_t *fl = &pp->act[f];
    const route_t *rt = &pp->s->routes[fl->route];
    pipe_acct_t *a = pp->acct;
    double dur = pp->now - pp->meta[f].start;
    for (int q = 0; q < rt->len; q++) {
        int ch = pp->s->chan_pool[rt->first + q];
        int ph = pp->s->phys_pool[rt->first + q];
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
                     pp->meta[f].tag};
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
    return activate(pp, &item.f, &item.m);
}

static mrc_status_t run_pipelined(const sim_t *s, chain_t *chains,
                                  int nchains, size_t esize, step_ws_t *w,
                                  pipe_acct_t *acct)
{
    pipe_t pp;
    memset(&pp, 0, sizeof pp);
    pp.s = s;
    pp.chains = chains;
    pp.esize = esize;
    pp.acct = acct;
    mrc_status_t st = MRC_OK;
    pp.ready = malloc(((size_t)nchains + 1) * sizeof *pp.ready);
    pp.phys_active = calloc((size_t)s->num_phys + 1, sizeof *pp.phys_active);
    pp.busy_from = calloc((size_t)s->num_phys + 1, sizeof *pp.busy_from);
    pp.q_head = malloc(((size_t)s->num_chan + 1) * sizeof *pp.q_head);
    pp.q_tail = malloc(((size_t)s->num_chan + 1) * sizeof *pp.q_tail);
    pp.q_busy = calloc((size_t)s->num_chan + 1, 1);
    if (pp.q_head && pp.q_tail)
        for (int c = 0; c <= s->num_chan; c++)
            pp.q_head[c] = pp.q_tail[c] = -1;
    if (!pp.ready || !pp.phys_active || !pp.busy_from || !pp.q_head ||
        !pp.q_tail || !pp.q_busy ||
        mrc__msgmap_init(&pp.msgs, (size_t)nchains)) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
        goto done;
    }
    for (int i = 0; i < nchains; i++)
        pp.ready[pp.nready++] = i;
    for (;;) {
        while (pp.nready > 0 && st == MRC_OK)
            st = run_chain_now(&pp, pp.ready[--pp.nready]);
        if (st != MRC_OK || (pp.nact == 0 && pp.nheap == 0))
            break;
        double next = pp.nheap ? pp.heap[0].time : INFINITY;
        if (pp.nact > 0) {
            if (pp.dirty) {
                size_t hops = 0;
                for (int f = 0; f < pp.nact; f++)
                    hops += (size_t)s->routes[pp.act[f].route].len;
                if (reserve(w, pp.nact, hops, s->num_chan)) {
                    st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
                    break;
                }
                index_channels(s, pp.act, pp.nact, w);
                allocate(s, pp.act, pp.nact, w);
                clear_index(w);
                pp.dirty = 0;
            }
            for (int f = 0; f < pp.nact; f++)
                if (pp.act[f].rate > 0)
                    next = fmin(next,
                                pp.now + pp.act[f].remaining / pp.act[f].rate);
        }
        double dt = next - pp.now;
        for (int f = 0; f < pp.nact; f++)
            pp.act[f].remaining -= pp.act[f].rate * dt;
        pp.now = next;
        for (int f = pp.nact - 1; f >= 0; f--)
            if (pp.act[f].remaining <= 1e-9 * pp.act[f].bytes) {
                if (mrc__grow((void **)&pp.heap, &pp.cap_heap, pp.nheap + 1,
                              sizeof *pp.heap)) {
                    st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
                    goto done;
                }
                st = finish_flow(&pp, f);
                if (st != MRC_OK)
                    goto done;
            }
        while (st == MRC_OK && pp.nheap > 0 &&
               pp.heap[0].time <= pp.now * (1 + 1e-12)) {
            arrival_t a = arrival_pop(&pp);
            st = deliver(&pp, &a);
        }
    }
    for (int i = 0; st == MRC_OK && i < nchains; i++)
        if (!chains[i].done)
            st = mrc__error(MRC_ERR_INVALID_PROGRAM,
                            "simulation stalled: node %d waits at stream %d, "
                            "step %d",
                            chains[i].it.node, chains[i].op.stream,
                            chains[i].op.step);
    acct->total_ns = pp.now;
done:
    free(pp.act);
    free(pp.meta);
    free(pp.heap);
    free(pp.ready);
    free(pp.phys_active);
    free(pp.busy_from);
    free(pp.queue);
    free(pp.q_head);
    free(pp.q_tail);
    free(pp.q_busy);
    mrc__msgmap_free(&pp.msgs);
    return st;
}

/* ---- large groups: one representative step per ring phase ------------- */

mrc__sim_fast_t mrc__sim_fast = MRC__SIM_FAST_AUTO;

enum { FAST_MIN_GROUP = 4096 };

enum { PIPELINED_MAX_GROUP = 4096 };

/* Books one step's flows: bytes on channels, bits moved, and the physical
 * links in use (on for the step, after their gap or a wake-up). `times`
 * repeats the step (a ring phase's identical steps). */
static void book_step(const sim_t *s, const flow_t *fl, int nf, double start,
                      double dur, double times, pipe_acct_t *a,
                      uint8_t *used, int step)
{
    /* The links on: from the program's port mask where it has one (the
     * flows then book bytes only). */
    if (s->use_phys)
        book_mask(s, mrc__port_phase_of(s->p, step), start, dur, times,
                  a->phys_on, a->phys_last, a->wake_ns, used);
    for (int f = 0; f < nf; f++) {
        const route_t *rt = &s->routes[fl[f].route];
        for (int q = 0; q < rt->len; q++) {
            int ch = s->chan_pool[rt->first + q];
            int ph = s->phys_pool[rt->first + q];
            a->r->link_bytes[ch] += fl[f].bytes * times;
            a->r->link_utilisation[ch] += fl[f].bytes * times / s->cap[ch];
            a->move_j += fl[f].bytes * times * 8 * a->pj * 1e-12;
            if (s->use_phys || used[ph])
                continue;
            used[ph] = 1;
            double gap = start - a->phys_last[ph];
            a->phys_on[ph] += fmin(gap, a->wake_ns) + dur * times;
            a->phys_last[ph] = start + dur * times;
        }
    }
    for (int f = 0; f < nf && !s->use_phys; f++) {
        const route_t *rt = &s->routes[fl[f].route];
        for (int q = 0; q < rt->len; q++)
            used[s->phys_pool[rt->first + q]] = 0;
    }
}

/* BSP for a program of one group, without walking every message (N^2 per
 * ring). The steps of a ring loop move the same fragments over the same
 * routes, each node one per stream: one step is simulated, with every
 * fragment at the stream's largest size, and counted N-1 times per loop.
 * A chain (reduce, broadcast) is walked hop by hop: one sender per stream
 * and step. Exact when a stream's fragments are all one size (and always
 * for chains); otherwise the smaller fragments (one element less) are
 * counted at the larger size, which the full walk does only above
 * FAST_MIN_GROUP nodes, where it is out of reach. */
static mrc_status_t fast_bsp(const sim_t *s, step_ws_t *w, size_t esize,
                             pipe_acct_t *a, int *steps)
{
    const mrc_program_t *p = s->p;
    const mrc__group_t *g = &p->groups[0];
    int n = g->size, nf = 0, cap = 0;
    flow_t *fl = NULL;
    uint8_t *used = calloc((size_t)s->num_phys + 1, 1);
    mrc_status_t st = MRC_OK;
    if (!used)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    int whole = p->addressing == MRC__ADDR_WHOLE;
    int loops = 0;
    for (int i = 0; i < p->code_len; i++)
        loops += p->code[i].op == MRC__OP_LOOP;
    for (int step = 0; step < (whole ? n - 1 : 1) && st == MRC_OK; step++) {
        nf = 0;
        for (int k = g->first_stream; k < g->first_stream + g->num_streams;
             k++) {
            uint64_t len = p->streams[k].slice_len;
            if (len == 0)
                continue;
            int first = 0, last = n;
            uint64_t bytes = len * esize;
            if (whole) { /* the one sender of this hop */
                int rel = p->cfg.collective == MRC_REDUCE ? step + 1 : step;
                first = (p->streams[k].root_pos + rel) % n;
                last = first + 1;
            } else if (p->addressing == MRC__ADDR_SPLIT) {
                bytes = (len + (uint64_t)n - 1) / (uint64_t)n * esize;
            }
            for (int pos = first; pos < last; pos++) {
                int u = mrc__stream_node(p, k, pos % n);
                const mrc__node_stream_t *e = mrc__node_stream(p, u, k);
                if (mrc__grow((void **)&fl, &cap, nf + 1, sizeof *fl)) {
                    st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
                    break;
                }
                fl[nf++] = (flow_t){(double)bytes, 0, (double)bytes,
                                    (int32_t)(e - p->node_streams), 0};
            }
        }
        if (st != MRC_OK || nf == 0)
            continue;
        size_t hops = 0;
        for (int f = 0; f < nf; f++)
            hops += (size_t)s->routes[fl[f].route].len;
        if (reserve(w, nf, hops, s->num_chan)) {
            st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
            break;
        }
        double dur = run_step(s, fl, nf, w);
        double times = whole ? 1 : (double)loops * (n - 1);
        book_step(s, fl, nf, a->total_ns, dur, times, a, used, step);
        a->total_ns += dur * times;
        *steps += whole ? 1 : loops * (n - 1);
    }
    free(fl);
    free(used);
    return st;
}

/* Whether fast_bsp gives exactly what the full walk gives: chains, or
 * ring loops whose fragments are all one size. */
static int fast_is_exact(const mrc_program_t *p)
{
    if (p->addressing != MRC__ADDR_SPLIT)
        return 1;
    const mrc__group_t *g = &p->groups[0];
    for (int k = g->first_stream; k < g->first_stream + g->num_streams; k++)
        if (p->streams[k].slice_len % (uint64_t)g->size)
            return 0;
    return 1;
}

/* ---- the run ---------------------------------------------------------- */

static double bound_share(mrc_collective_t c, int n)
{
    switch (c) {
    case MRC_ALLREDUCE: return 2.0 * (n - 1) / n;
    case MRC_REDUCE_SCATTER:
    case MRC_ALLGATHER: return (double)(n - 1) / n;
    default: return 1;
    }
}

/* Chunks of stream k: the program's, or cfg->chunks per fragment. */
static int sim_chunks(const mrc_program_t *p, const mrc_sim_config_t *c,
                      int k)
{
    const mrc__group_t *g = &p->groups[p->streams[k].group];
    uint64_t len = p->streams[k].slice_len, n = (uint64_t)g->size;
    uint64_t maxf = p->addressing == MRC__ADDR_SPLIT ? (len + n - 1) / n
                                                     : len;
    uint64_t ce = c->chunks > 0
                      ? (maxf + (uint64_t)c->chunks - 1) / (uint64_t)c->chunks
                      : mrc__chunk_elems(p);
    return mrc__stream_chunks(p, k, ce ? ce : 1);
}

/* Memory a chain may take beside its own record (twice its size: the
 * array grows by doubling): in bsp, its flow of a step and the step's
 * index of it; pipelined, its messages in flight, in the map and in the
 * event heap, which grow with the ring (a chain runs 2(N-1) steps).
 * Measured (peak RSS over chains): bsp 220 bytes on hcm8; pipelined 630
 * on ring:4, 2.2 KiB on ring:16, 8.2 KiB on ring:64, so 136 N + 160: the
 * figures below keep above that. */
enum { SIM_CHAIN_BSP_BYTES = 128, SIM_CHAIN_PIPELINED_BYTES_PER_NODE = 192 };

/* Refuses, before any chain is made, a simulation whose chains (one per
 * node, stream and chunk) would not fit in the memory limit. */
static mrc_status_t check_sim_memory(const mrc_program_t *p,
                                     const mrc_sim_config_t *c)
{
    uint64_t chains = 0, need = 0;
    for (int u = 0; u < p->num_nodes; u++) {
        int g = p->nodes[u].group;
        if (g < 0)
            continue;
        uint64_t per = 2 * sizeof(chain_t) +
                       (c->mode == MRC_SIM_PIPELINED
                            ? SIM_CHAIN_PIPELINED_BYTES_PER_NODE *
                                  (uint64_t)p->groups[g].size
                            : SIM_CHAIN_BSP_BYTES);
        for (int j = 0; j < p->groups[g].num_streams; j++) {
            uint64_t k = (uint64_t)sim_chunks(p, c,
                                              p->groups[g].first_stream + j);
            chains += k;
            need = mrc__sat_mul_add(k, per, need);
        }
    }
    char what[96];
    snprintf(what, sizeof what, "simulation state (%llu chains of "
             "messages: use fewer --chunks or a smaller --size)",
             (unsigned long long)chains);
    mrc_status_t st = mrc__check_memory(need, what);
    if (st == MRC_OK && chains > INT32_MAX)
        st = mrc__error(MRC_ERR_INVALID_ARG,
                        "the simulation would walk %llu chains of messages, "
                        "more than %d", (unsigned long long)chains,
                        INT32_MAX);
    return st;
}

mrc_status_t mrc_sim_run(const mrc_program_t *p, const mrc_topo_t *t,
                         const mrc_sim_config_t *cfg, mrc_sim_result_t **out)
{
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_sim_run: out is NULL");
    *out = NULL;
    if (!p || !t)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_sim_run: NULL argument");
    if (mrc_topo_num_nodes(t) != p->num_nodes)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "the program has %d nodes, %s has %d",
                          p->num_nodes, mrc_topo_name(t),
                          mrc_topo_num_nodes(t));
    mrc_sim_config_t c = cfg ? *cfg : (mrc_sim_config_t){0};
    if (c.mode != MRC_SIM_BSP && c.mode != MRC_SIM_PIPELINED)
        return mrc__error(MRC_ERR_INVALID_ARG, "unknown simulation mode %d",
                          (int)c.mode);
    /* Pipelined walks every message, N^2 per ring: 4096 nodes take about
     * 20 s, 65536 would take hours. */
    for (int g = 0; c.mode == MRC_SIM_PIPELINED && g < p->num_groups; g++)
        if (p->groups[g].size > PIPELINED_MAX_GROUP)
            return mrc__error(MRC_ERR_INVALID_ARG,
                              "pipelined simulation walks every message and "
                              "takes groups of at most %d nodes; group %d "
                              "has %d: use --mode bsp",
                              PIPELINED_MAX_GROUP, g, p->groups[g].size);
    double pj = c.pj_per_bit > 0 ? c.pj_per_bit : 5;
    double watts = c.link_power_w > 0 ? c.link_power_w : 0.5;
    double wake_ns = (c.wake_us > 0 ? c.wake_us : 1) * 1e3;

    sim_t s;
    memset(&s, 0, sizeof s);
    s.p = p;
    s.t = t;
    mrc_sim_result_t *r = calloc(1, sizeof *r);
    chain_t *chains = NULL;
    flow_t *flows = NULL;
    step_ws_t w;
    memset(&w, 0, sizeof w);
    double *phys_on = NULL, *phys_last = NULL;
    uint8_t *phys_used = NULL;
    mrc_status_t st = r ? build(&s) : MRC_ERR_NO_MEMORY;
    if (st == MRC_OK)
        st = build_mask(&s);
    if (!r)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    if (st != MRC_OK)
        goto done;
    int nl = mrc_topo_num_links(t);
    r->num_links = nl;
    r->link_bytes = calloc((size_t)2 * nl + 1, sizeof *r->link_bytes);
    r->link_utilisation = calloc((size_t)2 * nl + 1, sizeof(double));
    phys_on = calloc((size_t)s.num_phys + 1, sizeof *phys_on);
    phys_last = calloc((size_t)s.num_phys + 1, sizeof *phys_last);
    phys_used = calloc((size_t)s.num_phys + 1, 1);
    w.residual = malloc(((size_t)s.num_chan + 1) * sizeof *w.residual);
    w.count = calloc((size_t)s.num_chan + 1, sizeof *w.count);
    w.chan_start = calloc((size_t)s.num_chan + 1, sizeof *w.chan_start);
    w.chan_fill = calloc((size_t)s.num_chan + 1, sizeof *w.chan_fill);
    w.touched = malloc(((size_t)s.num_chan + 1) * sizeof *w.touched);
    w.version = calloc((size_t)s.num_chan + 1, sizeof *w.version);
    if (!r->link_bytes || !r->link_utilisation || !phys_on || !phys_last ||
        !phys_used || !w.residual || !w.count || !w.chan_start ||
        !w.chan_fill || !w.touched || !w.version)
        goto oom;

    /* One chain per node, stream and chunk; they are walked in lockstep.
     * The fast path for one large group needs none. */
    int fast = c.mode == MRC_SIM_BSP && p->num_groups == 1 &&
               (mrc__sim_fast == MRC__SIM_FAST_ALWAYS ||
                (mrc__sim_fast == MRC__SIM_FAST_AUTO &&
                 (p->groups[0].size > FAST_MIN_GROUP || fast_is_exact(p))));
    if (!fast && (st = check_sim_memory(p, &c)) != MRC_OK)
        goto done;
    int nchains = 0, cap_chains = 0;
    for (int u = 0; u < (fast ? 0 : p->num_nodes); u++) {
        int g = p->nodes[u].group;
        if (g < 0)
            continue;
        for (int j = 0; j < p->groups[g].num_streams; j++) {
            int k = p->groups[g].first_stream + j;
            int chunks = sim_chunks(p, &c, k);
            for (int ch = 0; ch < chunks; ch++) {
                if (mrc__grow((void **)&chains, &cap_chains, nchains + 1,
                              sizeof *chains))
                    goto oom;
                memset(&chains[nchains], 0, sizeof *chains);
                mrc__chain_begin(&chains[nchains].it, p, u, k, ch, chunks,
                                 0);
                nchains++;
            }
        }
    }
    size_t esize = mrc_dtype_size(p->cfg.dtype);
    double total_ns = 0, move_j = 0;
    int cap_flows = 0, live = nchains;
    if (c.mode == MRC_SIM_PIPELINED || fast) {
        pipe_acct_t acct = {r, phys_on, phys_last, pj, wake_ns, 0, 0};
        st = fast ? fast_bsp(&s, &w, esize, &acct, &r->steps)
                  : run_pipelined(&s, chains, nchains, esize, &w, &acct);
        if (st != MRC_OK)
            goto done;
        total_ns = acct.total_ns;
        move_j = acct.move_j;
        live = 0;
    }
    for (int step = 0; live > 0; step++) {
        int nf = 0;
        live = 0;
        for (int i = 0; i < nchains; i++) {
            chain_t *ch = &chains[i];
            while (!ch->done) {
                if (!ch->has_op) {
                    int rr = mrc__chain_next(&ch->it, &ch->op, &st);
                    if (rr < 0)
                        goto done;
                    if (rr == 0) {
                        ch->done = 1;
                        break;
                    }
                    ch->has_op = 1;
                }
                if (ch->op.step > step)
                    break;
                ch->has_op = 0;
                if (ch->op.kind != MRC__SEND)
                    continue;
                if (mrc__grow((void **)&flows, &cap_flows, nf + 1,
                              sizeof *flows))
                    goto oom;
                double bytes = (double)ch->op.count * (double)esize;
                const mrc__node_stream_t *ns =
                    mrc__node_stream(p, ch->it.node, ch->op.stream);
                flows[nf++] = (flow_t){bytes, 0, bytes,
                                       (int32_t)(ns - p->node_streams), 0};
            }
            live += !ch->done;
        }
        if (nf == 0)
            continue;
        size_t hops = 0;
        for (int f = 0; f < nf; f++)
            hops += (size_t)s.routes[flows[f].route].len;
        if (reserve(&w, nf, hops, s.num_chan))
            goto oom;
        double dur = run_step(&s, flows, nf, &w);
        /* Accounting: bytes per channel; physical links in use. A link
         * idle for a gap is switched off only if the gap is longer than
         * its wake-up (the schedule is known in advance), so gating never
         * costs more than leaving it on. */
        for (int f = 0; f < nf; f++) {
            const route_t *rt = &s.routes[flows[f].route];
            for (int q = 0; q < rt->len; q++) {
                int ch = s.chan_pool[rt->first + q];
                int ph = s.phys_pool[rt->first + q];
                r->link_bytes[ch] += flows[f].bytes;
                r->link_utilisation[ch] += flows[f].bytes / s.cap[ch];
                move_j += flows[f].bytes * 8 * pj * 1e-12;
                if (s.use_phys || phys_used[ph])
                    continue;
                phys_used[ph] = 1;
                double gap = total_ns - phys_last[ph];
                phys_on[ph] += fmin(gap, wake_ns) + dur;
                phys_last[ph] = total_ns + dur;
            }
        }
        for (int f = 0; f < nf && !s.use_phys; f++) { /* clear the marks */
            const route_t *rt = &s.routes[flows[f].route];
            for (int q = 0; q < rt->len; q++)
                phys_used[s.phys_pool[rt->first + q]] = 0;
        }
        /* The links on: from the program's port mask where it has one. */
        if (s.use_phys)
            book_mask(&s, mrc__port_phase_of(p, step), total_ns, dur, 1,
                      phys_on, phys_last, wake_ns, phys_used);
        total_ns += dur;
        r->steps++;
    }
    double on_ns = 0;
    for (int ph = 0; ph < s.num_phys; ph++)
        on_ns += phys_on[ph];
    r->time_us = total_ns / 1e3;
    for (int ch = 0; ch < 2 * nl; ch++) {
        r->bytes_moved += r->link_bytes[ch];
        r->link_utilisation[ch] =
            total_ns > 0 ? r->link_utilisation[ch] / total_ns : 0;
    }
    r->energy_j = move_j + watts * on_ns * 1e-9;
    r->energy_no_gating_j = move_j + watts * s.num_phys * total_ns * 1e-9;
    /* Figures against the slowest node of the first group. */
    double data = (double)p->cfg.count * (double)esize;
    if (p->cfg.collective == MRC_REDUCE_SCATTER ||
        p->cfg.collective == MRC_ALLGATHER)
        data *= p->num_groups ? p->groups[0].size : 1;
    int n = p->num_groups ? p->groups[0].size : 1;
    r->algbw_gbps = total_ns > 0 ? data / total_ns : 0;
    r->busbw_gbps = r->algbw_gbps * (p->cfg.collective == MRC_ALLREDUCE
                                         ? 2.0 * (n - 1) / n
                                         : p->cfg.collective ==
                                                   MRC_REDUCE_SCATTER ||
                                               p->cfg.collective ==
                                                   MRC_ALLGATHER
                                               ? (double)(n - 1) / n
                                               : 1);
    double minbw = INFINITY;
    for (int g = 0; g < p->num_groups; g++)
        for (int i = 0; i < p->groups[g].size; i++)
            minbw = fmin(minbw, mrc_topo_node_bandwidth_gbps(
                                    t, p->members[p->groups[g].first_member +
                                                  i]));
    r->bound_gbps = n > 1 && isfinite(minbw)
                        ? minbw / bound_share(p->cfg.collective, n)
                        : 0;
    r->efficiency = r->bound_gbps > 0 ? r->algbw_gbps / r->bound_gbps : 0;
    goto done;
oom:
    st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
done:
    free(chains);
    free(flows);
    free(w.residual);
    free(w.count);
    free(w.chan_start);
    free(w.chan_fill);
    free(w.chan_flows);
    free(w.touched);
    free(w.frozen);
    free(w.version);
    free(w.heap);
    free(phys_on);
    free(phys_last);
    free(phys_used);
    sim_free(&s);
    if (st != MRC_OK) {
        mrc_sim_result_destroy(r);
        return st;
    }
    *out = r;
    return MRC_OK;
}

void mrc_sim_result_destroy(mrc_sim_result_t *r)
{
    if (!r)
        return;
    free(r->link_bytes);
    free(r->link_utilisation);
    free(r);
}
