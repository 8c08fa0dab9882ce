/*
 * The model of the CPU transports (threads, shm, MPI) that the selector
 * times a family by (select.h): a few constants, or a host's profile.
 *
 * Accepts: any compiled program, any transport but the links.
 * Limits: the constants are measured roughly on one machine
 * (docs/families.md, "Selection"), not a calibration.
 *
 * Model of the CPU transports, per node, from the program's own
 * operations (whole fragments, so that chunking does not count):
 *
 *   time = rounds x sync + copied / copy_bw + reduced / reduce_bw
 *
 *   rounds   the longest chain's number of waits (RECV, WAIT, BARRIER)
 *            that follow a SEND or a SIGNAL: the waits on several peers
 *            after one signal overlap, and count once; for send/receive
 *            programs at least their dependency depth (the simulator's
 *            BSP steps);
 *   copied   bytes received, got, copied or exposed by copy (and sent,
 *            where a send copies: shm and MPI);
 *   reduced  bytes received or got into a reduction.
 *
 * The call's time is its slowest node's, where a node's first wait on
 * its peers' flags ends no sooner than the last of them signals (a get
 * from a window follows its owner's copy into it: direct1's broadcast is
 * the root's copy, then the leaves'). A broadcast is timed in place, as
 * MPI's and torch's are (no copy of the root's to itself).
 *
 * With local completion (MPI's rule, the drop-in library's), a reduce's
 * leaves and a broadcast's root return once their own part is done, and
 * run calls ahead of the node that waits for them: in a run of such
 * calls a node never waits on a flag that its peer raised a call ago,
 * so a call costs its busiest node's own time, each node alone
 * (mrc__cpu_runs_ahead). That is the mechanism of the forms by copy and
 * of the families by messages. Not of a form by reference (direct1's
 * broadcast on 2 nodes past 64 KiB): its root waits at the closing sync
 * for its reader and runs ahead of nothing, so it is timed as one call,
 * the root's expose, the leaf's read and the sync one after the other.
 * It had been timed so too, as a measured fit: the tree's receiver then
 * copied each piece its root sent ahead twice, out of the slot and
 * again, and direct1 by reference beat it (docs/performance.md, "Runs
 * of calls"). Once each piece was copied once ("Each piece copied
 * once"), the tree and the rings took 0.67-0.94 of direct1's time on
 * every broadcast of 128 KiB-16 MiB at 2 ranks (bench/family_sweep.sh
 * -r 2 -n 2, same buffers), and the rule's pick was within 5% of the
 * fastest family at 13 of 22 sizes (4 of 22 on new buffers).
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "mrc/sim.h"
#include "program/plan.h"
#include "sim/select.h"
#include "sim/sim_internal.h"

/* Measured roughly on the 2-core build machine (docs/families.md,
 * "Selection"): a flag seen by another core and answered, 0.3 us; memcpy
 * and a float32 sum (two reads, one write) by the tier the vector lives
 * in (64 KiB L1 and 2 MiB L2 a core, 32 MiB L3). A transfer's fixed cost
 * (find the peer's buffer, check its stamp, call the kernel) is a guess
 * of a few cache misses. MPI's round is Open MPI's point-to-point over
 * shared memory on one host (0.5 us at 8 bytes, docs/performance.md),
 * doubled for a network between hosts. */
#define CPU_RATES .copy_gbps = {60, 20, 4}, .reduce_gbps = {29, 15, 3.7}
static const mrc__cpu_cost_t cpu_costs[MRC__SIM_NUM_TRANSPORTS] = {
    [MRC__SIM_TRANSPORT_LINKS] = {0},
    [MRC__SIM_TRANSPORT_THREADS] = {.sync_us = 0.3,
                                    .op_us = 0.05,
                                    CPU_RATES,
                                    .send_copies = 0},
    /* Shared memory (the figures and their commands: docs/families.md,
     * "Selection" and "Refitted"): a send copies into the segment's
     * slots; from the channel's capacity (1 MiB up to 64 ranks, past the
     * default chunk) a message goes by rendezvous (a system call and a
     * handshake; the sender copies nothing); what the kernel copies (a
     * rendezvous, a get of a buffer exposed by reference) moves at
     * kernel_gbps; a flag's round is a line between cores and the
     * executor's straight run, where a message's is the slots and the
     * chains' loop. Every figure here but the kernel's was fitted by a
     * search over them (bench/fit_cpu_costs.py) to every family timed
     * under the drop-in library on every collective and size, at P = 2
     * and 4, of the same buffers every call and of others
     * (bench/family_sweep.sh, scored by bench/selector_regret.py), on
     * the 2-core Zen 5 build machine once messages went through the
     * slots: 378 of 438 cells within 5% of the fastest family, against
     * 291 for the figures before. They are the selector's weights, not
     * rates. That fit priced the kernel's copy at a thirtieth of its
     * rate (0.41 GB/s; 13 there, `mrc calibrate --transport shm`):
     * where the direct families then read their peers' buffers by
     * reference through it (2 MiB and more at P = 2, 4 MiB at P = 4),
     * the rings or the tree, through the slots, were faster in every
     * cell but one. Since a send buffer that fits goes into its owner's
     * area instead (memory.c), a get of one is priced as the copies it
     * is (copies_sends; scored on bench/family_sweep.sh -n 2 -c
     * allgather,reduce_scatter, both patterns, docs/performance.md),
     * and the kernel reads only what the area cannot hold (a send
     * buffer past it, a rendezvous). It is priced at the memory's rate,
     * the last tier's copy (4 GB/s), scored on the Intel Xeon host:
     * there direct1 through the kernel beat the slots at 16 MiB in
     * every collective it applies to (broadcast at 2 ranks: 2.3 ms
     * against the tree's 3.0), and bench/family_sweep.sh -r 2 -n 2 and
     * -n 4, scored by bench/selector_regret.py, had 192 of 219 cells
     * within 5% with the kernel at 0.41 GB/s, 195 at 2, 199 at 3, 200
     * at 4, 199 at 5 and at 6, 198 at 8 (cache-cold, --cold: 167 at
     * 0.41, 173 at 3 and at 4, 172 at 5). The Zen 5 machine was not
     * measured again. Once the slots' receiver copied each piece once
     * (docs/performance.md, "Each piece copied once") and direct1's
     * broadcast by reference was timed as the one call it is
     * (mrc__cpu_runs_ahead), 3: the same sweeps of that build, P = 2
     * and 4, same buffers and new: 89, 88, 98, 91 cells within 5% at 3,
     * 89, 85, 98, 91 at 4, 89, 85, 97, 90 at 5 (and 83, 80, 98, 91 with
     * neither change): at 3 the rings and the tree take the 16 MiB
     * broadcast, which direct1's read of the root's buffer ties at 4,
     * in 0.67 and 0.49 of its time. */
    [MRC__SIM_TRANSPORT_SHM] = {.sync_us = 0.357,
                                .flag_sync_us = 0.24,
                                .op_us = 0.1,
                                .copy_gbps = {51, 10.5, 4},
                                .reduce_gbps = {116, 15, 3.7},
                                .send_copies = 1,
                                .rdv_bytes = 1 << 20,
                                .rdv_us = 1.0,
                                .kernel_gbps = 3,
                                .copies_sends = 1,
                                .oversub_recv_us = 2,
                                .oversub_recv_gbps = 11.2},
    [MRC__SIM_TRANSPORT_MPI] = {.sync_us = 1.0,
                                .op_us = 0.2,
                                CPU_RATES,
                                .send_copies = 1},
};

int mrc__cpu_tier(uint64_t bytes)
{
    /* (a vector of 32 KiB is past the first tier: its buffers, window
     * and peer's lines overflow a core's 48 KiB L1 here, and a
     * broadcast's window get of 32 KiB at P = 2 took 3.1 us where the
     * tree's one read took 2.3; the first tier had chosen the get) */
    static const uint64_t limit[MRC__CPU_TIERS - 1] = {((uint64_t)32 << 10) - 1,
                                                       (uint64_t)4 << 20};
    int t = 0;
    while (t < MRC__CPU_TIERS - 1 && bytes > limit[t])
        t++;
    return t;
}

int mrc__cpu_cost_tier(const mrc__cpu_cost_t *k, uint64_t bytes)
{
    if (k->cache_bytes > 0)
        return (double)bytes <= k->cache_bytes ? 0 : MRC__CPU_TIERS - 1;
    return mrc__cpu_tier(bytes);
}

const mrc__cpu_cost_t *mrc__cpu_cost(mrc__sim_transport_t x)
{
    return &cpu_costs[(unsigned)x < MRC__SIM_NUM_TRANSPORTS
                          ? x
                          : MRC__SIM_TRANSPORT_THREADS];
}

/* Beyond cache the ranks that share a memory system share its
 * bandwidth: all of a call's ranks on threads and shm (one host), the
 * ranks of a host on MPI. */
static double memory_share(const mrc_profile_t *pr, mrc__sim_transport_t x,
                           int n)
{
    int sharing = x == MRC__SIM_TRANSPORT_MPI && pr->nodes_per_memory < n
                      ? pr->nodes_per_memory
                      : n;
    sharing = sharing > 1 ? sharing : 1;
    double each = pr->memory_gbps_shared / sharing;
    return each < pr->copy_gbps_memory ? each / pr->copy_gbps_memory : 1;
}

mrc_status_t mrc__cpu_cost_of_profile(const mrc_profile_t *pr,
                                      mrc__sim_transport_t x, mrc_dtype_t dtype,
                                      mrc_op_t op, int n, mrc__cpu_cost_t *out)
{
    if (x == MRC__SIM_TRANSPORT_LINKS)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "a profile describes a CPU transport (%s), not "
                          "the topology's links",
                          pr->transport);
    if (strcmp(pr->transport, mrc__sim_transport_name(x)) != 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "the profile was measured on the %s transport, "
                          "not %s (measure it with 'mrc calibrate "
                          "--transport %s')",
                          pr->transport, mrc__sim_transport_name(x),
                          mrc__sim_transport_name(x));
    /* What a send copies is the transport's, not the host's. */
    *out = *mrc__cpu_cost(x);
    out->sync_us = pr->sync_us;
    out->flag_sync_us = 0; /* the profile measured one round */
    out->rdv_us = 0;       /* and no rendezvous (not yet probed) */
    out->op_us = pr->message_us + pr->latency_us; /* a message of a chain */
    out->cache_bytes = pr->cache_bytes;
    /* (one kernel rate: a send buffer's own, kernel_gbps_cache, is the
     * node model's, which times the groups it fits on one host) */
    out->kernel_gbps = pr->kernel_gbps;
    out->copies_sends = out->copies_sends && !(pr->send_by_ref > 0);
    double share = memory_share(pr, x, n);
    double rc = 0, rm = 0;
    if ((unsigned)dtype < MRC_NUM_DTYPES && (unsigned)op < MRC_NUM_OPS) {
        rc = pr->reduce_gbps_cache[dtype][op];
        rm = pr->reduce_gbps_memory[dtype][op];
    }
    /* Not measured: the copy rate. */
    rc = rc > 0 ? rc : pr->copy_gbps_cache;
    rm = rm > 0 ? rm : pr->copy_gbps_memory;
    for (int t = 0; t < MRC__CPU_TIERS - 1; t++) {
        out->copy_gbps[t] = pr->copy_gbps_cache;
        out->reduce_gbps[t] = rc;
    }
    out->copy_gbps[MRC__CPU_TIERS - 1] = pr->copy_gbps_memory * share;
    out->reduce_gbps[MRC__CPU_TIERS - 1] = rm * share;
    return MRC_OK;
}

/* Nodes of a group whose time is modelled: all of them up to this many
 * (the families are symmetric but for the root, which is always in). */
enum { CPU_SAMPLE = 64 };

static int is_wait(int kind)
{
    return kind == MRC__RECV || kind == MRC__WAIT || kind == MRC__BARRIER;
}

/* What a receive of `bytes` costs beyond the transfer's fixed cost and
 * its copy: the rendezvous, and the wait for a sender without a core. */
static double extra_recv(const mrc__cpu_cost_t *k, double bytes, int rdv)
{
    double us = rdv ? k->rdv_us : 0;
    us += k->oversub_recv_us;
    if (k->oversub_recv_gbps > 0)
        us += bytes / (k->oversub_recv_gbps * 1e3);
    return us;
}

/* One node's modelled time alone (as if every peer's flag were up when
 * it waits), and where its first round falls: what it has done when it
 * first signals and when it first waits on a flag, and the peers of that
 * wait (first_peer .. first_peer + num_peers - 1 of the caller's list). */
typedef struct node_cost {
    double alone;
    double signal_at; /* < 0: never signals */
    double wait_at;   /* < 0: never waits on a flag */
    int first_peer, num_peers;
} node_cost_t;

/* The peers a node waits on in its first round of flag waits. */
typedef struct peer_list {
    int *peer;
    int len, cap;
} peer_list_t;

/* A node's running figures: its time at any point of its chains. */
typedef struct node_sum {
    double copied, reduced, kernel_us, fixed;
} node_sum_t;

static double sum_us(const node_sum_t *a, double sync, const mrc__cpu_cost_t *k,
                     int t)
{
    return sync + a->fixed + a->copied / (k->copy_gbps[t] * 1e3) +
           a->reduced / (k->reduce_gbps[t] * 1e3) + a->kernel_us;
}

/* The tier of a call: the node's whole vector (all blocks for
 * reduce-scatter and allgather). */
static int call_tier(const mrc_program_t *p, int n, const mrc__cpu_cost_t *k)
{
    uint64_t vec = (uint64_t)p->cfg.count * mrc_dtype_size(p->cfg.dtype);
    if (p->cfg.collective == MRC_REDUCE_SCATTER ||
        p->cfg.collective == MRC_ALLGATHER)
        vec *= (uint64_t)n;
    return mrc__cpu_cost_tier(k, vec);
}

/* The bytes of a node's send buffer that its owner copies into its area
 * instead of exposing it by reference (copies_sends: shm's), or 0: a get
 * by reference is the kernel's read. */
static double send_in_area(const mrc_program_t *p, const mrc__cpu_cost_t *k)
{
    return k->copies_sends ? mrc__sim_send_copied(p) : 0;
}

/* Adds op's transfer and work to a node's running figures; in_area:
 * send_in_area's. */
static void add_op(const mrc__op_t *op, double esize, double chunk,
                   double in_area, const mrc__cpu_cost_t *k,
                   const mrc__cpu_cost_t *ko, node_sum_t *a)
{
    double bytes = (double)op->count * esize;
    int from_area =
        in_area > 0 && op->src == MRC__BUF_SEND &&
        (op->kind == MRC__GET || (op->kind == MRC__EXPOSE && op->ref));
    if (op->kind == MRC__RECV || op->kind == MRC__GET)
        a->fixed += ko->op_us;
    /* (a message is a chunk at most: the transport's unit) */
    int rdv = (op->kind == MRC__RECV || op->kind == MRC__SEND) &&
              k->rdv_bytes > 0 && bytes >= k->rdv_bytes &&
              (chunk == 0 || chunk >= k->rdv_bytes);
    if (op->kind == MRC__RECV)
        a->fixed += extra_recv(k, bytes, rdv);
    /* (through the kernel, then reduced from a bounce buffer) */
    int by_kernel = ko->kernel_gbps > 0 &&
                    (rdv || (op->kind == MRC__GET &&
                             op->src != MRC__BUF_WINDOW && !from_area));
    switch (op->kind) {
    case MRC__RECV:
    case MRC__GET:
        if (op->local != MRC__BUF_NONE)
            a->reduced += bytes;
        if (by_kernel)
            a->kernel_us += bytes / (ko->kernel_gbps * 1e3);
        else if (op->local == MRC__BUF_NONE || rdv)
            a->copied += bytes;
        break;
    case MRC__COPY: a->copied += bytes; break;
    case MRC__EXPOSE:
        a->copied += !op->ref ? bytes : from_area ? in_area : 0;
        break;
    case MRC__SEND: a->copied += rdv ? 0 : k->send_copies * bytes; break;
    default: break;
    }
}

/* One node's modelled time alone, and its first round (node_cost_t). A
 * broadcast is timed in place (MPI's, and torch's, has one buffer: the
 * root copies nothing to itself). */
static mrc_status_t node_time(const mrc_program_t *p, int node, int n,
                              uint64_t whole, const mrc__cpu_cost_t *k,
                              const mrc__cpu_cost_t *km, int depth,
                              node_cost_t *out, peer_list_t *peers)
{
    mrc__plan_t plan;
    mrc_status_t st = mrc__plan_build(
        p, node, whole, p->cfg.collective == MRC_BROADCAST, &plan);
    if (st != MRC_OK)
        return st;
    double esize = (double)mrc_dtype_size(p->cfg.dtype);
    double chunk = (double)p->cfg.chunk_bytes;
    int t = call_tier(p, n, k);
    double in_area = send_in_area(p, km);
    node_sum_t a = {0};
    double sync = 0;
    int rounds = 0;
    *out =
        (node_cost_t){.signal_at = -1, .wait_at = -1, .first_peer = peers->len};
    for (int c = 0; c < plan.num_chains; c++) {
        int r = 0, worked = 1, first_round = 0;
        double rs = 0;
        for (int32_t i = plan.chain_off[c]; i < plan.chain_off[c + 1]; i++) {
            const mrc__op_t *op = &plan.ops[i];
            /* A wait after this node let its peers go on (sent, or
             * signalled) is a new round; the waits of one round (a
             * GET after each) overlap. */
            /* (messages at k's costs, memory operations at km's) */
            const mrc__cpu_cost_t *ko = op->kind == MRC__RECV ? k : km;
            if (op->kind == MRC__WAIT && out->wait_at < 0) {
                out->wait_at = sum_us(&a, rs, k, t);
                first_round = 1;
            }
            if (op->kind == MRC__WAIT && first_round) {
                if (mrc__grow((void **)&peers->peer, &peers->cap,
                              peers->len + 1, sizeof *peers->peer) != 0) {
                    mrc__plan_free(&plan);
                    return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
                }
                peers->peer[peers->len++] = op->peer;
                out->num_peers++;
            }
            if (op->kind == MRC__SIGNAL && out->signal_at < 0)
                out->signal_at = sum_us(&a, rs, k, t);
            if (is_wait(op->kind)) {
                double round = op->kind != MRC__RECV && ko->flag_sync_us > 0
                                   ? ko->flag_sync_us
                                   : ko->sync_us;
                r += worked;
                rs += worked ? round : 0;
                worked = 0;
            } else if (op->kind == MRC__SEND || op->kind == MRC__SIGNAL) {
                worked = 1;
            }
            first_round &= op->kind == MRC__WAIT || op->kind == MRC__GET;
            add_op(op, esize, chunk, in_area, k, ko, &a);
        }
        if (rs > sync) {
            sync = rs;
            rounds = r;
        }
    }
    mrc__plan_free(&plan);
    if (depth > rounds)
        sync += (depth - rounds) * k->sync_us;
    out->alone = sum_us(&a, sync, k, t);
    return MRC_OK;
}

/* The rounds on the program's longest chain of dependencies: a node's
 * own waits do not see that its peer waited before sending (a binomial
 * tree's leaf waits once, behind 2 log2 n hops). For send/receive
 * programs the simulator's BSP steps are that depth; memory programs'
 * waits overlap (every peer signals at once), and count by node. */
static mrc_status_t dependency_depth(const mrc_program_t *p,
                                     const mrc_topo_t *t, int *depth)
{
    *depth = 0;
    if (!t || mrc__program_has_memory_ops(p) || p->cfg.count == 0)
        return MRC_OK;
    mrc_sim_config_t sc = {.mode = MRC_SIM_BSP, .chunks = 1};
    mrc_sim_result_t *r = NULL;
    mrc_status_t st = mrc_sim_run(p, t, &sc, &r);
    if (st == MRC_OK)
        *depth = r->steps;
    mrc_sim_result_destroy(r);
    return st;
}

/* The largest group of the program. */
static int largest_group(const mrc_program_t *p)
{
    int n = 1;
    for (int g = 0; g < p->num_groups; g++)
        n = p->groups[g].size > n ? p->groups[g].size : n;
    return n;
}

int mrc__cpu_runs_ahead(const mrc_program_t *p)
{
    return p->cfg.completion == MRC_COMPLETION_LOCAL &&
           (p->cfg.collective == MRC_REDUCE ||
            p->cfg.collective == MRC_BROADCAST) &&
           !mrc__program_exposes_by_ref(p);
}

/* A group's time: its slowest modelled node's. A node's first wait on
 * its peers' flags ends no sooner than the last of them signals: a get
 * from a window by copy follows its owner's copy into it (direct1's
 * broadcast: the root's copy, then the leaves'; a node that waits on
 * peers which did what it did first loses nothing). signal_at: by node,
 * the caller's (a program's groups are disjoint, and a node waits only
 * on its own group's); peers: the caller's list, reused. Where nodes
 * run ahead (mrc__cpu_runs_ahead), each node alone. */
static mrc_status_t group_time(const mrc_program_t *p, const mrc__group_t *gr,
                               const mrc__cpu_cost_t *k,
                               const mrc__cpu_cost_t *km, int depth,
                               double *signal_at, peer_list_t *peers,
                               double *time_us)
{
    /* Whole fragments: a chunk as large as any slice. */
    uint64_t whole = (uint64_t)p->cfg.count * (uint64_t)gr->size;
    whole = whole ? whole : 1;
    int root = p->cfg.root < gr->size ? p->cfg.root : 0;
    int cap = gr->size < CPU_SAMPLE ? gr->size : CPU_SAMPLE + 1, sampled = 0;
    node_cost_t *cost = calloc((size_t)cap, sizeof *cost);
    if (!cost)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    mrc_status_t st = MRC_OK;
    peers->len = 0;
    /* (the nodes modelled: all up to CPU_SAMPLE, and the root) */
    for (int i = 0; st == MRC_OK && i < gr->size; i++) {
        if (i >= CPU_SAMPLE && i != root)
            continue;
        int node = p->members[gr->first_member + i];
        node_cost_t *c = &cost[sampled++];
        st = node_time(p, node, gr->size, whole, k, km, depth, c, peers);
        signal_at[node] = c->signal_at;
    }
    int ahead = mrc__cpu_runs_ahead(p);
    for (int s = 0; st == MRC_OK && s < sampled; s++) {
        double late = 0;
        for (int j = 0; !ahead && j < cost[s].num_peers; j++) {
            int q = peers->peer[cost[s].first_peer + j];
            double d =
                q >= 0 && q < p->num_nodes ? signal_at[q] - cost[s].wait_at : 0;
            late = d > late ? d : late;
        }
        double t = cost[s].alone + late;
        *time_us = t > *time_us ? t : *time_us;
    }
    free(cost);
    return st;
}

mrc_status_t mrc__cpu_time(const mrc_program_t *p, const mrc_topo_t *topo,
                           mrc__sim_transport_t x, double *time_us)
{
    return mrc__cpu_time_profile(p, topo, x, NULL, 0, time_us);
}

mrc_status_t mrc__cpu_time_profile(const mrc_program_t *p,
                                   const mrc_topo_t *topo,
                                   mrc__sim_transport_t x,
                                   const mrc_profile_t *profile,
                                   int peers_mapped, double *time_us)
{
    const mrc__cpu_cost_t *k = mrc__cpu_cost(x);
    /* hier's memory operations are between the ranks of a host: shared
     * memory's costs, whatever carries the messages between hosts (with
     * a profile: the host's, which it measured). */
    const mrc__cpu_cost_t *km =
        p->cfg.algo == MRC_ALGO_HIER && x == MRC__SIM_TRANSPORT_MPI
            ? mrc__cpu_cost(MRC__SIM_TRANSPORT_SHM)
            : k;
    mrc__cpu_cost_t kp, kf, kr, kk, kmm;
    *time_us = 0;
    /* More ranks than cores: a rank that waits yields its core, and a
     * flag's round costs a message's (P = 4 on 2 cores, 4 KiB: direct1
     * 6-11 us a call, direct2, one round more, 14-15). Only for a job on
     * this host (threads, shm): ranks on other hosts, whose cores may
     * differ, must choose as this one does. */
    long cores = mrc__online_cores();
    int oversub =
        x != MRC__SIM_TRANSPORT_MPI && (cores <= 0 || largest_group(p) > cores);
    if (km->flag_sync_us > 0 && (x == MRC__SIM_TRANSPORT_MPI || oversub)) {
        kf = *km;
        kf.flag_sync_us = 0;
        km = &kf;
    }
    if (profile) {
        mrc_status_t st = mrc__cpu_cost_of_profile(
            profile, x, p->cfg.dtype, p->cfg.op, largest_group(p), &kp);
        if (st != MRC_OK)
            return st;
        k = km = &kp;
    }
    /* A receive waits for a sender without a core only with more ranks
     * than cores (a profile measured its host's message as it is). */
    if (!oversub || profile) {
        kr = *k;
        kr.oversub_recv_us = 0;
        kr.oversub_recv_gbps = 0;
        k = &kr;
    }
    /* Buffers the peers map are read with plain loads, as a copy. */
    if (peers_mapped) {
        kk = *k;
        kmm = *km;
        kk.kernel_gbps = kmm.kernel_gbps = 0;
        k = &kk;
        km = &kmm;
    }
    int depth = 0;
    mrc_status_t dst = dependency_depth(p, topo, &depth);
    if (dst != MRC_OK)
        return dst;
    /* (a peer's signal, by node: -1 until modelled, or never) */
    double *signal_at = malloc((size_t)p->num_nodes * sizeof *signal_at);
    if (!signal_at)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int v = 0; v < p->num_nodes; v++)
        signal_at[v] = -1;
    peer_list_t peers = {0};
    for (int g = 0; g < p->num_groups && dst == MRC_OK; g++)
        dst = group_time(p, &p->groups[g], k, km, depth, signal_at, &peers,
                         time_us);
    free(peers.peer);
    free(signal_at);
    return dst;
}
