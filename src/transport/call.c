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
        n += snprintf(out + n, size - (size_t)n, " (%s)", mrc_op_name(op));
}

/* " by FAMILY" (" with C completion" too where that differs) when the
 * program is all the two calls differ in (ranks that chose different
 * programs for one call), else nothing: where the calls differ, their
 * programs may well differ too. */
static void family_text(mrc__call_t c, mrc__call_t other, char *out,
                        size_t size)
{
    uint64_t family = (uint64_t)0xff << 24;
    int f = (int)(c.meta >> 24 & 0xff), g = (int)(other.meta >> 24 & 0xff);
    if (f == g || c.count != other.count ||
        ((c.meta ^ other.meta) & ~family) != 0)
        out[0] = 0;
    else if ((f ^ g) & 0x80) /* the completion (bit 7), maybe both */
        snprintf(out, size, " by %s with %s completion",
                 mrc_algo_name((mrc_algo_t)(f & 0x7f)),
                 f & 0x80 ? "local" : "group");
    else
        snprintf(out, size, " by %s", mrc_algo_name((mrc_algo_t)(f & 0x7f)));
}

mrc_status_t mrc__call_mismatch(int a, mrc__call_t ca, int b, mrc__call_t cb)
{
    char da[96], db[96], fa[32], fb[32];
    mrc__call_describe(ca, da, sizeof da);
    mrc__call_describe(cb, db, sizeof db);
    family_text(ca, cb, fa, sizeof fa);
    family_text(cb, ca, fb, sizeof fb);
    return mrc__error(MRC_ERR_INVALID_ARG,
                      "the ranks disagree: rank %d called %s%s but rank %d "
                      "%s%s",
                      a, da, fa, b, db, fb);
}
