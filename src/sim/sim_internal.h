/*
 * The simulator's internals, shared by its files and its tests:
 *
 *   model.c      links, routes, what a program's op puts on them
 *   fluid.c      one step: max-min fair sharing of channels by flows
 *   bsp.c        the bulk-synchronous walks (lockstep, fast, by group)
 *   pipelined.c  every chunk as soon as its data is ready
 *   pipelined_sym.c  the same, one node standing for a symmetric group
 *   pipelined_calls.c  the same, a run of calls back to back
 *   figures.c    the booking of links and the result's figures
 *   sim.c        mrc_sim_run: checks, chains, the choice of walk
 */
#ifndef MRC_SIM_INTERNAL_H
#define MRC_SIM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mrc/profile.h"
#include "mrc/sim.h"
#include "program/plan.h"
#include "topo/graph.h"

/* When a single-group BSP run simulates one step per ring loop instead of
 * every message (mrc__sim_fast_bsp): when that is exact or the group is
 * too large to walk (auto), or always, or never. Tests set it to compare
 * the two paths. */
typedef enum mrc__sim_fast {
    MRC__SIM_FAST_AUTO,
    MRC__SIM_FAST_ALWAYS,
    MRC__SIM_FAST_NEVER
} mrc__sim_fast_t;

extern mrc__sim_fast_t mrc__sim_fast;
/* When a pipelined run walks one node for a symmetric group
 * (pipelined_sym.c): where it applies (auto, always), or never. */
extern mrc__sim_fast_t mrc__sim_sym;

/* ---- the model (model.c) ---------------------------------------------- */

typedef struct mrc__sim_route {
    int32_t first, len; /* into chan_pool / phys_pool */
    double latency;     /* ns, sum over its links */
    /* A route through a transport's slots (node.c): its message arrives
     * later by its first piece's copy, up to piece bytes at piece_ns a
     * byte (0 elsewhere). */
    double piece, piece_ns;
    /* The node whose own work on its core this route carries (node.c: a
     * copy of its own data, a send's hold): it crosses the node's peer
     * channel but reads no peer's lines; -1 elsewhere. */
    int32_t own;
} mrc__sim_route_t;

/* A message of `bytes` over route rt through slots: its first piece's
 * fill, ns (0 elsewhere). */
static inline double mrc__sim_route_fill(const mrc__sim_route_t *rt,
                                         double bytes)
{
    return (bytes < rt->piece ? bytes : rt->piece) * rt->piece_ns;
}

/* Whether route rt goes through a transport's slots (its sender's core
 * copies the message in). */
static inline int mrc__sim_route_slots(const mrc__sim_route_t *rt)
{
    return rt->piece > 0;
}

/* When a message of `bytes` over route rt arrives after its last byte
 * left: the route's latency and its fill. */
static inline double mrc__sim_route_delay(const mrc__sim_route_t *rt,
                                          double bytes)
{
    return rt->latency + mrc__sim_route_fill(rt, bytes);
}

/* The node model (node.c): with a profile, every node has a channel of
 * its own for the memory it moves (copies, reductions; capacity its copy
 * rate in the run's regime) and, beyond cache, the nodes of one memory
 * system also cross its channel (capacity the shared bandwidth). */
typedef struct mrc__sim_node {
    const mrc_profile_t *prof; /* NULL: local memory is free */
    int per_host;              /* nodes per memory system */
    int beyond_cache;          /* the working set exceeds cache_bytes */
    double cached;             /* the share of it in cache */
    double copy, reduce, peer; /* bytes per ns of one node alone */
    double slot;               /* a message through a transport's slots */
    double kernel;             /* a copy through the kernel */
    double kernel_send;        /* the kernel's copy of a send buffer */
    double window;             /* a get from a peer's window */
    int mapped;                /* the peers' buffers mapped: no bounce */
    double send_copied;        /* mrc__sim_send_copied's, on shm; else 0 */
    double flag_turn;          /* us: a flag's turn for a core, or 0 */
    double turn;               /* ns: a message's turn for a core, or 0 */
    /* [host * crowd_steps + step]: the nodes of the host with a message
     * in that step (the pipelined walk's turns; NULL: every step full). */
    int32_t *crowd;
    int crowd_steps;
    /* The pipelined walk's share of the cores (mrc__sim_node_cores): a
     * crowded host's nodes with work in flight, per host; the nodes
     * marked; the nodes whose channels run scaled. NULL: not crowded. */
    int32_t *busy, *touched, *scaled;
    uint8_t *mark;
    /* With peer_contention (or crowded): per host, its nodes with a read
     * of a peer's lines in flight; the nodes marked as such. */
    int32_t *readers;
    uint8_t *reading;
    int nscaled;
    int first_node_chan, first_host_chan;
    int first_peer_chan;  /* -1: peers' data at the copy rate */
    int32_t *local_route; /* [nodes]: the node's own memory work */
    int32_t *copy_route;  /* [nodes]: a message it copies in */
    int32_t *take_route;  /* [nodes]: the sum it forms as it takes a slot's */
    int32_t *core_route;  /* [nodes]: a copy of its own data on its core */
    int32_t *hold_route;  /* [nodes]: a slot send's own cost on its core */
    int sync_route;       /* a flag or barrier within one host */
    /* Whether a send below rendezvous_bytes is also its sender's copy
     * into a slot (shm's, not threads'), and (src, dst, 0): i[0] = the
     * route of such a send (mrc__sim_node_send_route), found on demand. */
    int sender_copies;
    mrc__msgmap_t slot_routes;
} mrc__sim_node_t;

typedef struct mrc__sim {
    const mrc_program_t *p;
    const mrc_topo_t *t;
    int num_chan, num_phys;
    int link_chan;            /* channels below this are link directions */
    double *cap;              /* bytes per ns */
    double *lat;              /* ns */
    int32_t *phys_base;       /* [links]: first physical link of the entry */
    mrc__sim_route_t *routes; /* [num_entries]: node-stream -> its hop */
    int32_t *chan_pool, *phys_pool;
    int pool_len, chan_cap, phys_cap;
    /* Memory-semantic programs: routes beyond the program's (a GET's or a
     * WAIT's path from the peer, a group's barrier), found on demand. */
    int memory;
    int num_routes, cap_routes; /* routes[] holds num_routes entries */
    mrc__msgmap_t paths;        /* (src, dst, 0): i[0] = its route */
    mrc__graph_t graph;         /* the topology, for the search */
    mrc__paths_t search;        /* the fewest hops from a node */
    int32_t *hop_arcs;          /* [nodes]: a route's arc ids */
    int32_t *group_route;       /* [groups]: its barrier's route, or -1 */
    /* The program's port mask: the physical link of each port in use
     * (-1: none); the links a phase leaves idle are switched off. */
    int32_t *use_phys;
    mrc__sim_node_t node;
    /* The symmetric walk (pipelined_sym.c): a node's SEND arrives at the
     * node itself, standing for its predecessor's send to it. */
    int sym_self;
    /* Paths between any two nodes (a barrier's, a get's): families other
     * than the rings, and a run of calls (its rounds of agreement). Set
     * before mrc__sim_build. */
    int want_paths;
} mrc__sim_t;

/* A message in flight over its route. */
typedef struct mrc__sim_flow {
    double remaining; /* bytes */
    double rate;      /* bytes per ns */
    double bytes;
    int32_t route;
    int done;
    /* The node model's own work of a node on what it received (a
     * reduction, a scaling): it starts once the step's messages are in. */
    int local;
} mrc__sim_flow_t;

/* Whether a flow in flight at time `now` (ns) is finished: what is left
 * of it is rounding in the subtraction, or too little to move a clock
 * that far on (a flow of half a byte's reduction left 5e-10 bytes at
 * 3e5 ns, whose time was below the clock's resolution: the walk stood
 * still forever). */
static inline int mrc__sim_flow_over(const mrc__sim_flow_t *f, double now)
{
    return f->remaining <= 1e-9 * f->bytes ||
           (f->rate > 0 && now + f->remaining / f->rate <= now);
}

/* One walker of the program: a node's ops of one stream and chunk. */
typedef mrc__cursor_t mrc__sim_chain_t;

mrc_status_t mrc__sim_build(mrc__sim_t *s);
mrc_status_t mrc__sim_build_mask(mrc__sim_t *s);
void mrc__sim_free(mrc__sim_t *s);
mrc_status_t mrc__sim_path_route(mrc__sim_t *s, int src, int dst, int *route);
mrc_status_t mrc__sim_barrier_route(mrc__sim_t *s, int g, int *route);
mrc_status_t mrc__sim_signal_route(mrc__sim_t *s, int src, int dst, int *route);
int mrc__sim_new_route(mrc__sim_t *s);
int mrc__sim_route_hop(mrc__sim_t *s, int route, int chan, int phys);
/* The flows of a node's op, at most two (a message, then the node's own
 * work on it): how many, or -1 on an error (*st). */
int mrc__sim_op_flow(mrc__sim_t *s, int node, const mrc__op_t *op, size_t esize,
                     mrc__sim_flow_t f[2], mrc_status_t *st);

/* ---- the node model (node.c) ------------------------------------------ */

mrc_status_t mrc__sim_node_build(mrc__sim_t *s, const mrc_profile_t *prof,
                                 int mapped);
void mrc__sim_node_free(mrc__sim_t *s);
int mrc__sim_same_host(const mrc__sim_t *s, int a, int b);
/* A message's route from src to dst under the node model. */
void mrc__sim_node_route(mrc__sim_t *s, int route, int src, int dst);
/* The route of a SEND of `bytes` from src to dst: *route, or under the
 * node model through a transport's slots, one that also crosses the
 * sender's peer channel (its copy into the slot); in the symmetric walk,
 * over src's channels alone. */
mrc_status_t mrc__sim_node_send_route(mrc__sim_t *s, int src, int dst,
                                      double bytes, int *route);
/* The work (bytes of its route's time) of node's SEND or GET of `bytes`
 * (from or to its peer): its bytes, or under the node model within a
 * host what the transport makes of them (its slots, a rendezvous, a
 * send's own cost); any other op's, its bytes. */
double mrc__sim_node_msg_work(const mrc__sim_t *s, int node,
                              const mrc__op_t *op, double bytes);
/* Counts, per host and step, the nodes with a message in it, over the
 * chains (walked on copies, before the walk takes them): with more nodes
 * on a host than cores, a message's turn for a core then scales with
 * the nodes that want one in its step. Nothing without a turn. */
mrc_status_t mrc__sim_node_crowd(mrc__sim_t *s, const mrc__sim_chain_t *chains,
                                 int nchains);
/* The latency of a message over `route` from src to dst with `tag`: the
 * route's, its turn (if any) scaled by its step's crowd. */
double mrc__sim_node_latency(const mrc__sim_t *s, int route, int src, int dst,
                             uint64_t tag);
/* Before the pipelined walk shares its channels: with more nodes on a
 * host than cores, a core is shared by the nodes that have work in
 * flight (nact flows act), and each runs its copies at cores / busy of
 * its rate; a host whose busy nodes have a core each runs them whole. */
void mrc__sim_node_cores(mrc__sim_t *s, const mrc__sim_flow_t *act, int nact);
/* The bytes of a node's send buffer that the shared-memory transport
 * copies into its owner's area when the program exposes it by reference
 * (mrc__shm_send_copied_max: one that fits), or 0. Both models price a
 * get of it as that copy and its reader's. */
double mrc__sim_send_copied(const mrc_program_t *p);
/* A send through slots from `node` holds its core send_us once its
 * bytes are in: 1, and the route and work of that hold; 0 if none. */
int mrc__sim_node_hold(const mrc__sim_t *s, int node, int *route, double *work);
/* The node's own work of an op (a reduction of what it received or
 * read, a local copy, a scaling): 1 and *f, or 0 if none or no model. */
int mrc__sim_local_flow(const mrc__sim_t *s, int node, const mrc__op_t *op,
                        size_t esize, mrc__sim_flow_t *f);

/* ---- one step (fluid.c) ----------------------------------------------- */

typedef struct mrc__sim_hent mrc__sim_hent_t;

/* Scratch of the fair sharing, per channel and per flow. */
typedef struct mrc__sim_ws {
    double *residual; /* per channel */
    int32_t *count;   /* unfrozen flows per channel */
    int32_t *chan_start, *chan_fill, *chan_flows; /* channel -> flows */
    int32_t *touched; /* channels in use this step */
    int num_touched;
    uint8_t *frozen;
    int cap_flows, cap_chan_flows;
    int32_t *version;      /* per channel */
    mrc__sim_hent_t *heap; /* room for every channel push of a step */
    int heap_n, heap_cap;
} mrc__sim_ws_t;

int mrc__sim_ws_init(mrc__sim_ws_t *w, int num_chan);
void mrc__sim_ws_free(mrc__sim_ws_t *w);
int mrc__sim_reserve(mrc__sim_ws_t *w, int nf, size_t hops, int num_chan);
mrc_status_t mrc__sim_reserve_for(const mrc__sim_t *s, mrc__sim_ws_t *w,
                                  const mrc__sim_flow_t *fl, int nf);
void mrc__sim_share(const mrc__sim_t *s, mrc__sim_flow_t *fl, int nf,
                    mrc__sim_ws_t *w);
double mrc__sim_run_step(const mrc__sim_t *s, mrc__sim_flow_t *fl, int nf,
                         mrc__sim_ws_t *w);

/* ---- the booking and the figures (figures.c) -------------------------- */

/* What a walk books as it goes: bytes per channel, energy moved, and the
 * time each physical link was on. */
typedef struct mrc__sim_acct {
    mrc_sim_result_t *r;
    double *phys_on;   /* ns a physical link was on */
    double *phys_last; /* end of its last busy period */
    uint8_t *used;     /* marks, all 0 between calls */
    double pj, wake_ns;
    double total_ns, move_j;
} mrc__sim_acct_t;

void mrc__sim_book_step(const mrc__sim_t *s, const mrc__sim_flow_t *fl, int nf,
                        double start, double dur, double times,
                        mrc__sim_acct_t *a, int step, int group);
void mrc__sim_figures(const mrc__sim_t *s, const mrc__sim_acct_t *a,
                      double watts, mrc_sim_result_t *r);

/* ---- the walks (bsp.c, pipelined.c) ----------------------------------- */

mrc_status_t mrc__sim_run_lockstep(mrc__sim_t *s, mrc__sim_chain_t *chains,
                                   int nchains, size_t esize, mrc__sim_ws_t *w,
                                   mrc__sim_acct_t *a);
mrc_status_t mrc__sim_fast_bsp(const mrc__sim_t *s, mrc__sim_ws_t *w,
                               size_t esize, mrc__sim_acct_t *a);
/* Whether BSP takes the fast walk (mrc__sim_fast, the group, exactness). */
int mrc__sim_fast_applies(const mrc_program_t *p, mrc_sim_mode_t mode,
                          int node_model);
mrc_status_t mrc__sim_run_bsp_groups(mrc__sim_t *s, mrc__sim_chain_t *chains,
                                     int nchains, size_t esize,
                                     mrc__sim_ws_t *ws, mrc__sim_acct_t *a);
/* calls > 1: the chains are `calls` runs of the program's, one after the
 * other (pipelined_calls.c), and a's totals are a call's: total_ns its
 * period, the rest its share (mrc__sim_calls_book). */
mrc_status_t mrc__sim_run_pipelined(mrc__sim_t *s, mrc__sim_chain_t *chains,
                                    int nchains, int calls, size_t esize,
                                    mrc__sim_ws_t *w, mrc__sim_acct_t *a);
/* The pipelined walk of one node standing for a symmetric group: 1 if it
 * applies (*st its status), 0 and why not (*why) if it does not (the
 * caller then walks every node); s's routes are the walk's after it. */
int mrc__sim_sym_walk(mrc__sim_t *s, const mrc_sim_config_t *c,
                      mrc__sim_ws_t *w, mrc__sim_acct_t *a, mrc_status_t *st,
                      const char **why);
/* For tests: whether a pipelined run of p on t with cfg takes the
 * symmetric walk; 1, or 0 and why not. */
int mrc__sim_sym_applies(const mrc_program_t *p, const mrc_topo_t *t,
                         const mrc_sim_config_t *cfg, const char **why);

/* ---- the chains (sim.c) ------------------------------------------------ */

/* Chunks of stream k: the program's, or cfg->chunks per fragment. */
int mrc__sim_chunks(const mrc_program_t *p, const mrc_sim_config_t *c, int k);
/* Refuses `chains` chains of the mode that would not fit in the memory
 * limit. */
mrc_status_t mrc__sim_check_chains(uint64_t chains, mrc_sim_mode_t mode);

#endif
