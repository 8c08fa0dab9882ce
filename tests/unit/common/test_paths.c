/* The shared shortest-path search (common/paths.h): fewest arcs breadth
 * first, least lengths with Dijkstra's search, which of equal routes each
 * keeps, routes back, unreachable nodes, and searches after searches. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "common/paths.h"

/* A graph of n nodes from arcs (tail, head) listed per tail in the order
 * given; arc k of the list gets id k. */
typedef struct graph_fixture {
    mrc__graph_t g;
    int first[16], head[32], id[32];
} fixture_t;

static void make_graph(fixture_t *f, int n, const int (*arcs)[2], int m)
{
    f->g.num_nodes = n;
    f->g.num_ids = m;
    f->g.first = f->first;
    f->g.head = f->head;
    f->g.id = f->id;
    int k = 0;
    for (int u = 0; u < n; u++) {
        f->first[u] = k;
        for (int a = 0; a < m; a++)
            if (arcs[a][0] == u) {
                f->head[k] = arcs[a][1];
                f->id[k++] = a;
            }
    }
    f->first[n] = k;
}

/* Two routes of two arcs from 0 to 3: breadth first keeps the one through
 * the node found first, which is the one whose arc 0 lists first. */
static void test_fewest_arcs_first_found(void **state)
{
    (void)state;
    static const int arcs[][2] = {{0, 2}, {0, 1}, {1, 3}, {2, 3}, {3, 4}};
    fixture_t f;
    make_graph(&f, 5, arcs, 5);
    mrc__paths_t p;
    assert_int_equal(mrc__paths_init(&p, &f.g), 0);
    mrc__paths_search(&p, 0, -1, NULL);
    int nodes[5], ids[4];
    assert_int_equal(mrc__paths_route(&p, 4, nodes, ids), 4);
    assert_int_equal(nodes[0], 0);
    assert_int_equal(nodes[1], 2);
    assert_int_equal(nodes[2], 3);
    assert_int_equal(nodes[3], 4);
    assert_int_equal(ids[0], 0);
    assert_int_equal(ids[1], 3);
    assert_int_equal(ids[2], 4);
    assert_true(p.dist[4] == 3);
    assert_int_equal(p.via[0], -1);
    mrc__paths_free(&p);
}

/* Lengths: the long way round is shorter; of two routes of equal length
 * the first one reached is kept (a route changes only for a strictly
 * shorter one). */
static void test_least_length(void **state)
{
    (void)state;
    static const int arcs[][2] = {{0, 1}, {0, 2}, {1, 2},
                                  {2, 3}, {0, 4}, {4, 3}};
    const double len[] = {1, 5, 1, 1, 2, 1};
    fixture_t f;
    make_graph(&f, 5, arcs, 6);
    mrc__paths_t p;
    assert_int_equal(mrc__paths_init(&p, &f.g), 0);
    mrc__paths_search(&p, 0, -1, len);
    assert_true(p.dist[2] == 2);
    assert_true(p.dist[3] == 3);
    int nodes[5], ids[4];
    /* 0-1-2-3 and 0-4-3 both cost 3: 0-4-3 is reached first (node 4 is
     * settled at 2, before node 2 is). */
    assert_int_equal(mrc__paths_route(&p, 3, nodes, ids), 3);
    assert_int_equal(nodes[1], 4);
    assert_int_equal(ids[0], 4);
    assert_int_equal(ids[1], 5);
    assert_int_equal(mrc__paths_route(&p, 2, nodes, NULL), 3);
    assert_int_equal(nodes[1], 1);
    mrc__paths_free(&p);
}

/* A node no arc leads to: no route, an infinite distance. */
static void test_unreachable(void **state)
{
    (void)state;
    static const int arcs[][2] = {{0, 1}, {1, 0}, {2, 0}};
    const double len[] = {1, 1, 1};
    fixture_t f;
    make_graph(&f, 3, arcs, 3);
    mrc__paths_t p;
    assert_int_equal(mrc__paths_init(&p, &f.g), 0);
    mrc__paths_search(&p, 0, 2, NULL);
    assert_int_equal(mrc__paths_route(&p, 2, NULL, NULL), 0);
    assert_true(isinf(p.dist[2]));
    mrc__paths_search(&p, 0, -1, len);
    assert_int_equal(mrc__paths_route(&p, 2, NULL, NULL), 0);
    assert_int_equal(mrc__paths_route(&p, 0, NULL, NULL), 1);
    mrc__paths_free(&p);
}

/* A ring one way round, 0 -> 1 -> ... -> n-1 -> 0: a search that stops at
 * its target leaves the nodes beyond unreached, and each later search
 * (either kind) starts from nothing. */
static void test_searches_in_turn(void **state)
{
    (void)state;
    enum { N = 12 };
    int arcs[N][2];
    double len[N];
    for (int i = 0; i < N; i++) {
        arcs[i][0] = i;
        arcs[i][1] = (i + 1) % N;
        len[i] = 1;
    }
    fixture_t f;
    make_graph(&f, N, (const int(*)[2])arcs, N);
    mrc__paths_t p;
    assert_int_equal(mrc__paths_init(&p, &f.g), 0);
    int nodes[N];
    for (int src = 0; src < N; src++) {
        int dst = (src + 3) % N;
        mrc__paths_search(&p, src, dst, NULL);
        assert_int_equal(mrc__paths_route(&p, dst, nodes, NULL), 4);
        assert_int_equal(nodes[0], src);
        assert_int_equal(nodes[3], dst);
        assert_true(isinf(p.dist[(src + 6) % N]));
        assert_int_equal(p.prev[(src + 6) % N], -1);
    }
    mrc__paths_search(&p, 5, -1, len);
    assert_true(p.dist[4] == N - 1);
    mrc__paths_search(&p, 7, 8, NULL);
    assert_true(isinf(p.dist[4]));
    assert_int_equal(mrc__paths_route(&p, 8, nodes, NULL), 2);
    mrc__paths_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fewest_arcs_first_found),
        cmocka_unit_test(test_least_length),
        cmocka_unit_test(test_unreachable),
        cmocka_unit_test(test_searches_in_turn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
