/*
 * The state of the checker of memory programs (check_memory.c runs the
 * program, check_memory_end.c proves what it left): each node's clock,
 * flags, exposures and buffer regions, the peers' reads of each region,
 * and the messages in flight.
 */
#ifndef MRC_PROGRAM_CHECK_MEMORY_H
#define MRC_PROGRAM_CHECK_MEMORY_H

#include "program_internal.h"

enum {
    MRC__MEM_MAX_GROUP = 512,
    MRC__MEM_FLAGS = 32,
    MRC__MEM_BARRIER_FLAG = 16,
    MRC__MEM_NUM_BUFS = MRC__BUF_WINDOW + 1
};

/* A peer's read of a region: by a GET, or (msg >= 0) by a message sent
 * from it, which the transport may read until the receiver has it (idx
 * INT32_MAX until then). */
typedef struct mrc__mem_read {
    int32_t reader, idx, next, msg;
} mrc__mem_read_t;

typedef struct mrc__mem_region {
    uint64_t sig, count; /* the contributions it holds */
    int32_t last_w;      /* the owner's op index of its last write, or -1 */
    int32_t reads;       /* peers' reads since: into the read pool */
} mrc__mem_region_t;

typedef struct mrc__mem_node {
    mrc__cursor_t cur;
    int arrived;
    int32_t idx; /* ops run */
    int32_t *vc; /* [group size]: ops of each rank known to be done */
    int32_t *sig[MRC__MEM_FLAGS]; /* the clock at each flag's signal, or NULL */
    int32_t exposed[MRC__MEM_NUM_BUFS]; /* op index of an EXPOSE by reference */
    mrc__mem_region_t *regions;         /* [MRC__MEM_NUM_BUFS][frags] */
} mrc__mem_node_t;

/* A message in flight (hier's leaders): what it carries and the
 * sender's clock when it sent it. */
typedef struct mrc__mem_msg {
    int32_t src, dst, frag, taken;
    int32_t read; /* its read record on the sender's region */
    uint64_t tag;
    mrc__mem_region_t data;
    int32_t *vc;
} mrc__mem_msg_t;

typedef struct mrc__mem_check {
    const mrc_program_t *p;
    int in_place;
    mrc__mem_node_t *nodes;
    mrc__mem_read_t *pool;
    int num_reads, cap_reads;
    mrc__mem_msg_t *msgs;
    int num_msgs, cap_msgs;
} mrc__mem_check_t;

static inline int mrc__mem_frags(const mrc_program_t *p, int n)
{
    return p->addressing == MRC__ADDR_WHOLE ? 1 : mrc__frag_space(p, n);
}

/* Send and receive buffers are one in place: a region of SEND is the
 * region of RECV with the same fragment (the offsets agree in every
 * collective's in-place form). */
static inline int mrc__mem_canon(const mrc__mem_check_t *c, int buf)
{
    return c->in_place && buf == MRC__BUF_SEND ? MRC__BUF_RECV : buf;
}

static inline mrc__mem_region_t *mrc__mem_region(mrc__mem_check_t *c, int u,
                                                 int buf, int f)
{
    const mrc_program_t *p = c->p;
    int n = p->groups[p->nodes[u].group].size;
    return &c->nodes[u].regions[(size_t)mrc__mem_canon(c, buf) *
                                    (size_t)mrc__mem_frags(p, n) +
                                (size_t)f];
}

static inline int mrc__mem_rank(const mrc__mem_check_t *c, int u)
{
    return c->p->nodes[u].rank;
}

/* At the end of a run: no message left, no peer still reading a node's
 * buffers when it may leave, and every output region holding one
 * contribution of each node it should. */
mrc_status_t mrc__check_memory_end(mrc__mem_check_t *c);

#endif /* MRC_PROGRAM_CHECK_MEMORY_H */
