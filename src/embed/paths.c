/*
 * Paths over the topology: the links between two nodes, and the link
 * directions' capacities for the search (the topology's graph for the
 * shared path search is topo/graph.h).
 */
#include <stdlib.h>

#include "embed_internal.h"
#include "search.h"

int mrc__embed_links_between(const mrc_topo_t *topo, int u, int v)
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
