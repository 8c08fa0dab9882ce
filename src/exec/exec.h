/*
 * The executor: one node's expanded program run over a transport, as a
 * non-blocking state machine. Each chain (stream x chunk) has a cursor; a
 * pass over the chains posts what can be posted, completes what has
 * arrived, and never waits. The caller's loop repeats passes until the
 * collective is done or the timeout expires.
 */
#ifndef MRC_EXEC_H
#define MRC_EXEC_H

#include "program/plan.h"
#include "transport/transport.h"

typedef struct mrc__exec {
    const mrc_program_t *program;
    mrc__plan_t plan;
    mrc__call_t call;   /* what the ranks agree on, the family's included */
    mrc__xfer_t *xfers; /* [num_ops]: one per op (sends and receives) */
    mrc__xfer_t *recvs; /* the receives, announced to the transport */
    int32_t *recv_of;   /* [num_ops]: index into recvs, or -1 */
    int32_t *send_list; /* op indices of the sends */
    int32_t *cursor;    /* [num_chains] */
    size_t num_recvs, num_sends;
    size_t elem;
    int group_size;
    int spin_looks; /* a straight plan's looks before it yields the core */
    /* The run asks the transport whether every peer called alike before
     * it ends (a reduce or broadcast by messages: a rank need not hear
     * from every peer, and ranks that disagree must all fail). */
    int agree;
    const int32_t *members; /* [group_size]: the group's ranks */
    int nontemporal;        /* large outputs: final writes bypass the cache */
    /* The communicator's threshold (mrc__exec_prepare): a get's block
     * that reduces is written around the caches from the larger of it
     * and the gets' own 16 MiB (memory_ops.c), never at UINT64_MAX. */
    uint64_t stream_bytes;

    /* Staging: a partial sum that a chain receives only to send it on
     * (and that is overwritten or never output afterwards) goes through a
     * small slot that stays in cache instead of the caller's buffer. Slots
     * are reused by a window of chains per stream: at most `window` chains
     * of a stream run at once. */
    int32_t *stage_of;  /* [num_ops]: slot of a staged RECV/SEND, or -1 */
    int32_t *slot_user; /* [num_slots]: the SEND reading it, or -1 */
    char *staging;
    size_t slot_bytes;
    int num_slots, window;
    int32_t *chain_rank;  /* [num_chains]: index among its stream's chains */
    int32_t *chain_group; /* [num_chains]: dense index of its stream */
    int32_t *first_open;  /* per stream: lowest chain not yet complete */
    uint8_t *complete;    /* [num_chains] */
    int num_stream_ids;

    /* Memory programs: what the call exposes, and this call's window. */
    int memory;
    /* The plan is one chain of local and memory ops (no sends, receives
     * or relays), as the direct families' plans are: run straight through
     * (run_chain), without the bookkeeping of chains and sends. */
    int straight;
    /* A straight plan's gets' transfers are filled for these buffers
     * (sendbuf, recvbuf, scratch): a call on the same ones reuses them.
     * xfers_clean: every transfer's state was cleared as its op ended
     * (a call that failed leaves them to be cleared at the next one).
     * first_use: the first op that uses a transfer (num_ops: none). */
    int gets_filled, xfers_clean, first_use;
    const void *filled_buf[3];
    /* [num_ops], a straight plan's (else NULL): where a get of this
     * node's own window reads, when the expose that copied those elements
     * there read them from a buffer nothing wrote since (buf, at element
     * off); MRC__BUF_NONE: the window itself. The same bits, read from
     * lines no peer is pulling at that moment. */
    struct mrc__own_read {
        uint64_t off;
        uint8_t buf;
    } * own_read;
    mrc__exposure_t exposure;
    int by_ref;               /* the program exposes buffers by reference */
    const void *published_on; /* the transport's ops at the last publish */
    char *win;                /* this call's window (from the transport) */
    /* Relays (FWD ops: this node forwards another node's routed hop).
     * Each receives into one of its chain's two slots of relay memory
     * and sends from it; the slot is taken again only once the send
     * before from it is done. Relay chains are outside the windows. */
    int32_t *fwd_of;        /* [num_ops]: index into fwd_*, or -1 */
    mrc__xfer_t *fwd_sends; /* [num_fwds]: the forwarding send */
    uint64_t *fwd_at;       /* [num_fwds]: byte offset of its slot */
    int32_t *fwd_prev;      /* [num_fwds]: the FWD that last used the slot,
                               or -1 */
    uint8_t *relay_chain;   /* [num_chains]: 1 for a relay chain */
    char *relay_mem;
    size_t num_fwds, relay_bytes;

    /* The port mask handed to the transport: the phase reached so far
     * ends before step ports_until; idle_ports holds the node's mask. */
    int ports_until;
    uint8_t *idle_ports;

    /* A small call's buffers, fetched as it starts when they are not the
     * last call's (bytes; 0: a large call): a new buffer's misses then
     * overlap the wait for peers. */
    size_t warm_send, warm_recv;
    const void *warm_last[2]; /* the last call's sendbuf and recvbuf */
} mrc__exec_t;

/* Expands the program for `node` (in_place: send and receive buffers are
 * one, as the C API defines it per collective) and takes all the memory
 * the runs will need; refuses it first if `ranks_here` such plans (the
 * ranks of this process: all of them over threads) would not fit in the
 * memory limit. Its copies and reductions write around the caches when
 * its receive buffer is at least stream_bytes (the communicator's
 * threshold: mrc_config_t.stream_bytes). */
mrc_status_t mrc__exec_prepare(mrc__exec_t *x, const mrc_program_t *p, int node,
                               int in_place, int ranks_here,
                               uint64_t stream_bytes);
void mrc__exec_release(mrc__exec_t *x);

/* Runs the collective once: call number `seq` of the communicator. The
 * ranks compare `call` (NULL: the program's own call) before any touches
 * a peer's buffers: a caller that runs one call as another (avg on
 * integers, as a sum of wider words) gives the call it was asked for. */
mrc_status_t mrc__exec_run(mrc__exec_t *x, const mrc__transport_t *t,
                           const mrc__call_t *call, uint64_t seq,
                           const void *sendbuf, void *recvbuf, void *scratch,
                           double timeout_s);

#endif /* MRC_EXEC_H */
