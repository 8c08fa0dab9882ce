/* The topology file format: exact round trips and every refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mrc/mrc.h"

static char *to_json(const mrc_topo_t *t)
{
    char *s = NULL;
    assert_int_equal(mrc_topo_to_json(t, &s), MRC_OK);
    return s;
}

static void assert_same_topology(const mrc_topo_t *x, const mrc_topo_t *y)
{
    assert_int_equal(mrc_topo_num_nodes(x), mrc_topo_num_nodes(y));
    assert_int_equal(mrc_topo_num_links(x), mrc_topo_num_links(y));
    assert_string_equal(mrc_topo_name(x), mrc_topo_name(y));
    for (int i = 0; i < mrc_topo_num_links(x); i++) {
        const mrc_link_t *a = mrc_topo_link(x, i), *b = mrc_topo_link(y, i);
        assert_int_equal(a->a, b->a);
        assert_int_equal(a->b, b->b);
        assert_int_equal(a->count, b->count);
        assert_true(a->bandwidth_gbps == b->bandwidth_gbps);
        assert_true(a->latency_ns == b->latency_ns);
        assert_int_equal(a->port_a, b->port_a);
        assert_int_equal(a->port_b, b->port_b);
    }
    for (int u = 0; u < mrc_topo_num_nodes(x); u++) {
        double x1 = 0, y1 = 0, x2 = 0, y2 = 0;
        int p1 = mrc_topo_node_position(x, u, &x1, &y1);
        int p2 = mrc_topo_node_position(y, u, &x2, &y2);
        assert_int_equal(p1, p2);
        assert_true(x1 == x2 && y1 == y2);
        const char *n1 = mrc_topo_node_name(x, u),
                   *n2 = mrc_topo_node_name(y, u);
        assert_true((n1 == NULL) == (n2 == NULL));
        if (n1)
            assert_string_equal(n1, n2);
    }
}

static void test_round_trip_generators(void **state)
{
    (void)state;
    const char *specs[] = {"ring:2",      "ring:7,bw=12.5,lat=0.1",
                           "line:1",      "full:6",
                           "ladder:8",    "torus-ladder:4",
                           "torus2d:3,5", "prism:3,4",
                           "prism:5,2",   "hcm8:bw=0.3"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        mrc_topo_t *t = NULL, *back = NULL;
        assert_int_equal(mrc_topo_generate(specs[i], &t), MRC_OK);
        char *json = to_json(t);
        assert_int_equal(mrc_topo_parse_json(json, strlen(json), "rt", &back),
                         MRC_OK);
        assert_same_topology(t, back);
        char *again = to_json(back);
        assert_string_equal(json, again);
        free(json);
        free(again);
        mrc_topo_destroy(t);
        mrc_topo_destroy(back);
    }
}

static void test_round_trip_file_with_names_and_odd_numbers(void **state)
{
    (void)state;
    const char *text =
        "{\"format\": \"mrc-topology\", \"version\": 1,\n"
        " \"nodes\": [{\"id\": 1, \"name\": \"chip \\\"B\\\"\", \"x\": 0.1, "
        "\"y\": -2.5e-3},\n"
        "            {\"id\": 0, \"name\": \"chip A\\\\\"},\n"
        "            {\"id\": 2}],\n"
        " \"links\": [{\"a\": 2, \"b\": 0, \"bandwidth_gbps\": "
        "0.30000000000000004},\n"
        "            {\"a\": 0, \"b\": 1, \"count\": 3, \"latency_ns\": "
        "123.456, \"bandwidth_gbps\": 1e-3}]}\n";
    mrc_topo_t *t = NULL, *back = NULL;
    assert_int_equal(mrc_topo_parse_json(text, strlen(text), "f.json", &t),
                     MRC_OK);
    /* Defaults fill the fields a link leaves out. */
    assert_int_equal(mrc_topo_link(t, 0)->count, 1);
    assert_true(mrc_topo_link(t, 0)->latency_ns == MRC_TOPO_DEFAULT_LATENCY_NS);
    assert_true(mrc_topo_link(t, 1)->bandwidth_gbps == 1e-3);
    assert_string_equal(mrc_topo_node_name(t, 1), "chip \"B\"");
    assert_string_equal(mrc_topo_name(t), "f.json"); /* no "name": origin */

    char path[] = "/tmp/mrc-topo-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(mrc_topo_save(t, path), MRC_OK);
    assert_int_equal(mrc_topo_create(path, &back), MRC_OK);
    assert_int_equal(mrc_topo_num_nodes(back), 3);
    assert_true(mrc_topo_link(back, 0)->bandwidth_gbps == 0.30000000000000004);
    char *j1 = to_json(t), *j2 = to_json(back);
    assert_string_equal(j1, j2);
    free(j1);
    free(j2);
    unlink(path);
    mrc_topo_destroy(t);
    mrc_topo_destroy(back);
}

static const char *HEAD = "{\"format\": \"mrc-topology\", \"version\": 1, ";

/* Parses HEAD + body and expects a refusal whose message holds `says`. */
static void expect_refusal(const char *body, mrc_status_t want,
                           const char *says)
{
    char text[2048];
    snprintf(text, sizeof text, "%s%s", HEAD, body);
    mrc_topo_t *t = (mrc_topo_t *)(uintptr_t)1;
    mrc_status_t st = mrc_topo_parse_json(text, strlen(text), "bad.json", &t);
    if (st != want || !strstr(mrc_last_error(), says) ||
        strncmp(mrc_last_error(), "bad.json", 8) != 0)
        fail_msg("%s\n  gave status %d, '%s'\n  wanted %d, '%s'", text, st,
                 mrc_last_error(), want, says);
    assert_null(t);
}

static void test_refusals(void **state)
{
    (void)state;
    const mrc_status_t P = MRC_ERR_PARSE, T = MRC_ERR_INVALID_TOPOLOGY;
    const char *two = "\"nodes\": [{\"id\": 0}, {\"id\": 1}], ";
    char body[1024];

    expect_refusal("\"nodes\": []", P, "JSON syntax error");
    expect_refusal("\"nodes\": [], \"links\": []}", T, "\"nodes\" is empty");
    expect_refusal("\"links\": []}", P, "missing \"nodes\"");
    expect_refusal("\"nodes\": [{\"id\": 0}]}", P, "missing \"links\"");
    expect_refusal("\"nodes\": {}, \"links\": []}", P, "missing \"nodes\"");
    expect_refusal("\"nodes\": [5], \"links\": []}", P,
                   "nodes[0]: must be an object");
    expect_refusal("\"nodes\": [{}], \"links\": []}", P,
                   "nodes[0]: missing \"id\"");
    expect_refusal("\"nodes\": [{\"id\": 1.5}], \"links\": []}", P,
                   "nodes[0]: \"id\" must be an integer");
    expect_refusal("\"nodes\": [{\"id\": \"0\"}], \"links\": []}", P,
                   "must be an integer");
    expect_refusal("\"nodes\": [{\"id\": 0}, {\"id\": 2}], \"links\": []}", T,
                   "nodes[1]: id 2 out of range");
    expect_refusal("\"nodes\": [{\"id\": -1}], \"links\": []}", T,
                   "nodes[0]: id -1 out of range");
    expect_refusal("\"nodes\": [{\"id\": 0}, {\"id\": 0}], \"links\": []}", T,
                   "nodes[1]: duplicate node id 0");
    /* Control characters in names: terminals and other languages. */
    expect_refusal("\"name\": \"a\\nb\", \"nodes\": [{\"id\": 0}], "
                   "\"links\": []}",
                   P, "\"name\" must not hold control characters");
    expect_refusal("\"nodes\": [{\"id\": 0, \"name\": \"\\u001b[2J\"}], "
                   "\"links\": []}",
                   P, "nodes[0]: \"name\" must not hold control characters");
    expect_refusal("\"nodes\": [{\"id\": 0, \"name\": 3}], \"links\": []}", P,
                   "nodes[0]: \"name\" must be a string");
    expect_refusal("\"nodes\": [{\"id\": 0, \"x\": 3}], \"links\": []}", P,
                   "nodes[0]: \"x\" and \"y\" must both be numbers");
    expect_refusal("\"nodes\": [{\"id\": 0, \"colour\": 3}], \"links\": []}", P,
                   "nodes[0]: unknown key \"colour\"");

    snprintf(body, sizeof body, "%s\"links\": {}}", two);
    expect_refusal(body, P, "missing \"links\"");
    snprintf(body, sizeof body, "%s\"links\": [[0, 1]]}", two);
    expect_refusal(body, P, "links[0]: must be an object");
    snprintf(body, sizeof body, "%s\"links\": [{\"b\": 1}]}", two);
    expect_refusal(body, P, "links[0]: missing \"a\"");
    snprintf(body, sizeof body, "%s\"links\": [{\"a\": 0, \"b\": 9}]}", two);
    expect_refusal(body, T, "links[0]: unknown node 9 (nodes are 0..1)");
    snprintf(body, sizeof body,
             "%s\"links\": [{\"a\": 0, \"b\": 99999999999}]}", two);
    expect_refusal(body, T, "links[0]: unknown node 99999999999");
    snprintf(body, sizeof body, "%s\"links\": [{\"a\": 1, \"b\": 1}]}", two);
    expect_refusal(body, T, "links[0]: self-loop on node 1");
    snprintf(body, sizeof body,
             "%s\"links\": [{\"a\": 0, \"b\": 1, \"count\": 0}]}", two);
    expect_refusal(body, T, "links[0]: count 0");
    snprintf(body, sizeof body,
             "%s\"links\": [{\"a\": 0, \"b\": 1, \"count\": 2.5}]}", two);
    expect_refusal(body, P, "links[0]: \"count\" must be an integer");
    snprintf(body, sizeof body,
             "%s\"links\": [{\"a\": 0, \"b\": 1, \"count\": 1e9}]}", two);
    expect_refusal(body, P, "\"count\" must be an integer");
    snprintf(body, sizeof body,
             "%s\"links\": [{\"a\": 0, \"b\": 1, \"count\": 5000000}]}", two);
    expect_refusal(body, T, "links[0]: count 5000000");
    snprintf(body, sizeof body,
             "%s\"links\": [{\"a\": 0, \"b\": 1, \"bandwidth_gbps\": -2}]}",
             two);
    expect_refusal(body, T, "links[0]: bandwidth_gbps -2");
    snprintf(body, sizeof body,
             "%s\"links\": [{\"a\": 0, \"b\": 1, \"bandwidth_gbps\": \"x\"}]}",
             two);
    expect_refusal(body, P, "\"bandwidth_gbps\" must be a number");
    snprintf(body, sizeof body,
             "%s\"links\": [{\"a\": 0, \"b\": 1, \"latency_ns\": -1}]}", two);
    expect_refusal(body, T, "links[0]: latency_ns -1");
    snprintf(body, sizeof body,
             "%s\"links\": [{\"a\": 0, \"b\": 1, \"latency_ns\": 1e300}]}",
             two);
    expect_refusal(body, T, "latency_ns 1e+300");
    snprintf(body, sizeof body,
             "%s\"links\": [{\"a\": 0, \"b\": 1, \"bandwith_gbps\": 5}]}", two);
    expect_refusal(body, P, "links[0]: unknown key \"bandwith_gbps\"");
    expect_refusal("\"nodes\": [{\"id\": 0}, {\"id\": 1}, {\"id\": 2}], "
                   "\"links\": [{\"a\": 0, \"b\": 1}]}",
                   T, "disconnected: node 2 cannot be reached");
    snprintf(body, sizeof body, "%s\"links\": [], \"extra\": 1}", two);
    expect_refusal(body, P, "top level: unknown key \"extra\"");
    snprintf(body, sizeof body, "%s\"links\": [], \"name\": 7}", two);
    expect_refusal(body, P, "\"name\" must be a string");
}

/* Refusals that need their own text: syntax, header, duplicates. */
static void expect_text_refusal(const char *text, const char *says)
{
    mrc_topo_t *t = (mrc_topo_t *)(uintptr_t)1;
    mrc_status_t st = mrc_topo_parse_json(text, strlen(text), "t.json", &t);
    if (st == MRC_OK || !strstr(mrc_last_error(), says))
        fail_msg("'%s' gave status %d, '%s'; wanted '%s'", text, st,
                 mrc_last_error(), says);
    assert_null(t);
}

static void test_syntax_and_header(void **state)
{
    (void)state;
    /* A syntax error names line and column. */
    expect_text_refusal(
        "{\n  \"format\": \"mrc-topology\",\n  \"version\" 1\n}", "t.json:3:");
    expect_text_refusal("{\"format\": \"mrc-topology\"", "JSON syntax error");
    expect_text_refusal("", "t.json:");
    expect_text_refusal("[]", "top level must be a JSON object");
    expect_text_refusal("{\"version\": 1}", "\"format\" must be");
    expect_text_refusal("{\"format\": \"other\", \"version\": 1}",
                        "not an mrc topology file");
    expect_text_refusal("{\"format\": \"mrc-topology\"}",
                        "missing \"version\"");
    expect_text_refusal("{\"format\": \"mrc-topology\", \"version\": 2}",
                        "\"version\" 2 is not supported");
    expect_text_refusal("{\"format\": \"mrc-topology\", \"version\": 1, "
                        "\"version\": 1}",
                        "duplicate");
    expect_text_refusal("{\"format\": \"mrc-topology\", \"version\": 1, "
                        "\"nodes\": [{\"id\": 0}], \"links\": []} trailing",
                        "JSON syntax error");

    mrc_topo_t *t = NULL;
    assert_int_equal(mrc_topo_load("/nonexistent/dir/t.json", &t), MRC_ERR_IO);
    assert_non_null(strstr(mrc_last_error(), "/nonexistent/dir/t.json"));
    assert_int_equal(mrc_topo_create("missing.json", &t), MRC_ERR_IO);
    assert_int_equal(mrc_topo_parse_json(NULL, 0, NULL, &t),
                     MRC_ERR_INVALID_ARG);
    assert_int_equal(mrc_topo_save(NULL, "x"), MRC_ERR_INVALID_ARG);
}

static void test_single_node_file(void **state)
{
    (void)state;
    const char *text = "{\"format\": \"mrc-topology\", \"version\": 1, "
                       "\"name\": \"solo\", \"nodes\": [{\"id\": 0}], "
                       "\"links\": []}";
    mrc_topo_t *t = NULL;
    assert_int_equal(mrc_topo_parse_json(text, strlen(text), NULL, &t), MRC_OK);
    assert_string_equal(mrc_topo_name(t), "solo");
    assert_int_equal(mrc_topo_num_ports(t, 0), 0);
    mrc_topo_destroy(t);
}

/* Saving over a symbolic link replaces the link: the file it pointed to,
 * perhaps planted by someone else, is untouched. */
static void test_save_never_follows_a_link(void **state)
{
    (void)state;
    char dir[] = "/tmp/mrc-save-XXXXXX", victim[64], link[64];
    assert_non_null(mkdtemp(dir));
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(link, sizeof link, "%s/link.json", dir);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    fclose(f);
    assert_int_equal(symlink(victim, link), 0);
    mrc_topo_t *t = NULL, *back = NULL;
    assert_int_equal(mrc_topo_create("ring:3", &t), MRC_OK);
    assert_int_equal(mrc_topo_save(t, link), MRC_OK);
    char buf[32] = {0};
    f = fopen(victim, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "precious\n");
    assert_int_equal(mrc_topo_create(link, &back), MRC_OK);
    assert_same_topology(t, back);
    /* A directory is refused, naming it. */
    assert_int_equal(mrc_topo_save(t, dir), MRC_ERR_IO);
    assert_non_null(strstr(mrc_last_error(), dir));
    mrc_topo_destroy(t);
    mrc_topo_destroy(back);
    unlink(link);
    unlink(victim);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_generators),
        cmocka_unit_test(test_round_trip_file_with_names_and_odd_numbers),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_syntax_and_header),
        cmocka_unit_test(test_single_node_file),
        cmocka_unit_test(test_save_never_follows_a_link),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
