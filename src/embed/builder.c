/*
 * The builder: the groups and rings a strategy (or the JSON reader)
 * states, as drafts that finish.c turns into an embedding. Out of memory
 * sets `failed` once; every later call is then a no-op.
 */
#include <stdlib.h>
#include <string.h>

#include "embed_internal.h"

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
    int **gn =
        realloc(b->group_nodes, (size_t)(b->num_groups + 1) * sizeof *gn);
    if (gn)
        b->group_nodes = gn;
    int *gs = realloc(b->group_size, (size_t)(b->num_groups + 1) * sizeof *gs);
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
