/*
 * The shared shortest-path search (paths.h): breadth first for the
 * fewest arcs, Dijkstra's search on the shared heap for least lengths,
 * and the route back from what either found.
 */
#include <math.h>
#include <stdlib.h>

#include "common/heap.h"
#include "common/paths.h"

int mrc__paths_init(mrc__paths_t *p, const mrc__graph_t *g)
{
    size_t n = (size_t)g->num_nodes + 1;
    size_t arcs = (size_t)g->first[g->num_nodes];
    p->graph = g;
    p->dist = malloc(n * sizeof *p->dist);
    p->via = malloc(n * sizeof *p->via);
    p->prev = malloc(n * sizeof *p->prev);
    p->reached = malloc(n * sizeof *p->reached);
    p->heap = malloc((arcs + n) * sizeof *p->heap);
    p->num_reached = p->heap_n = 0;
    if (!p->dist || !p->via || !p->prev || !p->reached || !p->heap)
        return -1;
    for (int v = 0; v < g->num_nodes; v++) {
        p->dist[v] = INFINITY;
        p->via[v] = p->prev[v] = -1;
    }
    return 0;
}

void mrc__paths_free(mrc__paths_t *p)
{
    free(p->dist);
    free(p->via);
    free(p->prev);
    free(p->reached);
    free(p->heap);
}

/* Forgets the last search: only the nodes it reached. */
static void reset(mrc__paths_t *p)
{
    for (int i = 0; i < p->num_reached; i++) {
        int v = p->reached[i];
        p->dist[v] = INFINITY;
        p->via[v] = p->prev[v] = -1;
    }
    p->num_reached = 0;
}

/* v reached over arc k from u at distance d. */
static void reach(mrc__paths_t *p, int v, int k, int u, double d)
{
    if (p->dist[v] == INFINITY)
        p->reached[p->num_reached++] = v;
    p->dist[v] = d;
    p->via[v] = p->graph->id[k];
    p->prev[v] = u;
}

static void breadth_first(mrc__paths_t *p, int dst)
{
    const mrc__graph_t *g = p->graph;
    int head = 0;
    while (head < p->num_reached && (dst < 0 || p->dist[dst] == INFINITY)) {
        int u = p->reached[head++];
        for (int k = g->first[u]; k < g->first[u + 1]; k++)
            if (p->dist[g->head[k]] == INFINITY)
                reach(p, g->head[k], k, u, p->dist[u] + 1);
    }
}

static int hent_before(const void *a, const void *b)
{
    return ((const mrc__paths_hent_t *)a)->dist <
           ((const mrc__paths_hent_t *)b)->dist;
}

static void dijkstra(mrc__paths_t *p, int src, const double *len)
{
    const mrc__graph_t *g = p->graph;
    mrc__paths_hent_t e = {0, src};
    p->heap_n = 0;
    mrc__heap_push(p->heap, &p->heap_n, sizeof e, &e, hent_before);
    while (p->heap_n > 0) {
        mrc__heap_pop(p->heap, &p->heap_n, sizeof e, &e, hent_before);
        int u = e.node;
        if (e.dist > p->dist[u])
            continue; /* stale: u was reached shorter since */
        for (int k = g->first[u]; k < g->first[u + 1]; k++) {
            int v = g->head[k];
            double nd = e.dist + len[g->id[k]];
            if (nd < p->dist[v]) {
                reach(p, v, k, u, nd);
                mrc__paths_hent_t next = {nd, v};
                mrc__heap_push(p->heap, &p->heap_n, sizeof next, &next,
                               hent_before);
            }
        }
    }
}

void mrc__paths_search(mrc__paths_t *p, int src, int dst, const double *len)
{
    reset(p);
    p->reached[p->num_reached++] = src;
    p->dist[src] = 0;
    if (len)
        dijkstra(p, src, len);
    else
        breadth_first(p, dst);
}

int mrc__paths_route(const mrc__paths_t *p, int v, int *nodes, int *arcs)
{
    if (p->dist[v] == INFINITY)
        return 0;
    int count = 1;
    for (int x = v; p->prev[x] >= 0; x = p->prev[x])
        count++;
    int i = count - 1;
    for (int x = v; i >= 0; x = p->prev[x], i--) {
        if (nodes)
            nodes[i] = x;
        if (arcs && i > 0)
            arcs[i - 1] = p->via[x];
    }
    return count;
}
