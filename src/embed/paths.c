/*
 * Paths over the topology: the links between two nodes, the fewest-step
 * route the strategies forward a hop along, and, for the automatic
 * search, the link directions as arcs and the least-cost paths under
 * their prices.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- arcs and least-cost paths for the search -------------------------- */

int mrc__embed_arcs_init(mrc__embed_arcs_t *a, const mrc_topo_t *t)
{
    int nl = mrc_topo_num_links(t);
    a->num = 2 * nl;
    a->from = malloc((size_t)(a->num + 1) * sizeof *a->from);
    a->to = malloc((size_t)(a->num + 1) * sizeof *a->to);
    a->cap = malloc((size_t)(a->num + 1) * sizeof *a->cap);
    if (!a->from || !a->to || !a->cap)
        return -1;
    for (int i = 0; i < nl; i++) {
        const mrc_link_t *l = mrc_topo_link(t, i);
        a->from[2 * i] = a->to[2 * i + 1] = l->a;
        a->to[2 * i] = a->from[2 * i + 1] = l->b;
        a->cap[2 * i] = a->cap[2 * i + 1] = l->count * l->bandwidth_gbps;
    }
    return 0;
}

void mrc__embed_arcs_free(mrc__embed_arcs_t *a)
{
    free(a->from);
    free(a->to);
    free(a->cap);
}

/* A binary min-heap of (dist, node) for the search below. */

static void heap_push(mrc__embed_heap_t *h, double k, int v)
{
    int i = h->n++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (h->key[p] <= k)
            break;
        h->key[i] = h->key[p];
        h->node[i] = h->node[p];
        i = p;
    }
    h->key[i] = k;
    h->node[i] = v;
}

static void heap_pop(mrc__embed_heap_t *h, double *k, int *v)
{
    *k = h->key[0];
    *v = h->node[0];
    double lk = h->key[--h->n];
    int lv = h->node[h->n], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->key[c + 1] < h->key[c])
            c++;
        if (h->key[c] >= lk)
            break;
        h->key[i] = h->key[c];
        h->node[i] = h->node[c];
        i = c;
    }
    h->key[i] = lk;
    h->node[i] = lv;
}

int mrc__embed_paths_init(mrc__embed_paths_t *p, const mrc_topo_t *t,
                          const mrc__embed_arcs_t *a)
{
    int n = mrc_topo_num_nodes(t);
    p->topo = t;
    p->arcs = a;
    p->dist = malloc((size_t)n * sizeof *p->dist);
    p->via = malloc((size_t)n * sizeof *p->via);
    p->heap.key = malloc((size_t)(a->num + n + 1) * sizeof(double));
    p->heap.node = malloc((size_t)(a->num + n + 1) * sizeof(int));
    return p->dist && p->via && p->heap.key && p->heap.node ? 0 : -1;
}

void mrc__embed_paths_free(mrc__embed_paths_t *p)
{
    free(p->dist);
    free(p->via);
    free(p->heap.key);
    free(p->heap.node);
}

void mrc__embed_paths_from(mrc__embed_paths_t *p, int src, const double *len)
{
    int n = mrc_topo_num_nodes(p->topo);
    for (int i = 0; i < n; i++) {
        p->dist[i] = INFINITY;
        p->via[i] = -1;
    }
    p->dist[src] = 0;
    p->heap.n = 0;
    heap_push(&p->heap, 0, src);
    while (p->heap.n > 0) {
        double d;
        int u;
        heap_pop(&p->heap, &d, &u);
        if (d > p->dist[u])
            continue;
        const int *links;
        int k = mrc_topo_node_links(p->topo, u, &links);
        for (int j = 0; j < k; j++) {
            const mrc_link_t *l = mrc_topo_link(p->topo, links[j]);
            int arc = 2 * links[j] + (l->a == u ? 0 : 1);
            int v = p->arcs->to[arc];
            double nd = d + len[arc];
            if (nd < p->dist[v]) {
                p->dist[v] = nd;
                p->via[v] = arc;
                heap_push(&p->heap, nd, v);
            }
        }
    }
}
