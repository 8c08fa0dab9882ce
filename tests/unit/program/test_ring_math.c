/* The ring index arithmetic (src/program/ring_math.h) against brute
 * force over small rings: positions, both directions and the hops they
 * use, the code's affine expressions, the cut of a slice into parts,
 * where a block lies in a buffer, and the binomial tree's steps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "program/ring_math.h"

enum { MAX_N = 17 };

/* a mod n by repeated steps of n. */
static int slow_mod(long a, int n)
{
    while (a < 0)
        a += n;
    while (a >= n)
        a -= n;
    return (int)a;
}

static void test_mod(void **state)
{
    (void)state;
    for (int n = 1; n <= MAX_N; n++)
        for (long a = -12L * n; a <= 12L * n; a++)
            assert_int_equal(mrc__ring_mod(a, n), slow_mod(a, n));
    assert_int_equal(mrc__ring_mod(-1000000007L, 13),
                     slow_mod(-1000000007L, 13));
}

static void test_next_prev(void **state)
{
    (void)state;
    for (int n = 1; n <= MAX_N; n++)
        for (int pos = 0; pos < n; pos++) {
            assert_int_equal(mrc__ring_next(pos, n),
                             pos == n - 1 ? 0 : pos + 1);
            assert_int_equal(mrc__ring_prev(pos, n),
                             pos == 0 ? n - 1 : pos - 1);
            assert_int_equal(mrc__ring_prev(mrc__ring_next(pos, n), n), pos);
        }
}

static void test_affine(void **state)
{
    (void)state;
    for (int n = 1; n <= 9; n++)
        for (int a = -2; a <= 2; a++)
            for (int b = -2; b <= 2; b++)
                for (int c = -n - 2; c <= n + 2; c++)
                    for (int x = 0; x < n; x++)
                        for (int y = 0; y < n; y++)
                            assert_int_equal(
                                mrc__ring_affine(a, x, b, y, c, n),
                                slow_mod((long)a * x + (long)b * y + c, n));
}

/* The endpoints of hop h of a ring of n: index h to h + 1. */
static int hop_joins(int h, int n, int u, int v)
{
    int a = h, b = (h + 1) % n;
    return (a == u && b == v) || (a == v && b == u);
}

static void test_directions(void **state)
{
    (void)state;
    for (int n = 1; n <= MAX_N; n++)
        for (int rev = 0; rev < 2; rev++) {
            int seen[MAX_N] = {0};
            assert_int_equal(mrc__ring_index(0, n, rev), 0);
            for (int pos = 0; pos < n; pos++) {
                int i = mrc__ring_index(pos, n, rev);
                int j = mrc__ring_index((pos + 1) % n, n, rev);
                assert_true(i >= 0 && i < n);
                seen[i]++;
                /* the next position is the ring's neighbour that way */
                assert_int_equal(j, slow_mod(i + (rev ? -1 : 1), n));
                /* the node leaves by the hop between the two, and the
                 * next node is entered by that same hop */
                int out = mrc__ring_out_hop(i, n, rev);
                assert_true(out >= 0 && out < n);
                assert_true(hop_joins(out, n, i, j));
                assert_int_equal(mrc__ring_in_hop(j, n, rev), out);
            }
            for (int i = 0; i < n; i++)
                assert_int_equal(seen[i], 1);
        }
}

static void test_route_index(void **state)
{
    (void)state;
    for (int len = 1; len <= 9; len++)
        for (int j = 0; j < len; j++) {
            assert_int_equal(mrc__route_index(j, len, 0), j);
            assert_int_equal(mrc__route_index(j, len, 1), len - 1 - j);
            assert_int_equal(
                mrc__route_index(mrc__route_index(j, len, 1), len, 1), j);
        }
}

static void test_split(void **state)
{
    (void)state;
    for (uint64_t parts = 1; parts <= 9; parts++)
        for (uint64_t len = 0; len <= 60; len++) {
            uint64_t at = 0, most = 0, q = len / parts, r = len % parts;
            for (uint64_t i = 0; i < parts; i++) {
                uint64_t start, n;
                mrc__split_part_qr(q, r, i, &start, &n);
                assert_int_equal(start, at); /* contiguous, in order */
                assert_true(n == q || n == q + 1);
                assert_int_equal(n == q + 1, i < r); /* longer ones first */
                assert_int_equal(mrc__split_len(len, parts, i), n);
                most = n > most ? n : most;
                at += n;
            }
            assert_int_equal(at, len); /* every element once */
            assert_int_equal(mrc__split_max(len, parts), most);
        }
}

static void test_block_place(void **state)
{
    (void)state;
    for (int block = -1; block < 5; block++)
        for (int rank = 0; rank < 5; rank++)
            for (int own = 0; own < 2; own++) {
                uint64_t off = 99;
                int r = mrc__block_place(block, rank, own, 7, 3, &off);
                if (block < 0) {
                    assert_int_equal(r, 0);
                    assert_int_equal(off, 3);
                } else if (own) {
                    assert_int_equal(r, block == rank ? 0 : -1);
                    if (block == rank)
                        assert_int_equal(off, 3);
                } else {
                    assert_int_equal(r, 0);
                    assert_int_equal(off, (uint64_t)block * 7 + 3);
                }
            }
}

static void test_pred_bound(void **state)
{
    (void)state;
    for (int n = 1; n <= MAX_N; n++)
        for (int arg = -n; arg < n; arg++)
            assert_int_equal(mrc__pred_bound(arg, n), arg < 0 ? n + arg : arg);
}

static void test_ceil_log2(void **state)
{
    (void)state;
    for (int n = 0; n <= 4100; n++) {
        int l = 0;
        while ((1L << l) < n)
            l++;
        assert_int_equal(mrc__ceil_log2(n), l);
    }
}

/* The binomial tree reduces every rel into the root: at each step a
 * child sends to its parent, which is a parent that step and names the
 * child back; every rel but the root sends exactly once, after its own
 * children have sent to it, and the parent predicate is exactly "has a
 * child this step". */
static void test_tree(void **state)
{
    (void)state;
    for (int n = 1; n <= 40; n++) {
        int sent[64] = {0}, steps = mrc__ceil_log2(n);
        for (int t = 0; t < steps; t++)
            for (int rel = 0; rel < n; rel++) {
                int has_child =
                    rel + (1 << t) < n && mrc__tree_child(rel + (1 << t), t);
                assert_int_equal(mrc__tree_parent(rel, n, t), has_child);
                if (!mrc__tree_child(rel, t))
                    continue;
                int parent = mrc__tree_peer(0, rel, -1, t, n);
                assert_int_equal(parent, rel - (1 << t));
                assert_true(mrc__tree_parent(parent, n, t));
                assert_int_equal(mrc__tree_peer(0, parent, 1, t, n), rel);
                assert_int_equal(sent[rel], 0);
                assert_int_equal(sent[parent], 0); /* still gathering */
                sent[rel] = 1;
            }
        for (int rel = 0; rel < n; rel++)
            assert_int_equal(sent[rel], rel != 0);
        for (int root = 0; root < n; root++)
            for (int rel = 0; rel < n; rel++)
                for (int t = 0; t < steps; t++)
                    for (int dir = -1; dir <= 1; dir += 2)
                        assert_int_equal(
                            mrc__tree_peer(root, rel, dir, t, n),
                            slow_mod((long)root + rel + dir * (1L << t), n));
        assert_false(mrc__tree_child(1, -1));
        assert_false(mrc__tree_parent(0, n, 31));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mod),         cmocka_unit_test(test_next_prev),
        cmocka_unit_test(test_affine),      cmocka_unit_test(test_directions),
        cmocka_unit_test(test_route_index), cmocka_unit_test(test_split),
        cmocka_unit_test(test_block_place), cmocka_unit_test(test_pred_bound),
        cmocka_unit_test(test_ceil_log2),   cmocka_unit_test(test_tree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
