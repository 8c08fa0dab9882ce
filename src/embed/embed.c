/*
 * The embedding object: the builder that strategies fill, the verifier,
 * the choice of link entries and ports for each step of each route, link
 * loads and the allreduce figures.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed_internal.h"

/* ---- builder ----------------------------------------------------------- */

void mrc__embed_builder_init(mrc__embed_builder_t *b, const mrc_topo_t *topo)
{
    memset(b, 0, sizeof *b);
    b->topo = topo;
}

static void free_draft_ring(mrc__draft_ring_t *r)
{
    if (r->hops)
        for (int i = 0; i < r->size; i++) {
            free(r->hops[i].route);
            free(r->hops[i].links);
        }
    free(r->hops);
    free(r->nodes);
}

void mrc__embed_builder_free(mrc__embed_builder_t *b)
{
    for (int g = 0; g < b->num_groups; g++)
        free(b->group_nodes[g]);
    free(b->group_nodes);
    free(b->group_size);
    for (int r = 0; r < b->num_rings; r++)
        free_draft_ring(&b->rings[r]);
    free(b->rings);
    const mrc_topo_t *topo = b->topo;
    memset(b, 0, sizeof *b);
    b->topo = topo;
}

static int *dup_ints(const int *src, int n)
{
    int *d = malloc((size_t)(n > 0 ? n : 1) * sizeof *d);
    if (d && n > 0)
        memcpy(d, src, (size_t)n * sizeof *d);
    return d;
}

int mrc__embed_builder_add_group(mrc__embed_builder_t *b, const int *nodes,
                                 int size)
{
    if (b->failed)
        return -1;
    int **gn = realloc(b->group_nodes, (size_t)(b->num_groups + 1) *
                                           sizeof *gn);
    if (gn)
        b->group_nodes = gn;
    int *gs = realloc(b->group_size, (size_t)(b->num_groups + 1) *
                                         sizeof *gs);
    if (gs)
        b->group_size = gs;
    int *copy = dup_ints(nodes, size);
    if (!gn || !gs || !copy) {
        free(copy);
        b->failed = 1;
        return -1;
    }
    b->group_nodes[b->num_groups] = copy;
    b->group_size[b->num_groups] = size;
    return b->num_groups++;
}

int mrc__embed_builder_add_ring(mrc__embed_builder_t *b, int g,
                                const int *order, int size, int bidirectional,
                                double share)
{
    if (b->failed)
        return -1;
    if (mrc__grow((void **)&b->rings, &b->cap_rings, b->num_rings + 1,
                  sizeof *b->rings)) {
        b->failed = 1;
        return -1;
    }
    mrc__draft_ring_t *r = &b->rings[b->num_rings];
    memset(r, 0, sizeof *r);
    r->group = g;
    r->size = size;
    r->bidirectional = bidirectional;
    r->share = share;
    r->nodes = dup_ints(order, size);
    r->hops = calloc((size_t)(size > 0 ? size : 1), sizeof *r->hops);
    if (!r->nodes || !r->hops) {
        free_draft_ring(r);
        b->failed = 1;
        return -1;
    }
    return b->num_rings++;
}

void mrc__embed_builder_set_route(mrc__embed_builder_t *b, int r, int hop,
                                  const int *route, int len, const int *links)
{
    if (b->failed || r < 0)
        return;
    mrc__draft_hop_t *h = &b->rings[r].hops[hop];
    free(h->route);
    free(h->links);
    h->route = dup_ints(route, len);
    h->links = links ? dup_ints(links, len - 1) : NULL;
    h->route_len = len;
    if (!h->route || (links && !h->links))
        b->failed = 1;
}

/* ---- topology helpers ------------------------------------------------- */

int mrc__links_between(const mrc_topo_t *topo, int u, int v)
{
    const int *links;
    int n = mrc_topo_node_links(topo, u, &links), sum = 0;
    for (int k = 0; k < n; k++) {
        const mrc_link_t *l = mrc_topo_link(topo, links[k]);
        if ((l->a == u && l->b == v) || (l->a == v && l->b == u))
            sum += l->count;
    }
    return sum;
}

enum mrc__ladder mrc__ladder_kind(const mrc_topo_t *t)
{
    int n = mrc_topo_num_nodes(t);
    if (n < 4 || n % 2 != 0)
        return MRC__NOT_LADDER;
    for (int k = 0; k < n / 2; k++)
        if (mrc__links_between(t, 2 * k, 2 * k + 1) < 1)
            return MRC__NOT_LADDER;
    for (int u = 0; u + 2 < n; u++)
        if (mrc__links_between(t, u, u + 2) < 1)
            return MRC__NOT_LADDER;
    if (n == 4) /* two rungs: the loop-back doubles the column links */
        return mrc__links_between(t, 0, 2) >= 2 &&
                       mrc__links_between(t, 1, 3) >= 2
                   ? MRC__TORUS
                   : MRC__MESH;
    return mrc__links_between(t, n - 2, 0) >= 1 &&
                   mrc__links_between(t, n - 1, 1) >= 1
               ? MRC__TORUS
               : MRC__MESH;
}

int mrc__route_search(const mrc_topo_t *topo, int u, int v, int *route,
                      int *prev, int *queue)
{
    int head = 0, tail = 0, len = 0;
    queue[tail++] = u;
    prev[u] = -1;
    while (head < tail && prev[v] == -2) {
        int x = queue[head++];
        const int *links;
        int k = mrc_topo_node_links(topo, x, &links);
        for (int j = 0; j < k; j++) {
            const mrc_link_t *l = mrc_topo_link(topo, links[j]);
            int y = l->a == x ? l->b : l->a;
            if (prev[y] == -2) {
                prev[y] = x;
                queue[tail++] = y;
            }
        }
    }
    if (prev[v] != -2) {
        for (int x = v; x != -1; x = prev[x])
            len++;
        int i = len;
        for (int x = v; x != -1; x = prev[x])
            route[--i] = x;
    }
    /* Only the nodes reached were marked: the next search starts clean
     * without an O(nodes) reset. */
    for (int i = 0; i < tail; i++)
        prev[queue[i]] = -2;
    return len;
}

int mrc__shortest_route(const mrc_topo_t *topo, int u, int v, int *route)
{
    int n = mrc_topo_num_nodes(topo);
    int *prev = malloc((size_t)n * sizeof *prev);
    int *queue = malloc((size_t)n * sizeof *queue);
    int len = 0;
    if (prev && queue) {
        for (int i = 0; i < n; i++)
            prev[i] = -2;
        len = mrc__route_search(topo, u, v, route, prev, queue);
    }
    free(prev);
    free(queue);
    return len;
}

/* ---- verification ------------------------------------------------------ */

static mrc_status_t bad(int g, int r, int h, const char *what)
{
    if (h >= 0)
        return mrc__error(MRC_ERR_INVALID_EMBEDDING,
                          "group %d, ring %d, hop %d: %s", g, r, h, what);
    if (r >= 0)
        return mrc__error(MRC_ERR_INVALID_EMBEDDING, "group %d, ring %d: %s",
                          g, r, what);
    return mrc__error(MRC_ERR_INVALID_EMBEDDING, "group %d: %s", g, what);
}

/* Is link entry `li` a link between u and v? */
static int link_joins(const mrc_topo_t *t, int li, int u, int v)
{
    const mrc_link_t *l = mrc_topo_link(t, li);
    return l && ((l->a == u && l->b == v) || (l->a == v && l->b == u));
}

static mrc_status_t check_hop(const mrc_topo_t *t, const mrc_hop_t *h, int g,
                              int r, int i, int from, int to, int *seen,
                              int stamp)
{
    char msg[200];
    int n = mrc_topo_num_nodes(t);
    if (h->from != from || h->to != to || h->route_len < 2 ||
        h->route[0] != from || h->route[h->route_len - 1] != to) {
        snprintf(msg, sizeof msg,
                 "route must lead from node %d to node %d, the next node of "
                 "the ring",
                 from, to);
        return bad(g, r, i, msg);
    }
    for (int s = 0; s < h->route_len; s++) {
        int x = h->route[s];
        if (x < 0 || x >= n) {
            snprintf(msg, sizeof msg, "route names node %d (nodes are 0..%d)",
                     x, n - 1);
            return bad(g, r, i, msg);
        }
        if (seen[x] == stamp) {
            snprintf(msg, sizeof msg, "route passes node %d twice", x);
            return bad(g, r, i, msg);
        }
        seen[x] = stamp;
    }
    for (int s = 0; s + 1 < h->route_len; s++) {
        int u = h->route[s], v = h->route[s + 1];
        if (mrc__links_between(t, u, v) == 0) {
            snprintf(msg, sizeof msg, "no link joins nodes %d and %d", u, v);
            return bad(g, r, i, msg);
        }
        if (h->links && h->links[s] >= 0 && !link_joins(t, h->links[s], u, v)) {
            snprintf(msg, sizeof msg, "link entry %d does not join nodes %d "
                     "and %d", h->links[s], u, v);
            return bad(g, r, i, msg);
        }
        if (h->ports && h->ports[s] >= 0) {
            int peer = -1, pp = -1, li = -1;
            if (mrc_topo_port(t, u, h->ports[s], &li, &peer, &pp) != MRC_OK ||
                peer != v || li != h->links[s] || pp != h->in_ports[s]) {
                snprintf(msg, sizeof msg,
                         "port %d of node %d does not lead to node %d", 
                         h->ports[s], u, v);
                return bad(g, r, i, msg);
            }
        }
    }
    return MRC_OK;
}

static mrc_status_t verify(const mrc_embedding_t *e)
{
    const mrc_topo_t *t = e->topo;
    int n = mrc_topo_num_nodes(t);
    char msg[200];
    mrc_status_t st = MRC_OK;
    int *owner = malloc((size_t)n * sizeof *owner);
    int *seen = calloc((size_t)n, sizeof *seen);
    int stamp = 0;
    if (!owner || !seen) {
        free(owner);
        free(seen);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory verifying");
    }
    for (int i = 0; i < n; i++)
        owner[i] = -1;
    if (e->num_groups < 1)
        st = mrc__error(MRC_ERR_INVALID_EMBEDDING, "no groups");
    for (int g = 0; g < e->num_groups && st == MRC_OK; g++) {
        const mrc__embed_group_t *gr = &e->groups[g];
        if (gr->size < 1) {
            st = bad(g, -1, -1, "is empty");
            break;
        }
        for (int k = 0; k < gr->size && st == MRC_OK; k++) {
            int x = gr->nodes[k];
            if (x < 0 || x >= n) {
                snprintf(msg, sizeof msg, "names node %d (nodes are 0..%d)",
                         x, n - 1);
                st = bad(g, -1, -1, msg);
            } else if (owner[x] >= 0) {
                snprintf(msg, sizeof msg, "node %d is already in group %d", x,
                         owner[x]);
                st = bad(g, -1, -1, msg);
            } else {
                owner[x] = g;
            }
        }
        if (st != MRC_OK)
            break;
        if (gr->size >= 2 && gr->num_rings < 1) {
            st = bad(g, -1, -1, "has no ring");
            break;
        }
        double total = 0;
        for (int r = 0; r < gr->num_rings && st == MRC_OK; r++) {
            const mrc_ring_t *ring = &gr->rings[r];
            if (!(ring->share > 0) || ring->share > 1 + 1e-9) {
                snprintf(msg, sizeof msg, "share %g must be in (0, 1]",
                         ring->share);
                st = bad(g, r, -1, msg);
                break;
            }
            total += ring->share;
            if (ring->size != gr->size) {
                snprintf(msg, sizeof msg,
                         "visits %d nodes but its group has %d", ring->size,
                         gr->size);
                st = bad(g, r, -1, msg);
                break;
            }
            stamp++;
            for (int k = 0; k < ring->size; k++) {
                int x = ring->nodes[k];
                if (x < 0 || x >= n || owner[x] != g) {
                    snprintf(msg, sizeof msg, "node %d is not in the group",
                             x);
                    st = bad(g, r, -1, msg);
                    break;
                }
                if (seen[x] == stamp) {
                    snprintf(msg, sizeof msg, "visits node %d twice", x);
                    st = bad(g, r, -1, msg);
                    break;
                }
                seen[x] = stamp;
            }
            for (int k = 0; k < ring->size && st == MRC_OK; k++) {
                stamp++;
                st = check_hop(t, &ring->hops[k], g, r, k, ring->nodes[k],
                               ring->nodes[(k + 1) % ring->size], seen,
                               stamp);
            }
        }
        if (st == MRC_OK && gr->num_rings > 0 && fabs(total - 1) > 1e-6) {
            snprintf(msg, sizeof msg, "ring shares sum to %g, not 1", total);
            st = bad(g, -1, -1, msg);
        }
    }
    free(owner);
    free(seen);
    return st;
}

mrc_status_t mrc_embed_verify(const mrc_embedding_t *e)
{
    if (!e)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_embed_verify: NULL");
    return verify(e);
}

/* ---- finishing: links, ports, loads, figures --------------------------- */

static void free_ring(mrc_ring_t *ring)
{
    if (ring->hops)
        for (int i = 0; i < ring->size; i++) {
            const mrc_hop_t *h = &ring->hops[i];
            free((void *)h->route);
            free((void *)h->links);
            free((void *)h->ports);
            free((void *)h->in_ports);
        }
    free((void *)ring->hops);
    free((void *)ring->nodes);
}

void mrc_embed_destroy(mrc_embedding_t *e)
{
    if (!e)
        return;
    for (int g = 0; g < e->num_groups; g++) {
        for (int r = 0; r < e->groups[g].num_rings; r++)
            free_ring(&e->groups[g].rings[r]);
        free(e->groups[g].rings);
        free(e->groups[g].nodes);
    }
    free(e->groups);
    free(e->node_group);
    free(e->load);
    free(e->idle_ports);
    free(e->strategy);
    free(e->method);
    free(e);
}

/* Moves the draft into the final layout; routes default to direct hops.
 * Links and ports stay -1 until assigned. */
static mrc_status_t adopt_drafts(mrc__embed_builder_t *b, mrc_embedding_t *e)
{
    e->num_groups = b->num_groups;
    e->groups = calloc((size_t)(b->num_groups ? b->num_groups : 1),
                       sizeof *e->groups);
    if (!e->groups)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int g = 0; g < b->num_groups; g++) {
        e->groups[g].size = b->group_size[g];
        e->groups[g].nodes = b->group_nodes[g];
        b->group_nodes[g] = NULL;
        int count = 0;
        for (int r = 0; r < b->num_rings; r++)
            count += b->rings[r].group == g;
        e->groups[g].rings = calloc((size_t)(count ? count : 1),
                                    sizeof(mrc_ring_t));
        if (!e->groups[g].rings)
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    for (int r = 0; r < b->num_rings; r++) {
        mrc__draft_ring_t *d = &b->rings[r];
        if (d->group < 0 || d->group >= b->num_groups)
            return mrc__error(MRC_ERR_INVALID_EMBEDDING,
                              "ring %d names group %d (there are %d)", r,
                              d->group, b->num_groups);
        mrc__embed_group_t *gr = &e->groups[d->group];
        mrc_ring_t *ring = &gr->rings[gr->num_rings++];
        ring->size = d->size;
        ring->nodes = d->nodes;
        ring->bidirectional = d->bidirectional;
        ring->share = d->share;
        d->nodes = NULL;
        mrc_hop_t *hops = calloc((size_t)(d->size ? d->size : 1),
                                 sizeof *hops);
        ring->hops = hops;
        if (!hops)
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        for (int i = 0; i < d->size; i++) {
            mrc__draft_hop_t *dh = &d->hops[i];
            mrc_hop_t *h = &hops[i];
            h->from = ring->nodes[i];
            h->to = ring->nodes[(i + 1) % d->size];
            int len = dh->route_len ? dh->route_len : 2;
            int *route = dh->route, *links = dh->links;
            dh->route = dh->links = NULL;
            if (!route) {
                route = malloc(2 * sizeof *route);
                if (route) {
                    route[0] = h->from;
                    route[1] = h->to;
                }
            }
            if (!links) {
                links = malloc((size_t)(len - 1 > 0 ? len - 1 : 1) *
                               sizeof *links);
                for (int s = 0; links && s < len - 1; s++)
                    links[s] = -1;
            }
            int *ports = malloc((size_t)(len > 1 ? len - 1 : 1) *
                                sizeof *ports);
            int *in_ports = malloc((size_t)(len > 1 ? len - 1 : 1) *
                                   sizeof *in_ports);
            h->route = route;
            h->links = links;
            h->ports = ports;
            h->in_ports = in_ports;
            h->route_len = len;
            if (!route || !links || !ports || !in_ports)
                return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
            for (int s = 0; s < len - 1; s++)
                ports[s] = in_ports[s] = -1;
        }
    }
    return MRC_OK;
}

static double ring_factor(int n)
{
    return n > 1 ? 2.0 * (n - 1) / n : 0;
}

/* Chooses, for every step without one, the link entry between its nodes
 * that is least used so far (relative to its count), and within the entry
 * the physical link used least; ports follow from that. */
static mrc_status_t assign_links(mrc_embedding_t *e)
{
    const mrc_topo_t *t = e->topo;
    int nl = mrc_topo_num_links(t);
    int *uses = calloc((size_t)(nl ? nl : 1), sizeof *uses);
    if (!uses)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int pass = 0; pass < 2; pass++) /* given links first, then free */
        for (int g = 0; g < e->num_groups; g++)
            for (int r = 0; r < e->groups[g].num_rings; r++) {
                mrc_ring_t *ring = &e->groups[g].rings[r];
                for (int i = 0; i < ring->size; i++) {
                    mrc_hop_t *h = (mrc_hop_t *)&ring->hops[i];
                    int *links = (int *)h->links, *ports = (int *)h->ports;
                    int *in_ports = (int *)h->in_ports;
                    for (int s = 0; s + 1 < h->route_len; s++) {
                        int u = h->route[s], v = h->route[s + 1];
                        if ((links[s] >= 0) != (pass == 0))
                            continue;
                        if (links[s] < 0) {
                            const int *cand;
                            int k = mrc_topo_node_links(t, u, &cand);
                            double best = 1e300;
                            for (int j = 0; j < k; j++) {
                                const mrc_link_t *l = mrc_topo_link(t, cand[j]);
                                if (!link_joins(t, cand[j], u, v))
                                    continue;
                                double x = (double)uses[cand[j]] / l->count;
                                if (x < best) {
                                    best = x;
                                    links[s] = cand[j];
                                }
                            }
                        }
                        const mrc_link_t *l = mrc_topo_link(t, links[s]);
                        int sub = uses[links[s]]++ % l->count;
                        int at_a = l->a == u;
                        ports[s] = (at_a ? l->port_a : l->port_b) + sub;
                        in_ports[s] = (at_a ? l->port_b : l->port_a) + sub;
                    }
                }
            }
    free(uses);
    return MRC_OK;
}

static void add_load(mrc_embedding_t *e, const mrc_hop_t *h, double fwd,
                     double back)
{
    for (int s = 0; s + 1 < h->route_len; s++) {
        const mrc_link_t *l = mrc_topo_link(e->topo, h->links[s]);
        int dir = l->a == h->route[s] ? 0 : 1;
        e->load[2 * h->links[s] + dir] += fwd;
        e->load[2 * h->links[s] + (1 - dir)] += back;
    }
}

/* Loads per link direction in bytes per byte of data: a ring of n nodes
 * sends 2(n-1)/n of its share over each hop (reduce-scatter then
 * allgather); a bidirectional ring half of it each way round. */
static mrc_status_t compute_loads(mrc_embedding_t *e)
{
    const mrc_topo_t *t = e->topo;
    int nl = mrc_topo_num_links(t);
    e->load = calloc((size_t)(2 * nl + 1), sizeof *e->load);
    if (!e->load)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int g = 0; g < e->num_groups; g++) {
        double f = ring_factor(e->groups[g].size);
        for (int r = 0; r < e->groups[g].num_rings; r++) {
            const mrc_ring_t *ring = &e->groups[g].rings[r];
            double fwd = ring->bidirectional ? f * ring->share / 2
                                             : f * ring->share;
            double back = ring->bidirectional ? fwd : 0;
            for (int i = 0; i < ring->size; i++)
                add_load(e, &ring->hops[i], fwd, back);
        }
    }
    e->num_idle = 0;
    for (int i = 0; i < 2 * nl; i++)
        e->num_idle += e->load[i] == 0;

    int worst = -1;
    for (int g = 0; g < e->num_groups; g++) {
        mrc__embed_group_t *gr = &e->groups[g];
        mrc_embed_figures_t *fig = &gr->figures;
        if (gr->size < 2) {
            fig->bound_gbps = fig->algbw_gbps = 0;
            fig->efficiency = 1;
        } else {
            double minbw = 1e300, worst_ratio = 0;
            for (int k = 0; k < gr->size; k++) {
                double bw = mrc_topo_node_bandwidth_gbps(t, gr->nodes[k]);
                minbw = bw < minbw ? bw : minbw;
            }
            for (int r = 0; r < gr->num_rings; r++) {
                const mrc_ring_t *ring = &gr->rings[r];
                for (int i = 0; i < ring->size; i++) {
                    const mrc_hop_t *h = &ring->hops[i];
                    for (int s = 0; s + 1 < h->route_len; s++) {
                        const mrc_link_t *l = mrc_topo_link(t, h->links[s]);
                        double cap = l->count * l->bandwidth_gbps;
                        for (int d = 0; d < 2; d++) {
                            double x = e->load[2 * h->links[s] + d] / cap;
                            worst_ratio = x > worst_ratio ? x : worst_ratio;
                        }
                    }
                }
            }
            fig->bound_gbps = minbw / ring_factor(gr->size);
            fig->algbw_gbps = worst_ratio > 0 ? 1 / worst_ratio : 0;
            fig->efficiency = fig->bound_gbps > 0
                                  ? fig->algbw_gbps / fig->bound_gbps
                                  : 0;
        }
        if (worst < 0 ||
            fig->efficiency < e->groups[worst].figures.efficiency - 1e-12)
            worst = g;
    }
    e->worst = e->groups[worst].figures;
    return MRC_OK;
}

/* The ports that steps are assigned to, counted per physical link: a link
 * entry of count c is c physical links, and a hop takes one of them, so
 * an entry busy in both directions may still hold idle physical links
 * (idle directions count entries; a program switches off ports). Both
 * ends of a physical link are used by the same steps, so the idle
 * physical links are half the idle ports. */
static mrc_status_t count_idle_ports(mrc_embedding_t *e)
{
    const mrc_topo_t *t = e->topo;
    int n = mrc_topo_num_nodes(t);
    long total = 2L * mrc_topo_num_physical_links(t);
    int *off = malloc(((size_t)n + 1) * sizeof *off);
    unsigned char *used = calloc((size_t)total + 1, 1);
    e->idle_ports = calloc((size_t)n + 1, sizeof *e->idle_ports);
    if (!off || !used || !e->idle_ports) {
        free(off);
        free(used);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    off[0] = 0;
    for (int u = 0; u < n; u++)
        off[u + 1] = off[u] + mrc_topo_num_ports(t, u);
    for (int g = 0; g < e->num_groups; g++)
        for (int r = 0; r < e->groups[g].num_rings; r++) {
            const mrc_ring_t *ring = &e->groups[g].rings[r];
            for (int i = 0; i < ring->size; i++) {
                const mrc_hop_t *h = &ring->hops[i];
                for (int s = 0; s + 1 < h->route_len; s++) {
                    used[off[h->route[s]] + h->ports[s]] = 1;
                    used[off[h->route[s + 1]] + h->in_ports[s]] = 1;
                }
            }
        }
    long idle = 0;
    for (int u = 0; u < n; u++) {
        for (int p = off[u]; p < off[u + 1]; p++)
            e->idle_ports[u] += !used[p];
        idle += e->idle_ports[u];
    }
    e->num_idle_physical = (int)(idle / 2);
    free(off);
    free(used);
    return MRC_OK;
}

mrc_status_t mrc__embed_builder_finish(mrc__embed_builder_t *b,
                                       const char *strategy,
                                       mrc_embedding_t **out)
{
    mrc_status_t st;
    *out = NULL;
    mrc_embedding_t *e = calloc(1, sizeof *e);
    if (!e || b->failed) {
        free(e);
        mrc__embed_builder_free(b);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory embedding rings");
    }
    e->topo = b->topo;
    e->strategy = mrc__strdup(strategy);
    int n = mrc_topo_num_nodes(b->topo);
    e->node_group = malloc((size_t)n * sizeof *e->node_group);
    if (!e->strategy || !e->node_group) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    st = adopt_drafts(b, e);
    if (st == MRC_OK)
        st = verify(e);
    if (st == MRC_OK)
        st = assign_links(e);
    if (st == MRC_OK)
        st = verify(e); /* now with links and ports */
    if (st == MRC_OK)
        st = compute_loads(e);
    if (st == MRC_OK)
        st = count_idle_ports(e);
    if (st != MRC_OK)
        goto fail;
    for (int i = 0; i < n; i++)
        e->node_group[i] = -1;
    for (int g = 0; g < e->num_groups; g++)
        for (int k = 0; k < e->groups[g].size; k++)
            e->node_group[e->groups[g].nodes[k]] = g;
    mrc__embed_builder_free(b);
    *out = e;
    return MRC_OK;
fail:
    mrc__embed_builder_free(b);
    mrc_embed_destroy(e);
    return st;
}

/* ---- queries ----------------------------------------------------------- */

const mrc_topo_t *mrc_embed_topology(const mrc_embedding_t *e)
{
    return e->topo;
}

const char *mrc_embed_strategy(const mrc_embedding_t *e)
{
    return e->strategy;
}

int mrc_embed_num_groups(const mrc_embedding_t *e)
{
    return e->num_groups;
}

int mrc_embed_group_nodes(const mrc_embedding_t *e, int g, const int **nodes)
{
    if (g < 0 || g >= e->num_groups)
        return -1;
    if (nodes)
        *nodes = e->groups[g].nodes;
    return e->groups[g].size;
}

int mrc_embed_node_group(const mrc_embedding_t *e, int node)
{
    if (node < 0 || node >= mrc_topo_num_nodes(e->topo))
        return -1;
    return e->node_group[node];
}

int mrc_embed_num_rings(const mrc_embedding_t *e, int g)
{
    if (g < 0 || g >= e->num_groups)
        return -1;
    return e->groups[g].num_rings;
}

const mrc_ring_t *mrc_embed_ring(const mrc_embedding_t *e, int g, int r)
{
    if (g < 0 || g >= e->num_groups || r < 0 || r >= e->groups[g].num_rings)
        return NULL;
    return &e->groups[g].rings[r];
}

double mrc_embed_link_load(const mrc_embedding_t *e, int link, int dir)
{
    if (link < 0 || link >= mrc_topo_num_links(e->topo) || dir < 0 || dir > 1)
        return 0;
    return e->load[2 * link + dir];
}

int mrc_embed_num_idle(const mrc_embedding_t *e)
{
    return e->num_idle;
}

int mrc_embed_num_idle_physical(const mrc_embedding_t *e)
{
    return e ? e->num_idle_physical : -1;
}

int mrc_embed_idle_ports(const mrc_embedding_t *e, int node)
{
    if (!e || node < 0 || node >= mrc_topo_num_nodes(e->topo))
        return -1;
    return e->idle_ports[node];
}

mrc_status_t mrc_embed_group_figures(const mrc_embedding_t *e, int g,
                                     mrc_embed_figures_t *out)
{
    if (!e || !out || g < 0 || g >= e->num_groups)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_embed_group_figures: no group %d", g);
    *out = e->groups[g].figures;
    return MRC_OK;
}

mrc_status_t mrc_embed_figures(const mrc_embedding_t *e,
                               mrc_embed_figures_t *out)
{
    if (!e || !out)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_embed_figures: NULL");
    *out = e->worst;
    return MRC_OK;
}
