/* Topology generators, ports, queries and the validation of link lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrc/mrc.h"

static mrc_topo_t *make(const char *spec)
{
    mrc_topo_t *t = NULL;
    mrc_status_t st = mrc_topo_generate(spec, &t);
    if (st != MRC_OK)
        fail_msg("%s: %s", spec, mrc_last_error());
    assert_non_null(t);
    return t;
}

/* Physical links between u and v, over all entries. */
static int links_between(const mrc_topo_t *t, int u, int v)
{
    int sum = 0;
    for (int i = 0; i < mrc_topo_num_links(t); i++) {
        const mrc_link_t *l = mrc_topo_link(t, i);
        if ((l->a == u && l->b == v) || (l->a == v && l->b == u))
            sum += l->count;
    }
    return sum;
}

/* Every port leads to a peer port that leads straight back, over the same
 * link entry; ports are numbered densely from 0 at every node. */
static void check_ports(const mrc_topo_t *t)
{
    long total = 0;
    for (int u = 0; u < mrc_topo_num_nodes(t); u++) {
        int np = mrc_topo_num_ports(t, u);
        total += np;
        for (int p = 0; p < np; p++) {
            int link = -1, peer = -1, pp = -1, back = -1, bp = -1, bl = -1;
            assert_int_equal(mrc_topo_port(t, u, p, &link, &peer, &pp), MRC_OK);
            assert_int_not_equal(peer, u);
            assert_int_equal(mrc_topo_port(t, peer, pp, &bl, &back, &bp),
                             MRC_OK);
            assert_int_equal(back, u);
            assert_int_equal(bp, p);
            assert_int_equal(bl, link);
        }
        assert_int_equal(mrc_topo_port(t, u, np, NULL, NULL, NULL),
                         MRC_ERR_INVALID_ARG);
    }
    assert_int_equal(total, 2L * mrc_topo_num_physical_links(t));
}

static void expect_all_ports(const mrc_topo_t *t, int ports)
{
    for (int u = 0; u < mrc_topo_num_nodes(t); u++)
        assert_int_equal(mrc_topo_num_ports(t, u), ports);
}

static void test_ring(void **state)
{
    (void)state;
    const int sizes[] = {2, 3, 5, 8, 64};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char spec[32];
        int n = sizes[i];
        snprintf(spec, sizeof spec, "ring:%d", n);
        mrc_topo_t *t = make(spec);
        assert_int_equal(mrc_topo_num_nodes(t), n);
        assert_int_equal(mrc_topo_num_physical_links(t), n);
        assert_int_equal(mrc_topo_num_links(t), n == 2 ? 1 : n);
        expect_all_ports(t, 2);
        for (int u = 0; u < n && n > 2; u++)
            assert_int_equal(links_between(t, u, (u + 1) % n), 1);
        check_ports(t);
        mrc_topo_destroy(t);
    }
}

static void test_line_and_full(void **state)
{
    (void)state;
    mrc_topo_t *t = make("line:1");
    assert_int_equal(mrc_topo_num_nodes(t), 1);
    assert_int_equal(mrc_topo_num_links(t), 0);
    mrc_topo_destroy(t);

    t = make("line:5");
    assert_int_equal(mrc_topo_num_physical_links(t), 4);
    assert_int_equal(mrc_topo_num_ports(t, 0), 1);
    assert_int_equal(mrc_topo_num_ports(t, 2), 2);
    assert_int_equal(mrc_topo_num_ports(t, 4), 1);
    check_ports(t);
    mrc_topo_destroy(t);

    const int sizes[] = {2, 5, 9};
    for (size_t i = 0; i < 3; i++) {
        char spec[32];
        int n = sizes[i];
        snprintf(spec, sizeof spec, "full:%d", n);
        t = make(spec);
        assert_int_equal(mrc_topo_num_links(t), n * (n - 1) / 2);
        expect_all_ports(t, n - 1);
        check_ports(t);
        mrc_topo_destroy(t);
    }
}

static void test_ladder_and_torus_ladder(void **state)
{
    (void)state;
    const int sizes[] = {4, 6, 8, 16, 1024};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int n = sizes[i];
        char spec[40];
        snprintf(spec, sizeof spec, "ladder:%d", n);
        mrc_topo_t *mesh = make(spec);
        snprintf(spec, sizeof spec, "torus-ladder:%d", n);
        mrc_topo_t *torus = make(spec);

        /* n/2 rungs and two columns of n/2 - 1 links. */
        assert_int_equal(mrc_topo_num_physical_links(mesh),
                         n / 2 + 2 * (n / 2 - 1));
        for (int k = 0; k < n / 2; k++)
            assert_int_equal(links_between(mesh, 2 * k, 2 * k + 1), 1);
        for (int u = 0; u + 2 < n; u++)
            assert_int_equal(links_between(mesh, u, u + 2), 1);
        for (int u = 0; u < n; u++) {
            int corner = u < 2 || u >= n - 2;
            assert_int_equal(mrc_topo_num_ports(mesh, u), corner ? 2 : 3);
        }
        /* The torus closes both columns: more links, 3 ports each. */
        assert_true(mrc_topo_num_physical_links(torus) >
                    mrc_topo_num_physical_links(mesh));
        assert_int_equal(mrc_topo_num_physical_links(torus), 3 * n / 2);
        expect_all_ports(torus, 3);
        assert_int_equal(links_between(torus, n - 2, 0), n == 4 ? 2 : 1);
        check_ports(mesh);
        check_ports(torus);
        mrc_topo_destroy(mesh);
        mrc_topo_destroy(torus);
    }
}

static void test_torus2d(void **state)
{
    (void)state;
    const int dims[][2] = {{2, 2}, {2, 3}, {3, 3}, {4, 4}, {5, 3}, {32, 32}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        int X = dims[i][0], Y = dims[i][1];
        char spec[40];
        snprintf(spec, sizeof spec, "torus2d:%d,%d", X, Y);
        mrc_topo_t *t = make(spec);
        assert_int_equal(mrc_topo_num_nodes(t), X * Y);
        assert_int_equal(mrc_topo_num_physical_links(t), 2 * X * Y);
        expect_all_ports(t, 4);
        /* Node (x, y) = y*X + x is joined to (x+1, y) and (x, y+1). */
        int u = (Y - 1) * X + (X - 1);
        assert_true(links_between(t, u, (Y - 1) * X) >= 1);
        assert_true(links_between(t, u, X - 1) >= 1);
        check_ports(t);
        mrc_topo_destroy(t);
    }
}

static void test_prism(void **state)
{
    (void)state;
    mrc_topo_t *t = make("prism:3,4");
    assert_int_equal(mrc_topo_num_nodes(t), 12);
    for (int u = 0; u < 12; u++) {
        int layer = u / 3;
        int endmost = layer == 0 || layer == 3;
        assert_int_equal(mrc_topo_num_ports(t, u), endmost ? 7 : 6);
        /* Neighbours in a layer: 3 links in endmost layers, 2 inside. */
        int next = layer * 3 + (u % 3 + 1) % 3;
        assert_int_equal(links_between(t, u, next), endmost ? 3 : 2);
        if (layer < 3)
            assert_int_equal(links_between(t, u, u + 3), 1);
    }
    check_ports(t);
    mrc_topo_destroy(t);

    const int dims[][2] = {{3, 2}, {3, 3}, {4, 3}, {5, 5}, {8, 16}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        int K = dims[i][0], L = dims[i][1];
        char spec[40];
        snprintf(spec, sizeof spec, "prism:%d,%d", K, L);
        t = make(spec);
        assert_int_equal(mrc_topo_num_nodes(t), K * L);
        for (int u = 0; u < K * L; u++) {
            int layer = u / K;
            int endmost = layer == 0 || layer == L - 1;
            assert_int_equal(mrc_topo_num_ports(t, u), endmost ? 7 : 6);
        }
        check_ports(t);
        mrc_topo_destroy(t);
    }
}

/* Link counts per link class (issue 14, item 3): each option sets the
 * physical links of its class only, and every node's ports add up. */
static void test_link_class_counts(void **state)
{
    (void)state;
    /* GCL's torus with doubled rungs and tripled columns: 2 + 3 + 3. */
    mrc_topo_t *t = make("torus-ladder:8,rung=2,column=3");
    expect_all_ports(t, 8);
    assert_int_equal(mrc_topo_num_physical_links(t), 4 * 2 + 8 * 3);
    for (int k = 0; k < 4; k++) {
        assert_int_equal(links_between(t, 2 * k, 2 * k + 1), 2);
        assert_int_equal(links_between(t, 2 * k, (2 * k + 2) % 8), 3);
        assert_int_equal(links_between(t, 2 * k + 1, (2 * k + 3) % 8), 3);
    }
    check_ports(t);
    mrc_topo_destroy(t);

    /* The preset: eight IPU-Links each, rung = 4, column = 2; the same as
     * spelling the counts out, and they can still be overridden. */
    const char *gcl[] = {"gcl-torus:16", "torus-ladder:16,rung=4,column=2"};
    for (int i = 0; i < 2; i++) {
        t = make(gcl[i]);
        expect_all_ports(t, 8);
        assert_int_equal(links_between(t, 0, 1), 4);
        assert_int_equal(links_between(t, 0, 2), 2);
        assert_int_equal(links_between(t, 14, 0), 2);
        check_ports(t);
        mrc_topo_destroy(t);
    }
    t = make("gcl-torus:8,rung=2,column=1");
    expect_all_ports(t, 4);
    mrc_topo_destroy(t);
    /* Two rungs: column and closing link are one entry of twice the
     * count; still eight ports. */
    t = make("gcl-torus:4");
    expect_all_ports(t, 8);
    assert_int_equal(links_between(t, 0, 2), 4);
    mrc_topo_destroy(t);

    /* The mesh: end rungs have one column neighbour. */
    t = make("ladder:6,rung=3,column=2");
    assert_int_equal(mrc_topo_num_ports(t, 0), 3 + 2);
    assert_int_equal(mrc_topo_num_ports(t, 2), 3 + 2 + 2);
    assert_int_equal(mrc_topo_num_physical_links(t), 3 * 3 + 4 * 2);
    check_ports(t);
    mrc_topo_destroy(t);

    /* torus2d: x along a row, y along a column; a dimension of 2 doubles. */
    t = make("torus2d:4,3,x=2,y=3");
    expect_all_ports(t, 2 * 2 + 2 * 3);
    assert_int_equal(links_between(t, 0, 1), 2);
    assert_int_equal(links_between(t, 0, 4), 3);
    check_ports(t);
    mrc_topo_destroy(t);
    t = make("torus2d:2,3,x=2");
    expect_all_ports(t, 2 * 2 + 2);
    assert_int_equal(links_between(t, 0, 1), 4);
    mrc_topo_destroy(t);

    /* prism: endmost, intermediate and inter-layer counts. */
    t = make("prism:3,4,end=4,mid=1,inter=2");
    for (int u = 0; u < 12; u++) {
        int layer = u / 3, endmost = layer == 0 || layer == 3;
        int next = layer * 3 + (u % 3 + 1) % 3;
        assert_int_equal(links_between(t, u, next), endmost ? 4 : 1);
        if (layer < 3)
            assert_int_equal(links_between(t, u, u + 3), 2);
        assert_int_equal(mrc_topo_num_ports(t, u),
                         endmost ? 4 + 4 + 2 : 1 + 1 + 2 + 2);
    }
    check_ports(t);
    mrc_topo_destroy(t);

    /* prism-torus: every layer alike, the last joined back to the first. */
    t = make("prism-torus:4,3");
    assert_int_equal(mrc_topo_num_nodes(t), 12);
    expect_all_ports(t, 2 + 2 + 1 + 1);
    assert_int_equal(links_between(t, 8, 0), 1);
    assert_int_equal(links_between(t, 8, 9), 2);
    assert_int_equal(mrc_topo_num_physical_links(t), 3 * 4 * 2 + 3 * 4);
    check_ports(t);
    mrc_topo_destroy(t);
    t = make("prism-torus:3,5,intra=3,inter=2");
    expect_all_ports(t, 3 + 3 + 2 + 2);
    assert_int_equal(links_between(t, 12, 0), 2);
    assert_int_equal(links_between(t, 12, 13), 3);
    check_ports(t);
    mrc_topo_destroy(t);
}

static void test_hcm8(void **state)
{
    (void)state;
    mrc_topo_t *t = make("hcm8");
    assert_int_equal(mrc_topo_num_nodes(t), 8);
    expect_all_ports(t, 7);
    assert_int_equal(mrc_topo_num_physical_links(t), 28);
    for (int u = 0; u < 8; u++) {
        int base = u / 4 * 4, i = u % 4;
        assert_int_equal(links_between(t, u, base + (i + 1) % 4), 2);
        assert_int_equal(links_between(t, u, base + (i + 3) % 4), 2);
        assert_int_equal(links_between(t, u, base + (i + 2) % 4), 1);
        assert_int_equal(links_between(t, u, (u + 4) % 8), 2);
    }
    check_ports(t);
    mrc_topo_destroy(t);
}

static void test_spec_options(void **state)
{
    (void)state;
    mrc_topo_t *t = make("ring:4,bw=50,lat=100");
    for (int i = 0; i < mrc_topo_num_links(t); i++) {
        assert_true(mrc_topo_link(t, i)->bandwidth_gbps == 50);
        assert_true(mrc_topo_link(t, i)->latency_ns == 100);
    }
    assert_true(mrc_topo_node_bandwidth_gbps(t, 0) == 100);
    assert_true(mrc_topo_total_bandwidth_gbps(t) == 200);
    assert_string_equal(mrc_topo_name(t), "ring:4,bw=50,lat=100");
    mrc_topo_destroy(t);

    t = make("hcm8:lat=0");
    assert_true(mrc_topo_link(t, 0)->latency_ns == 0);
    assert_true(mrc_topo_link(t, 0)->bandwidth_gbps ==
                MRC_TOPO_DEFAULT_BANDWIDTH_GBPS);
    mrc_topo_destroy(t);
}

static void test_bad_specs(void **state)
{
    (void)state;
    static const struct {
        const char *spec;
        const char *says;
    } cases[] = {
        {"prism:0,0", "K >= 3"},
        {"prism:3,1", "L >= 2"},
        {"prism:3", "expected prism:K,L"},
        {"ladder:7", "even N >= 4"},
        {"ladder:2", "even N >= 4"},
        {"torus-ladder:5", "even N >= 4"},
        {"ring:1", "N >= 2"},
        {"ring:0", "N >= 2"},
        {"ring", "expected ring:N"},
        {"ring:", "nothing after ':'"},
        {"ring:-3", "not a non-negative integer"},
        {"ring:3x", "not a non-negative integer"},
        {"ring:3,4", "too many arguments"},
        {"ring:3,,bw=1", "empty argument"},
        {"ring:,3", "empty argument"},
        {"ring:3,", "empty argument"},
        {"ring:3,bw=-1", "must be > 0"},
        {"ring:3,bw=0", "must be > 0"},
        {"ring:3,bw=abc", "not a number"},
        {"ring:3,bw=nan", "not a number"},
        {"ring:3,lat=-5", "must be >= 0"},
        {"ring:3,foo=1", "unknown option 'foo'"},
        {"ring:3,bw=1,bw=2", "given twice"},
        {"ring:bw=1,3", "arguments come before"},
        {"nosuch:3", "unknown generator 'nosuch'"},
        {"torus2d:4", "expected torus2d:X,Y"},
        {"torus2d:1,8", "X >= 2"},
        {"torus2d:100000,100000", "more than 1048576 nodes"},
        /* Too large is said as such, not as "needs N >= 2". */
        {"ring:99999999", "N must be at most 1048576"},
        {"ring:2147483648", "N must be at most 1048576"},
        {"ring:99999999999999", "N must be at most 1048576"},
        {"line:4294967297", "N must be at most 1048576"},
        {"ladder:4000000000", "N must be at most 1048576"},
        {"torus-ladder:2097152", "N must be at most 1048576"},
        {"full:5000", "N <= 4097"},
        {"hcm8:3", "too many arguments"},
        {"line:0", "N >= 1"},
        /* Link-class counts: a whole number of links, at least 1. */
        {"torus-ladder:8,rung=0", "rung=0 is not a number of links"},
        {"torus-ladder:8,rung=-2", "rung=-2 is not a number of links"},
        {"torus-ladder:8,column=two", "column=two is not a number"},
        {"torus-ladder:8,column=1.5", "column=1.5 is not a number"},
        {"torus-ladder:8,column=", "column= is not a number"},
        {"ladder:8,rung=1025", "from 1 to 1024"},
        {"torus-ladder:8,rung=2,rung=2", "option 'rung' given twice"},
        {"torus-ladder:8,rungs=2", "unknown option 'rungs' for torus-ladder "
                                   "(options: rung=links, column=links"},
        {"torus-ladder:rung=2,8", "arguments come before"},
        {"ring:8,rung=2", "unknown option 'rung' for ring"},
        {"torus2d:4,4,z=2", "options: x=links, y=links"},
        {"prism:3,4,inter=0", "inter=0 is not a number of links"},
        {"prism:3,4,intra=2", "options: end=links, mid=links, inter=links"},
        {"prism-torus:3,4,end=2", "options: intra=links, inter=links"},
        {"prism-torus:3,2", "L >= 3 layers"},
        {"prism-torus:2,4", "K >= 3"},
        {"gcl-torus:2", "gcl-torus:N needs an even N >= 4"},
        {"gcl-torus:7", "even N >= 4"},
        /* A wrap-around of 2 joins the same nodes twice: one entry. */
        {"torus-ladder:4,column=513", "1026 links, more than 1024"},
        {"torus2d:2,4,x=600", "1200 links, more than 1024"},
        /* Counts multiply physical links; the port index stays bounded. */
        {"torus2d:1024,1024,x=17,y=16", "more than 16777216 physical"},
        {"prism-torus:1024,1024,intra=16", "more than 16777216 physical"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mrc_topo_t *t = (mrc_topo_t *)(uintptr_t)1;
        mrc_status_t st = mrc_topo_generate(cases[i].spec, &t);
        if (st != MRC_ERR_INVALID_ARG ||
            !strstr(mrc_last_error(), cases[i].says))
            fail_msg("spec '%s': status %d, message '%s' (wanted '%s')",
                     cases[i].spec, st, mrc_last_error(), cases[i].says);
        assert_null(t);
        /* The message names the spec it refuses. */
        assert_non_null(strstr(mrc_last_error(), cases[i].spec));
    }
    /* The spec is the topology's name, which a file may not give with
     * control characters (found by fuzz_topo: it round-tripped to a file
     * that could not be read back); the message names the place, not the
     * characters. */
    static const struct {
        const char *spec;
        const char *says;
    } blanks[] = {
        {"ladder:\r  4", "control character at position 8"},
        {"ring: 4", "control character at position 6"},
        {"ring:4\n", "control character at position 7"},
    };
    for (size_t i = 0; i < sizeof blanks / sizeof *blanks; i++) {
        mrc_topo_t *b = (mrc_topo_t *)(uintptr_t)1;
        assert_int_equal(mrc_topo_generate(blanks[i].spec, &b),
                         MRC_ERR_INVALID_ARG);
        assert_null(b);
        assert_non_null(strstr(mrc_last_error(), blanks[i].says));
    }
    mrc_topo_t *t = NULL;
    assert_int_equal(mrc_topo_generate(NULL, &t), MRC_ERR_INVALID_ARG);
    assert_int_equal(mrc_topo_generate("", &t), MRC_ERR_INVALID_ARG);
    assert_int_equal(mrc_topo_create(NULL, &t), MRC_ERR_INVALID_ARG);
    assert_int_equal(mrc_topo_generate("ring:3", NULL), MRC_ERR_INVALID_ARG);
    char longspec[400];
    memset(longspec, '1', sizeof longspec - 1);
    longspec[sizeof longspec - 1] = '\0';
    assert_int_equal(mrc_topo_generate(longspec, &t), MRC_ERR_INVALID_ARG);
}

static mrc_link_t L(int a, int b, int count, double bw, double lat)
{
    mrc_link_t l = {a, b, count, bw, lat, -1, -1};
    return l;
}

static void test_from_links_validation(void **state)
{
    (void)state;
    static const struct {
        int nodes;
        int nlinks;
        mrc_link_t links[6];
        const char *says;
    } cases[] = {
        {3,
         2,
         {{0, 1, 1, 1, 0, 0, 0}, {1, 7, 1, 1, 0, 0, 0}},
         "links[1]: unknown node 7"},
        {3,
         2,
         {{0, 1, 1, 1, 0, 0, 0}, {-1, 2, 1, 1, 0, 0, 0}},
         "links[1]: unknown node -1"},
        {3,
         3,
         {{0, 1, 1, 1, 0, 0, 0}, {1, 2, 1, 1, 0, 0, 0}, {2, 2, 1, 1, 0, 0, 0}},
         "links[2]: self-loop on node 2"},
        {2, 1, {{0, 1, 0, 1, 0, 0, 0}}, "links[0]: count 0"},
        {2, 1, {{0, 1, 2000, 1, 0, 0, 0}}, "links[0]: count 2000"},
        {2, 1, {{0, 1, 1, 0, 0, 0, 0}}, "links[0]: bandwidth_gbps 0"},
        {2, 1, {{0, 1, 1, -4, 0, 0, 0}}, "links[0]: bandwidth_gbps -4"},
        {2, 1, {{0, 1, 1, 1e7, 0, 0, 0}}, "bandwidth_gbps 1e+07"},
        {2, 1, {{0, 1, 1, 1, -1, 0, 0}}, "links[0]: latency_ns -1"},
        {2, 1, {{0, 1, 1, 1, 1e13, 0, 0}}, "latency_ns 1e+13"},
        {4,
         2,
         {{0, 1, 1, 1, 0, 0, 0}, {2, 3, 1, 1, 0, 0, 0}},
         "disconnected: node 2 cannot be reached from node 0"},
        {3, 0, {{0}}, "disconnected"},
        {2,
         5,
         {{0, 1, 1024, 1, 0, 0, 0},
          {0, 1, 1024, 1, 0, 0, 0},
          {0, 1, 1024, 1, 0, 0, 0},
          {0, 1, 1024, 1, 0, 0, 0},
          {0, 1, 1024, 1, 0, 0, 0}},
         "links[4]: node 0 has more than 4096 ports"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mrc_topo_t *t = (mrc_topo_t *)(uintptr_t)1;
        mrc_status_t st = mrc_topo_from_links(cases[i].nodes, cases[i].links,
                                              cases[i].nlinks, &t);
        if (st != MRC_ERR_INVALID_TOPOLOGY ||
            !strstr(mrc_last_error(), cases[i].says))
            fail_msg("case %zu: status %d, message '%s' (wanted '%s')", i, st,
                     mrc_last_error(), cases[i].says);
        assert_null(t);
    }
    mrc_link_t nan_bw = L(0, 1, 1, NAN, 0);
    mrc_topo_t *t = NULL;
    assert_int_equal(mrc_topo_from_links(2, &nan_bw, 1, &t),
                     MRC_ERR_INVALID_TOPOLOGY);
    assert_int_equal(mrc_topo_from_links(0, NULL, 0, &t),
                     MRC_ERR_INVALID_TOPOLOGY);
    assert_int_equal(mrc_topo_from_links(2, NULL, 1, &t), MRC_ERR_INVALID_ARG);
    assert_int_equal(mrc_topo_from_links(MRC_TOPO_MAX_NODES + 1, NULL, 0, &t),
                     MRC_ERR_INVALID_TOPOLOGY);
    assert_non_null(strstr(mrc_last_error(), "1048577 nodes"));

    /* A multigraph is fine: two entries between the same pair. */
    mrc_link_t two[2] = {L(0, 1, 1, 10, 5), L(1, 0, 2, 20, 5)};
    assert_int_equal(mrc_topo_from_links(2, two, 2, &t), MRC_OK);
    assert_int_equal(mrc_topo_num_ports(t, 0), 3);
    assert_int_equal(mrc_topo_link(t, 1)->port_b, 1); /* after entry 0 */
    assert_true(mrc_topo_node_bandwidth_gbps(t, 1) == 50);
    check_ports(t);
    mrc_topo_destroy(t);
}

static void test_queries_out_of_range(void **state)
{
    (void)state;
    mrc_topo_t *t = make("ring:4");
    assert_null(mrc_topo_link(t, -1));
    assert_null(mrc_topo_link(t, 4));
    assert_int_equal(mrc_topo_num_ports(t, 4), -1);
    assert_int_equal(mrc_topo_node_links(t, -1, NULL), -1);
    assert_int_equal(mrc_topo_port(t, 9, 0, NULL, NULL, NULL),
                     MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "no node 9"));
    assert_null(mrc_topo_node_name(t, 0));
    double x = 0, y = 0;
    assert_int_equal(mrc_topo_node_position(t, 0, &x, &y), 1);
    assert_int_equal(mrc_topo_node_position(t, 5, &x, &y), 0);
    mrc_topo_destroy(t);
    mrc_topo_destroy(NULL);
}

static void test_dot(void **state)
{
    (void)state;
    mrc_topo_t *t = make("hcm8");
    char *dot = NULL;
    assert_int_equal(mrc_topo_to_dot(t, &dot), MRC_OK);
    assert_non_null(strstr(dot, "graph topology {"));
    int edges = 0;
    for (const char *p = dot; (p = strstr(p, " -- ")); p++)
        edges++;
    assert_int_equal(edges, mrc_topo_num_links(t));
    assert_non_null(strstr(dot, "n0 -- n1 [penwidth=3"));
    assert_non_null(strstr(dot, "label=\"2\""));
    assert_non_null(strstr(dot, "pos=\""));
    mrc_free(dot);
    mrc_topo_destroy(t);
}

static void test_large_torus(void **state)
{
    (void)state;
    mrc_topo_t *t = make("torus2d:256,256");
    assert_int_equal(mrc_topo_num_nodes(t), 65536);
    expect_all_ports(t, 4);
    mrc_topo_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_line_and_full),
        cmocka_unit_test(test_ladder_and_torus_ladder),
        cmocka_unit_test(test_torus2d),
        cmocka_unit_test(test_prism),
        cmocka_unit_test(test_link_class_counts),
        cmocka_unit_test(test_hcm8),
        cmocka_unit_test(test_spec_options),
        cmocka_unit_test(test_bad_specs),
        cmocka_unit_test(test_from_links_validation),
        cmocka_unit_test(test_queries_out_of_range),
        cmocka_unit_test(test_dot),
        cmocka_unit_test(test_large_torus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
