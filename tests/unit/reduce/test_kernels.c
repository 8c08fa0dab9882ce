/* Reduction kernels and the 16-bit float conversions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reduce/reduce.h"

static void test_half(void **state)
{
    (void)state;
    static const struct {
        float f;
        uint16_t h;
    } exact[] = {{0.0f, 0x0000},          {-0.0f, 0x8000}, {1.0f, 0x3c00},
                 {-2.0f, 0xc000},         {0.5f, 0x3800},  {65504.0f, 0x7bff},
                 {6.1035156e-5f, 0x0400}, /* smallest normal */
                 {5.9604645e-8f, 0x0001}, /* smallest subnormal */
                 {1024.0f, 0x6400},       {3.0f, 0x4200}};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        assert_int_equal(mrc__float_to_half(exact[i].f), exact[i].h);
        assert_true(mrc__half_to_float(exact[i].h) == exact[i].f);
    }
    /* Rounding to nearest even: 2049 lies between 2048 and 2050. */
    assert_int_equal(mrc__float_to_half(2049.0f), mrc__float_to_half(2048.0f));
    assert_int_equal(mrc__float_to_half(2051.0f), mrc__float_to_half(2052.0f));
    assert_int_equal(mrc__float_to_half(65520.0f), 0x7c00); /* to inf */
    assert_int_equal(mrc__float_to_half(INFINITY), 0x7c00);
    assert_true(isnan(mrc__half_to_float(mrc__float_to_half(NAN))));
    /* Every half converts to float and back unchanged. */
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
            continue; /* NaN payloads */
        assert_int_equal(mrc__float_to_half(mrc__half_to_float((uint16_t)h)),
                         h);
    }
}

static void test_bf16(void **state)
{
    (void)state;
    assert_int_equal(mrc__float_to_bf16(1.0f), 0x3f80);
    assert_true(mrc__bf16_to_float(0x3f80) == 1.0f);
    assert_int_equal(mrc__float_to_bf16(-3.0f), 0xc040);
    /* 257 lies between 256 and 258 (ties to even: 256). */
    assert_true(mrc__bf16_to_float(mrc__float_to_bf16(257.0f)) == 256.0f);
    assert_true(mrc__bf16_to_float(mrc__float_to_bf16(259.0f)) == 260.0f);
    assert_true(isnan(mrc__bf16_to_float(mrc__float_to_bf16(NAN))));
    for (uint32_t b = 0; b < 0x10000; b++) {
        if ((b & 0x7f80) == 0x7f80 && (b & 0x7f))
            continue;
        assert_int_equal(mrc__float_to_bf16(mrc__bf16_to_float((uint16_t)b)),
                         b);
    }
}

/* Each dtype x op against a scalar loop, three-operand and in place, on
 * lengths that exercise the vector loops' remainders. */
static double get(const void *buf, size_t i, mrc_dtype_t d)
{
    switch (d) {
    case MRC_INT8: return ((const int8_t *)buf)[i];
    case MRC_UINT8: return ((const uint8_t *)buf)[i];
    case MRC_INT32: return ((const int32_t *)buf)[i];
    case MRC_UINT32: return ((const uint32_t *)buf)[i];
    case MRC_INT64: return (double)((const int64_t *)buf)[i];
    case MRC_UINT64: return (double)((const uint64_t *)buf)[i];
    case MRC_FLOAT16: return mrc__half_to_float(((const uint16_t *)buf)[i]);
    case MRC_BFLOAT16: return mrc__bf16_to_float(((const uint16_t *)buf)[i]);
    case MRC_FLOAT32: return ((const float *)buf)[i];
    default: return ((const double *)buf)[i];
    }
}

static void put(void *buf, size_t i, mrc_dtype_t d, double v)
{
    switch (d) {
    case MRC_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case MRC_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case MRC_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case MRC_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case MRC_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case MRC_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case MRC_FLOAT16:
        ((uint16_t *)buf)[i] = mrc__float_to_half((float)v);
        break;
    case MRC_BFLOAT16:
        ((uint16_t *)buf)[i] = mrc__float_to_bf16((float)v);
        break;
    case MRC_FLOAT32: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = v; break;
    }
}

static void test_reduce_all(void **state)
{
    (void)state;
    const size_t lens[] = {0, 1, 7, 31, 257, 1000};
    for (int d = 0; d < MRC_NUM_DTYPES; d++)
        for (int op = 0; op < MRC_NUM_OPS; op++)
            for (size_t li = 0; li < 6; li++) {
                size_t n = lens[li], es = mrc_dtype_size((mrc_dtype_t)d);
                char *a = malloc(n * es + 1), *b = malloc(n * es + 1),
                     *out = malloc(n * es + 1);
                for (size_t i = 0; i < n; i++) {
                    put(a, i, (mrc_dtype_t)d, (double)(i % 7) + 1);
                    put(b, i, (mrc_dtype_t)d, (double)((i * 3) % 5) + 1);
                }
                mrc__reduce(out, a, b, n, (mrc_dtype_t)d, (mrc_op_t)op);
                for (size_t i = 0; i < n; i++) {
                    double x = (double)(i % 7) + 1,
                           y = (double)((i * 3) % 5) + 1;
                    double want = op == MRC_PROD  ? x * y
                                  : op == MRC_MIN ? (x < y ? x : y)
                                  : op == MRC_MAX ? (x > y ? x : y)
                                                  : x + y;
                    assert_true(get(out, i, (mrc_dtype_t)d) == want);
                }
                /* In place: a op= b gives the same. */
                mrc__reduce(a, a, b, n, (mrc_dtype_t)d, (mrc_op_t)op);
                assert_memory_equal(a, out, n * es);
                free(a);
                free(b);
                free(out);
            }
}

/* The 16-bit floats' vector lanes (where the processor has them) give
 * the bits of the one-at-a-time path: every pattern of a (NaNs with
 * payloads, infinities, subnormals among them) against a scattered b,
 * for every op, three-operand and in place, on a length whose tail the
 * scalar loop does. The reference converts each value, applies the op
 * in float as MIN and MAX do (a NaN picks the same side), and converts
 * back; where it is a NaN, the result must be one (of any sign and
 * payload: the sum of two NaNs is either, by the order a compiler
 * gives the operands). */
static int half_nan(uint16_t h, int bf)
{
    return bf ? (h & 0x7f80) == 0x7f80 && (h & 0x7f)
              : (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}

static void assert_half_equal(const uint16_t *got, const uint16_t *want,
                              size_t n, int bf)
{
    for (size_t i = 0; i < n; i++)
        if (half_nan(want[i], bf))
            assert_true(half_nan(got[i], bf));
        else
            assert_int_equal(got[i], want[i]);
}

static uint16_t half_ref(uint16_t x, uint16_t y, mrc_op_t op, int bf)
{
    float a = bf ? mrc__bf16_to_float(x) : mrc__half_to_float(x);
    float b = bf ? mrc__bf16_to_float(y) : mrc__half_to_float(y);
    float r = op == MRC_PROD  ? a * b
              : op == MRC_MIN ? (b < a ? b : a)
              : op == MRC_MAX ? (b > a ? b : a)
                              : a + b;
    return bf ? mrc__float_to_bf16(r) : mrc__float_to_half(r);
}

static void test_half_lanes(void **state)
{
    (void)state;
    const size_t n = 0x10000 + 5;
    uint16_t *a = malloc(n * 2), *b = malloc(n * 2), *out = malloc(n * 2),
             *want = malloc(n * 2);
    assert_non_null(a && b && out && want);
    for (int bf = 0; bf < 2; bf++) {
        mrc_dtype_t d = bf ? MRC_BFLOAT16 : MRC_FLOAT16;
        for (int op = 0; op < MRC_NUM_OPS; op++) {
            if (op == MRC_AVG)
                continue; /* a sum, then a scaling: test_avg_words */
            for (size_t i = 0; i < n; i++) {
                a[i] = (uint16_t)i;
                b[i] = (uint16_t)(i * 40503u + 17);
                want[i] = half_ref(a[i], b[i], (mrc_op_t)op, bf);
            }
            mrc__reduce(out, a, b, n, d, (mrc_op_t)op);
            assert_half_equal(out, want, n, bf);
            mrc__reduce(a, a, b, n, d, (mrc_op_t)op);
            assert_half_equal(a, want, n, bf);
        }
    }
    free(a);
    free(b);
    free(out);
    free(want);
}

/* mrc__copy in pieces: every byte at sizes about the piece's, from odd
 * addresses; and a take's copy onto an overlapping destination (an
 * in-place get of its own buffer) is still a memmove. */
static void test_copy_pieces(void **state)
{
    (void)state;
    const size_t p = MRC__COPY_PIECE;
    const size_t sizes[] = {0, 1, 63, p - 1, p, p + 1, 3 * p + 17};
    size_t most = 3 * p + 17 + 8;
    unsigned char *src = malloc(most), *dst = malloc(most);
    assert_non_null(src);
    assert_non_null(dst);
    for (size_t i = 0; i < most; i++)
        src[i] = (unsigned char)(i * 131 + 7);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (size_t off = 0; off < 3; off++) {
            memset(dst, 0xee, most);
            mrc__copy(dst + off, src + 1, sizes[k]);
            assert_memory_equal(dst + off, src + 1, sizes[k]);
            assert_int_equal(dst[off + sizes[k]], 0xee); /* not past it */
            if (off)
                assert_int_equal(dst[off - 1], 0xee); /* nor before */
        }
    /* Overlapping: a take moves the bytes as memmove does. */
    size_t n = 2 * p + 5;
    memcpy(dst, src, n + 8);
    mrc__take(dst + 8, NULL, dst, n, n, MRC_UINT8, MRC_SUM, 0);
    assert_memory_equal(dst + 8, src, n);
    free(src);
    free(dst);
}

static void test_scale_and_wrap(void **state)
{
    (void)state;
    int8_t v[4] = {-7, 7, 100, -128};
    mrc__scale(v, 4, MRC_INT8, 2); /* toward zero */
    assert_int_equal(v[0], -3);
    assert_int_equal(v[1], 3);
    assert_int_equal(v[2], 50);
    assert_int_equal(v[3], -64);
    int8_t w[1] = {100};
    mrc__scale(w, 1, MRC_INT8, 300); /* a divisor wider than the type */
    assert_int_equal(w[0], 0);
    /* Integer sums wrap, never trap (this also runs under UBSan). */
    int8_t a[1] = {127}, b[1] = {1}, o[1];
    mrc__reduce(o, a, b, 1, MRC_INT8, MRC_SUM);
    assert_int_equal(o[0], -128);
    int64_t c[1] = {INT64_MAX}, d[1] = {2}, e[1];
    mrc__reduce(e, c, d, 1, MRC_INT64, MRC_PROD);
    assert_true(e[0] == -2);
    float f[2] = {3.0f, 1.0f};
    mrc__scale(f, 2, MRC_FLOAT32, 3);
    assert_true(f[0] == 1.0f && f[1] == 1.0f / 3.0f);
}

#ifdef __SIZEOF_INT128__
__extension__ typedef __int128 i128;

/* avg's wide words: n values near the type's limits on each of k ranks,
 * widened, summed word by word in the wide type as the collectives do,
 * narrowed: the exact mean rounded toward zero, from and into buffers at
 * odd addresses. */
static void test_avg_words(void **state)
{
    (void)state;
    static const mrc_dtype_t ints[] = {MRC_INT8,   MRC_UINT8, MRC_INT32,
                                       MRC_UINT32, MRC_INT64, MRC_UINT64};
    static const i128 lim[][2] = {
        {INT8_MIN, INT8_MAX}, {0, UINT8_MAX},         {INT32_MIN, INT32_MAX},
        {0, UINT32_MAX},      {INT64_MIN, INT64_MAX}, {0, (i128)UINT64_MAX}};
    enum { N = 9, K = 5 };
    for (int ti = 0; ti < 6; ti++) {
        mrc_dtype_t d = ints[ti];
        size_t es = mrc_dtype_size(d);
        int words = mrc__avg_words(d);
        assert_int_equal(words, es == 8 ? 2 : 1);
        for (int k = 1; k <= K; k++) {
            unsigned char in[K][N * 8 + 1], out[N * 8 + 1];
            uint64_t wide[K][N * 2], sum[N * 2];
            i128 total[N] = {0};
            for (int r = 0; r < k; r++)
                for (int i = 0; i < N; i++) {
                    /* the limits, one off them, and small values */
                    i128 v = (i + r) % 3 == 0 ? lim[ti][1] - (i % 2)
                             : (i + r) % 3 == 1
                                 ? lim[ti][0] + (i % 2)
                                 : (i128)(lim[ti][0] < 0 ? -r - i : r + i);
                    uint64_t bits = (uint64_t)v;
                    memcpy(in[r] + 1 + (size_t)i * es, &bits, es); /* LE */
                    total[i] += v;
                }
            for (int r = 0; r < k; r++)
                mrc__avg_widen(wide[r], in[r] + 1, N, d);
            memcpy(sum, wide[0], sizeof sum);
            for (int r = 1; r < k; r++)
                mrc__reduce(sum, sum, wide[r], (size_t)(N * words),
                            mrc__avg_wide_dtype(d), MRC_SUM);
            mrc__avg_narrow(out + 1, sum, N, d, k);
            for (int i = 0; i < N; i++) {
                uint64_t want = (uint64_t)(total[i] / k), got = 0;
                memcpy(&got, out + 1 + (size_t)i * es, es);
                if (es < 8)
                    want &= ((uint64_t)1 << (8 * es)) - 1;
                assert_true(got == want);
            }
        }
    }
    assert_int_equal(mrc__avg_words(MRC_FLOAT32), 0);
    assert_int_equal(mrc__avg_words(MRC_BFLOAT16), 0);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_half_lanes),
        cmocka_unit_test(test_reduce_all),
        cmocka_unit_test(test_scale_and_wrap),
        cmocka_unit_test(test_copy_pieces),
#ifdef __SIZEOF_INT128__
        cmocka_unit_test(test_avg_words),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
