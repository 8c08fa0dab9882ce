/*
 * Inside the pipelined walk (pipelined.c, pipelined_wire.c): its state,
 * and the messages' side of it that the walk drives: arrivals in time
 * order, messages posted, queued on their sender's link, put on the wire
 * and taken off it when their bytes are through.
 */
#ifndef MRC_SIM_PIPELINED_H
#define MRC_SIM_PIPELINED_H

#include "sim/sim_internal.h"

typedef struct mrc__sim_pmeta {
    double start;
    int32_t src, dst;
    uint64_t tag;
    /* The chain whose send this is, waiting until its bytes are through
     * (a send its own core copies into a transport's slots); -1 none. */
    int32_t sender;
} mrc__sim_pmeta_t;

typedef struct mrc__sim_arrival {
    double time;
    int32_t src, dst;
    uint64_t tag;
    uint64_t order; /* among arrivals at one time: see arrival_order */
} mrc__sim_arrival_t;

/* A message waiting for its sender's link: a node sends on one link in
 * the order it posted (its chunks pipeline instead of all sharing the
 * link at once). */
typedef struct mrc__sim_queued {
    mrc__sim_flow_t f;
    mrc__sim_pmeta_t m;
    int32_t next;
} mrc__sim_queued_t;

/* A message posted at the current time, before it takes its link. */
typedef struct mrc__sim_pending {
    mrc__sim_queued_t item;
    uint64_t order; /* arrival_order of what it carries */
    int32_t seq;    /* the order posted, among equal orders */
} mrc__sim_pending_t;

/* Memory-semantic ops in flight: a WAIT before its peer's SIGNAL, a node
 * at a BARRIER before the rest of its group. */
typedef struct mrc__sim_pwait {
    int32_t chain, peer, flag;
} mrc__sim_pwait_t;

typedef struct mrc__sim_pbar {
    int32_t group, flag, chain; /* chain -1: the count of (group, flag) */
    int32_t count;
} mrc__sim_pbar_t;

/* A run of calls (mrc_sim_config_t.calls > 1; pipelined_calls.c): the
 * chains of call c are [c * per_call, (c + 1) * per_call), each call's
 * laid out alike (node by node). A node begins call c + 1 when it has
 * ended call c: its chains of c have ended and, where the group agrees
 * at the end of a call, every member of its group has begun c (counted
 * by group: the last member's beginning, the group's barrier latency
 * on). */
typedef struct mrc__sim_calls {
    int calls, per_call, nodes, groups;
    int agree;              /* a reduce's or broadcast's group completion */
    int32_t *first, *count; /* [nodes]: the node's chains within a call */
    int32_t *left;          /* [calls x nodes]: its chains not yet ended */
    int32_t *begun;         /* [calls x groups]: members that began it */
    double *last_began;     /* [calls x groups]: when the last of them did */
    uint8_t *ended;         /* [chains] */
    double *end;            /* [calls]: the last node's end of the call */
} mrc__sim_calls_t;

typedef struct mrc__sim_pipe {
    mrc__sim_t *s;
    mrc__sim_pending_t *pending; /* posted now, not yet on their links */
    int npending, cap_pending;
    mrc__sim_queued_t *queue; /* pool of waiting messages */
    int nqueue, cap_queue;
    int32_t q_free; /* slots of the pool taken off their queue, -1 none */
    int32_t *q_head, *q_tail; /* per first channel, -1 empty */
    uint8_t *q_busy;          /* a message of this queue is in flight */
    mrc__sim_chain_t *chains;
    size_t esize;
    double now;
    mrc__sim_flow_t *act;   /* the flows in flight, compact */
    mrc__sim_pmeta_t *meta; /* beside them */
    int nact, cap_act, cap_meta;
    mrc__sim_arrival_t *heap; /* arrivals, by time */
    int nheap, cap_heap;
    mrc__msgmap_t msgs; /* arrived and unclaimed, or awaited: w[0] = 1
                           once arrived, i[0] = the waiting chain or -1 */
    int32_t *ready;
    int nready;
    int32_t *phys_active; /* flows in flight per physical link */
    double *busy_from;    /* start of its current busy period */
    mrc__sim_acct_t *acct;
    int dirty;
    mrc__msgmap_t flags;     /* (node, -1, flag): w[0] = when it was set */
    mrc__sim_pwait_t *waits; /* WAITs whose flag is not set yet */
    int nwaits, cap_waits;
    mrc__sim_pbar_t *bars; /* nodes at a barrier, and the counts */
    int nbars, cap_bars;
    int32_t *group_chains; /* [groups]: chains of the group */
    uint8_t *worked;       /* [chains]: its op's own work is under way (node
                              model) */
    mrc__sim_calls_t run;  /* calls 1: one call alone */
} mrc__sim_pipe_t;

/* An arrival from MRC__SIM_WAKE wakes chain `dst` (a GET's data, a signal, a
 * barrier's release, its own work done, its send through slots through)
 * instead of matching a RECV; one from MRC__SIM_BEGIN
 * has node `dst` end call `tag` and begin the next (a run of calls). */
enum { MRC__SIM_WAKE = -2, MRC__SIM_BEGIN = -3 };

/* The arrivals, a binary heap by time, then by the order that is the
 * same at every node (see arrival_order in pipelined_wire.c). The caller
 * has grown the heap for one more. */
void mrc__sim_pipe_arrival_push(mrc__sim_pipe_t *pp, mrc__sim_arrival_t a);
mrc__sim_arrival_t mrc__sim_pipe_arrival_pop(mrc__sim_pipe_t *pp);

/* Posts `bytes` over `route` at the current time ((src, dst, tag) is
 * what arrives; src MRC__SIM_WAKE wakes chain dst): it takes its link,
 * or queues behind the earlier messages on it, once the chains due now
 * have run (mrc__sim_pipe_flush_posts). */
mrc_status_t mrc__sim_pipe_post(mrc__sim_pipe_t *pp, int route, int32_t src,
                                int32_t dst, uint64_t tag, double bytes);
/* The same, taking as long over its route as `work` bytes would (the
 * node model's cost of a message, mrc__sim_node_msg_work). */
mrc_status_t mrc__sim_pipe_post_work(mrc__sim_pipe_t *pp, int route,
                                     int32_t src, int32_t dst, uint64_t tag,
                                     double bytes, double work);
/* The messages posted at this time onto their links, in arrival order. */
mrc_status_t mrc__sim_pipe_flush_posts(mrc__sim_pipe_t *pp);
/* A SEND of chain i: its message over its hop. *waits: the chain waits
 * until the message's bytes are through (a send its sender's core copies
 * into the transport's slots), woken then. */
mrc_status_t mrc__sim_pipe_start_flow(mrc__sim_pipe_t *pp, int i, int *waits);
/* Flow f (in flight) is through: its links' accounts, its arrival (and
 * its sender's wake, a send through slots), and the next message queued
 * on its link onto the wire. The caller has grown the heap for two
 * more. */
mrc_status_t mrc__sim_pipe_finish_flow(mrc__sim_pipe_t *pp, int f);

/* ---- a run of calls (pipelined_calls.c) ---- */

/* The run's bookkeeping for `calls` calls of per_call chains each (the
 * chains already made, call by call); every node begins call 0 at 0. */
mrc_status_t mrc__sim_calls_init(mrc__sim_pipe_t *pp, int calls, int per_call);
void mrc__sim_calls_free(mrc__sim_calls_t *r);
/* The call chain i belongs to. */
static inline int mrc__sim_call_of(const mrc__sim_pipe_t *pp, int i)
{
    return pp->run.calls > 1 ? i / pp->run.per_call : 0;
}
/* A message's tag and a flag's key, told apart by call (the call in the
 * tag's bits 59-62, which a stream below 2^15 leaves clear, and bit 63,
 * which sorts wake-ups after messages, too: pipelined_wire.c; sim.c
 * refuses a run of calls of more streams). */
enum { MRC__SIM_CALL_SHIFT = 59 };
static inline uint64_t mrc__sim_call_tag(const mrc__sim_pipe_t *pp, int i,
                                         uint64_t tag)
{
    return tag | (uint64_t)mrc__sim_call_of(pp, i) << MRC__SIM_CALL_SHIFT;
}
static inline int32_t mrc__sim_call_flag(const mrc__sim_pipe_t *pp, int i,
                                         int flag)
{
    return (int32_t)(flag | mrc__sim_call_of(pp, i) << 8);
}
/* Chain i has ended (once per chain; nothing in a single call). */
mrc_status_t mrc__sim_calls_chain_ended(mrc__sim_pipe_t *pp, int i);
/* A MRC__SIM_BEGIN arrival: node `node` ends call `call` now. */
mrc_status_t mrc__sim_calls_begin(mrc__sim_pipe_t *pp, int node, int call);
/* The run's totals made a call's, the walk over: total_ns the period,
 * from the end of its second call to the end of its last, a call's share
 * (of 2 calls, from the first's end; the first call, every node
 * beginning it at once, is the run's start, not its pace, and a
 * broadcast's root a call ahead of its leaf ends calls in pairs, which 6
 * calls after the first, of a run of 8, take whole); the bytes and the
 * energy of moving them a K-th; the links' busy and on times their share
 * of the whole run in a period (a link busy through the run is so
 * through a call). */
void mrc__sim_calls_book(mrc__sim_pipe_t *pp);

#endif /* MRC_SIM_PIPELINED_H */
