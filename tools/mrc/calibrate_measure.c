/*
 * `mrc calibrate`'s measurement (calibrate.h): the whole profile from
 * every probe, the transport's figures fitted through the simulator so
 * that it times the probes' own calls as measured (the fit itself:
 * calibrate_fit.c; a message's costs: calibrate_messages.c).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "common/common.h"
#include "transport/transport.h"

enum { CAL_THREADS_SMALL_BYTES = 32 << 10 };

/* Every rate beyond cache, x times the probes' own. */
static void set_beyond(mrc_profile_t *p, const mrc_profile_t *base, double x)
{
    p->copy_gbps_memory = base->copy_gbps_memory * x;
    for (int d = 0; d < MRC_NUM_DTYPES; d++)
        for (int o = 0; o < MRC_NUM_OPS; o++)
            p->reduce_gbps_memory[d][o] = base->reduce_gbps_memory[d][o] * x;
}

/* The figures beyond cache as the probes measured them. */
static void restore_beyond(mrc_profile_t *p, const mrc_profile_t *probed)
{
    p->memory_gbps_shared = probed->memory_gbps_shared;
    set_beyond(p, probed, 1);
}

static const fit_knob_t beyond = {0, set_beyond};

/* The rates the transport's own collectives reach, fitted through the
 * simulator as message_us is: a rings allreduce of FIT_CACHE_BYTES,
 * well in cache, gives the rate a node takes what its peers wrote
 * (peer_gbps_cache); one of the plan's memory_bytes, far beyond, what
 * the host's memory gives all its nodes at once (memory_gbps_shared),
 * or, where even unshared memory would be too slow for it, how much
 * faster than the probes' plain loops the kernels stream beyond cache
 * (every rate beyond cache scaled). The copy probes alone miss both:
 * lines that come from another core, and kernels that stream past the
 * cache faster than a copy loop of one node. */
enum {
    FIT_CACHE_BYTES = 256 << 10,
    FIT_EDGE_BYTES = 1 << 20,
    FIT_SHARED_BYTES = 4 << 20,
    FIT_MID_BYTES = 16 << 20,
    FIT_SPIN_BYTES = 1 << 20
};

/* A node's vector for the calls at its core's cache's edge: its send and
 * receive buffers twice that cache, half of them past it, and at least
 * FIT_EDGE_BYTES; at most what leaves the ranks' buffers within the
 * shared cache (a VM that lists its last level as a core's own would
 * otherwise size the call past every cache). At FIT_EDGE_BYTES alone a
 * host whose cores hold 2 MiB
 * each had the rings' 1 MiB call wholly within them: its time said
 * nothing of the level past them, the fit of copy_gbps_shared ended at
 * its lower bound, 0.01 GB/s, and direct1's and direct2's 1 MiB calls,
 * whose windows take them past the core's cache, were predicted at
 * about 1,000 times their time. */
static size_t edge_bytes(const mrc_profile_t *p, int ranks)
{
    double own = p->private_cache_bytes;
    double room = p->cache_bytes / (2.0 * (ranks > 1 ? ranks : 1));
    if (room > 0 && own > room)
        own = room;
    return own > FIT_EDGE_BYTES ? (size_t)own : (size_t)FIT_EDGE_BYTES;
}

/* The median us of a probe on the plan's ranks, its loops three times
 * the plan's: the short calls swing between two regimes on a busy host
 * (a peer spinning or descheduled). */
static mrc_status_t probe(const cal_plan_t *plan, size_t count, int iters,
                          mrc_algo_t algo, cal_probe_t *pr, double *us)
{
    *pr = (cal_probe_t){
        .count = count, .iters = iters, .reps = 3 * plan->reps, .algo = algo};
    return cal_probe_allreduce(plan->transport, plan->ranks, pr, us);
}

/* The contention between a host's readers (peer_contention): the rings'
 * call, in whose every step each node reads, against the tree's, whose
 * steps at P = 2 have one reader, which fitted the rate of a reader
 * alone. Not with more ranks than cores: there the readers of a step
 * are the cores' turns (turn_us, spin_share), and the tree's call took
 * the peer rate to half the rings' (4 ranks on 2 cores: 15 GB/s against
 * 27-30, and 19 of 29 rows within where there had been 23). */
static int readers_alone(const cal_plan_t *plan, const mrc_profile_t *p)
{
    return plan->ranks <= p->cores;
}

static mrc_status_t fit_contention(const cal_plan_t *plan, mrc_profile_t *p,
                                   const cal_probe_t *rings, double us,
                                   int *clamped)
{
    mrc_status_t st = cal_fit_family(p, KNOB(peer_contention), 1e-3, 4,
                                     plan->ranks, rings, us, clamped);
    /* At its lower bound the rings were no slower than alone: none. */
    if (st == MRC_OK && *clamped && p->peer_contention < 2e-3)
        p->peer_contention = 0;
    return st;
}

/* The last calibration's fits that reached a bound, for its summary. */
static int windows_at_bound, own_level_at_bound;

int cal_windows_at_bound(void)
{
    return windows_at_bound;
}

int cal_own_level_at_bound(void)
{
    return own_level_at_bound;
}

/* The last calibration's timed ways with send buffers (fit_send_by_ref):
 * copied in, read through the kernel; 0: not timed. */
static double send_ref_us[2];

/* The call kernel_gbps was fitted to on shm (direct2 past the area, its
 * send buffers read through the kernel) and its time: fitted again once
 * a send buffer's own rate (kernel_gbps_cache) prices part of it. */
static cal_probe_t kernel_probe;
/* The ramp's probes (fit_ramp), kept for its fit again once a message's
 * costs are fitted again with it (cal_measure). */
static cal_probe_t ramp_probes[2];
static double ramp_us[2];
static double kernel_probe_us;

void cal_send_ref_us(double *copied, double *by_ref)
{
    *copied = send_ref_us[0];
    *by_ref = send_ref_us[1];
}

/* threads, whose receiver reads the sender's buffer at any size: the
 * rate a node takes what a peer wrote (a tree allreduce of
 * FIT_CACHE_BYTES, the writer's buffers well within its core's cache,
 * one reader a step), how much the readers of a step slow one another
 * (the rings' call of as many bytes, every node a reader), and below the
 * size where that turns from a line at a time to a stream
 * (rendezvous_bytes), the small messages' rate (a call whose messages
 * are half of it) and the turn's fixed cost (messages of it); each fit
 * moves the others, so twice. Then a peer's windows (window_gbps):
 * direct1's and direct2's calls of FIT_CACHE_BYTES, their misses
 * balanced, as shm fits its peer rate. The tree's reads are mostly of
 * what the writer did not touch in the call, a window's of what it has
 * just copied in (on a host of one core, where the model sets the figure
 * aside, not fitted; at a bound, none): in a slow spell the two came 2-3x
 * apart, and the tree's rate predicted direct1's and direct2's 16 KiB-1
 * MiB at 0.46-0.74 of their time. */
static mrc_status_t fit_threads_in_cache(const cal_plan_t *plan,
                                         mrc_profile_t *p)
{
    /* 2 streams of P fragments, each of rendezvous_bytes (and half); the
     * peer rate's call has fragments of four times that at least (at
     * P = 4 the 256 KiB call's were the threshold's, and the peer rate
     * and the rendezvous's cost fitted one call between them). */
    size_t rdv_count =
        (size_t)(2 * plan->ranks * p->rendezvous_bytes / sizeof(float));
    size_t peer_count = FIT_CACHE_BYTES / sizeof(float);
    peer_count = 4 * rdv_count > peer_count ? 4 * rdv_count : peer_count;
    cal_probe_t pr, tree = {0}, rdv, slot, win[2];
    double us = 0, tree_us = 0, rdv_us = 0, slot_us = 0, win_us[2] = {0, 0};
    int clamped = 0, alone = readers_alone(plan, p);
    cal_tell(plan, 0.9, "collectives");
    mrc_status_t st = probe(plan, peer_count, 100, MRC_ALGO_RINGS, &pr, &us);
    if (st == MRC_OK && alone)
        st = probe(plan, peer_count, 100, MRC_ALGO_TREE, &tree, &tree_us);
    if (st == MRC_OK)
        st = probe(plan, rdv_count, 200, MRC_ALGO_RINGS, &rdv, &rdv_us);
    if (st == MRC_OK)
        st = probe(plan, rdv_count / 2, 200, MRC_ALGO_RINGS, &slot, &slot_us);
    for (int i = 0; i < 2 && st == MRC_OK && alone; i++)
        st =
            probe(plan, FIT_CACHE_BYTES / sizeof(float), 100,
                  i ? MRC_ALGO_DIRECT2 : MRC_ALGO_DIRECT1, &win[i], &win_us[i]);
    int win_clamped = 0;
    for (int round = 0; round < 2 && st == MRC_OK; round++) {
        st = cal_fit_rings(p, KNOB(slot_gbps), CAL_RATE_FLOOR_GBPS, 1e3,
                           plan->ranks, slot.count, slot_us, &clamped);
        if (st == MRC_OK)
            st = cal_fit_rings(p, KNOB(rendezvous_us), 1e-3, 100, plan->ranks,
                               rdv.count, rdv_us, &clamped);
        if (st == MRC_OK)
            st = cal_fit_family(p, KNOB(peer_gbps_cache), CAL_RATE_FLOOR_GBPS,
                                p->copy_gbps_cache, plan->ranks,
                                alone ? &tree : &pr, alone ? tree_us : us,
                                &clamped);
        if (st == MRC_OK && alone)
            st = fit_contention(plan, p, &pr, us, &clamped);
        if (st == MRC_OK && alone)
            st = cal_fit_probes(p, KNOB(window_gbps), CAL_RATE_FLOOR_GBPS,
                                p->copy_gbps_cache, plan->ranks, win, win_us, 2,
                                &win_clamped);
    }
    /* At a bound the windows said nothing the peer rate does not: none
     * (the model takes them at the peer rate), and the summary says so. */
    if (win_clamped)
        p->window_gbps = 0;
    windows_at_bound = win_clamped;
    return st;
}

/* How much of a core's own cache a node's buffers have (shm's
 * private_cache_bytes, at most the `listed` size): fitted to the rings'
 * call whose send and receive buffers are as large as the listed cache
 * (`half`), which the listed size would put wholly within it. On the
 * Intel Xeon host (2 MiB a core) the 1 MiB rows of every family and
 * collective ran at 0.64-0.85 of their prediction: the slots, the
 * peer's lines and the program's own data share that cache too. A fit
 * at the upper bound keeps the listed size; at the lower, a quarter. */
static mrc_status_t fit_private_cache(mrc_profile_t *p, int ranks,
                                      double listed, const cal_probe_t *half,
                                      double half_us)
{
    int clamped = 0;
    if (!(half_us > 0) || !(listed > 0))
        return MRC_OK;
    return cal_fit_family(p, KNOB(private_cache_bytes), listed / 4, listed,
                          ranks, half, half_us, &clamped);
}

/* How far into a read of a peer's lines the host takes them at half the
 * rate (peer_ramp_bytes): fitted to the tree's and direct1's allreduces
 * of RAMP_PROBE_BYTES (one reader a step: a message through the slots,
 * gets of windows; ramp_probes), their misses balanced, the rates fitted
 * to calls of 256 KiB beside it. On the Xeon host a core took another's
 * fresh lines at 10.6 GB/s in reads of 16 KiB and 17.7 in reads of 256
 * KiB, and the 16 KiB rows of every family ran at 0.59-0.80 of their
 * prediction. At the lower bound, none; at the upper (the probes'
 * messages, read at half the rate throughout, still too fast), that
 * bound. */
enum { RAMP_PROBE_BYTES = 16 << 10, RAMP_MIN_BYTES = 64 };

static mrc_status_t fit_ramp(mrc_profile_t *p, int ranks)
{
    int clamped = 0;
    if (!(ramp_us[0] > 0) || !(ramp_us[1] > 0))
        return MRC_OK;
    mrc_status_t st = cal_fit_probes(p, KNOB(peer_ramp_bytes), RAMP_MIN_BYTES,
                                     RAMP_PROBE_BYTES, ranks, ramp_probes,
                                     ramp_us, 2, &clamped);
    if (st == MRC_OK && clamped &&
        p->peer_ramp_bytes < RAMP_MIN_BYTES * (1 + CAL_AT_BOUND))
        p->peer_ramp_bytes = 0;
    return st;
}

/* shm: a program's messages go through the channels' slots (below
 * rendezvous_bytes, the channel's capacity), so a tree allreduce of
 * FIT_CACHE_BYTES (one reader a step at P = 2) gives the slots' rate
 * and the rings' call of as many bytes the readers' contention; the
 * rings' call at the cores' caches' edge (edge_bytes, through the caches
 * whatever the threshold, as the fit times it), each node's buffers
 * half or more past its core's cache, the rate of its copies from the
 * shared one (copy_gbps_shared; at a bound, no such level: none, and
 * the summary says so);
 * direct1's and direct2's calls of FIT_CACHE_BYTES, their gets from
 * windows in the segment, a peer's lines (a plain copy; the figure that
 * balances the two calls' misses: fitted to direct1's alone it came out
 * at the copy rate, and direct2's 64 KiB-1 MiB ran at 0.77-0.82 of
 * their prediction in every capture); and a direct2 call of twice the
 * area (mrc__shm_send_copied_max), past what it exposes by copy and what
 * its owner copies in, read by reference, the kernel's copy (its buffers
 * past the core's cache too; at twice mrc__stage_reduce_max, 2 MiB at 2
 * ranks, once the area was 8 MiB, the send buffer went into it and the
 * kernel's rate came out at 4.1 GB/s, which put direct2's 16-64 MiB at
 * 2.3-2.6 times their time); and the tree's and direct1's 16 KiB
 * calls, the ramp of a read of a peer's lines (fit_ramp). Three rounds,
 * as each fit moves the others. */
static mrc_status_t fit_shm_in_cache(const cal_plan_t *plan, mrc_profile_t *p)
{
    /* (through the caches: a 2 MiB call's receive buffer is past a
     * calibrated threshold of 1 or 2 MiB, and the fit times it so) */
    cal_probe_t rings, tree = {0}, win[2], ref;
    cal_probe_t edge = {.count = edge_bytes(p, plan->ranks) / sizeof(float),
                        .iters = 30,
                        .reps = 3 * plan->reps,
                        .stream_bytes = SIZE_MAX};
    cal_probe_t half = edge;
    half.count = edge.count / 2;
    double rings_us = 0, tree_us = 0, edge_us = 0, half_us = 0;
    double win_us[2] = {0, 0}, cache = p->private_cache_bytes;
    double ref_us = 0;
    int clamped = 0, own_clamped = 0, alone = readers_alone(plan, p);
    int own = alone && p->private_cache_bytes > 0;
    size_t past = 2 * mrc__shm_send_copied_max(plan->ranks) / sizeof(float);
    cal_tell(plan, 0.9, "collectives");
    mrc_status_t st = probe(plan, FIT_CACHE_BYTES / sizeof(float), 100,
                            MRC_ALGO_RINGS, &rings, &rings_us);
    if (st == MRC_OK && alone)
        st = probe(plan, FIT_CACHE_BYTES / sizeof(float), 100, MRC_ALGO_TREE,
                   &tree, &tree_us);
    if (st == MRC_OK && own)
        st = cal_probe_allreduce(plan->transport, plan->ranks, &edge, &edge_us);
    if (st == MRC_OK && own)
        st = cal_probe_allreduce(plan->transport, plan->ranks, &half, &half_us);
    for (int i = 0; i < 2 && st == MRC_OK; i++)
        st =
            probe(plan, FIT_CACHE_BYTES / sizeof(float), 100,
                  i ? MRC_ALGO_DIRECT2 : MRC_ALGO_DIRECT1, &win[i], &win_us[i]);
    if (st == MRC_OK)
        st = probe(plan, past, 30, MRC_ALGO_DIRECT2, &ref, &ref_us);
    kernel_probe = ref;
    kernel_probe_us = st == MRC_OK ? ref_us : 0;
    ramp_us[0] = ramp_us[1] = 0;
    for (int i = 0; i < 2 && st == MRC_OK && alone; i++)
        st = probe(plan, RAMP_PROBE_BYTES / sizeof(float), 400,
                   i ? MRC_ALGO_DIRECT1 : MRC_ALGO_TREE, &ramp_probes[i],
                   &ramp_us[i]);
    for (int round = 0; round < 3 && st == MRC_OK; round++) {
        st = cal_fit_family(p, KNOB(slot_gbps), CAL_RATE_FLOOR_GBPS, 1e3,
                            plan->ranks, alone ? &tree : &rings,
                            alone ? tree_us : rings_us, &clamped);
        if (st == MRC_OK && alone)
            st = fit_ramp(p, plan->ranks);
        if (st == MRC_OK && alone)
            st = fit_contention(plan, p, &rings, rings_us, &clamped);
        if (st == MRC_OK && own)
            st = cal_fit_family(p, KNOB(copy_gbps_shared), CAL_RATE_FLOOR_GBPS,
                                p->copy_gbps_cache, plan->ranks, &edge, edge_us,
                                &own_clamped);
        if (st == MRC_OK && own_clamped)
            p->copy_gbps_shared = 0;
        if (st == MRC_OK && own && !own_clamped)
            st = fit_private_cache(p, plan->ranks, cache, &half, half_us);
        if (st == MRC_OK)
            st = cal_fit_probes(p, KNOB(peer_gbps_cache), CAL_RATE_FLOOR_GBPS,
                                p->copy_gbps_cache, plan->ranks, win, win_us, 2,
                                &clamped);
        if (st == MRC_OK)
            st = cal_fit_family(p, KNOB(kernel_gbps), CAL_RATE_FLOOR_GBPS,
                                p->copy_gbps_cache, plan->ranks, &ref, ref_us,
                                &clamped);
    }
    own_level_at_bound = own_clamped;
    return st;
}

/* How a send buffer exposed by reference is best read (send_by_ref): on
 * shm at 2 ranks, timed: direct1's allgather of SEND_REF_PROBE bytes a
 * rank (by reference, past its 16 KiB window), its ranks' send buffers
 * copied into their areas, then read through the kernel, three times
 * each in turn; through the kernel where the fastest of its three beat
 * the fastest copied in by 3% or more, as the stream threshold is taken.
 * The rates' rule (mrc_profile_kernel_read_faster) came out either way
 * from one calibration to the next on the Intel Xeon host (the kernel's
 * rate 8.05 against 8.12 for the copies, then 9.98 against 8.5), where the
 * calls themselves differed by a factor of 1.7 (23 us copied in, 14 read); on
 * shm at more ranks (where the form by reference comes only past the window)
 * the rule. (threads has no kernel read; an MPI calibration does not come
 * here.) */
enum { SEND_REF_PROBE = 128 << 10 };

/* The kernel's rate of a send buffer in cache (kernel_gbps_cache), fitted
 * to the allgather read through the kernel (us): the simulator times it
 * with the send buffers read there, whatever send_by_ref comes to. A fit
 * at its bound is no figure (the model without it stands). The call
 * kernel_gbps was fitted to reads send buffers too (the share of them in
 * cache now at this rate): each is fitted again with the other, two
 * rounds, as its probe ran (sends copied in where they fit). */
static mrc_status_t fit_kernel_send(const cal_plan_t *plan, mrc_profile_t *p,
                                    double us)
{
    if (us <= 0 || p->kernel_gbps <= 0)
        return MRC_OK;
    cal_probe_t pr = {.count = SEND_REF_PROBE / sizeof(float),
                      .algo = MRC_ALGO_DIRECT1,
                      .allgather = 1};
    double by_ref = p->send_by_ref;
    mrc_status_t st = MRC_OK;
    for (int round = 0; round < 2 && st == MRC_OK; round++) {
        int clamped = 0;
        p->send_by_ref = 1;
        st = cal_fit_family(p, KNOB(kernel_gbps_cache), CAL_RATE_FLOOR_GBPS,
                            1e3, plan->ranks, &pr, us, &clamped);
        p->send_by_ref = by_ref;
        if (st != MRC_OK || clamped) {
            p->kernel_gbps_cache = 0;
            break;
        }
        if (kernel_probe_us > 0)
            st = cal_fit_family(p, KNOB(kernel_gbps), CAL_RATE_FLOOR_GBPS,
                                p->copy_gbps_cache, plan->ranks, &kernel_probe,
                                kernel_probe_us, &clamped);
    }
    return st;
}

static mrc_status_t fit_send_by_ref(const cal_plan_t *plan, mrc_profile_t *p)
{
    send_ref_us[0] = send_ref_us[1] = 0;
    if (strcmp(plan->transport, "shm") != 0 || plan->ranks != 2) {
        p->send_by_ref = mrc_profile_kernel_read_faster(p);
        return MRC_OK;
    }
    double best[2] = {0, 0};
    mrc_status_t st = MRC_OK;
    cal_tell(plan, 0.98, "send buffers");
    for (int i = 0; i < 6 && st == MRC_OK; i++) {
        cal_probe_t pr = {.count = SEND_REF_PROBE / sizeof(float),
                          .iters = 100,
                          .reps = plan->reps,
                          .algo = MRC_ALGO_DIRECT1,
                          .allgather = 1,
                          .send_by_ref = i % 2};
        double us = 0;
        st = cal_probe_allreduce(plan->transport, plan->ranks, &pr, &us);
        if (st == MRC_OK && (best[i % 2] == 0 || us < best[i % 2]))
            best[i % 2] = us;
    }
    if (st == MRC_OK)
        st = fit_kernel_send(plan, p, best[1]);
    kernel_probe_us = 0; /* (this calibration's) */
    if (st == MRC_OK)
        p->send_by_ref = best[1] > 0 && best[1] * 1.03 <= best[0];
    send_ref_us[0] = best[0];
    send_ref_us[1] = best[1];
    return st;
}

/* threads: a core's rates in cache, measured on as many ranks as the
 * host has cores (at least 2). With more ranks than cores the rings'
 * calls, where every rank is at work, are mostly the cores' turns, and
 * the rates fitted to them through the share of a core came out at a
 * third of a core's (4 ranks on 2 cores: a peer's lines at 17-20 GB/s
 * against 51 on 2 ranks; direct1's and direct2's 16 KiB-1 MiB at
 * 1.6-2.1x in two captures of three). What the crowd adds is fitted on
 * all the ranks after: the turns, the waiting ranks' share of a core,
 * the memory's shared rate. Not shm, whose fits on all the ranks gave
 * 27-28 of 29 rows within at P = 4, and on 2 of them 24 (the kernel's
 * copy by reference, fitted alone, put direct2's 4-64 MiB at 0.6-0.67). */
static mrc_status_t fit_in_cache(const cal_plan_t *plan, mrc_profile_t *p)
{
    if (strcmp(plan->transport, "shm") == 0)
        return fit_shm_in_cache(plan, p);
    cal_plan_t alone = *plan;
    if (p->cores > 0 && plan->ranks > p->cores)
        alone.ranks = p->cores > 2 ? p->cores : 2;
    return fit_threads_in_cache(&alone, p);
}

/* The calls around the shared cache's edge: one whose set the cache
 * may hold (near), one partly in it (mid), one far beyond it (big). */
typedef struct far_probe {
    int ranks;
    size_t near_count;
    double near_us;
    size_t mid_count;
    double mid_us;
    size_t big_count;
    double big_us;
} far_probe_t;

/* The memory's figures for the big call at a given cache size: its
 * shared rate, or where even unshared memory is too slow for it, every
 * rate beyond cache scaled (from the probes' own figures, `probed`:
 * set_beyond scales what it is given). */
static mrc_status_t fit_memory(mrc_profile_t *p, const mrc_profile_t *probed,
                               const far_probe_t *f)
{
    int clamped = 0;
    restore_beyond(p, probed);
    mrc_status_t st =
        cal_fit_rings(p, KNOB(memory_gbps_shared), CAL_RATE_FLOOR_GBPS, 1e4,
                      f->ranks, f->big_count, f->big_us, &clamped);
    if (st == MRC_OK && clamped) {
        restore_beyond(p, probed);
        st = cal_fit_rings(p, &beyond, 1, 16, f->ranks, f->big_count, f->big_us,
                           &clamped);
    }
    return st;
}

enum { FAR_STEPS = 24 };

/* How far the model's times of the near and mid calls are from the
 * measured ones, once the memory's figures explain the big call. */
static mrc_status_t far_error(mrc_profile_t *p, const mrc_profile_t *probed,
                              const far_probe_t *f, double *err)
{
    double near = 0, mid = 0;
    mrc_status_t st = fit_memory(p, probed, f);
    if (st == MRC_OK)
        st = cal_sim_probe(p, f->ranks, &(cal_probe_t){.count = f->near_count},
                           &near);
    if (st == MRC_OK)
        st = cal_sim_probe(p, f->ranks, &(cal_probe_t){.count = f->mid_count},
                           &mid);
    *err = fabs(log(near / f->near_us)) + fabs(log(mid / f->mid_us));
    return st;
}

/* The shared cache's effective size, how fast its share falls past it,
 * and the memory's rate, together: for each size from the cores' own
 * caches to the kernel's last level (a tenant of a VM may get far less
 * than the 480 MiB the build machine's kernel states) and each power of
 * the fall, the memory figures that explain the big call; of those, the
 * set that best explains the near and mid ones. Never below the working
 * set of an edge_bytes call of the ranks with a window (three buffers
 * a node): the in-cache fits took the calls up to it as in cache, and a
 * cache below it undoes them (shm, 4 ranks on 2 cores: a 4 MiB cache
 * with falloff 8 fitted the 4 and 16 MiB calls, and put every family's
 * 1 MiB row at 1.7-2.8 of its time, where the kernel's 32 MiB had them
 * at 0.8-1.1; the rings' two buffers a node as the floor, 8 MiB, still
 * had direct1's and direct2's 1 MiB, windows and all, at 2.65). */
static mrc_status_t fit_far(mrc_profile_t *p, const mrc_profile_t *probed,
                            const far_probe_t *f)
{
    static const double falloff[] = {1, 1.5, 2, 3, 4, 6, 8};
    double llc = probed->cache_bytes;
    double fitted = 3.0 * (double)edge_bytes(probed, f->ranks) * f->ranks;
    double lo =
        fmin(llc, fmax(fmax(probed->private_cache_bytes * f->ranks, llc / 1024),
                       fitted));
    double best = INFINITY, best_cache = llc, best_falloff = 1;
    for (size_t k = 0; k < sizeof falloff / sizeof falloff[0]; k++)
        for (int i = 0; i <= FAR_STEPS; i++) {
            p->cache_falloff = falloff[k];
            p->cache_bytes = lo * pow(llc / lo, (double)i / FAR_STEPS);
            double err = 0;
            mrc_status_t st = far_error(p, probed, f, &err);
            if (st != MRC_OK)
                return st;
            if (err < best) {
                best = err;
                best_cache = p->cache_bytes;
                best_falloff = p->cache_falloff;
            }
        }
    p->cache_bytes = best_cache;
    p->cache_falloff = best_falloff;
    return fit_memory(p, probed, f);
}

/* The rings' calls of 1-16 MiB a rank timed both ways (fit_stream). */
enum { STREAM_SIZES = 5 };
typedef struct stream_probe {
    int timed; /* the transport writes around the caches (threads, shm) */
    cal_probe_t calls[STREAM_SIZES];
    double cached_us[STREAM_SIZES], around_us[STREAM_SIZES];
} stream_probe_t;

/* The rate of a call that writes around the caches (stream_gbps): the
 * one that balances the misses of the rings' calls of 1-16 MiB timed so,
 * every one of them taken as around the caches (as if the threshold
 * were 1 byte), once the rates in cache and beyond have been fitted on
 * calls through the caches. (At threads, P = 2, in a slow spell the
 * calibrated threshold came out at 1 MiB, the rings' and the tree's
 * rates were fitted on calls around the caches, and direct2's 4-16 MiB,
 * whose gets read their peers' buffers from the other core's cache
 * whatever the threshold, were predicted at 0.40-0.47 of their time.) */
static mrc_status_t fit_stream_rate(const cal_plan_t *plan, mrc_profile_t *p,
                                    const stream_probe_t *sp)
{
    double from = p->stream_bytes;
    int clamped = 0;
    p->stream_bytes = 1;
    mrc_status_t st = cal_fit_probes(p, KNOB(stream_gbps), CAL_RATE_FLOOR_GBPS,
                                     1e3, plan->ranks, sp->calls, sp->around_us,
                                     STREAM_SIZES, &clamped);
    p->stream_bytes = from;
    /* At a bound no rate explains the calls: none (timed as through the
     * caches) rather than one that moves every prediction around them. */
    if (st == MRC_OK && clamped)
        p->stream_gbps = 0;
    return st;
}

static mrc_status_t fit_collective_rates(const cal_plan_t *plan,
                                         mrc_profile_t *p,
                                         const stream_probe_t *sp)
{
    mrc_status_t st = fit_in_cache(plan, p);
    if (st != MRC_OK)
        return st;
    cal_probe_t pr = {.count = FIT_CACHE_BYTES / sizeof(float),
                      .iters = 100,
                      .reps = 3 * plan->reps};
    int clamped = 0;
    /* Between the two: the rate a node takes a peer's lines from the
     * shared cache, once they have left the writer's core (slower than
     * a core's own copies on a busy host: a 4 MiB call on the build
     * machine, every node's buffers past its core's 2 MiB, came at half
     * the copy rate). Beyond: how much of the host's working set the
     * shared cache really holds for the collectives and the memory's
     * rate when all nodes use it, together (fit_far). Twice, as each fit
     * moves the others. */
    double edge_us = 0, shared_us = 0, mid_us = 0, big_us = 0;
    /* These calls through the caches, whatever the threshold: the rates
     * in and beyond them are those of calls through them, and the calls
     * around them have a rate of their own (fit_stream_rate). */
    size_t through = sp->timed ? SIZE_MAX : 0;
    cal_probe_t edge = {.count = edge_bytes(p, plan->ranks) / sizeof(float),
                        .iters = 30,
                        .reps = 3 * plan->reps,
                        .stream_bytes = through};
    cal_probe_t shared = {.count = FIT_SHARED_BYTES / sizeof(float),
                          .iters = 8,
                          .reps = 3 * plan->reps,
                          .stream_bytes = through};
    cal_probe_t mid = {.count = FIT_MID_BYTES / sizeof(float),
                       .iters = 4,
                       .reps = 3 * plan->reps,
                       .stream_bytes = through};
    /* With more ranks than cores the edge call is mostly turns for a
     * core, and the fit swung from a sixteenth of the kernel's figure to
     * all of it between runs: the kernel's figure stands. shm's rings
     * take their peers' lines from the slots, whatever the buffers'
     * size, so their calls say nothing of these two: the kernel's
     * figure and the cache's rate stand. Either way the edge call is
     * not made. */
    double own =
        strcmp(plan->transport, "shm") == 0 ? 0 : p->private_cache_bytes;
    int crowded = plan->ranks > p->cores;
    int fit_own = own > 0 && !crowded;
    cal_tell(plan, 0.93, "collectives");
    if (fit_own)
        st = cal_probe_allreduce(plan->transport, plan->ranks, &edge, &edge_us);
    if (st == MRC_OK)
        st = cal_probe_allreduce(plan->transport, plan->ranks, &shared,
                                 &shared_us);
    if (st == MRC_OK)
        st = cal_probe_allreduce(plan->transport, plan->ranks, &mid, &mid_us);
    pr.count = plan->memory_bytes / sizeof(float);
    pr.iters = 2;
    pr.stream_bytes = through;
    cal_tell(plan, 0.96, "collectives");
    if (st == MRC_OK)
        st = cal_probe_allreduce(plan->transport, plan->ranks, &pr, &big_us);
    const mrc_profile_t probed = *p;
    far_probe_t far = {plan->ranks, shared.count, shared_us, mid.count,
                       mid_us,      pr.count,     big_us};
    for (int round = 0; round < 2 && st == MRC_OK && fit_own; round++) {
        st = cal_fit_rings(p, KNOB(private_cache_bytes), own / 16, own,
                           plan->ranks, edge.count, edge_us, &clamped);
        if (st == MRC_OK)
            st = cal_fit_rings(p, KNOB(peer_gbps_shared), CAL_RATE_FLOOR_GBPS,
                               p->copy_gbps_cache, plan->ranks, shared.count,
                               shared_us, &clamped);
    }
    for (int round = 0; round < 2 && st == MRC_OK; round++) {
        if (own > 0)
            st = cal_fit_rings(p, KNOB(peer_gbps_shared), CAL_RATE_FLOOR_GBPS,
                               p->copy_gbps_cache, plan->ranks, shared.count,
                               shared_us, &clamped);
        if (st == MRC_OK)
            st = fit_far(p, &probed, &far);
    }
    if (st == MRC_OK && sp->timed)
        st = fit_stream_rate(plan, p, sp);
    return st;
}

/* With more ranks than cores, what the ranks' turns for the cores cost
 * beyond the rings' (turn_us, fitted on every rank at work): the share
 * of a turn a message takes in a quiet step (quiet_turn_share), from the
 * tree's allreduce of CAL_FLAG_PROBE_BYTES, whose two inner steps have two
 * ranks (the tree's 4-16 KiB calls on 4 threads of 2 cores had been
 * predicted at 0.53-0.63 of their time without it); and the share of a
 * core a waiting rank takes beside the ranks at work (spin_share), from
 * the tree's allreduce of FIT_SPIN_BYTES in four chunks. (The rings
 * have every rank at work throughout: neither moves them.) Each fit
 * moves the other, so twice. On the build machine, 4 ranks on 2 cores,
 * four calibrations in a row had fitted spin_share alone at threads
 * 0.25-0.62, shm 0-0.77 (the probe's time swings between runs). A share
 * at its lower bound is none. */
static mrc_status_t fit_crowd(const cal_plan_t *plan, mrc_profile_t *p)
{
    cal_probe_t quiet = {.count = CAL_FLAG_PROBE_BYTES / sizeof(float),
                         .iters = 2 * (plan->trips / 30 + 1),
                         .reps = 3 * plan->reps,
                         .algo = MRC_ALGO_TREE};
    cal_probe_t tree = {.count = FIT_SPIN_BYTES / sizeof(float),
                        .iters = 20,
                        .reps = 3 * plan->reps,
                        .algo = MRC_ALGO_TREE};
    double quiet_us = 0, us = 0;
    int clamped = 0;
    cal_tell(plan, 0.98, "collectives");
    mrc_status_t st =
        cal_probe_allreduce(plan->transport, plan->ranks, &quiet, &quiet_us);
    if (st == MRC_OK)
        st = cal_probe_allreduce(plan->transport, plan->ranks, &tree, &us);
    for (int round = 0; round < 2 && st == MRC_OK; round++) {
        st = cal_fit_family(p, KNOB(quiet_turn_share), 1e-3, 1, plan->ranks,
                            &quiet, quiet_us, &clamped);
        if (st == MRC_OK && clamped && p->quiet_turn_share < 2e-3)
            p->quiet_turn_share = 0;
        if (st == MRC_OK)
            st = cal_fit_family(p, KNOB(spin_share), 1e-3, 1, plan->ranks,
                                &tree, us, &clamped);
    }
    return st;
}

/* With more ranks than cores, a message's wait for its sender's turn
 * for a core (turn_us): what the message probe's call on all the ranks
 * takes beyond the message itself, measured on as many ranks as cores;
 * and a memory program's flag's (flag_turn_us): the small direct1 call
 * on all the ranks, whose peers have mostly run by the time its flags
 * are waited for. */
static mrc_status_t fit_turns(const cal_plan_t *plan, mrc_profile_t *p,
                              const cal_probe_t *direct1)
{
    double crowded = 0, flag_us = 0;
    int clamped = 0;
    mrc_status_t st =
        cal_message_us(plan->transport, plan->ranks, plan->trips / 30 + 1,
                       3 * plan->reps, &crowded);
    if (st == MRC_OK)
        st = cal_fit_rings(p, KNOB(turn_us), 1e-3, 1e4, plan->ranks,
                           cal_probe_count(plan->ranks), crowded, &clamped);
    if (st == MRC_OK)
        st = cal_probe_allreduce(plan->transport, plan->ranks, direct1,
                                 &flag_us);
    if (st == MRC_OK)
        st = cal_fit_family(p, KNOB(flag_turn_us), 1e-3, 1e4, plan->ranks,
                            direct1, flag_us, &clamped);
    return st;
}

/* The calls get_us is fitted to: 4 KiB allreduces of direct1 (one get
 * of each peer's window after its flag) and direct2 (two rounds of a
 * flag and a get) on `ranks` ranks. Fitted to direct1's alone, two gets
 * in turn were twice one (1.31-1.43 for direct2's 4 KiB at P = 2 on
 * both transports, where it runs in less than direct1's time): one
 * figure for both leaves their misses balanced, one over and one under.
 * gets[0] is direct1's. */
static mrc_status_t probe_gets(const cal_plan_t *plan, int ranks,
                               cal_probe_t gets[2], double us[2])
{
    mrc_status_t st = MRC_OK;
    for (int i = 0; i < 2 && st == MRC_OK; i++) {
        gets[i] =
            (cal_probe_t){.count = CAL_FLAG_PROBE_BYTES / sizeof(float),
                          .iters = 2 * (plan->trips / 30 + 1),
                          .reps = 3 * plan->reps,
                          .algo = i ? MRC_ALGO_DIRECT2 : MRC_ALGO_DIRECT1};
        st = cal_probe_allreduce(plan->transport, ranks, &gets[i], &us[i]);
    }
    return st;
}

typedef struct host_call {
    const cal_plan_t *plan;
    mrc_profile_t *p;
    double sync;
} host_call_t;

static mrc_status_t host_call(void *ctx)
{
    host_call_t *c = ctx;
    return cal_measure_host(c->plan, c->p);
}

static mrc_status_t sync_call(void *ctx)
{
    host_call_t *c = ctx;
    int processes = strcmp(c->plan->transport, "shm") == 0;
    c->sync = cal_sync_us(processes, c->plan->trips, c->plan->reps);
    return c->sync < 0 ? MRC_ERR_INTERNAL : MRC_OK;
}

/* Where writing around the caches starts to pay on this host, for this
 * transport (stream_bytes): the rings' allreduce of 1-16 MiB a rank
 * timed both ways, in turn (the order turning with the size), and the
 * smallest size from which the writes around are the faster, by 3% at
 * least, at every size timed; where they are not at the largest, twice
 * that. Which way is faster depends on the host's state as well as its
 * make: in a quiet
 * spell of the build VM a block written around the caches was read back
 * from memory by the next step (the built-in 8 MiB), in a slow one the
 * threads' rings at 1-4 MiB took half the time so. The probes after
 * this one run with it, as runs with the profile do, but for the calls
 * that fit the rates past the cores' caches, made through them
 * (fit_collective_rates); the calls around them timed here fit their
 * own rate (fit_stream_rate). */
static const size_t stream_sizes[STREAM_SIZES] = {1 << 20, 2 << 20, 4 << 20,
                                                  8 << 20, 16 << 20};
/* Around must be this much faster: within it, the caches (one noisy
 * pair of probes does not move every later fit). */
#define STREAM_GAIN 0.97

static mrc_status_t fit_stream(const cal_plan_t *plan, stream_probe_t *sp)
{
    mrc_status_t st = MRC_OK;
    for (int i = 0; i < STREAM_SIZES && st == MRC_OK; i++) {
        size_t bytes = stream_sizes[i];
        size_t loop = plan->rep_bytes / bytes;
        cal_probe_t pr = {.count = bytes / sizeof(float),
                          .iters = loop > 2 ? (int)loop : 2,
                          .reps = 3 * plan->reps};
        for (int k = 0; k < 2 && st == MRC_OK; k++) {
            int streaming = (k + i) % 2;
            pr.stream_bytes = streaming ? 1 : SIZE_MAX;
            st = cal_probe_allreduce(plan->transport, plan->ranks, &pr,
                                     streaming ? &sp->around_us[i]
                                               : &sp->cached_us[i]);
        }
        sp->calls[i] = pr;
    }
    if (st != MRC_OK)
        return st;
    sp->timed = 1;
    size_t from = 2 * stream_sizes[STREAM_SIZES - 1];
    for (int i = STREAM_SIZES;
         i-- > 0 && sp->around_us[i] < STREAM_GAIN * sp->cached_us[i];)
        from = stream_sizes[i];
    cal_set_stream_bytes(from);
    return MRC_OK;
}

/* The threshold (threads and shm), the host's copies and reductions and
 * the sync, guarded like the collectives' probes: every rate the fits
 * take from them moves with the host's speed. */
static mrc_status_t measure_host(const cal_plan_t *plan, mrc_profile_t *p,
                                 stream_probe_t *sp, double *sync)
{
    cal_steady_begin(plan->steady_wait_s);
    windows_at_bound = own_level_at_bound = 0;
    cal_set_stream_bytes(0);
    mrc_status_t st = MRC_OK;
    /* (mpi: its ranks' threshold stays the built-in, no probe here) */
    int streams = strcmp(plan->transport, "threads") == 0 ||
                  strcmp(plan->transport, "shm") == 0;
    if (streams) {
        cal_tell(plan, 0, "streaming");
        st = fit_stream(plan, sp);
    }
    host_call_t hc = {plan, p, 0};
    if (st == MRC_OK)
        st = cal_steady_run(host_call, &hc);
    if (st != MRC_OK)
        return st;
    if (streams)
        p->stream_bytes = (double)cal_stream_bytes();
    /* Where a message turns from small to large. shm: the transport's
     * own threshold, from its slots to a rendezvous. threads, which reads
     * the sender's buffer at any size: where the build machine's calls
     * turned from taking what the sender's core had just written a line
     * at a time (rings at P = 2, 16-128 KiB: 5-8 GB/s more a byte) to
     * streaming it (128-256 KiB: 17-50). */
    if (strcmp(plan->transport, "shm") == 0)
        p->rendezvous_bytes = (double)mrc__shm_rendezvous_bytes(plan->ranks);
    else if (strcmp(plan->transport, "threads") == 0)
        p->rendezvous_bytes = CAL_THREADS_SMALL_BYTES;
    cal_tell(plan, 0.75, "sync");
    st = cal_steady_run(sync_call, &hc);
    *sync = hc.sync;
    return st;
}

mrc_status_t cal_measure(const cal_plan_t *plan, mrc_profile_t *p)
{
    stream_probe_t sp = {0};
    double sync = 0;
    mrc_status_t st = measure_host(plan, p, &sp, &sync);
    if (st != MRC_OK)
        return st;
    cal_tell(plan, 0.85, "messages");
    /* With more ranks than cores a message also waits for its sender's
     * turn for a core: the message itself is measured on as many ranks
     * as there are cores, and the turn is what the call on all of them
     * takes beyond (turn_us, fitted as the rest). */
    int alone =
        plan->ranks > p->cores ? (p->cores > 2 ? p->cores : 2) : plan->ranks;
    double msg = 0;
    st = cal_message_us(plan->transport, alone, plan->trips / 30 + 1,
                        3 * plan->reps, &msg);
    if (st == MRC_OK)
        st = cal_set_costs(p, alone, sync, msg);
    cal_probe_t chain = {.count = CAL_FLAG_PROBE_BYTES / sizeof(float),
                         .iters = 2 * (plan->trips / 30 + 1),
                         .reps = 3 * plan->reps,
                         .algo = MRC_ALGO_TREE};
    double chain_us = 0, loops_us[2] = {0, 0};
    cal_probe_t loops[2];
    cal_broadcast_loops(plan, loops);
    if (st == MRC_OK)
        st = cal_probe_allreduce(plan->transport, alone, &chain, &chain_us);
    if (st == MRC_OK && strcmp(plan->transport, "shm") == 0) {
        for (int i = 0; i < 2 && st == MRC_OK; i++)
            st = cal_probe_allreduce(plan->transport, alone, &loops[i],
                                     &loops_us[i]);
    }
    if (st == MRC_OK)
        st = cal_fit_messages(plan, p, alone, sync, msg, &chain, chain_us,
                              loops, loops_us);
    /* A memory operation: small direct1 and direct2 calls on the same
     * ranks (their gets follow one another in a chain, where the rings'
     * two streams' messages add on the receiver's core). */
    cal_probe_t gets[2];
    double gets_us[2] = {0, 0};
    int clamped = 0;
    if (st == MRC_OK)
        st = probe_gets(plan, alone, gets, gets_us);
    if (st == MRC_OK)
        st = cal_fit_probes(p, KNOB(get_us), 1e-3, 100, alone, gets, gets_us, 2,
                            &clamped);
    if (st == MRC_OK && alone < plan->ranks)
        st = fit_turns(plan, p, &gets[0]);
    if (st == MRC_OK)
        st = fit_collective_rates(plan, p, &sp);
    /* The readers' contention slows a message's own cost too (it is work
     * on the receiver's peer channel), and a get's bytes, as the windows'
     * own rate does: the message's and the get's figures again, with the
     * contention and the window rate the rates' calls found. */
    /* (the ramp, fitted with the costs of the first pass, which had
     * taken its slow start: each again with the other, twice) */
    int again = p->peer_contention > 0 || p->window_gbps > 0 ||
                p->send_us > 0 || p->peer_ramp_bytes > 0;
    for (int round = 0; round < 2 && st == MRC_OK && again; round++) {
        st = cal_fit_messages(plan, p, alone, sync, msg, &chain, chain_us,
                              loops, loops_us);
        if (st == MRC_OK)
            st = cal_fit_probes(p, KNOB(get_us), 1e-3, 100, alone, gets,
                                gets_us, 2, &clamped);
        if (st == MRC_OK && p->peer_ramp_bytes > 0)
            st = fit_ramp(p, alone);
    }
    if (st == MRC_OK && plan->ranks > p->cores)
        st = fit_crowd(plan, p);
    /* The host's speed as calibrated, for --check to hold it to. */
    p->canary_us = cal_steady_report().best_us;
    /* Last: every probe ran with the sends copied in where they fit, as
     * the fits timed them; the transport's way from now on. */
    if (st == MRC_OK && strcmp(plan->transport, "threads") != 0)
        st = fit_send_by_ref(plan, p);
    cal_tell(plan, 1, "done");
    return st;
}
