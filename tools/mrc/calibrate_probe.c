/*
 * The probes of `mrc calibrate` (calibrate.h). Each figure is the median
 * of `reps` repetitions, so that one descheduling on a busy host does not
 * make the profile; each repetition runs long enough (a few ms) for the
 * clock to resolve it.
 *
 * Copies and reductions go through the kernels the transports call
 * (mrc__copy_nontemporal, mrc__reduce_nontemporal), on buffers touched before
 * they are timed. The sync figure is a flag handed back and forth between two
 * spinning threads (or processes, over a shared mapping): what a wait
 * costs when the peer is already running. The message figure is a real
 * call of the transport: two ranks take turns broadcasting one element,
 * so that each call waits for the one before it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "calibrate.h"
#include "common/common.h"
#include "reduce/reduce.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum { MAX_REPS = 64 };

static int clamp_reps(int reps)
{
    return reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;
}

/* Keeps the compiler from dropping a copy nobody reads. */
static volatile unsigned char sink;

/* The single-node probes' buffers, kept from one probe to the next: a
 * fresh allocation would time the kernel's page faults, not its copy. */
enum { POOL = 3 };
static unsigned char *pool[POOL];
static size_t pool_bytes;

/* POOL buffers of at least `bytes`, touched; NULL if out of memory. */
static unsigned char **pool_get(size_t bytes)
{
    if (bytes > pool_bytes) {
        cal_release();
        for (int i = 0; i < POOL; i++) {
            pool[i] = malloc(bytes);
            if (!pool[i]) {
                cal_release();
                return NULL;
            }
            memset(pool[i], i + 1, bytes);
        }
        pool_bytes = bytes;
    }
    return pool;
}

void cal_release(void)
{
    for (int i = 0; i < POOL; i++) {
        free(pool[i]);
        pool[i] = NULL;
    }
    pool_bytes = 0;
}

/* The probes time the kernels a rank's run uses at their size: plain
 * below cal_stream_bytes(), writing around the cache from it. (They
 * had timed the second at every size: 41 GB/s for a copy in cache on a
 * Zen 5 core whose memcpy runs at 90-120 there, and the families whose
 * calls stay in cache were predicted at 1.3-1.8x their time.) */
static int around_cache(size_t bytes)
{
    return bytes >= cal_stream_bytes();
}

static void copy_as_run(unsigned char *dst, const unsigned char *src,
                        size_t bytes)
{
    if (around_cache(bytes))
        mrc__copy_nontemporal(dst, src, bytes);
    else
        memcpy(dst, src, bytes);
}

double cal_copy_gbps(size_t bytes, size_t rep_bytes, int reps)
{
    reps = clamp_reps(reps);
    unsigned char **buf = pool_get(bytes);
    if (!buf)
        return 0;
    unsigned char *src = buf[0], *dst = buf[1];
    double rate[MAX_REPS];
    size_t iters = rep_bytes / bytes ? rep_bytes / bytes : 1;
    copy_as_run(dst, src, bytes);
    for (int r = 0; r < reps; r++) {
        double t0 = mrc__ref_now_s();
        for (size_t i = 0; i < iters; i++)
            copy_as_run(dst, src, bytes);
        double t = mrc__ref_now_s() - t0;
        sink = dst[bytes - 1];
        rate[r] = (double)(iters * bytes) / (t > 0 ? t : 1e-9) / 1e9;
    }
    return median(rate, reps);
}

typedef struct shared_run {
    pthread_barrier_t start, stop;
    size_t bytes;
    int reps;
    int failed;
} shared_run_t;

/* One node of the shared probe: its own buffers, touched by itself (so
 * that they are its memory), copied between the barriers. */
static void *shared_node(void *arg)
{
    shared_run_t *run = arg;
    unsigned char *src = malloc(run->bytes), *dst = malloc(run->bytes);
    if (!src || !dst)
        run->failed = 1;
    else {
        memset(src, 1, run->bytes);
        memset(dst, 2, run->bytes);
    }
    for (int r = 0; r < run->reps; r++) {
        pthread_barrier_wait(&run->start);
        if (src && dst)
            mrc__copy_nontemporal(dst, src, run->bytes);
        pthread_barrier_wait(&run->stop);
    }
    if (dst)
        sink = dst[0];
    free(src);
    free(dst);
    return NULL;
}

double cal_shared_gbps(int threads, size_t bytes, int reps)
{
    reps = clamp_reps(reps);
    enum { MAX_THREADS = 256 };
    threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    shared_run_t run = {.bytes = bytes, .reps = reps + 1};
    pthread_t tid[MAX_THREADS];
    double rate[MAX_REPS];
    int started = 0;
    pthread_barrier_init(&run.start, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&run.stop, NULL, (unsigned)threads + 1);
    for (; started < threads; started++)
        if (pthread_create(&tid[started], NULL, shared_node, &run) != 0)
            break;
    if (started < threads) {
        /* The barriers count on every thread: none can be timed. */
        fprintf(stderr, "mrc calibrate: cannot start %d threads\n", threads);
        exit(1);
    }
    /* The first round only warms up. */
    for (int r = 0; r <= reps; r++) {
        pthread_barrier_wait(&run.start);
        double t0 = mrc__ref_now_s();
        pthread_barrier_wait(&run.stop);
        double t = mrc__ref_now_s() - t0;
        if (r > 0)
            rate[r - 1] =
                (double)threads * (double)bytes / (t > 0 ? t : 1e-9) / 1e9;
    }
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&run.start);
    pthread_barrier_destroy(&run.stop);
    return run.failed ? 0 : median(rate, reps);
}

/* Every element one (in its type), so that no sum overflows into
 * something slower (inf, NaN, denormals) and a product stays one. */
static void fill_ones(void *buf, size_t n, mrc_dtype_t dtype)
{
    for (size_t i = 0; i < n; i++) {
        switch (dtype) {
        case MRC_FLOAT16: ((uint16_t *)buf)[i] = 0x3c00; break;
        case MRC_BFLOAT16: ((uint16_t *)buf)[i] = 0x3f80; break;
        case MRC_FLOAT32: ((float *)buf)[i] = 1; break;
        case MRC_FLOAT64: ((double *)buf)[i] = 1; break;
        case MRC_INT8:
        case MRC_UINT8: ((uint8_t *)buf)[i] = 1; break;
        case MRC_INT32:
        case MRC_UINT32: ((uint32_t *)buf)[i] = 1; break;
        default: ((uint64_t *)buf)[i] = 1; break;
        }
    }
}

double cal_reduce_gbps(mrc_dtype_t dtype, mrc_op_t op, size_t bytes,
                       size_t rep_bytes, int reps)
{
    reps = clamp_reps(reps);
    size_t es = mrc_dtype_size(dtype), n = bytes / es;
    /* avg on integers sums wider words (mrc__avg_words): time that, on
     * as many values as fit the same buffers. */
    mrc_dtype_t kd = dtype;
    mrc_op_t ko = op;
    size_t kn = n;
    if (op == MRC_AVG && mrc__avg_words(dtype) > 0) {
        kd = mrc__avg_wide_dtype(dtype);
        kn = bytes / mrc_dtype_size(kd);
        n = kn / (size_t)mrc__avg_words(dtype);
        ko = MRC_SUM;
    }
    size_t kb = kn * mrc_dtype_size(kd);
    unsigned char **buf = pool_get(kb);
    if (!buf || n == 0)
        return 0;
    void *a = buf[0], *b = buf[1], *d = buf[2];
    double rate[MAX_REPS];
    fill_ones(a, kn, kd);
    fill_ones(b, kn, kd);
    fill_ones(d, kn, kd);
    size_t iters = rep_bytes / kb ? rep_bytes / kb : 1;
    void (*kernel)(void *, const void *, const void *, size_t, mrc_dtype_t,
                   mrc_op_t) =
        around_cache(kb) ? mrc__reduce_nontemporal : mrc__reduce;
    kernel(d, a, b, kn, kd, ko);
    for (int r = 0; r < reps; r++) {
        double t0 = mrc__ref_now_s();
        for (size_t i = 0; i < iters; i++)
            kernel(d, a, b, kn, kd, ko);
        double t = mrc__ref_now_s() - t0;
        sink = ((unsigned char *)d)[0];
        rate[r] = (double)(iters * n * es) / (t > 0 ? t : 1e-9) / 1e9;
    }
    return median(rate, reps);
}

/* The flag of the sync probe: side s waits for turn % 2 == s. */
typedef struct flag {
    _Atomic long turn;
    int trips;
} flag_t;

/* Spins for the flag, giving the core away now and then: on a host with
 * more busy threads than cores the peer needs it to move at all. */
static void ping(flag_t *f, int side)
{
    long end = 2L * f->trips;
    for (long want = side; want < end; want += 2) {
        int spins = 0;
        while (atomic_load_explicit(&f->turn, memory_order_acquire) != want)
            if (++spins % 1024 == 0)
                sched_yield();
        atomic_store_explicit(&f->turn, want + 1, memory_order_release);
    }
}

static void *pong(void *arg)
{
    ping(arg, 1);
    return NULL;
}

/* One repetition: `trips` round trips, us each way. */
static double sync_once(flag_t *f, int processes)
{
    atomic_store(&f->turn, -1);
    pid_t pid = -1;
    pthread_t tid;
    if (processes) {
        pid = fork();
        if (pid == 0) {
            ping(f, 1);
            _exit(0);
        }
        if (pid < 0)
            return -1;
    } else if (pthread_create(&tid, NULL, pong, f) != 0) {
        return -1;
    }
    double t0 = mrc__ref_now_s();
    atomic_store(&f->turn, 0);
    ping(f, 0);
    double t = mrc__ref_now_s() - t0;
    if (processes) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    } else {
        pthread_join(tid, NULL);
    }
    return t / (2.0 * f->trips) * 1e6;
}

double cal_sync_us(int processes, int trips, int reps)
{
    reps = clamp_reps(reps);
    flag_t *f = mmap(NULL, sizeof *f, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (f == MAP_FAILED)
        return mrc__error(MRC_ERR_NO_MEMORY, "cannot map a flag: %s",
                          strerror(errno));
    f->trips = trips > 0 ? trips : 1;
    double us[MAX_REPS], out = 0;
    for (int r = 0; r < reps && out >= 0; r++)
        out = us[r] = sync_once(f, processes);
    if (out >= 0)
        out = median(us, reps);
    else
        mrc__error(MRC_ERR_INTERNAL, "cannot start the sync probe's peer");
    munmap(f, sizeof *f);
    return out;
}
