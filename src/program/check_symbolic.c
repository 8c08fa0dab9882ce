/*
 * The symbolic proof of a ring code: once per group size, over the index.
 *
 * A ring code whose instructions run on every node alike (predicate
 * ALWAYS, fragments pos + step * s + const, no whole-slice or tree
 * operand) does the same thing at every position, turned by the position:
 * node p's operations are node 0's with every fragment and every node
 * number shifted by p. Given tables that make each stream a ring (the
 * checker's table check: an order visiting every member once, positions,
 * successors and predecessors agreeing with it, hops routed from a node
 * to its successor), the whole run is node 0's run seen at N turns. So it
 * is enough to run node 0 in coordinates relative to itself:
 *
 *   - the message it sends to its successor with a tag is, turned back
 *     by one, the message its predecessor sends it with that tag: a
 *     receive takes the send of the same tag, whose fragment must be the
 *     receive's plus one (the same fragment of the slice, so the same
 *     element count) and whose contributions arrive shifted by one;
 *   - a receive whose tag node 0 has not sent yet would wait on its
 *     predecessor, which waits the same way on its own: a deadlock;
 *   - a tag sent twice, or never received, is an error as in the run.
 *
 * A region's contributions are a run of consecutive positions relative
 * to the node (lo, len): a reduction joins two runs that meet, a copy
 * moves one. Every output fragment must end with the run the collective
 * needs (all N positions; for allgather the fragment's owner alone).
 *
 * Fragments are taken one element long, so that none is empty: an empty
 * fragment's sends and receives are skipped by both ends alike (they
 * agree on the fragment, which the proof checks) and carry nothing an
 * output reads.
 *
 * Accepts: codes without memory-semantic instructions, addressing split
 * or by block, groups of N >= 2; the cost is node 0's operations, O(N x
 * code), and O(N) memory. Limits: a set of contributions that is not one
 * run (a region reduced from pieces that do not meet) is beyond this
 * proof, which then says so (MRC_ERR_UNSUPPORTED) and the checker runs
 * every message instead.
 */
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"
#include "ring_math.h"

/* Contributions of a region: positions lo .. lo + len - 1 (mod N)
 * relative to the node holding it; len 0: none. */
typedef struct run {
    int32_t lo, len;
} run_t;

typedef struct prover {
    const mrc_program_t *p;
    int k, n, node;
    run_t *recv, *scratch; /* [N]: per relative fragment */
    mrc__msgmap_t sent;    /* tag -> w[0] fragment, w[1] lo, w[2] len */
} prover_t;

int mrc__symbolic_applies(const mrc_program_t *p)
{
    if (mrc__program_has_memory_ops(p) ||
        (p->addressing != MRC__ADDR_SPLIT &&
         p->addressing != MRC__ADDR_BLOCK_OWN &&
         p->addressing != MRC__ADDR_BLOCK_POS))
        return 0;
    for (int i = 0; i < p->code_len; i++) {
        const mrc__insn_t *in = &p->code[i];
        if (in->pred == MRC__PRED_ALONE || in->op == MRC__OP_PORTS ||
            in->op == MRC__OP_END)
            continue; /* (ALONE: only in a group of one) */
        if (in->pred != MRC__PRED_ALWAYS || in->view != MRC__VIEW_GROUP ||
            in->step_rel || in->op > MRC__OP_SCALE)
            return 0;
        if (in->op == MRC__OP_LOOP ? in->flags != 0
                                   : in->flags != 0 || in->frag_pos != 1)
            return 0;
    }
    return 1;
}

/* The run a buffer's fragment holds; the send buffer holds the node's
 * own input (position 0). */
static run_t *slot(prover_t *v, int buf, int f)
{
    return buf == MRC__BUF_RECV      ? &v->recv[f]
           : buf == MRC__BUF_SCRATCH ? &v->scratch[f]
                                     : NULL;
}

static run_t get(prover_t *v, int buf, int f)
{
    static const run_t own = {0, 1};
    run_t *r = slot(v, buf, f);
    return r ? *r : own;
}

/* Joins two runs into one, or fails: overlapping (a contribution twice)
 * or not meeting (not one run). */
static int join(run_t a, run_t b, int n, run_t *out)
{
    if (a.len == 0 || b.len == 0) {
        *out = a.len ? a : b;
        return 0;
    }
    if (a.len + b.len > n)
        return -1;
    if (mrc__ring_mod((long)a.lo + a.len, n) == b.lo)
        *out = (run_t){a.lo, a.len + b.len};
    else if (mrc__ring_mod((long)b.lo + b.len, n) == a.lo)
        *out = (run_t){b.lo, a.len + b.len};
    else
        return -1;
    return 0;
}

static mrc_status_t beyond(const prover_t *v, const mrc__op_t *op,
                           const char *why)
{
    return mrc__error(MRC_ERR_UNSUPPORTED,
                      "node %d, stream %d, step %d: %s, beyond the "
                      "symbolic proof",
                      v->node, v->k, op->step, why);
}

static mrc_status_t send_op(prover_t *v, const mrc__op_t *op)
{
    if (*mrc__msgmap_find(&v->sent, 0, 0, op->tag) >= 0)
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "node %d, stream %d, step %d: sends tag %llx to "
                          "node %d twice",
                          v->node, v->k, op->step, (unsigned long long)op->tag,
                          op->ring_peer);
    mrc__msg_t *m = mrc__msgmap_add(&v->sent, 0, 0, op->tag);
    if (!m)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking");
    run_t r = get(v, op->src, op->frag);
    m->w[0] = (uint64_t)op->frag;
    m->w[1] = (uint64_t)r.lo;
    m->w[2] = (uint64_t)r.len;
    m->i[0] = op->step;
    return MRC_OK;
}

/* The predecessor's send of the same tag, turned by one position. */
static mrc_status_t recv_op(prover_t *v, const mrc__op_t *op)
{
    int32_t *link = mrc__msgmap_find(&v->sent, 0, 0, op->tag);
    if (*link < 0)
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "deadlock: node %d, stream %d, step %d waits for "
                          "node %d, which never sends it (tag %llx); every "
                          "node of the ring waits the same way",
                          v->node, v->k, op->step, op->ring_peer,
                          (unsigned long long)op->tag);
    const mrc__msg_t *m = &v->sent.pool[*link];
    int f = mrc__ring_mod((long)m->w[0] - 1, v->n);
    if (f != op->frag)
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "node %d, stream %d, step %d: receives fragment "
                          "%d from node %d, which sends fragment %d",
                          v->node, v->k, op->step, op->frag, op->ring_peer, f);
    run_t in = {mrc__ring_mod((long)m->w[1] - 1, v->n), (int32_t)m->w[2]};
    mrc__msgmap_remove(&v->sent, link);
    if (op->local && join(in, get(v, op->local, op->frag), v->n, &in))
        return beyond(v, op,
                      "a reduction whose contributions are not "
                      "one run of nodes");
    run_t *dst = slot(v, op->dst, op->frag);
    if (!dst)
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "node %d, stream %d, step %d: receives into its "
                          "input",
                          v->node, v->k, op->step);
    *dst = in;
    return MRC_OK;
}

static mrc_status_t step(prover_t *v, const mrc__op_t *op)
{
    switch (op->kind) {
    case MRC__SEND: return send_op(v, op);
    case MRC__RECV: return recv_op(v, op);
    case MRC__COPY: {
        run_t *dst = slot(v, op->dst, op->frag);
        if (dst)
            *dst = get(v, op->src, op->frag);
        return MRC_OK;
    }
    default: return MRC_OK; /* SCALE */
    }
}

/* The run output fragment f (relative) must hold; 0 if not an output. */
static int wanted(const prover_t *v, int f, run_t *want)
{
    switch (v->p->cfg.collective) {
    case MRC_ALLREDUCE: *want = (run_t){0, v->n}; return 1;
    case MRC_REDUCE_SCATTER: /* the block of the node at pos f - 1 */
        *want = (run_t){0, v->n};
        return f == 1;
    case MRC_ALLGATHER: /* fragment f: the input of the node at pos f */
        *want = (run_t){f, 1};
        return 1;
    default: return 0;
    }
}

static int same_set(run_t a, run_t b, int n)
{
    if (a.len != b.len)
        return 0;
    return a.len == 0 || a.len == n || a.lo == b.lo;
}

static mrc_status_t check_outputs(const prover_t *v)
{
    for (int f = 0; f < v->n; f++) {
        run_t want;
        if (!wanted(v, f, &want) || same_set(v->recv[f], want, v->n))
            continue;
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "node %d (rank %d), stream %d, fragment %d: the "
                          "output holds %d contributions where it needs %d"
                          "%s",
                          v->node, v->p->nodes[v->node].rank, v->k, f,
                          v->recv[f].len, want.len,
                          v->recv[f].len == want.len
                              ? " (from other nodes than it should)"
                              : "");
    }
    if (v->sent.live > 0) {
        for (int32_t i = 0; i < v->sent.num; i++) {
            const mrc__msg_t *m = &v->sent.pool[i];
            if (*mrc__msgmap_find((mrc__msgmap_t *)&v->sent, 0, 0, m->tag) == i)
                return mrc__error(
                    MRC_ERR_INVALID_PROGRAM,
                    "node %d, stream %d, step %d: sends to node %d, which "
                    "never receives it",
                    v->node, v->k, m->i[0],
                    mrc__node_stream(v->p, v->node, v->k)->next);
        }
    }
    return MRC_OK;
}

mrc_status_t mrc__check_symbolic_stream(const mrc_program_t *p, int k)
{
    int n = mrc__stream_size(p, k);
    if (n < 2 || !mrc__symbolic_applies(p))
        return mrc__error(MRC_ERR_UNSUPPORTED,
                          "stream %d: the symbolic proof does not apply", k);
    /* Node 0's operations with one element per fragment (see the top):
     * the program seen through a copy whose slices are N elements. */
    mrc_program_t q = *p;
    q.cfg.count = (size_t)n;
    q.streams = malloc((size_t)p->num_streams * sizeof *q.streams);
    prover_t v = {p, k, n, mrc__stream_node(p, k, 0), NULL, NULL, {0}};
    v.recv = calloc((size_t)n, sizeof *v.recv);
    v.scratch = calloc((size_t)n, sizeof *v.scratch);
    mrc_status_t st = MRC_OK;
    if (!q.streams || !v.recv || !v.scratch || mrc__msgmap_init(&v.sent, 16)) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking");
        goto done;
    }
    for (int j = 0; j < p->num_streams; j++) {
        q.streams[j] = p->streams[j];
        q.streams[j].slice_off = 0;
        q.streams[j].slice_len = (uint64_t)n;
    }
    mrc__chain_iter_t it;
    mrc__chain_begin(&it, &q, v.node, k, 0, 1, 0);
    mrc__op_t op;
    int r;
    while (st == MRC_OK && (r = mrc__chain_next(&it, &op, &st)) > 0)
        st = step(&v, &op);
    if (st == MRC_OK)
        st = check_outputs(&v);
done:
    free(q.streams);
    free(v.recv);
    free(v.scratch);
    mrc__msgmap_free(&v.sent);
    return st;
}
