/*
 * The relays of routed hops: which node forwards which hop at which place
 * of its route (the index the executor, the checker and the simulator
 * build their relay chains from), and how many chains and operations a
 * node's relays add to its plan. The relay chains themselves start in
 * chain.c and are run by the expansion (expand.c: mrc__chain_next).
 */
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"

/* Calls visit(arg, relay node, record) for every relay of the program;
 * stops at (and returns) a non-zero return. A route node outside the
 * program is -1 (reported by the caller). */
static int each_relay(const mrc_program_t *p,
                      int (*visit)(void *, int, const mrc__relay_t *),
                      void *arg)
{
    for (int g = 0; g < p->num_groups; g++) {
        const mrc__group_t *gr = &p->groups[g];
        for (int k = gr->first_stream; k < gr->first_stream + gr->num_streams;
             k++)
            for (int pos = 0; pos < gr->size; pos++) {
                int u = mrc__stream_node(p, k, pos);
                int route = mrc__node_stream(p, u, k)->route;
                if (route < 0)
                    continue;
                int off = p->route_off[route];
                int len = p->route_off[route + 1] - off;
                for (int i = 1; i < len - 1; i++) {
                    mrc__relay_t rec = {k, u, route, i};
                    int v = p->route_nodes[off + i];
                    int r =
                        visit(arg, v >= 0 && v < p->num_nodes ? v : -1, &rec);
                    if (r)
                        return r;
                }
            }
    }
    return 0;
}

typedef struct relay_fill {
    int32_t *at;
    mrc__relay_t *list;
} relay_fill_t;

static int count_relay(void *arg, int v, const mrc__relay_t *r)
{
    (void)r;
    if (v < 0)
        return 1;
    ((int32_t *)arg)[v + 1]++;
    return 0;
}

static int fill_relay(void *arg, int v, const mrc__relay_t *r)
{
    relay_fill_t *f = arg;
    f->list[f->at[v]++] = *r;
    return 0;
}

mrc_status_t mrc__relay_index(const mrc_program_t *p, int32_t **first,
                              mrc__relay_t **list)
{
    int n = p->num_nodes;
    *list = NULL;
    *first = calloc((size_t)n + 2, sizeof **first);
    if (!*first)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory indexing relays");
    if (each_relay(p, count_relay, *first)) {
        free(*first);
        *first = NULL;
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "a hop's route runs through a node outside the "
                          "program's %d nodes",
                          n);
    }
    for (int u = 0; u < n; u++)
        (*first)[u + 1] += (*first)[u];
    int32_t *at = malloc(((size_t)n + 1) * sizeof *at);
    *list = malloc(((size_t)(*first)[n] + 1) * sizeof **list);
    if (!at || !*list) {
        free(at);
        free(*first);
        free(*list);
        *first = NULL;
        *list = NULL;
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory indexing relays");
    }
    memcpy(at, *first, (size_t)n * sizeof *at);
    relay_fill_t f = {at, *list};
    each_relay(p, fill_relay, &f);
    free(at);
    return MRC_OK;
}

typedef struct relay_count {
    const mrc_program_t *p;
    int node;
    uint64_t chunk, chains, ops;
} relay_count_t;

static int bound_relay(void *arg, int v, const mrc__relay_t *r)
{
    relay_count_t *c = arg;
    if (v != c->node)
        return 0;
    int n = mrc__stream_size(c->p, r->stream);
    uint64_t chunks = (uint64_t)mrc__stream_chunks(c->p, r->stream, c->chunk);
    c->chains += chunks;
    c->ops = mrc__sat_mul_add(
        chunks, (uint64_t)c->p->code_len * (uint64_t)(n > 1 ? n - 1 : 1),
        c->ops);
    return 0;
}

void mrc__relay_bound(const mrc_program_t *p, int node, uint64_t chunk_elems,
                      uint64_t *chains, uint64_t *ops)
{
    relay_count_t c = {p, node, chunk_elems ? chunk_elems : mrc__chunk_elems(p),
                       0, 0};
    each_relay(p, bound_relay, &c);
    *chains = c.chains;
    *ops = c.ops;
}
