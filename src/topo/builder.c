/*
 * The builder through which every source (generators, JSON files, link
 * lists, failed-links copies) creates a topology: it collects nodes and
 * links, validates them (ends, counts, bandwidths, latencies, ports, a
 * connected graph), numbers each node's ports in link order and freezes
 * the object. mrc_topo_from_links is its public form.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

mrc_status_t mrc__topo_builder_init(mrc__topo_builder_t *tb, long num_nodes,
                                    const char *name)
{
    memset(tb, 0, sizeof *tb);
    if (num_nodes < 1 || num_nodes > MRC_TOPO_MAX_NODES)
        return mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                          "%ld nodes: a topology has 1 to %d nodes", num_nodes,
                          MRC_TOPO_MAX_NODES);
    tb->num_nodes = (int)num_nodes;
    tb->nodes = calloc((size_t)num_nodes, sizeof *tb->nodes);
    tb->name = mrc__strdup(name);
    if (!tb->nodes || (name && !tb->name)) {
        mrc__topo_builder_free(tb);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory for %ld nodes",
                          num_nodes);
    }
    return MRC_OK;
}

void mrc__topo_builder_add_link(mrc__topo_builder_t *tb, long a, long b,
                                long count, double bandwidth_gbps,
                                double latency_ns)
{
    if (tb->failed)
        return;
    if (tb->num_links == tb->cap_links) {
        if (tb->cap_links > MRC_TOPO_MAX_LINKS) {
            /* Keep counting so the limit is reported, but store no more. */
            tb->num_links++;
            return;
        }
        int cap = tb->cap_links ? 2 * tb->cap_links : 16;
        mrc_link_t *p = realloc(tb->links, (size_t)cap * sizeof *p);
        if (!p) {
            tb->failed = 1;
            return;
        }
        tb->links = p;
        tb->cap_links = cap;
    }
    mrc_link_t *l = &tb->links[tb->num_links++];
    /* Values outside int become -1 and are refused in build; the file
     * reader names such values itself before they get here. */
    l->a = (a < INT32_MIN || a > INT32_MAX) ? -1 : (int)a;
    l->b = (b < INT32_MIN || b > INT32_MAX) ? -1 : (int)b;
    l->count = (count < INT32_MIN || count > INT32_MAX) ? -1 : (int)count;
    l->bandwidth_gbps = bandwidth_gbps;
    l->latency_ns = latency_ns;
    l->port_a = l->port_b = -1;
}

void mrc__topo_builder_set_pos(mrc__topo_builder_t *tb, int node, double x,
                               double y)
{
    tb->nodes[node].has_pos = 1;
    tb->nodes[node].x = x;
    tb->nodes[node].y = y;
}

void mrc__topo_builder_free(mrc__topo_builder_t *tb)
{
    mrc__topo_free_nodes(tb->nodes, tb->num_nodes);
    free(tb->links);
    free(tb->name);
    memset(tb, 0, sizeof *tb);
}

static mrc_status_t check_link(const mrc_link_t *l, int i, int num_nodes)
{
    if (l->a < 0 || l->a >= num_nodes || l->b < 0 || l->b >= num_nodes) {
        int bad = (l->a < 0 || l->a >= num_nodes) ? l->a : l->b;
        return mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                          "links[%d]: unknown node %d (nodes are 0..%d)", i,
                          bad, num_nodes - 1);
    }
    if (l->a == l->b)
        return mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                          "links[%d]: self-loop on node %d (a link joins two "
                          "different nodes)",
                          i, l->a);
    if (l->count < 1 || l->count > MRC_TOPO_MAX_LINK_COUNT)
        return mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                          "links[%d]: count %d between nodes %d and %d "
                          "(must be 1..%d)",
                          i, l->count, l->a, l->b, MRC_TOPO_MAX_LINK_COUNT);
    if (!isfinite(l->bandwidth_gbps) || l->bandwidth_gbps <= 0 ||
        l->bandwidth_gbps > MRC_TOPO_MAX_BANDWIDTH_GBPS)
        return mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                          "links[%d]: bandwidth_gbps %g between nodes %d and "
                          "%d (must be > 0 and <= %g)",
                          i, l->bandwidth_gbps, l->a, l->b,
                          MRC_TOPO_MAX_BANDWIDTH_GBPS);
    if (!isfinite(l->latency_ns) || l->latency_ns < 0 ||
        l->latency_ns > MRC_TOPO_MAX_LATENCY_NS)
        return mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                          "links[%d]: latency_ns %g between nodes %d and %d "
                          "(must be >= 0 and <= %g)",
                          i, l->latency_ns, l->a, l->b,
                          MRC_TOPO_MAX_LATENCY_NS);
    return MRC_OK;
}

/* Counts the nodes that cannot be reached from node 0 and names the first
 * of them; a breadth-first walk over the adjacency built below. */
static int find_unreached(const mrc_topo_t *t, int *first_unreached,
                          int *components)
{
    int n = t->num_nodes;
    int *comp = malloc((size_t)n * sizeof *comp);
    int *queue = malloc((size_t)n * sizeof *queue);
    if (!comp || !queue) {
        free(comp);
        free(queue);
        return -1;
    }
    for (int i = 0; i < n; i++)
        comp[i] = -1;
    int ncomp = 0;
    *first_unreached = -1;
    for (int s = 0; s < n; s++) {
        if (comp[s] >= 0)
            continue;
        if (ncomp == 1)
            *first_unreached = s;
        int head = 0, tail = 0;
        queue[tail++] = s;
        comp[s] = ncomp;
        while (head < tail) {
            int u = queue[head++];
            for (int k = t->node_link_off[u]; k < t->node_link_off[u + 1];
                 k++) {
                const mrc_link_t *l = &t->links[t->node_links[k]];
                int v = l->a == u ? l->b : l->a;
                if (comp[v] < 0) {
                    comp[v] = ncomp;
                    queue[tail++] = v;
                }
            }
        }
        ncomp++;
    }
    free(comp);
    free(queue);
    *components = ncomp;
    return 0;
}

/* Numbers each node's ports in link order and builds the per-node link and
 * port tables. Counts were validated, so the per-node port totals fit. */
static mrc_status_t index_ports(mrc_topo_t *t)
{
    int n = t->num_nodes;
    t->node_link_off = calloc((size_t)n + 1, sizeof(int));
    t->port_off = calloc((size_t)n + 1, sizeof(int));
    t->node_links = malloc(((size_t)t->num_links * 2 + 1) * sizeof(int));
    t->port_link = malloc(((size_t)t->num_physical * 2 + 1) * sizeof(int));
    int *fill = calloc((size_t)n, sizeof(int));
    if (!t->node_link_off || !t->port_off || !t->node_links || !t->port_link ||
        !fill) {
        free(fill);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory indexing ports");
    }
    for (int i = 0; i < t->num_links; i++) {
        const mrc_link_t *l = &t->links[i];
        t->node_link_off[l->a + 1]++;
        t->node_link_off[l->b + 1]++;
        t->port_off[l->a + 1] += l->count;
        t->port_off[l->b + 1] += l->count;
    }
    for (int u = 0; u < n; u++) {
        t->node_link_off[u + 1] += t->node_link_off[u];
        t->port_off[u + 1] += t->port_off[u];
    }
    for (int i = 0; i < t->num_links; i++) {
        mrc_link_t *l = &t->links[i];
        int ends[2] = {l->a, l->b};
        for (int e = 0; e < 2; e++) {
            int u = ends[e];
            int k = t->node_link_off[u] + fill[u]++;
            t->node_links[k] = i;
        }
    }
    free(fill);
    for (int u = 0; u < n; u++) {
        int next = 0;
        for (int k = t->node_link_off[u]; k < t->node_link_off[u + 1]; k++) {
            mrc_link_t *l = &t->links[t->node_links[k]];
            if (l->a == u)
                l->port_a = next;
            else
                l->port_b = next;
            for (int c = 0; c < l->count; c++)
                t->port_link[t->port_off[u] + next + c] = t->node_links[k];
            next += l->count;
        }
    }
    return MRC_OK;
}

/* The builder's link entries: each valid, no node over its ports, the
 * physical links countable; *physical gets their number. */
static mrc_status_t check_links(const mrc__topo_builder_t *tb,
                                int64_t *physical)
{
    if (tb->failed)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory building links");
    if (tb->num_links > MRC_TOPO_MAX_LINKS)
        return mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                          "%d link entries (at most %d)", tb->num_links,
                          MRC_TOPO_MAX_LINKS);
    int64_t *ports = calloc((size_t)tb->num_nodes, sizeof *ports);
    if (!ports)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    mrc_status_t st = MRC_OK;
    *physical = 0;
    for (int i = 0; i < tb->num_links && st == MRC_OK; i++) {
        const mrc_link_t *l = &tb->links[i];
        st = check_link(l, i, tb->num_nodes);
        if (st != MRC_OK)
            break;
        ports[l->a] += l->count;
        ports[l->b] += l->count;
        *physical += l->count;
        if (ports[l->a] > MRC_TOPO_MAX_PORTS ||
            ports[l->b] > MRC_TOPO_MAX_PORTS) {
            int u = ports[l->a] > MRC_TOPO_MAX_PORTS ? l->a : l->b;
            st = mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                            "links[%d]: node %d has more than %d ports", i, u,
                            MRC_TOPO_MAX_PORTS);
        }
    }
    free(ports);
    if (st == MRC_OK && *physical > INT32_MAX / 2)
        st = mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                        "%lld physical links (too many)", (long long)*physical);
    return st;
}

/* Every node reachable from node 0. */
static mrc_status_t check_connected(const mrc_topo_t *t)
{
    int first = -1, ncomp = 0;
    if (find_unreached(t, &first, &ncomp) != 0)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    if (ncomp > 1)
        return mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                          "graph is disconnected: node %d cannot be reached "
                          "from node 0 (%d separate parts)",
                          first, ncomp);
    return MRC_OK;
}

mrc_status_t mrc__topo_builder_build(mrc__topo_builder_t *tb,
                                     const char *origin, mrc_topo_t **out)
{
    mrc_topo_t *t = NULL;
    const char *where = origin ? origin : (tb->name ? tb->name : "topology");
    int64_t physical = 0;

    *out = NULL;
    mrc_status_t st = check_links(tb, &physical);
    if (st != MRC_OK)
        goto fail;
    t = calloc(1, sizeof *t);
    if (!t) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    t->name = tb->name;
    t->origin = mrc__strdup(where);
    t->num_nodes = tb->num_nodes;
    t->num_links = tb->num_links;
    t->num_physical = (int)physical;
    t->nodes = tb->nodes;
    t->links = tb->links;
    memset(tb, 0, sizeof *tb);
    if (!t->origin) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    st = index_ports(t);
    if (st == MRC_OK)
        st = check_connected(t);
    if (st != MRC_OK)
        goto fail;
    *out = t;
    return MRC_OK;

fail:
    mrc__error_prefix("%s", where);
    mrc__topo_builder_free(tb);
    mrc_topo_destroy(t);
    return st;
}

mrc_status_t mrc_topo_from_links(int num_nodes, const mrc_link_t *links,
                                 int num_links, mrc_topo_t **out)
{
    mrc__topo_builder_t tb;
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_topo_from_links: out is "
                                               "NULL");
    *out = NULL;
    if (num_links < 0 || (num_links > 0 && !links))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_topo_from_links: %d links at %p", num_links,
                          (const void *)links);
    mrc_status_t st = mrc__topo_builder_init(&tb, num_nodes, NULL);
    if (st != MRC_OK)
        return st;
    for (int i = 0; i < num_links; i++)
        mrc__topo_builder_add_link(&tb, links[i].a, links[i].b, links[i].count,
                                   links[i].bandwidth_gbps,
                                   links[i].latency_ns);
    return mrc__topo_builder_build(&tb, "links", out);
}
