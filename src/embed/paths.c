/*
 * Paths over the topology: the links between two nodes, the topology's
 * link directions as the graph of the shared search (common/paths.h) that
 * routes the strategies' forwarded hops and the automatic search's rings,
 * and the link directions' capacities for the search.
 */
#include <stdlib.h>

#include "embed_internal.h"
#include "search.h"

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

/* Is link entry `li` a link between u and v? */
int mrc__embed_link_joins(const mrc_topo_t *t, int li, int u, int v)
{
    const mrc_link_t *l = mrc_topo_link(t, li);
    return l && ((l->a == u && l->b == v) || (l->a == v && l->b == u));
}

/* The topology's link directions as the shared search's graph: node u's
 * arcs in the order of its links; link entry i from a to b is arc id 2i,
 * back 2i + 1. */
int mrc__embed_graph_init(mrc__graph_t *g, const mrc_topo_t *t)
{
    int n = mrc_topo_num_nodes(t), total = 0;
    for (int u = 0; u < n; u++)
        total += mrc_topo_node_links(t, u, NULL);
    g->num_nodes = n;
    g->num_ids = 2 * mrc_topo_num_links(t);
    g->first = malloc(((size_t)n + 1) * sizeof *g->first);
    g->head = malloc(((size_t)total + 1) * sizeof *g->head);
    g->id = malloc(((size_t)total + 1) * sizeof *g->id);
    if (!g->first || !g->head || !g->id)
        return -1;
    int k = 0;
    for (int u = 0; u < n; u++) {
        const int *links;
        int m = mrc_topo_node_links(t, u, &links);
        g->first[u] = k;
        for (int j = 0; j < m; j++, k++) {
            const mrc_link_t *l = mrc_topo_link(t, links[j]);
            g->id[k] = 2 * links[j] + (l->a == u ? 0 : 1);
            g->head[k] = l->a == u ? l->b : l->a;
        }
    }
    g->first[n] = k;
    return 0;
}

void mrc__embed_graph_free(mrc__graph_t *g)
{
    free(g->first);
    free(g->head);
    free(g->id);
}

/* ---- arcs for the search ---------------------------------------------- */

int mrc__embed_arcs_init(mrc__embed_arcs_t *a, const mrc_topo_t *t)
{
    int nl = mrc_topo_num_links(t);
    a->num = 2 * nl;
    a->to = malloc((size_t)(a->num + 1) * sizeof *a->to);
    a->cap = malloc((size_t)(a->num + 1) * sizeof *a->cap);
    if (!a->to || !a->cap)
        return -1;
    for (int i = 0; i < nl; i++) {
        const mrc_link_t *l = mrc_topo_link(t, i);
        a->to[2 * i] = l->b;
        a->to[2 * i + 1] = l->a;
        a->cap[2 * i] = a->cap[2 * i + 1] = l->count * l->bandwidth_gbps;
    }
    return 0;
}

void mrc__embed_arcs_free(mrc__embed_arcs_t *a)
{
    free(a->to);
    free(a->cap);
}
