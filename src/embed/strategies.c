/*
 * The named strategies of the seeds, apart from GCL's ladder strategies
 * (gcl.c): the baseline ring, prism-faces (seed 000) and hcm8 (seed 004),
 * what every strategy shares, and the table generated from the one list
 * of strategies (MRC__STRATEGY_MAP). Each states its rings as node orders
 * (and routes where a hop is forwarded); the builder then checks them,
 * chooses physical links and ports, and computes loads. A strategy whose
 * links are missing from the topology refuses with what it needs, so the
 * same code serves generated topologies and files alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed_internal.h"

mrc_status_t mrc__embed_not_applicable(const char *name, const mrc_topo_t *t,
                                       const char *needs)
{
    return mrc__error(MRC_ERR_NOT_APPLICABLE, "%s does not apply to %s: %s",
                      name, mrc_topo_name(t), needs);
}

/* Adds a ring of group g in the given order, routing each hop that has no
 * direct link along a shortest path. */
mrc_status_t mrc__embed_add_routed_ring(mrc__embed_builder_t *b, int g,
                                        const int *order, int n, int bidir,
                                        double share)
{
    int r = mrc__embed_builder_add_ring(b, g, order, n, bidir, share);
    if (r < 0)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    /* The search, set up at the first hop that needs it. */
    mrc__graph_t graph = {0};
    mrc__paths_t paths = {0};
    int *route = NULL;
    mrc_status_t st = MRC_OK;
    for (int i = 0; i < n && st == MRC_OK; i++) {
        int u = order[i], v = order[(i + 1) % n];
        if (mrc__embed_links_between(b->topo, u, v) > 0)
            continue;
        if (!route) {
            route = malloc((size_t)mrc_topo_num_nodes(b->topo) * sizeof *route);
            if (!route || mrc__topo_graph_init(&graph, b->topo) != 0 ||
                mrc__paths_init(&paths, &graph) != 0) {
                st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
                break;
            }
        }
        mrc__paths_search(&paths, u, v, NULL);
        int len = mrc__paths_route(&paths, v, route, NULL);
        if (len < 2)
            st = mrc__error(MRC_ERR_INVALID_EMBEDDING,
                            "no route from node %d to node %d", u, v);
        else
            mrc__embed_builder_set_route(b, r, i, route, len, NULL);
    }
    mrc__paths_free(&paths);
    mrc__topo_graph_free(&graph);
    free(route);
    return st;
}

/* ---- ring: the baseline ------------------------------------------------ */

mrc_status_t mrc__strategy_ring(const mrc_embed_config_t *cfg,
                                mrc__embed_builder_t *b)
{
    mrc_status_t st = mrc__embed_groups(b->topo, cfg, b);
    for (int g = 0; g < b->num_groups && st == MRC_OK; g++)
        if (b->group_size[g] >= 2)
            st = mrc__embed_add_routed_ring(b, g, b->group_nodes[g],
                                            b->group_size[g], 1, 1.0);
    return st;
}

/* ---- GCL (seed 002) ---------------------------------------------------- */

/* Named GCL strategies fix the replica size; --groups does not apply. */
mrc_status_t mrc__embed_use_replicas(const char *name,
                                     const mrc_embed_config_t *cfg, int want,
                                     mrc__embed_builder_t *b)
{
    if (cfg && cfg->groups && cfg->groups[0])
        return mrc__error(MRC_ERR_NOT_APPLICABLE,
                          "%s sets its own groups (replica size %d); use "
                          "--replica-size, not --groups",
                          name, want);
    if (cfg && cfg->replica_size > 0 && cfg->replica_size != want)
        return mrc__error(MRC_ERR_NOT_APPLICABLE,
                          "%s runs with replica size %d, not %d", name, want,
                          cfg->replica_size);
    mrc_embed_config_t c = {.replica_size = want};
    return mrc__embed_groups(b->topo, &c, b);
}

/* ---- prism faces (seed 000) -------------------------------------------- */

/* Layers of 3: node (l, k) = 3l + k; each layer a ring, corresponding
 * nodes of adjacent layers joined. */
static int is_prism3(const mrc_topo_t *t, int *layers)
{
    int n = mrc_topo_num_nodes(t);
    if (n % 3 != 0 || n < 6)
        return 0;
    int L = n / 3;
    for (int l = 0; l < L; l++)
        for (int k = 0; k < 3; k++) {
            if (mrc__embed_links_between(t, 3 * l + k, 3 * l + (k + 1) % 3) < 1)
                return 0;
            if (l + 1 < L &&
                mrc__embed_links_between(t, 3 * l + k, 3 * (l + 1) + k) < 1)
                return 0;
        }
    *layers = L;
    return 1;
}

/* One ring per face of the triangular prism (claims 1-2): a snake through
 * the face's two columns a, b from the first endmost layer to the last,
 * then back down the opposite edge c. Bidirectional, a third each. */
mrc_status_t mrc__strategy_prism_faces(const mrc_embed_config_t *cfg,
                                       mrc__embed_builder_t *b)
{
    const char *name = "prism-faces";
    int L = 0;
    if (!is_prism3(mrc_topo_intact(b->topo), &L))
        return mrc__embed_not_applicable(
            name, b->topo,
            "it needs a triangular prism, prism:3,L (layers "
            "of 3 nodes; node (l, k) = 3l + k)");
    /* Claim 1: two endmost layers and at least one intermediate layer. */
    if (L < 3)
        return mrc__embed_not_applicable(
            name, b->topo,
            "it needs an intermediate layer between the two "
            "endmost ones (prism:3,L with L >= 3)");
    /* Claim 1's paths run from one endmost layer to the other; a ring of
     * layers (prism-torus, claim 5 before a layer is cut) has none. */
    if (mrc__embed_links_between(b->topo, 0, 3 * (L - 1)) > 0)
        return mrc__embed_not_applicable(
            name, b->topo,
            "it needs two endmost layers, and layers 0 "
            "and L-1 are joined (a ring of layers, as in "
            "prism-torus:3,L); use auto");
    mrc_status_t st = mrc__embed_use_replicas(name, cfg, 1, b);
    int n = 3 * L;
    int *order = malloc((size_t)n * sizeof *order);
    if (!order)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int face = 0; face < 3 && st == MRC_OK; face++) {
        int a = face, bb = (face + 1) % 3, c = (face + 2) % 3, k = 0;
        for (int l = 0; l < L; l++) {
            order[k++] = 3 * l + (l % 2 == 0 ? a : bb);
            order[k++] = 3 * l + (l % 2 == 0 ? bb : a);
        }
        for (int l = L - 1; l >= 0; l--)
            order[k++] = 3 * l + c;
        st = mrc__embed_add_routed_ring(b, 0, order, n, 1, 1.0 / 3);
    }
    free(order);
    return st;
}

/* ---- hcm8 (seed 004) --------------------------------------------------- */

/* Does the hybrid mesh join u and v by a double link (neighbours in a
 * subset, or counterparts)? */
static int hcm8_double(int u, int v)
{
    if (u / 4 != v / 4)
        return (u + 4) % 8 == v;
    int d = (u - v + 4) % 4;
    return d == 1 || d == 3;
}

/* The hybrid mesh, or what is left of it when links failed: each of its
 * 16 pairs joined by at least one link (a file that lost one of a double
 * link is still hcm8; the rings say what that costs). Extra links do not
 * matter. */
static int is_hcm8(const mrc_topo_t *t)
{
    if (mrc_topo_num_nodes(t) != 8)
        return 0;
    for (int u = 0; u < 8; u++) {
        int base = u / 4 * 4, i = u % 4;
        if (mrc__embed_links_between(t, u, base + (i + 1) % 4) < 1 ||
            mrc__embed_links_between(t, u, base + (i + 2) % 4) < 1 ||
            mrc__embed_links_between(t, u, (u + 4) % 8) < 1)
            return 0;
    }
    return 1;
}

/* Can hcm8 configure group g (claim 6)? All eight nodes, one subset of
 * four (0-3 or 4-7, in any rank order), two nodes joined by a double link
 * (neighbours in a subset, or counterparts such as 0 and 4), or one node.
 * 0 if so, else the refusal. */
static mrc_status_t hcm8_group_fits(const char *groups, int g, const int *nodes,
                                    int m)
{
    int fits = m == 8 || m == 1;
    if (m == 4)
        fits = nodes[0] / 4 == nodes[1] / 4 && nodes[0] / 4 == nodes[2] / 4 &&
               nodes[0] / 4 == nodes[3] / 4;
    if (m == 2)
        fits = hcm8_double(nodes[0], nodes[1]);
    if (fits)
        return MRC_OK;
    char why[96];
    if (m == 2)
        snprintf(why, sizeof why,
                 "nodes %d and %d are not joined by a "
                 "double link (neighbours or counterparts)",
                 nodes[0], nodes[1]);
    else if (m == 4)
        snprintf(why, sizeof why, "its nodes are not one subset");
    else
        snprintf(why, sizeof why, "it has %d nodes", m);
    return mrc__error(MRC_ERR_NOT_APPLICABLE,
                      "hcm8 configures the hybrid mesh's compute groups "
                      "(8, 4+4, 2+2+2+2 or 4+2+2; a group of 4 is one "
                      "subset, 0-3 or 4-7, and a group of 2 two nodes "
                      "joined by a double link, such as 0,4+1,5+2,6+3,7), "
                      "not '%s': in group %d, %s; auto takes any groups",
                      groups, g, why);
}

/* The compute-group configurations of claim 6. With one group of 8, three
 * Hamiltonian rings that share no physical link: each node uses 6 of its 7
 * ports. A group of 4 (one subset) has two rings, one round the square
 * and one across its diagonals, whatever its rank order; a group of 2 one
 * ring over its double link (within a subset, or to the counterpart in the
 * other subset). */
mrc_status_t mrc__strategy_hcm8(const mrc_embed_config_t *cfg,
                                mrc__embed_builder_t *b)
{
    const char *name = "hcm8";
    if (!is_hcm8(mrc_topo_intact(b->topo)))
        return mrc__embed_not_applicable(
            name, b->topo, "it needs the 8-processor hybrid mesh (hcm8)");
    const char *groups =
        cfg && cfg->groups && cfg->groups[0] ? cfg->groups : "8";
    if (cfg && cfg->replica_size > 1)
        return mrc__error(MRC_ERR_NOT_APPLICABLE,
                          "hcm8 takes --groups 8, 4+4, 2+2+2+2 or 4+2+2 (or "
                          "node lists such as 0,4+1,5+2,6+3,7), not a "
                          "replica size");
    mrc_embed_config_t c = {.groups = groups};
    mrc_status_t st = mrc__embed_groups(b->topo, &c, b);
    for (int g = 0; g < b->num_groups && st == MRC_OK; g++)
        st = hcm8_group_fits(groups, g, b->group_nodes[g], b->group_size[g]);
    static const int eight[3][8] = {{0, 1, 2, 3, 7, 6, 5, 4},
                                    {0, 3, 2, 1, 5, 6, 7, 4},
                                    {0, 2, 6, 4, 7, 5, 1, 3}};
    for (int g = 0; g < b->num_groups && st == MRC_OK; g++) {
        const int *nodes = b->group_nodes[g];
        int m = b->group_size[g];
        if (m == 8) {
            for (int r = 0; r < 3 && st == MRC_OK; r++)
                st = mrc__embed_add_routed_ring(b, g, eight[r], 8, 1, 1.0 / 3);
        } else if (m == 4) {
            int s = nodes[0] / 4 * 4;
            int square[4] = {s, s + 1, s + 2, s + 3};
            int diagonal[4] = {s, s + 2, s + 1, s + 3};
            st = mrc__embed_add_routed_ring(b, g, square, 4, 1, 0.5);
            if (st == MRC_OK)
                st = mrc__embed_add_routed_ring(b, g, diagonal, 4, 1, 0.5);
        } else if (m == 2) {
            st = mrc__embed_add_routed_ring(b, g, nodes, m, 1, 1.0);
        }
    }
    return st;
}

/* hcm8's optimum in closed form, one group of all eight: seven
 * bidirectional Hamiltonian rings at 1/7 each (the first twice), which
 * cross each double link four times and each diagonal twice, so that every
 * link carries data in proportion to its count and all 7 ports of every
 * node are busy (found once by an exact cover of the 30 Hamiltonian rings
 * of hcm8; auto needs no search for it). */
mrc_status_t mrc__strategy_hcm8_optimum(const mrc_embed_config_t *cfg,
                                        mrc__embed_builder_t *b)
{
    if (!is_hcm8(b->topo) || (cfg && cfg->replica_size > 1))
        return mrc__error(MRC_ERR_NOT_APPLICABLE, "not hcm8 as one group");
    mrc_status_t st = mrc__embed_groups(b->topo, cfg, b);
    if (st != MRC_OK || b->num_groups != 1 || b->group_size[0] != 8)
        return st != MRC_OK ? st
                            : mrc__error(MRC_ERR_NOT_APPLICABLE,
                                         "not hcm8 as one group");
    static const int seven[6][8] = {
        {0, 1, 2, 3, 7, 5, 6, 4}, {0, 1, 2, 6, 5, 4, 7, 3},
        {0, 1, 5, 4, 7, 6, 2, 3}, {0, 2, 3, 1, 5, 6, 7, 4},
        {0, 2, 6, 7, 4, 5, 1, 3}, {0, 3, 7, 6, 2, 1, 5, 4}};
    for (int r = 0; r < 6 && st == MRC_OK; r++)
        st = mrc__embed_add_routed_ring(b, 0, seven[r], 8, 1,
                                        (r == 0 ? 2.0 : 1.0) / 7);
    return st;
}

/* ---- the table: from the one list in embed_internal.h ---------------- */

static const struct {
    const char *name;
    mrc__strategy_fn fn;
    const char *about; /* lines apart by '\n' */
} strategies[] = {
#define MRC__STRATEGY_ENTRY_(name, fn, about) {name, fn, about},
    MRC__STRATEGY_MAP(MRC__STRATEGY_ENTRY_)
#undef MRC__STRATEGY_ENTRY_
};

enum { NUM_STRATEGIES = sizeof strategies / sizeof strategies[0] };

mrc__strategy_fn mrc__strategy_find(const char *name)
{
    for (int i = 0; i < NUM_STRATEGIES; i++)
        if (strcmp(name, strategies[i].name) == 0)
            return strategies[i].fn;
    return NULL;
}

const char *mrc_embed_strategy_about(const char *name)
{
    for (int i = 0; name && i < NUM_STRATEGIES; i++)
        if (strcmp(name, strategies[i].name) == 0)
            return strategies[i].about;
    return NULL;
}

const char *const *mrc_embed_strategies(void)
{
    static const char *const names[] = {
#define MRC__STRATEGY_NAME_(name, fn, about) name,
        MRC__STRATEGY_MAP(MRC__STRATEGY_NAME_)
#undef MRC__STRATEGY_NAME_
            NULL};
    return names;
}
