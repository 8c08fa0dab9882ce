/*
 * GCL's named strategies on its ladder (mesh) and torus (seed 002):
 * peripheral-ring, barley-twist, ring-on-line and rung-ring-2/4/8, the
 * ring orders they share with the torus-ladder construction, and the
 * test that a topology is such a ladder. Each strategy opens with what
 * it accepts, what it returns, its limits and a picture of its rings.
 *
 * The ladder of n nodes (m = n/2 rungs), as every picture below draws it
 * (n = 8):
 *
 *     rung 3:   6 --- 7      rung k joins 2k and 2k+1; the left column
 *               |     |      holds the even nodes and the right column
 *     rung 2:   4 --- 5      the odd ones, each node joined to the one
 *               |     |      two above it. The torus (torus-ladder:N)
 *     rung 1:   2 --- 3      also joins the top rung back to rung 0
 *               |     |      (6 - 0 and 7 - 1), closing both columns
 *     rung 0:   0 --- 1      into rings.
 *
 * A replica size R makes replicas of R consecutive nodes and groups of
 * the nodes at the same place in every replica (groups.c): R = 2 gives a
 * group per column.
 */
#include <stdio.h>
#include <stdlib.h>

#include "embed_internal.h"

enum mrc__ladder mrc__embed_ladder_kind(const mrc_topo_t *t)
{
    int n = mrc_topo_num_nodes(t);
    if (n < 4 || n % 2 != 0)
        return MRC__NOT_LADDER;
    for (int k = 0; k < n / 2; k++)
        if (mrc__embed_links_between(t, 2 * k, 2 * k + 1) < 1)
            return MRC__NOT_LADDER;
    for (int u = 0; u + 2 < n; u++)
        if (mrc__embed_links_between(t, u, u + 2) < 1)
            return MRC__NOT_LADDER;
    if (n == 4) /* two rungs: the loop-back doubles the column links */
        return mrc__embed_links_between(t, 0, 2) >= 2 &&
                       mrc__embed_links_between(t, 1, 3) >= 2
                   ? MRC__TORUS
                   : MRC__MESH;
    return mrc__embed_links_between(t, n - 2, 0) >= 1 &&
                   mrc__embed_links_between(t, n - 1, 1) >= 1
               ? MRC__TORUS
               : MRC__MESH;
}

/* peripheral-ring: one ring round the edge of the ladder.
 *
 * Accepts  ladder:N or torus-ladder:N, replica size 1 (one group).
 * Returns  one bidirectional ring of every node, share 1.
 * Limits   only the outer links carry it: the inner rungs idle, and on
 *          the torus the wrap links too (efficiency 1 on ladder:8 and
 *          ladder:16, 2/3 on torus-ladder:8).
 *
 *               6 <-- 7      0 1 3 5 7 6 4 2: across rung 0, up the
 *               |     ^      right column, across the top rung, down the
 *               v     |      left column back to 0.
 *               4     5
 *               |     ^
 *               v     |
 *               2     3
 *               |     ^
 *               v     |
 *               0 --> 1
 */
mrc_status_t mrc__strategy_peripheral_ring(const mrc_embed_config_t *cfg,
                                           mrc__embed_builder_t *b)
{
    const char *name = "peripheral-ring";
    if (mrc__embed_ladder_kind(mrc_topo_intact(b->topo)) == MRC__NOT_LADDER)
        return mrc__embed_not_applicable(
            name, b->topo,
            "it needs GCL's ladder (mesh) or torus "
            "(ladder:N or torus-ladder:N)");
    mrc_status_t st = mrc__embed_use_replicas(name, cfg, 1, b);
    if (st != MRC_OK)
        return st;
    /* GCL's order 0 - 1 - 3 - ... - n-1 - n-2 - ... - 4 - 2 - (0): up the
     * right column, down the left; the rotation to the top rung, reversed
     * behind node 0. */
    int n = mrc_topo_num_nodes(b->topo);
    int *order = malloc((size_t)n * sizeof *order);
    if (!order)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    mrc__embed_peripheral_order(n, n / 2 - 1, order);
    for (int i = 1, j = n - 1; i < j; i++, j--) {
        int x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    st = mrc__embed_add_routed_ring(b, 0, order, n, 1, 1.0);
    free(order);
    return st;
}

void mrc__embed_peripheral_order(int n, int k, int *order)
{
    int m = n / 2, at = 0;
    for (int i = 1; i <= m; i++)
        order[at++] = 2 * ((k + i) % m);
    for (int i = 0; i < m; i++)
        order[at++] = 2 * ((k - i + m) % m) + 1;
}

void mrc__embed_barley_twist_order(int n, int stream, int *order)
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
    int rung = mrc__embed_links_between(t, 0, 1);
    int col = mrc__embed_links_between(t, 0, 2) / (n == 4 ? 2 : 1);
    int m = (rung + 1) / 2 > col ? (rung + 1) / 2 : col;
    return m < 1 ? 1 : m > 8 ? 8 : m;
}

/* barley-twist: two rings that zig-zag up the torus, sideways along a
 * rung, then up a column (GCL's pseudocode: next ^= 1; next = (next + 2)
 * % n). Ring X starts at 0, ring Y at 1.
 *
 * Accepts  torus-ladder:N (and gcl-torus:N) with N a multiple of 4 (an
 *          even number of rungs), replica size 1.
 * Returns  the two rings, bidirectional, a half each; over parallel links
 *          each is repeated (barley_twist_copies) so that every physical
 *          link carries a hop.
 * Limits   the mesh has no wrap links to close them; every column link
 *          carries one ring and every rung two, so the rungs set the pace
 *          (efficiency 2/3 on torus-ladder:8 and :16).
 *
 *           ring X                      ring Y
 *     6 <-- 7   then 6 -> 0       6 --> 7   then 7 -> 1
 *           ^   over the wrap     ^         over the wrap
 *     4 --> 5                     4 <-- 5
 *     ^                                 ^
 *     2 <-- 3                     2 --> 3
 *           ^                     ^
 *     0 --> 1                     0 <-- 1
 *
 *     X: 0 1 3 2 4 5 7 6          Y: 1 0 2 3 5 4 6 7
 */
mrc_status_t mrc__strategy_barley_twist(const mrc_embed_config_t *cfg,
                                        mrc__embed_builder_t *b)
{
    const char *name = "barley-twist";
    int n = mrc_topo_num_nodes(b->topo);
    if (mrc__embed_ladder_kind(mrc_topo_intact(b->topo)) != MRC__TORUS)
        return mrc__embed_not_applicable(
            name, b->topo,
            "it needs GCL's torus (torus-ladder:N), whose "
            "loop-back links close the columns");
    if (n % 4 != 0)
        return mrc__embed_not_applicable(
            name, b->topo,
            "it needs a node count divisible by 4 (an even "
            "number of rungs)");
    mrc_status_t st = mrc__embed_use_replicas(name, cfg, 1, b);
    int copies = barley_twist_copies(b->topo);
    int *order = malloc((size_t)n * sizeof *order);
    if (!order)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int k = 0; k < 2 * copies && st == MRC_OK; k++) {
        mrc__embed_barley_twist_order(n, k % 2, order);
        st = mrc__embed_add_routed_ring(b, 0, order, n, 1, 0.5 / copies);
    }
    free(order);
    return st;
}

/* ring-on-line: replica size 2 on the mesh, where each group is one
 * column, a line. Its ring goes up through the odd ranks and down through
 * the even ones, each hop forwarded through the rank it skips, so every
 * column link carries the ring once each way.
 *
 * Accepts  ladder:N (the mesh only: on the torus a column closes by its
 *          own wrap link, which is rung-ring-2), replica size 2.
 * Returns  a bidirectional ring per column, share 1.
 * Limits   the rungs idle, and each hop but the two at the ends of the
 *          line is forwarded through a node (efficiency 1/2 on ladder:8
 *          and ladder:16).
 *
 *     the left column of ladder:8, ranks 0..3 = nodes 0 2 4 6:
 *
 *         0 ---- 2 ---- 4 ---- 6       the line
 *         0 --> 2 ---(4)---> 6         0 -> 2, then 2 -> 6 through 4
 *         0 <---(2)--- 4 <-- 6         6 -> 4, then 4 -> 0 through 2
 *
 *     order 0 2 6 4; the right column alike (1 3 7 5).
 */
mrc_status_t mrc__strategy_ring_on_line(const mrc_embed_config_t *cfg,
                                        mrc__embed_builder_t *b)
{
    const char *name = "ring-on-line";
    enum mrc__ladder kind = mrc__embed_ladder_kind(mrc_topo_intact(b->topo));
    if (kind == MRC__NOT_LADDER)
        return mrc__embed_not_applicable(name, b->topo,
                                         "it needs GCL's ladder (ladder:N)");
    /* GCL's table gives ring-on-line for the mesh only: on the torus a
     * column closes into a ring by its own wrap link. */
    if (kind == MRC__TORUS)
        return mrc__embed_not_applicable(
            name, b->topo,
            "GCL gives it for the mesh (ladder:N) only; on "
            "the torus with replica size 2 use rung-ring-2, "
            "whose rings close over the wrap links");
    mrc_status_t st = mrc__embed_use_replicas(name, cfg, 2, b);
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

/* rung-ring-R: with replica size R, group p = {p, p+R, p+2R, ...} lies in
 * one column, R/2 rungs apart. The ring goes in rank order straight up the
 * column, forwarded through the nodes between; the closing hop wraps round
 * on a torus and comes straight down on a mesh.
 *
 * Accepts  R = 2: torus-ladder:N; R = 4: ladder:N or torus-ladder:N;
 *          R = 8: either with N a multiple of 8, at least 16. N a multiple
 *          of R with at least two replicas; replica size R.
 * Returns  a bidirectional ring per group, share 1.
 * Limits   the rungs idle and the hops are forwarded through R/2 - 1
 *          nodes; on the mesh the closing hop runs back down the whole
 *          column (efficiency 2/3 for rung-ring-2 on torus-ladder:8 and
 *          :16; rung-ring-4: 1/4 on ladder:16, 1/3 on torus-ladder:16).
 *
 *     rung-ring-4, group 0 = {0, 4, 8, 12} of ladder:16 (left column):
 *
 *         0 -(2)-> 4 -(6)-> 8 -(10)-> 12     up, through the nodes
 *                                               between; then back:
 *         0 <-----(10, 8, 6, 4, 2)---- 12     on the mesh straight down,
 *         0 <-(14)- 12                        on the torus over the wrap
 */
static mrc_status_t rung_ring(const mrc_embed_config_t *cfg,
                              mrc__embed_builder_t *b, int R)
{
    char name[32];
    snprintf(name, sizeof name, "rung-ring-%d", R);
    enum mrc__ladder kind = mrc__embed_ladder_kind(mrc_topo_intact(b->topo));
    int n = mrc_topo_num_nodes(b->topo);
    if (kind == MRC__NOT_LADDER)
        return mrc__embed_not_applicable(
            name, b->topo,
            R == 2 ? "it needs GCL's torus (torus-ladder:N)"
                   : "it needs GCL's ladder or torus "
                     "(ladder:N or torus-ladder:N)");
    if (R == 2 && kind != MRC__TORUS)
        return mrc__embed_not_applicable(
            name, b->topo,
            "with replica size 2 it needs the torus "
            "(torus-ladder:N); use ring-on-line on a mesh");
    if (n % R != 0 || n / R < 2)
        return mrc__embed_not_applicable(name, b->topo,
                                         R == 8 ? "it needs a multiple of 8 "
                                                  "nodes, at least 16"
                                                : "it needs a multiple of "
                                                  "the replica size, at "
                                                  "least two replicas");
    mrc_status_t st = mrc__embed_use_replicas(name, cfg, R, b);
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

mrc_status_t mrc__strategy_rung_ring_2(const mrc_embed_config_t *cfg,
                                       mrc__embed_builder_t *b)
{
    return rung_ring(cfg, b, 2);
}

mrc_status_t mrc__strategy_rung_ring_4(const mrc_embed_config_t *cfg,
                                       mrc__embed_builder_t *b)
{
    return rung_ring(cfg, b, 4);
}

mrc_status_t mrc__strategy_rung_ring_8(const mrc_embed_config_t *cfg,
                                       mrc__embed_builder_t *b)
{
    return rung_ring(cfg, b, 8);
}
