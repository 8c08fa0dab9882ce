/*
 * The words both listings use (listing.c: the shared code; listing_node.c:
 * one node's local program): buffer and operation names, and the
 * memory-semantic instructions, worded alike in both.
 */
#ifndef MRC_PROGRAM_LISTING_H
#define MRC_PROGRAM_LISTING_H

#include "program_internal.h"

/* "sendbuf", "recvbuf", ... for an enum mrc__buffer. */
const char *mrc__listing_buf(int b);
/* "send", "recv", ... for an enum mrc__op_kind. */
const char *mrc__listing_op_kind(int kind);
/* " from node P" (a per-thread buffer: one use per printf). */
const char *mrc__listing_from_node(int peer);
/* A tree predicate's qualifier (enum mrc__tree_before): ", first in" for
 * a node that has received nothing at an earlier step, ", after one in"
 * for one that has, or "". */
const char *mrc__listing_tree_before(const mrc__insn_t *in);

/* How an instruction's fragment and peer are written: as expressions
 * (the shared code) or with one node's values (its local program). */
typedef struct mrc__listing_operands {
    void (*frag)(mrc__strbuf_t *sb, const mrc__insn_t *in, const void *ctx);
    void (*peer)(mrc__strbuf_t *sb, const mrc__insn_t *in, const void *ctx);
    const void *ctx;
} mrc__listing_operands_t;

/* The memory-semantic instructions, worded alike in both listings;
 * 0 if `in` is not one. */
int mrc__listing_memory_insn(mrc__strbuf_t *sb, const mrc_program_t *p,
                             const mrc__insn_t *in,
                             const mrc__listing_operands_t *o);

#endif /* MRC_PROGRAM_LISTING_H */
