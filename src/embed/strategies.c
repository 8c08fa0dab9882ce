/*
 * The named strategies of the seeds. Each states its rings as node orders
 * (and routes where a hop is forwarded); the builder then checks them,
 * chooses physical links and ports, and computes loads. A strategy whose
 * links are missing from the topology refuses with what it needs, so the
 * same code serves generated topologies and files alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed_internal.h"

static mrc_status_t not_applicable(const char *name, const mrc_topo_t *t,
                                   const char *needs)
{
    return mrc__error(MRC_ERR_NOT_APPLICABLE, "%s does not apply to %s: %s",
                      name, mrc_topo_name(t), needs);
}

/* Adds a ring of group g in the given order, routing each hop that has no
 * direct link along a shortest path. */
static mrc_status_t add_routed_ring(mrc__embed_builder_t *b, int g,
                                    const int *order, int n, int bidir,
                                    double share)
{
    int r = mrc__embed_builder_add_ring(b, g, order, n, bidir, share);
    if (r < 0)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    /* The search's scratch, set up at the first hop that needs it. */
    int nn = mrc_topo_num_nodes(b->topo);
    int *route = NULL, *prev = NULL, *queue = NULL;
    mrc_status_t st = MRC_OK;
    for (int i = 0; i < n && st == MRC_OK; i++) {
        int u = order[i], v = order[(i + 1) % n];
        if (mrc__links_between(b->topo, u, v) > 0)
            continue;
        if (!route) {
            route = malloc((size_t)nn * sizeof *route);
            prev = malloc((size_t)nn * sizeof *prev);
            queue = malloc((size_t)nn * sizeof *queue);
            if (!route || !prev || !queue) {
                st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
                break;
            }
            for (int j = 0; j < nn; j++)
                prev[j] = -2;
        }
        int len = mrc__route_search(b->topo, u, v, route, prev, queue);
        if (len < 2)
            st = mrc__error(MRC_ERR_INVALID_EMBEDDING,
                            "no route from node %d to node %d", u, v);
        else
            mrc__embed_builder_set_route(b, r, i, route, len, NULL);
    }
    free(prev);
    free(queue);
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
            st = add_routed_ring(b, g, b->group_nodes[g], b->group_size[g], 1,
                                 1.0);
    return st;
}

/* ---- GCL (seed 002) ---------------------------------------------------- */

/* Named GCL strategies fix the replica size; --groups does not apply. */
static mrc_status_t use_replicas(const char *name,
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

static mrc_status_t strategy_peripheral_ring(const mrc_embed_config_t *cfg,
                                             mrc__embed_builder_t *b)
{
    const char *name = "peripheral-ring";
    if (mrc__ladder_kind(mrc_topo_intact(b->topo)) == MRC__NOT_LADDER)
        return not_applicable(name, b->topo,
                              "it needs GCL's ladder (mesh) or torus "
                              "(ladder:N or torus-ladder:N)");
    mrc_status_t st = use_replicas(name, cfg, 1, b);
    if (st != MRC_OK)
        return st;
    /* GCL's order 0 - 1 - 3 - ... - n-1 - n-2 - ... - 4 - 2 - (0): up the
     * right column, down the left; the rotation to the top rung, reversed
     * behind node 0. */
    int n = mrc_topo_num_nodes(b->topo);
    int *order = malloc((size_t)n * sizeof *order);
    if (!order)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    mrc__peripheral_order(n, n / 2 - 1, order);
    for (int i = 1, j = n - 1; i < j; i++, j--) {
        int x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    st = add_routed_ring(b, 0, order, n, 1, 1.0);
    free(order);
    return st;
}

void mrc__peripheral_order(int n, int k, int *order)
{
    int m = n / 2, at = 0;
    for (int i = 1; i <= m; i++)
        order[at++] = 2 * ((k + i) % m);
    for (int i = 0; i < m; i++)
        order[at++] = 2 * ((k - i + m) % m) + 1;
}

void mrc__barley_twist_order(int n, int stream, int *order)
{
    int next = stream, k = 0;
    for (int duo = 0; duo < n / 2; duo++) {
        order[k++] = next;
        next ^= 1;
        order[k++] = next;
        next = (next + 2) % n;
    }
}

/* A hop takes one physical link, and the two rings put two hops on every
 * rung and one on every column segment (two on the doubled column entry
 * of torus-ladder:4). With parallel links (gcl-torus: rung=4, column=2)
 * each ring is repeated, a share of 1/(2m) each, until every physical link
 * carries a hop: GCL's "all eight IPU-Links will be used". The loads, and
 * so the figures, are those of the two rings; at most 8 copies. */
static int barley_twist_copies(const mrc_topo_t *t)
{
    int n = mrc_topo_num_nodes(t);
    int rung = mrc__links_between(t, 0, 1);
    int col = mrc__links_between(t, 0, 2) / (n == 4 ? 2 : 1);
    int m = (rung + 1) / 2 > col ? (rung + 1) / 2 : col;
    return m < 1 ? 1 : m > 8 ? 8 : m;
}

/* Two rings that zig-zag up the torus: sideways along a rung, then up a
 * column (GCL's pseudocode: next ^= 1; next = (next + 2) % n). Ring X
 * starts at 0, ring Y at 1; together they use every column link once and
 * every rung twice. */
static mrc_status_t strategy_barley_twist(const mrc_embed_config_t *cfg,
                                          mrc__embed_builder_t *b)
{
    const char *name = "barley-twist";
    int n = mrc_topo_num_nodes(b->topo);
    if (mrc__ladder_kind(mrc_topo_intact(b->topo)) != MRC__TORUS)
        return not_applicable(name, b->topo,
                              "it needs GCL's torus (torus-ladder:N), whose "
                              "loop-back links close the columns");
    if (n % 4 != 0)
        return not_applicable(name, b->topo,
                              "it needs a node count divisible by 4 (an even "
                              "number of rungs)");
    mrc_status_t st = use_replicas(name, cfg, 1, b);
    int copies = barley_twist_copies(b->topo);
    int *order = malloc((size_t)n * sizeof *order);
    if (!order)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int k = 0; k < 2 * copies && st == MRC_OK; k++) {
        mrc__barley_twist_order(n, k % 2, order);
        st = add_routed_ring(b, 0, order, n, 1, 0.5 / copies);
    }
    free(order);
    return st;
}

/* Replica size 2 on the mesh: each group is one column, a line. Its ring
 * goes up through the odd ranks and down through the even ones, each hop
 * forwarded through the rank it skips, so every column link carries the
 * ring once each way. */
static mrc_status_t strategy_ring_on_line(const mrc_embed_config_t *cfg,
                                          mrc__embed_builder_t *b)
{
    const char *name = "ring-on-line";
    enum mrc__ladder kind = mrc__ladder_kind(mrc_topo_intact(b->topo));
    if (kind == MRC__NOT_LADDER)
        return not_applicable(name, b->topo,
                              "it needs GCL's ladder (ladder:N)");
    /* GCL's table gives ring-on-line for the mesh only: on the torus a
     * column closes into a ring by its own wrap link. */
    if (kind == MRC__TORUS)
        return not_applicable(name, b->topo,
                              "GCL gives it for the mesh (ladder:N) only; on "
                              "the torus with replica size 2 use rung-ring-2, "
                              "whose rings close over the wrap links");
    mrc_status_t st = use_replicas(name, cfg, 2, b);
    for (int g = 0; g < b->num_groups && st == MRC_OK; g++) {
        int m = b->group_size[g], k = 0;
        const int *nodes = b->group_nodes[g];
        int *rank = malloc((size_t)m * sizeof *rank);
        int *order = malloc((size_t)m * sizeof *order);
        int *route = malloc((size_t)m * sizeof *route);
        if (!rank || !order || !route) {
            free(rank);
            free(order);
            free(route);
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        }
        rank[k++] = 0;
        for (int i = 1; i < m; i += 2)
            rank[k++] = i;
        for (int i = (m - 1) % 2 == 0 ? m - 1 : m - 2; i >= 2; i -= 2)
            rank[k++] = i;
        for (int i = 0; i < m; i++)
            order[i] = nodes[rank[i]];
        int r = mrc__embed_builder_add_ring(b, g, order, m, 1, 1.0);
        for (int i = 0; i < m && r >= 0; i++) {
            int from = rank[i], to = rank[(i + 1) % m], len = 0;
            int step = to > from ? 1 : -1;
            for (int x = from;; x += step) {
                route[len++] = nodes[x];
                if (x == to)
                    break;
            }
            mrc__embed_builder_set_route(b, r, i, route, len, NULL);
        }
        if (r < 0)
            st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        free(rank);
        free(order);
        free(route);
    }
    return st;
}

/* Replica size R: group p = {p, p+R, p+2R, ...} lies in one column, R/2
 * rungs apart. The ring goes in rank order straight up the column,
 * forwarded through the nodes between; the closing hop wraps round on a
 * torus and comes straight down on a mesh. */
static mrc_status_t rung_ring(const mrc_embed_config_t *cfg,
                              mrc__embed_builder_t *b, int R)
{
    char name[32];
    snprintf(name, sizeof name, "rung-ring-%d", R);
    enum mrc__ladder kind = mrc__ladder_kind(mrc_topo_intact(b->topo));
    int n = mrc_topo_num_nodes(b->topo);
    if (kind == MRC__NOT_LADDER)
        return not_applicable(name, b->topo,
                              R == 2 ? "it needs GCL's torus (torus-ladder:N)"
                                     : "it needs GCL's ladder or torus "
                                       "(ladder:N or torus-ladder:N)");
    if (R == 2 && kind != MRC__TORUS)
        return not_applicable(name, b->topo,
                              "with replica size 2 it needs the torus "
                              "(torus-ladder:N); use ring-on-line on a mesh");
    if (n % R != 0 || n / R < 2)
        return not_applicable(name, b->topo, R == 8
                                                 ? "it needs a multiple of 8 "
                                                   "nodes, at least 16"
                                                 : "it needs a multiple of "
                                                   "the replica size, at "
                                                   "least two replicas");
    mrc_status_t st = use_replicas(name, cfg, R, b);
    int *route = malloc((size_t)(n + 1) * sizeof *route);
    if (!route)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int g = 0; g < b->num_groups && st == MRC_OK; g++) {
        int m = b->group_size[g];
        const int *nodes = b->group_nodes[g];
        int r = mrc__embed_builder_add_ring(b, g, nodes, m, 1, 1.0);
        if (r < 0) {
            st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
            break;
        }
        for (int i = 0; i < m; i++) {
            int from = nodes[i], to = nodes[(i + 1) % m], len = 0;
            int down = i == m - 1 && kind == MRC__MESH;
            for (int x = from;; x = down ? x - 2 : (x + 2) % n) {
                route[len++] = x;
                if (x == to)
                    break;
            }
            mrc__embed_builder_set_route(b, r, i, route, len, NULL);
        }
    }
    free(route);
    return st;
}

static mrc_status_t strategy_rung_ring_2(const mrc_embed_config_t *cfg,
                                         mrc__embed_builder_t *b)
{
    return rung_ring(cfg, b, 2);
}

static mrc_status_t strategy_rung_ring_4(const mrc_embed_config_t *cfg,
                                         mrc__embed_builder_t *b)
{
    return rung_ring(cfg, b, 4);
}

static mrc_status_t strategy_rung_ring_8(const mrc_embed_config_t *cfg,
                                         mrc__embed_builder_t *b)
{
    return rung_ring(cfg, b, 8);
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
            if (mrc__links_between(t, 3 * l + k, 3 * l + (k + 1) % 3) < 1)
                return 0;
            if (l + 1 < L && mrc__links_between(t, 3 * l + k,
                                                3 * (l + 1) + k) < 1)
                return 0;
        }
    *layers = L;
    return 1;
}

/* One ring per face of the triangular prism (claims 1-2): a snake through
 * the face's two columns a, b from the first endmost layer to the last,
 * then back down the opposite edge c. Bidirectional, a third each. */
static mrc_status_t strategy_prism_faces(const mrc_embed_config_t *cfg,
                                         mrc__embed_builder_t *b)
{
    const char *name = "prism-faces";
    int L = 0;
    if (!is_prism3(mrc_topo_intact(b->topo), &L))
        return not_applicable(name, b->topo,
                              "it needs a triangular prism, prism:3,L (layers "
                              "of 3 nodes; node (l, k) = 3l + k)");
    /* Claim 1: two endmost layers and at least one intermediate layer. */
    if (L < 3)
        return not_applicable(name, b->topo,
                              "it needs an intermediate layer between the two "
                              "endmost ones (prism:3,L with L >= 3)");
    /* Claim 1's paths run from one endmost layer to the other; a ring of
     * layers (prism-torus, claim 5 before a layer is cut) has none. */
    if (mrc__links_between(b->topo, 0, 3 * (L - 1)) > 0)
        return not_applicable(name, b->topo,
                              "it needs two endmost layers, and layers 0 "
                              "and L-1 are joined (a ring of layers, as in "
                              "prism-torus:3,L); use auto");
    mrc_status_t st = use_replicas(name, cfg, 1, b);
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
        st = add_routed_ring(b, 0, order, n, 1, 1.0 / 3);
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
        if (mrc__links_between(t, u, base + (i + 1) % 4) < 1 ||
            mrc__links_between(t, u, base + (i + 2) % 4) < 1 ||
            mrc__links_between(t, u, (u + 4) % 8) < 1)
            return 0;
    }
    return 1;
}

/* Can hcm8 configure group g (claim 6)? All eight nodes, one subset of
 * four (0-3 or 4-7, in any rank order), two nodes joined by a double link
 * (neighbours in a subset, or counterparts such as 0 and 4), or one node.
 * 0 if so, else the refusal. */
static mrc_status_t hcm8_group_fits(const char *groups, int g,
                                    const int *nodes, int m)
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
        snprintf(why, sizeof why, "nodes %d and %d are not joined by a "
                 "double link (neighbours or counterparts)", nodes[0],
                 nodes[1]);
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
static mrc_status_t strategy_hcm8(const mrc_embed_config_t *cfg,
                                  mrc__embed_builder_t *b)
{
    const char *name = "hcm8";
    if (!is_hcm8(mrc_topo_intact(b->topo)))
        return not_applicable(name, b->topo,
                              "it needs the 8-processor hybrid mesh (hcm8)");
    const char *groups = cfg && cfg->groups && cfg->groups[0] ? cfg->groups
                                                              : "8";
    if (cfg && cfg->replica_size > 1)
        return mrc__error(MRC_ERR_NOT_APPLICABLE,
                          "hcm8 takes --groups 8, 4+4, 2+2+2+2 or 4+2+2 (or "
                          "node lists such as 0,4+1,5+2,6+3,7), not a "
                          "replica size");
    mrc_embed_config_t c = {.groups = groups};
    mrc_status_t st = mrc__embed_groups(b->topo, &c, b);
    for (int g = 0; g < b->num_groups && st == MRC_OK; g++)
        st = hcm8_group_fits(groups, g, b->group_nodes[g],
                             b->group_size[g]);
    static const int eight[3][8] = {{0, 1, 2, 3, 7, 6, 5, 4},
                                    {0, 3, 2, 1, 5, 6, 7, 4},
                                    {0, 2, 6, 4, 7, 5, 1, 3}};
    for (int g = 0; g < b->num_groups && st == MRC_OK; g++) {
        const int *nodes = b->group_nodes[g];
        int m = b->group_size[g];
        if (m == 8) {
            for (int r = 0; r < 3 && st == MRC_OK; r++)
                st = add_routed_ring(b, g, eight[r], 8, 1, 1.0 / 3);
        } else if (m == 4) {
            int s = nodes[0] / 4 * 4;
            int square[4] = {s, s + 1, s + 2, s + 3};
            int diagonal[4] = {s, s + 2, s + 1, s + 3};
            st = add_routed_ring(b, g, square, 4, 1, 0.5);
            if (st == MRC_OK)
                st = add_routed_ring(b, g, diagonal, 4, 1, 0.5);
        } else if (m == 2) {
            st = add_routed_ring(b, g, nodes, m, 1, 1.0);
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
        st = add_routed_ring(b, 0, seven[r], 8, 1, (r == 0 ? 2.0 : 1.0) / 7);
    return st;
}

/* ---- the table --------------------------------------------------------- */

static const struct {
    const char *name;
    mrc__strategy_fn fn;
} strategies[] = {
    {"auto", mrc__strategy_auto},
    {"ring", mrc__strategy_ring},
    {"peripheral-ring", strategy_peripheral_ring},
    {"barley-twist", strategy_barley_twist},
    {"ring-on-line", strategy_ring_on_line},
    {"rung-ring-2", strategy_rung_ring_2},
    {"rung-ring-4", strategy_rung_ring_4},
    {"rung-ring-8", strategy_rung_ring_8},
    {"prism-faces", strategy_prism_faces},
    {"hcm8", strategy_hcm8},
};

enum { NUM_STRATEGIES = sizeof strategies / sizeof strategies[0] };

mrc__strategy_fn mrc__strategy_find(const char *name)
{
    for (int i = 0; i < NUM_STRATEGIES; i++)
        if (strcmp(name, strategies[i].name) == 0)
            return strategies[i].fn;
    return NULL;
}

const char *const *mrc_embed_strategies(void)
{
    /* Kept in the table's order; a unit test checks each one resolves. */
    static const char *const names[] = {
        "auto",        "ring",        "peripheral-ring", "barley-twist",
        "ring-on-line", "rung-ring-2", "rung-ring-4",     "rung-ring-8",
        "prism-faces", "hcm8",        NULL};
    return names;
}
