/*
 * The compiler: an embedding and a collective in, one program out. The
 * code comes from a small template per collective; the work is in the
 * tables: each group's data split over its rings by share (a
 * bidirectional ring's part halved into one stream each way), and for
 * every node its position, neighbours, ports and hop routes in each
 * stream.
 *
 * The templates, for a ring of N nodes (pos = the node's position):
 *
 *   allreduce           reduce-scatter, then allgather:
 *     for s in 0..N-2:  send frag (pos-s) to next       (from sendbuf at s=0)
 *                       recv frag (pos-s-1), reduce with own part
 *     [avg: scale frag (pos+1), now complete]
 *     for s in 0..N-2:  send frag (pos+1-s); recv frag (pos-s), copy
 *   reduce-scatter      the first loop; fragment f is the block of the node
 *                       at pos f-1, which ends up holding it
 *   allgather           for s in 0..N-2: send frag (pos-s); recv (pos-s-1)
 *   reduce              a chain from the root's successor round to the root
 *   broadcast           a chain from the root round to its predecessor
 *
 * The rings' allreduce on one ring of N = 4 (pos 0 -> 1 -> 2 -> 3 -> 0),
 * each node's slice cut in fragments 0..3; "2:301" is fragment 2 holding
 * the parts of nodes 3, 0 and 1. Reduce-scatter, step s: send fragment
 * pos - s, receive fragment pos - s - 1 and add the own part:
 *
 *   s   pos 0        pos 1        pos 2        pos 3
 *   0   recv 3:30    recv 0:01    recv 1:12    recv 2:23
 *   1   recv 2:230   recv 3:301   recv 0:012   recv 1:123
 *   2   recv 1:1230  recv 2:2301  recv 3:3012  recv 0:0123
 *
 * Node pos then holds fragment pos + 1 whole (avg divides it by N there);
 * the allgather sends fragment pos + 1 - s and receives pos - s, a copy,
 * so that after N - 1 more steps every node holds every fragment.
 *
 * Accepts: any embedding (rings of any length, one stream a direction of
 * each ring, the data split by the rings' shares; routed hops relayed by
 * the nodes between), a group of one node (a copy), any count (a stream
 * may carry nothing, a fragment may be empty), every dtype and op.
 * Limits: 2 (N - 1) steps for allreduce, so latency grows with the
 * group; each node sends 2 (N - 1) / N of its slice, the bandwidth
 * bound. Programs of other families: direct.c, tree.c, hier.c.
 */
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"
#include "template.h"
#include "ring_math.h"

static const mrc__insn_t code_allreduce[] = {
    {.op = PORTS},
    {.op = LOOP},
    {.op = SEND, .frag_pos = 1, .frag_step = -1, .buf_a = SB, .buf_b = RB},
    {.op = RECV,
     .frag_pos = 1,
     .frag_step = -1,
     .frag_const = -1,
     .buf_a = RB,
     .buf_b = RB,
     .local = SB},
    {.op = END},
    {.op = SCALE, .frag_pos = 1, .frag_const = 1, .buf_b = RB},
    {.op = LOOP},
    {.op = SEND,
     .frag_pos = 1,
     .frag_step = -1,
     .frag_const = 1,
     .buf_a = RB,
     .buf_b = RB},
    {.op = RECV, .frag_pos = 1, .frag_step = -1, .buf_a = RB, .buf_b = RB},
    {.op = END},
    {.op = COPY, .pred = ALONE, .buf_a = SB, .buf_b = RB, .flags = W},
};

static const mrc__insn_t code_reduce_scatter[] = {
    {.op = PORTS},
    {.op = LOOP},
    {.op = SEND, .frag_pos = 1, .frag_step = -1, .buf_a = SB, .buf_b = XB},
    {.op = RECV,
     .frag_pos = 1,
     .frag_step = -1,
     .frag_const = -1,
     .buf_a = RB,
     .buf_b = XB,
     .local = SB},
    {.op = END},
    {.op = SCALE, .frag_pos = 1, .frag_const = 1, .buf_b = RB},
    {.op = COPY,
     .pred = ALONE,
     .frag_pos = 1,
     .frag_const = 1,
     .buf_a = SB,
     .buf_b = RB},
};

static const mrc__insn_t code_allgather[] = {
    {.op = PORTS},
    {.op = COPY, .frag_pos = 1, .buf_a = SB, .buf_b = RB},
    {.op = LOOP},
    {.op = SEND, .frag_pos = 1, .frag_step = -1, .buf_a = SB, .buf_b = RB},
    {.op = RECV,
     .frag_pos = 1,
     .frag_step = -1,
     .frag_const = -1,
     .buf_a = RB,
     .buf_b = RB},
    {.op = END},
};

/* The reduce chain: rel x sends at step x-1, receives at step x-2. */
static const mrc__insn_t code_reduce[] = {
    {.op = PORTS},
    {.op = SEND,
     .pred = EQ,
     .pred_lo = 1,
     .buf_a = SB,
     .buf_b = SB,
     .flags = W,
     .step_rel = 1,
     .step_const = -1},
    {.op = RECV,
     .pred = IN,
     .pred_lo = 2,
     .pred_hi = -1,
     .buf_a = XB,
     .buf_b = XB,
     .local = SB,
     .flags = W,
     .step_rel = 1,
     .step_const = -2},
    {.op = SEND,
     .pred = IN,
     .pred_lo = 2,
     .pred_hi = -1,
     .buf_a = XB,
     .buf_b = XB,
     .flags = W,
     .step_rel = 1,
     .step_const = -1},
    {.op = RECV,
     .pred = EQ,
     .buf_a = RB,
     .buf_b = RB,
     .local = SB,
     .flags = W,
     .step_rel = 1,
     .step_const = -2},
    {.op = SCALE, .pred = EQ, .buf_b = RB, .flags = W},
    {.op = COPY, .pred = ALONE, .buf_a = SB, .buf_b = RB, .flags = W},
};

/* The broadcast chain: rel x sends at step x, receives at step x-1. */
static const mrc__insn_t code_broadcast[] = {
    {.op = PORTS},
    {.op = COPY, .pred = EQ, .buf_a = SB, .buf_b = RB, .flags = W},
    {.op = SEND,
     .pred = EQ,
     .buf_a = SB,
     .buf_b = SB,
     .flags = W,
     .step_rel = 1},
    {.op = RECV,
     NOT_ROOT,
     .buf_a = RB,
     .buf_b = RB,
     .flags = W,
     .step_rel = 1,
     .step_const = -1},
    {.op = SEND,
     .pred = IN,
     .pred_lo = 1,
     .pred_hi = -2,
     .buf_a = RB,
     .buf_b = RB,
     .flags = W,
     .step_rel = 1},
};

static const struct {
    const mrc__insn_t *code;
    int len;
    uint8_t addressing;
} templates[MRC_NUM_COLLECTIVES] = {
    [MRC_ALLREDUCE] = {code_allreduce, 11, MRC__ADDR_SPLIT},
    [MRC_REDUCE_SCATTER] = {code_reduce_scatter, 7, MRC__ADDR_BLOCK_OWN},
    [MRC_ALLGATHER] = {code_allgather, 6, MRC__ADDR_BLOCK_POS},
    [MRC_REDUCE] = {code_reduce, 7, MRC__ADDR_WHOLE},
    [MRC_BROADCAST] = {code_broadcast, 5, MRC__ADDR_WHOLE},
};

/* Splits `len` elements over rings by share (largest remainder, so the
 * parts sum to len exactly); a bidirectional ring's part is halved into
 * its two streams. */
static void split_slices(const mrc_embedding_t *e, int g, uint64_t len,
                         mrc__stream_t *out)
{
    int nr = mrc_embed_num_rings(e, g);
    uint64_t given = 0;
    uint64_t *part = calloc((size_t)nr + 1, sizeof *part);
    double *rem = calloc((size_t)nr + 1, sizeof *rem);
    if (!part || !rem) { /* only scratch; fall back to one ring */
        free(part);
        free(rem);
        part = NULL;
    }
    for (int r = 0; part && r < nr; r++) {
        double want = mrc_embed_ring(e, g, r)->share * (double)len;
        part[r] = (uint64_t)want;
        rem[r] = want - (double)part[r];
        given += part[r];
    }
    while (part && given < len) { /* hand out the rest, largest first */
        int best = 0;
        for (int r = 1; r < nr; r++)
            if (rem[r] > rem[best])
                best = r;
        part[best]++;
        rem[best] = -1;
        given++;
    }
    int k = 0;
    uint64_t off = 0;
    for (int r = 0; r < nr; r++) {
        uint64_t pr = part ? part[r] : (r == 0 ? len : 0);
        int dirs = mrc_embed_ring(e, g, r)->bidirectional ? 2 : 1;
        for (int d = 0; d < dirs; d++, k++) {
            uint64_t piece = dirs == 2 ? (d == 0 ? (pr + 1) / 2 : pr / 2) : pr;
            out[k].slice_off = off;
            out[k].slice_len = piece;
            off += piece;
        }
    }
    free(part);
    free(rem);
}

/* Stores the route of a hop (reversed when the stream runs against the
 * ring) in the route pool; returns its index.
 *
 * The reversed ring's ports. Hop i runs nodes[i] -> nodes[i+1] along a
 * route r0 .. rk: ports[j] is the port r(j) leaves by, in_ports[j] the
 * port r(j+1) arrives on. A link is full duplex with the same port at
 * each end both ways, so walked backwards a node leaves by the port the
 * forward walk arrived on and arrives on the one it left by:
 *
 *   forward   r0 ==ports[0]=> r1 ==ports[1]=> ... ==ports[k-1]=> rk
 *   reversed  rk ==in_ports[k-1]=> ... ==in_ports[1]=> r1 ==in_ports[0]=> r0
 *
 * So in a reversed stream the node at ring index i sends on hop i - 1
 * from its far end (out_port: that hop's in_ports[k-1]) and receives on
 * hop i at its near end (in_port: hop i's ports[0]); see fill_entry and
 * mrc__ring_out_hop.
 * Accepts: direct and routed hops. Limits: a port names both directions
 * of its link (the topology's model); a link that differed by direction
 * would need its own ports for each. */
static int add_route(mrc_program_t *p, const mrc_hop_t *h, int reversed)
{
    int r = p->num_routes++, len = h->route_len;
    int base = p->route_off[r];
    p->route_ports[base + len - 1] = -1; /* the last node sends nothing */
    p->route_in_ports[base] = -1;        /* the first receives nothing */
    for (int j = 0; j < len; j++) {
        int i = mrc__route_index(j, len, reversed);
        p->route_nodes[base + j] = h->route[i];
        if (j + 1 < len)
            p->route_ports[base + j] =
                reversed ? h->in_ports[i - 1] : h->ports[i];
        if (j > 0) /* arriving at route[j]: from the step before it */
            p->route_in_ports[base + j] =
                reversed ? h->ports[i] : h->in_ports[i - 1];
    }
    p->route_off[r + 1] = base + len;
    return r;
}

mrc_status_t mrc_program_compile(const mrc_embedding_t *e,
                                 const mrc_compile_config_t *cfg,
                                 mrc_program_t **out)
{
    return mrc__program_compile_group(e, cfg, -1, out);
}

mrc_status_t mrc__program_compile_group(const mrc_embedding_t *e,
                                        const mrc_compile_config_t *cfg,
                                        int only, mrc_program_t **out)
{
    mrc_status_t st = mrc__program_build(e, cfg, only, out);
    if (st != MRC_OK)
        return st;
    st = mrc_program_check(*out);
    if (st != MRC_OK) {
        mrc_program_destroy(*out);
        *out = NULL;
    }
    return st;
}

/* The arguments of a compile: known collective, type, operator and
 * count, an existing group, a root that is a rank of every group. */
static mrc_status_t check_args(const mrc_embedding_t *e,
                               const mrc_compile_config_t *cfg, int only)
{
    if (!e || !cfg)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_program_compile: NULL argument");
    if ((unsigned)cfg->collective >= MRC_NUM_COLLECTIVES)
        return mrc__error(MRC_ERR_INVALID_ARG, "unknown collective %d",
                          (int)cfg->collective);
    if (mrc_dtype_size(cfg->dtype) == 0)
        return mrc__error(MRC_ERR_INVALID_ARG, "unknown data type %d",
                          (int)cfg->dtype);
    if ((unsigned)cfg->op >= MRC_NUM_OPS)
        return mrc__error(MRC_ERR_INVALID_ARG, "unknown operator %d",
                          (int)cfg->op);
    if ((unsigned)cfg->completion >= MRC_NUM_COMPLETIONS)
        return mrc__error(MRC_ERR_INVALID_ARG, "unknown completion %d",
                          (int)cfg->completion);
    if (cfg->count > ((uint64_t)1 << 48))
        return mrc__error(MRC_ERR_INVALID_ARG, "count %zu is too large",
                          cfg->count);
    int eg = mrc_embed_num_groups(e);
    if (only >= eg)
        return mrc__error(MRC_ERR_INVALID_ARG, "no group %d", only);
    int rooted =
        cfg->collective == MRC_REDUCE || cfg->collective == MRC_BROADCAST;
    for (int g = 0; g < eg; g++) {
        if (only >= 0 && g != only)
            continue;
        int size = mrc_embed_group_nodes(e, g, NULL);
        if (rooted && (cfg->root < 0 || cfg->root >= size))
            return mrc__error(MRC_ERR_INVALID_ARG,
                              "root %d is not a rank of group %d (%d nodes)",
                              cfg->root, g, size);
    }
    return MRC_OK;
}

/* The families other than the rings (direct.c); *done 0 for the rings. */
static mrc_status_t build_family(const mrc_embedding_t *e,
                                 const mrc_compile_config_t *cfg, int only,
                                 mrc_program_t **out, int *done)
{
    int rooted =
        cfg->collective == MRC_REDUCE || cfg->collective == MRC_BROADCAST;
    *done = 1;
    switch (cfg->algo) {
    case MRC_ALGO_RINGS: *done = 0; return MRC_OK;
    case MRC_ALGO_DIRECT1:
    case MRC_ALGO_DIRECT2:
    case MRC_ALGO_TREE:
    case MRC_ALGO_HIER: {
        mrc_compile_config_t c = *cfg;
        if (c.algo != MRC_ALGO_HIER || c.hosts < 1)
            c.hosts = c.algo == MRC_ALGO_HIER; /* only hier has hosts */
        if (c.chunk_bytes == 0)
            c.chunk_bytes = MRC_DEFAULT_CHUNK_BYTES;
        if (!rooted)
            c.root = 0;
        return mrc__family_build(e, &c, only, out);
    }
    case MRC_ALGO_AUTO:
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_program_compile: algo auto is resolved by "
                          "the selector (mrc explain, the communicator), "
                          "not by the compiler");
    default:
        return mrc__error(MRC_ERR_INVALID_ARG, "unknown algorithm %d",
                          (int)cfg->algo);
    }
}

/* The table sizes of the rings' program: streams, members, node entries
 * and the route pool into p; ring-order entries and routes out. */
static void count_sizes(const mrc_embedding_t *e, int only, mrc_program_t *p,
                        int *order, int *routes)
{
    int ns = 0, members = 0, entries = 0, pool = 0;
    *order = *routes = 0;
    for (int g = 0; g < mrc_embed_num_groups(e); g++) {
        if (only >= 0 && g != only)
            continue;
        int size = mrc_embed_group_nodes(e, g, NULL);
        members += size;
        int gs = mrc_embed_num_rings(e, g) == 0; /* a lone node: one
                                                      stream of itself */
        *routes += gs;
        for (int r = 0; r < mrc_embed_num_rings(e, g); r++) {
            const mrc_ring_t *ring = mrc_embed_ring(e, g, r);
            int dirs = ring->bidirectional ? 2 : 1;
            gs += dirs;
            for (int i = 0; i < ring->size; i++)
                pool += dirs * ring->hops[i].route_len;
            *routes += dirs * ring->size;
        }
        ns += gs;
        entries += gs * size;
        *order += gs * size;
    }
    p->num_streams = ns;
    p->num_members = members;
    p->num_entries = entries;
    p->route_pool_len = pool;
}

/* Where the tables are being filled: the next stream, member, node
 * entry and ring-order entry. */
typedef struct fill {
    int k, m, entry, ord;
} fill_t;

/* Node u's entry at position pos of stream k, ring direction d of
 * `ring` (first: the group's first stream). */
static void fill_entry(mrc_program_t *p, const mrc_ring_t *ring, int d, int pos,
                       const fill_t *at, int first, int size)
{
    int k = at->k, n = ring->size;
    int u = p->ring_order[at->ord + pos];
    int rank = p->nodes[u].rank;
    if ((p->cfg.collective == MRC_REDUCE ||
         p->cfg.collective == MRC_BROADCAST) &&
        rank == p->cfg.root)
        p->streams[k].root_pos = pos;
    /* The entry of (u, k): entries of a group are laid out stream-major:
     * first_entry + stream index * size. */
    mrc__node_stream_t *ns_ =
        &p->node_streams[at->entry + (k - first) * size + rank];
    ns_->pos = pos;
    ns_->next = p->ring_order[at->ord + mrc__ring_next(pos, n)];
    ns_->prev = p->ring_order[at->ord + mrc__ring_prev(pos, n)];
    /* Ring hop i runs nodes[i] -> nodes[i+1]. Forward: u = nodes[i]
     * leaves by hop i and is entered by hop i-1. Reversed: u leaves by
     * hop i-1 backwards and is entered by hop i backwards. */
    int i = mrc__ring_index(pos, n, d);
    const mrc_hop_t *out_hop = &ring->hops[mrc__ring_out_hop(i, n, d)];
    const mrc_hop_t *in_hop = &ring->hops[mrc__ring_in_hop(i, n, d)];
    int ol = out_hop->route_len - 1, il = in_hop->route_len - 1;
    ns_->out_port = d ? out_hop->in_ports[ol - 1] : out_hop->ports[0];
    ns_->in_port = d ? in_hop->ports[0] : in_hop->in_ports[il - 1];
    ns_->route = n > 1 ? add_route(p, out_hop, d) : -1;
}

/* The streams of embedding group eg as program group g: each ring one
 * way or both, or a lone node's one stream of itself. */
static void fill_streams(mrc_program_t *p, const mrc_embedding_t *e, int eg,
                         int g, const int *gnodes, int size, fill_t *at)
{
    int first = at->k;
    for (int r = 0; r < mrc_embed_num_rings(e, eg); r++) {
        const mrc_ring_t *ring = mrc_embed_ring(e, eg, r);
        for (int d = 0; d < (ring->bidirectional ? 2 : 1); d++, at->k++) {
            mrc__stream_t *st = &p->streams[at->k];
            st->group = g;
            st->ring = r;
            st->reversed = d;
            p->ring_first[at->k] = at->ord;
            int n = ring->size;
            for (int pos = 0; pos < n; pos++)
                p->ring_order[at->ord + pos] =
                    ring->nodes[mrc__ring_index(pos, n, d)];
            for (int pos = 0; pos < n; pos++)
                fill_entry(p, ring, d, pos, at, first, size);
            at->ord += n;
        }
    }
    if (at->k == first) { /* a lone node: one stream, the whole slice */
        mrc__stream_t *st = &p->streams[at->k];
        st->group = g;
        st->slice_off = 0;
        st->slice_len = p->cfg.count;
        p->ring_first[at->k] = at->ord;
        p->ring_order[at->ord++] = gnodes[0];
        mrc__node_stream_t *ns_ = &p->node_streams[at->entry];
        ns_->next = ns_->prev = gnodes[0];
        ns_->out_port = ns_->in_port = ns_->route = -1;
        at->k++;
    }
}

/* Group g of the program from group eg of the embedding: its members,
 * its slices and its streams. */
static void fill_group(mrc_program_t *p, const mrc_embedding_t *e, int eg,
                       int g, fill_t *at)
{
    const int *gnodes;
    int size = mrc_embed_group_nodes(e, eg, &gnodes);
    mrc__group_t *gr = &p->groups[g];
    gr->size = size;
    gr->first_stream = at->k;
    gr->first_member = at->m;
    for (int i = 0; i < size; i++) {
        p->members[at->m + i] = gnodes[i];
        p->nodes[gnodes[i]].group = g;
        p->nodes[gnodes[i]].rank = i;
        p->nodes[gnodes[i]].first_entry = at->entry + i;
    }
    at->m += size;
    split_slices(e, eg, p->cfg.count, &p->streams[at->k]);
    fill_streams(p, e, eg, g, gnodes, size, at);
    gr->num_streams = at->k - gr->first_stream;
    at->entry += gr->num_streams * size;
}

mrc_status_t mrc__program_build(const mrc_embedding_t *e,
                                const mrc_compile_config_t *cfg, int only,
                                mrc_program_t **out)
{
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_program_compile: out is "
                                               "NULL");
    *out = NULL;
    int done;
    mrc_status_t st = check_args(e, cfg, only);
    if (st == MRC_OK)
        st = build_family(e, cfg, only, out, &done);
    if (st != MRC_OK || done)
        return st;
    const mrc_topo_t *t = mrc_embed_topology(e);
    int eg = mrc_embed_num_groups(e), nn = mrc_topo_num_nodes(t);
    mrc_program_t *p = calloc(1, sizeof *p);
    if (!p)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    p->cfg = *cfg;
    p->cfg.hosts = 0; /* only hier has hosts */
    if (p->cfg.chunk_bytes == 0)
        p->cfg.chunk_bytes = MRC_DEFAULT_CHUNK_BYTES;
    if (cfg->collective != MRC_REDUCE && cfg->collective != MRC_BROADCAST)
        p->cfg.root = 0;
    p->addressing = templates[cfg->collective].addressing;
    p->code_len = templates[cfg->collective].len;
    p->num_nodes = nn;
    p->num_groups = only >= 0 ? 1 : eg;
    int order, routes;
    count_sizes(e, only, p, &order, &routes);
    if (mrc__program_alloc(p, order, routes) != MRC_OK) {
        mrc_program_destroy(p);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory compiling");
    }
    memcpy(p->code, templates[cfg->collective].code,
           (size_t)p->code_len * sizeof *p->code);
    for (int u = 0; u < nn; u++) {
        p->nodes[u].group = -1;
        p->nodes[u].rank = -1;
        p->nodes[u].num_ports = mrc_topo_num_ports(t, u);
    }
    fill_t at = {0, 0, 0, 0};
    for (int eg_i = 0, g = 0; eg_i < eg; eg_i++)
        if (only < 0 || eg_i == only)
            fill_group(p, e, eg_i, g++, &at);
    *out = p;
    return MRC_OK;
}
