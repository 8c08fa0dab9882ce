/*
 * Expansion: the shared code run for one node, with its table entries,
 * into chains of operations (one per stream and chunk) with peers, ports,
 * tags and element ranges. The checker, the executor and the simulator
 * all start here.
 */
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"

typedef struct frag_map {
    const mrc_program_t *p;
    int k, node, rank, n;
    uint64_t count; /* elements per node (block size for RS/AG) */
    uint64_t off, len;
    uint64_t q, r; /* len = q * n + r: split fragments */
} frag_map_t;

/* a mod n; operands are within a few multiples of n, so a subtraction
 * or two beats a 64-bit division (which dominated the checker). */
static int mod(long a, int n)
{
    if (a >= 0 && a < n)
        return (int)a;
    if (a < -4L * n || a >= 4L * n) {
        long r = a % n;
        return (int)(r < 0 ? r + n : r);
    }
    while (a < 0)
        a += n;
    while (a >= n)
        a -= n;
    return (int)a;
}

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
        uint64_t q = m->q, r = m->r;
        *start = m->off + (uint64_t)f * q + ((uint64_t)f < r ? (uint64_t)f : r);
        *len = q + ((uint64_t)f < r);
        return;
    }
    case MRC__ADDR_BLOCK_OWN:
        *block = m->p->nodes[mrc__stream_node(m->p, m->k, mod(f - 1, m->n))]
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
    if (block < 0) {
        *off = start;
        return 0;
    }
    int own_only = (c == MRC_REDUCE_SCATTER && buf == MRC__BUF_RECV) ||
                   (c == MRC_ALLGATHER && buf == MRC__BUF_SEND);
    if (own_only) {
        if (block != rank)
            return -1;
        *off = start;
        return 0;
    }
    *off = (uint64_t)block * m->count + start;
    return 0;
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

int mrc__program_hosts(const mrc_program_t *p)
{
    return p->cfg.algo == MRC_ALGO_HIER && p->cfg.hosts > 1 ? p->cfg.hosts
                                                           : 1;
}

int mrc__frag_space(const mrc_program_t *p, int n)
{
    if (p->cfg.algo != MRC_ALGO_HIER || p->addressing == MRC__ADDR_CELLS)
        return n; /* (by places: L blocks of H pieces) */
    return mrc__program_hosts(p);
}

mrc__view_pos_t mrc__view_pos(const mrc_program_t *p, int which, int n,
                              int pos, int root)
{
    int hosts = mrc__program_hosts(p), l = n / hosts;
    if (which == MRC__VIEW_GROUP || l < 1 || n % hosts != 0)
        return (view_t){n, pos, mod((long)pos - root, n), root, 0, 1, 1};
    if (which == MRC__VIEW_HOST) {
        int q = pos % l;
        return (view_t){l, q, mod((long)q - root % l, l), root % l, pos - q,
                        1, 1};
    }
    int q = pos / l;
    if (which == MRC__VIEW_PLACE)
        return (view_t){hosts, q, q, 0, pos % l, l, 1};
    return (view_t){hosts, q, mod((long)q - root / l, hosts), root / l,
                    root % l, l, pos % l == root % l};
}

static void view_of(const mrc__chain_iter_t *it, int which, view_t *v)
{
    *v = mrc__view_pos(it->p, which, it->n, it->ns->pos,
                       it->p->streams[it->k].root_pos);
}

/* hier by places (MRC__ADDR_CELLS): the first element and the length of
 * fragments first .. first + count - 1 (consecutive pieces of one
 * block) of a slice of len elements over `places` blocks of `hosts`
 * pieces. */
void mrc__cells_range(uint64_t off, uint64_t len, int places, int hosts,
                      int first, int count, uint64_t *start,
                      uint64_t *out_len)
{
    uint64_t l = (uint64_t)(first / hosts), bq = len / (uint64_t)places,
             br = len % (uint64_t)places;
    uint64_t boff = l * bq + (l < br ? l : br), blen = bq + (l < br);
    uint64_t pq = blen / (uint64_t)hosts, pr = blen % (uint64_t)hosts;
    uint64_t a = (uint64_t)(first % hosts), b = a + (uint64_t)count;
    uint64_t s0 = a * pq + (a < pr ? a : pr), s1 = b * pq + (b < pr ? b : pr);
    *start = off + boff + s0;
    *out_len = s1 - s0;
}

static int view_node(const mrc__chain_iter_t *it, const view_t *v, int q)
{
    return mrc__stream_node(it->p, it->k, v->base + q * v->stride);
}

/* The memory-semantic instructions into op (fragment placed at cstart,
 * clen; block as fragment() gave it). 0, or -1 for a block a buffer
 * does not hold. */
static int memory_op(const frag_map_t *m, const mrc__chain_iter_t *it,
                     const view_t *v, const mrc__insn_t *in, int s,
                     int in_loop, uint64_t cstart, int block, mrc__op_t *op)
{
    const mrc_program_t *p = m->p;
    int peer_pos = mod((long)v->root + (long)in->peer_pos * v->rel +
                           (long)in->peer_step * s + in->peer_const,
                       v->n);
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
        op->local = (in->flags & MRC__INSN_ACC) && in_loop && s > 0
                        ? in->buf_b
                        : in->local;
        {
            int bad = place_of(m, p->nodes[peer].rank, op->src, cstart,
                               block, &op->src_off) |
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
    if (t < 0 || t > 30)
        return 0;
    long step = 1L << t, span = step << 1;
    if (in->pred == MRC__PRED_TREE_CHILD)
        return rel % span == step;
    if (rel % span != 0 || rel + step >= n)
        return 0;
    return in->pred_lo == 1 ? rel == 0 : in->pred_lo == 2 ? rel != 0 : 1;
}

static int ceil_log2(int n)
{
    int l = 0;
    while (l < 31 && (1L << l) < n)
        l++;
    return l;
}

static int pred_holds(const mrc__insn_t *in, int rel, int n, int t)
{
    if (in->pred == MRC__PRED_TREE_CHILD || in->pred == MRC__PRED_TREE_PARENT)
        return tree_holds(in, rel, n, t);
    return mrc__pred_holds_ring(in, rel, n);
}

int mrc__pred_holds_ring(const mrc__insn_t *in, int rel, int n)
{
    int lo = in->pred_lo < 0 ? n + in->pred_lo : in->pred_lo;
    int hi = in->pred_hi < 0 ? n + in->pred_hi : in->pred_hi;
    switch (in->pred) {
    case MRC__PRED_ALWAYS: return 1;
    case MRC__PRED_REL_EQ: return rel == lo;
    case MRC__PRED_REL_IN: return lo <= rel && rel <= hi;
    case MRC__PRED_ALONE: return n == 1;
    default: return 0;
    }
}

/* Iterations of a loop for a group of n. */
int mrc__loop_iters(const mrc__insn_t *loop, int n)
{
    if (loop->flags & MRC__INSN_LOG)
        return ceil_log2(n);
    return n - 1 + loop->loop_extra;
}

/* The tree's peer at step t: position root + rel + peer_const * 2^t. */
static int tree_peer(const mrc__chain_iter_t *it, const view_t *v,
                     const mrc__insn_t *in, int t)
{
    long at = (long)v->root + v->rel + (long)in->peer_const * (1L << t);
    return view_node(it, v, mod(at, v->n));
}

typedef struct opbuf {
    mrc__op_t *ops;
    int num, cap;
} opbuf_t;

static mrc__op_t *push(opbuf_t *b)
{
    if (mrc__grow((void **)&b->ops, &b->cap, b->num + 1, sizeof *b->ops))
        return NULL;
    mrc__op_t *op = &b->ops[b->num++];
    memset(op, 0, sizeof *op);
    return op;
}

/* The node after the first (dir 1) or before the last (dir -1) of a
 * route: the peer a routed hop's sender and receiver talk to. A direct
 * hop (or none) gives `direct`. */
static int hop_end(const mrc_program_t *p, int route, int dir, int direct)
{
    if (route < 0)
        return direct;
    int off = p->route_off[route], end = p->route_off[route + 1];
    if (end - off <= 2)
        return direct;
    return dir > 0 ? p->route_nodes[off + 1] : p->route_nodes[end - 2];
}

void mrc__chain_begin(mrc__chain_iter_t *it, const mrc_program_t *p,
                      int node, int k, int chunk, int chunks, int in_place)
{
    memset(it, 0, sizeof *it);
    const mrc__node_t *nd = &p->nodes[node];
    const mrc__stream_t *sk = &p->streams[k];
    int n = p->groups[nd->group].size;
    it->p = p;
    it->node = node;
    it->rank = nd->rank;
    it->k = k;
    it->n = n;
    it->off = sk->slice_off;
    it->len = sk->slice_len;
    it->ns = mrc__node_stream(p, node, k);
    it->chunk = chunk;
    it->chunks = chunks;
    it->in_place = in_place;
    it->rel = mod(it->ns->pos - sk->root_pos, n);
    int nf = mrc__frag_space(p, n);
    it->q = sk->slice_len / (uint64_t)nf;
    it->r = sk->slice_len % (uint64_t)nf;
    it->loop_pc = -1;
    it->pc = 0;
    it->memory = mrc__program_has_memory_ops(p);
    it->at = node;
    it->send_to = hop_end(p, it->ns->route, 1, it->ns->next);
    it->recv_from = hop_end(p, mrc__node_stream(p, it->ns->prev, k)->route,
                            -1, it->ns->prev);
}

static int relay_next(mrc__chain_iter_t *it, mrc__op_t *out,
                      mrc_status_t *st);

/* Interprets instructions from it->pc until one yields an operation. */
static int interpret(mrc__chain_iter_t *it, mrc__op_t *out,
                     mrc_status_t *st);

int mrc__chain_next(mrc__chain_iter_t *it, mrc__op_t *out, mrc_status_t *st)
{
    return it->relay ? relay_next(it, out, st) : interpret(it, out, st);
}

static int interpret(mrc__chain_iter_t *it, mrc__op_t *out, mrc_status_t *st)
{
    const mrc_program_t *p = it->p;
    frag_map_t m = {p, it->k, it->node, it->rank, mrc__frag_space(p, it->n),
                    p->cfg.count, it->off, it->len, it->q, it->r};
    int n = it->n;
    view_t v;
    int iters = 0;
    if (it->loop_pc >= 0) {
        view_of(it, p->code[it->loop_pc].view, &v);
        iters = mrc__loop_iters(&p->code[it->loop_pc], v.n);
    }
    /* The interpreter state lives in locals and is stored back on exit:
     * through the pointer, every pc++ waited on the store before it. */
    int pc = it->pc, loop_pc = it->loop_pc, s = it->s, step = it->step;
    *st = MRC_OK;
    for (; pc < p->code_len; pc++) {
        const mrc__insn_t *in = &p->code[pc];
        view_of(it, in->view, &v);
        if (in->op == MRC__OP_LOOP) {
            iters = v.member ? mrc__loop_iters(in, v.n) : 0;
            if (iters <= 0) { /* skip to the matching END */
                while (pc < p->code_len && p->code[pc].op != MRC__OP_END)
                    pc++;
                continue;
            }
            loop_pc = pc;
            s = 0;
            continue;
        }
        if (in->op == MRC__OP_END) {
            step++;
            if (++s < iters) {
                pc = loop_pc;
            } else {
                loop_pc = -1;
                s = 0;
            }
            continue;
        }
        /* t: the loop's step, or reversed (the tree's broadcast). */
        int t = (in->flags & MRC__INSN_REV) && loop_pc >= 0 ? iters - 1 - s
                                                          : s;
        if (in->op == MRC__OP_PORTS || !v.member ||
            !pred_holds(in, v.rel, v.n, t))
            continue;
        int comm = in->op == MRC__OP_SEND || in->op == MRC__OP_RECV;
        if (comm && v.n == 1)
            continue;
        if (in->op == MRC__OP_SCALE && (p->cfg.op != MRC_AVG || n == 1))
            continue;
        int whole = (in->flags & MRC__INSN_WHOLE) != 0;
        int cells = p->addressing == MRC__ADDR_CELLS && !whole;
        /* (by places, a fragment of a view is its own: a block of the
         * host's, a piece of the place's block) */
        int f = whole ? 0 : mod((long)in->frag_pos * v.pos +
                                    (long)in->frag_step * s + in->frag_const,
                                cells ? v.n : m.n);
        int nfrags = 0;
        uint64_t fstart, flen;
        int block = -1;
        if (cells && in->view != MRC__VIEW_HOST &&
            in->view != MRC__VIEW_PLACE) {
            *st = mrc__error(MRC_ERR_INVALID_PROGRAM,
                             "instruction %d: fragments of a view other than "
                             "the host's or the place's in a program by "
                             "places",
                             pc);
            return -1;
        }
        if (cells) {
            int hosts = mrc__program_hosts(p), places = n / hosts;
            if (in->view == MRC__VIEW_PLACE)
                f += (it->ns->pos % places) * hosts;
            else { /* a block: all its pieces */
                f *= hosts;
                nfrags = hosts;
            }
            mrc__cells_range(it->off, it->len, places, hosts, f,
                        nfrags ? nfrags : 1, &fstart, &flen);
        } else {
            fragment(&m, f, whole, &fstart, &flen, &block);
        }
        uint64_t cstart = fstart, clen = flen;
        if (it->chunks > 1) {
            uint64_t chunks = (uint64_t)it->chunks, c = (uint64_t)it->chunk;
            uint64_t q = flen / chunks, r = flen % chunks;
            cstart = fstart + c * q + (c < r ? c : r);
            clen = q + (c < r);
        }
        int sync = in->op == MRC__OP_SIGNAL || in->op == MRC__OP_WAIT ||
                   in->op == MRC__OP_BARRIER;
        if (clen == 0 && !sync && !(in->flags & MRC__INSN_ALL))
            continue;
        int in_loop = loop_pc >= 0;
        int last = in_loop && s == iters - 1;
        mrc__op_t op;
        memset(&op, 0, sizeof op);
        op.stream = it->k;
        op.step = in->step_rel ? mod((long)v.rel + in->step_const, v.n)
                               : step;
        op.frag = f;
        op.frags = (uint16_t)nfrags; /* hosts <= UINT16_MAX: hier.c */
        op.chunk = it->chunk;
        op.count = clen;
        op.tag = ((uint64_t)it->k << 44) | ((uint64_t)op.step << 24) |
                 (uint64_t)it->chunk;
        int bad = 0;
        /* A whole-slice op of a split program covers every fragment
         * (the checker of memory programs tracks fragments). */
        if (whole && p->addressing != MRC__ADDR_WHOLE && m.n > 1 &&
            it->memory)
            op.frag = -1;
        switch (in->op) {
        case MRC__OP_SEND:
            op.kind = MRC__SEND;
            op.src = (!in_loop || s == 0) ? in->buf_a : in->buf_b;
            op.peer = it->send_to;
            op.ring_peer = it->ns->next;
            op.port = it->ns->out_port;
            if (in->flags & MRC__INSN_POW) { /* no route: no relay */
                op.peer = op.ring_peer = tree_peer(it, &v, in, t);
                op.port = -1;
            } else if (in->view != MRC__VIEW_GROUP) { /* the view's next */
                op.peer = op.ring_peer = view_node(it, &v, mod(v.pos + 1,
                                                               v.n));
                op.port = -1;
            }
            bad = place(&m, op.src, cstart, block, &op.src_off);
            break;
        case MRC__OP_RECV:
            op.kind = MRC__RECV;
            op.dst = (!in_loop || last) ? in->buf_a : in->buf_b;
            op.local = in->local;
            op.peer = it->recv_from;
            op.ring_peer = it->ns->prev;
            op.port = it->ns->in_port;
            if (in->flags & MRC__INSN_POW) { /* no route: no relay */
                op.peer = op.ring_peer = tree_peer(it, &v, in, t);
                op.port = -1;
            } else if (in->view != MRC__VIEW_GROUP) { /* the view's prev */
                op.peer = op.ring_peer = view_node(it, &v, mod(v.pos - 1,
                                                               v.n));
                op.port = -1;
            }
            bad = place(&m, op.dst, cstart, block, &op.dst_off);
            if (op.local)
                bad |= place(&m, op.local, cstart, block, &op.local_off);
            break;
        case MRC__OP_COPY:
            if (it->in_place && in->buf_a == MRC__BUF_SEND &&
                in->buf_b == MRC__BUF_RECV)
                continue; /* the buffers are one */
            op.kind = MRC__COPY;
            op.src = in->buf_a;
            op.dst = in->buf_b;
            bad = place(&m, op.src, cstart, block, &op.src_off) |
                  place(&m, op.dst, cstart, block, &op.dst_off);
            break;
        case MRC__OP_SCALE:
            op.kind = MRC__SCALE;
            op.dst = in->buf_b;
            bad = place(&m, op.dst, cstart, block, &op.dst_off);
            break;
        case MRC__OP_EXPOSE:
        case MRC__OP_GET:
        case MRC__OP_SIGNAL:
        case MRC__OP_WAIT:
        case MRC__OP_BARRIER:
            op.count = sync ? 0 : clen;
            bad = memory_op(&m, it, &v, in, s, in_loop, cstart, block, &op);
            break;
        default:
            *st = mrc__error(MRC_ERR_INVALID_PROGRAM,
                             "instruction %d: unknown opcode %d", pc,
                             in->op);
            return -1;
        }
        if (bad) {
            *st = mrc__error(MRC_ERR_INVALID_PROGRAM,
                             "node %d, stream %d, step %d: instruction %d "
                             "touches block %d, which its buffer does not "
                             "hold",
                             it->node, it->k, step, pc, block);
            return -1;
        }
        it->pc = pc + 1;
        it->loop_pc = loop_pc;
        it->s = s;
        it->step = step;
        *out = op;
        return 1;
    }
    it->pc = pc;
    it->loop_pc = loop_pc;
    it->s = s;
    it->step = step;
    return 0;
}

/* ---- relays: the interior nodes of routed hops ------------------------ */

/* The sender's chain, run as its code says, gives the messages of the
 * hop: each of its SENDs becomes a FWD at the relay, with the same tag,
 * step and count, from the route's node before the relay to the one
 * after it. The relay touches none of its own buffers. */
static int relay_next(mrc__chain_iter_t *it, mrc__op_t *out,
                      mrc_status_t *st)
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

void mrc__relay_begin(mrc__chain_iter_t *it, const mrc_program_t *p, int at,
                      const mrc__relay_t *r, int chunk, int chunks)
{
    mrc__chain_begin(it, p, r->src, r->stream, chunk, chunks, 0);
    it->at = at;
    it->relay = r->route + 1;
    it->relay_idx = r->index;
}

/* Calls visit(arg, relay node, record) for every relay of the program;
 * stops at (and returns) a non-zero return. A route node outside the
 * program is -1 (reported by the caller). */
static int each_relay(const mrc_program_t *p,
                      int (*visit)(void *, int, const mrc__relay_t *),
                      void *arg)
{
    for (int g = 0; g < p->num_groups; g++) {
        const mrc__group_t *gr = &p->groups[g];
        for (int k = gr->first_stream;
             k < gr->first_stream + gr->num_streams; k++)
            for (int pos = 0; pos < gr->size; pos++) {
                int u = mrc__stream_node(p, k, pos);
                int route = mrc__node_stream(p, u, k)->route;
                if (route < 0)
                    continue;
                int off = p->route_off[route];
                int len = p->route_off[route + 1] - off;
                for (int i = 1; i < len - 1; i++) {
                    mrc__relay_t rec = {k, u, route, i};
                    int v = p->route_nodes[off + i];
                    int r = visit(arg, v >= 0 && v < p->num_nodes ? v : -1,
                                  &rec);
                    if (r)
                        return r;
                }
            }
    }
    return 0;
}

typedef struct relay_fill {
    int32_t *at;
    mrc__relay_t *list;
} relay_fill_t;

static int count_relay(void *arg, int v, const mrc__relay_t *r)
{
    (void)r;
    if (v < 0)
        return 1;
    ((int32_t *)arg)[v + 1]++;
    return 0;
}

static int fill_relay(void *arg, int v, const mrc__relay_t *r)
{
    relay_fill_t *f = arg;
    f->list[f->at[v]++] = *r;
    return 0;
}

mrc_status_t mrc__relay_index(const mrc_program_t *p, int32_t **first,
                              mrc__relay_t **list)
{
    int n = p->num_nodes;
    *list = NULL;
    *first = calloc((size_t)n + 2, sizeof **first);
    if (!*first)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory indexing relays");
    if (each_relay(p, count_relay, *first)) {
        free(*first);
        *first = NULL;
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "a hop's route runs through a node outside the "
                          "program's %d nodes",
                          n);
    }
    for (int u = 0; u < n; u++)
        (*first)[u + 1] += (*first)[u];
    int32_t *at = malloc(((size_t)n + 1) * sizeof *at);
    *list = malloc(((size_t)(*first)[n] + 1) * sizeof **list);
    if (!at || !*list) {
        free(at);
        free(*first);
        free(*list);
        *first = NULL;
        *list = NULL;
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory indexing relays");
    }
    memcpy(at, *first, (size_t)n * sizeof *at);
    relay_fill_t f = {at, *list};
    each_relay(p, fill_relay, &f);
    free(at);
    return MRC_OK;
}

typedef struct relay_count {
    const mrc_program_t *p;
    int node;
    uint64_t chunk, chains, ops;
} relay_count_t;

static int bound_relay(void *arg, int v, const mrc__relay_t *r)
{
    relay_count_t *c = arg;
    if (v != c->node)
        return 0;
    int n = mrc__stream_size(c->p, r->stream);
    uint64_t chunks = (uint64_t)mrc__stream_chunks(c->p, r->stream, c->chunk);
    c->chains += chunks;
    c->ops = mrc__sat_mul_add(chunks,
                              (uint64_t)c->p->code_len *
                                  (uint64_t)(n > 1 ? n - 1 : 1),
                              c->ops);
    return 0;
}

void mrc__relay_bound(const mrc_program_t *p, int node, uint64_t chunk_elems,
                      uint64_t *chains, uint64_t *ops)
{
    relay_count_t c = {p, node, chunk_elems ? chunk_elems : mrc__chunk_elems(p),
                       0, 0};
    each_relay(p, bound_relay, &c);
    *chains = c.chains;
    *ops = c.ops;
}

/* Appends the chains that node relays, one per (hop, chunk). */
static mrc_status_t add_relays(const mrc_program_t *p, int node,
                               uint64_t chunk, opbuf_t *ops, mrc__plan_t *plan,
                               int *cap_chains)
{
    int32_t *first = NULL;
    mrc__relay_t *list = NULL;
    mrc_status_t st = mrc__relay_index(p, &first, &list);
    for (int i = st == MRC_OK ? first[node] : 0;
         st == MRC_OK && i < first[node + 1]; i++) {
        int chunks = mrc__stream_chunks(p, list[i].stream, chunk);
        for (int c = 0; c < chunks && st == MRC_OK; c++) {
            mrc__chain_iter_t it;
            mrc__relay_begin(&it, p, node, &list[i], c, chunks);
            int before = ops->num, r;
            mrc__op_t op;
            while ((r = mrc__chain_next(&it, &op, &st)) > 0) {
                mrc__op_t *slot = push(ops);
                if (!slot) {
                    r = -1;
                    st = mrc__error(MRC_ERR_NO_MEMORY,
                                    "out of memory expanding");
                    break;
                }
                *slot = op;
            }
            if (r < 0 || ops->num == before)
                continue;
            if (mrc__grow((void **)&plan->chain_off, cap_chains,
                          plan->num_chains + 2, sizeof *plan->chain_off))
                st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
            else
                plan->chain_off[++plan->num_chains] = ops->num;
        }
    }
    free(first);
    free(list);
    return st;
}

/* Runs the code for one (stream, chunk) chain, appending its ops. */
static mrc_status_t run_chain(const mrc_program_t *p, int node, int k,
                              int chunk, int chunks, int in_place,
                              opbuf_t *out)
{
    mrc__chain_iter_t it;
    mrc__chain_begin(&it, p, node, k, chunk, chunks, in_place);
    mrc__op_t op;
    mrc_status_t st;
    int r;
    while ((r = mrc__chain_next(&it, &op, &st)) > 0) {
        mrc__op_t *slot = push(out);
        if (!slot)
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory expanding");
        *slot = op;
    }
    return r < 0 ? st : MRC_OK;
}

int mrc__cursor_peek(mrc__cursor_t *c, mrc_status_t *st)
{
    if (c->done)
        return 0;
    if (c->has_op)
        return 1;
    int r = mrc__chain_next(&c->it, &c->op, st);
    if (r <= 0) {
        c->done = r == 0;
        return r;
    }
    c->has_op = 1;
    return 1;
}

int mrc__stream_chunks(const mrc_program_t *p, int k, uint64_t chunk_elems)
{
    uint64_t len = p->streams[k].slice_len;
    uint64_t n = (uint64_t)mrc__stream_size(p, k);
    uint64_t maxf = p->addressing == MRC__ADDR_SPLIT ? (len + n - 1) / n : len;
    if (mrc__program_has_memory_ops(p))
        return 1; /* one chain a node; its syncs even when empty */
    if (len == 0)
        return 0;
    uint64_t c = (maxf + chunk_elems - 1) / chunk_elems;
    return c < 1 ? 1 : c > (1u << 23) ? (1 << 23) : (int)c;
}

uint64_t mrc__chain_ops_bound(const mrc_program_t *p, int n)
{
    /* Each instruction once, or once per iteration of its loop; a view's
     * group is never larger than the group, and iterations grow with it. */
    uint64_t ops = 0, iters = 1;
    for (int pc = 0; pc < p->code_len; pc++) {
        const mrc__insn_t *in = &p->code[pc];
        if (in->op == MRC__OP_LOOP) {
            int it = mrc__loop_iters(in, n);
            iters = it > 0 ? (uint64_t)it : 0;
        } else if (in->op == MRC__OP_END) {
            iters = 1;
        } else {
            ops += iters;
        }
    }
    return ops;
}

void mrc__plan_bound(const mrc_program_t *p, int group, uint64_t chunk_elems,
                     uint64_t *chains, uint64_t *ops)
{
    *chains = *ops = 0;
    if (group < 0 || group >= p->num_groups)
        return;
    const mrc__group_t *g = &p->groups[group];
    uint64_t chunk = chunk_elems ? chunk_elems : mrc__chunk_elems(p);
    uint64_t per_chain = mrc__chain_ops_bound(p, g->size);
    for (int k = g->first_stream; k < g->first_stream + g->num_streams;
         k++) {
        uint64_t c = (uint64_t)mrc__stream_chunks(p, k, chunk);
        *chains += c;
        *ops = mrc__sat_mul_add(c, per_chain, *ops);
    }
}

mrc_status_t mrc__plan_build(const mrc_program_t *p, int node,
                             uint64_t chunk_elems, int in_place,
                             mrc__plan_t *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->node = node;
    plan->in_place = in_place;
    if (node < 0 || node >= p->num_nodes)
        return mrc__error(MRC_ERR_INVALID_ARG, "no node %d in the program",
                          node);
    const mrc__node_t *nd = &p->nodes[node];
    uint64_t chunk = chunk_elems ? chunk_elems : mrc__chunk_elems(p);
    opbuf_t ops = {0};
    int cap_chains = 0;
    if (mrc__grow((void **)&plan->chain_off, &cap_chains, 2,
                  sizeof *plan->chain_off))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    plan->chain_off[0] = 0;
    mrc_status_t st = MRC_OK;
    /* A node in no group may still relay other groups' hops. */
    const mrc__group_t *g = nd->group >= 0 ? &p->groups[nd->group] : NULL;
    for (int k = g ? g->first_stream : 0;
         g && k < g->first_stream + g->num_streams && st == MRC_OK; k++) {
        int chunks = mrc__stream_chunks(p, k, chunk);
        for (int c = 0; c < chunks && st == MRC_OK; c++) {
            int before = ops.num;
            st = run_chain(p, node, k, c, chunks, in_place, &ops);
            if (st != MRC_OK || ops.num == before)
                continue;
            if (mrc__grow((void **)&plan->chain_off, &cap_chains,
                          plan->num_chains + 2, sizeof *plan->chain_off)) {
                st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
                break;
            }
            plan->chain_off[++plan->num_chains] = ops.num;
        }
    }
    if (st == MRC_OK)
        st = add_relays(p, node, chunk, &ops, plan, &cap_chains);
    plan->ops = ops.ops;
    plan->num_ops = ops.num;
    if (st != MRC_OK)
        mrc__plan_free(plan);
    return st;
}

void mrc__plan_free(mrc__plan_t *plan)
{
    free(plan->chain_off);
    free(plan->ops);
    memset(plan, 0, sizeof *plan);
}

void mrc__buffer_elems(const mrc_program_t *p, int node, uint64_t *send,
                       uint64_t *recv, uint64_t *scratch)
{
    int g = node >= 0 && node < p->num_nodes ? p->nodes[node].group : -1;
    uint64_t n = g >= 0 ? (uint64_t)p->groups[g].size : 0, c = p->cfg.count;
    *send = *recv = c;
    *scratch = 0;
    switch (p->cfg.collective) {
    case MRC_REDUCE_SCATTER:
        *send = n * c;
        *scratch = n * c;
        break;
    case MRC_ALLGATHER:
        *recv = n * c;
        break;
    case MRC_REDUCE:
        *scratch = c;
        break;
    default:
        break;
    }
    if (g < 0)
        *send = *recv = 0;
}
