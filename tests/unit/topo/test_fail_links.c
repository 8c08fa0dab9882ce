/* Failed links: mrc_topo_fail_links and its refusals, and what the
 * strategies make of a topology that lost links (seed 004's hcm8 losing
 * one of a double link, a link hcm8 needs, a link nothing needs). */
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

static mrc_topo_t *without(const mrc_topo_t *t, const char *links)
{
    mrc_topo_t *r = NULL;
    if (mrc_topo_fail_links(t, links, &r) != MRC_OK)
        fail_msg("%s without %s: %s", mrc_topo_name(t), links,
                 mrc_last_error());
    return r;
}

static int joining(const mrc_topo_t *t, int u, int v)
{
    int n = 0;
    for (int i = 0; i < mrc_topo_num_links(t); i++) {
        const mrc_link_t *l = mrc_topo_link(t, i);
        if ((l->a == u && l->b == v) || (l->a == v && l->b == u))
            n += l->count;
    }
    return n;
}

static void test_fail_links(void **state)
{
    (void)state;
    mrc_topo_t *t = topo("hcm8");
    assert_ptr_equal(mrc_topo_intact(t), t);
    assert_null(mrc_topo_failed_links(t));

    mrc_topo_t *r = without(t, "0-1:1,6-2");
    assert_int_equal(mrc_topo_num_physical_links(r),
                     mrc_topo_num_physical_links(t) - 3);
    assert_int_equal(joining(r, 0, 1), 1);
    assert_int_equal(joining(r, 2, 6), 0);
    assert_int_equal(joining(r, 4, 5), 2);
    assert_int_equal(mrc_topo_num_ports(r, 0), 6);
    assert_int_equal(mrc_topo_num_ports(r, 3), 7);
    assert_string_equal(mrc_topo_name(r), "hcm8 without 0-1:1,6-2");
    assert_string_equal(mrc_topo_failed_links(r), "0-1:1,6-2");
    const mrc_topo_t *in = mrc_topo_intact(r);
    assert_int_equal(joining(in, 0, 1), 2);
    assert_int_equal(joining(in, 2, 6), 2);

    /* Failing links of a copy fails them of the intact topology. */
    mrc_topo_t *r2 = without(r, "0-1");
    assert_int_equal(joining(r2, 0, 1), 0);
    assert_int_equal(joining(mrc_topo_intact(r2), 0, 1), 2);
    assert_string_equal(mrc_topo_failed_links(r2), "0-1:1,6-2,0-1");
    mrc_topo_destroy(r2);
    mrc_topo_destroy(r);

    /* Items on one pair add up. */
    r = without(t, "0-4:1,4-0:1");
    assert_int_equal(joining(r, 0, 4), 0);
    mrc_topo_destroy(r);
    mrc_topo_destroy(t);
}

static void expect_refusal(const char *spec, const char *links,
                           const char *says)
{
    mrc_topo_t *t = topo(spec);
    mrc_topo_t *r = (mrc_topo_t *)(uintptr_t)1;
    mrc_status_t st = mrc_topo_fail_links(t, links, &r);
    if (st == MRC_OK || !strstr(mrc_last_error(), says))
        fail_msg("%s without '%s': status %d, '%s' (wanted '%s')", spec, links,
                 st, mrc_last_error(), says);
    assert_null(r);
    mrc_topo_destroy(t);
}

static void test_refusals(void **state)
{
    (void)state;
    expect_refusal("hcm8", "0-9", "'9' is not a node of hcm8 (0 to 7)");
    expect_refusal("hcm8", "-1-2", "expected A-B");
    expect_refusal("hcm8", "x-2", "'x' is not a node");
    expect_refusal("hcm8", "0-", "'' is not a node");
    expect_refusal("hcm8", "0", "expected A-B");
    expect_refusal("hcm8", "0:1-2", "expected A-B");
    expect_refusal("hcm8", "3-3", "two different nodes");
    expect_refusal("hcm8", "0-5", "no link joins nodes 0 and 5");
    expect_refusal("hcm8", "0-1:3",
                   "'3' is not a count of links from 1 "
                   "to the 2");
    expect_refusal("hcm8", "0-1:0", "'0' is not a count");
    expect_refusal("hcm8", "0-1:x", "'x' is not a count");
    expect_refusal("hcm8", "0-1,,2-3", "expected A-B");
    expect_refusal("hcm8", "0-1:2,1-0:1",
                   "1 more of the 2 links between "
                   "nodes 1 and 0, of which 2 "
                   "already failed");
    expect_refusal("hcm8", "0-1,0-1",
                   "all 2 links between nodes 0 and 1 "
                   "failed already");
    expect_refusal("ring:8", "0-1,4-5", "disconnected");
    expect_refusal("ring:8", "", "no links");
}

static mrc_status_t embed(const mrc_topo_t *t, const char *strategy,
                          const char *groups, mrc_embed_figures_t *f)
{
    mrc_embed_config_t cfg = {.strategy = strategy, .groups = groups};
    mrc_embedding_t *e = NULL;
    mrc_status_t st = mrc_embed_create(t, &cfg, &e);
    if (st == MRC_OK) {
        assert_int_equal(mrc_embed_verify(e), MRC_OK);
        assert_int_equal(mrc_embed_figures(e, f), MRC_OK);
    }
    mrc_embed_destroy(e);
    return st;
}

/* Named strategies keep their rings while the links they use survive,
 * are refused naming a link they need that failed, and auto re-embeds. */
static void test_strategies_degrade(void **state)
{
    (void)state;
    mrc_topo_t *t = topo("hcm8");
    mrc_embed_figures_t before, after;
    assert_int_equal(embed(t, "hcm8", NULL, &before), MRC_OK);

    /* hcm8's three rings use one of the two links 0-1: losing the
     * other costs nothing but the bound. */
    mrc_topo_t *r = without(t, "0-1:1");
    assert_int_equal(embed(r, "hcm8", NULL, &after), MRC_OK);
    assert_true(fabs(after.algbw_gbps - before.algbw_gbps) < 1e-9);
    assert_true(after.bound_gbps < before.bound_gbps);
    mrc_topo_destroy(r);

    /* 0-2 is a single link that the third ring needs. */
    r = without(t, "0-2");
    assert_int_equal(embed(r, "hcm8", NULL, &after), MRC_ERR_NOT_APPLICABLE);
    assert_non_null(
        strstr(mrc_last_error(), "hcm8 needs the link between nodes 0 and 2"));
    assert_int_equal(embed(r, "auto", NULL, &after), MRC_OK);
    assert_true(after.efficiency > 1 - 1e-9);
    /* ring routes round it by design. */
    assert_int_equal(embed(r, "ring", NULL, &after), MRC_OK);
    /* The counterpart pairs do not use it. */
    assert_int_equal(embed(r, "hcm8", "0,4+1,5+2,6+3,7", &after), MRC_OK);
    mrc_topo_destroy(r);

    /* A counterpart pair that lost one of its two links keeps its ring,
     * at half the bandwidth. */
    assert_int_equal(embed(t, "hcm8", "0,4+1,5+2,6+3,7", &before), MRC_OK);
    r = without(t, "3-7:1");
    assert_int_equal(embed(r, "hcm8", "0,4+1,5+2,6+3,7", &after), MRC_OK);
    assert_true(fabs(after.algbw_gbps - before.algbw_gbps / 2) < 1e-9);
    mrc_topo_destroy(r);
    r = without(t, "3-7");
    assert_int_equal(embed(r, "hcm8", "0,4+1,5+2,6+3,7", &after),
                     MRC_ERR_NOT_APPLICABLE);
    assert_non_null(strstr(mrc_last_error(), "nodes 3 and 7"));
    mrc_topo_destroy(r);
    mrc_topo_destroy(t);

    /* The same topology read from a file (no intact one behind it) is
     * still hcm8: a link it does not need is missing, not its shape. */
    t = topo("hcm8");
    r = without(t, "0-1:1");
    char *json = NULL;
    assert_int_equal(mrc_topo_to_json(r, &json), MRC_OK);
    mrc_topo_t *file = NULL;
    assert_int_equal(mrc_topo_parse_json(json, strlen(json), "f.json", &file),
                     MRC_OK);
    mrc_free(json);
    assert_ptr_equal(mrc_topo_intact(file), file);
    assert_int_equal(embed(file, "hcm8", NULL, &after), MRC_OK);
    assert_int_equal(embed(r, "hcm8", NULL, &before), MRC_OK);
    assert_true(fabs(after.algbw_gbps - before.algbw_gbps) < 1e-9);
    mrc_topo_destroy(file);
    mrc_topo_destroy(r);
    mrc_topo_destroy(t);

    /* GCL: peripheral-ring does not use the inner rungs. */
    t = topo("ladder:8");
    r = without(t, "2-3");
    assert_int_equal(embed(r, "peripheral-ring", NULL, &after), MRC_OK);
    mrc_topo_destroy(r);
    r = without(t, "0-2");
    assert_int_equal(embed(r, "peripheral-ring", NULL, &after),
                     MRC_ERR_NOT_APPLICABLE);
    mrc_topo_destroy(r);
    mrc_topo_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fail_links),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_strategies_degrade),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
