/*
 * The topology object: the builder shared by every source, its validation,
 * port assignment and the read-only queries.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "topo_internal.h"

/* ---- builder ----------------------------------------------------------- */

mrc_status_t mrc__topo_builder_init(mrc__topo_builder_t *tb, long num_nodes,
                                    const char *name)
{
    memset(tb, 0, sizeof *tb);
    if (num_nodes < 1 || num_nodes > MRC_TOPO_MAX_NODES)
        return mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                          "%ld nodes: a topology has 1 to %d nodes",
                          num_nodes, MRC_TOPO_MAX_NODES);
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

static void free_nodes(mrc__topo_node_t *nodes, int n)
{
    if (!nodes)
        return;
    for (int i = 0; i < n; i++)
        free(nodes[i].name);
    free(nodes);
}

void mrc__topo_builder_free(mrc__topo_builder_t *tb)
{
    free_nodes(tb->nodes, tb->num_nodes);
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
    if (!t->node_link_off || !t->port_off || !t->node_links ||
        !t->port_link || !fill) {
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

mrc_status_t mrc__topo_builder_build(mrc__topo_builder_t *tb,
                                     const char *origin, mrc_topo_t **out)
{
    mrc_status_t st = MRC_OK;
    mrc_topo_t *t = NULL;
    const char *where = origin ? origin : (tb->name ? tb->name : "topology");

    *out = NULL;
    if (tb->failed) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory building links");
        goto fail;
    }
    if (tb->num_links > MRC_TOPO_MAX_LINKS) {
        st = mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                        "%d link entries (at most %d)", tb->num_links,
                        MRC_TOPO_MAX_LINKS);
        goto fail;
    }
    int64_t *ports = calloc((size_t)tb->num_nodes, sizeof *ports);
    if (!ports) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    int64_t physical = 0;
    for (int i = 0; i < tb->num_links && st == MRC_OK; i++) {
        const mrc_link_t *l = &tb->links[i];
        st = check_link(l, i, tb->num_nodes);
        if (st != MRC_OK)
            break;
        ports[l->a] += l->count;
        ports[l->b] += l->count;
        physical += l->count;
        if (ports[l->a] > MRC_TOPO_MAX_PORTS ||
            ports[l->b] > MRC_TOPO_MAX_PORTS) {
            int u = ports[l->a] > MRC_TOPO_MAX_PORTS ? l->a : l->b;
            st = mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                            "links[%d]: node %d has more than %d ports", i, u,
                            MRC_TOPO_MAX_PORTS);
        }
    }
    free(ports);
    if (st == MRC_OK && physical > INT32_MAX / 2)
        st = mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                        "%lld physical links (too many)", (long long)physical);
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
    if (st != MRC_OK)
        goto fail;

    int first = -1, ncomp = 0;
    if (find_unreached(t, &first, &ncomp) != 0) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    if (ncomp > 1) {
        st = mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                        "graph is disconnected: node %d cannot be reached "
                        "from node 0 (%d separate parts)",
                        first, ncomp);
        goto fail;
    }
    *out = t;
    return MRC_OK;

fail:
    mrc__error_prefix("%s", where);
    mrc__topo_builder_free(tb);
    mrc_topo_destroy(t);
    return st;
}

/* ---- creation from links and from whatever the user names ------------- */

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

static int looks_like_file(const char *spec)
{
    struct stat sb;
    size_t n = strlen(spec);
    if (n >= 5 && strcmp(spec + n - 5, ".json") == 0)
        return 1;
    /* Anything that exists is a file, so that a FIFO, a device or a
     * directory is refused as such when read, not taken for a spec. */
    return stat(spec, &sb) == 0;
}

mrc_status_t mrc_topo_create(const char *spec, mrc_topo_t **out)
{
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_topo_create: out is NULL");
    *out = NULL;
    if (!spec || !*spec)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "empty topology spec (try 'hcm8', 'ring:8' or a "
                          ".json file)");
    if (looks_like_file(spec))
        return mrc_topo_load(spec, out);
    return mrc_topo_generate(spec, out);
}

void mrc_topo_destroy(mrc_topo_t *t)
{
    if (!t)
        return;
    free_nodes(t->nodes, t->num_nodes);
    free(t->links);
    free(t->node_link_off);
    free(t->node_links);
    free(t->port_off);
    free(t->port_link);
    free(t->name);
    free(t->origin);
    free(t->failed);
    mrc_topo_destroy(t->intact);
    free(t);
}

/* ---- queries ----------------------------------------------------------- */

const char *mrc_topo_name(const mrc_topo_t *t)
{
    return t->name ? t->name : t->origin;
}

int mrc_topo_num_nodes(const mrc_topo_t *t)
{
    return t->num_nodes;
}

int mrc_topo_num_links(const mrc_topo_t *t)
{
    return t->num_links;
}

int mrc_topo_num_physical_links(const mrc_topo_t *t)
{
    return t->num_physical;
}

const mrc_link_t *mrc_topo_link(const mrc_topo_t *t, int i)
{
    if (i < 0 || i >= t->num_links)
        return NULL;
    return &t->links[i];
}

int mrc_topo_num_ports(const mrc_topo_t *t, int node)
{
    if (node < 0 || node >= t->num_nodes)
        return -1;
    return t->port_off[node + 1] - t->port_off[node];
}

int mrc_topo_node_links(const mrc_topo_t *t, int node, const int **links)
{
    if (node < 0 || node >= t->num_nodes)
        return -1;
    if (links)
        *links = &t->node_links[t->node_link_off[node]];
    return t->node_link_off[node + 1] - t->node_link_off[node];
}

mrc_status_t mrc_topo_port(const mrc_topo_t *t, int node, int port,
                           int *link, int *peer, int *peer_port)
{
    int nports = mrc_topo_num_ports(t, node);
    if (nports < 0)
        return mrc__error(MRC_ERR_INVALID_ARG, "%s: no node %d (nodes are "
                          "0..%d)", mrc_topo_name(t), node, t->num_nodes - 1);
    if (port < 0 || port >= nports)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: node %d has no port %d (ports are 0..%d)",
                          mrc_topo_name(t), node, port, nports - 1);
    int li = t->port_link[t->port_off[node] + port];
    const mrc_link_t *l = &t->links[li];
    int at_a = l->a == node;
    int offset = port - (at_a ? l->port_a : l->port_b);
    if (link)
        *link = li;
    if (peer)
        *peer = at_a ? l->b : l->a;
    if (peer_port)
        *peer_port = (at_a ? l->port_b : l->port_a) + offset;
    return MRC_OK;
}

const char *mrc_topo_node_name(const mrc_topo_t *t, int node)
{
    if (node < 0 || node >= t->num_nodes)
        return NULL;
    return t->nodes[node].name;
}

int mrc_topo_node_position(const mrc_topo_t *t, int node, double *x,
                           double *y)
{
    if (node < 0 || node >= t->num_nodes || !t->nodes[node].has_pos)
        return 0;
    if (x)
        *x = t->nodes[node].x;
    if (y)
        *y = t->nodes[node].y;
    return 1;
}

double mrc_topo_node_bandwidth_gbps(const mrc_topo_t *t, int node)
{
    const int *links;
    int n = mrc_topo_node_links(t, node, &links);
    double sum = 0;
    for (int k = 0; k < n; k++)
        sum += t->links[links[k]].count * t->links[links[k]].bandwidth_gbps;
    return sum;
}

double mrc_topo_total_bandwidth_gbps(const mrc_topo_t *t)
{
    double sum = 0;
    for (int i = 0; i < t->num_links; i++)
        sum += t->links[i].count * t->links[i].bandwidth_gbps;
    return sum;
}
