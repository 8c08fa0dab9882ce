/*
 * The checker: the proof that a program does its collective.
 *
 * First the tables, at every size: each stream's ring order visits every
 * member of its group once, every node's position, successor and
 * predecessor agree with it, and every routed hop runs from the node to
 * its successor. Then the code, over the index: a ring code that every
 * node runs alike is proven once per group size by running node 0 in
 * coordinates relative to itself (check_symbolic.c), in O(N x code).
 *
 * Any other code (chains, trees, a code the symbolic proof cannot follow)
 * gets an abstract run of every node's program without data
 * (check_run.c; programs that read peers' memory: check_memory.c). The
 * run is the same proof at every size; one that would take more than
 * RUN_MAX_OPS operations or RUN_MAX_BYTES of state is refused up front,
 * with the reason the symbolic proof did not apply.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"
#include "ring_math.h"

/* The abstract run's bounds: about half a minute, and the state. */
#define RUN_MAX_OPS   (1ull << 28)
#define RUN_MAX_BYTES (1ull << 30)

/* The streams of each group must cut its segment [0, count) into slices
 * that cover every element exactly once; otherwise an element would get no
 * contributions (or two sets) without any message going astray. */
static mrc_status_t check_slices(const mrc_program_t *p)
{
    for (int g = 0; g < p->num_groups; g++) {
        const mrc__group_t *gr = &p->groups[g];
        uint64_t at = 0;
        int used = 0;
        while (at < p->cfg.count) {
            int found = 0;
            for (int k = gr->first_stream;
                 k < gr->first_stream + gr->num_streams; k++) {
                const mrc__stream_t *s = &p->streams[k];
                if (s->slice_len > 0 && s->slice_off == at) {
                    at += s->slice_len;
                    used++;
                    found = 1;
                    break;
                }
            }
            if (!found)
                return mrc__error(MRC_ERR_INVALID_PROGRAM,
                                  "group %d (node %d first): elements from "
                                  "%llu on are in no stream",
                                  g, p->members[gr->first_member],
                                  (unsigned long long)at);
        }
        int nonempty = 0;
        for (int k = gr->first_stream; k < gr->first_stream + gr->num_streams;
             k++)
            nonempty += p->streams[k].slice_len > 0;
        if (at != p->cfg.count || used != nonempty)
            return mrc__error(MRC_ERR_INVALID_PROGRAM,
                              "group %d (node %d first): stream slices "
                              "overlap or run past the %zu elements",
                              g, p->members[gr->first_member], p->cfg.count);
    }
    return MRC_OK;
}

/* The tables of group g: each stream's ring order visits every member
 * once, and every node's position, successor and predecessor agree with
 * it; a routed hop runs from the node to its successor. */
static mrc_status_t check_tables(const mrc_program_t *p, int g, int32_t *seen)
{
    const mrc__group_t *gr = &p->groups[g];
    int n = gr->size;
    mrc_status_t st = MRC_OK;
    for (int k = gr->first_stream;
         k < gr->first_stream + gr->num_streams && st == MRC_OK; k++) {
        /* seen[u] == k + 1: node u visited by stream k (streams are
         * numbered across groups, so the marks need no clearing). */
        for (int pos = 0; pos < n && st == MRC_OK; pos++) {
            int u = mrc__stream_node(p, k, pos);
            const mrc__node_stream_t *e = mrc__node_stream(p, u, k);
            if (seen[u] == k + 1 || p->nodes[u].group != g)
                st = mrc__error(MRC_ERR_INVALID_PROGRAM,
                                "stream %d visits node %d twice or outside "
                                "group %d",
                                k, u, g);
            else if (e->pos != pos ||
                     e->next !=
                         mrc__stream_node(p, k, mrc__ring_next(pos, n)) ||
                     e->prev != mrc__stream_node(p, k, mrc__ring_prev(pos, n)))
                st = mrc__error(MRC_ERR_INVALID_PROGRAM,
                                "node %d, stream %d: its position, next or "
                                "previous node disagrees with the ring order",
                                u, k);
            else if (e->route >= 0 &&
                     (e->route >= p->num_routes ||
                      p->route_off[e->route + 1] - p->route_off[e->route] < 2 ||
                      p->route_nodes[p->route_off[e->route]] != u ||
                      p->route_nodes[p->route_off[e->route + 1] - 1] !=
                          e->next))
                st = mrc__error(MRC_ERR_INVALID_PROGRAM,
                                "node %d, stream %d: its hop's route does "
                                "not run from it to its next node %d",
                                u, k, e->next);
            seen[u] = k + 1;
        }
    }
    return st;
}

mrc_status_t mrc_program_check(const mrc_program_t *p)
{
    return mrc__program_check_drop_relays(p, -1);
}

/* Proves each group's code over the index where the symbolic proof
 * applies (once per group size: the code is the same, and the tables
 * were checked), and marks the groups left for the abstract run. The
 * first reason a group is left is kept in *why (MRC_OK if none). */
static mrc_status_t prove_symbolic(const mrc_program_t *p, uint8_t *run,
                                   mrc_status_t *why, char *why_text,
                                   size_t why_len)
{
    *why = MRC_OK;
    int *done_n = calloc((size_t)p->num_groups + 1, sizeof *done_n);
    if (!done_n)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking");
    int applies = mrc__symbolic_applies(p), num_done = 0;
    for (int g = 0; g < p->num_groups; g++) {
        const mrc__group_t *gr = &p->groups[g];
        int k = -1;
        for (int j = gr->first_stream;
             j < gr->first_stream + gr->num_streams && k < 0; j++)
            if (mrc__stream_chunks(p, j, UINT64_MAX) > 0)
                k = j;
        run[g] = 0;
        if (k < 0)
            continue; /* nothing to move */
        if (!applies || gr->size < 2) {
            run[g] = 1;
            continue;
        }
        int seen = 0;
        for (int i = 0; i < num_done && !seen; i++)
            seen = done_n[i] == gr->size;
        if (seen)
            continue;
        mrc_status_t st = mrc__check_symbolic_stream(p, k);
        if (st == MRC_ERR_NO_MEMORY) {
            free(done_n);
            return st;
        }
        if (st == MRC_OK) {
            done_n[num_done++] = gr->size;
            continue;
        }
        run[g] = 1;
        if (*why == MRC_OK) {
            *why = st;
            snprintf(why_text, why_len, "%s", mrc_last_error());
        }
    }
    free(done_n);
    return MRC_OK;
}

mrc_status_t mrc__program_check_drop_relays(const mrc_program_t *p, int drop)
{
    if (!p)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_program_check: NULL");
    mrc_status_t sl = check_slices(p);
    if (sl != MRC_OK)
        return sl;
    if (mrc__program_has_memory_ops(p))
        return mrc__check_memory_program(p);
    /* Every node of a group is the member of its rank, and each member
     * has that rank: ranks are a permutation of the group (the blocks of
     * reduce-scatter and allgather are the ranks'). */
    for (int u = 0; u < p->num_nodes; u++) {
        int g = p->nodes[u].group, r = p->nodes[u].rank;
        if (g >= 0 && (g >= p->num_groups || r < 0 || r >= p->groups[g].size ||
                       p->members[p->groups[g].first_member + r] != u))
            return mrc__error(MRC_ERR_INVALID_PROGRAM,
                              "node %d: rank %d of group %d is another "
                              "node's in the group's members",
                              u, r, g);
    }
    int32_t *seen = calloc((size_t)p->num_nodes + 1, sizeof *seen);
    if (!seen)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking");
    for (int g = 0; g < p->num_groups && sl == MRC_OK; g++)
        sl = check_tables(p, g, seen);
    free(seen);
    if (sl != MRC_OK)
        return sl;
    uint8_t *run = calloc((size_t)p->num_groups + 1, 1);
    if (!run)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking");
    mrc_status_t why = MRC_OK;
    char why_text[512] = "";
    if (drop >= 0) /* a test's relay left out: only the run sees relays */
        memset(run, 1, (size_t)p->num_groups);
    else if ((sl = prove_symbolic(p, run, &why, why_text, sizeof why_text)) !=
             MRC_OK) {
        free(run);
        return sl;
    }
    uint64_t ops, bytes;
    mrc__check_run_cost(p, run, &ops, &bytes);
    if (ops > RUN_MAX_OPS || bytes > RUN_MAX_BYTES) {
        int g = 0;
        while (!run[g])
            g++;
        free(run);
        if (why == MRC_ERR_INVALID_PROGRAM)
            return mrc__error(why, "%s", why_text);
        return mrc__error(
            MRC_ERR_INVALID_PROGRAM,
            "group %d (node %d first, %d nodes): the program cannot be "
            "proven: %s, and running every message would take %llu "
            "operations and %llu MiB (at most %llu and %llu)",
            g, p->members[p->groups[g].first_member], p->groups[g].size,
            why != MRC_OK ? why_text
                          : "its code is not one the symbolic proof covers "
                            "(a ring code every node runs alike)",
            (unsigned long long)ops, (unsigned long long)(bytes >> 20),
            (unsigned long long)RUN_MAX_OPS,
            (unsigned long long)(RUN_MAX_BYTES >> 20));
    }
    sl = mrc__check_run(p, drop, run);
    free(run);
    return sl;
}
