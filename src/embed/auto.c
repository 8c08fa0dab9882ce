/*
 * auto: rings for any topology and any groups.
 *
 * Small groups get an exact search by column generation. The linear
 * program has one column per directed ring (a cyclic order of a group's
 * nodes with a route for each hop), one row per link direction (its
 * capacity) and one per group:
 *
 *     maximise  lambda
 *     s.t.      sum_c  f_g(c) * uses(c, d) * y_c  <=  cap_d   (each d)
 *               lambda - sum_{c in g} y_c          <=  0       (each g)
 *
 * where f_g = 2(n-1)/n is the data a ring of n nodes moves over each hop.
 * lambda is then the allreduce bandwidth that every group reaches with all
 * of them running at once, and a ring's share is y_c over its group's sum.
 * Pricing a new column is a travelling-salesman problem over the group's
 * nodes with the link directions' shadow prices as lengths (shortest
 * routes between them): exact (Held-Karp) up to 16 nodes, a local search
 * above. Each ring is added with its reverse, and a ring and its reverse
 * at equal rates become one bidirectional ring.
 *
 * Larger groups fall back to the baseline ring here; mrc_embed_create also
 * tries the constructions for regular families (torus.c) and every named
 * strategy, and keeps the best.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "embed_internal.h"
#include "lp.h"

enum { EXACT_TSP_MAX = 16, SEARCH_MAX_NODES = 48, SEARCH_MAX_ROWS = 700,
       MAX_ROUNDS = 200 };

/* ---- arcs: link entries by direction ----------------------------------- */

typedef struct arcs {
    int num;    /* 2 * links */
    int *from;  /* [num] */
    int *to;    /* [num] */
    double *cap; /* GB/s */
} arcs_t;

static int arcs_init(arcs_t *a, const mrc_topo_t *t)
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

static void arcs_free(arcs_t *a)
{
    free(a->from);
    free(a->to);
    free(a->cap);
}

/* Dijkstra from `src` with arc lengths `len`; fills dist[] and the arc
 * that reaches each node (-1 for none). A binary heap of (dist, node). */
typedef struct heap {
    int n;
    double *key;
    int *node;
} heap_t;

static void heap_push(heap_t *h, double k, int v)
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

static void heap_pop(heap_t *h, double *k, int *v)
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

typedef struct paths {
    const mrc_topo_t *topo;
    const arcs_t *arcs;
    double *dist;
    int *via;
    heap_t heap;
} paths_t;

static int paths_init(paths_t *p, const mrc_topo_t *t, const arcs_t *a)
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

static void paths_free(paths_t *p)
{
    free(p->dist);
    free(p->via);
    free(p->heap.key);
    free(p->heap.node);
}

static void dijkstra(paths_t *p, int src, const double *len)
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

/* ---- columns: directed rings with routes ------------------------------- */

typedef struct column {
    int off; /* left out of the program (while thinning the solution) */
    int group;
    int n;
    int *order;   /* [n] */
    int *arc_off; /* [n+1]: hop i uses arcs[arc_off[i] .. arc_off[i+1]) */
    int *arcs;
    int reverse;  /* index of the reversed column */
} column_t;

typedef struct colset {
    int num, cap;
    column_t *cols;
} colset_t;

static void column_free(column_t *c)
{
    free(c->order);
    free(c->arc_off);
    free(c->arcs);
}

static column_t *colset_new(colset_t *s)
{
    if (mrc__grow((void **)&s->cols, &s->cap, s->num + 1, sizeof *s->cols))
        return NULL;
    column_t *c = &s->cols[s->num++];
    memset(c, 0, sizeof *c);
    return c;
}

static int same_column(const column_t *x, const column_t *y)
{
    if (x->group != y->group || x->n != y->n)
        return 0;
    /* Rings are cyclic: align on x's first node. */
    int shift = -1;
    for (int i = 0; i < y->n; i++)
        if (y->order[i] == x->order[0])
            shift = i;
    if (shift < 0)
        return 0;
    for (int i = 0; i < x->n; i++) {
        int j = (i + shift) % x->n;
        if (x->order[i] != y->order[j])
            return 0;
        int lx = x->arc_off[i + 1] - x->arc_off[i];
        int ly = y->arc_off[j + 1] - y->arc_off[j];
        if (lx != ly || memcmp(x->arcs + x->arc_off[i], y->arcs + y->arc_off[j],
                               (size_t)lx * sizeof(int)))
            return 0;
    }
    return 1;
}

/* Builds a column for `order` with each hop routed along the current
 * shortest paths (`paths` recomputed per source). */
static int make_column(column_t *c, int g, const int *order, int n,
                       paths_t *p, const double *len)
{
    c->group = g;
    c->n = n;
    c->order = malloc((size_t)n * sizeof *c->order);
    c->arc_off = malloc((size_t)(n + 1) * sizeof *c->arc_off);
    int cap = 4 * n + 4, used = 0;
    c->arcs = malloc((size_t)cap * sizeof *c->arcs);
    if (!c->order || !c->arc_off || !c->arcs)
        return -1;
    memcpy(c->order, order, (size_t)n * sizeof *order);
    int *stack = malloc((size_t)(mrc_topo_num_nodes(p->topo) + 1) *
                        sizeof *stack);
    if (!stack)
        return -1;
    for (int i = 0; i < n; i++) {
        int u = order[i], v = order[(i + 1) % n];
        dijkstra(p, u, len);
        int k = 0;
        for (int x = v; x != u; x = p->arcs->from[p->via[x]])
            stack[k++] = p->via[x];
        if (used + k > cap) {
            cap = 2 * (used + k);
            int *q = realloc(c->arcs, (size_t)cap * sizeof *q);
            if (!q) {
                free(stack);
                return -1;
            }
            c->arcs = q;
        }
        c->arc_off[i] = used;
        while (k > 0)
            c->arcs[used++] = stack[--k];
    }
    c->arc_off[n] = used;
    free(stack);
    return 0;
}

/* The same ring travelled the other way: hops reversed, each route
 * reversed over the opposite direction of the same link entries. */
static int make_reverse(column_t *r, const column_t *c)
{
    int n = c->n, total = c->arc_off[n];
    r->group = c->group;
    r->n = n;
    r->order = malloc((size_t)n * sizeof *r->order);
    r->arc_off = malloc((size_t)(n + 1) * sizeof *r->arc_off);
    r->arcs = malloc((size_t)(total + 1) * sizeof *r->arcs);
    if (!r->order || !r->arc_off || !r->arcs)
        return -1;
    /* Reverse order: order[0], order[n-1], ..., order[1]. Hop i of r goes
     * from r->order[i] to r->order[i+1], i.e. back along hop n-1-i of c. */
    for (int i = 0; i < n; i++)
        r->order[i] = c->order[(n - i) % n];
    int used = 0;
    for (int i = 0; i < n; i++) {
        int h = n - 1 - i;
        r->arc_off[i] = used;
        for (int k = c->arc_off[h + 1] - 1; k >= c->arc_off[h]; k--)
            r->arcs[used++] = c->arcs[k] ^ 1;
    }
    r->arc_off[n] = used;
    return 0;
}

/* ---- travelling salesman over a group ---------------------------------- */

static double tour_cost(const int *tour, int n, const double *cost)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += cost[tour[i] * n + tour[(i + 1) % n]];
    return s;
}

/* Held-Karp: exact, with node 0 fixed first. */
static int tsp_exact(int n, const double *cost, int *tour)
{
    size_t full = (size_t)1 << (n - 1);
    double *dp = malloc(full * (size_t)n * sizeof *dp);
    signed char *par = malloc(full * (size_t)n);
    if (!dp || !par) {
        free(dp);
        free(par);
        return -1;
    }
    for (size_t s = 0; s < full * (size_t)n; s++)
        dp[s] = INFINITY;
    for (int j = 1; j < n; j++) {
        size_t s = (size_t)1 << (j - 1);
        dp[s * (size_t)n + (size_t)j] = cost[0 * n + j];
        par[s * (size_t)n + (size_t)j] = 0;
    }
    for (size_t s = 1; s < full; s++)
        for (int j = 1; j < n; j++) {
            if (!(s & ((size_t)1 << (j - 1))))
                continue;
            double d = dp[s * (size_t)n + (size_t)j];
            if (!isfinite(d))
                continue;
            for (int k = 1; k < n; k++) {
                size_t bit = (size_t)1 << (k - 1);
                if (s & bit)
                    continue;
                size_t ns = s | bit;
                double nd = d + cost[j * n + k];
                if (nd < dp[ns * (size_t)n + (size_t)k]) {
                    dp[ns * (size_t)n + (size_t)k] = nd;
                    par[ns * (size_t)n + (size_t)k] = (signed char)j;
                }
            }
        }
    size_t s = full - 1;
    int last = 1;
    double best = INFINITY;
    for (int j = 1; j < n; j++) {
        double d = dp[s * (size_t)n + (size_t)j] + cost[j * n + 0];
        if (d < best) {
            best = d;
            last = j;
        }
    }
    for (int i = n - 1; i >= 1; i--) {
        tour[i] = last;
        int p = par[s * (size_t)n + (size_t)last];
        s &= ~((size_t)1 << (last - 1));
        last = p;
    }
    tour[0] = 0;
    free(dp);
    free(par);
    return 0;
}

/* Local search on an asymmetric tour: segment reversal (2-opt, costed in
 * O(1) from prefix sums of the tour's forward and backward lengths) and
 * moving one node elsewhere (or-opt), first improvement, until neither
 * helps. */
static void tour_prefix(const int *t, int n, const double *cost, double *F,
                        double *B)
{
    F[0] = B[0] = 0;
    for (int k = 0; k < n; k++) {
        int a = t[k], b = t[(k + 1) % n];
        F[k + 1] = F[k] + cost[a * n + b];
        B[k + 1] = B[k] + cost[b * n + a];
    }
}

static void local_search(int *t, int n, const double *cost, double *F,
                         double *B)
{
#define C(a, b) cost[(a) * n + (b)]
    for (int improved = 1; improved;) {
        improved = 0;
        tour_prefix(t, n, cost, F, B);
        /* Reverse t[i..j], 1 <= i < j <= n-1 (t[0] stays first). */
        for (int i = 1; i < n - 1 && !improved; i++)
            for (int j = i + 1; j < n && !improved; j++) {
                int p = t[i - 1], q = t[(j + 1) % n];
                double old = C(p, t[i]) + C(t[j], q) + (F[j] - F[i]);
                double neu = C(p, t[j]) + C(t[i], q) + (B[j] - B[i]);
                if (neu < old - 1e-12 * (1 + old)) {
                    for (int a = i, b = j; a < b; a++, b--) {
                        int x = t[a];
                        t[a] = t[b];
                        t[b] = x;
                    }
                    improved = 1;
                }
            }
        /* Move t[i] (i >= 1) to between t[j] and t[j+1]. */
        for (int i = 1; i < n && !improved; i++) {
            int p = t[i - 1], x = t[i], q = t[(i + 1) % n];
            double gain = C(p, x) + C(x, q) - C(p, q);
            for (int j = 0; j < n && !improved; j++) {
                int a = t[j], b = t[(j + 1) % n];
                if (a == x || b == x)
                    continue;
                if (C(a, x) + C(x, b) - C(a, b) < gain - 1e-12 * (1 + gain)) {
                    int dst = j < i ? j + 1 : j;
                    if (dst < i)
                        memmove(t + dst + 1, t + dst,
                                (size_t)(i - dst) * sizeof *t);
                    else
                        memmove(t + i, t + i + 1,
                                (size_t)(dst - i) * sizeof *t);
                    t[dst] = x;
                    improved = 1;
                }
            }
        }
    }
#undef C
}

/* Iterated local search: nearest neighbour, local search, then random
 * double-bridge kicks (with a fixed seed) kept when they lead lower. */
enum { ILS_KICKS = 40 };

static int tsp_search(int n, const double *cost, int *tour)
{
    char *used = calloc((size_t)n, 1);
    int *cand = malloc((size_t)n * sizeof *cand);
    double *F = malloc(((size_t)n + 1) * sizeof *F);
    double *B = malloc(((size_t)n + 1) * sizeof *B);
    if (!used || !cand || !F || !B) {
        free(used);
        free(cand);
        free(F);
        free(B);
        return -1;
    }
    tour[0] = 0;
    used[0] = 1;
    for (int i = 1; i < n; i++) {
        int best = -1;
        for (int j = 0; j < n; j++)
            if (!used[j] && (best < 0 || cost[tour[i - 1] * n + j] <
                                             cost[tour[i - 1] * n + best]))
                best = j;
        tour[i] = best;
        used[best] = 1;
    }
    local_search(tour, n, cost, F, B);
    double cur = tour_cost(tour, n, cost);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (int kick = 0; kick < ILS_KICKS && n >= 8; kick++) {
        int cut[3];
        for (int k = 0; k < 3; k++) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            cut[k] = 1 + (int)(seed % (uint64_t)(n - 1));
        }
        for (int a = 0; a < 3; a++) /* sort the cuts */
            for (int b = a + 1; b < 3; b++)
                if (cut[b] < cut[a]) {
                    int x = cut[a];
                    cut[a] = cut[b];
                    cut[b] = x;
                }
        if (cut[0] == cut[1] || cut[1] == cut[2])
            continue;
        /* t[0..c0) + t[c1..c2) + t[c0..c1) + t[c2..n) */
        int k = 0;
        for (int x = 0; x < cut[0]; x++)
            cand[k++] = tour[x];
        for (int x = cut[1]; x < cut[2]; x++)
            cand[k++] = tour[x];
        for (int x = cut[0]; x < cut[1]; x++)
            cand[k++] = tour[x];
        for (int x = cut[2]; x < n; x++)
            cand[k++] = tour[x];
        local_search(cand, n, cost, F, B);
        double c = tour_cost(cand, n, cost);
        if (c < cur - 1e-12 * (1 + cur)) {
            memcpy(tour, cand, (size_t)n * sizeof *tour);
            cur = c;
        }
    }
    free(used);
    free(cand);
    free(F);
    free(B);
    return 0;
}

/* ---- the search -------------------------------------------------------- */

typedef struct search {
    mrc__embed_builder_t *b;
    arcs_t arcs;
    paths_t paths;
    colset_t cols;
    int num_groups;     /* groups with two or more nodes */
    int *group_index;   /* their builder indices */
    double *weight;     /* [arcs]: lengths for routing */
    double *y;          /* [cols + 1] */
    double *dual;       /* [rows] */
    double lambda;
} search_t;

static void search_free(search_t *s)
{
    arcs_free(&s->arcs);
    paths_free(&s->paths);
    for (int i = 0; i < s->cols.num; i++)
        column_free(&s->cols.cols[i]);
    free(s->cols.cols);
    free(s->group_index);
    free(s->weight);
    free(s->y);
    free(s->dual);
}

static double group_factor(int n)
{
    return 2.0 * (n - 1) / n;
}

/* Adds `order` routed under s->weight, and its reverse, unless already
 * present. Returns 1 if added, 0 if known, -1 on failure. */
static int add_ring_pair(search_t *s, int g, const int *order, int n)
{
    column_t c;
    memset(&c, 0, sizeof c);
    if (make_column(&c, g, order, n, &s->paths, s->weight) != 0) {
        column_free(&c);
        return -1;
    }
    for (int i = 0; i < s->cols.num; i++)
        if (same_column(&c, &s->cols.cols[i])) {
            column_free(&c);
            return 0;
        }
    column_t *fwd = colset_new(&s->cols);
    if (!fwd) {
        column_free(&c);
        return -1;
    }
    *fwd = c;
    int fi = s->cols.num - 1;
    column_t *rev = colset_new(&s->cols);
    if (!rev)
        return -1;
    fwd = &s->cols.cols[fi]; /* the array may have moved */
    if (make_reverse(rev, fwd) != 0)
        return -1;
    fwd->reverse = s->cols.num - 1;
    rev->reverse = fi;
    return 1;
}

static int solve_lp(search_t *s)
{
    int rows = s->arcs.num + s->num_groups, n = s->cols.num + 1;
    double *A = calloc((size_t)rows * (size_t)n, sizeof *A);
    double *bvec = calloc((size_t)rows, sizeof *bvec);
    double *c = calloc((size_t)n, sizeof *c);
    free(s->y);
    free(s->dual);
    s->y = calloc((size_t)n, sizeof *s->y);
    s->dual = calloc((size_t)rows, sizeof *s->dual);
    int rc = -1;
    if (!A || !bvec || !c || !s->y || !s->dual)
        goto done;
    for (int d = 0; d < s->arcs.num; d++)
        bvec[d] = s->arcs.cap[d];
    for (int j = 0; j < s->cols.num; j++) {
        const column_t *col = &s->cols.cols[j];
        if (col->off)
            continue;
        double f = group_factor(col->n);
        for (int k = 0; k < col->arc_off[col->n]; k++)
            A[(size_t)col->arcs[k] * (size_t)n + (size_t)j] += f;
        A[(size_t)(s->arcs.num + col->group) * (size_t)n + (size_t)j] = -1;
    }
    for (int g = 0; g < s->num_groups; g++)
        A[(size_t)(s->arcs.num + g) * (size_t)n + (size_t)(n - 1)] = 1;
    c[n - 1] = 1;
    rc = mrc__lp_maximize(rows, n, A, bvec, c, s->y, s->dual, &s->lambda);
done:
    free(A);
    free(bvec);
    free(c);
    return rc;
}

/* Prices group g: the cheapest ring under the shadow prices. Returns 1 if
 * it improves the program (and was added), 0 if not, -1 on failure. */
static int price_group(search_t *s, int g)
{
    int bg = s->group_index[g];
    int n = s->b->group_size[bg];
    const int *nodes = s->b->group_nodes[bg];
    double maxw = 0;
    for (int d = 0; d < s->arcs.num; d++)
        maxw = s->dual[d] > maxw ? s->dual[d] : maxw;
    /* Prices, plus a little per step so that among equal prices the
     * shortest route wins. */
    for (int d = 0; d < s->arcs.num; d++)
        s->weight[d] = s->dual[d] + 1e-6 * maxw + 1e-12;
    double *cost = malloc((size_t)n * (size_t)n * sizeof *cost);
    int *tour = malloc((size_t)n * sizeof *tour);
    int *order = malloc((size_t)n * sizeof *order);
    int rc = -1;
    if (!cost || !tour || !order)
        goto done;
    for (int i = 0; i < n; i++) {
        dijkstra(&s->paths, nodes[i], s->weight);
        for (int j = 0; j < n; j++)
            cost[i * n + j] = s->paths.dist[nodes[j]];
    }
    if ((n <= EXACT_TSP_MAX ? tsp_exact(n, cost, tour)
                            : tsp_search(n, cost, tour)) != 0)
        goto done;
    for (int i = 0; i < n; i++)
        order[i] = nodes[tour[i]];
    column_t c;
    memset(&c, 0, sizeof c);
    if (make_column(&c, g, order, n, &s->paths, s->weight) != 0) {
        column_free(&c);
        goto done;
    }
    double price = 0;
    for (int k = 0; k < c.arc_off[n]; k++)
        price += s->dual[c.arcs[k]];
    column_free(&c);
    double v = s->dual[s->arcs.num + g];
    double reduced = v - group_factor(n) * price;
    rc = 0;
    if (reduced > 1e-9 * (v > 1 ? v : 1))
        rc = add_ring_pair(s, g, order, n);
done:
    free(cost);
    free(tour);
    free(order);
    return rc;
}

/* The program has many optimal solutions, and column generation ends on
 * one with many rings of small share; heuristic pricing, on larger groups,
 * leaves even more. Each ring costs a stream in the program, so keep few:
 * for K = 1, 2, ... take each group's K busiest rings (a ring with its
 * reverse counts once), improve the choice by swapping rings in and out,
 * and stop at the first K that reaches the optimum. If none does up to
 * MAX_RINGS (or the caller's limit), keep the smallest K within half a
 * percent of the best. K counts a ring with its reverse once; where their
 * rates differ the rest runs one way as a ring of its own. */
enum { MAX_RINGS = 12, MAX_SWAP_SOLVES = 3000 };

static void set_off(search_t *s, const char *chosen)
{
    for (int j = 0; j < s->cols.num; j++)
        s->cols.cols[j].off = !chosen[j];
}

/* Rings in the current solution: a ring and its reverse at equal rates
 * are one bidirectional ring; what is left of one is another. */
static int count_rings(const search_t *s)
{
    int rings = 0;
    for (int j = 0; j < s->cols.num; j++) {
        const column_t *c = &s->cols.cols[j];
        double a = s->y[j], b = s->y[c->reverse];
        if (j > c->reverse || (a <= 0 && b <= 0))
            continue;
        double both = a < b ? a : b, rest = a + b - 2 * both;
        rings += (both > 1e-9 * (a + b)) + (rest > 1e-9 * (a + b));
    }
    return rings;
}

static double pair_rate(const search_t *s, int j)
{
    return s->y[j] + s->y[s->cols.cols[j].reverse];
}

/* Swaps a chosen ring for an unchosen one of its group while that raises
 * the optimum; returns the value reached, or -1 on failure. */
static double improve_by_swaps(search_t *s, const int *pairs, int np,
                               char *chosen, double value, int *solves)
{
    for (int improved = 1; improved && *solves < MAX_SWAP_SOLVES;) {
        improved = 0;
        for (int a = 0; a < np && !improved; a++) {
            int x = pairs[a], rx = s->cols.cols[x].reverse;
            if (!chosen[x])
                continue;
            for (int b = 0; b < np && *solves < MAX_SWAP_SOLVES; b++) {
                int y = pairs[b], ry = s->cols.cols[y].reverse;
                if (chosen[y] || s->cols.cols[y].group != s->cols.cols[x].group)
                    continue;
                chosen[x] = chosen[rx] = 0;
                chosen[y] = chosen[ry] = 1;
                set_off(s, chosen);
                int r = solve_lp(s);
                (*solves)++;
                if (r == MRC__LP_NO_MEMORY)
                    return -1;
                if (r == MRC__LP_OPTIMAL && s->lambda > value * (1 + 1e-9)) {
                    value = s->lambda;
                    improved = 1;
                    break;
                }
                chosen[x] = chosen[rx] = 1;
                chosen[y] = chosen[ry] = 0;
            }
        }
    }
    return value;
}

static int select_rings(search_t *s, int max_rings)
{
    double optimum = s->lambda;
    int nc = s->cols.num, np = 0, rc = -1, solves = 0;
    int *pairs = malloc(((size_t)nc + 1) * sizeof *pairs);
    double *rate = malloc(((size_t)nc + 1) * sizeof *rate);
    char *choice[MAX_RINGS + 1] = {0};
    double value[MAX_RINGS + 1] = {0};
    int last = 0;
    if (!pairs || !rate)
        goto done;
    for (int j = 0; j < nc; j++) {
        const column_t *c = &s->cols.cols[j];
        rate[j] = pair_rate(s, j);
        if (j < c->reverse && rate[j] > 0)
            pairs[np++] = j;
    }
    for (int a = 1; a < np; a++) /* busiest first */
        for (int b = a; b > 0 && rate[pairs[b]] > rate[pairs[b - 1]]; b--) {
            int t = pairs[b];
            pairs[b] = pairs[b - 1];
            pairs[b - 1] = t;
        }
    int limit = max_rings > 0 && max_rings < MAX_RINGS ? max_rings : MAX_RINGS;
    for (int K = 1; K <= limit; K++) {
        char *chosen = choice[K] = calloc((size_t)nc + 1, 1);
        if (!chosen)
            goto done;
        int more = 0;
        for (int g = 0; g < s->num_groups; g++) {
            int taken = 0;
            for (int k = 0; k < np; k++) {
                const column_t *c = &s->cols.cols[pairs[k]];
                if (c->group != g)
                    continue;
                if (taken < K)
                    chosen[pairs[k]] = chosen[c->reverse] = 1;
                taken++;
            }
            more |= taken > K;
        }
        set_off(s, chosen);
        if (solve_lp(s) != MRC__LP_OPTIMAL)
            goto done;
        value[K] = improve_by_swaps(s, pairs, np, chosen, s->lambda, &solves);
        if (value[K] < 0)
            goto done;
        set_off(s, chosen);
        if (solve_lp(s) != MRC__LP_OPTIMAL)
            goto done;
        if (max_rings > 0 && K > 1 && count_rings(s) > max_rings)
            break; /* one-way remainders pushed it over the caller's limit */
        last = K;
        if (value[K] >= optimum * (1 - 1e-9) || !more)
            break;
    }
    double top = 0;
    for (int K = 1; K <= last; K++)
        top = value[K] > top ? value[K] : top;
    int pick = 1;
    while (pick < last && value[pick] < top * 0.995)
        pick++;
    set_off(s, choice[pick]);
    rc = solve_lp(s) == MRC__LP_OPTIMAL ? 0 : -1;
done:
    for (int K = 0; K <= MAX_RINGS; K++)
        free(choice[K]);
    free(pairs);
    free(rate);
    return rc;
}

/* Turns the solution into rings: a ring and its reverse at equal rates
 * become a bidirectional ring; what is left of one runs one way. */
static mrc_status_t emit_rings(search_t *s)
{
    int nc = s->cols.num;
    double *total = calloc((size_t)s->num_groups, sizeof *total);
    if (!total)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int j = 0; j < nc; j++)
        total[s->cols.cols[j].group] += s->y[j];
    mrc_status_t st = MRC_OK;
    int *route = malloc((size_t)(mrc_topo_num_nodes(s->b->topo) + 1) *
                        sizeof *route);
    int *links = malloc((size_t)(mrc_topo_num_nodes(s->b->topo) + 1) *
                        sizeof *links);
    if (!route || !links)
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int j = 0; j < nc && st == MRC_OK; j++) {
        const column_t *c = &s->cols.cols[j];
        double yj = s->y[j], yr = s->y[c->reverse];
        double both = yj < yr ? yj : yr;
        double t = total[c->group];
        double pieces[2] = {0, 0}; /* bidirectional, one way */
        if (j < c->reverse && both > 1e-6 * t)
            pieces[0] = 2 * both;
        if (yj - both > 1e-6 * t)
            pieces[1] = yj - both;
        for (int kind = 0; kind < 2 && st == MRC_OK; kind++) {
            if (pieces[kind] <= 0)
                continue;
            int bg = s->group_index[c->group];
            int r = mrc__embed_builder_add_ring(s->b, bg, c->order, c->n,
                                                kind == 0, pieces[kind] / t);
            if (r < 0) {
                st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
                break;
            }
            for (int i = 0; i < c->n; i++) {
                int len = 0;
                route[len] = c->order[i];
                for (int k = c->arc_off[i]; k < c->arc_off[i + 1]; k++) {
                    links[len] = c->arcs[k] / 2;
                    route[++len] = s->arcs.to[c->arcs[k]];
                }
                mrc__embed_builder_set_route(s->b, r, i, route, len + 1, links);
            }
        }
    }
    free(route);
    free(links);
    free(total);
    if (st != MRC_OK)
        return st;
    /* Dropping negligible rings leaves shares summing to just under 1;
     * rescale each group's. */
    for (int g = 0; g < s->b->num_groups; g++) {
        double sum = 0;
        for (int r = 0; r < s->b->num_rings; r++)
            if (s->b->rings[r].group == g)
                sum += s->b->rings[r].share;
        for (int r = 0; r < s->b->num_rings && sum > 0; r++)
            if (s->b->rings[r].group == g)
                s->b->rings[r].share /= sum;
    }
    return MRC_OK;
}

/* The exact search; MRC_ERR_UNSUPPORTED if the groups are too large. */
static mrc_status_t search_rings(mrc__embed_builder_t *b, int max_rings)
{
    search_t s;
    memset(&s, 0, sizeof s);
    s.b = b;
    mrc_status_t st = MRC_OK;
    int big = 0;
    for (int g = 0; g < b->num_groups; g++)
        big |= b->group_size[g] > SEARCH_MAX_NODES;
    if (big || 2 * mrc_topo_num_links(b->topo) > SEARCH_MAX_ROWS)
        return MRC_ERR_UNSUPPORTED;
    if (arcs_init(&s.arcs, b->topo) != 0 ||
        paths_init(&s.paths, b->topo, &s.arcs) != 0)
        goto oom;
    s.group_index = malloc((size_t)(b->num_groups + 1) * sizeof(int));
    s.weight = malloc((size_t)(s.arcs.num + 1) * sizeof *s.weight);
    if (!s.group_index || !s.weight)
        goto oom;
    for (int g = 0; g < b->num_groups; g++)
        if (b->group_size[g] >= 2)
            s.group_index[s.num_groups++] = g;
    if (s.num_groups == 0) {
        search_free(&s);
        return MRC_OK;
    }
    /* Start from each group's ring in rank order, routed by hop count and
     * capacity. */
    for (int d = 0; d < s.arcs.num; d++)
        s.weight[d] = 1 + 1e-3 / s.arcs.cap[d];
    for (int g = 0; g < s.num_groups; g++) {
        int bg = s.group_index[g];
        if (add_ring_pair(&s, g, b->group_nodes[bg], b->group_size[bg]) < 0)
            goto oom;
    }
    for (int round = 0; round < MAX_ROUNDS; round++) {
        int rc = solve_lp(&s);
        if (rc == MRC__LP_NO_MEMORY)
            goto oom;
        if (rc != MRC__LP_OPTIMAL) {
            st = mrc__error(MRC_ERR_INTERNAL, "ring search: linear program "
                            "ended with status %d", rc);
            break;
        }
        int added = 0;
        for (int g = 0; g < s.num_groups; g++) {
            int a = price_group(&s, g);
            if (a < 0)
                goto oom;
            added += a;
        }
        if (!added)
            break;
    }
    if (st == MRC_OK && select_rings(&s, max_rings) != 0)
        st = mrc__error(MRC_ERR_INTERNAL, "ring search: cannot re-solve");
    if (st == MRC_OK)
        st = emit_rings(&s);
    search_free(&s);
    return st;
oom:
    search_free(&s);
    return mrc__error(MRC_ERR_NO_MEMORY, "out of memory in the ring search");
}

mrc_status_t mrc__strategy_auto(const mrc_embed_config_t *cfg,
                                mrc__embed_builder_t *b)
{
    mrc_status_t st = mrc__embed_groups(b->topo, cfg, b);
    if (st != MRC_OK)
        return st;
    st = search_rings(b, cfg ? cfg->max_rings : 0);
    if (st == MRC_ERR_UNSUPPORTED) {
        /* Too large to search: the baseline here; mrc_embed_create also
         * tries the constructions and every named strategy and keeps the
         * best. */
        mrc__embed_builder_free(b);
        st = mrc__strategy_ring(cfg, b);
    }
    return st;
}
