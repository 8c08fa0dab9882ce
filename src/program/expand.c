/*
 * Expansion: the shared code run for one node, with its table entries,
 * into chains of operations (one per stream and chunk) with peers, ports,
 * tags and element ranges. The checker, the executor and the simulator
 * all start here.
 */
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"
#include "ring_math.h"

typedef struct frag_map {
    const mrc_program_t *p;
    int k, node, rank, n;
    uint64_t count; /* elements per node (block size for RS/AG) */
    uint64_t off, len;
    uint64_t q, r; /* len = q * n + r: split fragments */
} frag_map_t;

/* Fragment f of the stream: its first element within the segment space
 * and its length; for block addressing also the block's rank. */
static void fragment(const frag_map_t *m, int f, int whole, uint64_t *start,
                     uint64_t *len, int *block)
{
    *block = -1;
    if (whole || m->p->addressing == MRC__ADDR_WHOLE) {
        *start = m->off;
        *len = m->len;
        return;
    }
    switch (m->p->addressing) {
    case MRC__ADDR_SPLIT: {
        mrc__split_part_qr(m->q, m->r, (uint64_t)f, start, len);
        *start += m->off;
        return;
    }
    case MRC__ADDR_BLOCK_OWN:
        *block = m->p->nodes[mrc__stream_node(m->p, m->k,
                                              mrc__ring_mod(f - 1, m->n))]
                     .rank;
        break;
    default: /* MRC__ADDR_BLOCK_POS */
        *block = m->p->nodes[mrc__stream_node(m->p, m->k, f)].rank;
        break;
    }
    *start = m->off;
    *len = m->len;
}

/* Where a (fragment, chunk) lies in a given buffer of this node. For
 * reduce-scatter the recv buffer holds only the node's own block, for
 * allgather the send buffer; everything else is indexed by the whole
 * vector (block * count + offset). Returns -1 for a block that the buffer
 * does not hold (a program error the checker reports). */
static int place_of(const frag_map_t *m, int rank, int buf, uint64_t start,
                    int block, uint64_t *off)
{
    mrc_collective_t c = m->p->cfg.collective;
    int own_only = (c == MRC_REDUCE_SCATTER && buf == MRC__BUF_RECV) ||
                   (c == MRC_ALLGATHER && buf == MRC__BUF_SEND);
    return mrc__block_place(block, rank, own_only, m->count, start, off);
}

/* In this node's buffers. */
static int place(const frag_map_t *m, int buf, uint64_t start, int block,
                 uint64_t *off)
{
    return place_of(m, m->rank, buf, start, block, off);
}

/* The elements of a whole buffer of this node (EXPOSE of ALL). */
static uint64_t buffer_len(const frag_map_t *m, int buf)
{
    uint64_t se, re, xe;
    int node = m->node;
    mrc__buffer_elems(m->p, node, &se, &re, &xe);
    switch (buf) {
    case MRC__BUF_SEND: return se;
    case MRC__BUF_RECV: return re;
    case MRC__BUF_SCRATCH: return xe;
    default:
        return mrc__window_elems(m->p->cfg.collective, m->p->cfg.count, m->n);
    }
}

/* An instruction's view of the group (enum mrc__view): its size, the
 * node's position and rel in it, the root's position, and where view
 * position q is in the group (base + q * stride). */
typedef mrc__view_pos_t view_t;

static void view_of(const mrc__chain_iter_t *it, int which, view_t *v)
{
    *v = mrc__view_pos(it->p, which, it->n, it->ns->pos,
                       it->p->streams[it->k].root_pos);
}

static int view_node(const mrc__chain_iter_t *it, const view_t *v, int q)
{
    return mrc__stream_node(it->p, it->k, v->base + q * v->stride);
}

/* The memory-semantic instructions into op (fragment placed at cstart,
 * clen; block as fragment() gave it). 0, or -1 for a block a buffer
 * does not hold. */
static int memory_op(const frag_map_t *m, const mrc__chain_iter_t *it,
                     const view_t *v, const mrc__insn_t *in, int s, int in_loop,
                     uint64_t cstart, int block, mrc__op_t *op)
{
    const mrc_program_t *p = m->p;
    int peer_pos = mrc__ring_affine(in->peer_pos, v->rel, in->peer_step, s,
                                    (long)v->root + in->peer_const, v->n);
    int peer = view_node(it, v, peer_pos);
    op->flag = in->flag;
    switch (in->op) {
    case MRC__OP_EXPOSE:
        op->kind = MRC__EXPOSE;
        op->src = in->buf_a;
        op->ref = (in->flags & MRC__INSN_REF) != 0;
        op->peer = it->node;
        if (in->flags & MRC__INSN_ALL) {
            op->frag = -1; /* every fragment */
            op->src_off = op->dst_off = 0;
            op->count = buffer_len(m, in->buf_a);
            if (!op->ref)
                op->dst = MRC__BUF_WINDOW;
            return 0;
        }
        if (op->ref)
            return place(m, op->src, cstart, block, &op->src_off);
        op->dst = MRC__BUF_WINDOW;
        return place(m, op->src, cstart, block, &op->src_off) |
               place(m, MRC__BUF_WINDOW, cstart, block, &op->dst_off);
    case MRC__OP_GET:
        op->kind = MRC__GET;
        op->peer = peer;
        op->src = in->buf_a;
        op->dst = in->buf_b;
        op->local = (in->flags & MRC__INSN_ACC) && in_loop && s > 0 ? in->buf_b
                                                                    : in->local;
        {
            int bad = place_of(m, p->nodes[peer].rank, op->src, cstart, block,
                               &op->src_off) |
                      place(m, op->dst, cstart, block, &op->dst_off);
            if (op->local)
                bad |= place(m, op->local, cstart, block, &op->local_off);
            return bad;
        }
    case MRC__OP_SIGNAL:
        op->kind = MRC__SIGNAL;
        op->peer = it->node;
        return 0;
    case MRC__OP_WAIT:
        op->kind = MRC__WAIT;
        op->peer = peer;
        return 0;
    default: /* MRC__OP_BARRIER */
        op->kind = MRC__BARRIER;
        op->peer = it->node;
        return 0;
    }
}

/* The binomial tree's predicates at step t. */
static int tree_holds(const mrc__insn_t *in, int rel, int n, int t)
{
    int fed = mrc__tree_received_before(rel, n, t);
    if ((in->pred_hi == MRC__TREE_NONE_IN && fed) ||
        (in->pred_hi == MRC__TREE_SOME_IN && !fed))
        return 0;
    if (in->pred == MRC__PRED_TREE_CHILD)
        return mrc__tree_child(rel, t);
    if (!mrc__tree_parent(rel, n, t))
        return 0;
    return in->pred_lo == 1 ? rel == 0 : in->pred_lo == 2 ? rel != 0 : 1;
}

static int pred_holds(const mrc__insn_t *in, int rel, int n, int t)
{
    if (in->pred == MRC__PRED_TREE_CHILD || in->pred == MRC__PRED_TREE_PARENT)
        return tree_holds(in, rel, n, t);
    return mrc__pred_holds_ring(in, rel, n);
}

/* The tree's peer at step t: position root + rel + peer_const * 2^t. */
static int tree_peer(const mrc__chain_iter_t *it, const view_t *v,
                     const mrc__insn_t *in, int t)
{
    return view_node(it, v,
                     mrc__tree_peer(v->root, v->rel, in->peer_const, t, v->n));
}

static int relay_next(mrc__chain_iter_t *it, mrc__op_t *out, mrc_status_t *st);

/* Interprets instructions from it->pc until one yields an operation. */
static int interpret(mrc__chain_iter_t *it, mrc__op_t *out, mrc_status_t *st);

int mrc__chain_next(mrc__chain_iter_t *it, mrc__op_t *out, mrc_status_t *st)
{
    return it->relay ? relay_next(it, out, st) : interpret(it, out, st);
}

/* The interpreter's place in the code: the instruction, the loop it is
 * in (-1: none), the iteration s of that loop and its count, and the
 * global step. */
typedef struct pc_state {
    int pc, loop_pc, s, step, iters;
} pc_state_t;

/* Where an operation lies: its fragment f (by places, nfrags pieces from
 * f; 0: one), the fragment's block (block addressing; else -1), and the
 * chunk's first element and length. */
typedef struct locus {
    int f, nfrags, block;
    uint64_t cstart, clen;
} locus_t;

/* LOOP and END: 1 if `in` is one (x moved on), else 0. */
static int control(const mrc_program_t *p, const mrc__insn_t *in,
                   const view_t *v, pc_state_t *x)
{
    if (in->op == MRC__OP_LOOP) {
        x->iters = v->member ? mrc__loop_iters(in, v->n) : 0;
        if (x->iters <= 0) { /* skip to the matching END */
            while (x->pc < p->code_len && p->code[x->pc].op != MRC__OP_END)
                x->pc++;
            return 1;
        }
        x->loop_pc = x->pc;
        x->s = 0;
        return 1;
    }
    if (in->op == MRC__OP_END) {
        x->step++;
        if (++x->s < x->iters) {
            x->pc = x->loop_pc;
        } else {
            x->loop_pc = -1;
            x->s = 0;
        }
        return 1;
    }
    return 0;
}

/* 1 if this node does not run `in` at loop step t (a group of n). */
static int skipped(const mrc_program_t *p, const mrc__insn_t *in,
                   const view_t *v, int n, int t)
{
    if (in->op == MRC__OP_PORTS || !v->member ||
        !pred_holds(in, v->rel, v->n, t))
        return 1;
    if ((in->op == MRC__OP_SEND || in->op == MRC__OP_RECV) && v->n == 1)
        return 1;
    return in->op == MRC__OP_SCALE && (p->cfg.op != MRC_AVG || n == 1);
}

/* The fragment, block and chunk elements of `in` at iteration s: 0, or
 * -1 (*st) for fragments of a view a program by places does not cut. */
static int locate(const mrc__chain_iter_t *it, const frag_map_t *m,
                  const mrc__insn_t *in, const view_t *v, int s, int pc,
                  locus_t *at, mrc_status_t *st)
{
    const mrc_program_t *p = it->p;
    int whole = (in->flags & MRC__INSN_WHOLE) != 0;
    int cells = p->addressing == MRC__ADDR_CELLS && !whole;
    uint64_t fstart, flen;
    /* (by places, a fragment of a view is its own: a block of the
     * host's, a piece of the place's block) */
    at->f = whole ? 0
                  : mrc__ring_affine(in->frag_pos, v->pos, in->frag_step, s,
                                     in->frag_const, cells ? v->n : m->n);
    at->nfrags = 0;
    at->block = -1;
    if (cells && in->view != MRC__VIEW_HOST && in->view != MRC__VIEW_PLACE) {
        *st = mrc__error(MRC_ERR_INVALID_PROGRAM,
                         "instruction %d: fragments of a view other than "
                         "the host's or the place's in a program by "
                         "places",
                         pc);
        return -1;
    }
    if (cells) {
        int hosts = mrc__program_hosts(p), places = it->n / hosts;
        if (in->view == MRC__VIEW_PLACE)
            at->f += (it->ns->pos % places) * hosts;
        else { /* a block: all its pieces */
            at->f *= hosts;
            at->nfrags = hosts;
        }
        mrc__cells_range(it->off, it->len, places, hosts, at->f,
                         at->nfrags ? at->nfrags : 1, &fstart, &flen);
    } else {
        fragment(m, at->f, whole, &fstart, &flen, &at->block);
    }
    at->cstart = fstart;
    at->clen = flen;
    if (it->chunks > 1) {
        uint64_t chunks = (uint64_t)it->chunks;
        mrc__split_part_qr(flen / chunks, flen % chunks, (uint64_t)it->chunk,
                           &at->cstart, &at->clen);
        at->cstart += fstart;
    }
    return 0;
}

/* The peer of a SEND (dir 1) or a RECV (dir -1): the ring's next or
 * previous node, talked to through its route's first or last relay and
 * by the node's port; the tree's peer at step t; or the view's next or
 * previous node. Neither of the last two is on a route: no relay, no
 * port. */
static void transfer_peer(const mrc__chain_iter_t *it, const view_t *v,
                          const mrc__insn_t *in, int t, int dir, mrc__op_t *op)
{
    op->peer = dir > 0 ? it->send_to : it->recv_from;
    op->ring_peer = dir > 0 ? it->ns->next : it->ns->prev;
    op->port = dir > 0 ? it->ns->out_port : it->ns->in_port;
    if (in->flags & MRC__INSN_POW) {
        op->peer = op->ring_peer = tree_peer(it, v, in, t);
        op->port = -1;
    } else if (in->view != MRC__VIEW_GROUP) {
        op->peer = op->ring_peer =
            view_node(it, v,
                      dir > 0 ? mrc__ring_next(v->pos, v->n)
                              : mrc__ring_prev(v->pos, v->n));
        op->port = -1;
    }
}

/* A SEND: from buf_a at s = 0 (or outside a loop), else buf_b, to the
 * ring's next node (by its route's first relay), the tree's peer at step
 * t, or the view's next node. 0, or 1 for a block its buffer does not
 * hold. */
static int send_op(const mrc__chain_iter_t *it, const frag_map_t *m,
                   const view_t *v, const mrc__insn_t *in, const pc_state_t *x,
                   int t, const locus_t *at, mrc__op_t *op)
{
    op->kind = MRC__SEND;
    op->src = (x->loop_pc < 0 || x->s == 0) ? in->buf_a : in->buf_b;
    transfer_peer(it, v, in, t, 1, op);
    return place(m, op->src, at->cstart, at->block, &op->src_off);
}

/* A RECV: into buf_a at the loop's last step (or outside a loop), else
 * buf_b, reduced with `local`, from the ring's previous node (its
 * route's last relay), the tree's peer or the view's previous node. */
static int recv_op(const mrc__chain_iter_t *it, const frag_map_t *m,
                   const view_t *v, const mrc__insn_t *in, const pc_state_t *x,
                   int t, const locus_t *at, mrc__op_t *op)
{
    int last = x->loop_pc >= 0 && x->s == x->iters - 1;
    op->kind = MRC__RECV;
    op->dst = (x->loop_pc < 0 || last) ? in->buf_a : in->buf_b;
    op->local = in->local;
    transfer_peer(it, v, in, t, -1, op);
    int bad = place(m, op->dst, at->cstart, at->block, &op->dst_off);
    if (op->local)
        bad |= place(m, op->local, at->cstart, at->block, &op->local_off);
    return bad;
}

/* The fields every operation has: stream, step, fragment, chunk, count
 * and the tag that is unique on its link. */
static void op_head(const mrc__chain_iter_t *it, const frag_map_t *m,
                    const view_t *v, const mrc__insn_t *in, const pc_state_t *x,
                    const locus_t *at, mrc__op_t *op)
{
    memset(op, 0, sizeof *op);
    op->stream = it->k;
    op->step = in->step_rel ? mrc__ring_mod((long)v->rel + in->step_const, v->n)
                            : x->step;
    op->frag = at->f;
    op->frags = (uint16_t)at->nfrags; /* hosts <= UINT16_MAX: hier.c */
    op->chunk = it->chunk;
    op->count = at->clen;
    op->tag = mrc__op_tag(it->k, op->step, it->chunk);
    /* A whole-slice op of a split program covers every fragment
     * (the checker of memory programs tracks fragments). */
    if ((in->flags & MRC__INSN_WHOLE) && it->p->addressing != MRC__ADDR_WHOLE &&
        m->n > 1 && it->memory)
        op->frag = -1;
}

/* The operation of `in` into op (op_head done): 0; 1 for a block a
 * buffer does not hold; 2 for a copy that in-place buffers make
 * unnecessary; -1 for an unknown opcode. An opcode switch, one short
 * case per instruction. */
static int op_body(const mrc__chain_iter_t *it, const frag_map_t *m,
                   const view_t *v, const mrc__insn_t *in, const pc_state_t *x,
                   int t, const locus_t *at, mrc__op_t *op)
{
    uint64_t cstart = at->cstart;
    int block = at->block;
    switch (in->op) {
    case MRC__OP_SEND: return send_op(it, m, v, in, x, t, at, op);
    case MRC__OP_RECV: return recv_op(it, m, v, in, x, t, at, op);
    case MRC__OP_COPY:
        if (it->in_place && in->buf_a == MRC__BUF_SEND &&
            in->buf_b == MRC__BUF_RECV)
            return 2; /* the buffers are one */
        op->kind = MRC__COPY;
        op->src = in->buf_a;
        op->dst = in->buf_b;
        return place(m, op->src, cstart, block, &op->src_off) |
               place(m, op->dst, cstart, block, &op->dst_off);
    case MRC__OP_SCALE:
        op->kind = MRC__SCALE;
        op->dst = in->buf_b;
        return place(m, op->dst, cstart, block, &op->dst_off);
    case MRC__OP_EXPOSE:
    case MRC__OP_GET:
    case MRC__OP_SIGNAL:
    case MRC__OP_WAIT:
    case MRC__OP_BARRIER:
        if (in->op == MRC__OP_SIGNAL || in->op == MRC__OP_WAIT ||
            in->op == MRC__OP_BARRIER)
            op->count = 0;
        return memory_op(m, it, v, in, x->s, x->loop_pc >= 0, cstart, block,
                         op);
    default: return -1;
    }
}

/* An EXPOSE of every fragment but the one `own` is placed on (its
 * fragment, offsets and count): into op the fragments before it (part 0)
 * or after it (part 1), whose window places are their buffer's, as for
 * an EXPOSE of ALL. 0 when the part holds no element. */
static int others_part(const frag_map_t *m, const mrc__insn_t *in,
                       const mrc__op_t *own, int part, mrc__op_t *op)
{
    uint64_t total = buffer_len(m, in->buf_a);
    uint64_t end = own->src_off + own->count;
    *op = *own;
    if (m->n > UINT16_MAX) { /* more fragments than an op counts: all */
        op->frag = -1;
        op->frags = 0;
        op->src_off = op->dst_off = 0;
        op->count = part == 1 ? total : 0;
        return op->count > 0;
    }
    /* (a whole vector: the image checker allows no other) */
    if (part == 0) {
        op->frag = 0;
        op->frags = (uint16_t)own->frag;
        op->src_off = op->dst_off = 0;
        op->count = own->frag > 0 && own->src_off <= total ? own->src_off : 0;
    } else {
        op->frag = own->frag + 1;
        op->frags = (uint16_t)(m->n - own->frag - 1);
        op->src_off = op->dst_off = end;
        op->count = own->frag + 1 < m->n && total > end ? total - end : 0;
    }
    return op->count > 0;
}

/* An EXPOSE of every fragment but its own, op placed on that fragment:
 * the part before it (*again: this pc gives the part after it next), or
 * the part after it. 0 when there is no op to give (empty parts). */
static int others_next(mrc__chain_iter_t *it, const frag_map_t *m,
                       const mrc__insn_t *in, mrc__op_t *op, int *again)
{
    mrc__op_t own = *op;
    *again = 0;
    if (it->half == 0 && others_part(m, in, &own, 0, op)) {
        *again = it->half = 1;
        return 1;
    }
    it->half = 0;
    return others_part(m, in, &own, 1, op);
}

/* Interprets instructions from it->pc until one yields an operation. */
static int interpret(mrc__chain_iter_t *it, mrc__op_t *out, mrc_status_t *st)
{
    const mrc_program_t *p = it->p;
    frag_map_t m = {p,
                    it->k,
                    it->node,
                    it->rank,
                    mrc__frag_space(p, it->n),
                    p->cfg.count,
                    it->off,
                    it->len,
                    it->q,
                    it->r};
    view_t v;
    /* The interpreter state lives in locals and is stored back on exit:
     * through the pointer, every pc++ waited on the store before it. */
    pc_state_t x = {it->pc, it->loop_pc, it->s, it->step, 0};
    if (x.loop_pc >= 0) {
        view_of(it, p->code[x.loop_pc].view, &v);
        x.iters = mrc__loop_iters(&p->code[x.loop_pc], v.n);
    }
    *st = MRC_OK;
    for (; x.pc < p->code_len; x.pc++) {
        const mrc__insn_t *in = &p->code[x.pc];
        view_of(it, in->view, &v);
        if (control(p, in, &v, &x))
            continue;
        /* t: the loop's step, or reversed (the tree's broadcast). */
        int t = (in->flags & MRC__INSN_REV) && x.loop_pc >= 0
                    ? x.iters - 1 - x.s
                    : x.s;
        if (skipped(p, in, &v, it->n, t))
            continue;
        locus_t at;
        if (locate(it, &m, in, &v, x.s, x.pc, &at, st) < 0)
            return -1;
        int sync = in->op == MRC__OP_SIGNAL || in->op == MRC__OP_WAIT ||
                   in->op == MRC__OP_BARRIER;
        if (at.clen == 0 && !sync &&
            !(in->flags & (MRC__INSN_ALL | MRC__INSN_OTHERS)))
            continue;
        mrc__op_t op;
        op_head(it, &m, &v, in, &x, &at, &op);
        int r = op_body(it, &m, &v, in, &x, t, &at, &op);
        if (r == 2)
            continue;
        if (r < 0) {
            *st = mrc__error(MRC_ERR_INVALID_PROGRAM,
                             "instruction %d: unknown opcode %d", x.pc, in->op);
            return -1;
        }
        if (r) {
            *st = mrc__error(MRC_ERR_INVALID_PROGRAM,
                             "node %d, stream %d, step %d: instruction %d "
                             "touches block %d, which its buffer does not "
                             "hold",
                             it->node, it->k, x.step, x.pc, at.block);
            return -1;
        }
        int again = 0;
        if (in->op == MRC__OP_EXPOSE && (in->flags & MRC__INSN_OTHERS) &&
            !others_next(it, &m, in, &op, &again))
            continue;
        it->pc = again ? x.pc : x.pc + 1;
        it->loop_pc = x.loop_pc;
        it->s = x.s;
        it->step = x.step;
        *out = op;
        return 1;
    }
    it->pc = x.pc;
    it->loop_pc = x.loop_pc;
    it->s = x.s;
    it->step = x.step;
    return 0;
}

/* ---- relays: the interior nodes of routed hops ------------------------ */

/* The sender's chain, run as its code says, gives the messages of the
 * hop: each of its SENDs becomes a FWD at the relay, with the same tag,
 * step and count, from the route's node before the relay to the one
 * after it. The relay touches none of its own buffers. */
static int relay_next(mrc__chain_iter_t *it, mrc__op_t *out, mrc_status_t *st)
{
    const mrc_program_t *p = it->p;
    int off = p->route_off[it->relay - 1];
    mrc__op_t op;
    int r;
    while ((r = interpret(it, &op, st)) > 0) {
        if (op.kind != MRC__SEND)
            continue;
        op.kind = MRC__FWD;
        op.src = op.dst = op.local = MRC__BUF_NONE;
        op.src_off = op.dst_off = op.local_off = 0;
        op.from = p->route_nodes[off + it->relay_idx - 1];
        op.peer = p->route_nodes[off + it->relay_idx + 1];
        op.port = p->route_ports[off + it->relay_idx];
        *out = op;
        return 1;
    }
    return r;
}
