/*
 * The listing: the shared code and the index tables in readable form, so
 * that a reader can follow how a node's index selects what it sends, to
 * whom, by which port, and what it reduces.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"

static const char *buf_name(int b)
{
    static const char *const names[] = {"-", "sendbuf", "recvbuf",
                                        "scratch", "window"};
    return b >= 0 && b <= 4 ? names[b] : "?";
}

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
        mrc__sb_printf(sb, "%s%ss", any ? (in->frag_step > 0 ? " + " : " - ")
                                        : (in->frag_step > 0 ? "" : "-"),
                       "");
    any |= in->frag_step != 0;
    if (in->frag_const || !any)
        mrc__sb_printf(sb, "%s%d", any ? (in->frag_const > 0 ? " + " : " - ")
                                       : "",
                       any && in->frag_const < 0 ? -in->frag_const
                                                 : in->frag_const);
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
        mrc__sb_printf(sb, "%s", any ? (in->peer_step > 0 ? " + s" : " - s")
                                     : (in->peer_step > 0 ? "s" : "-s"));
        any = 1;
    }
    if (in->peer_const || !any)
        mrc__sb_printf(sb, "%s%d", any ? (in->peer_const > 0 ? " + " : " - ")
                                       : "",
                       any && in->peer_const < 0 ? -in->peer_const
                                                 : in->peer_const);
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
        mrc__sb_printf(sb, "  if %d <= rel <= N%+d", in->pred_lo,
                       in->pred_hi);
        break;
    case MRC__PRED_ALONE:
        mrc__sb_puts(sb, "  if N = 1");
        break;
    case MRC__PRED_TREE_CHILD:
        mrc__sb_puts(sb, "  if rel mod 2^(t+1) = 2^t");
        break;
    case MRC__PRED_TREE_PARENT:
        mrc__sb_printf(sb, "  if rel mod 2^(t+1) = 0 and rel + 2^t < N%s",
                       in->pred_lo == 1   ? " and rel = 0"
                       : in->pred_lo == 2 ? " and rel > 0"
                                          : "");
        break;
    default:
        break;
    }
}

/* How an instruction's fragment and peer are written: as expressions
 * (the shared code) or with one node's values (its local program). */
typedef struct operands {
    void (*frag)(mrc__strbuf_t *sb, const mrc__insn_t *in, const void *ctx);
    void (*peer)(mrc__strbuf_t *sb, const mrc__insn_t *in, const void *ctx);
    const void *ctx;
} operands_t;

/* The memory-semantic instructions, worded alike in both listings;
 * 0 if `in` is not one. */
static int memory_insn_text(mrc__strbuf_t *sb, const mrc_program_t *p,
                            const mrc__insn_t *in, const operands_t *o)
{
    switch (in->op) {
    case MRC__OP_EXPOSE:
        mrc__sb_puts(sb, "expose ");
        if (in->flags & MRC__INSN_ALL)
            mrc__sb_puts(sb, "all");
        else
            o->frag(sb, in, o->ctx);
        mrc__sb_printf(sb, " of %s %s", buf_name(in->buf_a),
                       in->flags & MRC__INSN_REF ? "by reference"
                                                 : "by copy into the window");
        return 1;
    case MRC__OP_GET:
        mrc__sb_puts(sb, "get    ");
        o->frag(sb, in, o->ctx);
        mrc__sb_printf(sb, " of %s at ", buf_name(in->buf_a));
        o->peer(sb, in, o->ctx);
        mrc__sb_printf(sb, " into %s", buf_name(in->buf_b));
        if (in->local || (in->flags & MRC__INSN_ACC))
            mrc__sb_printf(sb, ", %s with %s%s",
                           p->cfg.op == MRC_AVG ? "sum" : mrc_op_name(p->cfg.op),
                           in->local ? buf_name(in->local)
                                     : buf_name(in->buf_b),
                           in->flags & MRC__INSN_ACC ? " (s = 0), then itself"
                                                     : "");
        return 1;
    case MRC__OP_SIGNAL:
        mrc__sb_printf(sb, "signal flag %d", in->flag);
        return 1;
    case MRC__OP_WAIT:
        mrc__sb_printf(sb, "wait   flag %d of ", in->flag);
        o->peer(sb, in, o->ctx);
        return 1;
    case MRC__OP_BARRIER:
        mrc__sb_printf(sb, "barrier %d of the group", in->flag);
        return 1;
    default:
        return 0;
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
    case MRC__OP_END:
        mrc__sb_puts(sb, "end");
        break;
    case MRC__OP_SEND:
        mrc__sb_puts(sb, "send   ");
        frag_expr(sb, in);
        if (in->buf_a == in->buf_b)
            mrc__sb_printf(sb, " of %s", buf_name(in->buf_a));
        else
            mrc__sb_printf(sb, " of %s (s = 0) / %s", buf_name(in->buf_a),
                           buf_name(in->buf_b));
        if (in->flags & MRC__INSN_POW)
            mrc__sb_printf(sb, " to the node at root + rel %+d * 2^t (t = %s)",
                           in->peer_const,
                           in->flags & MRC__INSN_REV ? "last s - s" : "s");
        else if (in->view != MRC__VIEW_GROUP)
            mrc__sb_puts(sb, " to the view's next node (pos + 1)");
        else
            mrc__sb_puts(sb, " to next[pos] by out_port[node]");
        break;
    case MRC__OP_RECV:
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
            mrc__sb_puts(sb, buf_name(in->buf_a));
        else
            mrc__sb_printf(sb, "%s (last s) / %s", buf_name(in->buf_a),
                           buf_name(in->buf_b));
        if (in->local)
            mrc__sb_printf(sb, ", %s with %s",
                           p->cfg.op == MRC_AVG ? "sum" : mrc_op_name(p->cfg.op),
                           buf_name(in->local));
        break;
    case MRC__OP_COPY:
        mrc__sb_puts(sb, "copy   ");
        frag_expr(sb, in);
        mrc__sb_printf(sb, " %s -> %s", buf_name(in->buf_a),
                       buf_name(in->buf_b));
        break;
    case MRC__OP_SCALE:
        mrc__sb_puts(sb, "scale  ");
        frag_expr(sb, in);
        mrc__sb_printf(sb, " of %s by 1/N (avg only)", buf_name(in->buf_b));
        break;
    default: {
        const operands_t o = {shared_frag, shared_peer, NULL};
        if (!memory_insn_text(sb, p, in, &o))
            mrc__sb_printf(sb, "?%d", in->op);
    }
    }
    pred_text(sb, in);
    mrc__sb_puts(sb, "\n");
}

mrc_status_t mrc__active_ports(const mrc_program_t *p, int32_t **port_first,
                               uint8_t **active)
{
    *port_first = calloc((size_t)p->num_nodes + 1, sizeof **port_first);
    if (!*port_first)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int u = 0; u < p->num_nodes; u++)
        (*port_first)[u + 1] = (*port_first)[u] + p->nodes[u].num_ports;
    *active = calloc((size_t)(*port_first)[p->num_nodes] + 1, 1);
    if (!*active) {
        free(*port_first);
        *port_first = NULL;
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    /* A node uses its hop's route in a stream if it sends in it at all:
     * its chain is read up to its first send (the first operation of a
     * ring code), not expanded whole (N^2 operations for a ring). */
    mrc_status_t st = MRC_OK;
    for (int u = 0; u < p->num_nodes && st == MRC_OK; u++) {
        int g = p->nodes[u].group;
        for (int j = 0; g >= 0 && j < p->groups[g].num_streams; j++) {
            int k = p->groups[g].first_stream + j;
            int r = mrc__node_stream(p, u, k)->route;
            if (r < 0 || mrc__stream_chunks(p, k, UINT64_MAX) == 0)
                continue;
            mrc__chain_iter_t it;
            mrc__chain_begin(&it, p, u, k, 0, 1, 0);
            mrc__op_t op;
            int got;
            while ((got = mrc__chain_next(&it, &op, &st)) > 0 &&
                   op.kind != MRC__SEND)
                ;
            if (got < 0)
                break;
            if (got == 0)
                continue;
            for (int i = p->route_off[r]; i < p->route_off[r + 1]; i++) {
                int v = p->route_nodes[i];
                if (i + 1 < p->route_off[r + 1])
                    (*active)[(*port_first)[v] + p->route_ports[i]] = 1;
                if (i > p->route_off[r])
                    (*active)[(*port_first)[v] + p->route_in_ports[i]] = 1;
            }
        }
    }
    if (st != MRC_OK) {
        free(*port_first);
        free(*active);
        *port_first = NULL;
        *active = NULL;
    }
    return st;
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
        mrc__sb_printf(sb, "\nrelays (%d: each forwards every message of "
                           "its hop, same tag and count):\n",
                       total);
    for (int v = 0; v < p->num_nodes && shown < SHOWN_RELAYS; v++)
        for (int i = first[v]; i < first[v + 1] && shown < SHOWN_RELAYS;
             i++, shown++) {
            const mrc__relay_t *r = &list[i];
            int off = p->route_off[r->route];
            int len = p->route_off[r->route + 1] - off;
            mrc__sb_printf(sb, "  node %d relays stream %d, hop %d -> %d: "
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
    mrc__sb_printf(sb, "\nport mask (%d phase%s: the ports each node leaves "
                       "idle, which may be switched off):\n",
                   p->num_port_phases, p->num_port_phases > 1 ? "s" : "");
    for (int ph = 0; ph < p->num_port_phases && ph < SHOWN_PHASES; ph++) {
        const mrc__port_phase_t *f = &p->port_phases[ph];
        for (int u = 0; u < p->num_nodes && u < SHOWN_NODES; u++) {
            mrc__port_idle(p, ph, u, idle);
            mrc__sb_printf(sb, "  phase %d (steps %d-%d): node %d idle ports "
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


static const char *op_kind_name(int kind)
{
    static const char *const names[] = {
        [MRC__SEND] = "send",     [MRC__RECV] = "recv",
        [MRC__COPY] = "copy",     [MRC__SCALE] = "scale",
        [MRC__EXPOSE] = "expose", [MRC__GET] = "get",
        [MRC__SIGNAL] = "signal", [MRC__WAIT] = "wait",
        [MRC__BARRIER] = "barrier", [MRC__FWD] = "forward"};
    return kind > 0 && kind <= MRC__FWD ? names[kind] : "?";
}

/* " from node P" (a per-thread buffer: one use per printf). */
static const char *peer_text(int peer)
{
    static _Thread_local char buf[32];
    snprintf(buf, sizeof buf, " from node %d", peer);
    return buf;
}

mrc_status_t mrc_program_listing(const mrc_program_t *p, char **text)
{
    if (!p || !text)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_program_listing: NULL");
    *text = NULL;
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    const mrc_compile_config_t *c = &p->cfg;
    mrc__sb_printf(&sb, "program  %s of %zu %s", mrc_collective_name(
                                                       c->collective),
                   c->count, mrc_dtype_name(c->dtype));
    if (c->collective != MRC_ALLGATHER && c->collective != MRC_BROADCAST)
        mrc__sb_printf(&sb, " (%s)", mrc_op_name(c->op));
    if (c->collective == MRC_REDUCE || c->collective == MRC_BROADCAST)
        mrc__sb_printf(&sb, ", root rank %d", c->root);
    mrc__sb_printf(&sb, "\n         %d nodes, %d groups, %d streams, chunks "
                        "of %zu bytes\n\n",
                   p->num_nodes, p->num_groups, p->num_streams,
                   c->chunk_bytes);
    mrc__sb_printf(&sb, "shared code (%d instructions, the same for every "
                        "node; N = the group's size, pos = the node's\n"
                        "position in the stream's ring, rel = (pos - "
                        "root_pos) mod N):\n",
                   p->code_len);
    if (c->algo == MRC_ALGO_HIER)
        mrc__sb_printf(&sb,
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
        insn_text(&sb, p, i, depth < 0 ? 0 : depth);
        depth += p->code[i].op == MRC__OP_LOOP;
    }
    static const char *const addressing[] = {
        "the stream's slice cut in N parts",
        "block of the node at pos f-1 (it ends up holding it)",
        "block of the node at pos f", "the whole slice",
        "piece f mod H of block f / H: the slice cut in L blocks, each in H "
        "pieces (a [host] line's f is a block, a [place] line's a piece of "
        "its place's block)"};
    mrc__sb_printf(&sb, "fragment f = %s%s\n\n", addressing[p->addressing],
                   c->algo == MRC_ALGO_HIER && p->addressing == MRC__ADDR_SPLIT
                       ? " (the leaders' N: the hosts' count)"
                       : "");

    enum { SHOWN = 16 };
    mrc__sb_puts(&sb, "streams (rings, each way round):\n"
                      "     k  group  ring  dir  elements        ring order"
                      " (node at pos 0, 1, ...)\n");
    for (int k = 0; k < p->num_streams && k < 4 * SHOWN; k++) {
        const mrc__stream_t *s = &p->streams[k];
        char range[48];
        snprintf(range, sizeof range, "[%llu, %llu)",
                 (unsigned long long)s->slice_off,
                 (unsigned long long)(s->slice_off + s->slice_len));
        mrc__sb_printf(&sb, "  %4d  %5d  %4d  %-3s  %-14s ", k, s->group,
                       s->ring, s->reversed ? "rev" : "fwd", range);
        int n = mrc__stream_size(p, k);
        for (int i = 0; i < n && i < SHOWN; i++)
            mrc__sb_printf(&sb, " %d", mrc__stream_node(p, k, i));
        mrc__sb_puts(&sb, n > SHOWN ? " ...\n" : "\n");
    }
    if (p->num_streams > 4 * SHOWN)
        mrc__sb_printf(&sb, "  ... %d more streams\n",
                       p->num_streams - 4 * SHOWN);

    int32_t *first = NULL;
    uint8_t *active = NULL;
    mrc_status_t st = mrc__active_ports(p, &first, &active);
    if (st != MRC_OK) {
        mrc__sb_free(&sb);
        return st;
    }
    mrc__sb_puts(&sb, "\nnode table (per stream of the node's group: pos "
                      "next prev out_port in_port):\n"
                      "  node  group  rank  idle ports   streams\n");
    for (int u = 0; u < p->num_nodes && u < SHOWN; u++) {
        const mrc__node_t *nd = &p->nodes[u];
        int idle = 0;
        for (int q = 0; q < nd->num_ports; q++)
            idle += !active[first[u] + q];
        mrc__sb_printf(&sb, "  %4d  %5d  %4d  %4d of %-3d ", u, nd->group,
                       nd->rank, idle, nd->num_ports);
        if (nd->group >= 0) {
            const mrc__group_t *g = &p->groups[nd->group];
            for (int j = 0; j < g->num_streams && j < 8; j++) {
                const mrc__node_stream_t *e =
                    mrc__node_stream(p, u, g->first_stream + j);
                mrc__sb_printf(&sb, " [%d %d %d p%d p%d]", e->pos, e->next,
                               e->prev, e->out_port, e->in_port);
            }
            if (g->num_streams > 8)
                mrc__sb_puts(&sb, " ...");
        }
        mrc__sb_puts(&sb, "\n");
    }
    if (p->num_nodes > SHOWN)
        mrc__sb_printf(&sb, "  ... %d more nodes\n", p->num_nodes - SHOWN);
    free(first);
    free(active);
    st = relay_text(&sb, p);
    if (st == MRC_OK)
        st = mask_text(&sb, p);
    if (st != MRC_OK) {
        mrc__sb_free(&sb);
        return st;
    }

    /* One node's first steps, spelled out. */
    mrc__plan_t plan;
    int u0 = p->num_groups > 0 ? p->members[p->groups[0].first_member] : 0;
    if (mrc__plan_build(p, u0, UINT64_MAX, 0, &plan) == MRC_OK) {
        mrc__sb_printf(&sb, "\nnode %d, first stream, whole fragments:\n",
                       u0);
        int shown = 0;
        for (int i = 0; i < plan.num_ops && shown < 8; i++) {
            const mrc__op_t *op = &plan.ops[i];
            if (op->stream != plan.ops[0].stream)
                break;
            shown++;
            if (op->kind == MRC__SEND)
                mrc__sb_printf(&sb, "  step %d: send frag %d (%llu elements "
                                    "of %s at %llu) to node %d by port %d"
                                    "%s\n",
                               op->step, op->frag,
                               (unsigned long long)op->count,
                               buf_name(op->src),
                               (unsigned long long)op->src_off, op->peer,
                               op->port,
                               op->peer != op->ring_peer ? ", relayed on"
                                                         : "");
            else if (op->kind == MRC__RECV)
                mrc__sb_printf(&sb, "  step %d: recv frag %d from node %d "
                                    "on port %d into %s at %llu%s\n",
                               op->step, op->frag, op->peer, op->port,
                               buf_name(op->dst),
                               (unsigned long long)op->dst_off,
                               op->local ? ", reduced" : "");
            else
                mrc__sb_printf(&sb, "  step %d: %s frag %d (%llu elements)%s\n",
                               op->step, op_kind_name(op->kind), op->frag,
                               (unsigned long long)op->count,
                               op->kind == MRC__GET || op->kind == MRC__WAIT
                                   ? peer_text(op->peer)
                                   : "");
        }
        mrc__plan_free(&plan);
    }
    *text = mrc__sb_take(&sb);
    if (!*text)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    return MRC_OK;
}

/* ---- one node's local program ------------------------------------------ */

/* a mod n for n >= 1. */
static int lmod(long a, int n)
{
    long r = a % n;
    return (int)(r < 0 ? r + n : r);
}

typedef mrc__view_pos_t local_view_t;

static int local_view_node(const mrc_program_t *p, int k,
                           const local_view_t *v, int q)
{
    return mrc__stream_node(p, k, v->base + lmod(q, v->n) * v->stride);
}

/* "(c + s) mod m", "(c - s) mod m" or "c": an expression in s with the
 * node's values folded into the constant c. */
static void affine_s(mrc__strbuf_t *sb, long c, int step, int m,
                     const char *var)
{
    if (step == 0) {
        mrc__sb_printf(sb, "%d", lmod(c, m));
        return;
    }
    mrc__sb_puts(sb, "(");
    if (lmod(c, m) != 0)
        mrc__sb_printf(sb, "%d %s ", lmod(c, m), step > 0 ? "+" : "-");
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
    affine_s(sb, (long)in->frag_pos * v->pos + in->frag_const,
             in->frag_step, m, "s");
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
        mrc__sb_printf(sb, "node %d", local_view_node(p, k, v, (int)lmod(c,
                                                                  v->n)));
        return;
    }
    mrc__sb_puts(sb, "the node at position ");
    affine_s(sb, c, in->peer_step, v->n, "s");
}

/* The local program's operands (see operands_t). */
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

/* One instruction of the shared code with node u's values of stream k. */
static void local_insn(mrc__strbuf_t *sb, const mrc_program_t *p, int k,
                       int u, int i, int depth)
{
    const mrc__insn_t *in = &p->code[i];
    const mrc__stream_t *st = &p->streams[k];
    const mrc__node_stream_t *e = mrc__node_stream(p, u, k);
    int n = mrc__stream_size(p, k);
    local_view_t v = mrc__view_pos(p, in->view, n, e->pos, st->root_pos);
    const char *op = mrc_op_name(p->cfg.op);
    if (p->cfg.op == MRC_AVG)
        op = "sum";
    mrc__sb_printf(sb, "%3d  %*s", i, 2 * depth, "");
    if (in->view == MRC__VIEW_HOST)
        mrc__sb_printf(sb, "[host: N %d, pos %d] ", v.n, v.pos);
    else if (in->view == MRC__VIEW_LEADERS)
        mrc__sb_printf(sb, "[leaders: N %d, pos %d] ", v.n, v.pos);
    else if (in->view == MRC__VIEW_PLACE)
        mrc__sb_printf(sb, "[place: N %d, pos %d] ", v.n, v.pos);
    int holds = local_pred(in, v.rel, v.n);
    const char *skip = !v.member  ? "not its host's leader"
                       : !holds   ? "its rel fails the condition"
                       : (in->op == MRC__OP_SEND || in->op == MRC__OP_RECV) &&
                               v.n == 1
                           ? "a group of one"
                       : in->op == MRC__OP_SCALE &&
                               (p->cfg.op != MRC_AVG || n == 1)
                           ? "the operator is not avg"
                           : NULL;
    if (skip && in->op != MRC__OP_LOOP && in->op != MRC__OP_END) {
        mrc__sb_printf(sb, "-- (not run here: %s)", skip);
        return;
    }
    int tree = in->flags & MRC__INSN_POW;
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
    case MRC__OP_END:
        mrc__sb_puts(sb, "end");
        break;
    case MRC__OP_SEND:
        mrc__sb_puts(sb, "send   ");
        local_frag(sb, p, in, &v, n);
        if (in->buf_a == in->buf_b)
            mrc__sb_printf(sb, " of %s", buf_name(in->buf_a));
        else
            mrc__sb_printf(sb, " of %s (s = 0) / %s", buf_name(in->buf_a),
                           buf_name(in->buf_b));
        if (tree) {
            mrc__sb_printf(sb, " to the node at position (%d %+d * 2^t) mod "
                           "%d", v.pos, in->peer_const, v.n);
        } else if (in->view != MRC__VIEW_GROUP) {
            mrc__sb_printf(sb, " to node %d",
                           local_view_node(p, k, &v, v.pos + 1));
        } else {
            mrc__sb_printf(sb, " to node %d", e->next);
            local_port(sb, " by", e->out_port);
            local_route(sb, p, e->route);
        }
        break;
    case MRC__OP_RECV:
        mrc__sb_puts(sb, "recv   ");
        local_frag(sb, p, in, &v, n);
        if (tree)
            mrc__sb_printf(sb, " from the node at position (%d %+d * 2^t) "
                           "mod %d", v.pos, in->peer_const, v.n);
        else if (in->view != MRC__VIEW_GROUP)
            mrc__sb_printf(sb, " from node %d",
                           local_view_node(p, k, &v, v.pos - 1));
        else
        {
            mrc__sb_printf(sb, " from node %d", e->prev);
            local_port(sb, " on", e->in_port);
        }
        if (in->buf_a == in->buf_b)
            mrc__sb_printf(sb, " into %s", buf_name(in->buf_a));
        else
            mrc__sb_printf(sb, " into %s (last s) / %s", buf_name(in->buf_a),
                           buf_name(in->buf_b));
        if (in->local)
            mrc__sb_printf(sb, ", %s with %s", op, buf_name(in->local));
        break;
    case MRC__OP_COPY:
        mrc__sb_puts(sb, "copy   ");
        local_frag(sb, p, in, &v, n);
        mrc__sb_printf(sb, " %s -> %s", buf_name(in->buf_a),
                       buf_name(in->buf_b));
        break;
    case MRC__OP_SCALE:
        mrc__sb_puts(sb, "scale  ");
        local_frag(sb, p, in, &v, n);
        mrc__sb_printf(sb, " of %s by 1/%d", buf_name(in->buf_b), n);
        break;
    default: {
        const local_ctx_t c = {p, k, n, &v};
        const operands_t o = {local_frag_of, local_peer_of, &c};
        if (!memory_insn_text(sb, p, in, &o))
            mrc__sb_printf(sb, "?%d", in->op);
    }
    }
    if (holds < 0) /* the tree's: rel given, t the loop's step */
        mrc__sb_printf(sb, in->pred == MRC__PRED_TREE_CHILD
                               ? "  if %d mod 2^(t+1) = 2^t"
                               : "  if %d mod 2^(t+1) = 0 and %d + 2^t < %d",
                       v.rel, v.rel, v.n);
}

/* Streams of a node shown in full; the rest are counted. */
enum { LOCAL_STREAMS = 64, LOCAL_OPS = 8 };

/* The first operations of node u's chain of stream k, whole fragments. */
static void local_ops(mrc__strbuf_t *sb, const mrc_program_t *p, int u,
                      int k, int json)
{
    mrc__chain_iter_t it;
    mrc__chain_begin(&it, p, u, k, 0, 1, 0);
    mrc__op_t op;
    mrc_status_t st;
    for (int shown = 0; shown < LOCAL_OPS &&
                        mrc__chain_next(&it, &op, &st) == 1;
         shown++) {
        mrc__strbuf_t line;
        mrc__sb_init(&line);
        mrc__sb_printf(&line, "step %d: %s", op.step, op_kind_name(op.kind));
        if (op.frag >= 0 && op.kind != MRC__SIGNAL && op.kind != MRC__WAIT &&
            op.kind != MRC__BARRIER)
            mrc__sb_printf(&line, " frag %d (%llu elements)", op.frag,
                           (unsigned long long)op.count);
        if (op.kind == MRC__SEND)
            mrc__sb_printf(&line, " of %s at %llu to node %d by port %d",
                           buf_name(op.src), (unsigned long long)op.src_off,
                           op.peer, op.port);
        else if (op.kind == MRC__RECV)
            mrc__sb_printf(&line, " from node %d on port %d into %s at %llu"
                           "%s", op.peer, op.port, buf_name(op.dst),
                           (unsigned long long)op.dst_off,
                           op.local ? ", reduced" : "");
        else if (op.kind == MRC__GET || op.kind == MRC__WAIT)
            mrc__sb_puts(&line, peer_text(op.peer));
        if (json) {
            mrc__sb_puts(sb, shown ? ", " : "");
            mrc__sb_json_string(sb, line.failed ? "" : line.data);
        } else {
            mrc__sb_printf(sb, "    %s\n", line.failed ? "" : line.data);
        }
        mrc__sb_free(&line);
    }
}

static void local_stream_json(mrc__strbuf_t *sb, const mrc_program_t *p,
                              int u, int k)
{
    const mrc__stream_t *s = &p->streams[k];
    const mrc__node_stream_t *e = mrc__node_stream(p, u, k);
    int n = mrc__stream_size(p, k);
    mrc__sb_printf(sb, "{\"stream\": %d, \"ring\": %d, \"reversed\": %s, "
                   "\"slice\": [%llu, %llu], \"pos\": %d, \"rel\": %d, "
                   "\"next\": %d, \"prev\": %d, \"out_port\": %d, "
                   "\"in_port\": %d, \"relays\": [",
                   k, s->ring, s->reversed ? "true" : "false",
                   (unsigned long long)s->slice_off,
                   (unsigned long long)s->slice_len, e->pos,
                   lmod((long)e->pos - s->root_pos, n), e->next, e->prev,
                   e->out_port, e->in_port);
    if (e->route >= 0)
        for (int j = p->route_off[e->route] + 1;
             j + 1 < p->route_off[e->route + 1]; j++)
            mrc__sb_printf(sb, "%s%d", j > p->route_off[e->route] + 1 ? ", "
                                                                      : "",
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

static void local_stream_text(mrc__strbuf_t *sb, const mrc_program_t *p,
                              int u, int k)
{
    const mrc__stream_t *s = &p->streams[k];
    const mrc__node_stream_t *e = mrc__node_stream(p, u, k);
    int n = mrc__stream_size(p, k);
    mrc__sb_printf(sb, "\nstream %d: ring %d %s, elements [%llu, %llu); "
                   "pos %d, rel %d (root at pos %d), N %d\n",
                   k, s->ring, s->reversed ? "rev" : "fwd",
                   (unsigned long long)s->slice_off,
                   (unsigned long long)(s->slice_off + s->slice_len), e->pos,
                   lmod((long)e->pos - s->root_pos, n), s->root_pos, n);
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
        mrc__sb_printf(sb, "\nrelays (%d: node %d forwards every message of "
                       "these hops, same tag and count):\n", total, u);
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
            mrc__sb_printf(sb, "%s{\"stream\": %d, \"hop\": [%d, %d], "
                           "\"from\": %d, \"in_port\": %d, \"to\": %d, "
                           "\"out_port\": %d}",
                           i > first[u] ? ", " : "", r->stream, r->src, last,
                           from, in_port, to, port);
        else
            mrc__sb_printf(sb, "  stream %d, hop %d -> %d: from node %d on "
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
                          "node %d is not a node of the program (0..%d)",
                          node, p->num_nodes - 1);
    const mrc__node_t *nd = &p->nodes[node];
    const mrc_compile_config_t *c = &p->cfg;
    const mrc__group_t *g = nd->group >= 0 ? &p->groups[nd->group] : NULL;
    int streams = g ? g->num_streams : 0;
    int shown = streams < LOCAL_STREAMS ? streams : LOCAL_STREAMS;
    mrc_status_t st = MRC_OK;
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    if (json) {
        mrc__sb_printf(&sb, "{\"node\": %d, \"collective\": \"%s\", "
                       "\"count\": %zu, \"dtype\": \"%s\", \"op\": \"%s\", "
                       "\"family\": \"%s\", \"group\": %d, \"rank\": %d, "
                       "\"group_size\": %d, \"ports\": %d, "
                       "\"code_instructions\": %d, \"streams_total\": %d, "
                       "\"streams\": [",
                       node, mrc_collective_name(c->collective), c->count,
                       mrc_dtype_name(c->dtype), mrc_op_name(c->op),
                       mrc_algo_name(c->algo), nd->group, nd->rank,
                       g ? g->size : 0, nd->num_ports, p->code_len, streams);
        for (int j = 0; j < shown; j++) {
            mrc__sb_puts(&sb, j ? ",\n  " : "\n  ");
            local_stream_json(&sb, p, node, g->first_stream + j);
        }
        st = local_relays(&sb, p, node, 1);
        mrc__sb_puts(&sb, "]}\n");
    } else {
        mrc__sb_printf(&sb, "local program of node %d: %s of %zu %s",
                       node, mrc_collective_name(c->collective), c->count,
                       mrc_dtype_name(c->dtype));
        if (c->collective != MRC_ALLGATHER && c->collective != MRC_BROADCAST)
            mrc__sb_printf(&sb, " (%s)", mrc_op_name(c->op));
        if (c->collective == MRC_REDUCE || c->collective == MRC_BROADCAST)
            mrc__sb_printf(&sb, ", root rank %d", c->root);
        mrc__sb_printf(&sb, ", %s\n", mrc_algo_name(c->algo));
        if (!g) {
            mrc__sb_puts(&sb, "  in no group: the node runs nothing\n");
        } else {
            mrc__sb_printf(&sb, "  group %d, rank %d of %d, %d port%s, %d "
                           "stream%s\n  the shared code (%d instructions) "
                           "with this node's table values in place\n  of "
                           "pos, rel, N, next, prev and the ports\n",
                           nd->group, nd->rank, g->size, nd->num_ports,
                           nd->num_ports == 1 ? "" : "s", streams,
                           streams == 1 ? "" : "s", p->code_len);
            for (int j = 0; j < shown; j++)
                local_stream_text(&sb, p, node, g->first_stream + j);
            if (streams > shown)
                mrc__sb_printf(&sb, "\n... %d more streams\n",
                               streams - shown);
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
