/*
 * The link-level simulator, bulk-synchronous mode.
 *
 * The program's own expansion gives every node's sends, step by step. A
 * step's messages form flows over channels (link directions); the step is
 * a fluid simulation: rates are max-min fair over channel capacities,
 * recomputed whenever a flow finishes; each message also pays the latency
 * of every link on its route (cut-through). The step ends when its last
 * message has arrived, and the next starts (the barrier of BSP). The
 * barrier spans one group: groups that run at once each walk their own
 * steps, sharing only the links they both use (run_bsp_groups).
 *
 * Memory-semantic programs (the direct families) are simulated from the
 * same expansion: a GET is a transfer from the owner to the reader over a
 * shortest path, a WAIT a zero-byte message from the signalling peer, a
 * BARRIER the group's largest path latency; EXPOSE costs nothing.
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
    /* Memory-semantic programs: routes beyond the program's (a GET's or a
     * WAIT's path from the peer, a group's barrier), found on demand. */
    int memory;
    int num_routes, cap_routes;    /* routes[] holds num_routes entries */
    mrc__msgmap_t paths;           /* (src, dst, 0): i[0] = its route */
    int32_t *bfs_prev, *bfs_queue; /* [nodes]: reaching link; the walk */
    double *bfs_lat;               /* [nodes]: latency from the start */
    int32_t *group_route;          /* [groups]: its barrier's route, or -1 */
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
    free(s->bfs_prev);
    free(s->bfs_queue);
    free(s->bfs_lat);
    free(s->group_route);
    mrc__msgmap_free(&s->paths); /* zeroed when unused */
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
static void book_mask(const sim_t *s, int ph, int group, double start,
                      double dur, double times, double *phys_on,
                      double *phys_last, double wake_ns, uint8_t *used)
{
    const mrc_program_t *p = s->p;
    if (ph < 0)
        return;
    int lo = p->port_phases[ph].first_use, hi = p->port_phases[ph + 1].first_use;
    for (int i = lo; i < hi; i++) {
        int q = s->use_phys[i];
        /* Groups walk their steps on their own clocks: a group's step
         * switches on its own nodes' ports only. */
        if (q < 0 || used[q] ||
            (group >= 0 && p->nodes[p->port_uses[i].node].group != group))
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
    s->num_routes = s->cap_routes = p->num_entries;
    if (!s->cap || !s->lat || !s->phys_base || !s->routes)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    s->memory = mrc__program_has_memory_ops(p);
    /* Families other than the rings send off the rings' hops. */
    if (p->cfg.algo != MRC_ALGO_RINGS) {
        int nn = p->num_nodes;
        s->bfs_prev = malloc(((size_t)nn + 1) * sizeof *s->bfs_prev);
        s->bfs_queue = malloc(((size_t)nn + 1) * sizeof *s->bfs_queue);
        s->bfs_lat = malloc(((size_t)nn + 1) * sizeof *s->bfs_lat);
        s->group_route = malloc(((size_t)p->num_groups + 1) *
                                sizeof *s->group_route);
        if (!s->bfs_prev || !s->bfs_queue || !s->bfs_lat || !s->group_route ||
            mrc__msgmap_init(&s->paths, (size_t)nn))
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
        for (int g = 0; g < p->num_groups; g++)
            s->group_route[g] = -1;
    }
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

/* ---- routes of the memory-semantic ops --------------------------------- */

/* A GET moves its bytes from the owner to the reader, and a WAIT's signal
 * comes from the peer: neither is a hop of the program's rings, so they
 * take a shortest path (in hops) over the topology, found on demand and
 * kept for the run, and share the links' bandwidth with every other
 * transfer. A BARRIER is a route of no link whose latency is the
 * group's largest path latency. */

/* A new route at the end of routes[], its hops to be appended. */
static int new_route(sim_t *s)
{
    if (mrc__grow((void **)&s->routes, &s->cap_routes, s->num_routes + 1,
                  sizeof *s->routes))
        return -1;
    s->routes[s->num_routes] = (route_t){s->pool_len, 0, 0};
    return s->num_routes++;
}

/* Breadth-first from src: bfs_prev[v] is the link that reached v (-2 at
 * src, -1 if unreached), bfs_lat[v] the latency of that path; stops once
 * dst is reached (-1: never). */
static void bfs(sim_t *s, int src, int dst)
{
    int nn = mrc_topo_num_nodes(s->t), head = 0, tail = 0;
    for (int v = 0; v < nn; v++)
        s->bfs_prev[v] = -1;
    s->bfs_prev[src] = -2;
    s->bfs_lat[src] = 0;
    s->bfs_queue[tail++] = src;
    while (head < tail) {
        int v = s->bfs_queue[head++];
        if (v == dst)
            return;
        const int *links = NULL;
        int nlk = mrc_topo_node_links(s->t, v, &links);
        for (int i = 0; i < nlk; i++) {
            const mrc_link_t *l = mrc_topo_link(s->t, links[i]);
            int w = l->a == v ? l->b : l->a;
            if (s->bfs_prev[w] == -1) {
                s->bfs_prev[w] = links[i];
                s->bfs_lat[w] = s->bfs_lat[v] + l->latency_ns;
                s->bfs_queue[tail++] = w;
            }
        }
    }
}

/* The node at the other end of link `link` from v. */
static int across(const sim_t *s, int link, int v)
{
    const mrc_link_t *l = mrc_topo_link(s->t, link);
    return l->a == v ? l->b : l->a;
}

/* The route from src to dst (src != dst): the shortest path in hops,
 * each hop on the first physical link of its link entry. */
static mrc_status_t path_route(sim_t *s, int src, int dst, int *route)
{
    int32_t *slot = mrc__msgmap_find(&s->paths, src, dst, 0);
    if (*slot >= 0) {
        *route = s->paths.pool[*slot].i[0];
        return MRC_OK;
    }
    bfs(s, src, dst);
    if (s->bfs_prev[dst] == -1)
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "node %d reads from or waits on node %d, which "
                          "%s does not connect to it",
                          dst, src, mrc_topo_name(s->t));
    /* The path backwards, into bfs_queue (done with), then forwards. */
    int hops = 0;
    for (int v = dst; v != src; v = across(s, s->bfs_prev[v], v))
        s->bfs_queue[hops++] = v;
    int r = new_route(s);
    if (r < 0)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    for (int h = hops - 1; h >= 0; h--) {
        int to = s->bfs_queue[h], link = s->bfs_prev[to];
        int from = across(s, link, to);
        const mrc_link_t *l = mrc_topo_link(s->t, link);
        if (mrc__grow((void **)&s->chan_pool, &s->chan_cap, s->pool_len + 1,
                      sizeof *s->chan_pool) ||
            mrc__grow((void **)&s->phys_pool, &s->phys_cap, s->pool_len + 1,
                      sizeof *s->phys_pool))
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
        s->chan_pool[s->pool_len] = 2 * link + (l->a == from ? 0 : 1);
        s->phys_pool[s->pool_len] = s->phys_base[link];
        s->pool_len++;
        s->routes[r].latency += l->latency_ns;
    }
    s->routes[r].len = hops;
    mrc__msg_t *m = mrc__msgmap_add(&s->paths, src, dst, 0);
    if (!m)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    m->i[0] = r;
    *route = r;
    return MRC_OK;
}

/* Group g's barrier: no link, the latency of its farthest pair (the last
 * node to arrive is heard by the farthest one that long after). */
static mrc_status_t barrier_route(sim_t *s, int g, int *route)
{
    if (s->group_route[g] >= 0) {
        *route = s->group_route[g];
        return MRC_OK;
    }
    const mrc_program_t *p = s->p;
    const mrc__group_t *gr = &p->groups[g];
    const int32_t *mem = p->members + gr->first_member;
    double worst = 0;
    for (int i = 0; i < gr->size; i++) {
        bfs(s, mem[i], -1);
        for (int j = 0; j < gr->size; j++) {
            if (s->bfs_prev[mem[j]] == -1)
                return mrc__error(MRC_ERR_INVALID_PROGRAM,
                                  "group %d's barrier: %s does not connect "
                                  "node %d to node %d",
                                  g, mrc_topo_name(s->t), mem[i], mem[j]);
            worst = fmax(worst, s->bfs_lat[mem[j]]);
        }
    }
    int r = new_route(s);
    if (r < 0)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    s->routes[r].latency = worst;
    s->group_route[g] = r;
    *route = r;
    return MRC_OK;
}

/* The BSP flow of a node's op: a SEND's message over its hop, a GET's
 * transfer from the owner, a WAIT's zero-byte signal from the peer, a
 * BARRIER's latency. 1 and *f; 0 if the op moves nothing (EXPOSE, SIGNAL,
 * local copies, a node's own data); -1 on an error (*st). */
static int op_flow(sim_t *s, int node, const mrc__op_t *op, size_t esize,
                   flow_t *f, mrc_status_t *st)
{
    const mrc_program_t *p = s->p;
    double bytes = (double)op->count * (double)esize;
    int route = -1;
    switch (op->kind) {
    case MRC__SEND: {
        const mrc__node_stream_t *ns = mrc__node_stream(p, node, op->stream);
        route = (int)(ns - p->node_streams);
        /* A send of another family than the rings (the tree's) takes a
         * shortest path, as a get does: its tables have no hops. */
        if (p->cfg.algo != MRC_ALGO_RINGS &&
            (*st = path_route(s, node, op->ring_peer, &route)) != MRC_OK)
            return -1;
        break;
    }
    case MRC__GET:
    case MRC__WAIT:
        if (op->peer == node)
            return 0;
        if ((*st = path_route(s, op->peer, node, &route)) != MRC_OK)
            return -1;
        if (op->kind == MRC__WAIT)
            bytes = 0;
        break;
    case MRC__BARRIER:
        if ((*st = barrier_route(s, p->nodes[node].group, &route)) != MRC_OK)
            return -1;
        bytes = 0;
        break;
    default:
        return 0;
    }
    *f = (flow_t){bytes, 0, bytes, route, 0};
    return 1;
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

typedef mrc__cursor_t chain_t;

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
    sim_t *s;
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
    mrc__msgmap_t flags; /* (node, -1, flag): w[0] = when it was set */
    pwait_t *waits;      /* WAITs whose flag is not set yet */
    int nwaits, cap_waits;
    pbar_t *bars;        /* nodes at a barrier, and the counts */
    int nbars, cap_bars;
    int32_t *group_chains; /* [groups]: chains of the group */
} pipe_t;

/* An arrival from WAKE wakes chain `dst` (a GET's data, a signal, a
 * barrier's release) instead of matching a RECV. */
enum { WAKE = -2 };

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
    if (a->src == WAKE) {
        pp->ready[pp->nready++] = a->dst;
        pp->chains[a->dst].has_op = 0; /* its op is done */
        return MRC_OK;
    }
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

/* Posts `bytes` over `route` at the current time: on the wire, or queued
 * behind the earlier message on its first link; (src, dst, tag) is what
 * arrives. */
static mrc_status_t post(pipe_t *pp, int route, int32_t src, int32_t dst,
                         uint64_t tag, double bytes)
{
    const route_t *rt = &pp->s->routes[route];
    if (rt->len == 0 || bytes == 0) {
        arrival_t a = {pp->now + rt->latency, src, dst, tag};
        if (mrc__grow((void **)&pp->heap, &pp->cap_heap, pp->nheap + 1,
                      sizeof *pp->heap))
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        arrival_push(pp, a);
        return MRC_OK;
    }
    flow_t f = {bytes, 0, bytes, route, 0};
    pmeta_t m = {pp->now, src, dst, tag};
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

/* A SEND: its message over its hop. */
static mrc_status_t start_flow(pipe_t *pp, const chain_t *ch)
{
    const mrc_program_t *p = pp->s->p;
    const mrc__op_t *op = &ch->op;
    const mrc__node_stream_t *ns = mrc__node_stream(p, ch->it.node,
                                                    op->stream);
    int route = (int)(ns - p->node_streams);
    if (p->cfg.algo != MRC_ALGO_RINGS) { /* the tree's: a shortest path */
        mrc_status_t st = path_route(pp->s, ch->it.node, op->ring_peer,
                                     &route);
        if (st != MRC_OK)
            return st;
    }
    /* A routed hop is timed over its route as one message (its relays'
     * ops are not walked): to the ring's next node. */
    return post(pp, route, ch->it.node, op->ring_peer, op->tag,
                (double)op->count * (double)pp->esize);
}

/* Wakes chain i at time t (not before now). */
static mrc_status_t wake_at(pipe_t *pp, int i, double t)
{
    if (mrc__grow((void **)&pp->heap, &pp->cap_heap, pp->nheap + 1,
                  sizeof *pp->heap))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    arrival_push(pp, (arrival_t){fmax(t, pp->now), WAKE, i, 0});
    return MRC_OK;
}

/* A node's SIGNAL: its flag is set now, and every node already waiting
 * for it hears of it a path's latency later (a zero-byte message). */
static mrc_status_t signal_now(pipe_t *pp, int node, int flag)
{
    int32_t *slot = mrc__msgmap_find(&pp->flags, node, -1, (uint64_t)flag);
    if (*slot < 0) {
        mrc__msg_t *m = mrc__msgmap_add(&pp->flags, node, -1,
                                        (uint64_t)flag);
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
        st = path_route(pp->s, node, pp->chains[wt.chain].it.node, &route);
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
    mrc_status_t st = barrier_route(pp->s, g, &route);
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
    chain_t *ch = &pp->chains[i];
    const mrc__op_t *op = &ch->op;
    int node = ch->it.node, route;
    switch (op->kind) {
    case MRC__GET:
        if (op->peer == node)
            return 0;
        if ((*st = path_route(pp->s, op->peer, node, &route)) != MRC_OK ||
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
        int32_t *slot = mrc__msgmap_find(&pp->flags, op->peer, -1,
                                         (uint64_t)op->flag);
        if (*slot >= 0) { /* set already: its message may be on its way */
            double set;
            memcpy(&set, &pp->flags.pool[*slot].w[0], sizeof set);
            if ((*st = path_route(pp->s, op->peer, node, &route)) != MRC_OK ||
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
    default:
        return 0;
    }
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
        } else {
            int waits = memory_op(pp, i, &st);
            if (waits < 0)
                return st;
            if (waits)
                return MRC_OK;
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

static mrc_status_t run_pipelined(sim_t *s, chain_t *chains,
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
    pp.group_chains = calloc((size_t)s->p->num_groups + 1,
                             sizeof *pp.group_chains);
    if (pp.group_chains)
        for (int i = 0; i < nchains; i++)
            pp.group_chains[s->p->nodes[chains[i].it.node].group]++;
    if (pp.q_head && pp.q_tail)
        for (int c = 0; c <= s->num_chan; c++)
            pp.q_head[c] = pp.q_tail[c] = -1;
    if (!pp.ready || !pp.phys_active || !pp.busy_from || !pp.q_head ||
        !pp.q_tail || !pp.q_busy || !pp.group_chains ||
        mrc__msgmap_init(&pp.msgs, (size_t)nchains) ||
        (s->memory && mrc__msgmap_init(&pp.flags, (size_t)nchains))) {
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
    free(pp.group_chains);
    free(pp.waits);
    free(pp.bars);
    mrc__msgmap_free(&pp.msgs);
    mrc__msgmap_free(&pp.flags);
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
                      uint8_t *used, int step, int group)
{
    /* The links on: from the program's port mask where it has one (the
     * flows then book bytes only); group -1: every node's. */
    if (s->use_phys)
        book_mask(s, mrc__port_phase_of(s->p, step), group, start, dur,
                  times, a->phys_on, a->phys_last, a->wake_ns, used);
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
            if (gap >= 0) {
                a->phys_on[ph] += fmin(gap, a->wake_ns) + dur * times;
                a->phys_last[ph] = start + dur * times;
            } else if (start + dur * times > a->phys_last[ph]) {
                /* Another group's step still had it on (groups that
                 * share a link): only the time past that counts. */
                a->phys_on[ph] += start + dur * times - a->phys_last[ph];
                a->phys_last[ph] = start + dur * times;
            }
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
        book_step(s, fl, nf, a->total_ns, dur, times, a, used, step, -1);
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

/* ---- BSP with several groups: a barrier per group ---------------------- */

/* Groups run their collectives at the same time and wait for nobody but
 * their own nodes: each walks its steps on its own clock (a step starts
 * when its group's previous step has arrived), while the flows of every
 * group in flight share the links' capacity (max-min fair, recomputed at
 * each event, as in a step). Groups of a valid embedding share no link,
 * so each then takes exactly the time it takes alone, and the run the
 * time of its slowest group. */
typedef struct gwalk {
    int first, n;       /* its chains: gidx[first .. first + n) */
    int step, steps;    /* the next step to gather; steps that moved */
    int finished;       /* every chain done */
    int pending;        /* flows of its step still moving */
    double start, end;  /* its step's start; its last arrival so far */
    flow_t *fl;         /* its step's flows, for the accounting */
    int nf, cap;
} gwalk_t;

/* Gathers group g's next step that moves something, starting at t: its
 * flows with bytes and links join the flows in flight (act, owner);
 * the others end at once, after their latency. 0, or an error. */
static mrc_status_t gather(sim_t *s, chain_t *chains, const int32_t *gidx,
                           gwalk_t *gw, int g, size_t esize, double t,
                           flow_t **act, int32_t **owner, int *nact,
                           int *cap_act, int *cap_owner)
{
    gwalk_t *w = &gw[g];
    mrc_status_t st = MRC_OK;
    w->nf = 0;
    w->pending = 0;
    w->start = w->end = t;
    while (w->nf == 0) {
        int live = 0;
        for (int i = w->first; i < w->first + w->n; i++) {
            chain_t *ch = &chains[gidx[i]];
            while (!ch->done) {
                int rr = mrc__cursor_peek(ch, &st);
                if (rr < 0)
                    return st;
                if (rr == 0)
                    break;
                if (ch->op.step > w->step)
                    break;
                ch->has_op = 0;
                flow_t f;
                int made = op_flow(s, ch->it.node, &ch->op, esize, &f, &st);
                if (made < 0)
                    return st;
                if (made == 0)
                    continue;
                if (mrc__grow((void **)&w->fl, &w->cap, w->nf + 1,
                              sizeof *w->fl))
                    return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
                w->fl[w->nf++] = f;
            }
            live += !ch->done;
        }
        w->step++;
        if (w->nf == 0 && live == 0) {
            w->finished = 1;
            return MRC_OK;
        }
    }
    w->steps++;
    for (int f = 0; f < w->nf; f++) {
        const route_t *rt = &s->routes[w->fl[f].route];
        if (w->fl[f].remaining <= 0 || rt->len == 0) {
            w->end = fmax(w->end, t + rt->latency);
            continue;
        }
        if (mrc__grow((void **)act, cap_act, *nact + 1, sizeof **act) ||
            mrc__grow((void **)owner, cap_owner, *nact + 1, sizeof **owner))
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        (*act)[*nact] = w->fl[f];
        (*owner)[(*nact)++] = g;
        w->pending++;
    }
    return MRC_OK;
}

static mrc_status_t run_bsp_groups(sim_t *s, chain_t *chains, int nchains,
                                   size_t esize, step_ws_t *ws,
                                   pipe_acct_t *a, int *steps)
{
    const mrc_program_t *p = s->p;
    int ng = p->num_groups, nact = 0, cap_act = 0, cap_owner = 0;
    flow_t *act = NULL;
    int32_t *owner = NULL;
    gwalk_t *gw = calloc((size_t)ng + 1, sizeof *gw);
    int32_t *gidx = malloc(((size_t)nchains + 1) * sizeof *gidx);
    uint8_t *used = calloc((size_t)s->num_phys + 1, 1);
    mrc_status_t st = MRC_OK;
    if (!gw || !gidx || !used) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
        goto done;
    }
    /* The chains by group, in their order (counting sort). */
    for (int i = 0; i < nchains; i++)
        gw[p->nodes[chains[i].it.node].group].n++;
    for (int g = 1; g < ng; g++)
        gw[g].first = gw[g - 1].first + gw[g - 1].n;
    for (int g = 0; g < ng; g++)
        gw[g].n = 0;
    for (int i = 0; i < nchains; i++) {
        gwalk_t *w = &gw[p->nodes[chains[i].it.node].group];
        gidx[w->first + w->n++] = i;
    }
    for (int g = 0; g < ng && st == MRC_OK; g++)
        st = gather(s, chains, gidx, gw, g, esize, 0, &act, &owner, &nact,
                    &cap_act, &cap_owner);
    double now = 0;
    while (st == MRC_OK) {
        /* Groups whose step has arrived book it and start the next. */
        int running = 0;
        for (int g = 0; g < ng && st == MRC_OK; g++) {
            gwalk_t *w = &gw[g];
            while (st == MRC_OK && !w->finished && w->pending == 0 &&
                   w->end <= now) {
                book_step(s, w->fl, w->nf, w->start, w->end - w->start, 1,
                          a, used, w->step - 1, g);
                a->total_ns = fmax(a->total_ns, w->end);
                st = gather(s, chains, gidx, gw, g, esize, w->end, &act,
                            &owner, &nact, &cap_act, &cap_owner);
            }
            running += !w->finished;
        }
        if (st != MRC_OK || running == 0)
            break;
        double next = INFINITY;
        for (int g = 0; g < ng; g++)
            if (!gw[g].finished && gw[g].pending == 0)
                next = fmin(next, gw[g].end);
        if (nact > 0) {
            size_t hops = 0;
            for (int f = 0; f < nact; f++)
                hops += (size_t)s->routes[act[f].route].len;
            if (reserve(ws, nact, hops, s->num_chan)) {
                st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
                break;
            }
            index_channels(s, act, nact, ws);
            allocate(s, act, nact, ws);
            clear_index(ws);
            for (int f = 0; f < nact; f++)
                if (act[f].rate > 0)
                    next = fmin(next, now + act[f].remaining / act[f].rate);
        }
        if (!isfinite(next)) { /* no rate and no arrival: cannot be */
            st = mrc__error(MRC_ERR_INVALID_PROGRAM,
                            "simulation stalled at %.0f ns", now);
            break;
        }
        double dt = next - now;
        now = next;
        for (int f = nact - 1; f >= 0; f--) {
            act[f].remaining -= act[f].rate * dt;
            /* Finished, allowing for rounding in the subtraction. */
            if (act[f].remaining > 1e-9 * act[f].bytes)
                continue;
            gwalk_t *w = &gw[owner[f]];
            w->end = fmax(w->end, now + s->routes[act[f].route].latency);
            w->pending--;
            act[f] = act[--nact];
            owner[f] = owner[nact];
        }
    }
    for (int g = 0; g < ng; g++)
        *steps = gw[g].steps > *steps ? gw[g].steps : *steps;
done:
    for (int g = 0; gw && g < ng; g++)
        free(gw[g].fl);
    free(gw);
    free(gidx);
    free(used);
    free(act);
    free(owner);
    return st;
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
               p->cfg.algo == MRC_ALGO_RINGS &&
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
    /* Several groups in BSP: each has its own barrier (the lockstep
     * below holds every group to the slowest one's steps). */
    int grouped = c.mode == MRC_SIM_BSP && !fast && p->num_groups > 1;
    if (c.mode == MRC_SIM_PIPELINED || fast || grouped) {
        pipe_acct_t acct = {r, phys_on, phys_last, pj, wake_ns, 0, 0};
        st = fast      ? fast_bsp(&s, &w, esize, &acct, &r->steps)
             : grouped ? run_bsp_groups(&s, chains, nchains, esize, &w,
                                        &acct, &r->steps)
                       : run_pipelined(&s, chains, nchains, esize, &w,
                                       &acct);
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
                int rr = mrc__cursor_peek(ch, &st);
                if (rr < 0)
                    goto done;
                if (rr == 0)
                    break;
                if (ch->op.step > step)
                    break;
                ch->has_op = 0;
                flow_t f;
                int made = op_flow(&s, ch->it.node, &ch->op, esize, &f, &st);
                if (made < 0)
                    goto done;
                if (made == 0)
                    continue;
                if (mrc__grow((void **)&flows, &cap_flows, nf + 1,
                              sizeof *flows))
                    goto oom;
                flows[nf++] = f;
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
            book_mask(&s, mrc__port_phase_of(p, step), -1, total_ns, dur, 1,
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
