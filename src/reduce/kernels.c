/* The reduction kernels (see reduce.h). */
#include <string.h>

#include "common/common.h"
#include "reduce.h"

/* ---- streaming stores --------------------------------------------------- */

#if defined(__SSE2__)
#include <emmintrin.h>
#define MRC_HAVE_STREAM 1
#endif

/* Large outputs that no one reads soon are written around the cache: a
 * normal store first reads the line it writes (read-for-ownership), which
 * is a third more memory traffic for a copy and a quarter for a reduction. */
void mrc__copy_nontemporal(void *dst, const void *src, size_t bytes)
{
#ifdef MRC_HAVE_STREAM
    char *d = dst;
    const char *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (bytes < 4096 || head > bytes) {
        memcpy(dst, src, bytes);
        return;
    }
    memcpy(d, s, head);
    d += head;
    s += head;
    bytes -= head;
    size_t n = bytes / 64;
    for (size_t i = 0; i < n; i++) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + 64 * i));
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 64 * i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 64 * i + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + 64 * i + 48));
        _mm_stream_si128((__m128i *)(d + 64 * i), a);
        _mm_stream_si128((__m128i *)(d + 64 * i + 16), b);
        _mm_stream_si128((__m128i *)(d + 64 * i + 32), c);
        _mm_stream_si128((__m128i *)(d + 64 * i + 48), e);
    }
    memcpy(d + 64 * n, s + 64 * n, bytes - 64 * n);
    _mm_sfence();
#else
    memcpy(dst, src, bytes);
#endif
}

/* f32 sum into a separate output, streamed (the hot path of allreduce). */
static int f32_sum_stream(float *d, const float *a, const float *b, size_t n)
{
#ifdef MRC_HAVE_STREAM
    size_t head = ((16 - ((uintptr_t)d & 15)) & 15) / 4;
    if (((uintptr_t)d & 3) || n < 1024)
        return 0;
    size_t i = 0;
    for (; i < head; i++)
        d[i] = a[i] + b[i];
    for (; i + 4 <= n; i += 4)
        _mm_stream_ps(d + i,
                      _mm_add_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i)));
    for (; i < n; i++)
        d[i] = a[i] + b[i];
    _mm_sfence();
    return 1;
#else
    (void)d, (void)a, (void)b, (void)n;
    return 0;
#endif
}

/* ---- 16-bit floats ----------------------------------------------------- */

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float mrc__bf16_to_float(uint16_t b)
{
    return bits_float((uint32_t)b << 16);
}

uint16_t mrc__float_to_bf16(float f)
{
    uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet and NaN */
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

float mrc__half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) /* inf, NaN */
        return bits_float(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0)
            return bits_float(sign);
        /* Subnormal: value = man * 2^-24. */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return bits_float(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t mrc__float_to_half(float f)
{
    uint32_t u = float_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) /* NaN */
        return (uint16_t)(sign | 0x7e00);
    if (abs >= 0x477ff000u) /* rounds to >= 65520: infinity */
        return (uint16_t)(sign | 0x7c00);
    if (abs < 0x38800000u) { /* below 2^-14: subnormal or zero */
        /* Scale so that the half's least bit is the float's unit, and let
         * the float addition round to nearest even. */
        float v = bits_float(abs) + 0.5f;
        return (uint16_t)(sign | (float_bits(v) - 0x3f000000u));
    }
    uint32_t mant_odd = (abs >> 13) & 1;
    abs += 0xc8000fffu + mant_odd; /* rebias exponent, round to even */
    return (uint16_t)(sign | (abs >> 13));
}

/* ---- kernels ----------------------------------------------------------- */

#define SUM(x, y)  ((x) + (y))
#define PROD(x, y) ((x) * (y))
#define MIN(x, y)  ((y) < (x) ? (y) : (x))
#define MAX(x, y)  ((y) > (x) ? (y) : (x))

/* Integers reduce in their unsigned type: wrapping, never undefined. */
#define INT_KERNELS(name, T, U)                                                \
    static void name##_sum(T *restrict d, const T *restrict a,                 \
                           const T *restrict b, size_t n)                      \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = (T)((U)a[i] + (U)b[i]);                                     \
    }                                                                          \
    static void name##_sum_in(T *restrict d, const T *restrict b, size_t n)    \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = (T)((U)d[i] + (U)b[i]);                                     \
    }                                                                          \
    static void name##_prod(T *restrict d, const T *restrict a,                \
                            const T *restrict b, size_t n)                     \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = (T)((U)a[i] * (U)b[i]);                                     \
    }                                                                          \
    static void name##_prod_in(T *restrict d, const T *restrict b, size_t n)   \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = (T)((U)d[i] * (U)b[i]);                                     \
    }                                                                          \
    MINMAX_KERNELS(name, T)

#define MINMAX_KERNELS(name, T)                                                \
    static void name##_min(T *restrict d, const T *restrict a,                 \
                           const T *restrict b, size_t n)                      \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = MIN(a[i], b[i]);                                            \
    }                                                                          \
    static void name##_min_in(T *restrict d, const T *restrict b, size_t n)    \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = MIN(d[i], b[i]);                                            \
    }                                                                          \
    static void name##_max(T *restrict d, const T *restrict a,                 \
                           const T *restrict b, size_t n)                      \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = MAX(a[i], b[i]);                                            \
    }                                                                          \
    static void name##_max_in(T *restrict d, const T *restrict b, size_t n)    \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = MAX(d[i], b[i]);                                            \
    }

#define FLOAT_KERNELS(name, T)                                                 \
    static void name##_sum(T *restrict d, const T *restrict a,                 \
                           const T *restrict b, size_t n)                      \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = a[i] + b[i];                                                \
    }                                                                          \
    static void name##_sum_in(T *restrict d, const T *restrict b, size_t n)    \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] += b[i];                                                      \
    }                                                                          \
    static void name##_prod(T *restrict d, const T *restrict a,                \
                            const T *restrict b, size_t n)                     \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = a[i] * b[i];                                                \
    }                                                                          \
    static void name##_prod_in(T *restrict d, const T *restrict b, size_t n)   \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] *= b[i];                                                      \
    }                                                                          \
    MINMAX_KERNELS(name, T)

INT_KERNELS(i8, int8_t, uint8_t)
INT_KERNELS(u8, uint8_t, uint8_t)
INT_KERNELS(i32, int32_t, uint32_t)
INT_KERNELS(u32, uint32_t, uint32_t)
INT_KERNELS(i64, int64_t, uint64_t)
INT_KERNELS(u64, uint64_t, uint64_t)
FLOAT_KERNELS(f32, float)
FLOAT_KERNELS(f64, double)

/* 16-bit floats: widen, operate, round back; in blocks so the widened
 * values stay in cache. */
#define HALF_KERNEL(name, TO, FROM)                                            \
    static void name(uint16_t *d, const uint16_t *a, const uint16_t *b,        \
                     size_t n, mrc_op_t op)                                    \
    {                                                                          \
        float x[256], y[256];                                                  \
        for (size_t base = 0; base < n; base += 256) {                         \
            size_t m = n - base < 256 ? n - base : 256;                        \
            for (size_t i = 0; i < m; i++) {                                   \
                x[i] = TO(a[base + i]);                                        \
                y[i] = TO(b[base + i]);                                        \
            }                                                                  \
            switch (op) {                                                      \
            case MRC_PROD:                                                     \
                for (size_t i = 0; i < m; i++)                                 \
                    x[i] *= y[i];                                              \
                break;                                                         \
            case MRC_MIN:                                                      \
                for (size_t i = 0; i < m; i++)                                 \
                    x[i] = MIN(x[i], y[i]);                                    \
                break;                                                         \
            case MRC_MAX:                                                      \
                for (size_t i = 0; i < m; i++)                                 \
                    x[i] = MAX(x[i], y[i]);                                    \
                break;                                                         \
            default:                                                           \
                for (size_t i = 0; i < m; i++)                                 \
                    x[i] += y[i];                                              \
            }                                                                  \
            for (size_t i = 0; i < m; i++)                                     \
                d[base + i] = FROM(x[i]);                                      \
        }                                                                      \
    }

HALF_KERNEL(f16_any, mrc__half_to_float, mrc__float_to_half)
HALF_KERNEL(bf16_any, mrc__bf16_to_float, mrc__float_to_bf16)

/* ---- 16-bit floats, eight lanes at a time ------------------------------ */

/* The loops above convert one value at a time in software: float16 sum
 * at 0.73 GB/s, bfloat16 at 4.6, where float32 runs at 38-45 (a Zen 5
 * core, in cache: the profile's reduce table). Where the processor has
 * them, F16C's conversions (round to nearest even, as
 * mrc__float_to_half) and AVX2's integer lanes do eight at a time, and
 * give the same bits as the loops above for every result that is a
 * number: the operations are the same in float, and min and max take
 * their operands as MIN and MAX do (so a NaN picks the same side). A NaN
 * result is a NaN; its sign and payload are not promised (as in IEEE
 * 754, and in C, whose compilers may swap an addition's operands). Each
 * returns how many leading elements it did (a multiple of 8); the loops
 * above do the rest. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>

#define LANES_BY_OP(op, X, Y, R, BODY)                                         \
    switch (op) {                                                              \
    case MRC_PROD: BODY(R = _mm256_mul_ps(X, Y)); break;                       \
    case MRC_MIN: BODY(R = _mm256_min_ps(Y, X)); break;                        \
    case MRC_MAX: BODY(R = _mm256_max_ps(Y, X)); break;                        \
    default: BODY(R = _mm256_add_ps(X, Y)); break;                             \
    }

__attribute__((target("avx,f16c"))) static size_t
f16_lanes(uint16_t *d, const uint16_t *a, const uint16_t *b, size_t n,
          mrc_op_t op)
{
    size_t m = n & ~(size_t)7;
#define F16_BODY(OPERATION)                                                    \
    for (size_t i = 0; i < m; i += 8) {                                        \
        __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(a + i))); \
        __m256 y = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + i))); \
        __m256 r;                                                              \
        OPERATION;                                                             \
        __m128i h =                                                            \
            _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); \
        _mm_storeu_si128((__m128i *)(d + i), h);                               \
    }
    LANES_BY_OP(op, x, y, r, F16_BODY)
#undef F16_BODY
    return m;
}

__attribute__((target("avx2"))) static size_t bf16_lanes(uint16_t *d,
                                                         const uint16_t *a,
                                                         const uint16_t *b,
                                                         size_t n, mrc_op_t op)
{
    size_t m = n & ~(size_t)7;
    const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff);
    const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
    const __m256i inf = _mm256_set1_epi32(0x7f800000);
    const __m256i quiet = _mm256_set1_epi32(0x40);
#define BF16_IN(p)                                                             \
    _mm256_castsi256_ps(_mm256_slli_epi32(                                     \
        _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p))), 16))
#define BF16_BODY(OPERATION)                                                   \
    for (size_t i = 0; i < m; i += 8) {                                        \
        __m256 x = BF16_IN(a + i), y = BF16_IN(b + i), r;                      \
        OPERATION;                                                             \
        __m256i u = _mm256_castps_si256(r);                                    \
        __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);         \
        __m256i near = _mm256_srli_epi32(                                      \
            _mm256_add_epi32(_mm256_add_epi32(u, half), odd), 16);             \
        __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, magnitude), inf); \
        __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);          \
        __m256i v = _mm256_blendv_epi8(near, q, nan);                          \
        _mm_storeu_si128((__m128i *)(d + i),                                   \
                         _mm_packus_epi32(_mm256_castsi256_si128(v),           \
                                          _mm256_extracti128_si256(v, 1)));    \
    }
    LANES_BY_OP(op, x, y, r, BF16_BODY)
#undef BF16_BODY
#undef BF16_IN
    return m;
}

/* Whether the processor has F16C (and AVX, whose registers it uses):
 * asked of cpuid once (clang's __builtin_cpu_supports knows no "f16c",
 * and cpuid traps to the hypervisor in a VM: not a question for every
 * call). */
static int have_f16c(void)
{
    static _Atomic int known; /* 0: not asked yet, 1: no, 2: yes */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        unsigned a, b, c, d;
        k = __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) &&
                    (c & bit_F16C)
                ? 2
                : 1;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k == 2;
}

static void f16_reduce(uint16_t *d, const uint16_t *a, const uint16_t *b,
                       size_t n, mrc_op_t op)
{
    size_t done = 0;
    if (n >= 8 && have_f16c())
        done = f16_lanes(d, a, b, n, op);
    f16_any(d + done, a + done, b + done, n - done, op);
}

static void bf16_reduce(uint16_t *d, const uint16_t *a, const uint16_t *b,
                        size_t n, mrc_op_t op)
{
    size_t done = 0;
    if (n >= 8 && __builtin_cpu_supports("avx2"))
        done = bf16_lanes(d, a, b, n, op);
    bf16_any(d + done, a + done, b + done, n - done, op);
}
#else
#define f16_reduce  f16_any
#define bf16_reduce bf16_any
#endif

#define DISPATCH(name, T)                                                      \
    do {                                                                       \
        T *d = dst;                                                            \
        const T *x = a, *y = b;                                                \
        int in = (const void *)d == a;                                         \
        switch (op) {                                                          \
        case MRC_PROD:                                                         \
            in ? name##_prod_in(d, y, n) : name##_prod(d, x, y, n);            \
            return;                                                            \
        case MRC_MIN:                                                          \
            in ? name##_min_in(d, y, n) : name##_min(d, x, y, n);              \
            return;                                                            \
        case MRC_MAX:                                                          \
            in ? name##_max_in(d, y, n) : name##_max(d, x, y, n);              \
            return;                                                            \
        default: in ? name##_sum_in(d, y, n) : name##_sum(d, x, y, n); return; \
        }                                                                      \
    } while (0)

/* ---- buffers at any address -------------------------------------------- */

/* C lets a buffer of char hold values at any address, and an MPI program
 * may reduce byte-addressed data; loading a value as its type from an
 * address that is not a multiple of its alignment is undefined. The typed
 * loops above are only ever given aligned pointers: misaligned calls copy
 * blocks through aligned memory on the stack, so the aligned loops'
 * generated code is what it was. */
enum { BOUNCE_BYTES = 2048 };

static size_t elem_size(mrc_dtype_t dtype) /* mrc_dtype_size, inline */
{
    switch (dtype) {
    case MRC_INT8:
    case MRC_UINT8: return 1;
    case MRC_FLOAT16:
    case MRC_BFLOAT16: return 2;
    case MRC_INT32:
    case MRC_UINT32:
    case MRC_FLOAT32: return 4;
    default: return 8;
    }
}

static int misaligned(const void *p, size_t esize)
{
    return ((uintptr_t)p & (esize - 1)) != 0; /* sizes are powers of 2 */
}

static void reduce_aligned(void *dst, const void *a, const void *b, size_t n,
                           mrc_dtype_t dtype, mrc_op_t op)
{
    switch (dtype) {
    case MRC_INT8: DISPATCH(i8, int8_t);
    case MRC_UINT8: DISPATCH(u8, uint8_t);
    case MRC_INT32: DISPATCH(i32, int32_t);
    case MRC_UINT32: DISPATCH(u32, uint32_t);
    case MRC_INT64: DISPATCH(i64, int64_t);
    case MRC_UINT64: DISPATCH(u64, uint64_t);
    case MRC_FLOAT32: DISPATCH(f32, float);
    case MRC_FLOAT64: DISPATCH(f64, double);
    case MRC_FLOAT16: f16_reduce(dst, a, b, n, op); return;
    case MRC_BFLOAT16: bf16_reduce(dst, a, b, n, op); return;
    default: return;
    }
}

static void reduce_bounced(void *dst, const void *a, const void *b, size_t n,
                           mrc_dtype_t dtype, mrc_op_t op, size_t esize)
{
    _Alignas(16) unsigned char x[BOUNCE_BYTES], y[BOUNCE_BYTES];
    size_t per = BOUNCE_BYTES / esize;
    for (size_t i = 0; i < n; i += per) {
        size_t m = n - i < per ? n - i : per, off = i * esize;
        memcpy(x, (const char *)a + off, m * esize);
        memcpy(y, (const char *)b + off, m * esize);
        reduce_aligned(x, x, y, m, dtype, op);
        memcpy((char *)dst + off, x, m * esize); /* dst may be a */
    }
}

void mrc__reduce(void *dst, const void *a, const void *b, size_t n,
                 mrc_dtype_t dtype, mrc_op_t op)
{
    size_t esize = elem_size(dtype);
    if (esize > 1 && (misaligned(dst, esize) || misaligned(a, esize) ||
                      misaligned(b, esize)))
        reduce_bounced(dst, a, b, n, dtype, op, esize);
    else
        reduce_aligned(dst, a, b, n, dtype, op);
}

void mrc__reduce_nontemporal(void *dst, const void *a, const void *b, size_t n,
                             mrc_dtype_t dtype, mrc_op_t op)
{
    if (dtype == MRC_FLOAT32 && (op == MRC_SUM || op == MRC_AVG) && dst != a &&
        !misaligned(a, 4) && !misaligned(b, 4) && f32_sum_stream(dst, a, b, n))
        return;
    mrc__reduce(dst, a, b, n, dtype, op);
}

/* In pieces: glibc's memcpy copies with `rep movsb` up to a threshold
 * and with a vector loop past it, and on AMD it puts that threshold at
 * the core's L2 (1 MiB on the 2-core build machine: `ld.so
 * --list-diagnostics`, x86.cpu_features.rep_movsb_stop_threshold). The
 * collectives' copies of 1 MiB and more (a window, a peer's window, a
 * block) ran at half the speed there: direct1's allreduce of 1 MiB at 2
 * ranks took 207-225 us a call over shm and 263-282 over threads, 140-145
 * and 113-152 in pieces of 256 KiB-512 KiB (64 KiB: the same), and
 * direct1's time from 896 KiB to 1 MiB jumped from 137 us to 214. A
 * piece is several microseconds of copying: a call more is nothing. */
void mrc__copy(void *dst, const void *src, size_t bytes)
{
    char *d = dst;
    const char *s = src;
    for (size_t at = 0; at < bytes; at += MRC__COPY_PIECE)
        memcpy(d + at, s + at,
               bytes - at < MRC__COPY_PIECE ? bytes - at : MRC__COPY_PIECE);
}

void mrc__take(void *dst, const void *local, const void *src, size_t n,
               size_t bytes, mrc_dtype_t dtype, mrc_op_t op, int nontemporal)
{
    if (local)
        (nontemporal ? mrc__reduce_nontemporal : mrc__reduce)(dst, local, src,
                                                              n, dtype, op);
    else if (nontemporal)
        mrc__copy_nontemporal(dst, src, bytes);
    else if (!mrc__overlap(dst, bytes, src, bytes))
        mrc__copy(dst, src, bytes);
    else
        memmove(dst, src, bytes);
}

/* Integers divide in a 64-bit type, so that a divisor wider than the
 * element type (avg over 300 int8 values) stays exact. */
#define SCALE(T, W)                                                            \
    do {                                                                       \
        T *d = dst;                                                            \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = (T)((W)d[i] / (W)divisor);                                  \
    } while (0)

static void scale_aligned(void *dst, size_t n, mrc_dtype_t dtype, int divisor)
{
    switch (dtype) {
    case MRC_INT8: SCALE(int8_t, int64_t); break;
    case MRC_UINT8: SCALE(uint8_t, uint64_t); break;
    case MRC_INT32: SCALE(int32_t, int64_t); break;
    case MRC_UINT32: SCALE(uint32_t, uint64_t); break;
    case MRC_INT64: SCALE(int64_t, int64_t); break;
    case MRC_UINT64: SCALE(uint64_t, uint64_t); break;
    case MRC_FLOAT32: SCALE(float, float); break;
    case MRC_FLOAT64: SCALE(double, double); break;
    case MRC_FLOAT16: {
        uint16_t *d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] =
                mrc__float_to_half(mrc__half_to_float(d[i]) / (float)divisor);
        break;
    }
    case MRC_BFLOAT16: {
        uint16_t *d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] =
                mrc__float_to_bf16(mrc__bf16_to_float(d[i]) / (float)divisor);
        break;
    }
    default: break;
    }
}

void mrc__scale(void *dst, size_t n, mrc_dtype_t dtype, int divisor)
{
    size_t esize = elem_size(dtype);
    if (esize <= 1 || !misaligned(dst, esize)) {
        scale_aligned(dst, n, dtype, divisor);
        return;
    }
    _Alignas(16) unsigned char x[BOUNCE_BYTES];
    size_t per = BOUNCE_BYTES / esize;
    for (size_t i = 0; i < n; i += per) {
        size_t m = n - i < per ? n - i : per, off = i * esize;
        memcpy(x, (char *)dst + off, m * esize);
        scale_aligned(x, m, dtype, divisor);
        memcpy((char *)dst + off, x, m * esize);
    }
}

/* ---- avg on integers ---------------------------------------------------- */

/* A sum of n integers needs log2(n) more bits than they have, so the
 * partial sums of integer avg travel as 64-bit words: one a value for the
 * 8- and 32-bit types; for the 64-bit types two, the high half (signed
 * for int64) and the low 32 bits, each of whose sums over fewer than 2^31
 * ranks fits in 63 bits, put together in 128 bits at the end. User
 * buffers are read and written through memcpy: they need no alignment. */
#ifdef __SIZEOF_INT128__
__extension__ typedef __int128 mrc__i128;
__extension__ typedef unsigned __int128 mrc__u128;
#endif

int mrc__avg_words(mrc_dtype_t dtype)
{
    switch (dtype) {
    case MRC_INT8:
    case MRC_UINT8:
    case MRC_INT32:
    case MRC_UINT32: return 1;
    case MRC_INT64:
    case MRC_UINT64:
#ifdef __SIZEOF_INT128__
        return 2;
#else
        return -1;
#endif
    default: return 0;
    }
}

mrc_dtype_t mrc__avg_wide_dtype(mrc_dtype_t dtype)
{
    return dtype == MRC_INT8 || dtype == MRC_INT32 || dtype == MRC_INT64
               ? MRC_INT64
               : MRC_UINT64;
}

#define WIDEN(T)                                                               \
    do {                                                                       \
        T v;                                                                   \
        for (size_t i = 0; i < n; i++) {                                       \
            memcpy(&v, s + i * sizeof v, sizeof v);                            \
            w[i] = v;                                                          \
        }                                                                      \
    } while (0)

void mrc__avg_widen(void *wide, const void *src, size_t n, mrc_dtype_t dtype)
{
    const unsigned char *s = src;
    switch (dtype) {
    case MRC_INT8: {
        int64_t *w = wide;
        WIDEN(int8_t);
        break;
    }
    case MRC_UINT8: {
        uint64_t *w = wide;
        WIDEN(uint8_t);
        break;
    }
    case MRC_INT32: {
        int64_t *w = wide;
        WIDEN(int32_t);
        break;
    }
    case MRC_UINT32: {
        uint64_t *w = wide;
        WIDEN(uint32_t);
        break;
    }
    case MRC_INT64: {
        int64_t *w = wide, v;
        for (size_t i = 0; i < n; i++) {
            memcpy(&v, s + i * sizeof v, sizeof v);
            /* v = hi * 2^32 + lo with lo in [0, 2^32): floor division */
            int64_t lo = (int64_t)((uint64_t)v & 0xffffffffu);
            w[2 * i] = (v - lo) / ((int64_t)1 << 32);
            w[2 * i + 1] = lo;
        }
        break;
    }
    case MRC_UINT64: {
        uint64_t *w = wide, v;
        for (size_t i = 0; i < n; i++) {
            memcpy(&v, s + i * sizeof v, sizeof v);
            w[2 * i] = v >> 32;
            w[2 * i + 1] = v & 0xffffffffu;
        }
        break;
    }
    default: break;
    }
}

#define NARROW(T)                                                              \
    do {                                                                       \
        for (size_t i = 0; i < n; i++) {                                       \
            T v = (T)(w[i] / divisor);                                         \
            memcpy(d + i * sizeof v, &v, sizeof v);                            \
        }                                                                      \
    } while (0)

void mrc__avg_narrow(void *dst, const void *wide, size_t n, mrc_dtype_t dtype,
                     int divisor)
{
    unsigned char *d = dst;
    switch (dtype) {
    case MRC_INT8: {
        const int64_t *w = wide;
        NARROW(int8_t);
        break;
    }
    case MRC_UINT8: {
        const uint64_t *w = wide;
        NARROW(uint8_t);
        break;
    }
    case MRC_INT32: {
        const int64_t *w = wide;
        NARROW(int32_t);
        break;
    }
    case MRC_UINT32: {
        const uint64_t *w = wide;
        NARROW(uint32_t);
        break;
    }
#ifdef __SIZEOF_INT128__
    case MRC_INT64: {
        const int64_t *w = wide;
        for (size_t i = 0; i < n; i++) {
            mrc__i128 sum =
                (mrc__i128)w[2 * i] * ((mrc__i128)1 << 32) + w[2 * i + 1];
            int64_t v = (int64_t)(sum / divisor);
            memcpy(d + i * sizeof v, &v, sizeof v);
        }
        break;
    }
    case MRC_UINT64: {
        const uint64_t *w = wide;
        for (size_t i = 0; i < n; i++) {
            mrc__u128 sum = ((mrc__u128)w[2 * i] << 32) + w[2 * i + 1];
            uint64_t v = (uint64_t)(sum / (unsigned)divisor);
            memcpy(d + i * sizeof v, &v, sizeof v);
        }
        break;
    }
#endif
    default: break;
    }
}
