/*
 * Data types, reduction operators and collectives: the names users see on
 * the command line and in the C API.
 */
#ifndef MRC_TYPES_H
#define MRC_TYPES_H

#include <stddef.h>

#include "mrc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mrc_dtype {
    MRC_INT8,
    MRC_UINT8,
    MRC_INT32,
    MRC_UINT32,
    MRC_INT64,
    MRC_UINT64,
    MRC_FLOAT16,  /* IEEE 754 binary16 */
    MRC_BFLOAT16, /* the top 16 bits of a binary32 */
    MRC_FLOAT32,
    MRC_FLOAT64,
    MRC_NUM_DTYPES
} mrc_dtype_t;

typedef enum mrc_op {
    MRC_SUM,
    MRC_PROD,
    MRC_MIN,
    MRC_MAX,
    MRC_AVG, /* the sum divided by the group's size. Integer types: the
                exact mean, rounded toward zero as C divides (-7/2 is -3;
                int8 {100, 100, 100, 100} gives 100), whatever the values;
                the sum is formed in 64-bit words (two a value for the
                64-bit types), so such a call moves 8 or 16 bytes a value.
                Float types: summed in the type, then divided (a float16
                sum past 65504 is inf, as with MRC_SUM). */
    MRC_NUM_OPS
} mrc_op_t;

typedef enum mrc_collective {
    MRC_ALLREDUCE,
    MRC_REDUCE_SCATTER,
    MRC_ALLGATHER,
    MRC_REDUCE,
    MRC_BROADCAST,
    MRC_NUM_COLLECTIVES
} mrc_collective_t;

/* Algorithm families: the shapes of program a collective can be compiled
 * into (docs/program-format.md). Every family is a program that the
 * checker proves, the executor runs and the simulator times.
 *   rings    the embedding's rings: reduce-scatter + allgather, chains
 *            for reduce and broadcast (links: any topology);
 *   direct1  one step: every node reads every peer's input (small);
 *   direct2  two steps: every node reduces its block read from every
 *            peer, then reads the other blocks from their owners;
 *   tree     recursive doubling / binomial tree (larger groups);
 *   hier     a family inside each host, rings between hosts.
 * MRC_ALGO_AUTO asks the selector (a cost model) to pick one. */
typedef enum mrc_algo {
    MRC_ALGO_AUTO = -1,
    MRC_ALGO_RINGS = 0,
    MRC_ALGO_DIRECT1,
    MRC_ALGO_DIRECT2,
    MRC_ALGO_TREE,
    MRC_ALGO_HIER,
    MRC_NUM_ALGOS
} mrc_algo_t;

/* When a rank's reduce or broadcast returns (the other collectives end
 * alike on every rank either way):
 *   group  once every rank of the group has begun the call alike: ranks
 *          that disagree on it fail on every rank in the same call.
 *   local  once this rank's own part is done, as MPI's collectives
 *          complete: the leaves of a reduce and the root of a broadcast
 *          do not wait for their peers, and may run calls ahead. Every
 *          rank that receives still compares the sender's call before it
 *          reads, so no rank takes data of another call; a rank that
 *          only sends learns of a disagreement at a later call. */
typedef enum mrc_completion {
    MRC_COMPLETION_GROUP = 0,
    MRC_COMPLETION_LOCAL,
    MRC_NUM_COMPLETIONS
} mrc_completion_t;

/* Bytes per element; 0 for an unknown type. */
MRC_EXTERN size_t mrc_dtype_size(mrc_dtype_t dtype);
/* "float32", "sum", "allreduce"; "?" for unknown values. */
MRC_EXTERN const char *mrc_dtype_name(mrc_dtype_t dtype);
MRC_EXTERN const char *mrc_op_name(mrc_op_t op);
MRC_EXTERN const char *mrc_collective_name(mrc_collective_t c);
/* "rings", "direct1", ...; "auto" for MRC_ALGO_AUTO. */
MRC_EXTERN const char *mrc_algo_name(mrc_algo_t a);
/* "group", "local"; "?" for unknown values. */
MRC_EXTERN const char *mrc_completion_name(mrc_completion_t c);
/* Parse names (dtypes also take i8 u8 i32 u32 i64 u64 f16 bf16 f32 f64;
 * collectives also reduce-scatter/reducescatter, allgather, bcast).
 * MRC_ERR_INVALID_ARG with the list of names if unknown. */
MRC_EXTERN mrc_status_t mrc_dtype_parse(const char *name, mrc_dtype_t *out);
MRC_EXTERN mrc_status_t mrc_op_parse(const char *name, mrc_op_t *out);
MRC_EXTERN mrc_status_t mrc_collective_parse(const char *name,
                                             mrc_collective_t *out);
/* "auto" or a family's name. */
MRC_EXTERN mrc_status_t mrc_algo_parse(const char *name, mrc_algo_t *out);
MRC_EXTERN mrc_status_t mrc_completion_parse(const char *name,
                                             mrc_completion_t *out);

#ifdef __cplusplus
}
#endif

#endif /* MRC_TYPES_H */
