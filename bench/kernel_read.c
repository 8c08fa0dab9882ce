/*
 * kernel-read: what shm's get by reference costs a core, in its parts:
 * reading a peer process's buffer through the kernel (process_vm_readv)
 * a bounce buffer at a time, summing that bounce buffer with the core's
 * own send buffer into its receive buffer, and the two in turn (direct2's
 * pass, src/transport/shm/memory.c), beside the anchor of the core's copy
 * of its own buffer of the same size.
 *
 *   usage: kernel-read [SIZE...]    (bytes, K/M suffixes; default 256K
 *                                    1M 4M)
 *
 * Two processes pinned to cores 0 and 1, each with its own send and
 * receive buffers of SIZE (floats) and a 128 KiB bounce buffer. Per
 * size, us a call of core 0 (the best of 7 loops, each about 256 MiB
 * moved), in rows:
 *   copy          core 0 copies its send buffer to its receive buffer
 *   read          core 0 reads core 1's send buffer through the kernel
 *   sum           core 0 sums the bounce buffer with its send buffer
 *   read + sum    the two in turn, a bounce buffer at a time
 * each with core 1 idle ("alone") and doing the same at once ("both").
 * On the Xeon host (2 MiB of L2 a core) a core did both at 1 MiB in 1.5
 * times what the two took apart, at 256 KiB and 4 MiB in about their
 * sum: at 1 MiB its peer's lines, its own and its output are past its
 * own cache, where the parts alone are not (docs/simulator.md, "A peer's
 * lines past its core").
 * Exit: 0, or 2 for bad usage, a host without two cores or a kernel
 * that forbids the read.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { BOUNCE = 128 << 10, LOOPS = 7, MOVED = 256 << 20 };
enum mode { COPY, READ, SUM, READ_SUM, MODES };
static const char *const names[MODES] = {"copy", "read", "sum", "read + sum"};

/* What the two processes share: a barrier, each one's send buffer and
 * pid, and core 0's time. */
typedef struct shared {
    _Atomic long arrived;
    float *send[2];
    pid_t pid[2];
    double us;
} shared_t;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Both processes here: 0, or -1 after 60 s without the other (it
 * failed). */
static int barrier(shared_t *sh, long *round)
{
    long want = 2 * ++*round;
    atomic_fetch_add(&sh->arrived, 1);
    double start = now();
    while (atomic_load(&sh->arrived) < want)
        if (now() - start > 60)
            return -1;
    return 0;
}

/* One call of `mode` on `bytes`: 0, or -1 when the kernel refused. */
static int call(enum mode mode, const shared_t *sh, int me, float *send,
                float *recv, float *bounce, size_t bytes)
{
    if (mode == COPY) {
        memcpy(recv, send, bytes);
        return 0;
    }
    for (size_t off = 0; off < bytes; off += BOUNCE) {
        size_t len = bytes - off < BOUNCE ? bytes - off : BOUNCE;
        if (mode != SUM) {
            struct iovec l = {bounce, len};
            struct iovec r = {(char *)sh->send[1 - me] + off, len};
            if (process_vm_readv(sh->pid[1 - me], &l, 1, &r, 1, 0) !=
                (ssize_t)len)
                return -1;
        }
        if (mode != READ) {
            const float *a = send + off / sizeof(float);
            float *d = recv + off / sizeof(float);
            for (size_t i = 0; i < len / sizeof(float); i++)
                d[i] = a[i] + bounce[i];
        }
    }
    return 0;
}

/* Core `me`'s part of every row of one size; core 0 keeps the times. */
static int run_size(shared_t *sh, int me, size_t bytes, float *send,
                    float *recv, float *bounce, long *round, double *us)
{
    int calls = (int)(MOVED / bytes) > 4 ? (int)(MOVED / bytes) : 4;
    for (int m = 0; m < MODES; m++)
        for (int both = 0; both < 2; both++) {
            double best = 1e30;
            for (int l = 0; l < LOOPS; l++) {
                if (barrier(sh, round))
                    return -1;
                double t0 = now();
                for (int c = 0; c < calls && (me == 0 || both); c++)
                    if (call((enum mode)m, sh, me, send, recv, bounce, bytes))
                        return -1;
                double t = (now() - t0) / calls * 1e6;
                best = t < best ? t : best;
                if (barrier(sh, round))
                    return -1;
            }
            us[2 * m + both] = best;
        }
    return 0;
}

static size_t parse_size(const char *s)
{
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    size_t mul = *end == 'K' ? 1 << 10 : *end == 'M' ? 1 << 20 : 1;
    if (end == s || (mul > 1 && end[1]) || (mul == 1 && *end) || v == 0 ||
        v > (1ull << 30) / mul)
        return 0;
    return (size_t)v * mul;
}

int main(int argc, char **argv)
{
    static const char *const defaults[] = {"256K", "1M", "4M"};
    int n = argc > 1 ? argc - 1 : 3;
    const char *const *args =
        argc > 1 ? (const char *const *)argv + 1 : defaults;
    size_t sizes[64], max = 0;
    if (n > 64) {
        fprintf(stderr, "kernel-read: at most 64 sizes\n");
        return 2;
    }
    for (int i = 0; i < n; i++) {
        sizes[i] = parse_size(args[i]) / sizeof(float) * sizeof(float);
        if (!sizes[i]) {
            fprintf(stderr, "usage: kernel-read [SIZE...] (bad size '%s')\n",
                    args[i]);
            return 2;
        }
        max = sizes[i] > max ? sizes[i] : max;
    }
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        fprintf(stderr, "kernel-read: needs two cores\n");
        return 2;
    }
    shared_t *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 2;
    pid_t child = fork();
    if (child < 0)
        return 2;
    int me = child == 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(me, &set);
    sched_setaffinity(0, sizeof set, &set);
    float *send = malloc(max), *recv = malloc(max), *bounce = malloc(BOUNCE);
    if (!send || !recv || !bounce)
        return 2;
    memset(send, 1, max);
    memset(recv, 0, max);
    memset(bounce, 0, BOUNCE);
    sh->send[me] = send;
    sh->pid[me] = getpid();
    long round = 0;
    if (barrier(sh, &round))
        return 2;
    if (!me)
        printf("%-10s %-12s %12s %12s\n", "bytes", "row", "alone (us)",
               "both (us)");
    for (int i = 0; i < n; i++) {
        double us[2 * MODES];
        if (run_size(sh, me, sizes[i], send, recv, bounce, &round, us)) {
            fprintf(stderr,
                    "kernel-read: core %d: the kernel refused the "
                    "read (process_vm_readv), or the other process "
                    "stopped\n",
                    me);
            if (!me)
                kill(child, SIGKILL);
            return 2;
        }
        for (int m = 0; m < MODES && !me; m++)
            printf("%-10zu %-12s %12.1f %12.1f\n", sizes[i], names[m],
                   us[2 * m], us[2 * m + 1]);
    }
    if (!me)
        waitpid(child, NULL, 0);
    return 0;
}
