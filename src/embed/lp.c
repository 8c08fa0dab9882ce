/* Dense tableau simplex: [A | I | b] with the objective row below. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lp.h"

static const double EPS = 1e-11;
static const double PIVOT_TOL = 1e-9;

int mrc__lp_maximize(int m, int n, const double *A, const double *b,
                     const double *c, double *x, double *dual,
                     double *value)
{
    int w = n + m + 1; /* columns: x, slacks, right-hand side */
    double *t = calloc((size_t)(m + 1) * (size_t)w, sizeof *t);
    int *basis = malloc((size_t)(m ? m : 1) * sizeof *basis);
    if (!t || !basis) {
        free(t);
        free(basis);
        return MRC__LP_NO_MEMORY;
    }
#define T(i, j) t[(size_t)(i) * (size_t)w + (size_t)(j)]
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++)
            T(i, j) = A[(size_t)i * (size_t)n + (size_t)j];
        T(i, n + i) = 1;
        T(i, w - 1) = b[i];
        basis[i] = n + i;
    }
    for (int j = 0; j < n; j++)
        T(m, j) = -c[j];

    int status = MRC__LP_LIMIT, degenerate = 0;
    long max_pivots = 50L * (m + n) + 1000;
    for (long it = 0; it < max_pivots; it++) {
        int bland = degenerate > 50;
        int enter = -1;
        double best = -EPS;
        for (int j = 0; j < w - 1; j++)
            if (T(m, j) < best) {
                enter = j;
                if (bland)
                    break;
                best = T(m, j);
            }
        if (enter < 0) {
            status = MRC__LP_OPTIMAL;
            break;
        }
        /* Ratio test in two passes (after Harris): the smallest ratio
         * with a little slack, then among the rows within it the largest
         * pivot element, which keeps the tableau well conditioned; in
         * Bland's mode the lowest basis index instead, so it cannot
         * cycle. */
        int leave = -1;
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
            if (leave < 0 || (bland ? basis[i] < basis[leave] : a > best_a)) {
                leave = i;
                best_a = a;
            }
        }
        if (leave >= 0)
            ratio = T(leave, w - 1) / T(leave, enter);
        if (leave < 0) {
            status = MRC__LP_UNBOUNDED;
            break;
        }
        degenerate = ratio < 1e-12 ? degenerate + 1 : 0;
        double p = T(leave, enter);
        for (int j = 0; j < w; j++)
            T(leave, j) /= p;
        for (int i = 0; i <= m; i++) {
            double f = T(i, enter);
            if (i == leave || f == 0)
                continue;
            for (int j = 0; j < w; j++)
                T(i, j) -= f * T(leave, j);
        }
        basis[leave] = enter;
    }
    if (status == MRC__LP_OPTIMAL) {
        memset(x, 0, (size_t)n * sizeof *x);
        for (int i = 0; i < m; i++)
            if (basis[i] < n)
                x[basis[i]] = T(i, w - 1);
        for (int i = 0; i < m; i++)
            dual[i] = T(m, n + i);
        *value = T(m, w - 1);
    }
#undef T
    free(t);
    free(basis);
    return status;
}
