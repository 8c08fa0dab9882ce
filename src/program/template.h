/*
 * The short names the families' instruction tables are written with
 * (compile.c: the rings; direct.c: direct1, direct2; tree.c; hier.c),
 * each instruction a designated initialiser of mrc__insn_t in which a
 * field left out is 0: no predicate (every node runs it), no buffer, no
 * flag, fragment 0, the group's view.
 *
 *   {.op = SEND, .frag_pos = 1, .frag_step = -1, .buf_a = SB, .buf_b = RB}
 *
 * is "send fragment (pos - s) mod N from sendbuf at s = 0, from recvbuf
 * later". Included only by those four files.
 */
#ifndef MRC_PROGRAM_TEMPLATE_H
#define MRC_PROGRAM_TEMPLATE_H

#include "program_internal.h"

enum {
    /* opcodes */
    LOOP = MRC__OP_LOOP,
    END = MRC__OP_END,
    SEND = MRC__OP_SEND,
    RECV = MRC__OP_RECV,
    COPY = MRC__OP_COPY,
    SCALE = MRC__OP_SCALE,
    PORTS = MRC__OP_PORTS,
    EXPOSE = MRC__OP_EXPOSE,
    GET = MRC__OP_GET,
    SIGNAL = MRC__OP_SIGNAL,
    WAIT = MRC__OP_WAIT,
    BARRIER = MRC__OP_BARRIER,
    /* predicates (.pred_lo, .pred_hi: a negative bound is N + bound) */
    EQ = MRC__PRED_REL_EQ,
    IN = MRC__PRED_REL_IN,
    ALONE = MRC__PRED_ALONE,
    CHILD = MRC__PRED_TREE_CHILD,
    PARENT = MRC__PRED_TREE_PARENT,
    /* buffers */
    SB = MRC__BUF_SEND,
    RB = MRC__BUF_RECV,
    XB = MRC__BUF_SCRATCH,
    WB = MRC__BUF_WINDOW,
    NB = MRC__BUF_NONE,
    /* flags */
    W = MRC__INSN_WHOLE,
    REF = MRC__INSN_REF,
    ALL = MRC__INSN_ALL,
    ACC = MRC__INSN_ACC,
    LOG = MRC__INSN_LOG,
    REV = MRC__INSN_REV,
    POW = MRC__INSN_POW,
    OTHERS = MRC__INSN_OTHERS,
    /* views (hier) */
    H = MRC__VIEW_HOST,
    L = MRC__VIEW_LEADERS,
    P = MRC__VIEW_PLACE,
};

/* The peer of a get or a wait, at position root + (peer_pos * rel +
 * peer_step * s + peer_const) mod N: round the ranks from the next one
 * (pos + s + 1), rank s, the root. */
#define NEXT_S .peer_pos = 1, .peer_step = 1, .peer_const = 1
#define RANK_S .peer_pos = 0, .peer_step = 1, .peer_const = 0
#define ROOT   .peer_pos = 0, .peer_step = 0, .peer_const = 0

/* The predicate of every node but the root (rel = 1 .. N - 1). */
#define NOT_ROOT .pred = IN, .pred_lo = 1, .pred_hi = -1

#endif /* MRC_PROGRAM_TEMPLATE_H */
