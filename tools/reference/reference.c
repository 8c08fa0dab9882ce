/* Exact inputs and the sequential reference (see reference.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "program/plan.h"
#include "reduce/reduce.h"
#include "reference.h"

static int signed_or_float(mrc_dtype_t d)
{
    return d != MRC_UINT8 && d != MRC_UINT32 && d != MRC_UINT64;
}

static int integer(mrc_dtype_t d)
{
    return d == MRC_INT8 || d == MRC_UINT8 || d == MRC_INT32 ||
           d == MRC_UINT32 || d == MRC_INT64 || d == MRC_UINT64;
}

/* avg on integers: the type's extremes and small values, so that a sum
 * formed in the element type would wrap and a negative mean shows how it
 * rounds. Each is exact as a double: near the 64-bit extremes a step of
 * 1024 (int64) or 2048 (uint64) is the spacing of doubles. */
static double avg_input(int r, size_t i, mrc_dtype_t d)
{
    double hi, lo, step = 1;
    switch (d) {
    case MRC_INT8: hi = INT8_MAX, lo = INT8_MIN; break;
    case MRC_UINT8: hi = UINT8_MAX, lo = 0; break;
    case MRC_INT32: hi = INT32_MAX, lo = INT32_MIN; break;
    case MRC_UINT32: hi = UINT32_MAX, lo = 0; break;
    case MRC_INT64:
        step = 1024, hi = ldexp(1, 63) - step, lo = -ldexp(1, 63);
        break;
    default: step = 2048, hi = ldexp(1, 64) - step, lo = 0; break;
    }
    switch (((size_t)r * 7 + i * 3) % 5) {
    case 0: return hi;
    case 1: return lo;
    case 2: return hi - 3 * step;
    case 3: return lo < 0 ? -3 : 3;
    default: return lo + 5 * step;
    }
}

double mrc__ref_input(int r, size_t i, mrc_dtype_t d, mrc_op_t op)
{
    if (op == MRC_AVG && integer(d))
        return avg_input(r, i, d);
    if (op == MRC_PROD) {
        if (signed_or_float(d))
            return ((size_t)r + i) % 3 == 0 ? -1 : 1;
        return ((size_t)r + i) % 4 == 0 ? 2 : 1;
    }
    long v = (long)(((size_t)r * 7 + i * 3) % 5);
    return signed_or_float(d) ? (double)(v - 2) : (double)v;
}

/* Buffers may lie at any address (the tests pass odd ones): stores go
 * through memcpy. */
#define STORE(T, x)                                                            \
    do {                                                                       \
        T t_ = (x);                                                            \
        memcpy((char *)buf + i * sizeof t_, &t_, sizeof t_);                   \
    } while (0)

void mrc__ref_store(void *buf, size_t i, mrc_dtype_t d, double v)
{
    switch (d) {
    case MRC_INT8: STORE(int8_t, (int8_t)v); break;
    case MRC_UINT8: STORE(uint8_t, (uint8_t)(uint64_t)v); break;
    case MRC_INT32: STORE(int32_t, (int32_t)v); break;
    case MRC_UINT32: STORE(uint32_t, (uint32_t)(uint64_t)v); break;
    case MRC_INT64: STORE(int64_t, (int64_t)v); break;
    case MRC_UINT64: STORE(uint64_t, (uint64_t)v); break;
    case MRC_FLOAT16: STORE(uint16_t, mrc__float_to_half((float)v)); break;
    case MRC_BFLOAT16: STORE(uint16_t, mrc__float_to_bf16((float)v)); break;
    case MRC_FLOAT32: STORE(float, (float)v); break;
    default: STORE(double, v); break;
    }
}

/* An integer of dtype d from the low bits of v (two's complement). */
static void store_int(void *out, mrc_dtype_t d, uint64_t v)
{
    size_t i = 0;
    void *buf = out;
    switch (d) {
    case MRC_INT8:
    case MRC_UINT8: STORE(uint8_t, (uint8_t)v); break;
    case MRC_INT32:
    case MRC_UINT32: STORE(uint32_t, (uint32_t)v); break;
    default: STORE(uint64_t, v); break;
    }
}

#ifdef __SIZEOF_INT128__
__extension__ typedef __int128 ref_i128;

/* The exact mean of the inputs, rounded toward zero as C divides. */
static void avg_expect(void *out, size_t i, int n, mrc_dtype_t d)
{
    ref_i128 sum = 0;
    for (int r = 0; r < n; r++) {
        double v = avg_input(r, i, d);
        sum += v < 0 ? (ref_i128)(int64_t)v : (ref_i128)(uint64_t)v;
    }
    store_int(out, d, (uint64_t)(sum / n));
}
#endif

void mrc__ref_expect(void *out, size_t i, int n, mrc_dtype_t d, mrc_op_t op)
{
#ifdef __SIZEOF_INT128__
    if (op == MRC_AVG && integer(d)) {
        avg_expect(out, i, n, d);
        return;
    }
#endif
    double acc = mrc__ref_input(0, i, d, op);
    uint64_t uacc = (uint64_t)acc;
    for (int r = 1; r < n; r++) {
        double v = mrc__ref_input(r, i, d, op);
        switch (op) {
        case MRC_PROD:
            acc *= v;
            uacc *= (uint64_t)v;
            break;
        case MRC_MIN: acc = v < acc ? v : acc; break;
        case MRC_MAX: acc = v > acc ? v : acc; break;
        default: acc += v; break;
        }
    }
    if (op == MRC_PROD && !signed_or_float(d)) { /* wraps like the type */
        store_int(out, d, uacc);
        return;
    }
    if (op == MRC_AVG) {
        switch (d) {
        case MRC_FLOAT64: acc = acc / n; break;
        case MRC_FLOAT32:
        case MRC_FLOAT16:
        case MRC_BFLOAT16: acc = (double)((float)acc / (float)n); break;
        default: acc = (double)((int64_t)acc / n); break; /* toward 0 */
        }
    }
    mrc__ref_store(out, 0, d, acc);
}

void mrc__ref_fill(void *sendbuf, mrc_collective_t c, size_t count, int rank,
                   int n, mrc_dtype_t d, mrc_op_t op)
{
    size_t elems = c == MRC_REDUCE_SCATTER ? count * (size_t)n : count;
    for (size_t j = 0; j < elems; j++)
        mrc__ref_store(sendbuf, j, d, mrc__ref_input(rank, j, d, op));
}

size_t mrc__ref_check(const void *recvbuf, mrc_collective_t c, size_t count,
                      int rank, int n, int root, mrc_dtype_t d, mrc_op_t op)
{
    size_t es = mrc_dtype_size(d), wrong = 0;
    size_t elems = c == MRC_ALLGATHER ? count * (size_t)n : count;
    unsigned char want[8];
    if (c == MRC_REDUCE && rank != root)
        return 0;
    for (size_t j = 0; j < elems; j++) {
        switch (c) {
        case MRC_REDUCE_SCATTER:
            mrc__ref_expect(want, (size_t)rank * count + j, n, d, op);
            break;
        case MRC_ALLGATHER:
            mrc__ref_store(want, 0, d,
                           mrc__ref_input((int)(j / count), j % count, d, op));
            break;
        case MRC_BROADCAST:
            mrc__ref_store(want, 0, d, mrc__ref_input(root, j, d, op));
            break;
        default: mrc__ref_expect(want, j, n, d, op);
        }
        wrong += memcmp((const char *)recvbuf + j * es, want, es) != 0;
    }
    return wrong;
}

mrc_status_t mrc__ref_call(mrc_collective_t c, const void *sendbuf,
                           void *recvbuf, size_t count, mrc_dtype_t d,
                           mrc_op_t op, int root, mrc_comm_t *comm)
{
    switch (c) {
    case MRC_ALLREDUCE:
        return mrc_allreduce(sendbuf, recvbuf, count, d, op, comm);
    case MRC_REDUCE_SCATTER:
        return mrc_reduce_scatter(sendbuf, recvbuf, count, d, op, comm);
    case MRC_ALLGATHER: return mrc_allgather(sendbuf, recvbuf, count, d, comm);
    case MRC_REDUCE:
        return mrc_reduce(sendbuf, recvbuf, count, d, op, root, comm);
    default: return mrc_broadcast(sendbuf, recvbuf, count, d, root, comm);
    }
}

void mrc__ref_place(mrc_collective_t c, int in_place, size_t count,
                    size_t esize, int rank, char *a, char *b, char **send,
                    char **recv)
{
    char *block = a + (size_t)rank * count * esize;
    *send = a;
    *recv = b;
    if (in_place && c == MRC_ALLGATHER) {
        *send = block;
        *recv = a;
    } else if (in_place && c == MRC_REDUCE_SCATTER) {
        *recv = block;
    } else if (in_place) {
        *recv = a;
    }
}

int mrc__ref_family_applies(mrc_collective_t coll, size_t count, mrc_dtype_t d,
                            mrc_op_t op, int n)
{
    mrc_algo_t a = MRC_ALGO_RINGS;
    const char *env = getenv("MRC_ALGO"), *hosts = getenv("MRC_HOSTS");
    if (!env || mrc_algo_parse(env, &a) != MRC_OK || a == MRC_ALGO_RINGS ||
        a == MRC_ALGO_AUTO)
        return 1;
    /* avg on integers runs as a sum of 64-bit words */
    if (op == MRC_AVG && mrc__avg_words(d) != 0 && coll != MRC_ALLGATHER &&
        coll != MRC_BROADCAST) {
        count *= (size_t)mrc__avg_words(d);
        d = MRC_INT64;
        op = MRC_SUM;
    }
    mrc_compile_config_t cc = {.collective = coll,
                               .count = count,
                               .dtype = d,
                               .op = op,
                               .algo = a,
                               .hosts = hosts ? atoi(hosts) : 1};
    return mrc__direct_applies(&cc, n) == MRC_OK;
}
