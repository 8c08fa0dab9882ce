/*
 * Pricing for the search: the cheapest ring of a group under the link
 * directions' shadow prices is a travelling-salesman tour over the
 * group's nodes, with the least-cost paths between them as lengths
 * (common/paths.h):
 * exact (Held-Karp) up to EXACT_TSP_MAX nodes, an iterated local search
 * above.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

enum { EXACT_TSP_MAX = 16 };

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
#define C(a, b) cost[(a)*n + (b)]
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

/* ---- pricing ----------------------------------------------------------- */

/* Prices group g: the cheapest ring under the shadow prices. Returns 1 if
 * it improves the program (and was added), 0 if not, -1 on failure. */
int mrc__embed_price_group(mrc__embed_search_t *s, int g)
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
        mrc__paths_search(&s->paths, nodes[i], -1, s->weight);
        for (int j = 0; j < n; j++)
            cost[i * n + j] = s->paths.dist[nodes[j]];
    }
    if ((n <= EXACT_TSP_MAX ? tsp_exact(n, cost, tour)
                            : tsp_search(n, cost, tour)) != 0)
        goto done;
    for (int i = 0; i < n; i++)
        order[i] = nodes[tour[i]];
    mrc__embed_column_t c;
    memset(&c, 0, sizeof c);
    if (mrc__embed_make_column(&c, g, order, n, &s->paths, s->weight) != 0) {
        mrc__embed_column_free(&c);
        goto done;
    }
    double price = 0;
    for (int k = 0; k < c.arc_off[n]; k++)
        price += s->dual[c.arcs[k]];
    mrc__embed_column_free(&c);
    double v = s->dual[s->arcs.num + g];
    double reduced = v - mrc__embed_group_factor(n) * price;
    rc = 0;
    if (reduced > 1e-9 * (v > 1 ? v : 1))
        rc = mrc__embed_add_ring_pair(s, g, order, n);
done:
    free(cost);
    free(tour);
    free(order);
    return rc;
}
