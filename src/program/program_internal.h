/*
 * Inside the program module: the instruction format (opcodes, predicates,
 * instructions, views), the families' code, and the module's own pieces
 * (compiler, checkers, image, listing). What the consumers use (the
 * tables, the expansion, the plan) is in plan.h, which this includes;
 * no file outside src/program includes this one (its unit tests may).
 */
#ifndef MRC_PROGRAM_INTERNAL_H
#define MRC_PROGRAM_INTERNAL_H

#include <stdint.h>

#include "common/common.h"
#include "mrc/program.h"
#include "plan.h"

/* ---- instructions (shared by every node) ------------------------------ */

enum mrc__opcode {
    MRC__OP_LOOP = 1, /* repeat the body up to OP_END N-1 times, s = 0.. */
    MRC__OP_END,
    MRC__OP_SEND,  /* fragment from buffer to the next node of the ring */
    MRC__OP_RECV,  /* fragment from the previous node: copy, or reduce */
    MRC__OP_COPY,  /* local copy of a fragment between buffers */
    MRC__OP_SCALE, /* avg: divide a fragment by the group's size */
    MRC__OP_PORTS, /* a phase starts: switch off this node's idle ports */
    /* Memory semantics (the direct families; one chain per node):
     * EXPOSE  buf_a's region made readable by the group: by copy into the
     *         node's window at the same element offsets (flags & REF
     *         clear: the copy stays readable to the end of the call, and
     *         the owner may overwrite buf_a at once), or by reference
     *         (REF: peers read buf_a itself, so the owner writes it only
     *         after the readers have said they are done);
     * GET     a peer's region of buf_a (SEND, RECV or WINDOW; the window
     *         is where EXPOSE copied to) into buf_b, reduced with `local`
     *         (at s = 0 or outside a loop; later iterations reduce into
     *         buf_b itself) or copied (local NONE);
     * SIGNAL  sets this node's flag `flag` for this call;
     * WAIT    until the peer's flag `flag` is set for this call;
     * BARRIER every node of the group has reached it (flag: its number).
     * The peer is the node at position (peer_pos * pos + peer_step * s +
     * peer_const) mod N of the stream. */
    MRC__OP_EXPOSE,
    MRC__OP_GET,
    MRC__OP_SIGNAL,
    MRC__OP_WAIT,
    MRC__OP_BARRIER,
    MRC__NUM_OPCODES
};

/* Which nodes execute an instruction, by rel = (pos - root_pos) mod N;
 * a negative argument means N + arg. */
enum mrc__pred {
    MRC__PRED_ALWAYS,
    MRC__PRED_REL_EQ,
    MRC__PRED_REL_IN,
    MRC__PRED_ALONE, /* only in a group of one node */
    /* The binomial tree at step t (the loop's s, reversed
     * with MRC__INSN_REV): a child that sends this step,
     * rel mod 2^(t+1) = 2^t; a parent that receives,
     * rel mod 2^(t+1) = 0 and rel + 2^t < N (pred_lo 1: the
     * root only, 2: not the root, 0: either). */
    MRC__PRED_TREE_CHILD,
    MRC__PRED_TREE_PARENT
};

/* A tree predicate's pred_hi: whether the node has received at an
 * earlier step of the reduce (mrc__tree_received_before). A child that
 * has not is a leaf and sends its own input; a parent's first receive
 * reduces into its input. Any other value: either. */
enum mrc__tree_before { MRC__TREE_NONE_IN = 1, MRC__TREE_SOME_IN = 2 };

enum mrc__insn_flags {
    MRC__INSN_WHOLE = 1,    /* the whole slice, not a fragment */
    MRC__INSN_REF = 2,      /* EXPOSE by reference, not by copy */
    MRC__INSN_ALL = 4,      /* EXPOSE: every fragment (the whole buffer,
                               blocks of every rank included) */
    MRC__INSN_ACC = 8,      /* GET in a loop: from s = 1 on, reduce into
                               buf_b (at s = 0: with `local`, or copy) */
    MRC__INSN_LOG = 16,     /* LOOP: ceil(log2 N) iterations */
    MRC__INSN_REV = 32,     /* in a loop: t = iterations - 1 - s, not s */
    MRC__INSN_POW = 64,     /* SEND, RECV: to / from the node at position
                               root + rel + peer_const * 2^t, not the ring's
                               next / previous (the binomial tree) */
    MRC__INSN_OTHERS = 128, /* EXPOSE by copy: every fragment but the one
                               frag_* names (the node's own block, which
                               no peer reads): two ops, the fragments
                               before it and after it */
};

typedef struct mrc__insn {
    uint8_t op;
    uint8_t pred;
    int16_t pred_lo, pred_hi; /* REL_EQ: lo; REL_IN: lo..hi */
    /* fragment = (frag_pos * pos + frag_step * s + frag_const) mod N */
    int8_t frag_pos, frag_step;
    int16_t frag_const;
    /* SEND: source at s = 0 / later; RECV: destination at the last step /
     * earlier; COPY: source / destination. */
    uint8_t buf_a, buf_b;
    uint8_t local; /* RECV: local operand of the reduction; NONE: copy */
    uint8_t flags;
    /* The step of a chain's transfer, where there is no loop: step_rel 1
     * gives step = (rel + step_const) mod N, so that the hops of a chain
     * are consecutive steps (the simulator's barriers fall between them);
     * 0 takes the loop count. */
    uint8_t step_rel;
    int16_t step_const;
    /* GET, WAIT: the peer's position (see the opcodes). */
    int8_t peer_pos, peer_step;
    int16_t peer_const;
    uint8_t flag; /* SIGNAL, WAIT, BARRIER: which flag */
    /* LOOP: iterations N - 1 + loop_extra (0: the rings' N - 1). */
    int8_t loop_extra;
    /* Which nodes the instruction sees as its group (the hier family's
     * phases): the whole group, the node's host, or the hosts' leaders;
     * N, pos, rel, fragments, peers and loops are then those of that
     * view (see enum mrc__view). */
    uint8_t view;
} mrc__insn_t;

/* The views of a group split over hosts in equal blocks of L = N / H
 * consecutive positions (host h holds positions h L .. h L + L - 1), as
 * the hier family compiles them; the leader of each host is at place
 * lambda = root_pos mod L of it:
 *   GROUP    the whole group (every other family);
 *   HOST     the node's host: n = L, pos = pos mod L, root at lambda;
 *   LEADERS  the hosts' leaders, in host order: n = H, pos = pos / L,
 *            root at the root's host; a node that is no leader skips
 *            the instruction (and a loop of this view whole).
 * Sends and receives of a view other than GROUP go to the view's next
 * and previous node (no routes: hosts are not on the topology's links). */
enum mrc__view {
    MRC__VIEW_GROUP,
    MRC__VIEW_HOST,
    MRC__VIEW_LEADERS,
    /* the nodes at the node's place of every host, in host
     * order: n = H, pos = pos / L (hier by places) */
    MRC__VIEW_PLACE
};

/* Where a node stands in a view of its group of n (the node at `pos`,
 * the root at `root`): the view's size, the node's position and rel in
 * it, the root's position, where view position q is in the ring (base +
 * q * stride), and whether the node is in the view at all (a leader). */
typedef struct mrc__view_pos {
    int n, pos, rel, root, base, stride;
    int member;
} mrc__view_pos_t;

/* Pure pieces of the expansion, for the listing of one node's program. */
mrc__view_pos_t mrc__view_pos(const mrc_program_t *p, int which, int n, int pos,
                              int root);
/* Whether a ring predicate (not the tree's) holds at rel in a group of n;
 * the iterations of a loop for a group of n. */
int mrc__pred_holds_ring(const mrc__insn_t *in, int rel, int n);
int mrc__loop_iters(const mrc__insn_t *loop, int n);

/* Computes the program's port mask from its messages (replacing any):
 * for a code every node runs alike over slices with no empty fragment,
 * from node 0's steps and every node's routes, in O(nodes x code + steps)
 * at any size; otherwise by walking every message, for programs of up
 * to 2^27 operations. The walk alone, for tests to compare. */
mrc_status_t mrc__port_mask_build(mrc_program_t *p);
mrc_status_t mrc__port_mask_build_walk(mrc_program_t *p);

/* The checker with node `drop`'s relays left out (-1: none): a test's
 * way to prove that a relay that never forwards is caught. */
mrc_status_t mrc__program_check_drop_relays(const mrc_program_t *p, int drop);

/* The families over a group in rank order (direct.c): the program of
 * direct1, direct2 or tree for the embedding's groups, without the
 * checker; MRC_ERR_UNSUPPORTED with the reason when the family does not
 * apply to the collective. */
mrc_status_t mrc__family_build(const mrc_embedding_t *e,
                               const mrc_compile_config_t *cfg, int only,
                               mrc_program_t **out);

/* The tree's code for a collective (tree.c). */
mrc_status_t mrc__tree_code(const mrc_compile_config_t *cfg,
                            const mrc__insn_t **code, int *len);

/* The checker's abstract run (check_run.c) of the groups marked in
 * run[] (node `drop`'s relays left out, -1: none), and its operations and
 * bytes of state, to refuse a run too large before it starts. */
mrc_status_t mrc__check_run(const mrc_program_t *p, int drop,
                            const uint8_t *run);
void mrc__check_run_cost(const mrc_program_t *p, const uint8_t *run,
                         uint64_t *ops, uint64_t *bytes);
/* The checker of such programs (check_memory.c), in place and not. */
mrc_status_t mrc__check_memory_program(const mrc_program_t *p);

/* The symbolic proof of stream k's group size (tables checked apart);
 * MRC_ERR_UNSUPPORTED where it cannot follow the code. */
mrc_status_t mrc__check_symbolic_stream(const mrc_program_t *p, int k);

/* The number of fragments the split addressing cuts a stream into for a
 * group of n (the leaders' count for hier, else n). */
int mrc__frag_space(const mrc_program_t *p, int n);
/* hier by places (MRC__ADDR_CELLS): the first element and the length of
 * fragments first .. first + count - 1 (pieces of one block) of a slice
 * at off of len elements over `places` blocks of `hosts` pieces. */
void mrc__cells_range(uint64_t off, uint64_t len, int places, int hosts,
                      int first, int count, uint64_t *start, uint64_t *out_len);
/* The hier family's code (hier.c), for groups of n on cfg->hosts hosts. */
mrc_status_t mrc__hier_code(const mrc_compile_config_t *cfg, int n,
                            const mrc__insn_t **code, int *len,
                            uint8_t *addressing);

/* The tables of a program read from an image checked against the sizes
 * read (image_check.c): NULL, or what is wrong. */
const char *mrc__image_validate(const mrc_program_t *p);

/* FNV-1a 64 over n bytes: the image checksum. */
uint64_t mrc__fnv1a(const uint8_t *d, size_t n);

/* Allocates a program's arrays from its sizes (code_len, num_nodes,
 * num_groups, num_streams, num_members, num_entries, route_pool_len),
 * `order` ring-order entries and `routes` routes; MRC_ERR_NO_MEMORY
 * (the caller destroys p) if any fails. */
mrc_status_t mrc__program_alloc(mrc_program_t *p, int order, int routes);

/* Frees a program's arrays (used by load on failure). */
void mrc__program_free_arrays(mrc_program_t *p);

#endif /* MRC_PROGRAM_INTERNAL_H */
