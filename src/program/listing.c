/*
 * The listing: the shared code and the index tables in readable form, so
 * that a reader can follow how a node's index selects what it sends, to
 * whom, by which port, and what it reduces (one node's local program:
 * listing_node.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "listing.h"

static void frag_expr(mrc__strbuf_t *sb, const mrc__insn_t *in)
{
    if (in->flags & MRC__INSN_WHOLE) {
        mrc__sb_puts(sb, "the slice");
        return;
    }
    mrc__sb_puts(sb, "frag (");
    int any = 0;
    if (in->frag_pos) {
        mrc__sb_puts(sb, in->frag_pos == 1 ? "pos" : "-pos");
        any = 1;
    }
    if (in->frag_step)
        mrc__sb_printf(sb, "%s%ss",
                       any ? (in->frag_step > 0 ? " + " : " - ")
                           : (in->frag_step > 0 ? "" : "-"),
                       "");
    any |= in->frag_step != 0;
    if (in->frag_const || !any)
        mrc__sb_printf(
            sb, "%s%d", any ? (in->frag_const > 0 ? " + " : " - ") : "",
            any && in->frag_const < 0 ? -in->frag_const : in->frag_const);
    mrc__sb_puts(sb, ") mod N");
}

/* The peer of a get or wait: the node at position root + (pp * rel +
 * ps * s + pc) mod N. */
static void peer_expr(mrc__strbuf_t *sb, const mrc__insn_t *in)
{
    mrc__sb_puts(sb, "node (");
    int any = 0;
    if (in->peer_pos) {
        mrc__sb_puts(sb, in->peer_pos == 1 ? "rel" : "-rel");
        any = 1;
    }
    if (in->peer_step) {
        mrc__sb_printf(sb, "%s",
                       any ? (in->peer_step > 0 ? " + s" : " - s")
                           : (in->peer_step > 0 ? "s" : "-s"));
        any = 1;
    }
    if (in->peer_const || !any)
        mrc__sb_printf(
            sb, "%s%d", any ? (in->peer_const > 0 ? " + " : " - ") : "",
            any && in->peer_const < 0 ? -in->peer_const : in->peer_const);
    mrc__sb_puts(sb, ") mod N from the root");
}

static void pred_text(mrc__strbuf_t *sb, const mrc__insn_t *in)
{
    switch (in->pred) {
    case MRC__PRED_REL_EQ:
        if (in->pred_lo < 0)
            mrc__sb_printf(sb, "  if rel = N%d", in->pred_lo);
        else
            mrc__sb_printf(sb, "  if rel = %d", in->pred_lo);
        break;
    case MRC__PRED_REL_IN:
        mrc__sb_printf(sb, "  if %d <= rel <= N%+d", in->pred_lo, in->pred_hi);
        break;
    case MRC__PRED_ALONE: mrc__sb_puts(sb, "  if N = 1"); break;
    case MRC__PRED_TREE_CHILD:
        mrc__sb_puts(sb, "  if rel mod 2^(t+1) = 2^t");
        mrc__sb_puts(sb, mrc__listing_tree_before(in));
        break;
    case MRC__PRED_TREE_PARENT:
        mrc__sb_printf(sb, "  if rel mod 2^(t+1) = 0 and rel + 2^t < N%s",
                       in->pred_lo == 1   ? " and rel = 0"
                       : in->pred_lo == 2 ? " and rel > 0"
                                          : "");
        mrc__sb_puts(sb, mrc__listing_tree_before(in));
        break;
    default: break;
    }
}

static void shared_frag(mrc__strbuf_t *sb, const mrc__insn_t *in,
                        const void *ctx)
{
    (void)ctx;
    frag_expr(sb, in);
}

static void shared_peer(mrc__strbuf_t *sb, const mrc__insn_t *in,
                        const void *ctx)
{
    (void)ctx;
    peer_expr(sb, in);
}

/* A send of the shared code: what, from which buffer, to whom. */
static void send_text(mrc__strbuf_t *sb, const mrc__insn_t *in)
{
    mrc__sb_puts(sb, "send   ");
    frag_expr(sb, in);
    if (in->buf_a == in->buf_b)
        mrc__sb_printf(sb, " of %s", mrc__listing_buf(in->buf_a));
    else
        mrc__sb_printf(sb, " of %s (s = 0) / %s", mrc__listing_buf(in->buf_a),
                       mrc__listing_buf(in->buf_b));
    if (in->flags & MRC__INSN_POW)
        mrc__sb_printf(sb, " to the node at root + rel %+d * 2^t (t = %s)",
                       in->peer_const,
                       in->flags & MRC__INSN_REV ? "last s - s" : "s");
    else if (in->view != MRC__VIEW_GROUP)
        mrc__sb_puts(sb, " to the view's next node (pos + 1)");
    else
        mrc__sb_puts(sb, " to next[pos] by out_port[node]");
}

/* A receive of the shared code: what, from whom, into which buffer,
 * reduced with what. */
static void recv_text(mrc__strbuf_t *sb, const mrc_program_t *p,
                      const mrc__insn_t *in)
{
    mrc__sb_puts(sb, "recv   ");
    frag_expr(sb, in);
    if (in->flags & MRC__INSN_POW)
        mrc__sb_printf(sb,
                       " from the node at root + rel %+d * 2^t (t = %s) "
                       "into ",
                       in->peer_const,
                       in->flags & MRC__INSN_REV ? "last s - s" : "s");
    else if (in->view != MRC__VIEW_GROUP)
        mrc__sb_puts(sb, " from the view's previous node (pos - 1) into ");
    else
        mrc__sb_puts(sb, " from prev[pos] on in_port[node] into ");
    if (in->buf_a == in->buf_b)
        mrc__sb_puts(sb, mrc__listing_buf(in->buf_a));
    else
        mrc__sb_printf(sb, "%s (last s) / %s", mrc__listing_buf(in->buf_a),
                       mrc__listing_buf(in->buf_b));
    if (in->local)
        mrc__sb_printf(sb, ", %s with %s",
                       p->cfg.op == MRC_AVG ? "sum" : mrc_op_name(p->cfg.op),
                       mrc__listing_buf(in->local));
}

static void insn_text(mrc__strbuf_t *sb, const mrc_program_t *p, int i,
                      int depth)
{
    const mrc__insn_t *in = &p->code[i];
    mrc__sb_printf(sb, "  %3d  %*s", i, 2 * depth, "");
    /* hier's phases: N, pos and rel are the view's (see the legend) */
    if (in->view == MRC__VIEW_HOST)
        mrc__sb_puts(sb, "[host] ");
    else if (in->view == MRC__VIEW_LEADERS)
        mrc__sb_puts(sb, "[leaders] ");
    else if (in->view == MRC__VIEW_PLACE)
        mrc__sb_puts(sb, "[place] ");
    switch (in->op) {
    case MRC__OP_PORTS:
        mrc__sb_puts(sb, "ports  switch off the ports this node leaves idle");
        break;
    case MRC__OP_LOOP:
        if (in->flags & MRC__INSN_LOG)
            mrc__sb_puts(sb, "loop   s = 0 .. ceil(log2 N)-1");
        else
            mrc__sb_puts(sb, in->loop_extra ? "loop   s = 0 .. N-1"
                                            : "loop   s = 0 .. N-2");
        break;
    case MRC__OP_END: mrc__sb_puts(sb, "end"); break;
    case MRC__OP_SEND: send_text(sb, in); break;
    case MRC__OP_RECV: recv_text(sb, p, in); break;
    case MRC__OP_COPY:
        mrc__sb_puts(sb, "copy   ");
        frag_expr(sb, in);
        mrc__sb_printf(sb, " %s -> %s", mrc__listing_buf(in->buf_a),
                       mrc__listing_buf(in->buf_b));
        break;
    case MRC__OP_SCALE:
        mrc__sb_puts(sb, "scale  ");
        frag_expr(sb, in);
        mrc__sb_printf(sb, " of %s by 1/N (avg only)",
                       mrc__listing_buf(in->buf_b));
        break;
    default: {
        const mrc__listing_operands_t o = {shared_frag, shared_peer, NULL};
        if (!mrc__listing_memory_insn(sb, p, in, &o))
            mrc__sb_printf(sb, "?%d", in->op);
    }
    }
    pred_text(sb, in);
    mrc__sb_puts(sb, "\n");
}

/* The relays: on a routed hop every node between the sender and the
 * receiver forwards each message (receive from the route's node before
 * it, send the same to the one after it). */
static mrc_status_t relay_text(mrc__strbuf_t *sb, const mrc_program_t *p)
{
    enum { SHOWN_RELAYS = 64 };
    int32_t *first = NULL;
    mrc__relay_t *list = NULL;
    mrc_status_t st = mrc__relay_index(p, &first, &list);
    if (st != MRC_OK)
        return st;
    int total = first[p->num_nodes], shown = 0;
    if (total > 0)
        mrc__sb_printf(sb,
                       "\nrelays (%d: each forwards every message of "
                       "its hop, same tag and count):\n",
                       total);
    for (int v = 0; v < p->num_nodes && shown < SHOWN_RELAYS; v++)
        for (int i = first[v]; i < first[v + 1] && shown < SHOWN_RELAYS;
             i++, shown++) {
            const mrc__relay_t *r = &list[i];
            int off = p->route_off[r->route];
            int len = p->route_off[r->route + 1] - off;
            mrc__sb_printf(sb,
                           "  node %d relays stream %d, hop %d -> %d: "
                           "from node %d to node %d by port %d\n",
                           v, r->stream, r->src, p->route_nodes[off + len - 1],
                           p->route_nodes[off + r->index - 1],
                           p->route_nodes[off + r->index + 1],
                           p->route_ports[off + r->index]);
        }
    if (total > shown)
        mrc__sb_printf(sb, "  ... %d more relays\n", total - shown);
    free(first);
    free(list);
    return MRC_OK;
}

/* The port mask: per phase, the ports each node leaves idle. */
static mrc_status_t mask_text(mrc__strbuf_t *sb, const mrc_program_t *p)
{
    enum { SHOWN_PHASES = 8, SHOWN_NODES = 16 };
    mrc_status_t st = mrc__port_mask_ready(p);
    if (st != MRC_OK)
        return st;
    if (p->num_port_phases == 0) {
        mrc__sb_puts(sb, "\nport mask: none (groups this large keep every "
                         "port on)\n");
        return MRC_OK;
    }
    int most = 0;
    for (int u = 0; u < p->num_nodes; u++)
        if (p->nodes[u].num_ports > most)
            most = p->nodes[u].num_ports;
    uint8_t *idle = malloc((size_t)most + 1);
    if (!idle)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    mrc__sb_printf(sb,
                   "\nport mask (%d phase%s: the ports each node leaves "
                   "idle, which may be switched off):\n",
                   p->num_port_phases, p->num_port_phases > 1 ? "s" : "");
    for (int ph = 0; ph < p->num_port_phases && ph < SHOWN_PHASES; ph++) {
        const mrc__port_phase_t *f = &p->port_phases[ph];
        for (int u = 0; u < p->num_nodes && u < SHOWN_NODES; u++) {
            mrc__port_idle(p, ph, u, idle);
            mrc__sb_printf(sb,
                           "  phase %d (steps %d-%d): node %d idle ports "
                           "{",
                           ph, f->first_step, f->first_step + f->num_steps - 1,
                           u);
            const char *sep = "";
            for (int q = 0; q < p->nodes[u].num_ports; q++)
                if (idle[q]) {
                    mrc__sb_printf(sb, "%s%d", sep, q);
                    sep = ", ";
                }
            mrc__sb_puts(sb, "}\n");
        }
        if (p->num_nodes > SHOWN_NODES)
            mrc__sb_printf(sb, "  ... %d more nodes\n",
                           p->num_nodes - SHOWN_NODES);
    }
    if (p->num_port_phases > SHOWN_PHASES)
        mrc__sb_printf(sb, "  ... %d more phases\n",
                       p->num_port_phases - SHOWN_PHASES);
    free(idle);
    return MRC_OK;
}

/* The program's configuration, its shared code and how fragments map to
 * elements. */
static void code_text(mrc__strbuf_t *sb, const mrc_program_t *p)
{
    const mrc_compile_config_t *c = &p->cfg;
    mrc__sb_printf(sb, "program  %s of %zu %s",
                   mrc_collective_name(c->collective), c->count,
                   mrc_dtype_name(c->dtype));
    if (c->collective != MRC_ALLGATHER && c->collective != MRC_BROADCAST)
        mrc__sb_printf(sb, " (%s)", mrc_op_name(c->op));
    if (c->collective == MRC_REDUCE || c->collective == MRC_BROADCAST)
        mrc__sb_printf(sb, ", root rank %d", c->root);
    if (c->completion != MRC_COMPLETION_GROUP)
        mrc__sb_printf(sb, ", %s completion",
                       mrc_completion_name(c->completion));
    mrc__sb_printf(sb,
                   "\n         %d nodes, %d groups, %d streams, chunks "
                   "of %zu bytes\n\n",
                   p->num_nodes, p->num_groups, p->num_streams, c->chunk_bytes);
    mrc__sb_printf(sb,
                   "shared code (%d instructions, the same for every "
                   "node; N = the group's size, pos = the node's\n"
                   "position in the stream's ring, rel = (pos - "
                   "root_pos) mod N):\n",
                   p->code_len);
    if (c->algo == MRC_ALGO_HIER)
        mrc__sb_printf(sb,
                       "the group on %d hosts in blocks of L = N / %d "
                       "positions. On a [host] line N is L, pos the place\n"
                       "in the host and the root at the leader's place "
                       "(root_pos mod L); a [leaders] line runs\n"
                       "at the leaders only, N the hosts' count, pos the "
                       "host's, next and prev its neighbours'; a [place]\n"
                       "line runs at every node over the nodes at its place "
                       "of each host, N and pos as for the leaders:\n",
                       mrc__program_hosts(p), mrc__program_hosts(p));
    int depth = 0;
    for (int i = 0; i < p->code_len; i++) {
        depth -= p->code[i].op == MRC__OP_END;
        insn_text(sb, p, i, depth < 0 ? 0 : depth);
        depth += p->code[i].op == MRC__OP_LOOP;
    }
    static const char *const addressing[] = {
        "the stream's slice cut in N parts",
        "block of the node at pos f-1 (it ends up holding it)",
        "block of the node at pos f", "the whole slice",
        "piece f mod H of block f / H: the slice cut in L blocks, each in H "
        "pieces (a [host] line's f is a block, a [place] line's a piece of "
        "its place's block)"};
    mrc__sb_printf(sb, "fragment f = %s%s\n\n", addressing[p->addressing],
                   c->algo == MRC_ALGO_HIER && p->addressing == MRC__ADDR_SPLIT
                       ? " (the leaders' N: the hosts' count)"
                       : "");
}

/* Listed in full up to this many (nodes; streams 4 times as many). */
enum { SHOWN = 16 };

/* The streams: ring, direction, slice and ring order. */
static void streams_text(mrc__strbuf_t *sb, const mrc_program_t *p)
{
    mrc__sb_puts(sb, "streams (rings, each way round):\n"
                     "     k  group  ring  dir  elements        ring order"
                     " (node at pos 0, 1, ...)\n");
    for (int k = 0; k < p->num_streams && k < 4 * SHOWN; k++) {
        const mrc__stream_t *s = &p->streams[k];
        char range[48];
        snprintf(range, sizeof range, "[%llu, %llu)",
                 (unsigned long long)s->slice_off,
                 (unsigned long long)(s->slice_off + s->slice_len));
        mrc__sb_printf(sb, "  %4d  %5d  %4d  %-3s  %-14s ", k, s->group,
                       s->ring, s->reversed ? "rev" : "fwd", range);
        int n = mrc__stream_size(p, k);
        for (int i = 0; i < n && i < SHOWN; i++)
            mrc__sb_printf(sb, " %d", mrc__stream_node(p, k, i));
        mrc__sb_puts(sb, n > SHOWN ? " ...\n" : "\n");
    }
    if (p->num_streams > 4 * SHOWN)
        mrc__sb_printf(sb, "  ... %d more streams\n",
                       p->num_streams - 4 * SHOWN);
}

/* The node table: group, rank, idle ports and each stream's entry. */
static void node_table_text(mrc__strbuf_t *sb, const mrc_program_t *p,
                            const int32_t *first, const uint8_t *active)
{
    mrc__sb_puts(sb, "\nnode table (per stream of the node's group: pos "
                     "next prev out_port in_port):\n"
                     "  node  group  rank  idle ports   streams\n");
    for (int u = 0; u < p->num_nodes && u < SHOWN; u++) {
        const mrc__node_t *nd = &p->nodes[u];
        int idle = 0;
        for (int q = 0; q < nd->num_ports; q++)
            idle += !active[first[u] + q];
        mrc__sb_printf(sb, "  %4d  %5d  %4d  %4d of %-3d ", u, nd->group,
                       nd->rank, idle, nd->num_ports);
        if (nd->group >= 0) {
            const mrc__group_t *g = &p->groups[nd->group];
            for (int j = 0; j < g->num_streams && j < 8; j++) {
                const mrc__node_stream_t *e =
                    mrc__node_stream(p, u, g->first_stream + j);
                mrc__sb_printf(sb, " [%d %d %d p%d p%d]", e->pos, e->next,
                               e->prev, e->out_port, e->in_port);
            }
            if (g->num_streams > 8)
                mrc__sb_puts(sb, " ...");
        }
        mrc__sb_puts(sb, "\n");
    }
    if (p->num_nodes > SHOWN)
        mrc__sb_printf(sb, "  ... %d more nodes\n", p->num_nodes - SHOWN);
}

/* One node's first steps, spelled out. */
static void first_ops_text(mrc__strbuf_t *sb, const mrc_program_t *p)
{
    mrc__plan_t plan;
    int u0 = p->num_groups > 0 ? p->members[p->groups[0].first_member] : 0;
    if (mrc__plan_build(p, u0, UINT64_MAX, 0, &plan) == MRC_OK) {
        mrc__sb_printf(sb, "\nnode %d, first stream, whole fragments:\n", u0);
        int shown = 0;
        for (int i = 0; i < plan.num_ops && shown < 8; i++) {
            const mrc__op_t *op = &plan.ops[i];
            if (op->stream != plan.ops[0].stream)
                break;
            shown++;
            if (op->kind == MRC__SEND)
                mrc__sb_printf(
                    sb,
                    "  step %d: send frag %d (%llu elements "
                    "of %s at %llu) to node %d by port %d"
                    "%s\n",
                    op->step, op->frag, (unsigned long long)op->count,
                    mrc__listing_buf(op->src), (unsigned long long)op->src_off,
                    op->peer, op->port,
                    op->peer != op->ring_peer ? ", relayed on" : "");
            else if (op->kind == MRC__RECV)
                mrc__sb_printf(sb,
                               "  step %d: recv frag %d from node %d "
                               "on port %d into %s at %llu%s\n",
                               op->step, op->frag, op->peer, op->port,
                               mrc__listing_buf(op->dst),
                               (unsigned long long)op->dst_off,
                               op->local ? ", reduced" : "");
            else
                mrc__sb_printf(sb, "  step %d: %s frag %d (%llu elements)%s\n",
                               op->step, mrc__listing_op_kind(op->kind),
                               op->frag, (unsigned long long)op->count,
                               op->kind == MRC__GET || op->kind == MRC__WAIT
                                   ? mrc__listing_from_node(op->peer)
                                   : "");
        }
        mrc__plan_free(&plan);
    }
}

mrc_status_t mrc_program_listing(const mrc_program_t *p, char **text)
{
    if (!p || !text)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_program_listing: NULL");
    *text = NULL;
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    code_text(&sb, p);
    streams_text(&sb, p);
    int32_t *first = NULL;
    uint8_t *active = NULL;
    mrc_status_t st = mrc__active_ports(p, &first, &active);
    if (st != MRC_OK) {
        mrc__sb_free(&sb);
        return st;
    }
    node_table_text(&sb, p, first, active);
    free(first);
    free(active);
    st = relay_text(&sb, p);
    if (st == MRC_OK)
        st = mask_text(&sb, p);
    if (st != MRC_OK) {
        mrc__sb_free(&sb);
        return st;
    }
    first_ops_text(&sb, p);
    *text = mrc__sb_take(&sb);
    if (!*text)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    return MRC_OK;
}
