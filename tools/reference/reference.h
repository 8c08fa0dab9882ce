/*
 * Exact inputs and the plain sequential reduction they are checked
 * against: small integers (or +-1 for products) so that every result is
 * exact whatever the order of reduction, except for avg on integer types,
 * whose inputs are the type's extremes so that a sum that wraps shows (the
 * expected mean is computed exactly). Used by `mrc run`, the benchmarks
 * and the tests.
 */
#ifndef MRC_REFERENCE_H
#define MRC_REFERENCE_H

#include <stddef.h>

#include "mrc/comm.h"
#include "mrc/types.h"

/* The input of group rank r at element i. */
double mrc__ref_input(int r, size_t i, mrc_dtype_t d, mrc_op_t op);
/* Stores v as element i of a buffer of dtype d. */
void mrc__ref_store(void *buf, size_t i, mrc_dtype_t d, double v);
/* The expected reduction at element i over ranks 0..n-1, as one element
 * of dtype d in out[] (compare bitwise). */
void mrc__ref_expect(void *out, size_t i, int n, mrc_dtype_t d, mrc_op_t op);

/* Fills a rank's send buffer for a collective (count as the C API counts
 * it); checks its receive buffer and returns the number of wrong
 * elements. */
void mrc__ref_fill(void *sendbuf, mrc_collective_t c, size_t count, int rank,
                   int n, mrc_dtype_t d, mrc_op_t op);
size_t mrc__ref_check(const void *recvbuf, mrc_collective_t c, size_t count,
                      int rank, int n, int root, mrc_dtype_t d, mrc_op_t op);

/* Calls collective c through the C API (allgather and broadcast ignore
 * op; only reduce and broadcast use root). */
mrc_status_t mrc__ref_call(mrc_collective_t c, const void *sendbuf,
                           void *recvbuf, size_t count, mrc_dtype_t d,
                           mrc_op_t op, int root, mrc_comm_t *comm);

/* Where a rank's send and receive buffers lie for collective c, given two
 * buffers a and b: a and b, or the in-place form within a (allgather:
 * send is block `rank` of recv; reduce-scatter: recv is block `rank` of
 * send; otherwise both are a). */
void mrc__ref_place(mrc_collective_t c, int in_place, size_t count,
                    size_t esize, int rank, char *a, char *b, char **send,
                    char **recv);

/* Under $MRC_ALGO (a family forced on every call; $MRC_HOSTS the hosts
 * for hier), whether the family does this call for a group of n: where
 * it does not, the call must fail as not applying (MRC_ERR_UNSUPPORTED),
 * and elsewhere run. 1 when no family is forced, or rings. */
int mrc__ref_family_applies(mrc_collective_t coll, size_t count, mrc_dtype_t d,
                            mrc_op_t op, int n);

#endif /* MRC_REFERENCE_H */
