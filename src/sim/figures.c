/*
 * The figures: what a walk books as it goes (bytes per channel, energy
 * moved, the time each physical link is on, switched off in the gaps a
 * phase leaves it idle when that saves more than its wake-up), and the
 * result's figures from those totals: time, algbw, busbw, the bound and
 * efficiency, utilisation, energy with and without gating.
 */
#include <math.h>
#include <stdlib.h>

#include "sim/sim_internal.h"

/* The links switched on for a step of phase ph (the mask's ports in use)
 * for dur ns, `times` over: the same figures as booking the step's
 * flows' links, taken from the program's mask instead. */
static void book_mask(const mrc__sim_t *s, int ph, int group, double start,
                      double dur, double times, double *phys_on,
                      double *phys_last, double wake_ns, uint8_t *used)
{
    const mrc_program_t *p = s->p;
    if (ph < 0)
        return;
    int lo = p->port_phases[ph].first_use,
        hi = p->port_phases[ph + 1].first_use;
    for (int i = lo; i < hi; i++) {
        int q = s->use_phys[i];
        /* Groups walk their steps on their own clocks: a group's step
         * switches on its own nodes' ports only. */
        if (q < 0 || used[q] ||
            (group >= 0 && p->nodes[p->port_uses[i].node].group != group))
            continue;
        used[q] = 1;
        double gap = start - phys_last[q];
        phys_on[q] += fmin(gap, wake_ns) + dur * times;
        phys_last[q] = start + dur * times;
    }
    for (int i = lo; i < hi; i++)
        if (s->use_phys[i] >= 0)
            used[s->use_phys[i]] = 0;
}

/* Books one step's flows: bytes on channels, bits moved, and the physical
 * links in use (on for the step, after their gap or a wake-up). `times`
 * repeats the step (a ring phase's identical steps). */
void mrc__sim_book_step(const mrc__sim_t *s, const mrc__sim_flow_t *fl, int nf,
                        double start, double dur, double times,
                        mrc__sim_acct_t *a, int step, int group)
{
    uint8_t *used = a->used;
    /* The links on: from the program's port mask where it has one (the
     * flows then book bytes only); group -1: every node's. */
    if (s->use_phys)
        book_mask(s, mrc__port_phase_of(s->p, step), group, start, dur, times,
                  a->phys_on, a->phys_last, a->wake_ns, used);
    for (int f = 0; f < nf; f++) {
        const mrc__sim_route_t *rt = &s->routes[fl[f].route];
        for (int q = 0; q < rt->len; q++) {
            int ch = s->chan_pool[rt->first + q];
            int ph = s->phys_pool[rt->first + q];
            if (ch >= s->link_chan) /* a node's memory: no link */
                continue;
            a->r->link_bytes[ch] += fl[f].bytes * times;
            a->r->link_utilisation[ch] += fl[f].bytes * times / s->cap[ch];
            a->move_j += fl[f].bytes * times * 8 * a->pj * 1e-12;
            if (s->use_phys || used[ph])
                continue;
            used[ph] = 1;
            double gap = start - a->phys_last[ph];
            if (gap >= 0) {
                a->phys_on[ph] += fmin(gap, a->wake_ns) + dur * times;
                a->phys_last[ph] = start + dur * times;
            } else if (start + dur * times > a->phys_last[ph]) {
                /* Another group's step still had it on (groups that
                 * share a link): only the time past that counts. */
                a->phys_on[ph] += start + dur * times - a->phys_last[ph];
                a->phys_last[ph] = start + dur * times;
            }
        }
    }
    for (int f = 0; f < nf && !s->use_phys; f++) {
        const mrc__sim_route_t *rt = &s->routes[fl[f].route];
        for (int q = 0; q < rt->len; q++)
            if (s->phys_pool[rt->first + q] >= 0)
                used[s->phys_pool[rt->first + q]] = 0;
    }
}

static double bound_share(mrc_collective_t c, int n)
{
    switch (c) {
    case MRC_ALLREDUCE: return 2.0 * (n - 1) / n;
    case MRC_REDUCE_SCATTER:
    case MRC_ALLGATHER: return (double)(n - 1) / n;
    default: return 1;
    }
}

/* The result's figures from the totals of a walk: utilisation as a share
 * of the whole time, energy with and without gating, and the bandwidths
 * against the slowest node of the first group. */
void mrc__sim_figures(const mrc__sim_t *s, const mrc__sim_acct_t *a,
                      double watts, mrc_sim_result_t *r)
{
    const mrc_program_t *p = s->p;
    double total_ns = a->total_ns, on_ns = 0;
    for (int ph = 0; ph < s->num_phys; ph++)
        on_ns += a->phys_on[ph];
    r->time_us = total_ns / 1e3;
    for (int ch = 0; ch < 2 * r->num_links; ch++) {
        r->bytes_moved += r->link_bytes[ch];
        r->link_utilisation[ch] =
            total_ns > 0 ? r->link_utilisation[ch] / total_ns : 0;
    }
    r->energy_j = a->move_j + watts * on_ns * 1e-9;
    r->energy_no_gating_j = a->move_j + watts * s->num_phys * total_ns * 1e-9;
    double data = (double)p->cfg.count * (double)mrc_dtype_size(p->cfg.dtype);
    if (p->cfg.collective == MRC_REDUCE_SCATTER ||
        p->cfg.collective == MRC_ALLGATHER)
        data *= p->num_groups ? p->groups[0].size : 1;
    int n = p->num_groups ? p->groups[0].size : 1;
    r->algbw_gbps = total_ns > 0 ? data / total_ns : 0;
    r->busbw_gbps = r->algbw_gbps * bound_share(p->cfg.collective, n);
    double minbw = INFINITY;
    for (int g = 0; g < p->num_groups; g++)
        for (int i = 0; i < p->groups[g].size; i++)
            minbw = fmin(minbw,
                         mrc_topo_node_bandwidth_gbps(
                             s->t, p->members[p->groups[g].first_member + i]));
    r->bound_gbps = n > 1 && isfinite(minbw)
                        ? minbw / bound_share(p->cfg.collective, n)
                        : 0;
    r->efficiency = r->bound_gbps > 0 ? r->algbw_gbps / r->bound_gbps : 0;
}

void mrc_sim_result_destroy(mrc_sim_result_t *r)
{
    if (!r)
        return;
    free(r->link_bytes);
    free(r->link_utilisation);
    free(r);
}
