/* Rings: every named strategy on the sizes it supports, the verifier
 * against hand-broken embeddings, figures, and auto against the rest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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
                              const char *groups, int replica)
{
    mrc_embed_config_t cfg = {
        .strategy = strategy, .groups = groups, .replica_size = replica};
    mrc_embedding_t *e = NULL;
    mrc_status_t st = mrc_embed_create(t, &cfg, &e);
    if (st != MRC_OK)
        fail_msg("%s on %s: %s", strategy, mrc_topo_name(t), mrc_last_error());
    assert_int_equal(mrc_embed_verify(e), MRC_OK);
    return e;
}

static double efficiency(const mrc_embedding_t *e)
{
    mrc_embed_figures_t f;
    assert_int_equal(mrc_embed_figures(e, &f), MRC_OK);
    return f.efficiency;
}

/* Every hop step leaves by a port that leads to the next node of its
 * route, and each ring visits its group once (the verifier checks this
 * too; this test checks the verifier's output independently). */
static void check_rings(const mrc_embedding_t *e)
{
    const mrc_topo_t *t = mrc_embed_topology(e);
    for (int g = 0; g < mrc_embed_num_groups(e); g++) {
        const int *nodes;
        int n = mrc_embed_group_nodes(e, g, &nodes);
        double shares = 0;
        for (int r = 0; r < mrc_embed_num_rings(e, g); r++) {
            const mrc_ring_t *ring = mrc_embed_ring(e, g, r);
            assert_int_equal(ring->size, n);
            shares += ring->share;
            for (int i = 0; i < ring->size; i++) {
                const mrc_hop_t *h = &ring->hops[i];
                assert_int_equal(h->from, ring->nodes[i]);
                assert_int_equal(h->to, ring->nodes[(i + 1) % n]);
                for (int s = 0; s + 1 < h->route_len; s++) {
                    int peer = -1, pp = -1;
                    assert_int_equal(mrc_topo_port(t, h->route[s], h->ports[s],
                                                   NULL, &peer, &pp),
                                     MRC_OK);
                    assert_int_equal(peer, h->route[s + 1]);
                    assert_int_equal(pp, h->in_ports[s]);
                }
            }
            for (int a = 0; a < n; a++)
                for (int b = a + 1; b < n; b++)
                    assert_int_not_equal(ring->nodes[a], ring->nodes[b]);
        }
        if (n > 1)
            assert_true(fabs(shares - 1) < 1e-9);
    }
}

static void expect_refusal(const char *spec, const char *strategy,
                           const char *groups, int replica, const char *says)
{
    mrc_topo_t *t = topo(spec);
    mrc_embed_config_t cfg = {
        .strategy = strategy, .groups = groups, .replica_size = replica};
    mrc_embedding_t *e = (mrc_embedding_t *)(uintptr_t)1;
    mrc_status_t st = mrc_embed_create(t, &cfg, &e);
    if (st == MRC_OK || !strstr(mrc_last_error(), says))
        fail_msg("%s on %s: status %d, '%s' (wanted '%s')", strategy, spec, st,
                 mrc_last_error(), says);
    assert_null(e);
    mrc_topo_destroy(t);
}

static void test_ring_strategy(void **state)
{
    (void)state;
    for (int n = 2; n <= 16; n++) {
        char spec[32];
        snprintf(spec, sizeof spec, "ring:%d", n);
        mrc_topo_t *t = topo(spec);
        mrc_embedding_t *e = embed(t, "ring", NULL, 0);
        assert_int_equal(mrc_embed_num_rings(e, 0), 1);
        assert_true(mrc_embed_ring(e, 0, 0)->bidirectional);
        assert_true(fabs(efficiency(e) - 1) < 1e-12);
        assert_int_equal(mrc_embed_num_idle(e), 0);
        check_rings(e);
        mrc_embed_destroy(e);
        mrc_topo_destroy(t);
    }
    /* Off a ring, hops that have no link are routed. */
    mrc_topo_t *t = topo("ladder:8");
    mrc_embedding_t *e = embed(t, "ring", NULL, 0);
    const mrc_ring_t *ring = mrc_embed_ring(e, 0, 0);
    assert_int_equal(ring->hops[1].route_len, 3); /* 1 -> 2 via 0 or 3 */
    check_rings(e);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
}

static void test_gcl_strategies(void **state)
{
    (void)state;
    for (int n = 4; n <= 64; n += 2) {
        char mesh[32], torus[32];
        snprintf(mesh, sizeof mesh, "ladder:%d", n);
        snprintf(torus, sizeof torus, "torus-ladder:%d", n);
        mrc_topo_t *m = topo(mesh), *t = topo(torus);

        mrc_embedding_t *e = embed(m, "peripheral-ring", NULL, 0);
        const mrc_ring_t *ring = mrc_embed_ring(e, 0, 0);
        assert_int_equal(ring->nodes[1], 1);
        assert_int_equal(ring->nodes[2], 3);
        assert_int_equal(ring->nodes[n - 1], 2);
        /* On the mesh the corners set the bound, and one ring meets it. */
        assert_true(fabs(efficiency(e) - 1) < 1e-12);
        check_rings(e);
        mrc_embed_destroy(e);
        e = embed(t, "peripheral-ring", NULL, 0);
        assert_true(fabs(efficiency(e) - 2.0 / 3) < 1e-12);
        mrc_embed_destroy(e);

        if (n % 4 == 0) {
            e = embed(t, "barley-twist", NULL, 0);
            assert_int_equal(mrc_embed_num_rings(e, 0), 2);
            assert_int_equal(mrc_embed_num_idle(e), 0);
            check_rings(e);
            mrc_embed_destroy(e);
        }

        e = embed(m, "ring-on-line", NULL, 0);
        assert_int_equal(mrc_embed_num_groups(e), 2);
        for (int g = 0; g < 2; g++) {
            const int *nodes;
            assert_int_equal(mrc_embed_group_nodes(e, g, &nodes), n / 2);
            for (int k = 0; k < n / 2; k++)
                assert_int_equal(nodes[k], 2 * k + g);
            /* Up the odd ranks, down the even ones: every hop but the two
             * turns skips one node and is forwarded through it. */
            ring = mrc_embed_ring(e, g, 0);
            int routed = 0;
            for (int i = 0; i < ring->size; i++) {
                assert_true(ring->hops[i].route_len <= 3);
                routed += ring->hops[i].route_len == 3;
            }
            assert_int_equal(routed, n / 2 > 2 ? n / 2 - 2 : 0);
        }
        check_rings(e);
        mrc_embed_destroy(e);

        e = embed(t, "rung-ring-2", NULL, 0);
        assert_int_equal(mrc_embed_num_groups(e), 2);
        assert_int_equal(mrc_embed_num_idle(e), 2 * n / 2); /* rungs */
        check_rings(e);
        mrc_embed_destroy(e);

        for (int R = 4; R <= 8; R *= 2) {
            char name[16];
            snprintf(name, sizeof name, "rung-ring-%d", R);
            if (n % R != 0 || n / R < 2)
                continue;
            for (int which = 0; which < 2; which++) {
                e = embed(which ? t : m, name, NULL, 0);
                assert_int_equal(mrc_embed_num_groups(e), R);
                const mrc_ring_t *r0 = mrc_embed_ring(e, 0, 0);
                assert_int_equal(r0->hops[0].route_len, R / 2 + 1);
                check_rings(e);
                mrc_embed_destroy(e);
            }
        }
        mrc_topo_destroy(m);
        mrc_topo_destroy(t);
    }
}

static void test_prism_faces(void **state)
{
    (void)state;
    for (int L = 3; L <= 10; L++) { /* (claim 1: an intermediate layer) */
        char spec[32];
        snprintf(spec, sizeof spec, "prism:3,%d", L);
        mrc_topo_t *t = topo(spec);
        mrc_embedding_t *e = embed(t, "prism-faces", NULL, 0);
        assert_int_equal(mrc_embed_num_rings(e, 0), 3);
        for (int r = 0; r < 3; r++) {
            const mrc_ring_t *ring = mrc_embed_ring(e, 0, r);
            assert_true(ring->bidirectional);
            /* The snake starts on face r, the return is the edge r+2. */
            assert_int_equal(ring->nodes[0], r);
            assert_int_equal(ring->nodes[1], (r + 1) % 3);
            assert_int_equal(ring->nodes[3 * L - 1], (r + 2) % 3);
            for (int i = 0; i < 3 * L; i++) /* every hop a direct link */
                assert_int_equal(ring->hops[i].route_len, 2);
        }
        /* Each ring crosses every layer cut twice; with three links per
         * cut that caps ring allreduce at half the node bound. */
        assert_true(fabs(efficiency(e) - 0.5) < 1e-12);
        check_rings(e);
        mrc_embed_destroy(e);
        mrc_topo_destroy(t);
    }
}

static void test_hcm8(void **state)
{
    (void)state;
    mrc_topo_t *t = topo("hcm8");
    mrc_embedding_t *e = embed(t, "hcm8", NULL, 0);
    assert_int_equal(mrc_embed_num_rings(e, 0), 3);
    assert_true(fabs(efficiency(e) - 6.0 / 7) < 1e-12);
    mrc_embed_figures_t f;
    mrc_embed_figures(e, &f);
    assert_true(fabs(f.bound_gbps - 224.0 * 8 / 14) < 1e-9);
    /* The three rings share no physical link: no port serves two hops. */
    int used[8][7] = {{0}};
    for (int r = 0; r < 3; r++) {
        const mrc_ring_t *ring = mrc_embed_ring(e, 0, r);
        for (int i = 0; i < 8; i++) {
            const mrc_hop_t *h = &ring->hops[i];
            assert_int_equal(h->route_len, 2);
            assert_int_equal(used[h->from][h->ports[0]]++, 0);
            assert_int_equal(used[h->to][h->in_ports[0]]++, 0);
        }
    }
    check_rings(e);
    mrc_embed_destroy(e);

    static const struct {
        const char *groups;
        int num_groups;
        int rings[4];
    } configs[] = {{"8", 1, {3}},
                   {"4+4", 2, {2, 2}},
                   {"2+2+2+2", 4, {1, 1, 1, 1}},
                   {"4+2+2", 3, {2, 1, 1}}};
    for (int c = 0; c < 4; c++) {
        e = embed(t, "hcm8", configs[c].groups, 0);
        assert_int_equal(mrc_embed_num_groups(e), configs[c].num_groups);
        for (int g = 0; g < configs[c].num_groups; g++)
            assert_int_equal(mrc_embed_num_rings(e, g), configs[c].rings[g]);
        check_rings(e);
        mrc_embed_destroy(e);
    }
    mrc_topo_destroy(t);
}

static void test_refusals(void **state)
{
    (void)state;
    expect_refusal("ladder:8", "barley-twist", NULL, 0, "needs GCL's torus");
    expect_refusal("prism-torus:3,4", "prism-faces", NULL, 0,
                   "needs two endmost layers");
    expect_refusal("torus-ladder:6", "barley-twist", NULL, 0, "divisible by 4");
    expect_refusal("torus-ladder:12", "prism-faces", NULL, 0,
                   "needs a triangular prism");
    expect_refusal("prism:4,3", "prism-faces", NULL, 0, "prism:3,L");
    /* Claim 1's intermediate layer; GCL's ring-on-line is for the mesh. */
    expect_refusal("prism:3,2", "prism-faces", NULL, 0,
                   "needs an intermediate layer");
    expect_refusal("torus-ladder:8", "ring-on-line", NULL, 2,
                   "use rung-ring-2");
    expect_refusal("ring:8", "hcm8", NULL, 0, "8-processor hybrid mesh");
    expect_refusal("hcm8", "hcm8", "3+5", 0, "8, 4+4, 2+2+2+2 or 4+2+2");
    expect_refusal("ladder:8", "rung-ring-2", NULL, 0, "torus");
    expect_refusal("ladder:8", "rung-ring-8", NULL, 0, "at least 16");
    expect_refusal("ladder:12", "rung-ring-8", NULL, 0, "multiple of 8");
    expect_refusal("ring:8", "peripheral-ring", NULL, 0, "ladder");
    expect_refusal("ring:8", "ring", NULL, 3,
                   "replica size 3 does not "
                   "divide the 8 nodes");
    expect_refusal("ladder:8", "peripheral-ring", NULL, 2,
                   "replica size 1, not 2");
    expect_refusal("ladder:8", "ring-on-line", "4+4", 0, "--replica-size");
    expect_refusal("ring:8", "nosuch", NULL, 0, "unknown strategy 'nosuch'");
    expect_refusal("ring:8", "ring", "4+3", 0, "cover 7 of the topology's 8");
    expect_refusal("ring:8", "ring", "4+5", 0, "need more than");
    expect_refusal("ring:8", "ring", "4+x", 0, "not a group size");
    expect_refusal("ring:8", "ring", "4++4", 0, "sizes joined by '+'");
    expect_refusal("ring:8", "auto", "2+2", 2, "not both");
}

static void test_groups_and_replicas(void **state)
{
    (void)state;
    mrc_topo_t *t = topo("ring:12");
    mrc_embedding_t *e = embed(t, "ring", "5+1+6", 0);
    assert_int_equal(mrc_embed_num_groups(e), 3);
    assert_int_equal(mrc_embed_num_rings(e, 1), 0); /* one node: no ring */
    assert_int_equal(mrc_embed_node_group(e, 5), 1);
    assert_int_equal(mrc_embed_node_group(e, 11), 2);
    mrc_embed_figures_t f;
    assert_int_equal(mrc_embed_group_figures(e, 1, &f), MRC_OK);
    assert_true(f.efficiency == 1 && f.algbw_gbps == 0);
    check_rings(e);
    mrc_embed_destroy(e);

    e = embed(t, "ring", NULL, 3);
    assert_int_equal(mrc_embed_num_groups(e), 3);
    const int *nodes;
    assert_int_equal(mrc_embed_group_nodes(e, 1, &nodes), 4);
    assert_int_equal(nodes[0], 1);
    assert_int_equal(nodes[3], 10);
    check_rings(e);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
}

/* ---- the verifier, through hand-written (and hand-broken) files ------ */

static mrc_status_t parse(const mrc_topo_t *t, const char *groups_json,
                          mrc_embedding_t **e)
{
    char text[4096];
    snprintf(text, sizeof text, "{\"groups\": %s}", groups_json);
    return mrc_embed_parse_json(t, text, strlen(text), "rings.json", e);
}

static void expect_broken(const mrc_topo_t *t, const char *groups_json,
                          const char *says)
{
    mrc_embedding_t *e = (mrc_embedding_t *)(uintptr_t)1;
    mrc_status_t st = parse(t, groups_json, &e);
    if (st == MRC_OK || !strstr(mrc_last_error(), says) ||
        strncmp(mrc_last_error(), "rings.json", 10) != 0)
        fail_msg("%s: status %d, '%s' (wanted '%s')", groups_json, st,
                 mrc_last_error(), says);
    assert_null(e);
}

static void test_verifier(void **state)
{
    (void)state;
    mrc_topo_t *t = topo("ring:4");
    mrc_embedding_t *e = NULL;
    assert_int_equal(parse(t,
                           "[{\"nodes\": [0,1,2,3], \"rings\": "
                           "[{\"nodes\": [0,1,2,3]}]}]",
                           &e),
                     MRC_OK);
    assert_true(fabs(efficiency(e) - 1) < 1e-12);
    mrc_embed_destroy(e);
    /* A routed hop written out in full. */
    assert_int_equal(parse(t,
                           "[{\"nodes\": [0,1,2,3], \"rings\": [{\"nodes\": "
                           "[0,2,1,3], \"bidirectional\": false, "
                           "\"hops\": [{\"route\": [0,1,2]}, {}, "
                           "{\"route\": [1,2,3]}, {}]}]}]",
                           &e),
                     MRC_OK);
    mrc_embed_destroy(e);

    expect_broken(t,
                  "[{\"nodes\": [0,1,2,3], \"rings\": [{\"nodes\": "
                  "[0,1,1,3]}]}]",
                  "group 0, ring 0: visits node 1 twice");
    expect_broken(t,
                  "[{\"nodes\": [0,1,2,3], \"rings\": [{\"nodes\": "
                  "[0,1,2]}]}]",
                  "group 0, ring 0: visits 3 nodes but its group has 4");
    expect_broken(t,
                  "[{\"nodes\": [0,1,2,3], \"rings\": [{\"nodes\": "
                  "[0,2,1,3]}]}]",
                  "group 0, ring 0, hop 0: no link joins nodes 0 and 2");
    expect_broken(t,
                  "[{\"nodes\": [0,1,2,3], \"rings\": [{\"nodes\": "
                  "[0,1,2,3], \"hops\": [{\"route\": [0,3,2]}, {}, {}, "
                  "{}]}]}]",
                  "group 0, ring 0, hop 0: route must lead from node 0 to "
                  "node 1");
    expect_broken(t,
                  "[{\"nodes\": [0,1,2,3], \"rings\": [{\"nodes\": "
                  "[0,1,2,3], \"hops\": [{\"route\": [0,1,0,1]}, {}, {}, "
                  "{}]}]}]",
                  "route passes node 0 twice");
    expect_broken(t,
                  "[{\"nodes\": [0,1,2,3], \"rings\": [{\"nodes\": "
                  "[0,1,2,3], \"hops\": [{\"from\": 1}, {}, {}, {}]}]}]",
                  "hop 0: must go from node 0 to node 1");
    expect_broken(t,
                  "[{\"nodes\": [0,1,2,3], \"rings\": [{\"nodes\": "
                  "[0,1,2,3], \"hops\": [{}, {}]}]}]",
                  "array of 4 hops");
    expect_broken(t,
                  "[{\"nodes\": [0,1], \"rings\": [{\"nodes\": [0,1]}]}, "
                  "{\"nodes\": [1,2,3], \"rings\": [{\"nodes\": [1,2,3], "
                  "\"hops\": [{}, {}, {\"route\": [3,0,1]}]}]}]",
                  "group 1: node 1 is already in group 0");
    expect_broken(t,
                  "[{\"nodes\": [0,1,2,9], \"rings\": [{\"nodes\": "
                  "[0,1,2,9]}]}]",
                  "group 0: names node 9 (nodes are 0..3)");
    expect_broken(t,
                  "[{\"nodes\": [0,1,2,3], \"rings\": [{\"nodes\": "
                  "[0,1,2,3], \"share\": 0.5}]}]",
                  "group 0: ring shares sum to 0.5, not 1");
    expect_broken(t,
                  "[{\"nodes\": [0,1,2,3], \"rings\": [{\"nodes\": "
                  "[0,1,2,3], \"share\": 0}, {\"nodes\": [0,1,2,3]}]}]",
                  "group 0, ring 0: share 0 must be in (0, 1]");
    expect_broken(t, "[{\"nodes\": [0,1,2,3]}]", "group 0: has no ring");
    expect_broken(t,
                  "[{\"nodes\": [0,1,2,3], \"rings\": [{\"nodes\": "
                  "[0,1,2,3], \"hops\": [{\"route\": [0,1], \"links\": "
                  "[2]}, {}, {}, {}]}]}]",
                  "link entry 2 does not join nodes 0 and 1");
    expect_broken(t,
                  "[{\"nodes\": [0,1,2,3], \"rings\": [{\"nodes\": "
                  "[0,1,2,3], \"bidirectional\": 1}]}]",
                  "\"bidirectional\" must be true or false");
    expect_broken(t, "[]", "\"groups\" must be a non-empty array");
    expect_broken(t, "[{\"nodes\": \"all\"}]", "must be an array of node ids");
    mrc_embedding_t *x = NULL;
    assert_int_equal(
        mrc_embed_parse_json(t, "{\"groups\": [", 12, "r.json", &x),
        MRC_ERR_PARSE);
    assert_non_null(strstr(mrc_last_error(), "r.json:1:"));
    mrc_topo_destroy(t);
}

static void test_json_round_trip(void **state)
{
    (void)state;
    const char *specs[] = {"hcm8", "torus-ladder:8", "ladder:8", "prism:3,3"};
    const char *strategies[] = {"hcm8", "barley-twist", "ring-on-line",
                                "prism-faces"};
    for (int i = 0; i < 4; i++) {
        mrc_topo_t *t = topo(specs[i]);
        mrc_embedding_t *e = embed(t, strategies[i], NULL, 0), *back = NULL;
        char *json = NULL;
        assert_int_equal(mrc_embed_to_json(e, &json), MRC_OK);
        /* Valid JSON with the documented keys. */
        json_error_t err;
        json_t *root = json_loads(json, 0, &err);
        assert_non_null(root);
        assert_true(json_is_object(json_object_get(root, "topology")));
        assert_true(json_is_number(json_object_get(root, "efficiency")));
        json_t *g0 = json_array_get(json_object_get(root, "groups"), 0);
        json_t *r0 = json_array_get(json_object_get(g0, "rings"), 0);
        assert_true(json_is_boolean(json_object_get(r0, "bidirectional")));
        assert_true(json_is_number(json_object_get(r0, "share")));
        json_t *h0 = json_array_get(json_object_get(r0, "hops"), 0);
        assert_true(json_is_array(json_object_get(h0, "route")));
        assert_true(json_is_integer(json_object_get(h0, "from")));
        json_decref(root);
        /* Read back: the same rings, the same figures. */
        assert_int_equal(
            mrc_embed_parse_json(t, json, strlen(json), "rt", &back), MRC_OK);
        assert_true(fabs(efficiency(back) - efficiency(e)) < 1e-12);
        for (int l = 0; l < mrc_topo_num_links(t); l++)
            for (int d = 0; d < 2; d++)
                assert_true(fabs(mrc_embed_link_load(back, l, d) -
                                 mrc_embed_link_load(e, l, d)) < 1e-12);
        mrc_free(json);
        char *dot = NULL;
        assert_int_equal(mrc_embed_to_dot(e, &dot), MRC_OK);
        assert_non_null(strstr(dot, "#d62728")); /* ring 0's colour */
        mrc_free(dot);
        mrc_embed_destroy(e);
        mrc_embed_destroy(back);
        mrc_topo_destroy(t);
    }
}

/* ---- auto -------------------------------------------------------------- */

static void test_auto_beats_named(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *strategy, *groups;
        int replica;
    } cases[] = {
        {"hcm8", "hcm8", NULL, 0},
        {"hcm8", "hcm8", "4+4", 0},
        {"hcm8", "hcm8", "2+2+2+2", 0},
        {"hcm8", "hcm8", "4+2+2", 0},
        {"ladder:8", "peripheral-ring", NULL, 0},
        {"torus-ladder:8", "barley-twist", NULL, 0},
        {"torus-ladder:16", "barley-twist", NULL, 0},
        {"ladder:12", "ring-on-line", NULL, 2},
        {"torus-ladder:12", "rung-ring-2", NULL, 2},
        {"ladder:16", "rung-ring-4", NULL, 4},
        {"torus-ladder:16", "rung-ring-8", NULL, 8},
        {"prism:3,4", "prism-faces", NULL, 0},
        {"ring:9", "ring", NULL, 0},
        {"torus2d:4,4", "ring", NULL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mrc_topo_t *t = topo(cases[i].spec);
        mrc_embedding_t *named =
            embed(t, cases[i].strategy, cases[i].groups, cases[i].replica);
        mrc_embedding_t *a =
            embed(t, "auto", cases[i].groups, cases[i].replica);
        check_rings(a);
        if (efficiency(a) < efficiency(named) - 1e-9)
            fail_msg("auto %.6f < %s %.6f on %s", efficiency(a),
                     cases[i].strategy, efficiency(named), cases[i].spec);
        mrc_embed_destroy(named);
        mrc_embed_destroy(a);
        mrc_topo_destroy(t);
    }
    /* Where the optimum is known. */
    const char *bound_reached[] = {
        "hcm8",        "torus-ladder:8", "torus2d:3,5", "torus2d:32,32",
        "ladder:1024", "torus2d:16,64",  "full:5"};
    for (int i = 0; i < 7; i++) {
        mrc_topo_t *t = topo(bound_reached[i]);
        mrc_embedding_t *a = embed(t, "auto", NULL, 0);
        if (fabs(efficiency(a) - 1) > 1e-9)
            fail_msg("auto on %s: efficiency %.6f, expected 1",
                     bound_reached[i], efficiency(a));
        mrc_embed_destroy(a);
        mrc_topo_destroy(t);
    }
}

static uint64_t rng = 88172645463325252ull;

static int below(int n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int)(rng % (uint64_t)n);
}

/* Random connected multigraphs: a random tree plus extra links, random
 * counts and bandwidths, random groups. */
static void test_auto_random_multigraphs(void **state)
{
    (void)state;
    int better = 0;
    for (int trial = 0; trial < 120; trial++) {
        int n = 2 + below(8), m = 0;
        mrc_link_t links[64];
        for (int v = 1; v < n; v++)
            links[m++] = (mrc_link_t){
                below(v), v, 1 + below(2), (double)(10 * (1 + below(4))), 100,
                0,        0};
        int extra = below(2 * n);
        for (int k = 0; k < extra && m < 64; k++) {
            int a = below(n), b = below(n);
            if (a != b)
                links[m++] = (mrc_link_t){
                    a, b, 1 + below(3), (double)(10 * (1 + below(4))), 50,
                    0, 0};
        }
        mrc_topo_t *t = NULL;
        assert_int_equal(mrc_topo_from_links(n, links, m, &t), MRC_OK);
        char groups[64] = "";
        if (n >= 4 && below(2)) {
            int a = 2 + below(n - 3);
            snprintf(groups, sizeof groups, "%d+%d", a, n - a);
        }
        const char *g = groups[0] ? groups : NULL;
        mrc_embedding_t *base = embed(t, "ring", g, 0);
        mrc_embedding_t *a = embed(t, "auto", g, 0);
        check_rings(a);
        if (efficiency(a) < efficiency(base) - 1e-9)
            fail_msg("trial %d: auto %.6f < ring %.6f", trial, efficiency(a),
                     efficiency(base));
        better += efficiency(a) > efficiency(base) + 1e-9;
        mrc_embed_destroy(base);
        mrc_embed_destroy(a);
        mrc_topo_destroy(t);
    }
    assert_true(better > 0); /* the search is doing something */
}

static void test_auto_large(void **state)
{
    (void)state;
    /* Constructions: two Hamiltonian rings of a torus reach the bound, the
     * peripheral ring on a mesh too, the twist-and-rotations mix on GCL's
     * torus (2/3)(22/15); the prism's layer cuts cap it at 1/2. */
    static const struct {
        const char *spec;
        double eff;
    } cases[] = {{"torus2d:32,32", 1},
                 {"torus2d:31,33", 1},
                 {"ladder:1024", 1},
                 {"ring:1024", 1},
                 {"torus-ladder:1024", 44.0 / 45},
                 {"prism:3,200", 0.5}};
    for (int i = 0; i < 6; i++) {
        mrc_topo_t *t = topo(cases[i].spec);
        mrc_embedding_t *a = embed(t, "auto", NULL, 0);
        if (fabs(efficiency(a) - cases[i].eff) > 1e-9)
            fail_msg("auto on %s: efficiency %.6f, expected %.6f",
                     cases[i].spec, efficiency(a), cases[i].eff);
        mrc_embed_destroy(a);
        mrc_topo_destroy(t);
    }
}

static void test_strategy_names(void **state)
{
    (void)state;
    mrc_topo_t *t = topo("ring:4");
    int n = 0;
    for (const char *const *s = mrc_embed_strategies(); *s; s++, n++) {
        mrc_embed_config_t cfg = {.strategy = *s};
        mrc_embedding_t *e = NULL;
        mrc_status_t st = mrc_embed_create(t, &cfg, &e);
        /* Known: it either embeds or says it does not apply. */
        assert_true(st == MRC_OK || st == MRC_ERR_NOT_APPLICABLE);
        mrc_embed_destroy(e);
    }
    assert_int_equal(n, 10);
    mrc_topo_destroy(t);
}

/* Physical links and ports no hop uses (issue 14, item 4): a link entry
 * of count c is c physical links, and idle directions count entries. */
static long sum_idle_ports(const mrc_embedding_t *e)
{
    long sum = 0;
    const mrc_topo_t *t = mrc_embed_topology(e);
    for (int u = 0; u < mrc_topo_num_nodes(t); u++) {
        int k = mrc_embed_idle_ports(e, u);
        assert_in_range(k, 0, mrc_topo_num_ports(t, u));
        sum += k;
    }
    return sum;
}

static void test_idle_physical_links(void **state)
{
    (void)state;
    /* prism-faces on prism:3,4: every direction busy, but the face rings
     * put two hops on each endmost neighbour pair (3 links) and one on
     * each intermediate pair (2 links): 6 + 6 physical links idle, two
     * ports at every node. */
    mrc_topo_t *t = topo("prism:3,4");
    mrc_embedding_t *e = embed(t, "prism-faces", NULL, 0);
    assert_int_equal(mrc_embed_num_idle(e), 0);
    assert_int_equal(mrc_embed_num_idle_physical(e), 12);
    assert_int_equal(sum_idle_ports(e), 24);
    for (int u = 0; u < 12; u++)
        assert_int_equal(mrc_embed_idle_ports(e, u), 2);
    assert_int_equal(mrc_embed_idle_ports(e, 12), -1);
    assert_int_equal(mrc_embed_idle_ports(e, -1), -1);
    assert_int_equal(mrc_embed_num_idle_physical(NULL), -1);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);

    /* Seed 004's three rings leave one of each node's 7 ports idle. */
    t = topo("hcm8");
    e = embed(t, "hcm8", NULL, 0);
    assert_int_equal(mrc_embed_num_idle_physical(e), 4);
    for (int u = 0; u < 8; u++)
        assert_int_equal(mrc_embed_idle_ports(e, u), 1);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);

    /* A ring on a ring: nothing idle. The ring in index order on ladder:8
     * leaves rungs idle, and idle ports are twice the idle links. */
    t = topo("ring:6");
    e = embed(t, "ring", NULL, 0);
    assert_int_equal(mrc_embed_num_idle_physical(e), 0);
    assert_int_equal(sum_idle_ports(e), 0);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
    t = topo("ladder:8");
    e = embed(t, "ring-on-line", NULL, 0);
    assert_int_equal(mrc_embed_num_idle_physical(e), 4); /* the rungs */
    assert_int_equal(sum_idle_ports(e), 8);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
}

/* GCL's eight IPU-Links: barley-twist reaches the bound, and its rings,
 * repeated to cover the parallel links, leave none of them idle; with one
 * link per class it is GCL's two rings at 2/3. */
static void test_barley_twist_gcl_links(void **state)
{
    (void)state;
    const char *specs[] = {"gcl-torus:4", "gcl-torus:8", "gcl-torus:16",
                           "torus-ladder:8,rung=4,column=2",
                           "torus-ladder:8,rung=2,column=1"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        mrc_topo_t *t = topo(specs[i]);
        mrc_embedding_t *e = embed(t, "barley-twist", NULL, 0);
        if (fabs(efficiency(e) - 1) > 1e-12)
            fail_msg("%s: efficiency %.6f", specs[i], efficiency(e));
        assert_int_equal(mrc_embed_num_idle_physical(e), 0);
        assert_int_equal(mrc_embed_num_rings(e, 0), i < 4 ? 4 : 2);
        check_rings(e);
        mrc_embed_destroy(e);
        mrc_topo_destroy(t);
    }
    mrc_topo_t *t = topo("torus-ladder:8");
    mrc_embedding_t *e = embed(t, "barley-twist", NULL, 0);
    assert_true(fabs(efficiency(e) - 2.0 / 3) < 1e-12);
    assert_int_equal(mrc_embed_num_rings(e, 0), 2);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);

    /* Columns oversupplied: the rungs set the pace. */
    t = topo("torus-ladder:8,rung=2,column=3");
    e = embed(t, "barley-twist", NULL, 0);
    assert_true(fabs(efficiency(e) - 0.5) < 1e-12);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
}

/* Claim 1's "at least one" interlayer link: with two, prism-faces' face
 * rings are held by the interlayer edges less (0.75); with three the
 * bound is met. */
static void test_prism_interlayer_counts(void **state)
{
    (void)state;
    const struct {
        const char *spec;
        double eff;
    } cases[] = {{"prism:3,4", 0.5},
                 {"prism:3,4,inter=2", 0.75},
                 {"prism:3,4,inter=3", 1.0},
                 {"prism:3,4,inter=2,end=2", 1.0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        mrc_topo_t *t = topo(cases[i].spec);
        mrc_embedding_t *e = embed(t, "prism-faces", NULL, 0);
        if (fabs(efficiency(e) - cases[i].eff) > 1e-12)
            fail_msg("%s: efficiency %.6f, wanted %.6f", cases[i].spec,
                     efficiency(e), cases[i].eff);
        mrc_embed_destroy(e);
        mrc_topo_destroy(t);
    }
    /* The toroidal stack has no endmost layer: auto embeds it. */
    mrc_topo_t *t = topo("prism-torus:3,4");
    mrc_embedding_t *e = embed(t, "auto", NULL, 0);
    assert_true(efficiency(e) > 0.99);
    check_rings(e);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
}

/* Topologies whose optimum is known in closed form reach it without the
 * search: a ring and a line as one ring, a 2D torus as two link-disjoint
 * Hamiltonian rings, hcm8 as seven rings that keep every link busy. */
static void test_auto_closed_forms(void **state)
{
    (void)state;
    const struct {
        const char *spec, *method;
    } cases[] = {{"ring:8", "ring"},
                 {"ring:65536", "ring"},
                 {"line:9", "ring"},
                 {"torus2d:4,4", "torus construction"},
                 {"torus2d:5,6", "torus construction"},
                 {"torus2d:256,256", "torus construction"},
                 {"hcm8", "hcm8 construction"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mrc_topo_t *t = topo(cases[i].spec);
        mrc_embedding_t *e = embed(t, "auto", NULL, 0);
        char *text = NULL;
        assert_int_equal(mrc_embed_to_json(e, &text), MRC_OK);
        json_t *doc = json_loads(text, 0, NULL);
        assert_non_null(doc);
        const char *method = json_string_value(json_object_get(doc, "method"));
        if (!method || strcmp(method, cases[i].method) != 0)
            fail_msg("%s: found by %s, not %s", cases[i].spec,
                     method ? method : "(none)", cases[i].method);
        json_decref(doc);
        mrc_free(text);
        assert_true(efficiency(e) > 1 - 1e-9);
        mrc_embed_destroy(e);
        mrc_topo_destroy(t);
    }
}

/* Every strategy says what it does (the CLI's help prints the library's
 * one list), each in a few short lines; an unknown name has nothing. */
static void test_strategy_about(void **state)
{
    (void)state;
    int n = 0;
    for (const char *const *s = mrc_embed_strategies(); *s; s++, n++) {
        const char *about = mrc_embed_strategy_about(*s);
        if (!about || !*about)
            fail_msg("strategy %s says nothing of itself", *s);
        for (const char *line = about; line;) {
            const char *end = strchr(line, '\n');
            size_t len = end ? (size_t)(end - line) : strlen(line);
            if (len == 0 || len > 60)
                fail_msg("strategy %s: a line of %zu characters", *s, len);
            line = end ? end + 1 : NULL;
        }
    }
    assert_int_equal(n, 10);
    assert_null(mrc_embed_strategy_about("twist"));
    assert_null(mrc_embed_strategy_about(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_strategy),
        cmocka_unit_test(test_strategy_about),
        cmocka_unit_test(test_gcl_strategies),
        cmocka_unit_test(test_prism_faces),
        cmocka_unit_test(test_hcm8),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_groups_and_replicas),
        cmocka_unit_test(test_verifier),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_auto_beats_named),
        cmocka_unit_test(test_auto_random_multigraphs),
        cmocka_unit_test(test_auto_large),
        cmocka_unit_test(test_strategy_names),
        cmocka_unit_test(test_idle_physical_links),
        cmocka_unit_test(test_barley_twist_gcl_links),
        cmocka_unit_test(test_prism_interlayer_counts),
        cmocka_unit_test(test_auto_closed_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
