/*
 * Reduction kernels: every dtype x op, written as plain loops over
 * restrict pointers so that the compiler vectorises them (the 16-bit
 * floats go through float and round back to nearest even).
 */
#ifndef MRC_KERNELS_H
#define MRC_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "mrc/types.h"

/* dst[i] = a[i] op b[i]. dst may equal a (then it is dst op= b), but
 * must not otherwise overlap a or b. avg reduces as sum. */
void mrc__reduce(void *dst, const void *a, const void *b, size_t n,
                 mrc_dtype_t dtype, mrc_op_t op);

/* The same, writing dst around the cache where it can (large outputs that
 * nobody reads soon); and a copy that does the same. */
void mrc__reduce_stream(void *dst, const void *a, const void *b, size_t n,
                        mrc_dtype_t dtype, mrc_op_t op);
void mrc__copy_stream(void *dst, const void *src, size_t bytes);

/* dst[i] = dst[i] / divisor: the last step of avg (integer types divide
 * and round toward zero). */
void mrc__scale(void *dst, size_t n, mrc_dtype_t dtype, int divisor);

/* IEEE binary16 and bfloat16 to and from float, rounding to nearest even
 * (NaN stays NaN). */
float mrc__half_to_float(uint16_t h);
uint16_t mrc__float_to_half(float f);
float mrc__bf16_to_float(uint16_t b);
uint16_t mrc__float_to_bf16(float f);

#endif /* MRC_KERNELS_H */
