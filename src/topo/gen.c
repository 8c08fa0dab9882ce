/*
 * The topology generators (ring, line, full, the ladders, the tori, the
 * prisms, hcm8) and their table; spec.c reads a spec string
 * NAME[:ARGS][,key=value...] into a generator's parameters.
 *
 * Each family checks its own arguments and says what it needs; the built
 * graph then goes through the builder's validation, as a file does.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

typedef mrc__topo_gen_params_t gen_params_t;
typedef mrc__topo_generator_t generator_t;

static const double TAU = 6.283185307179586;

static mrc_status_t need(const char *spec, const char *usage)
{
    return mrc__error(MRC_ERR_INVALID_ARG, "topology spec '%s': %s", spec,
                      usage);
}

/* The upper bound, said as such: "needs N >= 2" for 2^31 misleads. */
static mrc_status_t too_many(const char *spec, const char *what, long max)
{
    return mrc__error(MRC_ERR_INVALID_ARG,
                      "topology spec '%s': %s must be at most %ld", spec, what,
                      max);
}

/* Per-class counts multiply the physical links, and every one of them
 * takes a port at each end and a slot in the port index: a node has at
 * most MRC_TOPO_MAX_PORTS, and a generated topology at most
 * MRC_TOPO_MAX_LINKS physical links (a 128 MB index), as it has at most
 * that many link entries. */
static mrc_status_t check_ports(const char *spec, long nodes, long ports)
{
    if (ports > MRC_TOPO_MAX_PORTS)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "topology spec '%s': %ld links per node; a node "
                          "has at most %d ports",
                          spec, ports, MRC_TOPO_MAX_PORTS);
    if ((double)nodes * (double)ports / 2 > MRC_TOPO_MAX_LINKS)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "topology spec '%s': %ld nodes of %ld links each "
                          "make more than %d physical links; use fewer "
                          "nodes or fewer links per class",
                          spec, nodes, ports, MRC_TOPO_MAX_LINKS);
    return MRC_OK;
}

/* Where a class joins the same two nodes twice (a dimension of 2 on a
 * torus), the two joins are one entry of twice the count. */
static mrc_status_t check_doubled(const char *spec, const char *key, long c)
{
    if (2 * c > MRC_TOPO_MAX_LINK_COUNT)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "topology spec '%s': %s=%ld joins the same two "
                          "nodes twice here (a wrap-around of 2), %ld links, "
                          "more than %d",
                          spec, key, c, 2 * c, MRC_TOPO_MAX_LINK_COUNT);
    return MRC_OK;
}

static void place_on_circle(mrc__topo_builder_t *tb, int first, int n,
                            double cx, double cy, double r, double squash)
{
    for (int i = 0; i < n; i++) {
        double a = TAU * i / n + TAU / 4;
        /* Rounded so that files show 0, not 6.1e-17. */
        double x = round((cx + r * cos(a)) * 1e4) / 1e4;
        double y = round((cy + r * squash * sin(a)) * 1e4) / 1e4;
        mrc__topo_builder_set_pos(tb, first + i, x + 0.0, y + 0.0);
    }
}

static double circle_radius(int n)
{
    return n < 6 ? 1.0 : n / TAU * 1.0;
}

/* ring:N — node i joined to i+1 mod N; for N = 2 the ring's two edges
 * are one link of count 2. */
static mrc_status_t gen_ring(const gen_params_t *p, const char *spec,
                             mrc__topo_builder_t *tb)
{
    long n = p->arg[0];
    if (n > MRC_TOPO_MAX_NODES)
        return too_many(spec, "N", MRC_TOPO_MAX_NODES);
    if (n < 2)
        return need(spec, "ring:N needs N >= 2 (a ring closes through at "
                          "least two nodes)");
    mrc_status_t st = mrc__topo_builder_init(tb, n, spec);
    if (st != MRC_OK)
        return st;
    if (n == 2)
        mrc__topo_builder_add_link(tb, 0, 1, 2, p->bw, p->lat);
    else
        for (long i = 0; i < n; i++)
            mrc__topo_builder_add_link(tb, i, (i + 1) % n, 1, p->bw, p->lat);
    place_on_circle(tb, 0, (int)n, 0, 0, circle_radius((int)n), 1);
    return MRC_OK;
}

/* line:N — node i joined to i+1; line:1 is a lone node. */
static mrc_status_t gen_line(const gen_params_t *p, const char *spec,
                             mrc__topo_builder_t *tb)
{
    long n = p->arg[0];
    if (n > MRC_TOPO_MAX_NODES)
        return too_many(spec, "N", MRC_TOPO_MAX_NODES);
    if (n < 1)
        return need(spec, "line:N needs N >= 1");
    mrc_status_t st = mrc__topo_builder_init(tb, n, spec);
    if (st != MRC_OK)
        return st;
    for (long i = 0; i + 1 < n; i++)
        mrc__topo_builder_add_link(tb, i, i + 1, 1, p->bw, p->lat);
    for (long i = 0; i < n; i++)
        mrc__topo_builder_set_pos(tb, (int)i, (double)i, 0);
    return MRC_OK;
}

/* full:N — every pair joined once. */
static mrc_status_t gen_full(const gen_params_t *p, const char *spec,
                             mrc__topo_builder_t *tb)
{
    long n = p->arg[0];
    if (n < 1 || n > MRC_TOPO_MAX_PORTS + 1)
        return need(spec, "full:N needs 1 <= N <= 4097 (each node has N-1 "
                          "ports, at most 4096)");
    mrc_status_t st = mrc__topo_builder_init(tb, n, spec);
    if (st != MRC_OK)
        return st;
    for (long i = 0; i < n; i++)
        for (long j = i + 1; j < n; j++)
            mrc__topo_builder_add_link(tb, i, j, 1, p->bw, p->lat);
    place_on_circle(tb, 0, (int)n, 0, 0, circle_radius((int)n), 1);
    return MRC_OK;
}

/* ladder:N and torus-ladder:N (GCL's mesh and torus, seed 002): two
 * columns of N/2; rung k joins 2k and 2k+1; columns join consecutive rungs.
 * The torus closes both columns; with only two rungs the closing link is
 * a second join beside the column link. Options rung= and column= give
 * the physical links of each rung and of each column segment (default 1).
 *
 *     2k+2 --- 2k+3        rung k+1
 *      |        |
 *     2k ----- 2k+1        rung k
 */
static mrc_status_t build_ladder(const gen_params_t *p, const char *spec,
                                 mrc__topo_builder_t *tb, int torus,
                                 const char *family)
{
    long n = p->arg[0], rung = p->cnt[0], col = p->cnt[1];
    if (n > MRC_TOPO_MAX_NODES)
        return too_many(spec, "N", MRC_TOPO_MAX_NODES);
    if (n < 4 || n % 2 != 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "topology spec '%s': %s:N needs an even N >= 4 "
                          "(two columns of N/2)",
                          spec, family);
    long rungs = n / 2;
    if (torus && rungs == 2) {
        mrc_status_t st = check_doubled(spec, "column", col);
        if (st != MRC_OK)
            return st;
    }
    mrc_status_t st = check_ports(spec, n, rung + (torus ? 2 : 1) * col);
    if (st == MRC_OK)
        st = mrc__topo_builder_init(tb, n, spec);
    if (st != MRC_OK)
        return st;
    for (long k = 0; k < rungs; k++) {
        mrc__topo_builder_add_link(tb, 2 * k, 2 * k + 1, rung, p->bw, p->lat);
        if (k + 1 < rungs) {
            long c = (torus && rungs == 2) ? 2 * col : col;
            mrc__topo_builder_add_link(tb, 2 * k, 2 * k + 2, c, p->bw, p->lat);
            mrc__topo_builder_add_link(tb, 2 * k + 1, 2 * k + 3, c, p->bw,
                                       p->lat);
        }
    }
    if (torus && rungs > 2) {
        mrc__topo_builder_add_link(tb, n - 2, 0, col, p->bw, p->lat);
        mrc__topo_builder_add_link(tb, n - 1, 1, col, p->bw, p->lat);
    }
    for (long i = 0; i < n; i++)
        mrc__topo_builder_set_pos(tb, (int)i, (double)(i % 2), (double)(i / 2));
    return MRC_OK;
}

static mrc_status_t gen_ladder(const gen_params_t *p, const char *spec,
                               mrc__topo_builder_t *tb)
{
    return build_ladder(p, spec, tb, 0, "ladder");
}

static mrc_status_t gen_torus_ladder(const gen_params_t *p, const char *spec,
                                     mrc__topo_builder_t *tb)
{
    return build_ladder(p, spec, tb, 1, "torus-ladder");
}

/* gcl-torus:N — GCL's torus with all eight IPU-Links of each IPU wired:
 * torus-ladder:N with rung=4, column=2. Barley-twist is said to use all
 * eight links for optimal bandwidth; its two rings cross every rung twice
 * and every column segment once, so links balanced to that load are
 * rung = 2 x column, and rung + 2 x column = 8 gives column 2, rung 4. */
static mrc_status_t gen_gcl_torus(const gen_params_t *p, const char *spec,
                                  mrc__topo_builder_t *tb)
{
    return build_ladder(p, spec, tb, 1, "gcl-torus");
}

/* torus2d:X,Y — node (x, y) is y*X + x, joined to its four neighbours with
 * wrap-around; a dimension of 2 gives links of twice the count, so every
 * node has the same ports whatever the size. Options x= and y= give the
 * physical links of each join along that dimension (default 1). */
static mrc_status_t gen_torus2d(const gen_params_t *p, const char *spec,
                                mrc__topo_builder_t *tb)
{
    long X = p->arg[0], Y = p->arg[1], cx = p->cnt[0], cy = p->cnt[1];
    if (X < 2 || Y < 2)
        return need(spec, "torus2d:X,Y needs X >= 2 and Y >= 2");
    if (X > MRC_TOPO_MAX_NODES / Y)
        return need(spec, "torus2d:X,Y has more than 1048576 nodes");
    mrc_status_t st = MRC_OK;
    if (X == 2)
        st = check_doubled(spec, "x", cx);
    if (st == MRC_OK && Y == 2)
        st = check_doubled(spec, "y", cy);
    if (st == MRC_OK)
        st = check_ports(spec, X * Y, 2 * cx + 2 * cy);
    if (st == MRC_OK)
        st = mrc__topo_builder_init(tb, X * Y, spec);
    if (st != MRC_OK)
        return st;
    for (long y = 0; y < Y; y++)
        for (long x = 0; x < X; x++) {
            long u = y * X + x;
            if (X > 2 || x == 0)
                mrc__topo_builder_add_link(tb, u, y * X + (x + 1) % X,
                                           X == 2 ? 2 * cx : cx, p->bw, p->lat);
            if (Y > 2 || y == 0)
                mrc__topo_builder_add_link(tb, u, ((y + 1) % Y) * X + x,
                                           Y == 2 ? 2 * cy : cy, p->bw, p->lat);
            mrc__topo_builder_set_pos(tb, (int)u, (double)x, (double)y);
        }
    return MRC_OK;
}

/* prism:K,L (seed 000) — L stacked layers of K nodes; node (layer l,
 * position k) is l*K + k. Each layer is a ring whose neighbours are joined
 * by end= links (default 3, claim 4) in the two endmost layers and mid=
 * (default 2, claim 3) in intermediate ones; each node has inter= links
 * (default 1, claim 1: "at least one") to the same position in each
 * adjacent layer. By default endmost nodes have 3+3+1 = 7 ports,
 * intermediate ones 2+2+1+1 = 6. */
static mrc_status_t gen_prism(const gen_params_t *p, const char *spec,
                              mrc__topo_builder_t *tb)
{
    long K = p->arg[0], L = p->arg[1];
    long end = p->cnt[0], mid = p->cnt[1], inter = p->cnt[2];
    if (K < 3 || L < 2)
        return need(spec, "prism:K,L needs K >= 3 nodes per layer and L >= 2 "
                          "layers");
    if (K > MRC_TOPO_MAX_NODES / L)
        return need(spec, "prism:K,L has more than 1048576 nodes");
    long ports = 2 * end + inter;
    if (L > 2 && 2 * mid + 2 * inter > ports)
        ports = 2 * mid + 2 * inter;
    mrc_status_t st = check_ports(spec, K * L, ports);
    if (st == MRC_OK)
        st = mrc__topo_builder_init(tb, K * L, spec);
    if (st != MRC_OK)
        return st;
    for (long l = 0; l < L; l++) {
        long c = (l == 0 || l == L - 1) ? end : mid;
        for (long k = 0; k < K; k++)
            mrc__topo_builder_add_link(tb, l * K + k, l * K + (k + 1) % K, c,
                                       p->bw, p->lat);
        if (l + 1 < L)
            for (long k = 0; k < K; k++)
                mrc__topo_builder_add_link(tb, l * K + k, (l + 1) * K + k,
                                           inter, p->bw, p->lat);
        place_on_circle(tb, (int)(l * K), (int)K, 0, 1.6 * (double)l,
                        circle_radius((int)K) * 1.5, 0.4);
    }
    return MRC_OK;
}

/* prism-torus:K,L (seed 000, claim 5) — the stack claim 5 starts from:
 * L layers of K nodes as in prism:K,L, every layer alike (intra= links
 * between neighbours in a layer, default 2; inter= links to the same
 * position in each adjacent layer, default 1), and the last layer joined
 * back to the first, so that no layer is endmost. Claim 5 makes a prism
 * of it by designating a layer and turning its interlayer links into
 * intralayer ones; every node has 2 x intra + 2 x inter ports. */
static mrc_status_t gen_prism_torus(const gen_params_t *p, const char *spec,
                                    mrc__topo_builder_t *tb)
{
    long K = p->arg[0], L = p->arg[1], intra = p->cnt[0], inter = p->cnt[1];
    if (K < 3 || L < 3)
        return need(spec, "prism-torus:K,L needs K >= 3 nodes per layer and "
                          "L >= 3 layers (a ring of layers)");
    if (K > MRC_TOPO_MAX_NODES / L)
        return need(spec, "prism-torus:K,L has more than 1048576 nodes");
    mrc_status_t st = check_ports(spec, K * L, 2 * intra + 2 * inter);
    if (st == MRC_OK)
        st = mrc__topo_builder_init(tb, K * L, spec);
    if (st != MRC_OK)
        return st;
    for (long l = 0; l < L; l++) {
        for (long k = 0; k < K; k++)
            mrc__topo_builder_add_link(tb, l * K + k, l * K + (k + 1) % K,
                                       intra, p->bw, p->lat);
        for (long k = 0; k < K; k++)
            mrc__topo_builder_add_link(tb, l * K + k, ((l + 1) % L) * K + k,
                                       inter, p->bw, p->lat);
        place_on_circle(tb, (int)(l * K), (int)K, 0, 1.6 * (double)l,
                        circle_radius((int)K) * 1.5, 0.4);
    }
    return MRC_OK;
}

/* hcm8 (seed 004) — 8 processors in two subsets of 4 (0-3 and 4-7). In a
 * subset, around a square: 2 links to each of the 2 nearest neighbours,
 * 1 link to the farthest (the diagonal); 2 links from each processor to
 * its counterpart i+4 in the other subset. 7 ports each.
 *
 *      0 ==== 1           4 ==== 5     (==  two links)
 *      || \/ ||           || \/ ||     (\/  one link on each diagonal)
 *      3 ==== 2           7 ==== 6     and i == i+4
 */
static mrc_status_t gen_hcm8(const gen_params_t *p, const char *spec,
                             mrc__topo_builder_t *tb)
{
    mrc_status_t st = mrc__topo_builder_init(tb, 8, spec);
    if (st != MRC_OK)
        return st;
    static const double corner[4][2] = {{-1, 1}, {1, 1}, {1, -1}, {-1, -1}};
    for (int s = 0; s < 2; s++) {
        int b = 4 * s;
        for (int i = 0; i < 4; i++)
            mrc__topo_builder_add_link(tb, b + i, b + (i + 1) % 4, 2, p->bw,
                                       p->lat);
        mrc__topo_builder_add_link(tb, b + 0, b + 2, 1, p->bw, p->lat);
        mrc__topo_builder_add_link(tb, b + 1, b + 3, 1, p->bw, p->lat);
        /* Drawn as nested squares so the counterpart links stay short. */
        double r = s == 0 ? 2.0 : 1.0;
        for (int i = 0; i < 4; i++)
            mrc__topo_builder_set_pos(tb, b + i, r * corner[i][0],
                                      r * corner[i][1]);
    }
    for (int i = 0; i < 4; i++)
        mrc__topo_builder_add_link(tb, i, i + 4, 2, p->bw, p->lat);
    return MRC_OK;
}

const mrc__topo_generator_t mrc__topo_generators[] = {
    {"ring", 1, "ring:N (N >= 2)", gen_ring, {NULL}, {0}},
    {"line", 1, "line:N (N >= 1)", gen_line, {NULL}, {0}},
    {"full", 1, "full:N (1 <= N <= 4097)", gen_full, {NULL}, {0}},
    {"ladder",
     1,
     "ladder:N (even N >= 4)",
     gen_ladder,
     {"rung", "column", NULL},
     {1, 1}},
    {"torus-ladder",
     1,
     "torus-ladder:N (even N >= 4)",
     gen_torus_ladder,
     {"rung", "column", NULL},
     {1, 1}},
    {"gcl-torus",
     1,
     "gcl-torus:N (even N >= 4)",
     gen_gcl_torus,
     {"rung", "column", NULL},
     {4, 2}},
    {"torus2d",
     2,
     "torus2d:X,Y (X, Y >= 2)",
     gen_torus2d,
     {"x", "y", NULL},
     {1, 1}},
    {"prism",
     2,
     "prism:K,L (K >= 3, L >= 2)",
     gen_prism,
     {"end", "mid", "inter", NULL},
     {3, 2, 1}},
    {"prism-torus",
     2,
     "prism-torus:K,L (K >= 3, L >= 3)",
     gen_prism_torus,
     {"intra", "inter", NULL},
     {2, 1}},
    {"hcm8", 0, "hcm8 (no arguments)", gen_hcm8, {NULL}, {0}},
};

const int mrc__topo_num_generators =
    (int)(sizeof mrc__topo_generators / sizeof mrc__topo_generators[0]);
