/* Workloads: the scheduler against hand-computed times (a chain, a
 * fork-join, compute hiding communication, the order of ready ops), the
 * cycle finder, and the reader's refusals; then whole steps simulated. */
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
#include "sim/workload.h"

enum { C = MRC__WL_COMPUTE, N = MRC__WL_COMM };

static void schedule(const mrc__workload_task_t *t, int n, double *start,
                     double *end)
{
    if (mrc__workload_schedule(t, n, start, end) != MRC_OK)
        fail_msg("%s", mrc_last_error());
}

/* A(10) -> B(network, 5) -> C(3): one after another, 18 us. */
static void test_chain(void **state)
{
    (void)state;
    static const int da[] = {0}, db[] = {1};
    const mrc__workload_task_t t[] = {
        {C, 10, 0, NULL}, {N, 5, 1, da}, {C, 3, 1, db}};
    double s[3], e[3];
    schedule(t, 3, s, e);
    assert_true(s[0] == 0 && e[0] == 10);
    assert_true(s[1] == 10 && e[1] == 15);
    assert_true(s[2] == 15 && e[2] == 18);
}

/* A(10) forks into B(compute, 4) and C(network, 6), which D(2) joins:
 * B and C run at once from 10; D starts when the later, C, ends. */
static void test_fork_join(void **state)
{
    (void)state;
    static const int da[] = {0}, dj[] = {1, 2};
    const mrc__workload_task_t t[] = {
        {C, 10, 0, NULL}, {C, 4, 1, da}, {N, 6, 1, da}, {C, 2, 2, dj}};
    double s[4], e[4];
    schedule(t, 4, s, e);
    assert_true(s[1] == 10 && e[1] == 14);
    assert_true(s[2] == 10 && e[2] == 16);
    assert_true(s[3] == 16 && e[3] == 18);
}

/* A backward pass of two layers with a bucket each:
 *   fwd 0-100, bwd2 100-150, ar2 150-190 (hidden behind bwd1 150-200),
 *   ar1 200-240 (exposed: nothing left to compute), opt 240-250.
 * Step 250 = compute 210 + exposed 40; communication 80. */
static void test_overlap(void **state)
{
    (void)state;
    static const int d_fwd[] = {0}, d_b2[] = {1}, d_b1[] = {3},
                     d_opt[] = {2, 4};
    const mrc__workload_task_t t[] = {{C, 100, 0, NULL}, {C, 50, 1, d_fwd},
                                      {N, 40, 1, d_b2},  {C, 50, 1, d_b2},
                                      {N, 40, 1, d_b1},  {C, 10, 2, d_opt}};
    double s[6], e[6];
    schedule(t, 6, s, e);
    const double want_s[] = {0, 100, 150, 150, 200, 240};
    const double want_e[] = {100, 150, 190, 200, 240, 250};
    for (int i = 0; i < 6; i++) {
        assert_true(s[i] == want_s[i]);
        assert_true(e[i] == want_e[i]);
    }
    /* Exposed: the network's intervals less what compute covers. */
    const double cs[] = {0, 100, 150, 240}, ce[] = {100, 150, 200, 250};
    const double ns[] = {150, 200}, ne[] = {190, 240};
    assert_true(mrc__workload_uncovered(cs, ce, 4, ns, ne, 2) == 40);
}

/* A free stream takes ready ops in the order they became ready, not in
 * the file's: Y (ready at 0) goes before X (ready at 10), though X comes
 * first; Z and W, ready at once, go in the file's order. */
static void test_ready_order(void **state)
{
    (void)state;
    static const int da[] = {0};
    const mrc__workload_task_t t[] = {{C, 10, 0, NULL},
                                      {N, 5, 1, da},
                                      {N, 20, 0, NULL},
                                      {N, 1, 1, da},
                                      {N, 2, 1, da}};
    double s[5], e[5];
    schedule(t, 5, s, e);
    assert_true(s[2] == 0 && e[2] == 20);
    assert_true(s[1] == 20 && e[1] == 25);
    assert_true(s[3] == 25 && s[4] == 26 && e[4] == 28);
}

static void test_cycle(void **state)
{
    (void)state;
    static const int d0[] = {2}, d1[] = {0}, d2[] = {1};
    const mrc__workload_task_t t[] = {
        {C, 1, 0, NULL}, {C, 1, 1, d1}, {C, 1, 1, d2}};
    const mrc__workload_task_t loop[] = {
        {C, 1, 1, d0}, {C, 1, 1, d1}, {N, 1, 1, d2}};
    int cycle[3];
    double s[3], e[3];
    assert_int_equal(mrc__workload_find_cycle(t, 3, cycle), 0);
    assert_int_equal(mrc__workload_find_cycle(loop, 3, cycle), 3);
    /* Each waits for the next: 0 on 2, 2 on 1, 1 on 0. */
    assert_int_equal(cycle[0], 0);
    assert_int_equal(cycle[1], 2);
    assert_int_equal(cycle[2], 1);
    assert_int_equal(mrc__workload_schedule(loop, 3, s, e),
                     MRC_ERR_INVALID_ARG);
}

#define HEAD "{\"format\": \"mrc-workload\", \"version\": 1, "
#define COMPUTE(id, d)                                                         \
    "{\"id\": \"" id "\", \"kind\": \"compute\", "                             \
    "\"duration_us\": " d
#define COLL(id, rest)                                                         \
    "{\"id\": \"" id "\", \"kind\": \"collective\", "                          \
    "\"collective\": " rest

/* Refused with MRC_ERR_PARSE, the message naming the op and the field. */
static void refused(const char *json, const char *what, const char *what2)
{
    mrc_workload_t *w = (mrc_workload_t *)1;
    mrc_status_t st = mrc_workload_parse(json, strlen(json), "t.json", &w);
    if (st != MRC_ERR_PARSE)
        fail_msg("accepted (%d): %s", st, json);
    assert_null(w);
    const char *m = mrc_last_error();
    if (!strstr(m, "t.json") || !strstr(m, what) ||
        (what2 && !strstr(m, what2)))
        fail_msg("'%s' does not name '%s' and '%s'", m, what,
                 what2 ? what2 : "");
}

static void test_refused(void **state)
{
    (void)state;
    refused("{\"format\": ", "JSON syntax error", NULL);
    refused("{\"format\": \"mrc-workload\", \"version\": 2, \"ops\": []}",
            "\"version\"", NULL);
    refused(HEAD "\"ops\": []}", "\"ops\"", NULL);
    refused(HEAD "\"opz\": [], \"ops\": [" COMPUTE("a", "1") "}]}",
            "unknown field \"opz\"", NULL);
    refused(HEAD "\"ops\": [" COMPUTE("a", "1") ", \"size\": 4}]}", "op \"a\"",
            "unknown field \"size\"");
    refused(HEAD "\"ops\": [" COMPUTE("a", "-1") "}]}", "op \"a\"",
            "\"duration_us\"");
    refused(HEAD "\"ops\": [" COMPUTE("a", "\"5\"") "}]}", "op \"a\"",
            "\"duration_us\"");
    refused(HEAD "\"ops\": [" COMPUTE("a", "1e999") "}]}", "JSON syntax error",
            NULL);
    refused(HEAD "\"ops\": [" COMPUTE("a", "1") ", \"deps\": [\"b\"]}]}",
            "op \"a\"", "\"b\", which is no op's id");
    refused(HEAD "\"ops\": [" COMPUTE("a", "1") ", \"deps\": [\"a\"]}]}",
            "op \"a\"", "itself");
    refused(HEAD "\"ops\": [" COMPUTE("a", "1") "}, " COMPUTE("a", "2") "}]}",
            "op \"a\"", "used twice");
    refused(
        HEAD "\"ops\": [" COMPUTE("a", "1") ", \"deps\": [\"c\"]}, " COMPUTE(
            "b",
            "1") ", \"deps\": [\"a\"]}, " COMPUTE("c",
                                                  "1") ", \"deps\": [\"b\"]}]}",
        "cycle", "\"a\" -> \"c\" -> \"b\" -> \"a\"");
    refused(HEAD "\"ops\": [" COMPUTE("a", "1") ", \"kind\": \"sleep\"}]}",
            "JSON", NULL); /* a key twice is a syntax error */
    refused(HEAD "\"ops\": [{\"id\": \"a\", \"kind\": \"sleep\"}]}", "op \"a\"",
            "\"kind\"");
    refused(HEAD
            "\"ops\": [" COLL("x", "\"allreduce\", \"size\": \"2T\"") "}]}",
            "op \"x\"", "1 TiB");
    refused(HEAD "\"ops\": [" COLL("x", "\"allreduce\", \"size\": 0") "}]}",
            "op \"x\"", "\"size\"");
    refused(HEAD "\"ops\": [" COLL("x", "\"allreduce\", \"size\": 6") "}]}",
            "op \"x\"", "whole number of float32");
    refused(HEAD "\"ops\": [" COLL("x", "\"allreduce\", \"size\": 8, "
                                        "\"root\": 1") "}]}",
            "op \"x\"", "\"root\" does not apply to allreduce");
    refused(HEAD "\"ops\": [" COLL("x", "\"broadcast\", \"size\": 8, "
                                        "\"op\": \"max\"") "}]}",
            "op \"x\"", "\"op\" does not apply to broadcast");
    refused(HEAD "\"ops\": [" COLL("x", "\"allreduce\", \"size\": 8, "
                                        "\"algo\": \"fast\"") "}]}",
            "op \"x\"", "\"algo\"");
    refused(HEAD "\"ops\": [" COLL("x", "\"allreduce\", \"size\": 8, "
                                        "\"duration_us\": 3") "}]}",
            "op \"x\"", "unknown field \"duration_us\"");
    refused("{\"foo\": 1}", "neither an mrc workload", NULL);
}

static mrc_workload_t *parse(const char *json)
{
    mrc_workload_t *w = NULL;
    if (mrc_workload_parse(json, strlen(json), NULL, &w) != MRC_OK)
        fail_msg("%s", mrc_last_error());
    return w;
}

/* The time `mrc sim` gives a 1 MiB float32 allreduce on ring:4. */
static double one_allreduce(const mrc_topo_t *t)
{
    mrc_embed_config_t ec = {0};
    mrc_compile_config_t cc = {
        .collective = MRC_ALLREDUCE, .count = 1 << 18, .dtype = MRC_FLOAT32};
    mrc_sim_config_t cfg = {.mode = MRC_SIM_BSP};
    mrc_embedding_t *e = NULL;
    mrc_program_t *p = NULL;
    mrc_sim_result_t *r = NULL;
    if (mrc_embed_create(t, &ec, &e) != MRC_OK ||
        mrc_program_compile(e, &cc, &p) != MRC_OK ||
        mrc_sim_run(p, t, &cfg, &r) != MRC_OK)
        fail_msg("%s", mrc_last_error());
    double us = r->time_us;
    mrc_sim_result_destroy(r);
    mrc_program_destroy(p);
    mrc_embed_destroy(e);
    return us;
}

/* Two buckets of the same collective are one simulation, each taking
 * its time; the step is compute plus what compute does not hide. */
static void test_step(void **state)
{
    (void)state;
    mrc_topo_t *t = NULL;
    assert_int_equal(mrc_topo_create("ring:4", &t), MRC_OK);
    double ar = one_allreduce(t);
    /* A workload written out op by op, one a line. */
    /* clang-format off */
    mrc_workload_t *w = parse(
        HEAD "\"steps\": 3, \"ops\": ["
        COMPUTE("fwd", "100") "}, "
        COMPUTE("b2", "50") ", \"deps\": [\"fwd\"]}, "
        COLL("ar2", "\"allreduce\", \"size\": \"1M\", \"deps\": [\"b2\"]") "}, "
        COMPUTE("b1", "50") ", \"deps\": [\"b2\"]}, "
        COLL("ar1", "\"allreduce\", \"size\": 1048576, \"dtype\": \"float32\", "
                    "\"deps\": [\"b1\"]") "}, "
        COLL("ag", "\"allgather\", \"size\": 4096, \"deps\": [\"b1\"]") "}]}");
    /* clang-format on */
    mrc_embed_config_t ec = {0};
    mrc_sim_config_t cfg = {.mode = MRC_SIM_BSP};
    mrc_workload_result_t *r = NULL;
    assert_int_equal(mrc_sim_workload(w, t, &ec, &cfg, &r), MRC_OK);
    assert_int_equal(r->num_ops, 6);
    assert_int_equal(r->distinct_collectives, 2);
    assert_int_equal(r->steps, 3);
    const mrc_workload_op_result_t *o = r->ops;
    assert_string_equal(o[2].id, "ar2");
    assert_int_equal(o[2].kind, MRC_WORKLOAD_COLLECTIVE);
    assert_true(o[2].start_us == 150 && o[2].end_us == 150 + ar);
    assert_true(o[4].start_us == fmax(200, 150 + ar));
    assert_true(fabs(o[4].end_us - o[4].start_us - ar) < 1e-9);
    /* The allgather waits for ar1 on the network. */
    assert_true(o[5].start_us == o[4].end_us);
    assert_true(r->step_us == o[5].end_us);
    assert_true(r->compute_us == 200);
    assert_true(fabs(r->step_us - r->compute_us - r->exposed_comm_us) < 1e-9);
    assert_true(r->step_us >= fmax(r->compute_us, r->comm_us));
    assert_true(r->total_us == 3 * r->step_us);
    assert_true(r->energy_j > 0 && r->energy_no_gating_j > r->energy_j);
    mrc_workload_result_destroy(r);
    mrc_workload_destroy(w);

    /* An op that does not apply is named with its id. */
    w = parse(HEAD "\"ops\": [" COLL("bad", "\"allgather\", \"size\": 64, "
                                            "\"algo\": \"direct2\"") "}]}");
    assert_int_equal(mrc_sim_workload(w, t, &ec, &cfg, &r),
                     MRC_ERR_UNSUPPORTED);
    assert_null(r);
    assert_non_null(strstr(mrc_last_error(), "op \"bad\""));
    mrc_workload_destroy(w);
    mrc_topo_destroy(t);
}

/* Chakra's jsonizer: metadata then nodes, one object after another. */
static void test_chakra(void **state)
{
    (void)state;
    mrc_workload_t *w = parse(
        "{\"version\": \"0.0.4\"}\n"
        "{\"id\": \"1\", \"type\": \"COMP_NODE\", \"durationMicros\": "
        "\"200\"}\n"
        "{\"id\": \"2\", \"type\": \"COMM_COLL_NODE\", \"dataDeps\": [\"1\"],"
        " \"durationMicros\": \"999\", \"attr\": [{\"name\": \"comm_type\", "
        "\"int64Val\": \"0\"}, {\"name\": \"comm_size\", \"int64Val\": "
        "\"1048576\"}]}\n"
        "{\"id\": \"3\", \"type\": \"COMP_NODE\", \"ctrlDeps\": [\"2\"], "
        "\"durationMicros\": \"10\"}\n");
    mrc_topo_t *t = NULL;
    assert_int_equal(mrc_topo_create("ring:4", &t), MRC_OK);
    mrc_embed_config_t ec = {0};
    mrc_sim_config_t cfg = {.mode = MRC_SIM_BSP};
    mrc_workload_result_t *r = NULL;
    assert_int_equal(mrc_sim_workload(w, t, &ec, &cfg, &r), MRC_OK);
    double ar = one_allreduce(t);
    assert_int_equal(r->num_ops, 3);
    assert_string_equal(r->ops[1].id, "2");
    assert_true(r->ops[1].start_us == 200 && r->ops[1].end_us == 200 + ar);
    assert_true(r->step_us == 210 + ar);
    mrc_workload_result_destroy(r);
    mrc_workload_destroy(w);
    mrc_topo_destroy(t);
    refused("{\"id\": 1, \"type\": \"COMM_COLL_NODE\", \"attr\": [{\"name\":"
            " \"comm_type\", \"int64Val\": 6}, {\"name\": \"comm_size\", "
            "\"int64Val\": 64}]}",
            "Chakra node 1", "comm_type");
    refused("{\"id\": 1, \"type\": \"COMM_SEND_NODE\"}", "Chakra node 1",
            "point-to-point");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain),   cmocka_unit_test(test_fork_join),
        cmocka_unit_test(test_overlap), cmocka_unit_test(test_ready_order),
        cmocka_unit_test(test_cycle),   cmocka_unit_test(test_refused),
        cmocka_unit_test(test_step),    cmocka_unit_test(test_chakra),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
