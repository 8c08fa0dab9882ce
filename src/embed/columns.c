/*
 * The columns of the search's linear program: a column is a directed ring
 * of one group with a route for each hop, added with its reverse; the
 * program over them (one row per link direction, its capacity, and one
 * per group, its rate) is solved by lp.c.
 */
#include <stdlib.h>
#include <string.h>

#include "lp.h"
#include "search.h"

void mrc__embed_column_free(mrc__embed_column_t *c)
{
    free(c->order);
    free(c->arc_off);
    free(c->arcs);
}

static mrc__embed_column_t *colset_new(mrc__embed_colset_t *s)
{
    if (mrc__grow((void **)&s->cols, &s->cap, s->num + 1, sizeof *s->cols))
        return NULL;
    mrc__embed_column_t *c = &s->cols[s->num++];
    memset(c, 0, sizeof *c);
    return c;
}

static int same_column(const mrc__embed_column_t *x,
                       const mrc__embed_column_t *y)
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

/* Builds a column for `order` with each hop routed along the least-cost
 * paths under `len` (searched again from each hop's source). */
int mrc__embed_make_column(mrc__embed_column_t *c, int g, const int *order,
                           int n, mrc__paths_t *p, const double *len)
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
    int *route = malloc((size_t)(p->graph->num_nodes + 1) * sizeof *route);
    if (!route)
        return -1;
    for (int i = 0; i < n; i++) {
        int u = order[i], v = order[(i + 1) % n];
        mrc__paths_search(p, u, -1, len);
        int k = mrc__paths_route(p, v, NULL, route) - 1;
        if (k < 0) { /* groups are connected: cannot happen */
            free(route);
            return -1;
        }
        if (used + k > cap) {
            cap = 2 * (used + k);
            int *q = realloc(c->arcs, (size_t)cap * sizeof *q);
            if (!q) {
                free(route);
                return -1;
            }
            c->arcs = q;
        }
        c->arc_off[i] = used;
        memcpy(c->arcs + used, route, (size_t)k * sizeof *route);
        used += k;
    }
    c->arc_off[n] = used;
    free(route);
    return 0;
}

/* The same ring travelled the other way: hops reversed, each route
 * reversed over the opposite direction of the same link entries. */
static int make_reverse(mrc__embed_column_t *r, const mrc__embed_column_t *c)
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

double mrc__embed_group_factor(int n)
{
    return 2.0 * (n - 1) / n;
}

/* Adds `order` routed under s->weight, and its reverse, unless already
 * present. Returns 1 if added, 0 if known, -1 on failure. */
int mrc__embed_add_ring_pair(mrc__embed_search_t *s, int g, const int *order,
                             int n)
{
    mrc__embed_column_t c;
    memset(&c, 0, sizeof c);
    if (mrc__embed_make_column(&c, g, order, n, &s->paths, s->weight) != 0) {
        mrc__embed_column_free(&c);
        return -1;
    }
    for (int i = 0; i < s->cols.num; i++)
        if (same_column(&c, &s->cols.cols[i])) {
            mrc__embed_column_free(&c);
            return 0;
        }
    mrc__embed_column_t *fwd = colset_new(&s->cols);
    if (!fwd) {
        mrc__embed_column_free(&c);
        return -1;
    }
    *fwd = c;
    int fi = s->cols.num - 1;
    mrc__embed_column_t *rev = colset_new(&s->cols);
    if (!rev)
        return -1;
    fwd = &s->cols.cols[fi]; /* the array may have moved */
    if (make_reverse(rev, fwd) != 0)
        return -1;
    fwd->reverse = s->cols.num - 1;
    rev->reverse = fi;
    return 1;
}

int mrc__embed_solve_lp(mrc__embed_search_t *s)
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
        const mrc__embed_column_t *col = &s->cols.cols[j];
        if (col->off)
            continue;
        double f = mrc__embed_group_factor(col->n);
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
