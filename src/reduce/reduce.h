/*
 * Reduction kernels: every dtype x op, written as plain loops over
 * restrict pointers so that the compiler vectorises them (the 16-bit
 * floats go through float and round back to nearest even).
 */
#ifndef MRC_REDUCE_H
#define MRC_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "mrc/types.h"

/* dst[i] = a[i] op b[i]. dst may equal a (then it is dst op= b), but
 * must not otherwise overlap a or b. avg reduces as sum. */
void mrc__reduce(void *dst, const void *a, const void *b, size_t n,
                 mrc_dtype_t dtype, mrc_op_t op);

/* The same, writing dst around the cache where it can (large outputs that
 * nobody reads soon); and a copy that does the same. A rank's run writes
 * around the cache once its receive buffer is this large, unless its
 * communicator was given another threshold (mrc_config_t.stream_bytes,
 * $MRC_STREAM_BYTES, a profile's stream_bytes): the built-in one. */
#define MRC__NONTEMPORAL_BYTES ((uint64_t)8 << 20)
/* A get's reduction writes its block around the cache from this size, or
 * from the communicator's threshold where that is larger: a block of 1-8
 * MiB written around them is read back from memory by the next step or
 * call (P = 2 allreduce of 16 MiB, 8 MiB blocks: 1.82-2.03 ms a call in
 * the caches, 2.32-2.46 around them; shm and threads alike; from 32 MiB
 * blocks either way the same; docs/performance.md). */
#define MRC__GET_NONTEMPORAL_BYTES ((uint64_t)16 << 20)
/* Whether a get's reduction of a block of `bytes` writes around the cache
 * under the threshold `stream_bytes`: from the larger of the two;
 * UINT64_MAX (or SIZE_MAX, the profile's "never") never. The executor
 * and the simulator's node model both ask this. */
static inline int mrc__get_around(uint64_t bytes, uint64_t stream_bytes)
{
    uint64_t from = stream_bytes > MRC__GET_NONTEMPORAL_BYTES
                        ? stream_bytes
                        : MRC__GET_NONTEMPORAL_BYTES;
    return from != UINT64_MAX && from != (uint64_t)SIZE_MAX && bytes >= from;
}
void mrc__reduce_nontemporal(void *dst, const void *a, const void *b, size_t n,
                             mrc_dtype_t dtype, mrc_op_t op);
void mrc__copy_nontemporal(void *dst, const void *src, size_t bytes);

/* memcpy of non-overlapping buffers, in pieces of at most
 * MRC__COPY_PIECE bytes (kernels.c says why). */
#define MRC__COPY_PIECE ((size_t)256 << 10)
void mrc__copy(void *dst, const void *src, size_t bytes);

/* What a receive or a get does with the `bytes` (n elements) it took at
 * src: dst = local op src, or a copy of src when local is NULL; written
 * around the cache with `nontemporal`. */
void mrc__take(void *dst, const void *local, const void *src, size_t n,
               size_t bytes, mrc_dtype_t dtype, mrc_op_t op, int nontemporal);

/* dst[i] = dst[i] / divisor: the last step of avg (integer types divide
 * and round toward zero). */
void mrc__scale(void *dst, size_t n, mrc_dtype_t dtype, int divisor);

/* avg on integers runs as a sum over wider words, so that no partial sum
 * wraps, and is divided at the end: the exact mean, rounded toward zero
 * as C divides. mrc__avg_words: 64-bit words of mrc__avg_wide_dtype a
 * value (1 for 8- and 32-bit integers, 2 for 64-bit ones), 0 for the
 * float types (they average in their own type) and -1 where the compiler
 * has no 128-bit integers to put a 64-bit sum together. widen writes
 * n * words words from n values; narrow divides the summed words by
 * divisor (> 0) into n values. src and dst need no alignment. */
int mrc__avg_words(mrc_dtype_t dtype);
mrc_dtype_t mrc__avg_wide_dtype(mrc_dtype_t dtype);
void mrc__avg_widen(void *wide, const void *src, size_t n, mrc_dtype_t dtype);
void mrc__avg_narrow(void *dst, const void *wide, size_t n, mrc_dtype_t dtype,
                     int divisor);

/* IEEE binary16 and bfloat16 to and from float, rounding to nearest even
 * (NaN stays NaN). */
float mrc__half_to_float(uint16_t h);
uint16_t mrc__float_to_half(float f);
float mrc__bf16_to_float(uint16_t b);
uint16_t mrc__float_to_bf16(float f);

#endif /* MRC_REDUCE_H */
