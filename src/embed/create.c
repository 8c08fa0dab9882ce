/*
 * Creating embeddings by name: a named strategy on its own, or auto,
 * which keeps the best of the constructions, every named strategy that
 * applies and the search.
 */
#include <stdlib.h>
#include <string.h>

#include "embed_internal.h"

/* A step u -> v that the strategy meant over a link that failed: the
 * intact topology joins u and v, what is left does not. */
static int lost(const mrc_topo_t *t, int u, int v)
{
    return mrc__embed_links_between(t, u, v) == 0 &&
           mrc__embed_links_between(mrc_topo_intact(t), u, v) > 0;
}

/* A named strategy states its rings on the intact shape of the topology
 * (mrc_topo_fail_links): where a hop or a step of a route needs a link
 * that failed, it is refused naming the link, instead of being routed
 * round it by chance. ring routes round missing links by design, and
 * auto only sees the links that are left. */
static mrc_status_t check_lost_links(const mrc__embed_builder_t *b,
                                     const char *name)
{
    if (mrc_topo_intact(b->topo) == b->topo || strcmp(name, "ring") == 0 ||
        strcmp(name, "auto") == 0)
        return MRC_OK;
    for (int r = 0; r < b->num_rings; r++) {
        const mrc__draft_ring_t *ring = &b->rings[r];
        for (int i = 0; i < ring->size; i++) {
            const mrc__draft_hop_t *h = &ring->hops[i];
            int u = ring->nodes[i], v = ring->nodes[(i + 1) % ring->size];
            for (int s = 0; s + 1 < h->route_len && !lost(b->topo, u, v); s++) {
                u = h->route[s];
                v = h->route[s + 1];
            }
            if (lost(b->topo, u, v))
                return mrc__error(MRC_ERR_NOT_APPLICABLE,
                                  "%s needs the link between nodes %d and "
                                  "%d, which failed in %s; auto embeds "
                                  "rings round it",
                                  name, u, v, mrc_topo_name(b->topo));
        }
    }
    return MRC_OK;
}

static mrc_status_t run_fn(const mrc_topo_t *topo,
                           const mrc_embed_config_t *cfg, mrc__strategy_fn fn,
                           const char *name, mrc_embedding_t **out)
{
    mrc__embed_builder_t b;
    mrc__embed_builder_init(&b, topo);
    mrc_status_t st = fn(cfg, &b);
    if (st == MRC_OK)
        st = check_lost_links(&b, name);
    if (st != MRC_OK) {
        mrc__embed_builder_free(&b);
        return st;
    }
    return mrc__embed_builder_finish(&b, name, out);
}

static mrc_status_t run_strategy(const mrc_topo_t *topo,
                                 const mrc_embed_config_t *cfg,
                                 const char *name, mrc_embedding_t **out)
{
    return run_fn(topo, cfg, mrc__strategy_find(name), name, out);
}

/* Keeps the better of *best and a new candidate (named `method`). */
static void consider(mrc_embedding_t **best, mrc_embedding_t *e,
                     const mrc_embed_config_t *cfg, const char *method);

static int total_rings(const mrc_embedding_t *e)
{
    int n = 0;
    for (int g = 0; g < e->num_groups; g++)
        n += e->groups[g].num_rings;
    return n;
}

/* Rings of the group with the most (a bidirectional ring counts once). */
static int max_group_rings(const mrc_embedding_t *e)
{
    int most = 0;
    for (int g = 0; g < e->num_groups; g++)
        most = e->groups[g].num_rings > most ? e->groups[g].num_rings : most;
    return most;
}

/* Higher worst-group efficiency wins; then fewer rings. */
static int better(const mrc_embedding_t *x, const mrc_embedding_t *y)
{
    double ex = x->worst.efficiency, ey = y->worst.efficiency;
    if (ex > ey * (1 + 1e-9) + 1e-12)
        return 1;
    if (ex < ey * (1 - 1e-9) - 1e-12)
        return 0;
    return total_rings(x) < total_rings(y);
}

static void consider(mrc_embedding_t **best, mrc_embedding_t *e,
                     const mrc_embed_config_t *cfg, const char *method)
{
    if ((cfg && cfg->max_rings > 0 && max_group_rings(e) > cfg->max_rings) ||
        (*best && !better(e, *best))) {
        mrc_embed_destroy(e);
        return;
    }
    mrc_embed_destroy(*best);
    *best = e;
    free(e->method);
    e->method = mrc__strdup(method);
}

mrc_status_t mrc_embed_create(const mrc_topo_t *topo,
                              const mrc_embed_config_t *cfg,
                              mrc_embedding_t **out)
{
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_embed_create: out is "
                                               "NULL");
    *out = NULL;
    if (!topo)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_embed_create: topology "
                                               "is NULL");
    const char *name = cfg && cfg->strategy ? cfg->strategy : "auto";
    if (!mrc__strategy_find(name)) {
        char list[256] = "";
        for (const char *const *s = mrc_embed_strategies(); *s; s++) {
            strcat(list, s == mrc_embed_strategies() ? "" : ", ");
            strcat(list, *s);
        }
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "unknown strategy '%s' (strategies: %s)", name, list);
    }
    if (strcmp(name, "auto") != 0)
        return run_strategy(topo, cfg, name, out);

    /* Constructions and named strategies first: they are quick, and
     * when one reaches the bound the search cannot do better. */
    mrc_embedding_t *best = NULL, *e = NULL;
    if (run_fn(topo, cfg, mrc__strategy_torus, "torus", &e) == MRC_OK)
        consider(&best, e, cfg, "torus construction");
    if (run_fn(topo, cfg, mrc__strategy_torus_ladder, "torus-ladder", &e) ==
        MRC_OK)
        consider(&best, e, cfg, "torus-ladder construction");
    if (run_fn(topo, cfg, mrc__strategy_hcm8_optimum, "hcm8", &e) == MRC_OK)
        consider(&best, e, cfg, "hcm8 construction");
    for (const char *const *s = mrc_embed_strategies(); *s; s++)
        if (strcmp(*s, "auto") != 0 &&
            run_strategy(topo, cfg, *s, &e) == MRC_OK)
            consider(&best, e, cfg, *s);
    if (!best || best->worst.efficiency < 1 - 1e-9) {
        mrc_status_t st = run_strategy(topo, cfg, "auto", &e);
        if (st != MRC_OK) {
            mrc_embed_destroy(best);
            return st;
        }
        consider(&best, e, cfg, "search");
    }
    if (!best)
        return mrc__error(MRC_ERR_INTERNAL, "auto found no rings");
    free(best->strategy);
    best->strategy = mrc__strdup("auto");
    if (!best->strategy || !best->method) {
        mrc_embed_destroy(best);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    *out = best;
    return MRC_OK;
}
