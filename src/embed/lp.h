/* A small dense simplex solver for the ring-share linear programs. */
#ifndef MRC_EMBED_LP_H
#define MRC_EMBED_LP_H

enum {
    MRC__LP_OPTIMAL = 0,
    MRC__LP_UNBOUNDED = 1,
    MRC__LP_LIMIT = 2,
    MRC__LP_NO_MEMORY = -1
};

/* Maximises c.x subject to A x <= b, x >= 0, with b >= 0 (so x = 0 is
 * feasible and no first phase is needed). A is m x n, row-major. On
 * MRC__LP_OPTIMAL fills x[n], dual[m] (the shadow price of each row) and
 * *value. Dantzig's rule, with Bland's rule after a run of degenerate
 * pivots so that it cannot cycle. */
int mrc__lp_maximize(int m, int n, const double *A, const double *b,
                     const double *c, double *x, double *dual, double *value);

#endif /* MRC_EMBED_LP_H */
