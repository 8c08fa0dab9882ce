/*
 * Inside the automatic search (auto.c): the link directions as arcs with
 * their capacities (paths.c), the candidate rings as
 * columns of the linear program (columns.c), and their pricing by a
 * travelling-salesman tour (tsp.c).
 */
#ifndef MRC_EMBED_SEARCH_H
#define MRC_EMBED_SEARCH_H

#include "common/paths.h"
#include "embed_internal.h"

/* ---- arcs (paths.c) ---------------------------------------------------- */

/* Link entries by direction: entry i from a to b is arc 2i, back 2i + 1. */
typedef struct mrc__embed_arcs {
    int num;     /* 2 * links */
    int *to;     /* [num]: the node it leads to */
    double *cap; /* GB/s */
} mrc__embed_arcs_t;

/* 0, or -1 out of memory (free it either way). */
int mrc__embed_arcs_init(mrc__embed_arcs_t *a, const mrc_topo_t *t);
void mrc__embed_arcs_free(mrc__embed_arcs_t *a);

/* ---- columns: directed rings with routes (columns.c) ------------------- */

typedef struct mrc__embed_column {
    int off; /* left out of the program (while thinning the solution) */
    int group;
    int n;
    int *order;   /* [n] */
    int *arc_off; /* [n+1]: hop i uses arcs[arc_off[i] .. arc_off[i+1]) */
    int *arcs;
    int reverse; /* index of the reversed column */
} mrc__embed_column_t;

typedef struct mrc__embed_colset {
    int num, cap;
    mrc__embed_column_t *cols;
} mrc__embed_colset_t;

/* The state of the search over all groups. */
typedef struct mrc__embed_search {
    mrc__embed_builder_t *b;
    mrc__embed_arcs_t arcs;
    mrc__graph_t graph;
    mrc__paths_t paths; /* over graph */
    mrc__embed_colset_t cols;
    int num_groups;   /* groups with two or more nodes */
    int *group_index; /* their builder indices */
    double *weight;   /* [arcs]: lengths for routing */
    double *y;        /* [cols + 1] */
    double *dual;     /* [rows] */
    double lambda;
} mrc__embed_search_t;

void mrc__embed_column_free(mrc__embed_column_t *c);
/* Builds a column for `order` with each hop routed along the least-cost
 * paths under `len`; 0, or -1 out of memory (free it either way). */
int mrc__embed_make_column(mrc__embed_column_t *c, int g, const int *order,
                           int n, mrc__paths_t *p, const double *len);
/* Adds `order` routed under s->weight, and its reverse, unless already
 * present. Returns 1 if added, 0 if known, -1 on failure. */
int mrc__embed_add_ring_pair(mrc__embed_search_t *s, int g, const int *order,
                             int n);
/* Solves the program over the columns not off: s->y, s->dual and
 * s->lambda; returns an MRC__LP_ status. */
int mrc__embed_solve_lp(mrc__embed_search_t *s);
/* The data a ring of n nodes moves over each hop, per byte: 2(n-1)/n. */
double mrc__embed_group_factor(int n);

/* ---- pricing (tsp.c) --------------------------------------------------- */

/* Prices group g: the cheapest ring under the shadow prices. Returns 1 if
 * it improves the program (and was added), 0 if not, -1 on failure. */
int mrc__embed_price_group(mrc__embed_search_t *s, int g);

#endif /* MRC_EMBED_SEARCH_H */
