/*
 * Finishing a draft into an embedding: the drafts moved into the final
 * layout, then verified, the link entry and port of every step of every
 * route chosen, verified again, loads computed (loads.c) and the idle
 * ports counted.
 */
#include <stdlib.h>
#include <string.h>

#include "embed_internal.h"

/* Draft hop dh as the final hop h (from and to set): its route (a direct
 * hop if none was given) and link entries (-1 where none was given), its
 * ports -1 until assigned. */
static mrc_status_t adopt_hop(mrc__draft_hop_t *dh, mrc_hop_t *h)
{
    int len = dh->route_len ? dh->route_len : 2;
    int *route = dh->route, *links = dh->links;
    dh->route = dh->links = NULL;
    if (!route) {
        route = malloc(2 * sizeof *route);
        if (route) {
            route[0] = h->from;
            route[1] = h->to;
        }
    }
    if (!links) {
        links = malloc((size_t)(len - 1 > 0 ? len - 1 : 1) * sizeof *links);
        for (int s = 0; links && s < len - 1; s++)
            links[s] = -1;
    }
    int *ports = malloc((size_t)(len > 1 ? len - 1 : 1) * sizeof *ports);
    int *in_ports = malloc((size_t)(len > 1 ? len - 1 : 1) * sizeof *in_ports);
    h->route = route;
    h->links = links;
    h->ports = ports;
    h->in_ports = in_ports;
    h->route_len = len;
    if (!route || !links || !ports || !in_ports)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int s = 0; s < len - 1; s++)
        ports[s] = in_ports[s] = -1;
    return MRC_OK;
}

/* Moves the draft into the final layout; routes default to direct hops.
 * Links and ports stay -1 until assigned. */
static mrc_status_t adopt_drafts(mrc__embed_builder_t *b, mrc_embedding_t *e)
{
    e->num_groups = b->num_groups;
    e->groups =
        calloc((size_t)(b->num_groups ? b->num_groups : 1), sizeof *e->groups);
    if (!e->groups)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int g = 0; g < b->num_groups; g++) {
        e->groups[g].size = b->group_size[g];
        e->groups[g].nodes = b->group_nodes[g];
        b->group_nodes[g] = NULL;
        int count = 0;
        for (int r = 0; r < b->num_rings; r++)
            count += b->rings[r].group == g;
        e->groups[g].rings =
            calloc((size_t)(count ? count : 1), sizeof(mrc_ring_t));
        if (!e->groups[g].rings)
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    for (int r = 0; r < b->num_rings; r++) {
        mrc__draft_ring_t *d = &b->rings[r];
        if (d->group < 0 || d->group >= b->num_groups)
            return mrc__error(MRC_ERR_INVALID_EMBEDDING,
                              "ring %d names group %d (there are %d)", r,
                              d->group, b->num_groups);
        mrc__embed_group_t *gr = &e->groups[d->group];
        mrc_ring_t *ring = &gr->rings[gr->num_rings++];
        ring->size = d->size;
        ring->nodes = d->nodes;
        ring->bidirectional = d->bidirectional;
        ring->share = d->share;
        d->nodes = NULL;
        mrc_hop_t *hops = calloc((size_t)(d->size ? d->size : 1), sizeof *hops);
        ring->hops = hops;
        if (!hops)
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        for (int i = 0; i < d->size; i++) {
            mrc_hop_t *h = &hops[i];
            h->from = ring->nodes[i];
            h->to = ring->nodes[(i + 1) % d->size];
            mrc_status_t st = adopt_hop(&d->hops[i], h);
            if (st != MRC_OK)
                return st;
        }
    }
    return MRC_OK;
}

/* The link entry between u and v used least so far (relative to its
 * count); -1 if none joins them. */
static int least_used_link(const mrc_topo_t *t, const int *uses, int u, int v)
{
    const int *cand;
    int k = mrc_topo_node_links(t, u, &cand), link = -1;
    double best = 1e300;
    for (int j = 0; j < k; j++) {
        const mrc_link_t *l = mrc_topo_link(t, cand[j]);
        if (!mrc__embed_link_joins(t, cand[j], u, v))
            continue;
        double x = (double)uses[cand[j]] / l->count;
        if (x < best) {
            best = x;
            link = cand[j];
        }
    }
    return link;
}

/* The steps of hop h whose link entry was given (pass 0) or is free
 * (pass 1): a free one takes the entry used least, and each step the
 * physical link of its entry used least; ports follow from that. */
static void assign_hop(const mrc_topo_t *t, int *uses, mrc_hop_t *h, int pass)
{
    int *links = (int *)h->links, *ports = (int *)h->ports;
    int *in_ports = (int *)h->in_ports;
    for (int s = 0; s + 1 < h->route_len; s++) {
        int u = h->route[s], v = h->route[s + 1];
        if ((links[s] >= 0) != (pass == 0))
            continue;
        if (links[s] < 0)
            links[s] = least_used_link(t, uses, u, v);
        const mrc_link_t *l = mrc_topo_link(t, links[s]);
        int sub = uses[links[s]]++ % l->count;
        int at_a = l->a == u;
        ports[s] = (at_a ? l->port_a : l->port_b) + sub;
        in_ports[s] = (at_a ? l->port_b : l->port_a) + sub;
    }
}

/* Chooses, for every step without one, the link entry between its nodes
 * that is least used so far (relative to its count), and within the entry
 * the physical link used least; ports follow from that. */
static mrc_status_t assign_links(mrc_embedding_t *e)
{
    const mrc_topo_t *t = e->topo;
    int nl = mrc_topo_num_links(t);
    int *uses = calloc((size_t)(nl ? nl : 1), sizeof *uses);
    if (!uses)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int pass = 0; pass < 2; pass++) /* given links first, then free */
        for (int g = 0; g < e->num_groups; g++)
            for (int r = 0; r < e->groups[g].num_rings; r++) {
                mrc_ring_t *ring = &e->groups[g].rings[r];
                for (int i = 0; i < ring->size; i++)
                    assign_hop(t, uses, (mrc_hop_t *)&ring->hops[i], pass);
            }
    free(uses);
    return MRC_OK;
}

/* The ports that steps are assigned to, counted per physical link: a link
 * entry of count c is c physical links, and a hop takes one of them, so
 * an entry busy in both directions may still hold idle physical links
 * (idle directions count entries; a program switches off ports). Both
 * ends of a physical link are used by the same steps, so the idle
 * physical links are half the idle ports. */
static mrc_status_t count_idle_ports(mrc_embedding_t *e)
{
    const mrc_topo_t *t = e->topo;
    int n = mrc_topo_num_nodes(t);
    long total = 2L * mrc_topo_num_physical_links(t);
    int *off = malloc(((size_t)n + 1) * sizeof *off);
    unsigned char *used = calloc((size_t)total + 1, 1);
    e->idle_ports = calloc((size_t)n + 1, sizeof *e->idle_ports);
    if (!off || !used || !e->idle_ports) {
        free(off);
        free(used);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    off[0] = 0;
    for (int u = 0; u < n; u++)
        off[u + 1] = off[u] + mrc_topo_num_ports(t, u);
    for (int g = 0; g < e->num_groups; g++)
        for (int r = 0; r < e->groups[g].num_rings; r++) {
            const mrc_ring_t *ring = &e->groups[g].rings[r];
            for (int i = 0; i < ring->size; i++) {
                const mrc_hop_t *h = &ring->hops[i];
                for (int s = 0; s + 1 < h->route_len; s++) {
                    used[off[h->route[s]] + h->ports[s]] = 1;
                    used[off[h->route[s + 1]] + h->in_ports[s]] = 1;
                }
            }
        }
    long idle = 0;
    for (int u = 0; u < n; u++) {
        for (int p = off[u]; p < off[u + 1]; p++)
            e->idle_ports[u] += !used[p];
        idle += e->idle_ports[u];
    }
    e->num_idle_physical = (int)(idle / 2);
    free(off);
    free(used);
    return MRC_OK;
}

mrc_status_t mrc__embed_builder_finish(mrc__embed_builder_t *b,
                                       const char *strategy,
                                       mrc_embedding_t **out)
{
    mrc_status_t st;
    *out = NULL;
    mrc_embedding_t *e = calloc(1, sizeof *e);
    if (!e || b->failed) {
        free(e);
        mrc__embed_builder_free(b);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory embedding rings");
    }
    e->topo = b->topo;
    e->strategy = mrc__strdup(strategy);
    int n = mrc_topo_num_nodes(b->topo);
    e->node_group = malloc((size_t)n * sizeof *e->node_group);
    if (!e->strategy || !e->node_group) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    st = adopt_drafts(b, e);
    if (st == MRC_OK)
        st = mrc_embed_verify(e);
    if (st == MRC_OK)
        st = assign_links(e);
    if (st == MRC_OK)
        st = mrc_embed_verify(e); /* now with links and ports */
    if (st == MRC_OK)
        st = mrc__embed_compute_loads(e);
    if (st == MRC_OK)
        st = count_idle_ports(e);
    if (st != MRC_OK)
        goto fail;
    for (int i = 0; i < n; i++)
        e->node_group[i] = -1;
    for (int g = 0; g < e->num_groups; g++)
        for (int k = 0; k < e->groups[g].size; k++)
            e->node_group[e->groups[g].nodes[k]] = g;
    mrc__embed_builder_free(b);
    *out = e;
    return MRC_OK;
fail:
    mrc__embed_builder_free(b);
    mrc_embed_destroy(e);
    return st;
}
