/*
 * peer-read: how fast a core takes lines another core has just written,
 * alone and while the other core does the same (the node model's
 * peer_contention, docs/simulator.md), beside the anchor of a core's
 * copy of its own data, alone and with the other core copying its own.
 *
 *   usage: peer-read [SIZE...]      (bytes, K/M suffixes; default 64K
 *                                    256K 1M)
 *          peer-read --line | --stream
 *
 * Two threads pinned to cores 0 and 1. Per size, four rows, GB/s of each
 * core (the median of 5 repetitions, each about 256 MiB moved a core):
 *   copy, alone   core 0 copies its own buffer; core 1 idles
 *   copy, both    each core copies its own buffer at once
 *   read, alone   in turn one core writes its buffer and the other copies
 *                 it out (the tree's steps at 2 ranks)
 *   read, both    each core writes its buffer, then copies the other's
 *                 out, at once (the rings' steps)
 * Only the copy out of the other core's buffer is timed in the read rows.
 * --line: the one-way time of a single line handed back and forth
 * between the two cores instead (a counter each bumps in turn, spinning
 * without a pause), the median of 5 runs of 100 000 round trips, in ns.
 * On a VM it says how far apart the host runs the two cores: this
 * project's build machine took 37-67 ns in quiet minutes and 198-225 in
 * its slow spells (docs/performance.md, "What a slow spell is").
 * --stream: a free-running stream of 8-byte messages from core 0 to core
 * 1 instead (a ring of 64 entries, each a stamp and the message; the
 * writer waits only when the ring is full, the reader says how far it
 * has read every 16 messages), ns a message, for entries 1152 bytes
 * apart (mrc's deep records), one a line and four a line.
 * Exit: 0, or 2 for bad usage or a host without two cores.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { REPS = 5, MOVED = 256 << 20 };
#define USAGE "usage: peer-read [SIZE...] | --line | --stream\n"
enum mode { COPY_ALONE, COPY_BOTH, READ_ALONE, READ_BOTH, MODES };
static const char *const mode_names[MODES] = {"copy, alone", "copy, both",
                                              "read, alone", "read, both"};

typedef struct run {
    enum mode mode;
    size_t bytes;
    long iters;
    char *own[2], *out[2];
    atomic_long written[2], taken[2];
    atomic_int ready;
    double seconds[2];
} run_t;

typedef struct worker {
    run_t *run;
    int id;
} worker_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void spin_until(atomic_long *v, long k)
{
    while (atomic_load_explicit(v, memory_order_acquire) < k)
        ;
}

/* Pins the calling thread to core `id` and waits until both threads of
 * the run are there (*ready counts them). */
static void pin_and_meet(int id, atomic_int *ready)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(id, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    atomic_fetch_add(ready, 1);
    while (atomic_load(ready) < 2)
        ;
}

/* One core's share of a run: each iteration k, the copy of its own data
 * (copy rows), or its turn to write its buffer and to read the other's
 * (read rows: alone, core k % 2 writes and the other reads; both, every
 * core does both, and waits for the other's read before rewriting). */
static void *work(void *arg)
{
    worker_t *w = arg;
    run_t *r = w->run;
    int me = w->id, other = 1 - me;
    pin_and_meet(me, &r->ready);
    double timed = 0;
    if (r->mode == COPY_ALONE || r->mode == COPY_BOTH) {
        if (r->mode == COPY_ALONE && me == 1)
            return NULL;
        double t = now();
        for (long k = 0; k < r->iters; k++) {
            memcpy(r->out[me], r->own[me], r->bytes);
            __asm__ volatile("" ::: "memory");
        }
        r->seconds[me] = now() - t;
        return NULL;
    }
    int both = r->mode == READ_BOTH;
    for (long k = 1; k <= r->iters; k++) {
        int writes = both || me == (int)(k & 1);
        if (writes) {
            memset(r->own[me], (int)k, r->bytes);
            atomic_store_explicit(&r->written[me], k, memory_order_release);
        }
        if (both || !writes) {
            spin_until(&r->written[other], k);
            double t = now();
            memcpy(r->out[me], r->own[other], r->bytes);
            timed += now() - t;
            atomic_store_explicit(&r->taken[me], k, memory_order_release);
        }
        if (writes) /* the reader is done before the buffer is rewritten */
            spin_until(&r->taken[other], k);
    }
    r->seconds[me] = timed;
    return NULL;
}

/* GB/s of each core for one run of `mode` (0 for a core that copied
 * nothing timed). */
static int run_once(run_t *r, enum mode mode, double gbps[2])
{
    r->mode = mode;
    r->ready = 0;
    r->seconds[0] = r->seconds[1] = 0;
    for (int i = 0; i < 2; i++)
        r->written[i] = r->taken[i] = 0;
    pthread_t t[2];
    worker_t w[2] = {{r, 0}, {r, 1}};
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, work, &w[i]) != 0)
            return -1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    /* a core reads every call with both, every other call alone */
    double copies = mode == READ_ALONE ? (double)r->iters / 2 : r->iters;
    for (int i = 0; i < 2; i++)
        gbps[i] = r->seconds[i] > 0
                      ? copies * (double)r->bytes / r->seconds[i] / 1e9
                      : 0;
    return 0;
}

enum { LINE_REPS = 5, LINE_TRIPS = 100000 };
/* --stream: a ring of STREAM_RING entries, the reader saying how far it
 * has read every STREAM_TELL messages. */
enum { STREAM_MESSAGES = 400000, STREAM_RING = 64, STREAM_TELL = 16 };

/* --line: `turn` is the line handed back and forth. --stream (stride >
 * 0): `turn` is how far the reader has read, `ring` the entries (a
 * stamp and an 8-byte message each, `stride` bytes apart). */
typedef struct line_run {
    _Alignas(64) atomic_long turn;
    atomic_int ready;
    double seconds;
    size_t stride;
    char *ring;
    uint64_t check;
} line_run_t;

typedef struct line_worker {
    line_run_t *run;
    int id;
} line_worker_t;

/* One core's share: core 0 moves the counter from even to odd, core 1
 * from odd to even, each waiting for the other's move. */
static void *line_work(void *arg)
{
    line_worker_t *w = arg;
    line_run_t *r = w->run;
    pin_and_meet(w->id, &r->ready);
    double t = now();
    if (r->stride) { /* --stream: core 0 writes, core 1 reads */
        long seen = 0;
        uint64_t sum = 0;
        for (long k = 0; k < STREAM_MESSAGES; k++) {
            _Atomic uint64_t *e =
                (_Atomic uint64_t *)(r->ring +
                                     (size_t)(k % STREAM_RING) * r->stride);
            if (w->id == 0) {
                while (k - seen >= STREAM_RING)
                    seen = atomic_load_explicit(&r->turn, memory_order_acquire);
                atomic_store_explicit(&e[1], (uint64_t)k * 3,
                                      memory_order_relaxed);
                atomic_store_explicit(&e[0], (uint64_t)k + 1,
                                      memory_order_release);
                continue;
            }
            while (atomic_load_explicit(&e[0], memory_order_acquire) !=
                   (uint64_t)k + 1)
                ;
            sum += atomic_load_explicit(&e[1], memory_order_relaxed);
            if (k % STREAM_TELL == STREAM_TELL - 1)
                atomic_store_explicit(&r->turn, k + 1, memory_order_release);
        }
        if (w->id == 1) {
            r->check = sum;
            r->seconds = now() - t;
        }
        return NULL;
    }
    for (long k = 0; k < LINE_TRIPS; k++) {
        long mine = 2 * k + w->id;
        while (atomic_load_explicit(&r->turn, memory_order_acquire) != mine)
            ;
        atomic_store_explicit(&r->turn, mine + 1, memory_order_release);
    }
    if (w->id == 0)
        r->seconds = now() - t;
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned long long scale = *end == 'K'   ? 1ULL << 10
                               : *end == 'M' ? 1ULL << 20
                                             : 1;
    if (end == s || (scale > 1 && end[1]) || (scale == 1 && *end) || !v ||
        v > (1ULL << 30) / scale)
        return -1;
    *out = (size_t)(v * scale);
    return 0;
}

/* --line (stride 0) and --stream: prints the median and range of
 * LINE_REPS runs, ns one way or a message; 0, or -1 without threads or
 * memory. */
static int line_time(size_t stride)
{
    double ns[LINE_REPS];
    char *ring = NULL;
    if (stride && !(ring = aligned_alloc(4096, STREAM_RING * stride)))
        return -1;
    if (ring)
        memset(ring, 0, STREAM_RING * stride);
    for (int k = 0; k < LINE_REPS; k++) {
        line_run_t r = {.seconds = 0, .stride = stride, .ring = ring};
        atomic_init(&r.turn, 0);
        atomic_init(&r.ready, 0);
        if (ring) /* stamps of an earlier run would be taken for new */
            memset(ring, 0, STREAM_RING * stride);
        pthread_t t[2];
        line_worker_t w[2] = {{&r, 0}, {&r, 1}};
        for (int i = 0; i < 2; i++)
            if (pthread_create(&t[i], NULL, line_work, &w[i]) != 0)
                return -1;
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        ns[k] = stride ? r.seconds / STREAM_MESSAGES * 1e9
                       : r.seconds / (2.0 * LINE_TRIPS) * 1e9;
    }
    free(ring);
    qsort(ns, LINE_REPS, sizeof(double), by_value);
    if (stride)
        printf("stream, %zu-byte entries: %.1f ns a message (%d runs: "
               "%.1f-%.1f)\n",
               stride, ns[LINE_REPS / 2], LINE_REPS, ns[0], ns[LINE_REPS - 1]);
    else
        printf("line: %.0f ns one way (%d runs: %.0f-%.0f)\n",
               ns[LINE_REPS / 2], LINE_REPS, ns[0], ns[LINE_REPS - 1]);
    return 0;
}

static int two_cores(void)
{
    cpu_set_t online;
    return sched_getaffinity(0, sizeof online, &online) == 0 &&
           CPU_ISSET(0, &online) && CPU_ISSET(1, &online);
}

int main(int argc, char **argv)
{
    int line = argc > 1 && strcmp(argv[1], "--line") == 0;
    int stream = argc > 1 && strcmp(argv[1], "--stream") == 0;
    if (line || stream) {
        static const size_t strides[] = {1152, 64, 16};
        if (argc > 2) {
            fprintf(stderr, "peer-read: %s takes no sizes\n%s", argv[1], USAGE);
            return 2;
        }
        if (!two_cores()) {
            fprintf(stderr, "peer-read: needs cores 0 and 1\n");
            return 2;
        }
        for (int i = 0; i < (stream ? 3 : 1); i++)
            if (line_time(stream ? strides[i] : 0) != 0) {
                fprintf(stderr, "peer-read: no threads or memory\n");
                return 2;
            }
        return 0;
    }
    size_t sizes[16] = {64 << 10, 256 << 10, 1 << 20};
    int nsizes = argc > 1 ? argc - 1 : 3;
    if (nsizes > 16) {
        fprintf(stderr, "peer-read: at most 16 sizes\n");
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (parse_size(argv[i], &sizes[i - 1]) != 0) {
            fprintf(stderr,
                    "peer-read: bad size '%s' (bytes, K or M suffix, up "
                    "to 1G)\n%s",
                    argv[i], USAGE);
            return 2;
        }
    if (!two_cores()) {
        fprintf(stderr, "peer-read: needs cores 0 and 1\n");
        return 2;
    }
    printf("%10s  %-12s %10s %10s\n", "bytes", "row", "core 0", "core 1");
    for (int s = 0; s < nsizes; s++) {
        run_t r = {.bytes = sizes[s]};
        r.iters = (long)(MOVED / sizes[s]) + 2;
        for (int i = 0; i < 2; i++) {
            r.own[i] = aligned_alloc(4096, (sizes[s] + 4095) & ~(size_t)4095);
            r.out[i] = aligned_alloc(4096, (sizes[s] + 4095) & ~(size_t)4095);
            if (!r.own[i] || !r.out[i]) {
                fprintf(stderr, "peer-read: out of memory\n");
                return 2;
            }
            memset(r.own[i], 1, sizes[s]);
            memset(r.out[i], 2, sizes[s]);
        }
        for (int m = 0; m < MODES; m++) {
            double g[2][REPS];
            for (int k = 0; k < REPS; k++) {
                double one[2];
                if (run_once(&r, (enum mode)m, one) != 0) {
                    fprintf(stderr, "peer-read: no threads\n");
                    return 2;
                }
                g[0][k] = one[0];
                g[1][k] = one[1];
            }
            qsort(g[0], REPS, sizeof(double), by_value);
            qsort(g[1], REPS, sizeof(double), by_value);
            printf("%10zu  %-12s %10.1f %10.1f\n", sizes[s], mode_names[m],
                   g[0][REPS / 2], g[1][REPS / 2]);
        }
        for (int i = 0; i < 2; i++) {
            free(r.own[i]);
            free(r.out[i]);
        }
    }
    return 0;
}
