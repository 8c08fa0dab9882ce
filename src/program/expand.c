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
} frag_map_t;

static int mod(long a, int n)
{
    long r = a % n;
    return (int)(r < 0 ? r + n : r);
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
        uint64_t q = m->len / (uint64_t)m->n, r = m->len % (uint64_t)m->n;
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
static int place(const frag_map_t *m, int buf, uint64_t start, int block,
                 uint64_t *off)
{
    mrc_collective_t c = m->p->cfg.collective;
    if (block < 0) {
        *off = start;
        return 0;
    }
    int own_only = (c == MRC_REDUCE_SCATTER && buf == MRC__BUF_RECV) ||
                   (c == MRC_ALLGATHER && buf == MRC__BUF_SEND);
    if (own_only) {
        if (block != m->rank)
            return -1;
        *off = start;
        return 0;
    }
    *off = (uint64_t)block * m->count + start;
    return 0;
}

static int pred_holds(const mrc__insn_t *in, int rel, int n)
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

typedef struct opbuf {
    mrc__op_t *ops;
    int num, cap;
} opbuf_t;

static mrc__op_t *push(opbuf_t *b)
{
    if (b->num == b->cap) {
        int cap = b->cap ? 2 * b->cap : 64;
        mrc__op_t *q = realloc(b->ops, (size_t)cap * sizeof *q);
        if (!q)
            return NULL;
        b->ops = q;
        b->cap = cap;
    }
    mrc__op_t *op = &b->ops[b->num++];
    memset(op, 0, sizeof *op);
    return op;
}

/* Runs the code for one (stream, chunk) chain, appending its ops. */
static mrc_status_t run_chain(const mrc_program_t *p, const frag_map_t *m,
                              const mrc__node_stream_t *ns, int chunk,
                              int chunks, int in_place, opbuf_t *out)
{
    int n = m->n, pos = ns->pos;
    int rel = mod(pos - p->streams[m->k].root_pos, n);
    int loop_pc = -1, s = 0, step = 0, iters = n - 1;
    for (int pc = 0; pc < p->code_len; pc++) {
        const mrc__insn_t *in = &p->code[pc];
        if (in->op == MRC__OP_LOOP) {
            if (iters <= 0) { /* skip to after the matching END */
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
            if (++s < iters)
                pc = loop_pc;
            else
                loop_pc = -1, s = 0;
            continue;
        }
        if (in->op == MRC__OP_PORTS || !pred_holds(in, rel, n))
            continue;
        int comm = in->op == MRC__OP_SEND || in->op == MRC__OP_RECV;
        if (comm && n == 1)
            continue;
        if (in->op == MRC__OP_SCALE &&
            (p->cfg.op != MRC_AVG || n == 1))
            continue;
        int whole = (in->flags & MRC__INSN_WHOLE) != 0;
        int f = whole ? 0 : mod((long)in->frag_pos * pos +
                                    (long)in->frag_step * s + in->frag_const,
                                n);
        uint64_t fstart, flen;
        int block;
        fragment(m, f, whole, &fstart, &flen, &block);
        uint64_t q = flen / (uint64_t)chunks, r = flen % (uint64_t)chunks;
        uint64_t cstart = fstart + (uint64_t)chunk * q +
                          ((uint64_t)chunk < r ? (uint64_t)chunk : r);
        uint64_t clen = q + ((uint64_t)chunk < r);
        if (clen == 0)
            continue;
        int in_loop = loop_pc >= 0;
        int last = in_loop && s == iters - 1;
        mrc__op_t op;
        memset(&op, 0, sizeof op);
        op.stream = m->k;
        op.step = step;
        op.frag = f;
        op.chunk = chunk;
        op.count = clen;
        op.tag = ((uint64_t)m->k << 44) | ((uint64_t)step << 24) |
                 (uint64_t)chunk;
        int bad = 0;
        switch (in->op) {
        case MRC__OP_SEND:
            op.kind = MRC__SEND;
            op.src = (!in_loop || s == 0) ? in->buf_a : in->buf_b;
            op.peer = ns->next;
            op.port = ns->out_port;
            bad = place(m, op.src, cstart, block, &op.src_off);
            break;
        case MRC__OP_RECV:
            op.kind = MRC__RECV;
            op.dst = (!in_loop || last) ? in->buf_a : in->buf_b;
            op.local = in->local;
            op.peer = ns->prev;
            op.port = ns->in_port;
            bad = place(m, op.dst, cstart, block, &op.dst_off);
            if (op.local)
                bad |= place(m, op.local, cstart, block, &op.local_off);
            break;
        case MRC__OP_COPY:
            if (in_place && in->buf_a == MRC__BUF_SEND &&
                in->buf_b == MRC__BUF_RECV)
                continue; /* the buffers are one */
            op.kind = MRC__COPY;
            op.src = in->buf_a;
            op.dst = in->buf_b;
            bad = place(m, op.src, cstart, block, &op.src_off) |
                  place(m, op.dst, cstart, block, &op.dst_off);
            break;
        case MRC__OP_SCALE:
            op.kind = MRC__SCALE;
            op.dst = in->buf_b;
            bad = place(m, op.dst, cstart, block, &op.dst_off);
            break;
        default:
            return mrc__error(MRC_ERR_INVALID_PROGRAM,
                              "instruction %d: unknown opcode %d", pc, in->op);
        }
        if (bad)
            return mrc__error(MRC_ERR_INVALID_PROGRAM,
                              "node %d, stream %d, step %d: instruction %d "
                              "touches block %d, which its buffer does not "
                              "hold",
                              m->node, m->k, step, pc, block);
        mrc__op_t *slot = push(out);
        if (!slot)
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory expanding");
        *slot = op;
    }
    return MRC_OK;
}

static uint64_t max_fragment(const mrc_program_t *p, uint64_t len, int n)
{
    if (p->addressing == MRC__ADDR_SPLIT)
        return (len + (uint64_t)n - 1) / (uint64_t)n;
    return len;
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
    if (nd->group < 0)
        return MRC_OK;
    const mrc__group_t *g = &p->groups[nd->group];
    uint64_t chunk = chunk_elems ? chunk_elems : mrc__chunk_elems(p);
    opbuf_t ops = {0};
    int cap_chains = 8;
    plan->chain_off = malloc((size_t)(cap_chains + 1) * sizeof(int32_t));
    if (!plan->chain_off)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    plan->chain_off[0] = 0;
    mrc_status_t st = MRC_OK;
    for (int k = g->first_stream;
         k < g->first_stream + g->num_streams && st == MRC_OK; k++) {
        const mrc__stream_t *sk = &p->streams[k];
        if (sk->slice_len == 0)
            continue;
        frag_map_t m = {p, k, node, nd->rank, g->size, p->cfg.count,
                        sk->slice_off, sk->slice_len};
        uint64_t maxf = max_fragment(p, sk->slice_len, g->size);
        uint64_t c64 = (maxf + chunk - 1) / chunk;
        int chunks = c64 < 1 ? 1 : c64 > (1u << 23) ? (1 << 23) : (int)c64;
        const mrc__node_stream_t *ns = mrc__node_stream(p, node, k);
        for (int c = 0; c < chunks && st == MRC_OK; c++) {
            int before = ops.num;
            st = run_chain(p, &m, ns, c, chunks, in_place, &ops);
            if (st != MRC_OK || ops.num == before)
                continue;
            if (plan->num_chains == cap_chains) {
                cap_chains *= 2;
                int32_t *q = realloc(plan->chain_off,
                                     (size_t)(cap_chains + 1) * sizeof *q);
                if (!q) {
                    st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
                    break;
                }
                plan->chain_off = q;
            }
            plan->chain_off[++plan->num_chains] = ops.num;
        }
    }
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
