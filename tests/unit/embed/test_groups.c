/* Groups as explicit node lists ("0,4+1,5+2,6+3,7"): the parser, its
 * checks (disjoint, in range, covering, no empty entry), rank order, and
 * hcm8's counterpart pairs over the double links (seed 004). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "mrc/mrc.h"

static mrc_topo_t *topo(const char *spec)
{
    mrc_topo_t *t = NULL;
    if (mrc_topo_create(spec, &t) != MRC_OK)
        fail_msg("%s: %s", spec, mrc_last_error());
    return t;
}

static mrc_embedding_t *embed(const mrc_topo_t *t, const char *strategy,
                              const char *groups)
{
    mrc_embed_config_t cfg = {.strategy = strategy, .groups = groups};
    mrc_embedding_t *e = NULL;
    if (mrc_embed_create(t, &cfg, &e) != MRC_OK)
        fail_msg("%s %s: %s", strategy, groups, mrc_last_error());
    assert_int_equal(mrc_embed_verify(e), MRC_OK);
    return e;
}

static void expect_refusal(const char *spec, const char *strategy,
                           const char *groups, const char *says)
{
    mrc_topo_t *t = topo(spec);
    mrc_embed_config_t cfg = {.strategy = strategy, .groups = groups};
    mrc_embedding_t *e = (mrc_embedding_t *)(uintptr_t)1;
    mrc_status_t st = mrc_embed_create(t, &cfg, &e);
    if (st == MRC_OK || !strstr(mrc_last_error(), says))
        fail_msg("%s on %s, groups '%s': status %d, '%s' (wanted '%s')",
                 strategy, spec, groups, st, mrc_last_error(), says);
    assert_null(e);
    mrc_topo_destroy(t);
}

/* The listed order is the rank order; groups need not be consecutive. */
static void test_lists_rank_order(void **state)
{
    (void)state;
    mrc_topo_t *t = topo("ring:8");
    mrc_embedding_t *e = embed(t, "ring", "7,0,5+3,1,2,6,4");
    assert_int_equal(mrc_embed_num_groups(e), 2);
    const int *nodes;
    assert_int_equal(mrc_embed_group_nodes(e, 0, &nodes), 3);
    assert_int_equal(nodes[0], 7);
    assert_int_equal(nodes[1], 0);
    assert_int_equal(nodes[2], 5);
    assert_int_equal(mrc_embed_group_nodes(e, 1, &nodes), 5);
    assert_int_equal(nodes[4], 4);
    assert_int_equal(mrc_embed_node_group(e, 5), 0);
    assert_int_equal(mrc_embed_node_group(e, 6), 1);
    /* The ring strategy goes round a group in its listed order. */
    const mrc_ring_t *r = mrc_embed_ring(e, 0, 0);
    assert_int_equal(r->nodes[0], 7);
    assert_int_equal(r->nodes[1], 0);
    assert_int_equal(r->nodes[2], 5);
    mrc_embed_destroy(e);

    /* A group of one node in list form is the node, not a size. */
    e = embed(t, "auto", "0,1,2,3+4,5+6+7");
    assert_int_equal(mrc_embed_num_groups(e), 4);
    assert_int_equal(mrc_embed_group_nodes(e, 3, &nodes), 1);
    assert_int_equal(nodes[0], 7);
    assert_int_equal(mrc_embed_num_rings(e, 3), 0);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
}

/* Seed 004's 4x2 configuration over the counterpart links: one ring per
 * pair over its double link, as fast as the pairs within a subset. */
static void test_hcm8_counterpart_pairs(void **state)
{
    (void)state;
    mrc_topo_t *t = topo("hcm8");
    mrc_embedding_t *e = embed(t, "hcm8", "0,4+1,5+2,6+3,7");
    mrc_embed_figures_t across, within;
    assert_int_equal(mrc_embed_num_groups(e), 4);
    for (int g = 0; g < 4; g++) {
        assert_int_equal(mrc_embed_num_rings(e, g), 1);
        const mrc_ring_t *r = mrc_embed_ring(e, g, 0);
        assert_int_equal(r->size, 2);
        assert_int_equal(r->nodes[0], g);
        assert_int_equal(r->nodes[1], g + 4);
        assert_int_equal(r->hops[0].route_len, 2); /* direct */
    }
    assert_int_equal(mrc_embed_figures(e, &across), MRC_OK);
    mrc_embed_destroy(e);
    e = embed(t, "hcm8", "2+2+2+2");
    assert_int_equal(mrc_embed_figures(e, &within), MRC_OK);
    mrc_embed_destroy(e);
    assert_true(across.algbw_gbps > 0);
    assert_true(fabs(across.algbw_gbps - within.algbw_gbps) < 1e-9);

    /* A subset of four in any rank order keeps its two rings. */
    e = embed(t, "hcm8", "3,1,2,0+4,5,6,7");
    assert_int_equal(mrc_embed_num_rings(e, 0), 2);
    const int *nodes;
    mrc_embed_group_nodes(e, 0, &nodes);
    assert_int_equal(nodes[0], 3);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
}

static void test_list_refusals(void **state)
{
    (void)state;
    expect_refusal("hcm8", "auto", "0,4+1,5+2,6", "leave 2 of the 8 nodes");
    expect_refusal("hcm8", "auto", "0,4+1,5+2,6", "node 3 first");
    expect_refusal("hcm8", "auto", "0,4+1,5+2,6+3,7,0",
                   "node 0 is in group 0 and in group 3");
    expect_refusal("hcm8", "auto", "0,1,1+2,3,4,5,6,7",
                   "node 1 is twice in group 0");
    expect_refusal("hcm8", "auto", "0,4+1,9", "'9' in group 1 is not a node");
    expect_refusal("hcm8", "auto", "0,4+1,-1", "'-1' in group 1");
    expect_refusal("hcm8", "auto", "0,x", "'x' in group 0");
    expect_refusal("hcm8", "auto", "0,4++1", "group 1 has an empty entry");
    expect_refusal("hcm8", "auto", "0,4+", "group 1 has an empty entry");
    expect_refusal("hcm8", "auto", ",0", "group 0 has an empty entry");
    expect_refusal("hcm8", "auto", "0,,4", "group 0 has an empty entry");
    expect_refusal("hcm8", "auto",
                   "0,1,2,3,4,5,6,7,8888888888888888888888888888888888",
                   "is not a node");
    /* hcm8 takes claim 6's groups wherever they are, and no others. */
    expect_refusal("hcm8", "hcm8", "0,5+1,4+2,6+3,7",
                   "nodes 0 and 5 are not joined by a double link");
    expect_refusal("hcm8", "hcm8", "0,2+1,3+4,5+6,7",
                   "nodes 0 and 2 are not joined by a double link");
    expect_refusal("hcm8", "hcm8", "0,1,4,5+2,3,6,7",
                   "its nodes are not one subset");
    expect_refusal("hcm8", "hcm8", "0,1,2+3,4,5,6,7", "it has 3 nodes");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lists_rank_order),
        cmocka_unit_test(test_hcm8_counterpart_pairs),
        cmocka_unit_test(test_list_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
