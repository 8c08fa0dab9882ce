/*
 * The program as its consumers see it (the executor, the simulator, the
 * fabric, the communicators, the tools): the tables every node indexes,
 * the expansion of a node's share of the shared code into chains of
 * operations with peers, ports, tags and element ranges (what is checked
 * is exactly what runs and what is simulated), the plan built from them,
 * the port mask, and the image's origin. The instruction format itself
 * (opcodes, instructions, templates) stays inside the module
 * (program_internal.h).
 */
#ifndef MRC_PROGRAM_PLAN_H
#define MRC_PROGRAM_PLAN_H

#include <stdint.h>

#include "common/common.h"
#include "mrc/program.h"

struct mrc__insn;

/* The buffers an operation reads and writes. */
enum mrc__buffer {
    MRC__BUF_NONE,
    MRC__BUF_SEND,
    MRC__BUF_RECV,
    MRC__BUF_SCRATCH,
    MRC__BUF_WINDOW /* the node's exposed copy: element
                       offsets as in the whole vector */
};

/* How fragment numbers map to elements. */
enum mrc__addressing {
    MRC__ADDR_SPLIT,     /* the stream's slice cut in N near-equal parts */
    MRC__ADDR_BLOCK_OWN, /* the slice of the block of the node at pos f-1 */
    MRC__ADDR_BLOCK_POS, /* the slice of the block of the node at pos f */
    MRC__ADDR_WHOLE,     /* one fragment: the whole slice */
    /* hier by places: the slice cut in L blocks (one per place of a
     * host), each cut in H pieces (one per host); fragment l H + p is
     * piece p of block l. A host instruction's fragment is a block (H
     * fragments), a place instruction's a piece of its place's block. */
    MRC__ADDR_CELLS,
};

/* ---- tables ------------------------------------------------------------- */

typedef struct mrc__stream {
    int32_t group;
    int32_t ring;     /* ring of the group */
    int32_t reversed; /* 1: the ring's other direction */
    int32_t root_pos; /* reduce, broadcast: the root's position; else 0 */
    uint64_t slice_off, slice_len; /* elements of the segment */
} mrc__stream_t;

typedef struct mrc__group {
    int32_t size;
    int32_t first_stream, num_streams;
    int32_t first_member; /* into members[]: rank -> node */
} mrc__group_t;

/* One node's view of one stream of its group. */
typedef struct mrc__node_stream {
    int32_t pos; /* ring position */
    int32_t next, prev;
    int32_t out_port; /* port of the first step of the hop to next */
    int32_t in_port;  /* port of the last step of the hop from prev */
    int32_t route;    /* the hop to next, in the route pool; -1 if none */
} mrc__node_stream_t;

typedef struct mrc__node {
    int32_t group; /* -1: in no group */
    int32_t rank;
    int32_t num_ports;
    int32_t first_entry; /* into node_streams[] */
} mrc__node_t;

/* The port mask: the steps of the program cut into phases over which no
 * node's set of ports in use changes (all the steps of a ring loop; each
 * step of a reduce or broadcast chain), and for each phase the ports in
 * use, as (node, port) pairs sorted by node and port: every other port of
 * a node is idle in that phase, and may be switched off (seed 000's
 * claims 7 and 15). A port is in use when a message of the phase leaves
 * or enters the node by it, relayed ones included. */
typedef struct mrc__port_phase {
    int32_t first_step, num_steps;
    int32_t first_use; /* into port_uses; the phase's run to the next's */
} mrc__port_phase_t;

typedef struct mrc__port_use {
    int32_t node, port;
} mrc__port_use_t;

struct mrc_program {
    mrc_compile_config_t cfg;
    uint8_t addressing;
    int num_nodes, num_groups, num_streams, code_len, num_members;
    int num_entries, num_routes, route_pool_len;
    struct mrc__insn *code; /* the instruction format: program_internal.h */
    mrc__group_t *groups;
    int32_t *members; /* [num_members] */
    mrc__stream_t *streams;
    int32_t *ring_order; /* per stream, group size entries: pos -> node */
    int32_t *ring_first; /* [num_streams]: into ring_order */
    mrc__node_t *nodes;
    mrc__node_stream_t *node_streams; /* [num_entries] */
    int32_t *route_off;      /* [num_routes + 1] into route_nodes/ports */
    int32_t *route_nodes;    /* [route_pool_len] */
    int32_t *route_ports;    /* out-port at each node but the last */
    int32_t *route_in_ports; /* port at each node but the first it
                                arrives on */
    /* The port mask: num_port_phases + 1 entries (the last one's
     * first_use is num_port_uses); none (0 phases) where it would be
     * found by a walk of too many messages (see mrc__port_mask_build):
     * every port then counts as in use. Found
     * at first use (see mrc__port_mask_ready): it walks every message,
     * as the checker does, and a run over the CPU transports needs none. */
    int port_mask_ready; /* atomic: 1 once the fields below are set */
    int num_port_phases, num_port_uses;
    mrc__port_phase_t *port_phases;
    mrc__port_use_t *port_uses;
};

/* Makes sure the port mask is there, finding it at the first call (under
 * a lock: a program is shared by the ranks of a process); the fields may
 * be read once this returns MRC_OK. */
mrc_status_t mrc__port_mask_ready(const mrc_program_t *p);

/* The phase holding `step`, or -1 (no mask, or a step past the last). */
int mrc__port_phase_of(const mrc_program_t *p, int step);

/* Fills idle[0 .. num_ports of u) with 1 for each port node u leaves idle
 * in phase ph, 0 for each it uses. */
void mrc__port_idle(const mrc_program_t *p, int ph, int u, uint8_t *idle);

/* Compiles only group `only` of the embedding (-1: every group); the
 * nodes of other groups are in no group of the program. */
mrc_status_t mrc__program_compile_group(const mrc_embedding_t *e,
                                        const mrc_compile_config_t *cfg,
                                        int only, mrc_program_t **out);

/* The compiler without the checker (compile_group = build + check); for
 * timing the two apart. */
mrc_status_t mrc__program_build(const mrc_embedding_t *e,
                                const mrc_compile_config_t *cfg, int only,
                                mrc_program_t **out);

/* 1 if the code has memory-semantic instructions (one chain per node);
 * 1 if it reads or writes a node's window (the executor provides one);
 * 1 if it exposes a buffer by reference; the loops in the code. */
int mrc__program_has_memory_ops(const mrc_program_t *p);
int mrc__program_uses_window(const mrc_program_t *p);
int mrc__program_exposes_by_ref(const mrc_program_t *p);
int mrc__program_loops(const mrc_program_t *p);

/* Whether direct1, direct2, tree or hier applies to the collective for a
 * group of n (MRC_OK), else MRC_ERR_UNSUPPORTED with the reason. */
mrc_status_t mrc__direct_applies(const mrc_compile_config_t *cfg, int n);

/* Elements of a node's window (and of the whole vector that offsets in
 * it refer to): count, or N x count for reduce-scatter and allgather. */
uint64_t mrc__window_elems(mrc_collective_t c, uint64_t count, int n);

/* 1 if the symbolic proof (check_symbolic.c) applies to the program's
 * code: a ring code every node runs alike. */
int mrc__symbolic_applies(const mrc_program_t *p);

/* The hosts a hier program's groups are split over (1 for every other
 * family). */
int mrc__program_hosts(const mrc_program_t *p);

/* ---- expansion: one node's operations ---------------------------------- */

enum mrc__op_kind {
    MRC__SEND = 1,
    MRC__RECV,
    MRC__COPY,
    MRC__SCALE,
    MRC__EXPOSE,
    MRC__GET,
    MRC__SIGNAL,
    MRC__WAIT,
    MRC__BARRIER,
    MRC__FWD /* a relay of a routed hop: receive from
                `from`, send the same to `peer` */
};

typedef struct mrc__op {
    uint8_t kind;
    uint8_t src;   /* SEND, COPY: buffer read */
    uint8_t dst;   /* RECV, COPY, SCALE: buffer written */
    uint8_t local; /* RECV, GET: local operand buffer, NONE for a copy */
    uint8_t flag;  /* SIGNAL, WAIT, BARRIER: the flag */
    uint8_t ref;   /* EXPOSE: by reference (src: the buffer exposed) */
    /* Fragments frag .. frag + frags - 1 (0: one; hier by places, whose
     * hosts are at most MRC_TOPO_MAX_NODES; in the padding before peer,
     * so that a plan's operations stay 80 bytes). */
    uint16_t frags;
    /* SEND: next node; RECV: previous node; GET, WAIT: the peer. GET
     * reads the peer's buffer `src` at src_off (the window for a copy). */
    int32_t peer;
    int32_t port; /* SEND: out-port; RECV: in-port */
    int32_t stream;
    int32_t step; /* global step: loop iterations over the phases */
    int32_t frag; /* fragment number (0 for whole-slice ops) */
    int32_t chunk;
    uint64_t tag; /* (stream, step, chunk): mrc__op_tag */
    /* Element offsets in the buffers (see mrc__buffer_elems) and count. */
    uint64_t src_off, dst_off, local_off, count;
    /* Routed hops: SEND and RECV talk to the first and last relay of the
     * route (peer), which is not the ring's neighbour (ring_peer: the
     * hop's far end, whose chain the simulator matches, as it times the
     * route itself). FWD receives from `from` and sends to `peer`; its
     * ring_peer is the hop's final node. */
    int32_t ring_peer;
    int32_t from;
} mrc__op_t;

/* A node's operations as independent chains, one per (stream, chunk):
 * each chain runs in order; a RECV waits for its data, a SEND does not
 * wait. Chains share nothing but the transport. */
typedef struct mrc__plan {
    int node;
    int num_chains;
    int32_t *chain_off; /* [num_chains + 1] into ops */
    int num_ops;
    mrc__op_t *ops;
    int in_place; /* the executor's alias of send and recv buffers */
} mrc__plan_t;

/* A message's tag, unique on its link: the stream and the step in 20 bits
 * each, the chunk in 24. */
static inline uint64_t mrc__op_tag(int stream, int step, int chunk)
{
    return ((uint64_t)stream << 44) | ((uint64_t)step << 24) | (uint64_t)chunk;
}

static inline int mrc__tag_step(uint64_t tag)
{
    return (int)(tag >> 24 & 0xfffff);
}

/* Lazy expansion, one chain at a time (the checker and the simulator walk
 * programs of many thousands of nodes without holding every operation). */
typedef struct mrc__chain_iter {
    const mrc_program_t *p;
    const mrc__node_stream_t *ns;
    int node, rank, k, n;
    uint64_t off, len, q, r; /* len = q * n + r */
    int chunk, chunks;
    uint8_t in_place;
    uint8_t memory; /* the program has memory-semantic instructions */
    int pc, s, step, loop_pc, rel;
    int at;                 /* the node that runs the chain */
    int send_to, recv_from; /* first and last relay of the hops */
    /* A relay chain (relay > 0): the sends of `node`'s chain, forwarded
     * by `at`, the relay at place relay_idx of route relay - 1. */
    int relay, relay_idx;
    /* An EXPOSE of every fragment but its own is two ops (the fragments
     * before it, then after it): 1 once the first is out. */
    int half;
} mrc__chain_iter_t;

void mrc__chain_begin(mrc__chain_iter_t *it, const mrc_program_t *p, int node,
                      int k, int chunk, int chunks, int in_place);
/* The chain's next op: 1 and *op, 0 at the end, -1 on an error (*st). */
int mrc__chain_next(mrc__chain_iter_t *it, mrc__op_t *op, mrc_status_t *st);
/* A relay of a routed hop: node `at` (recorded by its index) relays the
 * hop of `src` in `stream`, at place `index` (1 .. len - 2) of `route`. */
typedef struct mrc__relay {
    int32_t stream, src, route, index;
} mrc__relay_t;

/* The relays of every node: node u's are list[first[u] .. first[u + 1]).
 * The caller frees both. Refuses a route that leaves the program's
 * nodes (a damaged image). */
mrc_status_t mrc__relay_index(const mrc_program_t *p, int32_t **first,
                              mrc__relay_t **list);
/* A relay chain: node `at` forwards, chunk by chunk, every message that
 * r->src sends on its hop of r->stream, as FWD ops. */
void mrc__relay_begin(mrc__chain_iter_t *it, const mrc_program_t *p, int at,
                      const mrc__relay_t *r, int chunk, int chunks);
/* Upper bounds of the relay chains and their operations at `node` (see
 * mrc__plan_bound). */
void mrc__relay_bound(const mrc_program_t *p, int node, uint64_t chunk_elems,
                      uint64_t *chains, uint64_t *ops);

/* A chain with one op of lookahead, for the walks that must see the next
 * op before taking it (the checkers, the port mask, the simulator). */
typedef struct mrc__cursor {
    mrc__chain_iter_t it;
    mrc__op_t op;
    int has_op, done;
} mrc__cursor_t;

/* Starts a cursor on a chain (see mrc__chain_begin), or on a relay chain
 * (see mrc__relay_begin), holding no op. */
void mrc__cursor_begin(mrc__cursor_t *c, const mrc_program_t *p, int node,
                       int k, int chunk, int chunks, int in_place);
void mrc__cursor_begin_relay(mrc__cursor_t *c, const mrc_program_t *p, int at,
                             const mrc__relay_t *r, int chunk, int chunks);

/* The op the cursor is at, read from its chain if none is held: 1 (in
 * c->op; mrc__cursor_take takes it), 0 at the chain's end (c->done set),
 * -1 on an error (*st). */
int mrc__cursor_peek(mrc__cursor_t *c, mrc_status_t *st);

/* The op c->op is done: the next peek reads the chain's next one. */
static inline void mrc__cursor_take(mrc__cursor_t *c)
{
    c->has_op = 0;
}

/* Chunks of stream k for a chunk size (0 if the stream carries nothing). */
int mrc__stream_chunks(const mrc_program_t *p, int k, uint64_t chunk_elems);

/* Expands node's program. `chunk_elems` overrides the program's chunking
 * (the checker uses whole fragments); 0 keeps it. `in_place` drops the
 * copies that in-place buffers make unnecessary. */
mrc_status_t mrc__plan_build(const mrc_program_t *p, int node,
                             uint64_t chunk_elems, int in_place,
                             mrc__plan_t *plan);
void mrc__plan_free(mrc__plan_t *plan);

/* Upper bounds, before expanding anything, of the chains and operations
 * of a node of `group` for a chunk size (0: the program's): every
 * instruction run once per loop iteration, in every chunk of every stream
 * of the group. The executor and the simulator size their memory from
 * these and refuse what would not fit. */
void mrc__plan_bound(const mrc_program_t *p, int group, uint64_t chunk_elems,
                     uint64_t *chains, uint64_t *ops);
/* The operations one chain of a node in a group of n runs, at most. */
uint64_t mrc__chain_ops_bound(const mrc_program_t *p, int n);

/* Elements of each buffer of a node: SEND and RECV as the C API defines
 * them for the collective, SCRATCH as the executor must provide. */
void mrc__buffer_elems(const mrc_program_t *p, int node, uint64_t *send,
                       uint64_t *recv, uint64_t *scratch);

/* Chunk size in elements for the program's dtype and chunk bytes. */
uint64_t mrc__chunk_elems(const mrc_program_t *p);

/* Group size of stream k, and the node at position pos of stream k. */
int mrc__stream_size(const mrc_program_t *p, int k);
int mrc__stream_node(const mrc_program_t *p, int k, int pos);

/* The entry of node u for stream k (k must be a stream of u's group). */
const mrc__node_stream_t *mrc__node_stream(const mrc_program_t *p, int u,
                                           int k);

/* The ports each node uses in the program (as sender, receiver or on a
 * forwarded route): active[u] is filled with a 0/1 byte per port of u,
 * laid out from port_first[u]; port_first has num_nodes + 1 entries. */
mrc_status_t mrc__active_ports(const mrc_program_t *p, int32_t **port_first,
                               uint8_t **active);

/* Messages in flight by (sender, receiver, tag), for the checker and the
 * simulator: a chained hash over a pool. Links returned by find point at
 * the slot that holds the entry's index (-1 when absent); they stay valid
 * until the next add. */
typedef struct mrc__msg {
    int32_t src, dst;
    uint64_t tag;
    uint64_t w[3]; /* the user's payload */
    int32_t i[3];
    int32_t next;
} mrc__msg_t;

typedef struct mrc__msgmap {
    int32_t *bucket;
    size_t cap;
    mrc__msg_t *pool;
    int32_t num, alloc, free_head;
    size_t live;
} mrc__msgmap_t;

int mrc__msgmap_init(mrc__msgmap_t *m, size_t expected);
void mrc__msgmap_free(mrc__msgmap_t *m);
int32_t *mrc__msgmap_find(mrc__msgmap_t *m, int src, int dst, uint64_t tag);
mrc__msg_t *mrc__msgmap_add(mrc__msgmap_t *m, int src, int dst, uint64_t tag);
void mrc__msgmap_remove(mrc__msgmap_t *m, int32_t *link);

/* What an image records besides the program (version 4): where it came
 * from, so that `mrc run --load` and `mrc sim --load` run and time the
 * image itself on the same links. Any text may be NULL (an image saved
 * by mrc_program_save carries none); efficiency is -1 when unknown. */
typedef struct mrc__image_origin {
    /* The topology: a generator spec when it regenerates the very
     * links (short, at any size), else the file format (JSON, "{"...). */
    char *topology;
    char *strategy;    /* the rings' strategy, as the embedding names it */
    char *source;      /* the SPEC it was compiled from */
    double efficiency; /* the embedding's (mrc rings), or -1 */
} mrc__image_origin_t;

/* mrc_program_save and mrc_program_load with the origin (NULL: none on
 * saving, ignored on loading; the caller frees what load fills in). */
mrc_status_t mrc__program_save_origin(const mrc_program_t *p,
                                      const mrc__image_origin_t *origin,
                                      void **image, size_t *len);
mrc_status_t mrc__program_load_origin(const void *image, size_t len,
                                      mrc_program_t **out,
                                      mrc__image_origin_t *origin);
void mrc__image_origin_free(mrc__image_origin_t *o);
/* The origin's text of a topology (see topology above); free(). */
mrc_status_t mrc__image_topology_text(const mrc_topo_t *t, char **text);
/* The topology an image's origin carries, checked against the program
 * (nodes, ports, routes along links); a clear error if there is none. */
mrc_status_t mrc__image_topology(const mrc_program_t *p,
                                 const mrc__image_origin_t *o,
                                 mrc_topo_t **out);

/* One node's local program (listing.c): the shared code with the node's
 * table values substituted, as text or (json) one JSON object;
 * mrc_free(). O(code + the node's tables), whatever the node count. */
mrc_status_t mrc__program_node_listing(const mrc_program_t *p, int node,
                                       int json, char **text);

#endif /* MRC_PROGRAM_PLAN_H */
