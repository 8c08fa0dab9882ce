/*
 * The node model: what a node of a CPU host costs beside its links, from
 * a host profile (mrc/profile.h). Without one (the default, an
 * accelerator interconnect) none of this is built and local memory,
 * reductions and message handling are free.
 *
 * With a profile:
 * - every node has a memory channel of its own, of capacity its copy rate;
 *   every memory operation of a node beyond cache also crosses its
 *   memory system's channel, of capacity memory_gbps_shared, which the
 *   nodes of one host (nodes_per_memory consecutive nodes) share max-min
 *   fairly like any channel. "Beyond cache" is a share, not a switch: of
 *   the working set of a host (every node's send and receive buffers) a
 *   share h = min(1, cache_bytes / set)^cache_falloff hits the cache,
 *   so each rate is
 *   the cache's for h of the bytes and the memory's for the rest, and
 *   the host's channel carries the 1 - h that misses; in cache, with
 *   copy_gbps_shared, a node whose own buffers are partly past its
 *   private cache runs its rates at the share that level leaves them;
 * - a message between two nodes of one host is a copy by the receiver
 *   over those channels (not over the topology's links), at the rate it
 *   takes lines another core wrote (peer_gbps_cache, in cache, for the
 *   share of the writer's buffers its own cache holds, private_cache_bytes;
 *   the shared cache's copy rate for the rest), and
 *   arrives latency_us after its copy ends; between hosts it crosses the
 *   links as before, message_us later; a get from a peer's window, lines
 *   that peer copied in during the call, at window_gbps where the
 *   profile has it;
 * - a reduction of what a node received (or read) is the node's own work
 *   after the data is there, at its reduction rate for the dtype and op
 *   (its copy rate where the profile has none); within a host the
 *   transports reduce as they take, so what the reduction takes beyond
 *   the receiver's copy; but a message taken out of shm's slots is summed
 *   in the same pass, after the take (take_in_turn); a local copy or
 *   scaling at the copy rate (where the sender copies into slots, a
 *   copy on the node's peer channel, in turn with its sends: core_copy);
 * - a send through a transport's slots (shm's, below its threshold)
 *   also crosses its sender's peer channel, the sender's copy into the
 *   slot: a node that sends and receives at once shares it between them;
 *   in the pipelined walk its sender waits until its bytes are through,
 *   and then holds its core send_us more (mrc__sim_node_hold: work on
 *   its peer channel, ahead of its next message) while the message is
 *   on its way;
 * - a read of a peer's lines (a message through the slots or read in
 *   place, a get of a window) takes its first peer_ramp_bytes at half
 *   its rate (twice their work);
 * - a send's message within one host costs its receiver's core
 *   message_us beside its copy, as work on the same channel (the two
 *   streams' messages of a step add up); on a transport with slots and a
 *   rendezvous (rendezvous_bytes) a small send moves at the slots' rate
 *   (slot_gbps), a large one, or shm's get by reference, at the kernel's
 *   copy rate (kernel_gbps) and costs rendezvous_us more; a get arrives
 *   get_us after its copy; an expose by copy is the node's own copy;
 * - a flag (signal/wait) or a barrier within one host takes sync_us;
 * - with more nodes on a host than it has cores, a wait on another node
 *   takes that node's turn for a core more: turn_us for a send/receive
 *   program's message, flag_turn_us for a flag or a barrier. In the
 *   pipelined walk a message's turn is the share (want - cores) /
 *   (nodes - cores) of turn_us, want the nodes of the host with a
 *   message in its step: the rings have every node in every step (where
 *   turn_us is fitted); the tree's inner steps two nodes, one a core,
 *   which take quiet_turn_share of the turn (the waiting nodes spin on
 *   those cores), the steps between the rest in proportion;
 * - in the pipelined walk, a crowded host's cores are shared by its nodes
 *   with work in flight (mrc__sim_node_cores), beside its waiting nodes
 *   at spin_share of a core each: with want = busy + spin_share x
 *   (waiting) above the cores, each busy node runs its channels at
 *   cores / want of their rates;
 * - in the pipelined walk, cores that read one another's lines at once
 *   share the path between them: a node's reads of peers' lines run
 *   1 + peer_contention x (readers - 1) times as long, readers the
 *   nodes of its host with such a read in flight (at most its cores),
 *   for the share of the set in cache (beyond it the host's memory
 *   channel shares them).
 *
 * docs/simulator.md ("Node model") gives the closed forms it implies.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reduce/reduce.h"
#include "sim/sim_internal.h"
#include "transport/transport.h"

/* The profile's figures the model divides by or adds: the first one out
 * of range, named. */
static mrc_status_t check_profile(const mrc_profile_t *f)
{
    const char *bad = NULL;
    if (f->version != MRC_PROFILE_VERSION)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "the profile is of version %d; the simulator "
                          "reads version %d (run mrc calibrate again)",
                          f->version, MRC_PROFILE_VERSION);
    if (!(f->copy_gbps_cache > 0 && isfinite(f->copy_gbps_cache)))
        bad = "copy_gbps_cache";
    else if (!(f->copy_gbps_memory > 0 && isfinite(f->copy_gbps_memory)))
        bad = "copy_gbps_memory";
    else if (!(f->memory_gbps_shared > 0 && isfinite(f->memory_gbps_shared)))
        bad = "memory_gbps_shared";
    else if (!(f->cache_bytes >= 0 && isfinite(f->cache_bytes)))
        bad = "cache_bytes";
    else if (!(f->message_us >= 0 && isfinite(f->message_us)))
        bad = "message_us";
    else if (!(f->sync_us >= 0 && isfinite(f->sync_us)))
        bad = "sync_us";
    else if (!(f->latency_us >= 0 && isfinite(f->latency_us)))
        bad = "latency_us";
    else if (!(f->send_us >= 0 && isfinite(f->send_us)))
        bad = "send_us";
    else if (!(f->peer_ramp_bytes >= 0 && isfinite(f->peer_ramp_bytes)))
        bad = "peer_ramp_bytes";
    else if (f->nodes_per_memory < 0)
        bad = "nodes_per_memory";
    else if (!(f->spin_share >= 0 && f->spin_share <= 1))
        bad = "spin_share";
    else if (!(f->quiet_turn_share >= 0 && f->quiet_turn_share <= 1))
        bad = "quiet_turn_share";
    if (bad)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "the profile's %s is out of range for the "
                          "simulator's node model",
                          bad);
    return MRC_OK;
}

/* 1 / (h / a + (1 - h) / b): the rate of a stream of bytes a share h of
 * which moves at a and the rest at b. */
static double blend(double h, double a, double b)
{
    return h >= 1 ? a : 1 / (h / a + (1 - h) / b);
}

/* Whether the call writes around the caches, as a communicator given
 * the profile runs it (src/exec/prepare.c, memory_ops.c): a node's
 * receive buffer (node 0's) of at least the profile's threshold; for a
 * family that reduces by gets, its blocks (the whole vector for direct1,
 * a node's share of it for direct2) where mrc__get_around says so too. */
static int node_streams(const mrc__sim_t *s)
{
    const mrc_program_t *p = s->p;
    uint64_t se = 0, re = 0, xe = 0;
    mrc__buffer_elems(p, 0, &se, &re, &xe);
    uint64_t recv = re * mrc_dtype_size(p->cfg.dtype);
    uint64_t from = mrc_profile_stream_bytes(s->node.prof);
    if (recv < from)
        return 0;
    uint64_t block = recv;
    if (p->cfg.algo == MRC_ALGO_DIRECT2 && p->num_groups &&
        p->groups[0].size > 1)
        block /= (uint64_t)p->groups[0].size;
    /* (their gets that only copy, an allgather's or a broadcast's, go
     * around from the threshold, as the plan's copies do) */
    int reduces = p->cfg.collective == MRC_ALLREDUCE ||
                  p->cfg.collective == MRC_REDUCE ||
                  p->cfg.collective == MRC_REDUCE_SCATTER;
    int gets = reduces && (p->cfg.algo == MRC_ALGO_DIRECT1 ||
                           p->cfg.algo == MRC_ALGO_DIRECT2);
    return !gets || mrc__get_around(block, from);
}

/* The share of a memory system's working set that its cache holds: the
 * send and receive buffers of every node of the host (a node's buffer is
 * the whole vector for reduce-scatter and allgather), and the window a
 * memory program exposes by copy, a third buffer as large. */
static double node_set(const mrc__sim_t *s)
{
    const mrc_program_t *p = s->p;
    double data = (double)p->cfg.count * (double)mrc_dtype_size(p->cfg.dtype);
    if (p->cfg.collective == MRC_REDUCE_SCATTER ||
        p->cfg.collective == MRC_ALLGATHER)
        data *= p->num_groups ? p->groups[0].size : 1;
    return (mrc__program_uses_window(p) ? 3 : 2) * data;
}

/* ... of a call that writes around the caches, the receive buffers
 * written so take no room in them: a node's set is what it reads.
 * (threads, P = 2, a slow spell, every call around the caches from 1
 * MiB: the rings' 1, 4 and 16 MiB took 47, 48 and 59 us a MiB, and with
 * the receive buffers in the set the 16 MiB call, past the cache, was
 * predicted at 1.56 of its time.) */
static double cache_share(const mrc__sim_t *s, int around)
{
    const mrc_profile_t *f = s->node.prof;
    int nodes =
        s->node.per_host < s->p->num_nodes ? s->node.per_host : s->p->num_nodes;
    double set = node_set(s) * nodes;
    if (around)
        set *= mrc__program_uses_window(s->p) ? 2.0 / 3 : 0.5;
    double power = f->cache_falloff > 1 ? f->cache_falloff : 1;
    return set <= f->cache_bytes ? 1 : pow(f->cache_bytes / set, power);
}

/* The rate a node takes what a peer wrote, in cache: from the writer's
 * own cache (at `peer`) for the share of its buffers that fits there,
 * from the shared cache for the rest: at peer_gbps_shared where the
 * profile has it (threads); else at the rate a core copies from that
 * level (copy_gbps_shared, shm's), never faster than from the writer's
 * core; else at the copy rate. (shm, P = 2: with the copy rate, 51 GB/s
 * against 12.9 from the writer's core, the direct families' 1-16 MiB
 * rows of the allreduce, broadcast and reduce ran at 0.62-0.88 of
 * their prediction, their peers' windows and buffers read past the
 * writer's core: docs/simulator.md, "A peer's lines past its core".) */
static double peer_rate(const mrc__sim_t *s, double peer)
{
    const mrc_profile_t *f = s->node.prof;
    double set = node_set(s), own = f->private_cache_bytes;
    if (own <= 0 || set <= own)
        return peer;
    double shared = f->peer_gbps_shared > 0   ? f->peer_gbps_shared
                    : f->copy_gbps_shared > 0 ? fmin(peer, f->copy_gbps_shared)
                                              : f->copy_gbps_cache;
    return blend(own / set, peer, shared);
}

/* What share of its in-cache rates a node keeps with its own buffers
 * partly past its private cache (copy_gbps_shared): 1 without that
 * level or within it. */
static double own_level(const mrc__sim_t *s)
{
    const mrc_profile_t *f = s->node.prof;
    double set = node_set(s), own = f->private_cache_bytes;
    if (!(f->copy_gbps_shared > 0) || own <= 0 || set <= own)
        return 1;
    return blend(own / set, 1, f->copy_gbps_shared / f->copy_gbps_cache);
}

/* More nodes of the run on one host than it has cores. */
static int host_crowded(const mrc__sim_t *s)
{
    const mrc__sim_node_t *m = &s->node;
    int nn = s->p->num_nodes, on_host = m->per_host < nn ? m->per_host : nn;
    return m->prof->cores > 0 && on_host > m->prof->cores;
}

/* The kernel's copies (m->kernel, m->kernel_send), at the cache share h
 * and the node's own level k, once the peer rate is set. */
static void kernel_rates(mrc__sim_t *s, double h, double k)
{
    mrc__sim_node_t *m = &s->node;
    const mrc_profile_t *f = m->prof;
    /* The kernel's copy: its own rate, never above a peer's read; beyond
     * cache, for the share of lines that miss, the kernel's work on a
     * line and the memory's fetch of it one after the other. P = 2, shm,
     * direct2's 16 MiB by reference took 2.2-3.5 ms in nine captures of
     * ten: the rate scaled as the memory's predicted 6.5, the kernel's
     * alone 1.7-2.5, the two in turn 2.0-2.9 (docs/simulator.md, "The
     * kernel's copy beyond cache"). With more ranks than cores
     * the kernel's rate is fitted on all of them at once, and beyond
     * cache the host's shared channel already holds them to the memory:
     * in turn, direct2's 16-64 MiB on 4 ranks of 2 cores were predicted
     * at 1.12-1.81 of their time, where the rate alone had 0.96-1.66.
     * Buffers the peers map are read with plain loads, at a peer's rate. */
    double kernel = k * f->kernel_gbps;
    /* A send buffer's lines are clean (no core has just written them)
     * and the kernel copies them at a rate of their own in cache
     * (kernel_gbps_cache, where the profile has it), not capped at a
     * peer's fresh lines': at P = 2 on shm direct1's allgather of 128
     * KiB a rank took 11.5 us, and the kernel at any rate under that cap
     * left it at 19.3 (`mrc calibrate --check --transport shm -c
     * allgather`, its 256 KiB row; docs/simulator.md, "A send buffer
     * through the kernel"). For the share of lines that miss, the
     * kernel's work and the memory's fetch in turn, as any kernel copy;
     * with more nodes than cores (where the rate was never fitted) any
     * kernel copy's rate. */
    int crowded = host_crowded(s);
    double send = f->kernel_gbps_cache > 0 && !crowded && !m->mapped
                      ? k * f->kernel_gbps_cache
                      : 0;
    if (!crowded && f->kernel_gbps > 0) {
        double kfar = 1 / (1 / f->kernel_gbps + 1 / f->copy_gbps_memory);
        kernel = blend(h, kernel, kfar);
        send = send > 0 ? blend(h, send, kfar) : 0;
    }
    m->kernel =
        f->kernel_gbps > 0 && !m->mapped ? fmin(kernel, m->peer) : m->peer;
    m->kernel_send = send > 0 ? send : m->kernel;
}

/* The run's rates: each the cache's for the share of the working set
 * that fits, the memory's for the rest (a stream of lines, some hits and
 * some misses, not a switch at one size); in cache, at the share the
 * node's own level leaves them. A call that writes around the caches
 * (stream_gbps) moves the share that fits at the stream's rate instead,
 * whatever the level. */
static void node_rates(mrc__sim_t *s)
{
    mrc__sim_node_t *m = &s->node;
    const mrc_profile_t *f = m->prof;
    const mrc_program_t *p = s->p;
    double stream = f->stream_gbps > 0 && node_streams(s) ? f->stream_gbps : 0;
    double h = cache_share(s, stream > 0), k = own_level(s);
#define IN_CACHE(rate) (stream > 0 ? stream : (rate))
    m->cached = h;
    m->beyond_cache = h < 1;
    m->copy = blend(h, IN_CACHE(k * f->copy_gbps_cache), f->copy_gbps_memory);
    /* Beyond cache a peer's lines come from memory, never faster than
     * from the shared cache. */
    double far = f->peer_gbps_shared > 0
                     ? fmin(f->peer_gbps_shared, f->copy_gbps_memory)
                     : f->copy_gbps_memory;
    m->peer = blend(
        h,
        IN_CACHE(k * peer_rate(s, f->peer_gbps_cache > 0 ? f->peer_gbps_cache
                                                         : f->copy_gbps_cache)),
        far);
    /* A peer's window, where its rate is apart (window_gbps), in cache:
     * the lines its writer has just copied in, which its core holds
     * first. Not blended with the shared level by the node's set, as the
     * peer rate is: so blended, direct1's and direct2's 1 MiB at P = 2 on
     * threads were predicted at 0.59-0.62 of their time (0.92 and 1.52
     * unblended, the calibration before). Not with more nodes than cores: a
     * reader's core then also ran some of its writers, whose lines it holds,
     * and at 4 threads on 2 cores direct1's 4 KiB-1 MiB were predicted at
     * 1.4-2.0 of their time with the windows' rate, 0.91-1.23 without
     * (one calibration, its rows predicted both ways). */
    m->window = f->window_gbps > 0 && !host_crowded(s)
                    ? blend(h, IN_CACHE(k * f->window_gbps), far)
                    : m->peer;
    m->slot = f->slot_gbps > 0
                  ? blend(h, IN_CACHE(k * f->slot_gbps), f->copy_gbps_memory)
                  : m->peer;
    kernel_rates(s, h, k);
    double rc = 0, rm = 0;
    if ((unsigned)p->cfg.dtype < MRC_NUM_DTYPES &&
        (unsigned)p->cfg.op < MRC_NUM_OPS) {
        rc = f->reduce_gbps_cache[p->cfg.dtype][p->cfg.op];
        rm = f->reduce_gbps_memory[p->cfg.dtype][p->cfg.op];
    }
    rc = rc > 0 && isfinite(rc) ? rc : f->copy_gbps_cache;
    rm = rm > 0 && isfinite(rm) ? rm : f->copy_gbps_memory;
    m->reduce = blend(h, IN_CACHE(k * rc), rm);
#undef IN_CACHE
}

/* The memory channels: one per node, one per memory system, and one
 * per node for what it takes from its peers when that is slower than its
 * own copies. The memory system's carries only the share of the bytes
 * that misses the cache: its capacity is scaled up by the inverse. */
static mrc_status_t node_channels(mrc__sim_t *s, int nn, int nh)
{
    mrc__sim_node_t *m = &s->node;
    /* A transport with slots and rendezvous times its messages on the
     * peer channel (mrc__sim_node_msg_work): it needs one. */
    int np = m->peer < m->copy || m->prof->rendezvous_bytes > 0 ? nn : 0;
    size_t n = (size_t)s->num_chan + (size_t)nn + (size_t)nh + (size_t)np + 1;
    double *cap = realloc(s->cap, n * sizeof *cap);
    if (cap)
        s->cap = cap;
    double *lat = realloc(s->lat, n * sizeof *lat);
    if (lat)
        s->lat = lat;
    if (!cap || !lat)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    m->first_node_chan = s->num_chan;
    m->first_host_chan = s->num_chan + nn;
    m->first_peer_chan = np ? s->num_chan + nn + nh : -1;
    double shared =
        m->prof->memory_gbps_shared / (m->cached < 1 ? 1 - m->cached : 1);
    for (int i = 0; i < nn + nh + np; i++) {
        s->cap[s->num_chan + i] = i < nn        ? m->copy
                                  : i < nn + nh ? shared
                                                : m->peer;
        s->lat[s->num_chan + i] = 0;
    }
    s->num_chan += nn + nh + np;
    return MRC_OK;
}

/* A node's memory route (its channel, and its host's beyond cache; for
 * what it takes from a peer, the peer channel first) with this latency:
 * -1 out of memory. */
static int memory_route(mrc__sim_t *s, int u, int from_peer, double latency)
{
    mrc__sim_node_t *m = &s->node;
    int r = mrc__sim_new_route(s);
    if (r < 0 || (from_peer && m->first_peer_chan >= 0 &&
                  mrc__sim_route_hop(s, r, m->first_peer_chan + u, -1)))
        return -1;
    if (mrc__sim_route_hop(s, r, m->first_node_chan + u, -1))
        return -1;
    if (m->beyond_cache &&
        mrc__sim_route_hop(s, r, m->first_host_chan + u / m->per_host, -1))
        return -1;
    s->routes[r].latency = latency;
    return r;
}

/* A send's own cost on its sender's core: the core's time, its peer
 * channel alone (which its copies into the slots and of peers' lines
 * share), no memory. */
static int hold_route(mrc__sim_t *s, int u)
{
    int r = mrc__sim_new_route(s);
    if (r < 0 || mrc__sim_route_hop(s, r, s->node.first_peer_chan + u, -1))
        return -1;
    s->routes[r].own = u;
    return r;
}

/* Each node's routes of its own work, a message's copy route with its
 * latency (`message` us), and where sends hold their sender's core
 * (send_us, a peer channel), its hold. */
static mrc_status_t node_routes(mrc__sim_t *s, double message)
{
    mrc__sim_node_t *m = &s->node;
    int nn = s->p->num_nodes;
    int holds = m->prof->send_us > 0 && m->first_peer_chan >= 0;
    m->local_route = malloc(((size_t)nn + 1) * sizeof *m->local_route);
    m->copy_route = malloc(((size_t)nn + 1) * sizeof *m->copy_route);
    m->take_route = malloc(((size_t)nn + 1) * sizeof *m->take_route);
    m->core_route = malloc(((size_t)nn + 1) * sizeof *m->core_route);
    m->hold_route =
        holds ? malloc(((size_t)nn + 1) * sizeof *m->hold_route) : NULL;
    if (!m->local_route || !m->copy_route || !m->take_route || !m->core_route ||
        (holds && !m->hold_route))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    for (int u = 0; u < nn; u++) {
        m->local_route[u] = memory_route(s, u, 0, 0);
        m->copy_route[u] = memory_route(s, u, 1, message * 1e3);
        m->take_route[u] = memory_route(s, u, 1, 0);
        m->core_route[u] = memory_route(s, u, 1, 0);
        if (m->core_route[u] >= 0)
            s->routes[m->core_route[u]].own = u;
        if (holds)
            m->hold_route[u] = hold_route(s, u);
        if (m->local_route[u] < 0 || m->copy_route[u] < 0 ||
            m->take_route[u] < 0 || m->core_route[u] < 0 ||
            (holds && m->hold_route[u] < 0))
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    }
    return MRC_OK;
}

/* The program's hops under the model: each node-stream's message. */
static void node_stream_routes(mrc__sim_t *s)
{
    const mrc_program_t *p = s->p;
    for (int u = 0; u < p->num_nodes; u++) {
        int g = p->nodes[u].group;
        for (int j = 0; g >= 0 && j < p->groups[g].num_streams; j++) {
            const mrc__node_stream_t *ns =
                mrc__node_stream(p, u, p->groups[g].first_stream + j);
            if (ns->route < 0)
                continue;
            int dst = p->route_nodes[p->route_off[ns->route + 1] - 1];
            mrc__sim_node_route(s, (int)(ns - p->node_streams), u, dst);
        }
    }
}

mrc_status_t mrc__sim_node_build(mrc__sim_t *s, const mrc_profile_t *prof,
                                 int mapped)
{
    mrc__sim_node_t *m = &s->node;
    if (!prof)
        return MRC_OK;
    mrc_status_t st = check_profile(prof);
    if (st != MRC_OK)
        return st;
    int nn = s->p->num_nodes;
    m->prof = prof;
    m->per_host = prof->nodes_per_memory > 0 ? prof->nodes_per_memory : nn;
    int nh = (nn + m->per_host - 1) / m->per_host;
    m->mapped = mapped;
    /* (shm's profile: a kernel read and a rendezvous; and it copies a
     * send that fits into its area unless the profile reads them) */
    m->send_copied = !mapped && prof->kernel_gbps > 0 &&
                             prof->rendezvous_bytes > 0 &&
                             !(prof->send_by_ref > 0)
                         ? mrc__sim_send_copied(s->p)
                         : 0;
    node_rates(s);
    if ((st = node_channels(s, nn, nh)) != MRC_OK)
        return st;
    /* More nodes on a host than cores: a wait on another node is also
     * its turn for a core. A send/receive program's messages are such
     * waits; a memory program waits on flags, and its gets then find the
     * data there. */
    int crowded = host_crowded(s);
    double turn = crowded ? prof->turn_us : 0;
    double flag_turn = crowded ? prof->flag_turn_us : 0;
    /* A send's message costs its receiver's core (mrc__sim_node_msg_work),
     * beside its latency and a turn; a get is a memory operation's
     * latency. */
    double get = prof->get_us > 0 ? prof->get_us : prof->message_us;
    m->turn = s->memory ? 0 : turn * 1e3;
    if ((st = node_routes(s, s->memory ? get : turn + prof->latency_us)) !=
        MRC_OK)
        return st;
    if (crowded || prof->peer_contention > 0) {
        m->busy = calloc((size_t)nh + 1, sizeof *m->busy);
        m->readers = calloc((size_t)nh + 1, sizeof *m->readers);
        m->reading = calloc((size_t)nn + 1, 1);
        m->touched = malloc(((size_t)nn + 1) * sizeof *m->touched);
        m->scaled = malloc(((size_t)nn + 1) * sizeof *m->scaled);
        m->mark = calloc((size_t)nn + 1, 1);
        if (!m->busy || !m->readers || !m->reading || !m->touched ||
            !m->scaled || !m->mark)
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    }
    /* Decided once, not at each send of the walk (see through_slots). */
    m->sender_copies = prof->rendezvous_bytes > 0 && m->first_peer_chan >= 0 &&
                       strcmp(prof->transport, "threads") != 0;
    if (m->sender_copies && mrc__msgmap_init(&m->slot_routes, 64))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    m->sync_route = mrc__sim_new_route(s);
    if (m->sync_route < 0)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    s->routes[m->sync_route].latency = (prof->sync_us + flag_turn) * 1e3;
    m->flag_turn = flag_turn;
    node_stream_routes(s);
    return MRC_OK;
}

void mrc__sim_node_free(mrc__sim_t *s)
{
    free(s->node.local_route);
    free(s->node.take_route);
    free(s->node.core_route);
    free(s->node.hold_route);
    free(s->node.copy_route);
    free(s->node.crowd);
    free(s->node.busy);
    free(s->node.readers);
    free(s->node.reading);
    free(s->node.touched);
    free(s->node.scaled);
    free(s->node.mark);
    mrc__msgmap_free(&s->node.slot_routes); /* zeroed when unused */
}

/* The node whose own channel route r crosses last (the receiver's, of a
 * slot message that also crosses its sender's), or -1 (a link's
 * message); *reads: whether the route also crosses a peer channel (it
 * takes what a peer wrote). A route of a node's own work on its core
 * (mrc__sim_route_t.own): that node, no read. */
static int route_node(const mrc__sim_t *s, int r, int *reads)
{
    const mrc__sim_route_t *rt = &s->routes[r];
    const mrc__sim_node_t *m = &s->node;
    int first = m->first_node_chan, nn = s->p->num_nodes, u = -1;
    int peer = m->first_peer_chan;
    *reads = 0;
    if (rt->own >= 0) /* its own work: no peer's lines */
        return rt->own;
    for (int q = 0; q < rt->len; q++) {
        int ch = s->chan_pool[rt->first + q];
        if (ch >= first && ch < first + nn)
            u = ch - first;
        else if (peer >= 0 && ch >= peer && ch < peer + nn)
            *reads = 1;
    }
    return u;
}

/* Marks node u as one with work in flight on its host. */
static void mark_busy(mrc__sim_node_t *m, int u, int *ntouched)
{
    if (m->mark[u])
        return;
    m->mark[u] = 1;
    m->touched[(*ntouched)++] = u;
    m->busy[u / m->per_host]++;
}

/* Node u's channels at `share` of their rates, its reads of peers'
 * lines besides slowed `contended` times. */
static void scale_node(mrc__sim_t *s, int u, double share, double contended)
{
    const mrc__sim_node_t *m = &s->node;
    s->cap[m->first_node_chan + u] = m->copy * share;
    if (m->first_peer_chan >= 0)
        s->cap[m->first_peer_chan + u] = m->peer * share / contended;
}

/* How many times as long a node's reads of peers' lines take beside the
 * other readers of its host (`readers` with it, at most one a core), for
 * the share of the set in cache. */
static double contention(const mrc__sim_node_t *m, int readers)
{
    int cores = m->prof->cores;
    if (cores > 0 && readers > cores)
        readers = cores;
    return readers > 1
               ? 1 + m->prof->peer_contention * m->cached * (readers - 1)
               : 1;
}

void mrc__sim_node_cores(mrc__sim_t *s, const mrc__sim_flow_t *act, int nact)
{
    mrc__sim_node_t *m = &s->node;
    if (!m->busy)
        return;
    int nn = s->p->num_nodes, on_host = m->per_host < nn ? m->per_host : nn;
    int cores = m->prof->cores, ntouched = 0;
    /* A slot message's sender is not counted: its copy runs ahead of the
     * receiver's into free slots, and then it waits, yielding its core,
     * while the flow lasts as long as its slower end. Counted busy for
     * the whole flow, it halved the share of the tree's receivers on 4
     * shm ranks of 2 cores: 256 KiB-4 MiB predicted at 1.4-1.8 of their
     * time where not counting it had 1.1-1.2. */
    for (int f = 0; f < nact; f++) {
        int reads = 0, u = route_node(s, act[f].route, &reads);
        if (u < 0)
            continue;
        if (reads && !m->reading[u]) {
            m->reading[u] = 1;
            m->readers[u / m->per_host]++;
        }
        mark_busy(m, u, &ntouched);
    }
    for (int i = 0; i < m->nscaled; i++)
        scale_node(s, m->scaled[i], 1, 1);
    m->nscaled = 0;
    for (int i = 0; i < ntouched; i++) {
        int u = m->touched[i], h = u / m->per_host;
        /* The symmetric walk's one node stands for every node of its
         * host, all busy (and reading) when it is. */
        int busy = s->sym_self ? on_host : m->busy[h];
        int readers = s->sym_self ? on_host : m->readers[h];
        double want = busy + m->prof->spin_share * (on_host - busy);
        double share = cores > 0 && want > cores ? cores / want : 1;
        double contended = m->reading[u] ? contention(m, readers) : 1;
        if (share < 1 || contended > 1) {
            scale_node(s, u, share, contended);
            m->scaled[m->nscaled++] = u;
        }
    }
    for (int i = 0; i < ntouched; i++) {
        int u = m->touched[i];
        m->mark[u] = m->reading[u] = 0;
        m->busy[u / m->per_host] = m->readers[u / m->per_host] = 0;
    }
}

/* Above this many (host, step, node) marks the crowd is not counted, and
 * every step takes its whole turn. */
enum { CROWD_MAX_MARKS = 1 << 24 };

/* The last step of any message of the chains, or -1 (*st on an error). */
static int last_message_step(const mrc__sim_chain_t *chains, int nchains,
                             mrc_status_t *st)
{
    int last = -1;
    for (int i = 0; i < nchains; i++) {
        mrc__sim_chain_t c = chains[i]; /* a copy: the walk's stays put */
        int rr;
        while ((rr = mrc__cursor_peek(&c, st)) > 0) {
            if (c.op.kind == MRC__SEND || c.op.kind == MRC__RECV)
                last = c.op.step > last ? c.op.step : last;
            mrc__cursor_take(&c);
        }
        if (rr < 0)
            return -2;
    }
    return last;
}

mrc_status_t mrc__sim_node_crowd(mrc__sim_t *s, const mrc__sim_chain_t *chains,
                                 int nchains)
{
    mrc__sim_node_t *m = &s->node;
    mrc_status_t st = MRC_OK;
    /* The symmetric walk's one node stands for every node of its step. */
    if (!m->prof || m->turn <= 0 || m->crowd || s->sym_self)
        return MRC_OK;
    int steps = last_message_step(chains, nchains, &st) + 1;
    int nn = s->p->num_nodes, nh = (nn + m->per_host - 1) / m->per_host;
    if (steps < 0)
        return st;
    if (steps == 0 || (double)steps * nn > CROWD_MAX_MARKS)
        return MRC_OK;
    uint8_t *seen = calloc((size_t)steps * (size_t)nn, 1);
    m->crowd = calloc((size_t)steps * (size_t)nh, sizeof *m->crowd);
    if (!seen || !m->crowd) {
        free(seen);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    }
    m->crowd_steps = steps;
    for (int i = 0; i < nchains; i++) {
        mrc__sim_chain_t c = chains[i];
        int u = c.it.node;
        while (mrc__cursor_peek(&c, &st) > 0) {
            int k = c.op.step;
            if ((c.op.kind == MRC__SEND || c.op.kind == MRC__RECV) &&
                !seen[(size_t)k * nn + u]) {
                seen[(size_t)k * nn + u] = 1;
                m->crowd[(size_t)(u / m->per_host) * steps + k]++;
            }
            mrc__cursor_take(&c);
        }
    }
    free(seen);
    return MRC_OK;
}

double mrc__sim_node_latency(const mrc__sim_t *s, int route, int src, int dst,
                             uint64_t tag)
{
    const mrc__sim_node_t *m = &s->node;
    double latency = s->routes[route].latency;
    int k = mrc__tag_step(tag);
    if (!m->crowd || src < 0 || dst < 0 || k >= m->crowd_steps ||
        !mrc__sim_same_host(s, src, dst))
        return latency;
    /* The turn is fitted where every node of the host has a message in
     * every step (the rings); a step in which no more nodes want a core
     * than there are cores (a quiet one) takes quiet_turn_share of it,
     * and the steps between their share of the rest. */
    int nn = s->p->num_nodes, cores = m->prof->cores;
    int on_host = m->per_host < nn ? m->per_host : nn;
    int want = m->crowd[(size_t)(src / m->per_host) * m->crowd_steps + k];
    double busy = fmin(1, fmax(0, (double)(want - cores) / (on_host - cores)));
    double quiet = m->prof->quiet_turn_share;
    return latency - m->turn * (1 - (quiet + (1 - quiet) * busy));
}

int mrc__sim_same_host(const mrc__sim_t *s, int a, int b)
{
    return a / s->node.per_host == b / s->node.per_host;
}

void mrc__sim_node_route(mrc__sim_t *s, int route, int src, int dst)
{
    const mrc__sim_node_t *m = &s->node;
    if (!m->prof)
        return;
    if (mrc__sim_same_host(s, src, dst))
        s->routes[route] = s->routes[m->copy_route[dst]];
    else
        s->routes[route].latency += m->prof->message_us * 1e3;
}

/* Whether a send of `bytes` from src to dst is copied into the
 * transport's slots by its sender: below the rendezvous threshold, within
 * one host, on a transport whose sender copies (not the threads one,
 * whose receiver reads the sender's buffer at any size: its small
 * messages' rate is a line at a time, not a second copy). */
static int through_slots(const mrc__sim_t *s, int src, int dst, double bytes)
{
    const mrc__sim_node_t *m = &s->node;
    return m->sender_copies && bytes < m->prof->rendezvous_bytes &&
           mrc__sim_same_host(s, src, dst);
}

/* A send through the slots is two copies a fragment at a time: the
 * sender's into the slot, the receiver's out of it, each taking lines
 * the other core last held. Its route crosses the sender's peer channel
 * before the receiver's copy route, so a node that sends and receives at
 * once (every node of the rings) shares its peer channel between the two
 * (the tree's one send a step at P = 2, where slot_gbps is fitted, runs
 * the two copies side by side at that rate). In the symmetric walk
 * (s->sym_self) the walked node stands for its successor and its
 * predecessor alike: both copies of the one flow are on its own channels,
 * as the walk's routes take the successor's memory for its own
 * (pipelined_sym.c). On the successor's, a group whose streams go to two
 * successors (ring:4's two directions) had each node's copies split
 * between two nodes' channels, at half their load: the rings at 1 MiB on
 * 4 shm ranks were predicted at 147 us where the full walk took 276. */
mrc_status_t mrc__sim_node_send_route(mrc__sim_t *s, int src, int dst,
                                      double bytes, int *route)
{
    if (!through_slots(s, src, dst, bytes))
        return MRC_OK;
    if (s->sym_self)
        dst = src;
    mrc__sim_node_t *m = &s->node;
    int32_t *found = mrc__msgmap_find(&m->slot_routes, src, dst, 0);
    if (*found >= 0) {
        *route = m->slot_routes.pool[*found].i[0];
        return MRC_OK;
    }
    /* The sender's copy: its core (the peer channel, at the slots'
     * rate) and its memory (beyond cache its host's too: the rings'
     * slot messages cost the memory two copies a byte where a kernel's
     * read by reference costs one); then the receiver's. */
    int copy = m->copy_route[dst], r = mrc__sim_new_route(s);
    if (r < 0 || mrc__sim_route_hop(s, r, m->first_peer_chan + src, -1) ||
        mrc__sim_route_hop(s, r, m->first_node_chan + src, -1) ||
        (m->beyond_cache &&
         mrc__sim_route_hop(s, r, m->first_host_chan + src / m->per_host, -1)))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    for (int q = 0; q < s->routes[copy].len; q++) {
        int at = s->routes[copy].first + q;
        if (mrc__sim_route_hop(s, r, s->chan_pool[at], s->phys_pool[at]))
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    }
    s->routes[r].latency = s->routes[copy].latency;
    /* Its receiver takes a piece once all of it is in: a message's
     * first piece is copied in before any of it is taken out, a delay
     * the other messages of a step may hide but the tree's one message
     * a step cannot (P = 2, shm: its 16 and 64 KiB calls, one piece a
     * message, had been predicted at 0.75 of their time, scaled from
     * its 256 KiB call of two pieces, where the slots' rate is fitted).
     * Not with more nodes than cores: a core whose rank waits for a fill
     * runs another rank meanwhile (P = 4 on 2 cores: the tree's 64 KiB,
     * within at 0.99 without the fill, was at 1.66 with it). */
    /* (the transport sizes its slots by the job's ranks) */
    s->routes[r].piece = (double)mrc__shm_slot_bytes(s->p->num_nodes);
    s->routes[r].piece_ns = host_crowded(s) ? 0 : 1 / m->slot;
    mrc__msg_t *e = mrc__msgmap_add(&m->slot_routes, src, dst, 0);
    if (!e)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    e->i[0] = r;
    *route = r;
    return MRC_OK;
}

/* (sim_internal.h) The group's size gives the area: the transport's is
 * the job's, never smaller. */
double mrc__sim_send_copied(const mrc_program_t *p)
{
    int n = p->num_groups ? p->groups[0].size : 1;
    double send = (double)p->cfg.count * (double)mrc_dtype_size(p->cfg.dtype);
    if (p->cfg.collective == MRC_REDUCE_SCATTER)
        send *= n;
    return send > 0 && send <= (double)mrc__shm_send_copied_max(n) ? send : 0;
}

/* A get of a send buffer its owner copied into its area (on shm). */
static int copied_send(const mrc__sim_node_t *m, const mrc__op_t *op)
{
    return op->src == MRC__BUF_SEND && m->send_copied > 0;
}

/* Whether the transport moves what op takes from another process of the
 * host through the kernel (a profile with a kernel rate: shm's
 * rendezvous, a send from its threshold on, and its gets by reference). The
 * data then lands in a bounce buffer when it is to be reduced, and the sum is
 * taken from there in a pass of its own (slots and windows are reduced as they
 * are read). Not when the peers' buffers are mapped (mrc_mem_alloc): then
 * a node reads them with plain loads, at the rate of a peer's lines, and
 * reduces them in that pass. */
static int kernel_read(const mrc__sim_node_t *m, const mrc__op_t *op,
                       double bytes)
{
    const mrc_profile_t *f = m->prof;
    if (m->mapped || f->kernel_gbps <= 0 || f->rendezvous_bytes <= 0)
        return 0;
    if (op->kind == MRC__GET)
        return op->src != MRC__BUF_WINDOW && !copied_send(m, op);
    return bytes >= f->rendezvous_bytes;
}

double mrc__sim_node_msg_work(const mrc__sim_t *s, int node,
                              const mrc__op_t *op, double bytes)
{
    const mrc__sim_node_t *m = &s->node;
    const mrc_profile_t *f = m->prof;
    int peer = op->kind == MRC__SEND ? op->ring_peer : op->peer;
    if (!f || bytes <= 0 || (op->kind != MRC__SEND && op->kind != MRC__GET) ||
        !mrc__sim_same_host(s, node, peer))
        return bytes;
    /* Work on the receiver's peer channel, the route's narrowest: w takes
     * w / peer. A get is a plain copy (a window, at the window rate; or
     * the threads' read of a buffer) unless it goes through the kernel.
     * (Work scaled by the peer channel's capacity assumes that channel
     * the narrowest of the route, as the kernel's copy does.) */
    double rdv = f->rendezvous_us * 1e3 * m->peer;
    if (op->kind == MRC__GET && kernel_read(m, op, bytes))
        return bytes * m->peer /
                   (op->src == MRC__BUF_SEND ? m->kernel_send : m->kernel) +
               rdv;
    /* (a peer's lines: the first peer_ramp_bytes at half the rate) */
    double lines = bytes + fmin(bytes, f->peer_ramp_bytes);
    if (op->kind == MRC__GET)
        return op->src == MRC__BUF_WINDOW || copied_send(m, op)
                   ? lines * m->peer / m->window
                   : lines;
    /* A send's own cost (post, match, completion) is its receiver's core's
     * too, so the two streams' messages of a step add up on it (as a
     * latency they overlapped, and the tree's two messages in a row were
     * predicted 1.4x too slow against the rings' fit). Below the
     * transport's threshold it goes at the slots' rate; from it on, the
     * kernel's copy (or the peer rate) and the rendezvous's cost. */
    double own = f->message_us * 1e3 * m->peer;
    if (f->rendezvous_bytes <= 0)
        return lines + own;
    if (bytes < f->rendezvous_bytes)
        return lines * m->peer / m->slot + own;
    return bytes * m->peer / m->kernel + rdv + own;
}

/* Whether the sum op forms as it takes a message out of a transport's
 * slots is the receiver's work after the take, not beside it: the slot's
 * lines, just written by the sender's core, its own operand and the
 * store, one after the other in one pass (a core waiting on a peer's
 * lines has no other work to overlap with them). With it the rings' and
 * the tree's reduce at P = 2 on shm, 1-64 MiB, were predicted at
 * 0.55-1.13 of their time, 0.38-0.61 with the reduction beside the take
 * (the root takes about 5.5 GB/s from 1 MiB: docs/simulator.md, "The
 * reduce's take, one pass"); the threads transport, which reads the
 * sender's buffer itself, is predicted better as before, and a host
 * with more nodes than cores runs its nodes' passes between turns. */
static int take_in_turn(const mrc__sim_t *s, int node, const mrc__op_t *op,
                        double bytes)
{
    return op->kind == MRC__RECV && op->peer != node &&
           through_slots(s, op->peer, node, bytes) && !host_crowded(s);
}

/* Whether a node's copy of its own data is work on the core that copies
 * its sends into the slots (shm, as many cores as nodes): the two take
 * turns on it, where on two channels they ran side by side. (Whatever
 * the program's message sizes: chunked at the default 256 KiB, shm's
 * messages all go through the slots; a copy then also queues behind a
 * kernel's copy in, as the core does it after. With more nodes than
 * cores, mrc__sim_node_cores shares the cores instead.) Every walk: the
 * bulk-synchronous ones share the peer channel between the step's
 * copies and sends where the pipelined walk queues them in turn. */
static int core_copy(const mrc__sim_t *s)
{
    return s->node.sender_copies && !host_crowded(s);
}

/* ... that copy: the bytes at the copy rate on the node's peer channel
 * (work in the peer channel's units, as take_flow's and a message's:
 * the peer channel is taken as the route's narrowest, peer <= copy as
 * calibrated; the node's and, beyond cache, its host's channels see
 * peer / copy of the bytes, less than the copy moves). */
static int own_copy_flow(const mrc__sim_t *s, int node, double bytes,
                         mrc__sim_flow_t *f)
{
    const mrc__sim_node_t *m = &s->node;
    bytes *= m->peer / m->copy;
    *f = (mrc__sim_flow_t){bytes, 0, bytes, m->core_route[node], 0, 0};
    return 1;
}

/* ... that sum: the bytes at the reduction's rate on the receiver's peer
 * channel (its work after the take), once the message is in. */
static int take_flow(const mrc__sim_t *s, int node, double bytes,
                     mrc__sim_flow_t *f)
{
    const mrc__sim_node_t *m = &s->node;
    bytes *= m->peer / m->reduce;
    *f = (mrc__sim_flow_t){bytes, 0, bytes, m->take_route[node], 0, 1};
    return 1;
}

int mrc__sim_node_hold(const mrc__sim_t *s, int node, int *route, double *work)
{
    const mrc__sim_node_t *m = &s->node;
    if (!m->prof || !m->hold_route)
        return 0;
    *route = m->hold_route[node];
    *work = m->prof->send_us * 1e3 * m->peer;
    return 1;
}

int mrc__sim_local_flow(const mrc__sim_t *s, int node, const mrc__op_t *op,
                        size_t esize, mrc__sim_flow_t *f)
{
    const mrc__sim_node_t *m = &s->node;
    double bytes = (double)op->count * (double)esize;
    /* (an expose by reference of a send buffer shm copies in: that copy) */
    if (op->kind == MRC__EXPOSE && op->ref && copied_send(m, op))
        bytes = m->send_copied;
    if (!m->prof || bytes <= 0)
        return 0;
    switch (op->kind) {
    case MRC__RECV:
    case MRC__GET:
        if (op->local == MRC__BUF_NONE)
            return 0;
        /* On the node's channel (its copy rate), as long as the
         * reduction alone takes. Within a host the transports reduce as
         * they take (one pass reads both operands and writes the sum),
         * and the message was charged as the receiver's copy: only what
         * the reduction takes beyond that copy is left (but out of shm's
         * slots the whole sum, after the take: take_in_turn). */
        if (take_in_turn(s, node, op, bytes))
            return take_flow(s, node, bytes, f);
        if (op->peer != node && mrc__sim_same_host(s, op->peer, node) &&
            !kernel_read(m, op, bytes))
            bytes *= fmax(0, m->copy / m->reduce - 1);
        else
            bytes *= m->copy / m->reduce;
        if (bytes <= 0)
            return 0;
        break;
    case MRC__EXPOSE: /* by copy into the window; by reference, nothing */
        if (op->ref && !copied_send(m, op))
            return 0;
        break;
    case MRC__COPY:
    case MRC__SCALE: break;
    default: return 0;
    }
    /* A copy of the node's own data (or an expose of what the node has)
     * needs nothing received: it starts with the step's messages (on
     * its own channel, or in turn with its sends on shm's core:
     * core_copy); the rest once they are in. */
    int beside = op->kind == MRC__COPY || op->kind == MRC__EXPOSE;
    if (beside && core_copy(s))
        return own_copy_flow(s, node, bytes, f);
    *f = (mrc__sim_flow_t){bytes, 0, bytes, m->local_route[node], 0, !beside};
    return 1;
}
