/*
 * The verifier: every group a set of the topology's nodes in no other
 * group, every ring a cycle through its group's nodes with shares that
 * sum to 1, every hop a route over links that exist (and, once finished,
 * over the link entries and ports it names).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "embed_internal.h"

static mrc_status_t bad(int g, int r, int h, const char *what)
{
    if (h >= 0)
        return mrc__error(MRC_ERR_INVALID_EMBEDDING,
                          "group %d, ring %d, hop %d: %s", g, r, h, what);
    if (r >= 0)
        return mrc__error(MRC_ERR_INVALID_EMBEDDING, "group %d, ring %d: %s", g,
                          r, what);
    return mrc__error(MRC_ERR_INVALID_EMBEDDING, "group %d: %s", g, what);
}

static mrc_status_t check_hop(const mrc_topo_t *t, const mrc_hop_t *h, int g,
                              int r, int i, int from, int to, int *seen,
                              int stamp)
{
    char msg[200];
    int n = mrc_topo_num_nodes(t);
    if (h->from != from || h->to != to || h->route_len < 2 ||
        h->route[0] != from || h->route[h->route_len - 1] != to) {
        snprintf(msg, sizeof msg,
                 "route must lead from node %d to node %d, the next node of "
                 "the ring",
                 from, to);
        return bad(g, r, i, msg);
    }
    for (int s = 0; s < h->route_len; s++) {
        int x = h->route[s];
        if (x < 0 || x >= n) {
            snprintf(msg, sizeof msg, "route names node %d (nodes are 0..%d)",
                     x, n - 1);
            return bad(g, r, i, msg);
        }
        if (seen[x] == stamp) {
            snprintf(msg, sizeof msg, "route passes node %d twice", x);
            return bad(g, r, i, msg);
        }
        seen[x] = stamp;
    }
    for (int s = 0; s + 1 < h->route_len; s++) {
        int u = h->route[s], v = h->route[s + 1];
        if (mrc__embed_links_between(t, u, v) == 0) {
            snprintf(msg, sizeof msg, "no link joins nodes %d and %d", u, v);
            return bad(g, r, i, msg);
        }
        if (h->links && h->links[s] >= 0 &&
            !mrc__embed_link_joins(t, h->links[s], u, v)) {
            snprintf(msg, sizeof msg,
                     "link entry %d does not join nodes %d "
                     "and %d",
                     h->links[s], u, v);
            return bad(g, r, i, msg);
        }
        if (h->ports && h->ports[s] >= 0) {
            int peer = -1, pp = -1, li = -1;
            if (mrc_topo_port(t, u, h->ports[s], &li, &peer, &pp) != MRC_OK ||
                peer != v || li != h->links[s] || pp != h->in_ports[s]) {
                snprintf(msg, sizeof msg,
                         "port %d of node %d does not lead to node %d",
                         h->ports[s], u, v);
                return bad(g, r, i, msg);
            }
        }
    }
    return MRC_OK;
}

/* Group g's nodes: each one of the topology's, in no other group (owner
 * maps a node to its group, -1 for none). */
static mrc_status_t check_group_nodes(const mrc_embedding_t *e, int g,
                                      int *owner)
{
    const mrc__embed_group_t *gr = &e->groups[g];
    int n = mrc_topo_num_nodes(e->topo);
    char msg[200];
    if (gr->size < 1)
        return bad(g, -1, -1, "is empty");
    for (int k = 0; k < gr->size; k++) {
        int x = gr->nodes[k];
        if (x < 0 || x >= n) {
            snprintf(msg, sizeof msg, "names node %d (nodes are 0..%d)", x,
                     n - 1);
            return bad(g, -1, -1, msg);
        }
        if (owner[x] >= 0) {
            snprintf(msg, sizeof msg, "node %d is already in group %d", x,
                     owner[x]);
            return bad(g, -1, -1, msg);
        }
        owner[x] = g;
    }
    if (gr->size >= 2 && gr->num_rings < 1)
        return bad(g, -1, -1, "has no ring");
    return MRC_OK;
}

/* Ring r of group g: a share in (0, 1], each node of the group once, and
 * each hop a route to the next node. seen[] holds the last stamp that
 * marked each node; *stamp is advanced for each new set of marks. */
static mrc_status_t check_ring(const mrc_embedding_t *e, int g, int r,
                               const int *owner, int *seen, int *stamp)
{
    const mrc__embed_group_t *gr = &e->groups[g];
    const mrc_ring_t *ring = &gr->rings[r];
    int n = mrc_topo_num_nodes(e->topo);
    char msg[200];
    if (!(ring->share > 0) || ring->share > 1 + 1e-9) {
        snprintf(msg, sizeof msg, "share %g must be in (0, 1]", ring->share);
        return bad(g, r, -1, msg);
    }
    if (ring->size != gr->size) {
        snprintf(msg, sizeof msg, "visits %d nodes but its group has %d",
                 ring->size, gr->size);
        return bad(g, r, -1, msg);
    }
    ++*stamp;
    for (int k = 0; k < ring->size; k++) {
        int x = ring->nodes[k];
        if (x < 0 || x >= n || owner[x] != g) {
            snprintf(msg, sizeof msg, "node %d is not in the group", x);
            return bad(g, r, -1, msg);
        }
        if (seen[x] == *stamp) {
            snprintf(msg, sizeof msg, "visits node %d twice", x);
            return bad(g, r, -1, msg);
        }
        seen[x] = *stamp;
    }
    for (int k = 0; k < ring->size; k++) {
        mrc_status_t st =
            check_hop(e->topo, &ring->hops[k], g, r, k, ring->nodes[k],
                      ring->nodes[(k + 1) % ring->size], seen, ++*stamp);
        if (st != MRC_OK)
            return st;
    }
    return MRC_OK;
}

static mrc_status_t verify(const mrc_embedding_t *e)
{
    int n = mrc_topo_num_nodes(e->topo);
    char msg[200];
    mrc_status_t st = MRC_OK;
    int *owner = malloc((size_t)n * sizeof *owner);
    int *seen = calloc((size_t)n, sizeof *seen);
    int stamp = 0;
    if (!owner || !seen) {
        free(owner);
        free(seen);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory verifying");
    }
    for (int i = 0; i < n; i++)
        owner[i] = -1;
    if (e->num_groups < 1)
        st = mrc__error(MRC_ERR_INVALID_EMBEDDING, "no groups");
    for (int g = 0; g < e->num_groups && st == MRC_OK; g++) {
        const mrc__embed_group_t *gr = &e->groups[g];
        st = check_group_nodes(e, g, owner);
        double total = 0;
        for (int r = 0; r < gr->num_rings && st == MRC_OK; r++) {
            st = check_ring(e, g, r, owner, seen, &stamp);
            total += gr->rings[r].share;
        }
        if (st == MRC_OK && gr->num_rings > 0 && fabs(total - 1) > 1e-6) {
            snprintf(msg, sizeof msg, "ring shares sum to %g, not 1", total);
            st = bad(g, -1, -1, msg);
        }
    }
    free(owner);
    free(seen);
    return st;
}

mrc_status_t mrc_embed_verify(const mrc_embedding_t *e)
{
    if (!e)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_embed_verify: NULL");
    return verify(e);
}
