/*
 * One node's local program: the shared code with the node's table values
 * (its position, rel, N, neighbours, ports and routes) put in, per stream
 * of its group, its first operations, and the hops it relays; as text or
 * one JSON object (mrc compile --node).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "listing.h"
#include "ring_math.h"

typedef mrc__view_pos_t local_view_t;

static int local_view_node(const mrc_program_t *p, int k, const local_view_t *v,
                           int q)
{
    return mrc__stream_node(p, k, v->base + mrc__ring_mod(q, v->n) * v->stride);
}

/* "(c + s) mod m", "(c - s) mod m" or "c": an expression in s with the
 * node's values folded into the constant c. */
static void affine_s(mrc__strbuf_t *sb, long c, int step, int m,
                     const char *var)
{
    if (step == 0) {
        mrc__sb_printf(sb, "%d", mrc__ring_mod(c, m));
        return;
    }
    mrc__sb_puts(sb, "(");
    if (mrc__ring_mod(c, m) != 0)
        mrc__sb_printf(sb, "%d %s ", mrc__ring_mod(c, m), step > 0 ? "+" : "-");
    else if (step < 0)
        mrc__sb_puts(sb, "-");
    if (step != 1 && step != -1)
        mrc__sb_printf(sb, "%d", step < 0 ? -step : step);
    mrc__sb_printf(sb, "%s) mod %d", var, m);
}

/* The fragment of an instruction at this node: f = (frag_pos * pos +
 * frag_step * s + frag_const) mod M, pos given. */
static void local_frag(mrc__strbuf_t *sb, const mrc_program_t *p,
                       const mrc__insn_t *in, const local_view_t *v, int n)
{
    if ((in->flags & MRC__INSN_WHOLE) || p->addressing == MRC__ADDR_WHOLE) {
        mrc__sb_puts(sb, "the slice");
        return;
    }
    int cells = p->addressing == MRC__ADDR_CELLS;
    int m = cells ? v->n : mrc__frag_space(p, n);
    mrc__sb_puts(sb, "frag ");
    affine_s(sb, (long)in->frag_pos * v->pos + in->frag_const, in->frag_step, m,
             "s");
}

/* Whether a ring predicate holds at rel (-1: it depends on the loop's
 * step t, the tree's). */
static int local_pred(const mrc__insn_t *in, int rel, int n)
{
    if (in->pred == MRC__PRED_TREE_CHILD || in->pred == MRC__PRED_TREE_PARENT)
        return -1;
    return mrc__pred_holds_ring(in, rel, n);
}

/* " by port P" (how: " by", " on"), or nothing for a hop on no port
 * (the hier family's hosts are not on the topology's links). */
static void local_port(mrc__strbuf_t *sb, const char *how, int port)
{
    if (port >= 0)
        mrc__sb_printf(sb, "%s port %d", how, port);
}

/* The route of a hop, as " through nodes a b" (its relays), or "". */
static void local_route(mrc__strbuf_t *sb, const mrc_program_t *p, int r)
{
    if (r < 0 || p->route_off[r + 1] - p->route_off[r] <= 2)
        return;
    mrc__sb_puts(sb, ", relayed by node");
    if (p->route_off[r + 1] - p->route_off[r] > 3)
        mrc__sb_puts(sb, "s");
    for (int j = p->route_off[r] + 1; j + 1 < p->route_off[r + 1]; j++)
        mrc__sb_printf(sb, " %d", p->route_nodes[j]);
}

/* The peer of a get or wait at this node: the node at view position
 * (root + peer_pos * rel + peer_step * s + peer_const) mod N. */
static void local_peer(mrc__strbuf_t *sb, const mrc_program_t *p, int k,
                       const mrc__insn_t *in, const local_view_t *v)
{
    long c = (long)v->root + (long)in->peer_pos * v->rel + in->peer_const;
    if (in->peer_step == 0) {
        mrc__sb_printf(sb, "node %d",
                       local_view_node(p, k, v, (int)mrc__ring_mod(c, v->n)));
        return;
    }
    mrc__sb_puts(sb, "the node at position ");
    affine_s(sb, c, in->peer_step, v->n, "s");
}

/* The local program's operands (see mrc__listing_operands_t). */
typedef struct local_ctx {
    const mrc_program_t *p;
    int k, n;
    const local_view_t *v;
} local_ctx_t;

static void local_frag_of(mrc__strbuf_t *sb, const mrc__insn_t *in,
                          const void *ctx)
{
    const local_ctx_t *c = ctx;
    local_frag(sb, c->p, in, c->v, c->n);
}

static void local_peer_of(mrc__strbuf_t *sb, const mrc__insn_t *in,
                          const void *ctx)
{
    const local_ctx_t *c = ctx;
    local_peer(sb, c->p, c->k, in, c->v);
}

/* A send at node u: what, from which buffer, to which node by which
 * port (or the tree's or the view's peer). */
static void local_send(mrc__strbuf_t *sb, const mrc_program_t *p, int k,
                       const mrc__insn_t *in, const local_view_t *vp, int n,
                       const mrc__node_stream_t *e)
{
    local_view_t v = *vp;
    int tree = in->flags & MRC__INSN_POW;
    mrc__sb_puts(sb, "send   ");
    local_frag(sb, p, in, &v, n);
    if (in->buf_a == in->buf_b)
        mrc__sb_printf(sb, " of %s", mrc__listing_buf(in->buf_a));
    else
        mrc__sb_printf(sb, " of %s (s = 0) / %s", mrc__listing_buf(in->buf_a),
                       mrc__listing_buf(in->buf_b));
    if (tree) {
        mrc__sb_printf(sb,
                       " to the node at position (%d %+d * 2^t) mod "
                       "%d",
                       v.pos, in->peer_const, v.n);
    } else if (in->view != MRC__VIEW_GROUP) {
        mrc__sb_printf(sb, " to node %d", local_view_node(p, k, &v, v.pos + 1));
    } else {
        mrc__sb_printf(sb, " to node %d", e->next);
        local_port(sb, " by", e->out_port);
        local_route(sb, p, e->route);
    }
}

/* A receive at node u: what, from which node on which port, into which
 * buffer, reduced with what. */
static void local_recv(mrc__strbuf_t *sb, const mrc_program_t *p, int k,
                       const mrc__insn_t *in, const local_view_t *vp, int n,
                       const mrc__node_stream_t *e)
{
    local_view_t v = *vp;
    int tree = in->flags & MRC__INSN_POW;
    const char *op = p->cfg.op == MRC_AVG ? "sum" : mrc_op_name(p->cfg.op);
    mrc__sb_puts(sb, "recv   ");
    local_frag(sb, p, in, &v, n);
    if (tree)
        mrc__sb_printf(sb,
                       " from the node at position (%d %+d * 2^t) "
                       "mod %d",
                       v.pos, in->peer_const, v.n);
    else if (in->view != MRC__VIEW_GROUP)
        mrc__sb_printf(sb, " from node %d",
                       local_view_node(p, k, &v, v.pos - 1));
    else {
        mrc__sb_printf(sb, " from node %d", e->prev);
        local_port(sb, " on", e->in_port);
    }
    if (in->buf_a == in->buf_b)
        mrc__sb_printf(sb, " into %s", mrc__listing_buf(in->buf_a));
    else
        mrc__sb_printf(sb, " into %s (last s) / %s",
                       mrc__listing_buf(in->buf_a),
                       mrc__listing_buf(in->buf_b));
    if (in->local)
        mrc__sb_printf(sb, ", %s with %s", op, mrc__listing_buf(in->local));
}

/* Why node u does not run `in` (its view, predicate, group or operator),
 * or NULL if it does; holds as local_pred gives it. */
static const char *local_skip(const mrc_program_t *p, const mrc__insn_t *in,
                              const local_view_t *v, int n, int holds)
{
    if (!v->member)
        return "not its host's leader";
    if (!holds)
        return "its rel fails the condition";
    if ((in->op == MRC__OP_SEND || in->op == MRC__OP_RECV) && v->n == 1)
        return "a group of one";
    if (in->op == MRC__OP_SCALE && (p->cfg.op != MRC_AVG || n == 1))
        return "the operator is not avg";
    return NULL;
}

/* One instruction of the shared code with node u's values of stream k. */
static void local_insn(mrc__strbuf_t *sb, const mrc_program_t *p, int k, int u,
                       int i, int depth)
{
    const mrc__insn_t *in = &p->code[i];
    const mrc__stream_t *st = &p->streams[k];
    const mrc__node_stream_t *e = mrc__node_stream(p, u, k);
    int n = mrc__stream_size(p, k);
    local_view_t v = mrc__view_pos(p, in->view, n, e->pos, st->root_pos);
    mrc__sb_printf(sb, "%3d  %*s", i, 2 * depth, "");
    if (in->view == MRC__VIEW_HOST)
        mrc__sb_printf(sb, "[host: N %d, pos %d] ", v.n, v.pos);
    else if (in->view == MRC__VIEW_LEADERS)
        mrc__sb_printf(sb, "[leaders: N %d, pos %d] ", v.n, v.pos);
    else if (in->view == MRC__VIEW_PLACE)
        mrc__sb_printf(sb, "[place: N %d, pos %d] ", v.n, v.pos);
    int holds = local_pred(in, v.rel, v.n);
    const char *skip = local_skip(p, in, &v, n, holds);
    if (skip && in->op != MRC__OP_LOOP && in->op != MRC__OP_END) {
        mrc__sb_printf(sb, "-- (not run here: %s)", skip);
        return;
    }
    switch (in->op) {
    case MRC__OP_PORTS:
        mrc__sb_printf(sb, "ports  switch off the ports node %d leaves idle",
                       u);
        break;
    case MRC__OP_LOOP: {
        int iters = v.member ? mrc__loop_iters(in, v.n) : 0;
        if (iters <= 0)
            mrc__sb_puts(sb, "loop   (no iterations at this node)");
        else
            mrc__sb_printf(sb, "loop   s = 0 .. %d", iters - 1);
        break;
    }
    case MRC__OP_END: mrc__sb_puts(sb, "end"); break;
    case MRC__OP_SEND: local_send(sb, p, k, in, &v, n, e); break;
    case MRC__OP_RECV: local_recv(sb, p, k, in, &v, n, e); break;
    case MRC__OP_COPY:
        mrc__sb_puts(sb, "copy   ");
        local_frag(sb, p, in, &v, n);
        mrc__sb_printf(sb, " %s -> %s", mrc__listing_buf(in->buf_a),
                       mrc__listing_buf(in->buf_b));
        break;
    case MRC__OP_SCALE:
        mrc__sb_puts(sb, "scale  ");
        local_frag(sb, p, in, &v, n);
        mrc__sb_printf(sb, " of %s by 1/%d", mrc__listing_buf(in->buf_b), n);
        break;
    default: {
        const local_ctx_t c = {p, k, n, &v};
        const mrc__listing_operands_t o = {local_frag_of, local_peer_of, &c};
        if (!mrc__listing_memory_insn(sb, p, in, &o))
            mrc__sb_printf(sb, "?%d", in->op);
    }
    }
    if (holds < 0) { /* the tree's: rel given, t the loop's step */
        mrc__sb_printf(sb,
                       in->pred == MRC__PRED_TREE_CHILD
                           ? "  if %d mod 2^(t+1) = 2^t"
                           : "  if %d mod 2^(t+1) = 0 and %d + 2^t < %d",
                       v.rel, v.rel, v.n);
        mrc__sb_puts(sb, mrc__listing_tree_before(in));
    }
}

/* Streams of a node shown in full; the rest are counted. */
enum { LOCAL_STREAMS = 64, LOCAL_OPS = 8 };

/* The first operations of node u's chain of stream k, whole fragments. */
static void local_ops(mrc__strbuf_t *sb, const mrc_program_t *p, int u, int k,
                      int json)
{
    mrc__chain_iter_t it;
    mrc__chain_begin(&it, p, u, k, 0, 1, 0);
    mrc__op_t op;
    mrc_status_t st;
    for (int shown = 0;
         shown < LOCAL_OPS && mrc__chain_next(&it, &op, &st) == 1; shown++) {
        mrc__strbuf_t line;
        mrc__sb_init(&line);
        mrc__sb_printf(&line, "step %d: %s", op.step,
                       mrc__listing_op_kind(op.kind));
        if (op.frag >= 0 && op.kind != MRC__SIGNAL && op.kind != MRC__WAIT &&
            op.kind != MRC__BARRIER)
            mrc__sb_printf(&line, " frag %d (%llu elements)", op.frag,
                           (unsigned long long)op.count);
        if (op.kind == MRC__SEND)
            mrc__sb_printf(&line, " of %s at %llu to node %d by port %d",
                           mrc__listing_buf(op.src),
                           (unsigned long long)op.src_off, op.peer, op.port);
        else if (op.kind == MRC__RECV)
            mrc__sb_printf(&line,
                           " from node %d on port %d into %s at %llu"
                           "%s",
                           op.peer, op.port, mrc__listing_buf(op.dst),
                           (unsigned long long)op.dst_off,
                           op.local ? ", reduced" : "");
        else if (op.kind == MRC__GET || op.kind == MRC__WAIT)
            mrc__sb_puts(&line, mrc__listing_from_node(op.peer));
        if (json) {
            mrc__sb_puts(sb, shown ? ", " : "");
            mrc__sb_json_string(sb, line.failed ? "" : line.data);
        } else {
            mrc__sb_printf(sb, "    %s\n", line.failed ? "" : line.data);
        }
        mrc__sb_free(&line);
    }
}

static void local_stream_json(mrc__strbuf_t *sb, const mrc_program_t *p, int u,
                              int k)
{
    const mrc__stream_t *s = &p->streams[k];
    const mrc__node_stream_t *e = mrc__node_stream(p, u, k);
    int n = mrc__stream_size(p, k);
    mrc__sb_printf(sb,
                   "{\"stream\": %d, \"ring\": %d, \"reversed\": %s, "
                   "\"slice\": [%llu, %llu], \"pos\": %d, \"rel\": %d, "
                   "\"next\": %d, \"prev\": %d, \"out_port\": %d, "
                   "\"in_port\": %d, \"relays\": [",
                   k, s->ring, s->reversed ? "true" : "false",
                   (unsigned long long)s->slice_off,
                   (unsigned long long)s->slice_len, e->pos,
                   mrc__ring_mod((long)e->pos - s->root_pos, n), e->next,
                   e->prev, e->out_port, e->in_port);
    if (e->route >= 0)
        for (int j = p->route_off[e->route] + 1;
             j + 1 < p->route_off[e->route + 1]; j++)
            mrc__sb_printf(sb, "%s%d",
                           j > p->route_off[e->route] + 1 ? ", " : "",
                           p->route_nodes[j]);
    mrc__sb_puts(sb, "],\n    \"code\": [");
    int depth = 0;
    for (int i = 0; i < p->code_len; i++) {
        depth -= p->code[i].op == MRC__OP_END;
        mrc__strbuf_t line;
        mrc__sb_init(&line);
        local_insn(&line, p, k, u, i, depth < 0 ? 0 : depth);
        mrc__sb_puts(sb, i ? ",\n      " : "\n      ");
        mrc__sb_json_string(sb, line.failed ? "" : line.data);
        mrc__sb_free(&line);
        depth += p->code[i].op == MRC__OP_LOOP;
    }
    mrc__sb_puts(sb, "],\n    \"first_ops\": [");
    local_ops(sb, p, u, k, 1);
    mrc__sb_puts(sb, "]}");
}

static void local_stream_text(mrc__strbuf_t *sb, const mrc_program_t *p, int u,
                              int k)
{
    const mrc__stream_t *s = &p->streams[k];
    const mrc__node_stream_t *e = mrc__node_stream(p, u, k);
    int n = mrc__stream_size(p, k);
    mrc__sb_printf(sb,
                   "\nstream %d: ring %d %s, elements [%llu, %llu); "
                   "pos %d, rel %d (root at pos %d), N %d\n",
                   k, s->ring, s->reversed ? "rev" : "fwd",
                   (unsigned long long)s->slice_off,
                   (unsigned long long)(s->slice_off + s->slice_len), e->pos,
                   mrc__ring_mod((long)e->pos - s->root_pos, n), s->root_pos,
                   n);
    mrc__sb_printf(sb, "  next node %d", e->next);
    local_port(sb, " by", e->out_port);
    local_route(sb, p, e->route);
    mrc__sb_printf(sb, "; prev node %d", e->prev);
    local_port(sb, " on", e->in_port);
    mrc__sb_puts(sb, "\n");
    int depth = 0;
    for (int i = 0; i < p->code_len; i++) {
        depth -= p->code[i].op == MRC__OP_END;
        mrc__sb_puts(sb, "  ");
        local_insn(sb, p, k, u, i, depth < 0 ? 0 : depth);
        mrc__sb_puts(sb, "\n");
        depth += p->code[i].op == MRC__OP_LOOP;
    }
    mrc__sb_puts(sb, "  first operations (whole fragments):\n");
    local_ops(sb, p, u, k, 0);
}

/* The hops node u relays for others (routed hops through it): each
 * message received from the route's node before u is sent on, same tag
 * and count, to the one after it. */
static mrc_status_t local_relays(mrc__strbuf_t *sb, const mrc_program_t *p,
                                 int u, int json)
{
    int32_t *first = NULL;
    mrc__relay_t *list = NULL;
    mrc_status_t st = mrc__relay_index(p, &first, &list);
    if (st != MRC_OK)
        return st;
    int total = first[u + 1] - first[u];
    if (json)
        mrc__sb_puts(sb, "], \"relays\": [");
    else if (total > 0)
        mrc__sb_printf(sb,
                       "\nrelays (%d: node %d forwards every message of "
                       "these hops, same tag and count):\n",
                       total, u);
    for (int i = first[u]; i < first[u + 1] && i - first[u] < LOCAL_STREAMS;
         i++) {
        const mrc__relay_t *r = &list[i];
        int off = p->route_off[r->route];
        int last = p->route_nodes[p->route_off[r->route + 1] - 1];
        int from = p->route_nodes[off + r->index - 1];
        int to = p->route_nodes[off + r->index + 1];
        int port = p->route_ports[off + r->index];
        int in_port = p->route_in_ports[off + r->index];
        if (json)
            mrc__sb_printf(sb,
                           "%s{\"stream\": %d, \"hop\": [%d, %d], "
                           "\"from\": %d, \"in_port\": %d, \"to\": %d, "
                           "\"out_port\": %d}",
                           i > first[u] ? ", " : "", r->stream, r->src, last,
                           from, in_port, to, port);
        else
            mrc__sb_printf(sb,
                           "  stream %d, hop %d -> %d: from node %d on "
                           "port %d to node %d by port %d\n",
                           r->stream, r->src, last, from, in_port, to, port);
    }
    if (!json && total > LOCAL_STREAMS)
        mrc__sb_printf(sb, "  ... %d more\n", total - LOCAL_STREAMS);
    free(first);
    free(list);
    return MRC_OK;
}

mrc_status_t mrc__program_node_listing(const mrc_program_t *p, int node,
                                       int json, char **text)
{
    if (!p || !text)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc__program_node_listing: NULL");
    *text = NULL;
    if (node < 0 || node >= p->num_nodes)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "node %d is not a node of the program (0..%d)", node,
                          p->num_nodes - 1);
    const mrc__node_t *nd = &p->nodes[node];
    const mrc_compile_config_t *c = &p->cfg;
    const mrc__group_t *g = nd->group >= 0 ? &p->groups[nd->group] : NULL;
    int streams = g ? g->num_streams : 0;
    int shown = streams < LOCAL_STREAMS ? streams : LOCAL_STREAMS;
    mrc_status_t st = MRC_OK;
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    if (json) {
        mrc__sb_printf(&sb,
                       "{\"node\": %d, \"collective\": \"%s\", "
                       "\"count\": %zu, \"dtype\": \"%s\", \"op\": \"%s\", "
                       "\"family\": \"%s\", \"completion\": \"%s\", "
                       "\"group\": %d, \"rank\": %d, "
                       "\"group_size\": %d, \"ports\": %d, "
                       "\"code_instructions\": %d, \"streams_total\": %d, "
                       "\"streams\": [",
                       node, mrc_collective_name(c->collective), c->count,
                       mrc_dtype_name(c->dtype), mrc_op_name(c->op),
                       mrc_algo_name(c->algo),
                       mrc_completion_name(c->completion), nd->group, nd->rank,
                       g ? g->size : 0, nd->num_ports, p->code_len, streams);
        for (int j = 0; j < shown; j++) {
            mrc__sb_puts(&sb, j ? ",\n  " : "\n  ");
            local_stream_json(&sb, p, node, g->first_stream + j);
        }
        st = local_relays(&sb, p, node, 1);
        mrc__sb_puts(&sb, "]}\n");
    } else {
        mrc__sb_printf(&sb, "local program of node %d: %s of %zu %s", node,
                       mrc_collective_name(c->collective), c->count,
                       mrc_dtype_name(c->dtype));
        if (c->collective != MRC_ALLGATHER && c->collective != MRC_BROADCAST)
            mrc__sb_printf(&sb, " (%s)", mrc_op_name(c->op));
        if (c->collective == MRC_REDUCE || c->collective == MRC_BROADCAST)
            mrc__sb_printf(&sb, ", root rank %d", c->root);
        mrc__sb_printf(&sb, ", %s", mrc_algo_name(c->algo));
        if (c->completion != MRC_COMPLETION_GROUP)
            mrc__sb_printf(&sb, ", %s completion",
                           mrc_completion_name(c->completion));
        mrc__sb_puts(&sb, "\n");
        if (!g) {
            mrc__sb_puts(&sb, "  in no group: the node runs nothing\n");
        } else {
            mrc__sb_printf(&sb,
                           "  group %d, rank %d of %d, %d port%s, %d "
                           "stream%s\n  the shared code (%d instructions) "
                           "with this node's table values in place\n  of "
                           "pos, rel, N, next, prev and the ports\n",
                           nd->group, nd->rank, g->size, nd->num_ports,
                           nd->num_ports == 1 ? "" : "s", streams,
                           streams == 1 ? "" : "s", p->code_len);
            for (int j = 0; j < shown; j++)
                local_stream_text(&sb, p, node, g->first_stream + j);
            if (streams > shown)
                mrc__sb_printf(&sb, "\n... %d more streams\n", streams - shown);
        }
        st = local_relays(&sb, p, node, 0);
    }
    if (st != MRC_OK) {
        mrc__sb_free(&sb);
        return st;
    }
    *text = mrc__sb_take(&sb);
    if (!*text)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    return MRC_OK;
}
