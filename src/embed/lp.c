/*
 * The linear-program solver of the search: a dense tableau simplex,
 * [A | I | b] with the objective row below.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lp.h"

static const double EPS = 1e-11;
static const double PIVOT_TOL = 1e-9;

/* The tableau: m rows of [A | I | b] and the objective row below, w
 * columns; basis[i] is the column basic in row i. */
typedef struct tableau {
    int m, w;
    double *t;
    int *basis;
} tableau_t;

#define T(i, j) tb->t[(size_t)(i) * (size_t)tb->w + (size_t)(j)]

/* The entering column: the most negative reduced cost (Dantzig), or in
 * Bland's mode the first negative one; -1 at the optimum. */
static int entering(const tableau_t *tb, int bland)
{
    int m = tb->m, enter = -1;
    double best = -EPS;
    for (int j = 0; j < tb->w - 1; j++)
        if (T(m, j) < best) {
            enter = j;
            if (bland)
                break;
            best = T(m, j);
        }
    return enter;
}

/* Ratio test in two passes (after Harris): the smallest ratio with a
 * little slack, then among the rows within it the largest pivot element,
 * which keeps the tableau well conditioned; in Bland's mode the lowest
 * basis index instead, so it cannot cycle. Returns the leaving row and
 * its ratio, or -1 if the column is unbounded. */
static int leaving(const tableau_t *tb, int enter, int bland, double *step)
{
    int m = tb->m, w = tb->w, leave = -1;
    double ratio = INFINITY;
    for (int i = 0; i < m; i++) {
        double a = T(i, enter);
        if (a > PIVOT_TOL) {
            double r = (T(i, w - 1) + 1e-9) / a;
            ratio = r < ratio ? r : ratio;
        }
    }
    double best_a = 0;
    for (int i = 0; i < m; i++) {
        double a = T(i, enter);
        if (a <= PIVOT_TOL || T(i, w - 1) / a > ratio)
            continue;
        if (leave < 0 ||
            (bland ? tb->basis[i] < tb->basis[leave] : a > best_a)) {
            leave = i;
            best_a = a;
        }
    }
    if (leave >= 0)
        *step = T(leave, w - 1) / T(leave, enter);
    return leave;
}

static void pivot(tableau_t *tb, int leave, int enter)
{
    int w = tb->w;
    double p = T(leave, enter);
    for (int j = 0; j < w; j++)
        T(leave, j) /= p;
    for (int i = 0; i <= tb->m; i++) {
        double f = T(i, enter);
        if (i == leave || f == 0)
            continue;
        for (int j = 0; j < w; j++)
            T(i, j) -= f * T(leave, j);
    }
    tb->basis[leave] = enter;
}

int mrc__lp_maximize(int m, int n, const double *A, const double *b,
                     const double *c, double *x, double *dual, double *value)
{
    tableau_t tab = {m, n + m + 1, NULL, NULL}, *tb = &tab;
    int w = tb->w; /* columns: x, slacks, right-hand side */
    tb->t = calloc((size_t)(m + 1) * (size_t)w, sizeof *tb->t);
    tb->basis = malloc((size_t)(m ? m : 1) * sizeof *tb->basis);
    if (!tb->t || !tb->basis) {
        free(tb->t);
        free(tb->basis);
        return MRC__LP_NO_MEMORY;
    }
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++)
            T(i, j) = A[(size_t)i * (size_t)n + (size_t)j];
        T(i, n + i) = 1;
        T(i, w - 1) = b[i];
        tb->basis[i] = n + i;
    }
    for (int j = 0; j < n; j++)
        T(m, j) = -c[j];

    int status = MRC__LP_LIMIT, degenerate = 0;
    long max_pivots = 50L * (m + n) + 1000;
    for (long it = 0; it < max_pivots; it++) {
        int bland = degenerate > 50;
        int enter = entering(tb, bland);
        if (enter < 0) {
            status = MRC__LP_OPTIMAL;
            break;
        }
        double ratio = 0;
        int leave = leaving(tb, enter, bland, &ratio);
        if (leave < 0) {
            status = MRC__LP_UNBOUNDED;
            break;
        }
        degenerate = ratio < 1e-12 ? degenerate + 1 : 0;
        pivot(tb, leave, enter);
    }
    if (status == MRC__LP_OPTIMAL) {
        memset(x, 0, (size_t)n * sizeof *x);
        for (int i = 0; i < m; i++)
            if (tb->basis[i] < n)
                x[tb->basis[i]] = T(i, w - 1);
        for (int i = 0; i < m; i++)
            dual[i] = T(m, n + i);
        *value = T(m, w - 1);
    }
    free(tb->t);
    free(tb->basis);
    return status;
}

#undef T
