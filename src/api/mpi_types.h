/*
 * mrc's data types and operators as MPI's, for the programs that run the
 * same reduction both ways (the MPI tests, mrc-bench --mpi).
 * MPI_DATATYPE_NULL / MPI_OP_NULL where MPI has none.
 */
#ifndef MRC_MPI_TYPES_H
#define MRC_MPI_TYPES_H

#include <mpi.h>

#include "mrc/types.h"

static inline MPI_Datatype mrc__mpi_type(mrc_dtype_t d)
{
    switch (d) {
    case MRC_INT8: return MPI_INT8_T;
    case MRC_UINT8: return MPI_UINT8_T;
    case MRC_INT32: return MPI_INT32_T;
    case MRC_UINT32: return MPI_UINT32_T;
    case MRC_INT64: return MPI_INT64_T;
    case MRC_UINT64: return MPI_UINT64_T;
    case MRC_FLOAT32: return MPI_FLOAT;
    case MRC_FLOAT64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
    }
}

static inline MPI_Op mrc__mpi_op(mrc_op_t op)
{
    switch (op) {
    case MRC_SUM: return MPI_SUM;
    case MRC_PROD: return MPI_PROD;
    case MRC_MIN: return MPI_MIN;
    case MRC_MAX: return MPI_MAX;
    default: return MPI_OP_NULL;
    }
}

#endif /* MRC_MPI_TYPES_H */
