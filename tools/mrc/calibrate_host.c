/*
 * `mrc calibrate`'s host part (calibrate.h): this host's caches as the
 * kernel describes them (the C library's figures where it lists none),
 * and one node's copy, shared-copy and reduction
 * rates in cache and beyond, as a profile without the transport's
 * costs.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "calibrate.h"
#include "common/common.h"

/* The probes' steps, for the progress bar: sizes of the copy sweep, the
 * shared copy, the reductions, the sync, the messages. */
enum { SWEEP = 6 };

/* The copy sweep's sizes below the last (plan->memory_bytes); the rate
 * in cache is the fastest of the first IN_CACHE. */
static const size_t sweep_bytes[SWEEP - 1] = {
    (size_t)64 << 10, (size_t)256 << 10, (size_t)1 << 20, (size_t)4 << 20,
    (size_t)16 << 20};
enum { IN_CACHE = 3 };

static double cache_rate(const double rate[IN_CACHE])
{
    return fmax(rate[0], fmax(rate[1], rate[2]));
}

void cal_plan_sizes(cal_plan_t *plan, int quick)
{
    plan->reps = quick ? 1 : 5;
    plan->memory_bytes = (size_t)(quick ? 48 : 64) << 20;
    plan->rep_bytes = (size_t)(quick ? 4 : 32) << 20;
}

void cal_copy_now(const cal_plan_t *plan, double *cache_gbps,
                  double *memory_gbps)
{
    double rate[IN_CACHE];
    for (int i = 0; i < IN_CACHE; i++)
        rate[i] = cal_copy_gbps(sweep_bytes[i], plan->rep_bytes, plan->reps);
    *cache_gbps = cache_rate(rate);
    *memory_gbps =
        cal_copy_gbps(plan->memory_bytes, plan->rep_bytes, plan->reps);
    cal_release();
}

#define DRIFT_LO 0.8
#define DRIFT_HI 1.25

void cal_rates_beside(const mrc_profile_t *prof, cal_rates_t *r)
{
    /* As a full calibration measures them, --quick or not (one short
     * repetition swung by a third between runs). */
    cal_plan_t plan = {0};
    cal_plan_sizes(&plan, 0);
    cal_copy_now(&plan, &r->cache, &r->memory);
    /* (A profile without a rate has none to hold: 0, outside.) */
    r->cache_ratio =
        prof->copy_gbps_cache > 0 ? r->cache / prof->copy_gbps_cache : 0;
    r->mem_ratio =
        prof->copy_gbps_memory > 0 ? r->memory / prof->copy_gbps_memory : 0;
    r->as_calibrated = r->cache_ratio >= DRIFT_LO &&
                       r->cache_ratio <= DRIFT_HI && r->mem_ratio >= DRIFT_LO &&
                       r->mem_ratio <= DRIFT_HI;
}

void cal_tell(const cal_plan_t *plan, double done, const char *what)
{
    if (plan->progress)
        plan->progress(plan->ctx, done, what);
}

/* The kernel's file NAME of cpu0's cache `index`, opened; NULL if it
 * has none. */
static FILE *cache_file(int index, const char *name)
{
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/%s",
             index, name);
    return fopen(path, "r");
}

/* cpu0's caches as the kernel describes them (bytes): the largest (the
 * last level, which the cores share) and the largest of one core alone
 * (shared_cpu_list naming cpu0 only); 0 where it says nothing. */
static double cache_size(int index)
{
    FILE *f = cache_file(index, "size");
    if (!f)
        return -1;
    unsigned long v = 0;
    char unit = 0;
    double b = 0;
    if (fscanf(f, "%lu%c", &v, &unit) >= 1)
        b = (double)v * (unit == 'K' ? 1024.0 : unit == 'M' ? 1048576.0 : 1.0);
    fclose(f);
    return b;
}

/* The first word of a kernel file (a CPU list), or "" where it has none. */
static void first_word(FILE *f, char *out, size_t n)
{
    char fmt[16];
    snprintf(fmt, sizeof fmt, "%%%zus", n - 1);
    if (!f || fscanf(f, fmt, out) != 1)
        out[0] = 0;
    if (f)
        fclose(f);
}

/* Whether cpu0's cache `index` is its core's own: used by cpu0 alone, or
 * by the hardware threads of its core (an SMT host lists its siblings,
 * "0,64" or "0-1", in both files). */
static int cache_private(int index)
{
    char list[64], siblings[64];
    first_word(cache_file(index, "shared_cpu_list"), list, sizeof list);
    first_word(fopen("/sys/devices/system/cpu/cpu0/topology/"
                     "thread_siblings_list",
                     "r"),
               siblings, sizeof siblings);
    return list[0] && (strcmp(list, "0") == 0 || strcmp(list, siblings) == 0);
}

/* sysconf's figure, or 0 where it has none (-1, or 0: unknown). */
static long libc_size(int name)
{
    long v = sysconf(name);
    return v > 0 ? v : 0;
}

/* The C library's sizes of the caches (bytes; glibc reads them with
 * CPUID), where the kernel lists none: some VMs' kernels have no
 * cpu0/cache directory (this project's build VM, one session: a profile
 * fitted with a 2 MiB cache from the copy sweep and no core's own level
 * predicted its 1-4 MiB rows at 2-3x their time). The first two levels
 * are taken as a core's own, the third as the one the cores share; with
 * no third, 0 (the copy sweep's estimate stands: a core's own cache as
 * the host's would bound the fit of the shared one to it). */
static double libc_cache(int private_only)
{
    long size = 0;
    if (private_only) {
#ifdef _SC_LEVEL1_DCACHE_SIZE
        size = libc_size(_SC_LEVEL1_DCACHE_SIZE);
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
        long l2 = libc_size(_SC_LEVEL2_CACHE_SIZE);
        size = l2 > size ? l2 : size;
#endif
    } else {
#ifdef _SC_LEVEL3_CACHE_SIZE
        size = libc_size(_SC_LEVEL3_CACHE_SIZE);
#endif
    }
    return (double)size;
}

/* The largest of cpu0's caches, or of those it alone uses
 * (private_only); the C library's figure where the kernel lists none,
 * 0 where neither says. */
static double largest_cache(int private_only)
{
    double best = 0;
    int listed = 0;
    for (int i = 0; i < 8; i++) {
        double b = cache_size(i);
        if (b < 0)
            break;
        listed = 1;
        if ((!private_only || cache_private(i)) && b > best)
            best = b;
    }
    return listed ? best : libc_cache(private_only);
}

/* Copy rates of one node over vector sizes: the best in cache and the
 * rate well beyond. Where the cache ends: the working set the host's
 * last-level cache holds, as the kernel states it; else twice (source
 * and destination) the largest copy whose rate is still above the
 * geometric mean of the two. The sizes between, which find that edge,
 * are copied through the caches whatever the calibration's threshold:
 * written around them, a 4 MiB copy runs at the memory's rate in any
 * cache. */
static void copy_sweep(const cal_plan_t *plan, mrc_profile_t *p)
{
    double rate[SWEEP];
    size_t stream = cal_stream_bytes();
    for (int i = 0; i < SWEEP; i++) {
        cal_tell(plan, 0.05 * i / SWEEP, "copy");
        int edge = i >= IN_CACHE && i < SWEEP - 1;
        cal_set_stream_bytes(edge ? SIZE_MAX : stream);
        rate[i] =
            cal_copy_gbps(i < SWEEP - 1 ? sweep_bytes[i] : plan->memory_bytes,
                          plan->rep_bytes, plan->reps);
    }
    cal_set_stream_bytes(stream);
    p->copy_gbps_cache = cache_rate(rate);
    p->copy_gbps_memory = rate[SWEEP - 1];
    double edge = sqrt(p->copy_gbps_cache * p->copy_gbps_memory);
    p->cache_bytes = (double)sweep_bytes[0];
    for (int i = 1; i < SWEEP - 1; i++)
        if (rate[i] >= edge)
            p->cache_bytes = (double)sweep_bytes[i];
    p->cache_bytes *= 2;
    double llc = largest_cache(0);
    if (llc > 0)
        p->cache_bytes = llc;
    p->private_cache_bytes = largest_cache(1);
}

static void reduce_rates(const cal_plan_t *plan, mrc_profile_t *p)
{
    size_t cache = (size_t)256 << 10, memory = plan->memory_bytes / 2;
    int reps = plan->reps > 3 ? 3 : plan->reps;
    for (int d = 0; d < MRC_NUM_DTYPES; d++) {
        cal_tell(plan, 0.15 + 0.6 * d / MRC_NUM_DTYPES, "reduce");
        for (int o = 0; o < MRC_NUM_OPS; o++) {
            p->reduce_gbps_cache[d][o] =
                cal_reduce_gbps((mrc_dtype_t)d, (mrc_op_t)o, cache,
                                plan->rep_bytes, plan->reps);
            if (o == MRC_SUM || plan->all_ops_beyond)
                p->reduce_gbps_memory[d][o] = cal_reduce_gbps(
                    (mrc_dtype_t)d, (mrc_op_t)o, memory, memory, reps);
        }
    }
}

mrc_status_t cal_measure_host(const cal_plan_t *plan, mrc_profile_t *p)
{
    memset(p, 0, sizeof *p);
    p->version = MRC_PROFILE_VERSION;
    snprintf(p->transport, sizeof p->transport, "%s", plan->transport);
    p->ranks = plan->ranks;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    p->cores = cores > 0 ? (int)cores : 1;
    /* The probes' ranks are this host's: they share its memory. */
    p->nodes_per_memory = plan->ranks;
    copy_sweep(plan, p);
    cal_tell(plan, 0.05, "shared copy");
    p->memory_gbps_shared =
        cal_shared_gbps(plan->ranks, plan->memory_bytes / 2, plan->reps);
    reduce_rates(plan, p);
    cal_release();
    if (p->copy_gbps_cache <= 0 || p->copy_gbps_memory <= 0 ||
        p->memory_gbps_shared <= 0)
        return mrc__error(MRC_ERR_NO_MEMORY,
                          "the copy probes could not allocate %zu bytes",
                          plan->memory_bytes);
    return MRC_OK;
}
