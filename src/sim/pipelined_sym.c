/*
 * The symmetric walk of the pipelined mode: one node's events stand for
 * the whole group's.
 *
 * A ring code that every node runs alike (the symbolic checker's
 * condition: check_symbolic.c) does at every position what node 0 does,
 * turned by the position. If, besides, every node's hops look alike to
 * it (the same channels' capacities and latencies in the same order, the
 * same sharing of a channel between its streams, the same node-model
 * costs) and no channel carries two nodes' hops, nothing but the
 * messages links one node's timeline to another's, and the timeline in
 * which every node does what the representative does, at the same
 * times, is the run. So the representative alone is walked, by the
 * pipelined engine itself (pipelined.c), with its sends arriving at
 * itself as its predecessor's (s->sym_self): a message it sends on
 * stream k with tag T at time t stands for the one its predecessor sends
 * it with that tag at t.
 *
 *   node      0 ---> 1 ---> 2 ---> ... ---> N-1 ---> 0
 *   walked    r ----------------------------------> r
 *             (r's send to its successor is r's receive from its
 *              predecessor, at the same time)
 *
 * Memory of the node model is the receiver's: a copy into r's successor's
 * memory stands for its predecessor's copy into r's, so the successor's
 * channels are r's own in the walk. The figures are multiplied back:
 * every node's hop carries r's bytes, energy moved is N times r's, and a
 * physical link is on for the union of the busy periods of the hops over
 * it, which are r's own hops of the same labels (a label: stream and hop
 * of the route), so each class of links by their set of labels is on as
 * long as r's links of that class together.
 *
 * Accepts: pipelined mode; one group of N >= 2 nodes running a ring code
 * the symbolic checker follows (no memory-semantic op, every instruction
 * on every node, split or block addressing), fragments all of one size
 * (for split addressing count divisible by N x streams); every node's
 * route to its successor per stream of the same length, latency and, hop
 * by hop, channel capacity and latency as the representative's; no link
 * direction on two nodes' routes; each link carrying the same set of
 * labels as every other link of its labels; at most 64 hops per node
 * over all streams; with a profile, no memory system shared by several
 * nodes beyond cache (each node's own in cache or with
 * nodes_per_memory 1).
 * Returns: the full walk's time and per-channel bytes bit for bit (the
 * same events in the same order), and its energy within 1e-12 relative
 * (N times r's sums instead of N sums).
 * Limits: anything else is walked message by message (sim.c): uneven
 * fragments, several groups, the tree, direct and hier families, routes
 * that differ (a failed link, a detour, mixed link classes), memory
 * shared beyond cache. The cost is O(N x hops) to check and r's events
 * to walk: 2(N-1) steps x streams x chunks.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_internal.h"

mrc__sim_fast_t mrc__sim_sym = MRC__SIM_FAST_AUTO;

enum { SYM_MAX_HOPS = 64 };

/* What the check learns of the group, and what the walk and the
 * figures need of it. */
typedef struct sym {
    mrc__sim_t *s;
    const mrc__group_t *g;
    int n, rep, hops;
    int32_t *first;    /* [streams + 1]: the first label of each stream */
    int32_t *owner;    /* [link channels]: the node whose hops use it */
    uint64_t *mask;    /* [physical links]: the labels over it */
    int32_t *rep_chan; /* [hops]: the representative's channel */
    int32_t *rep_phys; /* [hops]: its physical link (-1: none) */
    int8_t kind[SYM_MAX_HOPS]; /* hop_kind of its hops */
} sym_t;

/* The entry of the node at group place i for the group's stream j. */
static const mrc__node_stream_t *sym_entry(const sym_t *y, int i, int j)
{
    const mrc_program_t *p = y->s->p;
    return mrc__node_stream(p, p->members[y->g->first_member + i],
                            y->g->first_stream + j);
}

/* Where channel c is as seen from node u sending to `next`: a link
 * direction (0), u's memory or its host's (1, 2), the successor's or its
 * host's (3, 4), u's or the successor's channel for what it takes from
 * peers (5, 6); -1 anything else. */
static int hop_kind(const mrc__sim_t *s, int c, int u, int next)
{
    const mrc__sim_node_t *m = &s->node;
    if (c < s->link_chan)
        return 0;
    if (!m->prof)
        return -1;
    if (m->first_peer_chan >= 0 && c >= m->first_peer_chan) {
        int v = c - m->first_peer_chan;
        return v == u ? 5 : v == next ? 6 : -1;
    }
    if (c < m->first_host_chan) {
        int v = c - m->first_node_chan;
        return v == u ? 1 : v == next ? 3 : -1;
    }
    int h = c - m->first_host_chan;
    return h == u / m->per_host ? 2 : h == next / m->per_host ? 4 : -1;
}

/* The program's shape: what the walk's symmetry needs of the code and
 * the fragments; NULL if it has it, else why not. */
static const char *sym_program(const mrc__sim_t *s)
{
    const mrc_program_t *p = s->p;
    if (p->num_groups != 1)
        return "it has several groups";
    if (p->cfg.algo != MRC_ALGO_RINGS || !mrc__symbolic_applies(p))
        return "its code is not a ring code every node runs alike";
    const mrc__group_t *g = &p->groups[0];
    if (g->size < 2)
        return "its group has one node";
    for (int j = 0; j < g->num_streams; j++)
        if (p->addressing == MRC__ADDR_SPLIT &&
            p->streams[g->first_stream + j].slice_len % (uint64_t)g->size)
            return "its fragments are not all of one size";
    const mrc__sim_node_t *m = &s->node;
    if (m->prof && m->beyond_cache && m->per_host != 1)
        return "nodes share a memory system beyond cache";
    return NULL;
}

/* The representative's hops: labels, channels, physical links, kinds. */
static const char *sym_rep(sym_t *y)
{
    const mrc__sim_t *s = y->s;
    int ns = y->g->num_streams;
    y->first[0] = 0;
    for (int j = 0; j < ns; j++) {
        const mrc__node_stream_t *e = sym_entry(y, 0, j);
        const mrc__sim_route_t *rt = &s->routes[e - s->p->node_streams];
        if (y->first[j] + rt->len > SYM_MAX_HOPS)
            return "its nodes' routes have more than 64 hops in all";
        for (int q = 0; q < rt->len; q++) {
            int l = y->first[j] + q, c = s->chan_pool[rt->first + q];
            y->rep_chan[l] = c;
            y->rep_phys[l] = s->phys_pool[rt->first + q];
            y->kind[l] = (int8_t)hop_kind(s, c, y->rep, e->next);
            if (y->kind[l] < 0)
                return "a route crosses a third node's memory";
        }
        y->first[j + 1] = y->first[j] + rt->len;
    }
    y->hops = y->first[ns];
    return NULL;
}

/* Hop l of node u (sending to `next`) over channel c, u's channels of
 * its earlier hops in chans: like the representative's (where it goes,
 * which earlier hop shares its channel, the channel's capacity and
 * latency), and a link direction u's alone. */
static const char *sym_hop(sym_t *y, int u, int next, int l, int c,
                           const int32_t *chans)
{
    const mrc__sim_t *s = y->s;
    int rc = y->rep_chan[l];
    if (hop_kind(s, c, u, next) != y->kind[l])
        return "its nodes' hops are not all alike (memory or links)";
    for (int k = 0; k < l; k++)
        if ((chans[k] == c) != (y->rep_chan[k] == rc))
            return "its nodes' streams do not share links alike";
    if (y->kind[l] != 0)
        return NULL;
    if (s->cap[c] != s->cap[rc] || s->lat[c] != s->lat[rc])
        return "its nodes' hops cross links of different bandwidth or "
               "latency";
    if (y->owner[c] >= 0 && y->owner[c] != u)
        return "a link direction carries two nodes' hops";
    y->owner[c] = u;
    return NULL;
}

/* Every node's hops against the representative's; the labels over each
 * physical link. */
static const char *sym_nodes(sym_t *y)
{
    const mrc__sim_t *s = y->s;
    int32_t chans[SYM_MAX_HOPS];
    for (int i = 0; i < y->n; i++) {
        int u = s->p->members[y->g->first_member + i];
        for (int j = 0; j < y->g->num_streams; j++) {
            const mrc__node_stream_t *e = sym_entry(y, i, j);
            const mrc__sim_route_t *rt = &s->routes[e - s->p->node_streams];
            const mrc__sim_route_t *r0 =
                &s->routes[sym_entry(y, 0, j) - s->p->node_streams];
            if (rt->len != r0->len || rt->latency != r0->latency)
                return "its nodes' routes differ in length or latency";
            for (int q = 0; q < rt->len; q++) {
                int l = y->first[j] + q, c = s->chan_pool[rt->first + q];
                int ph = s->phys_pool[rt->first + q];
                chans[l] = c;
                const char *why = sym_hop(y, u, e->next, l, c, chans);
                if (why)
                    return why;
                if (ph >= 0)
                    y->mask[ph] |= (uint64_t)1 << l;
            }
        }
    }
    return NULL;
}

/* Each link carries the set of labels every other link of its labels
 * carries (so that r's links of a class are on as each of them). */
static const char *sym_links(const sym_t *y)
{
    const mrc__sim_t *s = y->s;
    for (int i = 0; i < y->n; i++)
        for (int j = 0; j < y->g->num_streams; j++) {
            const mrc__node_stream_t *e = sym_entry(y, i, j);
            const mrc__sim_route_t *rt = &s->routes[e - s->p->node_streams];
            for (int q = 0; q < rt->len; q++) {
                int l = y->first[j] + q, ph = s->phys_pool[rt->first + q];
                if (ph >= 0 && y->mask[ph] != y->mask[y->rep_phys[l]])
                    return "its links do not all carry their labels alike";
            }
        }
    return NULL;
}

static void sym_free(sym_t *y)
{
    free(y->first);
    free(y->owner);
    free(y->mask);
    free(y->rep_chan);
    free(y->rep_phys);
}

/* Whether the walk applies: NULL and y filled, or why not (*st MRC_OK),
 * or NULL with *st an error. */
static const char *sym_check(mrc__sim_t *s, sym_t *y, mrc_status_t *st)
{
    *st = MRC_OK;
    const char *why = sym_program(s);
    if (why)
        return why;
    y->s = s;
    y->g = &s->p->groups[0];
    y->n = y->g->size;
    y->rep = s->p->members[y->g->first_member];
    y->first = calloc((size_t)y->g->num_streams + 1, sizeof *y->first);
    y->owner = malloc(((size_t)s->link_chan + 1) * sizeof *y->owner);
    y->mask = calloc((size_t)s->num_phys + 1, sizeof *y->mask);
    y->rep_chan = calloc(SYM_MAX_HOPS, sizeof *y->rep_chan);
    y->rep_phys = calloc(SYM_MAX_HOPS, sizeof *y->rep_phys);
    if (!y->first || !y->owner || !y->mask || !y->rep_chan || !y->rep_phys) {
        *st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
        return NULL;
    }
    for (int c = 0; c < s->link_chan; c++)
        y->owner[c] = -1;
    if (!(why = sym_rep(y)) && !(why = sym_nodes(y)))
        why = sym_links(y);
    return why;
}

/* The representative's channel for channel c of its hop l: its own
 * memory where the hop copies into its successor's. */
static int sym_chan(const sym_t *y, int l, int c)
{
    const mrc__sim_node_t *m = &y->s->node;
    if (y->kind[l] == 3)
        return m->first_node_chan + y->rep;
    if (y->kind[l] == 4)
        return m->first_host_chan + y->rep / m->per_host;
    if (y->kind[l] == 6)
        return m->first_peer_chan + y->rep;
    return c;
}

/* The representative's routes as the walk takes them: the successor's
 * memory its own, each link the first of r's links of its class. */
static mrc_status_t sym_routes(const sym_t *y)
{
    mrc__sim_t *s = y->s;
    for (int j = 0; j < y->g->num_streams; j++) {
        int e = (int)(sym_entry(y, 0, j) - s->p->node_streams);
        int r = mrc__sim_new_route(s);
        if (r < 0)
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
        for (int l = y->first[j]; l < y->first[j + 1]; l++) {
            int ph = y->rep_phys[l];
            if (ph >= 0) /* the class's first label: its lowest bit */
                for (int k = 0; k < y->hops; k++)
                    if (y->mask[ph] >> k & 1) {
                        ph = y->rep_phys[k];
                        break;
                    }
            if (mrc__sim_route_hop(s, r, sym_chan(y, l, y->rep_chan[l]), ph))
                return mrc__error(MRC_ERR_NO_MEMORY,
                                  "out of memory simulating");
        }
        /* e takes r's hops and keeps the rest (its latency) */
        s->routes[e].first = s->routes[r].first;
        s->routes[e].len = s->routes[r].len;
    }
    return MRC_OK;
}

/* The representative's chains, counted against the memory limit first
 * (as make_chains counts every node's). */
static mrc_status_t sym_chains(const sym_t *y, const mrc_sim_config_t *c,
                               mrc__sim_chain_t **out, int *nout)
{
    const mrc_program_t *p = y->s->p;
    uint64_t total = 0;
    for (int j = 0; j < y->g->num_streams; j++)
        total += (uint64_t)mrc__sim_chunks(p, c, y->g->first_stream + j);
    mrc_status_t st = mrc__sim_check_chains(total, c->mode);
    if (st != MRC_OK)
        return st;
    mrc__sim_chain_t *ch = calloc((size_t)total + 1, sizeof *ch);
    if (!ch)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    int n = 0;
    for (int j = 0; j < y->g->num_streams; j++) {
        int k = y->g->first_stream + j, chunks = mrc__sim_chunks(p, c, k);
        for (int i = 0; i < chunks; i++)
            mrc__cursor_begin(&ch[n++], p, y->rep, k, i, chunks, 0);
    }
    *out = ch;
    *nout = n;
    return MRC_OK;
}

/* The whole group's figures from the representative's: its links' bytes
 * on every node's links of the same label, energy moved N times, and
 * each class of physical links on as long as r's link of the class. */
static void sym_figures(const sym_t *y, mrc__sim_acct_t *a)
{
    const mrc__sim_t *s = y->s;
    mrc_sim_result_t *r = a->r;
    for (int i = 1; i < y->n; i++)
        for (int j = 0; j < y->g->num_streams; j++) {
            const mrc__node_stream_t *e = sym_entry(y, i, j);
            const mrc__sim_route_t *rt = &s->routes[e - s->p->node_streams];
            for (int q = 0; q < rt->len; q++) {
                int l = y->first[j] + q, c = s->chan_pool[rt->first + q];
                if (y->kind[l] != 0)
                    continue;
                r->link_bytes[c] = r->link_bytes[y->rep_chan[l]];
                r->link_utilisation[c] = r->link_utilisation[y->rep_chan[l]];
            }
        }
    a->move_j *= y->n;
    /* Each class of links on as long as r's first link of it, as many
     * times as it has links (its lowest label names it). */
    int32_t count[SYM_MAX_HOPS] = {0};
    for (int ph = 0; ph < s->num_phys; ph++) {
        int k = 0;
        while (y->mask[ph] && !(y->mask[ph] >> k & 1))
            k++;
        count[k] += y->mask[ph] != 0;
    }
    for (int k = 0; k < y->hops; k++)
        if (count[k] > 0)
            a->phys_on[y->rep_phys[k]] *= count[k];
}

int mrc__sim_sym_walk(mrc__sim_t *s, const mrc_sim_config_t *c,
                      mrc__sim_ws_t *w, mrc__sim_acct_t *a, mrc_status_t *st,
                      const char **why)
{
    sym_t y;
    memset(&y, 0, sizeof y);
    *why = mrc__sim_sym == MRC__SIM_FAST_NEVER ? "it is switched off"
                                               : sym_check(s, &y, st);
    if (*why || *st != MRC_OK) {
        sym_free(&y);
        return *st != MRC_OK;
    }
    mrc__sim_chain_t *chains = NULL;
    int n = 0;
    if ((*st = sym_routes(&y)) == MRC_OK &&
        (*st = sym_chains(&y, c, &chains, &n)) == MRC_OK) {
        s->sym_self = 1;
        *st = mrc__sim_run_pipelined(s, chains, n, 1,
                                     mrc_dtype_size(s->p->cfg.dtype), w, a);
        s->sym_self = 0;
    }
    if (*st == MRC_OK)
        sym_figures(&y, a);
    free(chains);
    sym_free(&y);
    return 1;
}

int mrc__sim_sym_applies(const mrc_program_t *p, const mrc_topo_t *t,
                         const mrc_sim_config_t *cfg, const char **why)
{
    mrc__sim_t s;
    memset(&s, 0, sizeof s);
    s.p = p;
    s.t = t;
    sym_t y;
    memset(&y, 0, sizeof y);
    mrc_status_t st = mrc__sim_build(&s);
    if (st == MRC_OK)
        st = mrc__sim_node_build(&s, cfg ? cfg->profile : NULL,
                                 cfg ? cfg->peers_mapped : 0);
    *why = st == MRC_OK ? sym_check(&s, &y, &st) : NULL;
    if (st != MRC_OK)
        *why = "the model could not be built";
    sym_free(&y);
    mrc__sim_free(&s);
    return *why == NULL;
}
