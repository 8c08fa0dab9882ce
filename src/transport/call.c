/*
 * Call descriptors: what the ranks of a call must agree on, and the
 * message when they do not.
 */
#include <stdio.h>

#include "common/common.h"
#include "transport/transport.h"

void mrc__call_describe(mrc__call_t c, char *out, size_t size)
{
    mrc_collective_t coll = (mrc_collective_t)(c.meta & 0xff);
    mrc_dtype_t dtype = (mrc_dtype_t)(c.meta >> 8 & 0xff);
    mrc_op_t op = (mrc_op_t)(c.meta >> 16 & 0xff);
    int root = (int)(uint32_t)(c.meta >> 32);
    int n = snprintf(out, size, "%s of %llu %s", mrc_collective_name(coll),
                     (unsigned long long)c.count, mrc_dtype_name(dtype));
    if (n < 0 || (size_t)n >= size)
        return;
    if (coll == MRC_REDUCE || coll == MRC_BROADCAST)
        n += snprintf(out + n, size - (size_t)n, " from root %d", root);
    if (n >= 0 && (size_t)n < size &&
        (coll == MRC_ALLREDUCE || coll == MRC_REDUCE ||
         coll == MRC_REDUCE_SCATTER))
        snprintf(out + n, size - (size_t)n, " (%s)", mrc_op_name(op));
}

mrc_status_t mrc__call_mismatch(int a, mrc__call_t ca, int b, mrc__call_t cb)
{
    char da[96], db[96];
    mrc__call_describe(ca, da, sizeof da);
    mrc__call_describe(cb, db, sizeof db);
    return mrc__error(MRC_ERR_INVALID_ARG,
                      "the ranks disagree: rank %d called %s but rank %d %s",
                      a, da, b, db);
}
