/*
 * A run of calls in the pipelined walk (mrc_sim_config_t.calls > 1): the
 * program's chains made once per call, and each node beginning its next
 * call when it has ended this one, as a loop of calls runs on the
 * transports (a benchmark's loop, `mrc calibrate --check`'s rows).
 *
 * A node ends call c when its chains of c have ended and, where its group
 * agrees at the end of a call (a reduce's or a broadcast's group
 * completion: the executor's round of agreement, src/exec/exec.c), once
 * every member of its group has begun c, the last one's news the group's
 * barrier latency on its way. (The executor skips the round for a node
 * whose program already waits on every member; here such a node waits
 * for nothing but that latency after the last member began.) So a
 * broadcast's root sends the next call's data while its leaf still
 * copies this call's, and a loop of them runs at the slower node's own
 * part a call, not at the two parts in a row that one call alone takes.
 *
 * Accepts: the pipelined walk's chains of any program, laid out call by
 * call and node by node within a call (sim.c's make_chains), 2 to
 * MRC_SIM_MAX_CALLS calls.
 * Limits: nothing else holds a node back across calls. The transports
 * bound how far a node runs ahead by their rings of slots and records
 * (shm: 56 calls) and, for a window by copy past 64 KiB, one call; with
 * local completion a run of 8 calls can let a node run further ahead of
 * its peers than such a window lets it. Every call runs on the same
 * buffers (the node model's caches are a call's).
 */
#include <math.h>
#include <stdlib.h>

#include "sim/pipelined.h"

mrc_status_t mrc__sim_calls_init(mrc__sim_pipe_t *pp, int calls, int per_call)
{
    mrc__sim_calls_t *r = &pp->run;
    const mrc_program_t *p = pp->s->p;
    int n = p->num_nodes, ng = p->num_groups;
    *r = (mrc__sim_calls_t){
        .calls = calls, .per_call = per_call, .nodes = n, .groups = ng};
    if (calls <= 1)
        return MRC_OK;
    r->agree =
        p->cfg.completion == MRC_COMPLETION_GROUP &&
        (p->cfg.collective == MRC_REDUCE || p->cfg.collective == MRC_BROADCAST);
    size_t cells = (size_t)calls * (size_t)n;
    size_t gcells = (size_t)calls * (size_t)ng;
    r->first = malloc(((size_t)n + 1) * sizeof *r->first);
    r->count = calloc((size_t)n + 1, sizeof *r->count);
    r->left = malloc((cells + 1) * sizeof *r->left);
    r->begun = calloc(gcells + 1, sizeof *r->begun);
    r->last_began = calloc(gcells + 1, sizeof *r->last_began);
    r->ended = calloc((size_t)calls * (size_t)per_call + 1, 1);
    r->end = calloc((size_t)calls, sizeof *r->end);
    if (!r->first || !r->count || !r->left || !r->begun || !r->last_began ||
        !r->ended || !r->end)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    for (int i = 0; i < per_call; i++) {
        int u = pp->chains[i].it.node;
        if (r->count[u]++ == 0)
            r->first[u] = i;
    }
    for (int c = 0; c < calls; c++)
        for (int u = 0; u < n; u++)
            r->left[(size_t)c * n + u] = r->count[u];
    /* Every member began call 0 at 0; a member of no chains (should one
     * be) begins every call then. */
    for (int u = 0; u < n; u++) {
        int g = p->nodes[u].group;
        for (int c = 0; g >= 0 && c < calls; c++)
            r->begun[(size_t)c * ng + g] += c == 0 || !r->count[u];
    }
    return MRC_OK;
}

void mrc__sim_calls_free(mrc__sim_calls_t *r)
{
    free(r->first);
    free(r->count);
    free(r->left);
    free(r->begun);
    free(r->last_began);
    free(r->ended);
    free(r->end);
}

/* Node u ends call c if it may: its chains of c have ended (left 0; -1
 * once its end is on its way) and, where the group agrees, every member
 * has begun c, the group's barrier latency before (the news of the last
 * to begin, heard by the farthest member that long after: a round of
 * agreement is a barrier's). */
static mrc_status_t try_end(mrc__sim_pipe_t *pp, int u, int c)
{
    mrc__sim_calls_t *r = &pp->run;
    size_t cell = (size_t)c * r->nodes + u;
    /* (a node of no chains began every call at the start: never again) */
    if (r->left[cell] != 0 || r->count[u] == 0)
        return MRC_OK;
    double at = pp->now;
    const mrc_program_t *p = pp->s->p;
    int g = p->nodes[u].group;
    if (r->agree && g >= 0 && p->groups[g].size > 1) {
        size_t gcell = (size_t)c * r->groups + g;
        if (r->begun[gcell] < p->groups[g].size)
            return MRC_OK; /* the last to begin c ends u's call */
        int route;
        mrc_status_t st = mrc__sim_barrier_route(pp->s, g, &route);
        if (st != MRC_OK)
            return st;
        at = fmax(at, r->last_began[gcell] + pp->s->routes[route].latency);
    }
    r->left[cell] = -1;
    if (at <= pp->now)
        return mrc__sim_calls_begin(pp, u, c);
    if (mrc__grow((void **)&pp->heap, &pp->cap_heap, pp->nheap + 1,
                  sizeof *pp->heap))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    mrc__sim_pipe_arrival_push(
        pp, (mrc__sim_arrival_t){at, MRC__SIM_BEGIN, u, (uint64_t)c, 0});
    return MRC_OK;
}

mrc_status_t mrc__sim_calls_chain_ended(mrc__sim_pipe_t *pp, int i)
{
    mrc__sim_calls_t *r = &pp->run;
    if (r->calls <= 1 || r->ended[i])
        return MRC_OK;
    r->ended[i] = 1;
    int c = i / r->per_call, u = pp->chains[i].it.node;
    if (--r->left[(size_t)c * r->nodes + u] > 0)
        return MRC_OK;
    return try_end(pp, u, c);
}

mrc_status_t mrc__sim_calls_begin(mrc__sim_pipe_t *pp, int u, int c)
{
    mrc__sim_calls_t *r = &pp->run;
    r->end[c] = fmax(r->end[c], pp->now);
    if (c + 1 >= r->calls)
        return MRC_OK;
    int next = c + 1;
    for (int j = 0; j < r->count[u]; j++)
        pp->ready[pp->nready++] = next * r->per_call + r->first[u] + j;
    const mrc_program_t *p = pp->s->p;
    int g = p->nodes[u].group;
    if (g < 0)
        return MRC_OK;
    size_t gcell = (size_t)next * r->groups + g;
    r->last_began[gcell] = pp->now;
    if (++r->begun[gcell] < p->groups[g].size || !r->agree)
        return MRC_OK;
    /* u was the last to begin: the members whose part of it is done. */
    mrc_status_t st = MRC_OK;
    for (int j = 0; j < p->groups[g].size && st == MRC_OK; j++)
        st = try_end(pp, p->members[p->groups[g].first_member + j], next);
    return st;
}

void mrc__sim_calls_book(mrc__sim_pipe_t *pp)
{
    const mrc__sim_calls_t *r = &pp->run;
    mrc__sim_acct_t *a = pp->acct;
    int k = r->calls;
    a->total_ns =
        k == 2 ? r->end[1] - r->end[0] : (r->end[k - 1] - r->end[1]) / (k - 2);
    double share = pp->now > 0 ? a->total_ns / pp->now : 0;
    for (int ch = 0; ch < 2 * a->r->num_links; ch++) {
        a->r->link_bytes[ch] /= k;
        a->r->link_utilisation[ch] *= share;
    }
    for (int ph = 0; ph < pp->s->num_phys; ph++)
        a->phys_on[ph] *= share;
    a->move_j /= k;
}
