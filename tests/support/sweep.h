/*
 * The sweep of the collective tests: every collective x count x dtype x
 * op x in place or not, nested in that order, with the test's filter and
 * its callback for each case. The threads test (test_collectives.c), the
 * shared-memory ranks (shm_rank.c) and the MPI ranks (mpi_rank.c) walk
 * their cases through it, so that every rank of a run, whatever its
 * transport, walks the same cases in the same order.
 */
#ifndef MRC_TEST_SWEEP_H
#define MRC_TEST_SWEEP_H

#include <stddef.h>

#include "mrc/mrc.h"

/* One case of the sweep. */
typedef struct sweep_case {
    mrc_collective_t coll;
    int kind; /* the count's index in the plan's counts */
    size_t count;
    mrc_dtype_t dtype;
    mrc_op_t op;
    int in_place;
    int reducing; /* the collective reduces (not allgather or broadcast) */
} sweep_case_t;

/* What to sweep. A NULL list is every value of its kind (every
 * collective, dtype or op); counts has no default. */
typedef struct sweep_plan {
    const mrc_collective_t *colls;
    int ncolls;
    const size_t *counts;
    int ncounts;
    const mrc_dtype_t *dtypes;
    int ndtypes;
    const mrc_op_t *ops;
    int nops;
    /* 0 leaves the case out (NULL: every case is run). */
    int (*keep)(const sweep_case_t *c, void *ctx);
    /* Runs one case; non-zero stops the sweep after it. */
    int (*run)(const sweep_case_t *c, void *ctx);
    void *ctx;
} sweep_plan_t;

/* 1 for a thin sweep ($MRC_TEST_SWEEP=thin), 0 for a whole one; any
 * other value of the variable ends the test, saying so (ranks that walked
 * different sweeps would wait on each other's calls). Tests with loops of
 * their own thin them as the sweep does. */
int sweep_is_thin(void);

/* Runs the plan's cases that `keep` keeps (and, with $MRC_TEST_SWEEP=thin,
 * that a thin sweep keeps: sweep.c); the number of cases run. */
long sweep_cases(const sweep_plan_t *plan);

#endif /* MRC_TEST_SWEEP_H */
