/*
 * The model: every link direction is a channel of count x bandwidth with
 * its latency; every node-stream's hop is a route over channels and the
 * physical links under them (from the program's route pool); the
 * memory-semantic ops take shortest paths found on demand. What an op of
 * the program puts on the links (mrc__sim_op_flow) is decided here; how
 * long it takes is the fluid step's (fluid.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_internal.h"

void mrc__sim_free(mrc__sim_t *s)
{
    free(s->cap);
    free(s->lat);
    free(s->phys_base);
    free(s->routes);
    free(s->chan_pool);
    free(s->phys_pool);
    mrc__paths_free(&s->search);
    mrc__topo_graph_free(&s->graph);
    free(s->hop_arcs);
    free(s->group_route);
    mrc__msgmap_free(&s->paths); /* zeroed when unused */
    free(s->use_phys);
    mrc__sim_node_free(s);
}

/* The physical link behind each port of the mask: a port's lane of its
 * link, as the routes count them. */
mrc_status_t mrc__sim_build_mask(mrc__sim_t *s)
{
    const mrc_program_t *p = s->p;
    mrc_status_t st = mrc__port_mask_ready(p);
    if (st != MRC_OK || p->num_port_phases == 0)
        return st;
    s->use_phys = malloc(((size_t)p->num_port_uses + 1) * sizeof *s->use_phys);
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

/* Channels and, for every node and stream, the channels and physical
 * links of its hop to the next node (from the program's route pool). */
mrc_status_t mrc__sim_build(mrc__sim_t *s)
{
    const mrc_program_t *p = s->p;
    const mrc_topo_t *t = s->t;
    int nl = mrc_topo_num_links(t);
    s->num_chan = s->link_chan = 2 * nl;
    s->cap = malloc(((size_t)s->num_chan + 1) * sizeof *s->cap);
    s->lat = malloc(((size_t)s->num_chan + 1) * sizeof *s->lat);
    s->phys_base = malloc(((size_t)nl + 1) * sizeof *s->phys_base);
    s->routes = calloc((size_t)p->num_entries + 1, sizeof *s->routes);
    s->num_routes = s->cap_routes = p->num_entries;
    if (!s->cap || !s->lat || !s->phys_base || !s->routes)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    s->memory = mrc__program_has_memory_ops(p);
    /* Families other than the rings send off the rings' hops. */
    if (p->cfg.algo != MRC_ALGO_RINGS || s->want_paths) {
        int nn = p->num_nodes;
        s->hop_arcs = malloc(((size_t)nn + 1) * sizeof *s->hop_arcs);
        s->group_route =
            malloc(((size_t)p->num_groups + 1) * sizeof *s->group_route);
        if (!s->hop_arcs || !s->group_route ||
            mrc__topo_graph_init(&s->graph, t) != 0 ||
            mrc__paths_init(&s->search, &s->graph) != 0 ||
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
            mrc__sim_route_t *rt = &s->routes[ns - p->node_streams];
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
                if (mrc__sim_route_hop(s, (int)(rt - s->routes), 2 * link + dir,
                                       s->phys_base[link] +
                                           (p->route_ports[q] - first_port)))
                    return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
                rt->latency += l->latency_ns;
            }
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
int mrc__sim_new_route(mrc__sim_t *s)
{
    if (mrc__grow((void **)&s->routes, &s->cap_routes, s->num_routes + 1,
                  sizeof *s->routes))
        return -1;
    s->routes[s->num_routes] =
        (mrc__sim_route_t){.first = s->pool_len, .own = -1};
    return s->num_routes++;
}

/* Appends a hop over channel chan and physical link phys (-1: none) to
 * route, the last route to take hops; 0, or -1 out of memory. */
int mrc__sim_route_hop(mrc__sim_t *s, int route, int chan, int phys)
{
    if (mrc__grow((void **)&s->chan_pool, &s->chan_cap, s->pool_len + 1,
                  sizeof *s->chan_pool) ||
        mrc__grow((void **)&s->phys_pool, &s->phys_cap, s->pool_len + 1,
                  sizeof *s->phys_pool))
        return -1;
    s->chan_pool[s->pool_len] = chan;
    s->phys_pool[s->pool_len] = phys;
    s->pool_len++;
    s->routes[route].len++;
    return 0;
}

/* The route from src to dst (src != dst): the shortest path in hops,
 * each hop on the first physical link of its link entry. */
mrc_status_t mrc__sim_path_route(mrc__sim_t *s, int src, int dst, int *route)
{
    int32_t *slot = mrc__msgmap_find(&s->paths, src, dst, 0);
    if (*slot >= 0) {
        *route = s->paths.pool[*slot].i[0];
        return MRC_OK;
    }
    /* The fewest hops, breadth first over each node's links in order. */
    mrc__paths_search(&s->search, src, dst, NULL);
    int nodes = mrc__paths_route(&s->search, dst, NULL, s->hop_arcs);
    if (nodes == 0)
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "node %d reads from or waits on node %d, which "
                          "%s does not connect to it",
                          dst, src, mrc_topo_name(s->t));
    int r = mrc__sim_new_route(s);
    if (r < 0)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    for (int h = 0; h + 1 < nodes; h++) {
        int arc = s->hop_arcs[h], link = arc / 2;
        if (mrc__sim_route_hop(s, r, arc, s->phys_base[link]))
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
        s->routes[r].latency += mrc_topo_link(s->t, link)->latency_ns;
    }
    mrc__sim_node_route(s, r, src, dst);
    mrc__msg_t *m = mrc__msgmap_add(&s->paths, src, dst, 0);
    if (!m)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    m->i[0] = r;
    *route = r;
    return MRC_OK;
}

/* Whether the nodes mem[0..n) are all on one host (node model). */
static int same_host(const mrc__sim_t *s, const int32_t *mem, int n)
{
    for (int i = 1; i < n; i++)
        if (!mrc__sim_same_host(s, mem[0], mem[i]))
            return 0;
    return 1;
}

/* The latency of the farthest member of group g from member `from` (the
 * search from it done), each member's latency summed once along the
 * breadth-first order (a route per member, walked back hop by hop, cost
 * O(members x hops) a source: 1.7e10 steps for ring:4096). lat: scratch
 * [nodes]. -1 if a member was not reached. */
static double farthest(const mrc__sim_t *s, const int32_t *mem, int size,
                       double *lat)
{
    const mrc__paths_t *ps = &s->search;
    for (int k = 0; k < ps->num_reached; k++) {
        int v = ps->reached[k];
        lat[v] = ps->prev[v] < 0
                     ? 0
                     : lat[ps->prev[v]] +
                           mrc_topo_link(s->t, ps->via[v] / 2)->latency_ns;
    }
    double worst = 0;
    for (int j = 0; j < size; j++) {
        if (ps->dist[mem[j]] == INFINITY)
            return -1;
        worst = fmax(worst, lat[mem[j]]);
    }
    return worst;
}

/* Group g's barrier: no link, the latency of its farthest pair (the last
 * node to arrive is heard by the farthest one that long after). */
mrc_status_t mrc__sim_barrier_route(mrc__sim_t *s, int g, int *route)
{
    if (s->group_route[g] >= 0) {
        *route = s->group_route[g];
        return MRC_OK;
    }
    const mrc_program_t *p = s->p;
    const mrc__group_t *gr = &p->groups[g];
    const int32_t *mem = p->members + gr->first_member;
    /* (the node model's barrier within a host has no paths: below) */
    int one_host = s->node.prof && same_host(s, mem, gr->size);
    double worst = 0;
    double *lat = one_host ? NULL : malloc((size_t)p->num_nodes * sizeof *lat);
    if (!one_host && !lat)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    for (int i = 0; !one_host && i < gr->size; i++) {
        mrc__paths_search(&s->search, mem[i], -1, NULL);
        double w = farthest(s, mem, gr->size, lat);
        if (w < 0) {
            free(lat);
            return mrc__error(MRC_ERR_INVALID_PROGRAM,
                              "group %d's barrier: %s does not connect node "
                              "%d to every member",
                              g, mrc_topo_name(s->t), mem[i]);
        }
        worst = fmax(worst, w);
    }
    free(lat);
    int r = mrc__sim_new_route(s);
    if (r < 0)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    /* The node model: a host's barrier takes sync_us, and a barrier
     * across hosts that much more than its paths. */
    if (s->node.prof)
        worst = (same_host(s, mem, gr->size) ? 0 : worst) +
                (s->node.prof->sync_us + s->node.flag_turn) * 1e3;
    s->routes[r].latency = worst;
    s->group_route[g] = r;
    *route = r;
    return MRC_OK;
}

/* The route of a flag set by src that dst waits for: a zero-byte
 * message over the path, or under the node model within a host, a flag
 * round trip (sync_us). */
mrc_status_t mrc__sim_signal_route(mrc__sim_t *s, int src, int dst, int *route)
{
    if (s->node.prof && mrc__sim_same_host(s, src, dst)) {
        *route = s->node.sync_route;
        return MRC_OK;
    }
    return mrc__sim_path_route(s, src, dst, route);
}

/* The message of a node's op (see mrc__sim_op_flow): 1 and *f, 0, or
 * -1 on an error (*st). */
static int message_flow(mrc__sim_t *s, int node, const mrc__op_t *op,
                        size_t esize, mrc__sim_flow_t *f, mrc_status_t *st)
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
            (*st = mrc__sim_path_route(s, node, op->ring_peer, &route)) !=
                MRC_OK)
            return -1;
        if ((*st = mrc__sim_node_send_route(s, node, op->ring_peer, bytes,
                                            &route)) != MRC_OK)
            return -1;
        break;
    }
    case MRC__GET:
        if (op->peer == node)
            return 0;
        if ((*st = mrc__sim_path_route(s, op->peer, node, &route)) != MRC_OK)
            return -1;
        break;
    case MRC__WAIT:
        if (op->peer == node)
            return 0;
        if ((*st = mrc__sim_signal_route(s, op->peer, node, &route)) != MRC_OK)
            return -1;
        bytes = 0;
        break;
    case MRC__BARRIER:
        if ((*st = mrc__sim_barrier_route(s, p->nodes[node].group, &route)) !=
            MRC_OK)
            return -1;
        bytes = 0;
        break;
    default: return 0;
    }
    *f = (mrc__sim_flow_t){
        mrc__sim_node_msg_work(s, node, op, bytes), 0, bytes, route, 0, 0};
    return 1;
}

/* The BSP flows of a node's op: a SEND's message over its hop, a GET's
 * transfer from the owner, a WAIT's zero-byte signal from the peer, a
 * BARRIER's latency; then, under the node model, the node's own work on
 * it or its own copy (mrc__sim_local_flow: an EXPOSE by copy too). 0 if
 * the op moves nothing (SIGNAL, an EXPOSE by reference, and without the
 * model local copies and a node's own data); -1 on an error (*st). */
int mrc__sim_op_flow(mrc__sim_t *s, int node, const mrc__op_t *op, size_t esize,
                     mrc__sim_flow_t f[2], mrc_status_t *st)
{
    int n = message_flow(s, node, op, esize, f, st);
    if (n < 0)
        return -1;
    return n + mrc__sim_local_flow(s, node, op, esize, &f[n]);
}
