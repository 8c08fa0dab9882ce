/* The topology as the shared path search's graph (see graph.h). */
#include <stdlib.h>

#include "topo/graph.h"

int mrc__topo_graph_init(mrc__graph_t *g, const mrc_topo_t *t)
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

void mrc__topo_graph_free(mrc__graph_t *g)
{
    free(g->first);
    free(g->head);
    free(g->id);
}
