/*
 * Where the walk of a chain starts (a node's stream and chunk, or the hop
 * a relay forwards) and the cursor over it: one operation looked at
 * ahead of the walk. The walk itself is the expansion (expand.c).
 */
#include <string.h>

#include "program_internal.h"
#include "ring_math.h"

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

void mrc__chain_begin(mrc__chain_iter_t *it, const mrc_program_t *p, int node,
                      int k, int chunk, int chunks, int in_place)
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
    it->rel = mrc__ring_mod(it->ns->pos - sk->root_pos, n);
    int nf = mrc__frag_space(p, n);
    it->q = sk->slice_len / (uint64_t)nf;
    it->r = sk->slice_len % (uint64_t)nf;
    it->loop_pc = -1;
    it->pc = 0;
    it->memory = mrc__program_has_memory_ops(p);
    it->at = node;
    it->send_to = hop_end(p, it->ns->route, 1, it->ns->next);
    it->recv_from = hop_end(p, mrc__node_stream(p, it->ns->prev, k)->route, -1,
                            it->ns->prev);
}

void mrc__relay_begin(mrc__chain_iter_t *it, const mrc_program_t *p, int at,
                      const mrc__relay_t *r, int chunk, int chunks)
{
    mrc__chain_begin(it, p, r->src, r->stream, chunk, chunks, 0);
    it->at = at;
    it->relay = r->route + 1;
    it->relay_idx = r->index;
}

void mrc__cursor_begin(mrc__cursor_t *c, const mrc_program_t *p, int node,
                       int k, int chunk, int chunks, int in_place)
{
    memset(c, 0, sizeof *c);
    mrc__chain_begin(&c->it, p, node, k, chunk, chunks, in_place);
}

void mrc__cursor_begin_relay(mrc__cursor_t *c, const mrc_program_t *p, int at,
                             const mrc__relay_t *r, int chunk, int chunks)
{
    memset(c, 0, sizeof *c);
    mrc__relay_begin(&c->it, p, at, r, chunk, chunks);
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
