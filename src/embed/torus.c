/*
 * Two link-disjoint Hamiltonian rings of an X x Y torus (X, Y >= 3), so
 * that as bidirectional rings they load every link direction equally and
 * reach the allreduce bound.
 *
 * The links split into two 2-factors A and B (every node has two links in
 * each). Start from the staircase: with g = gcd(X, Y), A climbs where
 * x + y = 0 (mod g) and runs right elsewhere, B the other way round; for
 * coprime sizes A is the columns and B the rows. Then merge cycles by
 * switching unit squares: where A holds a square's two horizontal links
 * and B its two vertical ones (or the reverse), exchanging them keeps both
 * 2-factors, and merges cycles when the links belonged to different ones.
 * A switch is kept when the total number of cycles drops, until A and B
 * are one cycle each.
 *
 * Node (x, y) is y*X + x, as torus2d:X,Y numbers them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "embed_internal.h"

typedef struct factors {
    int X, Y, n;
    char *right; /* [n]: link (x,y)-(x+1,y) is in A */
    char *up;    /* [n]: link (x,y)-(x,y+1) is in A */
    int *mark;   /* scratch for cycle walks */
    int stamp;
} factors_t;

static int node(const factors_t *f, int x, int y)
{
    return ((y + f->Y) % f->Y) * f->X + (x + f->X) % f->X;
}

/* The neighbours of u in factor A (want = 1) or B (want = 0). */
static void neighbours(const factors_t *f, int u, int want, int nb[2])
{
    int x = u % f->X, y = u / f->X, k = 0;
    int cand[4] = {node(f, x + 1, y), node(f, x - 1, y), node(f, x, y + 1),
                   node(f, x, y - 1)};
    char in[4] = {f->right[u], f->right[cand[1]], f->up[u], f->up[cand[3]]};
    for (int i = 0; i < 4; i++)
        if ((in[i] != 0) == want && k < 2)
            nb[k++] = cand[i];
}

static int count_cycles(factors_t *f, int want)
{
    int cycles = 0;
    f->stamp++;
    for (int s = 0; s < f->n; s++) {
        if (f->mark[s] == f->stamp)
            continue;
        cycles++;
        int prev = -1, u = s;
        while (f->mark[u] != f->stamp) {
            f->mark[u] = f->stamp;
            int nb[2];
            neighbours(f, u, want, nb);
            int next = nb[0] != prev ? nb[0] : nb[1];
            prev = u;
            u = next;
        }
    }
    return cycles;
}

/* Walks factor `want` from node 0 into ring[]; returns its length. */
static int walk(factors_t *f, int want, int *ring)
{
    int prev = -1, u = 0, k = 0;
    do {
        ring[k++] = u;
        int nb[2];
        neighbours(f, u, want, nb);
        int next = nb[0] != prev ? nb[0] : nb[1];
        prev = u;
        u = next;
    } while (u != 0 && k < f->n);
    return k;
}

static int gcd(int a, int b)
{
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Exchanges the links of the unit square at u between A and B if one of
 * them holds both its horizontal and the other both its vertical links;
 * returns 1 if it did. */
static int switch_square(factors_t *f, int u)
{
    int x = u % f->X, y = u / f->X;
    int above = node(f, x, y + 1), beside = node(f, x + 1, y);
    if (f->right[u] != f->right[above] || f->up[u] != f->up[beside] ||
        f->right[u] == f->up[u])
        return 0;
    f->right[u] ^= 1;
    f->right[above] ^= 1;
    f->up[u] ^= 1;
    f->up[beside] ^= 1;
    return 1;
}

/* Builds the two rings; 0 on success, -1 if the switches got stuck. */
int mrc__embed_torus_rings(int X, int Y, int *ring_a, int *ring_b)
{
    factors_t f = {X, Y, X * Y, NULL, NULL, NULL, 0};
    int rc = -1;
    f.right = malloc((size_t)f.n);
    f.up = malloc((size_t)f.n);
    f.mark = calloc((size_t)f.n, sizeof *f.mark);
    if (!f.right || !f.up || !f.mark)
        goto done;
    int g = gcd(X, Y);
    for (int y = 0; y < Y; y++)
        for (int x = 0; x < X; x++) {
            int climb = (x + y) % g == 0;
            f.up[y * X + x] = (char)climb;
            f.right[y * X + x] = (char)!climb;
        }
    int total = count_cycles(&f, 1) + count_cycles(&f, 0);
    /* Keep switches that lower the count; when none does, take a random
     * one that keeps it (a fixed seed, a bounded number of times) to get
     * out of the local minimum. */
    uint64_t seed = 0x853c49e6748fea9bull;
    for (int escapes = 0; total > 2 && escapes < 64 * f.n;) {
        int improved = 0;
        for (int u = 0; u < f.n && total > 2; u++) {
            if (!switch_square(&f, u))
                continue;
            int now = count_cycles(&f, 1) + count_cycles(&f, 0);
            if (now < total) {
                total = now;
                improved = 1;
            } else {
                switch_square(&f, u); /* undo: the same test holds */
            }
        }
        if (improved || total <= 2)
            continue;
        for (int tries = 0; tries < 4 * f.n; tries++) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            int u = (int)(seed % (uint64_t)f.n);
            if (!switch_square(&f, u))
                continue;
            if (count_cycles(&f, 1) + count_cycles(&f, 0) == total) {
                escapes++;
                break;
            }
            switch_square(&f, u);
        }
        escapes++;
    }
    if (total == 2 && walk(&f, 1, ring_a) == f.n && walk(&f, 0, ring_b) == f.n)
        rc = 0;
done:
    free(f.right);
    free(f.up);
    free(f.mark);
    return rc;
}

/* Is node (x, y) = y*X + x joined to its four torus neighbours? */
static int is_torus2d(const mrc_topo_t *t, int X, int Y)
{
    for (int y = 0; y < Y; y++)
        for (int x = 0; x < X; x++) {
            int u = y * X + x;
            if (mrc__embed_links_between(t, u, y * X + (x + 1) % X) < 1 ||
                mrc__embed_links_between(t, u, ((y + 1) % Y) * X + x) < 1)
                return 0;
        }
    return 1;
}

/* One Hamiltonian ring with Y even, if the switches ever get stuck: along
 * row 0, snake through columns 1..X-1 row by row, back down column 0. */
static void snake_ring(int X, int Y, int *ring)
{
    int k = 0;
    for (int y = 0; y < Y; y++) {
        if (y % 2 == 0)
            for (int x = 1; x < X; x++)
                ring[k++] = y * X + x;
        else
            for (int x = X - 1; x >= 1; x--)
                ring[k++] = y * X + x;
    }
    for (int y = Y - 1; y >= 0; y--)
        ring[k++] = y * X;
}

mrc_status_t mrc__strategy_torus(const mrc_embed_config_t *cfg,
                                 mrc__embed_builder_t *b)
{
    const mrc_topo_t *t = b->topo;
    int n = mrc_topo_num_nodes(t);
    if ((cfg && ((cfg->groups && cfg->groups[0]) || cfg->replica_size > 1)))
        return MRC_ERR_NOT_APPLICABLE;
    for (int X = 3; X <= n / 3; X++) {
        if (n % X != 0 || n / X < 3 || !is_torus2d(t, X, n / X))
            continue;
        int Y = n / X;
        int *r1 = malloc((size_t)n * sizeof *r1);
        int *r2 = malloc((size_t)n * sizeof *r2);
        int *all = malloc((size_t)n * sizeof *all);
        mrc_status_t st = MRC_OK;
        if (!r1 || !r2 || !all) {
            st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        } else {
            for (int i = 0; i < n; i++)
                all[i] = i;
            if (mrc__embed_builder_add_group(b, all, n) < 0)
                st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        }
        if (st == MRC_OK) {
            int two = cfg && cfg->max_rings == 1
                          ? 0
                          : mrc__embed_torus_rings(X, Y, r1, r2) == 0;
            if (two) {
                if (mrc__embed_builder_add_ring(b, 0, r1, n, 1, 0.5) < 0 ||
                    mrc__embed_builder_add_ring(b, 0, r2, n, 1, 0.5) < 0)
                    st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
            } else if (Y % 2 == 0 || X % 2 == 0) {
                if (Y % 2 == 0) {
                    snake_ring(X, Y, r1);
                } else { /* the same with x and y swapped */
                    snake_ring(Y, X, r2);
                    for (int k = 0; k < n; k++)
                        r1[k] = (r2[k] % Y) * X + r2[k] / Y;
                }
                if (mrc__embed_builder_add_ring(b, 0, r1, n, 1, 1.0) < 0)
                    st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
            } else {
                st = MRC_ERR_NOT_APPLICABLE;
            }
        }
        free(r1);
        free(r2);
        free(all);
        return st;
    }
    return MRC_ERR_NOT_APPLICABLE;
}

/*
 * GCL's torus (torus-ladder:N, m = N/2 rungs, m even) has three links per
 * node, but the named strategies use two: 2/3 of the bound. Mix two kinds
 * of bidirectional Hamiltonian rings instead:
 *
 *   Z0, Z1  the barley-twist rings: every rung, alternate column links;
 *           together each rung twice and each column link once;
 *   P_k     the peripheral ring turned to rungs k and k+1: up one column
 *           the long way round, down the other; every column link but the
 *           two beside rungs k, k+1.
 *
 * With q rotations P_k spread evenly, Z0 and Z1 sharing alpha and the P_k
 * beta, the most used link carries max(alpha + beta/q, alpha/2 + beta);
 * alpha = 2(q-1)/(3q-2), beta = q/(3q-2) equalise the two, giving an
 * efficiency of (2/3)(3q-2)/(2q-1): 0.889 for q = 2, 0.978 for q = 8.
 */
enum { MAX_ROTATIONS = 8 };

mrc_status_t mrc__strategy_torus_ladder(const mrc_embed_config_t *cfg,
                                        mrc__embed_builder_t *b)
{
    const mrc_topo_t *t = b->topo;
    int n = mrc_topo_num_nodes(t), m = n / 2;
    if ((cfg && ((cfg->groups && cfg->groups[0]) || cfg->replica_size > 1)) ||
        mrc__embed_ladder_kind(t) != MRC__TORUS || n % 4 != 0 || m < 4)
        return MRC_ERR_NOT_APPLICABLE;
    int q = m / 2 < MAX_ROTATIONS ? m / 2 : MAX_ROTATIONS;
    if (cfg && cfg->max_rings > 0 && cfg->max_rings - 2 < q)
        q = cfg->max_rings - 2;
    if (q < 2)
        return MRC_ERR_NOT_APPLICABLE;
    double zshare = (double)(q - 1) / (3 * q - 2); /* alpha / 2 */
    double pshare = 1.0 / (3 * q - 2);             /* beta / q */

    int *order = malloc((size_t)n * sizeof *order);
    if (!order)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    mrc_status_t st = MRC_OK;
    for (int i = 0; i < n; i++)
        order[i] = i;
    if (mrc__embed_builder_add_group(b, order, n) < 0)
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int stream = 0; stream < 2 && st == MRC_OK; stream++) {
        mrc__embed_barley_twist_order(n, stream, order);
        if (mrc__embed_builder_add_ring(b, 0, order, n, 1, zshare) < 0)
            st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    for (int j = 0; j < q && st == MRC_OK; j++) {
        mrc__embed_peripheral_order(n, j * (m / q), order);
        if (mrc__embed_builder_add_ring(b, 0, order, n, 1, pshare) < 0)
            st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    free(order);
    return st;
}
