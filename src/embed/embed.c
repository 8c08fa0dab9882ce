/*
 * The embedding object: what a finished embedding answers (its groups,
 * rings, loads and figures) and its destruction. Building it is
 * builder.c and finish.c; checking it, verify.c.
 */
#include <stdlib.h>

#include "embed_internal.h"

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
