/*
 * The tree family: binomial trees, for latency at larger groups. Reduce is
 * a binomial tree into the root (at step t a node with rel mod 2^(t+1) =
 * 2^t sends its partial sum to rel - 2^t, which adds it to its own);
 * broadcast the same tree walked from the root outwards (t from the top
 * down); allreduce is the reduce into rank 0 followed by the broadcast, so
 * every node ends with the root's bits. 2 ceil(log2 N) steps against the
 * rings' 2 (N - 1): fewer, larger messages, and chunks pipeline each edge.
 *
 * Why binomial and not recursive doubling: the tree moves the data over
 * each edge once per phase whatever N is (recursive doubling needs extra
 * steps when N is not a power of two), it gives every rank the same bits
 * (one reduction order, at the root), and it is the same code for reduce,
 * broadcast and allreduce.
 *
 * Accepts: any group (1 node included), any count, every dtype and op;
 * sends and receives only, so every transport runs it (MPI across hosts
 * included). Does not apply to reduce-scatter and allgather (each node
 * needs a different part: the rings or direct1 do that).
 * Limits: the tree ignores the links: its sends go wherever the peer is
 * (no ports; the simulator routes them by shortest path).
 */
#include "program_internal.h"

enum { ALW = MRC__PRED_ALWAYS, EQ = MRC__PRED_REL_EQ, IN = MRC__PRED_REL_IN,
       CHILD = MRC__PRED_TREE_CHILD, PARENT = MRC__PRED_TREE_PARENT,
       SB = MRC__BUF_SEND, RB = MRC__BUF_RECV, XB = MRC__BUF_SCRATCH,
       NB = MRC__BUF_NONE, W = MRC__INSN_WHOLE, LOG = MRC__INSN_LOG,
       REV = MRC__INSN_REV, POW = MRC__INSN_POW };

/* pred_lo: as the predicate says; REL_IN always runs to N - 1. */
#define OP(o, pr, lo, a, b, l, fl, pc)                                       \
    {.op = (o), .pred = (pr), .pred_lo = (lo), .pred_hi = -1, .buf_a = (a), \
     .buf_b = (b), .local = (l), .flags = (fl), .peer_const = (pc)}
#define LOOP_LOG {.op = MRC__OP_LOOP, .flags = LOG}
#define END {.op = MRC__OP_END}

/* Partial sums in recvbuf at the root, scratch elsewhere. */
static const mrc__insn_t tree_reduce[] = {
    OP(MRC__OP_COPY, EQ, 0, SB, RB, NB, W, 0),
    OP(MRC__OP_COPY, IN, 1, SB, XB, NB, W, 0),
    LOOP_LOG,
    OP(MRC__OP_RECV, PARENT, 1, RB, RB, RB, W | POW, 1),
    OP(MRC__OP_RECV, PARENT, 2, XB, XB, XB, W | POW, 1),
    OP(MRC__OP_SEND, CHILD, 0, XB, XB, NB, W | POW, -1),
    END,
    OP(MRC__OP_SCALE, EQ, 0, NB, RB, NB, W, 0),
};

static const mrc__insn_t tree_broadcast[] = {
    OP(MRC__OP_COPY, EQ, 0, SB, RB, NB, W, 0),
    LOOP_LOG,
    OP(MRC__OP_RECV, CHILD, 0, RB, RB, NB, W | POW | REV, -1),
    OP(MRC__OP_SEND, PARENT, 0, RB, RB, NB, W | POW | REV, 1),
    END,
};

static const mrc__insn_t tree_allreduce[] = {
    OP(MRC__OP_COPY, ALW, 0, SB, RB, NB, W, 0),
    LOOP_LOG,
    OP(MRC__OP_RECV, PARENT, 0, RB, RB, RB, W | POW, 1),
    OP(MRC__OP_SEND, CHILD, 0, RB, RB, NB, W | POW, -1),
    END,
    OP(MRC__OP_SCALE, EQ, 0, NB, RB, NB, W, 0),
    LOOP_LOG,
    OP(MRC__OP_RECV, CHILD, 0, RB, RB, NB, W | POW | REV, -1),
    OP(MRC__OP_SEND, PARENT, 0, RB, RB, NB, W | POW | REV, 1),
    END,
};

#undef OP
#undef LOOP_LOG
#undef END

mrc_status_t mrc__tree_code(const mrc_compile_config_t *cfg,
                            const mrc__insn_t **code, int *len)
{
#define SET(c)                                                               \
    do {                                                                     \
        *code = c;                                                           \
        *len = (int)(sizeof c / sizeof c[0]);                                \
    } while (0)
    switch (cfg->collective) {
    case MRC_ALLREDUCE: SET(tree_allreduce); return MRC_OK;
    case MRC_REDUCE: SET(tree_reduce); return MRC_OK;
    case MRC_BROADCAST: SET(tree_broadcast); return MRC_OK;
    default:
        return mrc__error(MRC_ERR_UNSUPPORTED,
                          "tree does not apply to %s (each node needs a "
                          "different part: use rings or direct1)",
                          mrc_collective_name(cfg->collective));
    }
#undef SET
}
