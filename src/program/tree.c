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
 *
 * reduce into rel 0, N = 6 (a -> b: a sends its partial sum to b, which
 * adds it to its own; ceil(log2 6) = 3 steps):
 *
 *   t = 0:   1 -> 0    3 -> 2    5 -> 4
 *   t = 1:   2 -> 0              (4 has no partner: 4 + 2 = 6 >= N)
 *   t = 2:   4 -> 0
 *
 * broadcast runs the same edges the other way, t = 2, 1, 0; allreduce is
 * the reduce into rank 0, then the broadcast from it.
 */
#include "program_internal.h"
#include "template.h"

/* Sends and receives of the reduce, by what the node received at an
 * earlier step (.pred_hi, enum mrc__tree_before): a leaf sends its own
 * input, a parent's first receive reduces into its input, so that no
 * node copies its input first (a 64 KiB reduce at P = 2 on shm: the
 * leaf's copy made its lines the other core's to read through the
 * kernel). The root sums into recvbuf, the others into scratch. Other
 * predicates' .pred_hi = -1: REL_IN runs to N - 1, the rest ignore it. */
enum { FIRST_IN = MRC__TREE_NONE_IN, LATER_IN = MRC__TREE_SOME_IN };

/* A parent's receive (lo: 1 the root, 2 the others; when: its first or
 * a later one) into acc, reduced with `with`; a child's send of buf. */
/* clang-format off */
#define TREE_IN(lo, when, acc, with)                                           \
    {.op = RECV, .pred = PARENT, .pred_lo = lo, .pred_hi = when,               \
     .buf_a = acc, .buf_b = acc, .local = with, .flags = W | POW,              \
     .peer_const = 1}
#define TREE_OUT(when, buf)                                                    \
    {.op = SEND, .pred = CHILD, .pred_hi = when, .buf_a = buf, .buf_b = buf,   \
     .flags = W | POW, .peer_const = -1}
/* clang-format on */

static const mrc__insn_t tree_reduce[] = {
    {.op = COPY, .pred = ALONE, .buf_a = SB, .buf_b = RB, .flags = W},
    {.op = LOOP, .flags = LOG},
    TREE_IN(1, FIRST_IN, RB, SB),
    TREE_IN(1, LATER_IN, RB, RB),
    TREE_IN(2, FIRST_IN, XB, SB),
    TREE_IN(2, LATER_IN, XB, XB),
    TREE_OUT(FIRST_IN, SB),
    TREE_OUT(LATER_IN, XB),
    {.op = END},
    {.op = SCALE, .pred = EQ, .pred_hi = -1, .buf_b = RB, .flags = W},
};

static const mrc__insn_t tree_broadcast[] = {
    {.op = COPY,
     .pred = EQ,
     .pred_hi = -1,
     .buf_a = SB,
     .buf_b = RB,
     .flags = W},
    {.op = LOOP, .flags = LOG},
    {.op = RECV,
     .pred = CHILD,
     .pred_hi = -1,
     .buf_a = RB,
     .buf_b = RB,
     .flags = W | POW | REV,
     .peer_const = -1},
    {.op = SEND,
     .pred = PARENT,
     .pred_hi = -1,
     .buf_a = RB,
     .buf_b = RB,
     .flags = W | POW | REV,
     .peer_const = 1},
    {.op = END},
};

static const mrc__insn_t tree_allreduce[] = {
    {.op = COPY, .pred = ALONE, .buf_a = SB, .buf_b = RB, .flags = W},
    {.op = LOOP, .flags = LOG},
    TREE_IN(0, FIRST_IN, RB, SB),
    TREE_IN(0, LATER_IN, RB, RB),
    TREE_OUT(FIRST_IN, SB),
    TREE_OUT(LATER_IN, RB),
    {.op = END},
    {.op = SCALE, .pred = EQ, .pred_hi = -1, .buf_b = RB, .flags = W},
    {.op = LOOP, .flags = LOG},
    {.op = RECV,
     .pred = CHILD,
     .pred_hi = -1,
     .buf_a = RB,
     .buf_b = RB,
     .flags = W | POW | REV,
     .peer_const = -1},
    {.op = SEND,
     .pred = PARENT,
     .pred_hi = -1,
     .buf_a = RB,
     .buf_b = RB,
     .flags = W | POW | REV,
     .peer_const = 1},
    {.op = END},
};

mrc_status_t mrc__tree_code(const mrc_compile_config_t *cfg,
                            const mrc__insn_t **code, int *len)
{
#define SET(c)                                                                 \
    do {                                                                       \
        *code = c;                                                             \
        *len = (int)(sizeof c / sizeof c[0]);                                  \
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
