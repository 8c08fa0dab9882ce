/*
 * Link loads and the allreduce figures of a finished embedding: the
 * bytes each link direction carries per byte of data, and from the most
 * loaded direction each group's algorithm bandwidth against its bound.
 */
#include <stdlib.h>

#include "embed_internal.h"

static double ring_factor(int n)
{
    return n > 1 ? 2.0 * (n - 1) / n : 0;
}

static void add_load(mrc_embedding_t *e, const mrc_hop_t *h, double fwd,
                     double back)
{
    for (int s = 0; s + 1 < h->route_len; s++) {
        const mrc_link_t *l = mrc_topo_link(e->topo, h->links[s]);
        int dir = l->a == h->route[s] ? 0 : 1;
        e->load[2 * h->links[s] + dir] += fwd;
        e->load[2 * h->links[s] + (1 - dir)] += back;
    }
}

/* Loads per link direction in bytes per byte of data: a ring of n nodes
 * sends 2(n-1)/n of its share over each hop (reduce-scatter then
 * allgather); a bidirectional ring half of it each way round. */
mrc_status_t mrc__embed_compute_loads(mrc_embedding_t *e)
{
    const mrc_topo_t *t = e->topo;
    int nl = mrc_topo_num_links(t);
    e->load = calloc((size_t)(2 * nl + 1), sizeof *e->load);
    if (!e->load)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int g = 0; g < e->num_groups; g++) {
        double f = ring_factor(e->groups[g].size);
        for (int r = 0; r < e->groups[g].num_rings; r++) {
            const mrc_ring_t *ring = &e->groups[g].rings[r];
            double fwd =
                ring->bidirectional ? f * ring->share / 2 : f * ring->share;
            double back = ring->bidirectional ? fwd : 0;
            for (int i = 0; i < ring->size; i++)
                add_load(e, &ring->hops[i], fwd, back);
        }
    }
    e->num_idle = 0;
    for (int i = 0; i < 2 * nl; i++)
        e->num_idle += e->load[i] == 0;

    int worst = -1;
    for (int g = 0; g < e->num_groups; g++) {
        mrc__embed_group_t *gr = &e->groups[g];
        mrc_embed_figures_t *fig = &gr->figures;
        if (gr->size < 2) {
            fig->bound_gbps = fig->algbw_gbps = 0;
            fig->efficiency = 1;
        } else {
            double minbw = 1e300, worst_ratio = 0;
            for (int k = 0; k < gr->size; k++) {
                double bw = mrc_topo_node_bandwidth_gbps(t, gr->nodes[k]);
                minbw = bw < minbw ? bw : minbw;
            }
            for (int r = 0; r < gr->num_rings; r++) {
                const mrc_ring_t *ring = &gr->rings[r];
                for (int i = 0; i < ring->size; i++) {
                    const mrc_hop_t *h = &ring->hops[i];
                    for (int s = 0; s + 1 < h->route_len; s++) {
                        const mrc_link_t *l = mrc_topo_link(t, h->links[s]);
                        double cap = l->count * l->bandwidth_gbps;
                        for (int d = 0; d < 2; d++) {
                            double x = e->load[2 * h->links[s] + d] / cap;
                            worst_ratio = x > worst_ratio ? x : worst_ratio;
                        }
                    }
                }
            }
            fig->bound_gbps = minbw / ring_factor(gr->size);
            fig->algbw_gbps = worst_ratio > 0 ? 1 / worst_ratio : 0;
            fig->efficiency =
                fig->bound_gbps > 0 ? fig->algbw_gbps / fig->bound_gbps : 0;
        }
        if (worst < 0 ||
            fig->efficiency < e->groups[worst].figures.efficiency - 1e-12)
            worst = g;
    }
    e->worst = e->groups[worst].figures;
    return MRC_OK;
}
