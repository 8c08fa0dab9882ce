/* Names and sizes of data types, operators and collectives. */
#include <string.h>

#include "common.h"
#include "mrc/types.h"

static const struct {
    const char *name, *short_name;
    size_t size;
} dtypes[MRC_NUM_DTYPES] = {
    [MRC_INT8] = {"int8", "i8", 1},
    [MRC_UINT8] = {"uint8", "u8", 1},
    [MRC_INT32] = {"int32", "i32", 4},
    [MRC_UINT32] = {"uint32", "u32", 4},
    [MRC_INT64] = {"int64", "i64", 8},
    [MRC_UINT64] = {"uint64", "u64", 8},
    [MRC_FLOAT16] = {"float16", "f16", 2},
    [MRC_BFLOAT16] = {"bfloat16", "bf16", 2},
    [MRC_FLOAT32] = {"float32", "f32", 4},
    [MRC_FLOAT64] = {"float64", "f64", 8},
};

static const char *const ops[MRC_NUM_OPS] = {"sum", "prod", "min", "max",
                                             "avg"};

static const char *const collectives[MRC_NUM_COLLECTIVES] = {
    "allreduce", "reduce-scatter", "allgather", "reduce", "broadcast"};

static const char *const algos[MRC_NUM_ALGOS] = {"rings", "direct1", "direct2",
                                                 "tree", "hier"};

size_t mrc_dtype_size(mrc_dtype_t d)
{
    return (unsigned)d < MRC_NUM_DTYPES ? dtypes[d].size : 0;
}

const char *mrc_dtype_name(mrc_dtype_t d)
{
    return (unsigned)d < MRC_NUM_DTYPES ? dtypes[d].name : "?";
}

const char *mrc_op_name(mrc_op_t op)
{
    return (unsigned)op < MRC_NUM_OPS ? ops[op] : "?";
}

const char *mrc_collective_name(mrc_collective_t c)
{
    return (unsigned)c < MRC_NUM_COLLECTIVES ? collectives[c] : "?";
}

mrc_status_t mrc_dtype_parse(const char *name, mrc_dtype_t *out)
{
    for (int i = 0; name && i < MRC_NUM_DTYPES; i++)
        if (strcmp(name, dtypes[i].name) == 0 ||
            strcmp(name, dtypes[i].short_name) == 0) {
            *out = (mrc_dtype_t)i;
            return MRC_OK;
        }
    return mrc__error(MRC_ERR_INVALID_ARG,
                      "unknown data type '%s' (int8 uint8 int32 uint32 int64 "
                      "uint64 float16 bfloat16 float32 float64, or i8 u8 i32 "
                      "u32 i64 u64 f16 bf16 f32 f64)",
                      name ? name : "(null)");
}

mrc_status_t mrc_op_parse(const char *name, mrc_op_t *out)
{
    for (int i = 0; name && i < MRC_NUM_OPS; i++)
        if (strcmp(name, ops[i]) == 0) {
            *out = (mrc_op_t)i;
            return MRC_OK;
        }
    return mrc__error(MRC_ERR_INVALID_ARG,
                      "unknown operator '%s' (sum prod min max avg)",
                      name ? name : "(null)");
}

mrc_status_t mrc_collective_parse(const char *name, mrc_collective_t *out)
{
    static const struct {
        const char *alias;
        mrc_collective_t c;
    } aliases[] = {{"reducescatter", MRC_REDUCE_SCATTER},
                   {"reduce_scatter", MRC_REDUCE_SCATTER},
                   {"bcast", MRC_BROADCAST}};
    for (int i = 0; name && i < MRC_NUM_COLLECTIVES; i++)
        if (strcmp(name, collectives[i]) == 0) {
            *out = (mrc_collective_t)i;
            return MRC_OK;
        }
    for (size_t i = 0; name && i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(name, aliases[i].alias) == 0) {
            *out = aliases[i].c;
            return MRC_OK;
        }
    return mrc__error(MRC_ERR_INVALID_ARG,
                      "unknown collective '%s' (allreduce reduce-scatter "
                      "allgather reduce broadcast)",
                      name ? name : "(null)");
}

const char *mrc_algo_name(mrc_algo_t a)
{
    if (a == MRC_ALGO_AUTO)
        return "auto";
    return (unsigned)a < MRC_NUM_ALGOS ? algos[a] : "?";
}

const char *mrc_completion_name(mrc_completion_t c)
{
    return c == MRC_COMPLETION_GROUP   ? "group"
           : c == MRC_COMPLETION_LOCAL ? "local"
                                       : "?";
}

mrc_status_t mrc_completion_parse(const char *name, mrc_completion_t *out)
{
    for (int i = 0; name && i < MRC_NUM_COMPLETIONS; i++)
        if (strcmp(name, mrc_completion_name((mrc_completion_t)i)) == 0) {
            *out = (mrc_completion_t)i;
            return MRC_OK;
        }
    return mrc__error(MRC_ERR_INVALID_ARG,
                      "unknown completion '%s' (group local)",
                      name ? name : "(null)");
}

mrc_status_t mrc_algo_parse(const char *name, mrc_algo_t *out)
{
    if (name && strcmp(name, "auto") == 0) {
        *out = MRC_ALGO_AUTO;
        return MRC_OK;
    }
    for (int i = 0; name && i < MRC_NUM_ALGOS; i++)
        if (strcmp(name, algos[i]) == 0) {
            *out = (mrc_algo_t)i;
            return MRC_OK;
        }
    return mrc__error(MRC_ERR_INVALID_ARG,
                      "unknown algorithm '%s' (auto rings direct1 direct2 "
                      "tree hier)",
                      name ? name : "(null)");
}
