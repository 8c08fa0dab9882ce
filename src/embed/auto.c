/*
 * auto: rings for any topology and any groups. This file owns the
 * search's driver (rounds of pricing and solving, thinning the solution
 * to few rings, and handing them to the builder); its pieces are the
 * arcs (paths.c), the shared path search (common/paths.c), the columns
 * and their program (columns.c, lp.c) and the pricing (tsp.c).
 *
 * Accepts  any topology and any groups (a group of one node gets no
 *          ring); the caller's max_rings bounds the rings of a group.
 * Returns  for each group, rings with shares and a route for each hop,
 *          that maximise the allreduce bandwidth every group reaches with
 *          all of them running at once.
 * Limits   the search runs when no group has more than SEARCH_MAX_NODES
 *          nodes and the topology has at most SEARCH_MAX_ROWS link
 *          directions; otherwise the baseline ring here (and
 *          mrc_embed_create keeps the best of it, the constructions and
 *          the named strategies). Pricing is exact up to 16 nodes and a
 *          local search above, so a larger group may stop short of the
 *          optimum; at most MAX_ROUNDS rounds; each group keeps its K
 *          busiest rings for a K of at most MAX_RINGS (select_rings).
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
 * The steps (search_rings):
 *
 *     each group's ring in rank order, routed by hops and capacity
 *                       |
 *                       v
 *     +---> solve the program over the columns (lp.c):
 *     |     rates y, shadow prices of the link directions and groups
 *     |                 |
 *     |                 v
 *     |     price each group (tsp.c): its cheapest ring under the
 *     |     prices; cheaper than the group's price? add it and its
 *     |     reverse as columns
 *     |                 |
 *     +-- one added ----+---- none (optimal), or MAX_ROUNDS
 *                       |
 *                       v
 *     select_rings: for K = 1, 2, ... each group's K busiest rings,
 *     improved by swaps, until K reaches the optimum (or the limit)
 *                       |
 *                       v
 *     emit_rings: a ring and its reverse at equal rates -> one
 *     bidirectional ring; the rest one way; shares y / group's sum
 *
 * Larger groups fall back to the baseline ring here; mrc_embed_create also
 * tries the constructions for regular families (torus.c) and every named
 * strategy, and keeps the best.
 */
#include <stdlib.h>
#include <string.h>

#include "lp.h"
#include "search.h"

enum { SEARCH_MAX_NODES = 48, SEARCH_MAX_ROWS = 700, MAX_ROUNDS = 200 };

static void search_free(mrc__embed_search_t *s)
{
    mrc__embed_arcs_free(&s->arcs);
    mrc__topo_graph_free(&s->graph);
    mrc__paths_free(&s->paths);
    for (int i = 0; i < s->cols.num; i++)
        mrc__embed_column_free(&s->cols.cols[i]);
    free(s->cols.cols);
    free(s->group_index);
    free(s->weight);
    free(s->y);
    free(s->dual);
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

static void set_off(mrc__embed_search_t *s, const char *chosen)
{
    for (int j = 0; j < s->cols.num; j++)
        s->cols.cols[j].off = !chosen[j];
}

/* Rings in the current solution: a ring and its reverse at equal rates
 * are one bidirectional ring; what is left of one is another. */
static int count_rings(const mrc__embed_search_t *s)
{
    int rings = 0;
    for (int j = 0; j < s->cols.num; j++) {
        const mrc__embed_column_t *c = &s->cols.cols[j];
        double a = s->y[j], b = s->y[c->reverse];
        if (j > c->reverse || (a <= 0 && b <= 0))
            continue;
        double both = a < b ? a : b, rest = a + b - 2 * both;
        rings += (both > 1e-9 * (a + b)) + (rest > 1e-9 * (a + b));
    }
    return rings;
}

static double pair_rate(const mrc__embed_search_t *s, int j)
{
    return s->y[j] + s->y[s->cols.cols[j].reverse];
}

/* Swaps a chosen ring for an unchosen one of its group while that raises
 * the optimum; returns the value reached, or -1 on failure. */
static double improve_by_swaps(mrc__embed_search_t *s, const int *pairs, int np,
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
                int r = mrc__embed_solve_lp(s);
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

static int select_rings(mrc__embed_search_t *s, int max_rings)
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
        const mrc__embed_column_t *c = &s->cols.cols[j];
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
                const mrc__embed_column_t *c = &s->cols.cols[pairs[k]];
                if (c->group != g)
                    continue;
                if (taken < K)
                    chosen[pairs[k]] = chosen[c->reverse] = 1;
                taken++;
            }
            more |= taken > K;
        }
        set_off(s, chosen);
        if (mrc__embed_solve_lp(s) != MRC__LP_OPTIMAL)
            goto done;
        value[K] = improve_by_swaps(s, pairs, np, chosen, s->lambda, &solves);
        if (value[K] < 0)
            goto done;
        set_off(s, chosen);
        if (mrc__embed_solve_lp(s) != MRC__LP_OPTIMAL)
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
    rc = mrc__embed_solve_lp(s) == MRC__LP_OPTIMAL ? 0 : -1;
done:
    for (int K = 0; K <= MAX_RINGS; K++)
        free(choice[K]);
    free(pairs);
    free(rate);
    return rc;
}

/* Turns the solution into rings: a ring and its reverse at equal rates
 * become a bidirectional ring; what is left of one runs one way. */
static mrc_status_t emit_rings(mrc__embed_search_t *s)
{
    int nc = s->cols.num;
    double *total = calloc((size_t)s->num_groups, sizeof *total);
    if (!total)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int j = 0; j < nc; j++)
        total[s->cols.cols[j].group] += s->y[j];
    mrc_status_t st = MRC_OK;
    int *route =
        malloc((size_t)(mrc_topo_num_nodes(s->b->topo) + 1) * sizeof *route);
    int *links =
        malloc((size_t)(mrc_topo_num_nodes(s->b->topo) + 1) * sizeof *links);
    if (!route || !links)
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int j = 0; j < nc && st == MRC_OK; j++) {
        const mrc__embed_column_t *c = &s->cols.cols[j];
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
    mrc__embed_search_t s;
    memset(&s, 0, sizeof s);
    s.b = b;
    mrc_status_t st = MRC_OK;
    int big = 0;
    for (int g = 0; g < b->num_groups; g++)
        big |= b->group_size[g] > SEARCH_MAX_NODES;
    if (big || 2 * mrc_topo_num_links(b->topo) > SEARCH_MAX_ROWS)
        return MRC_ERR_UNSUPPORTED;
    if (mrc__embed_arcs_init(&s.arcs, b->topo) != 0 ||
        mrc__topo_graph_init(&s.graph, b->topo) != 0 ||
        mrc__paths_init(&s.paths, &s.graph) != 0)
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
        if (mrc__embed_add_ring_pair(&s, g, b->group_nodes[bg],
                                     b->group_size[bg]) < 0)
            goto oom;
    }
    for (int round = 0; round < MAX_ROUNDS; round++) {
        int rc = mrc__embed_solve_lp(&s);
        if (rc == MRC__LP_NO_MEMORY)
            goto oom;
        if (rc != MRC__LP_OPTIMAL) {
            st = mrc__error(MRC_ERR_INTERNAL,
                            "ring search: linear program "
                            "ended with status %d",
                            rc);
            break;
        }
        int added = 0;
        for (int g = 0; g < s.num_groups; g++) {
            int a = mrc__embed_price_group(&s, g);
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
