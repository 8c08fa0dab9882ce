/* Host profiles: parse, load and to_json round trip, and every bad input
 * refused with a message naming what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "mrc/mrc.h"

static mrc_profile_t sample(void)
{
    mrc_profile_t p;
    memset(&p, 0, sizeof p);
    p.version = MRC_PROFILE_VERSION;
    snprintf(p.transport, sizeof p.transport, "shm");
    p.ranks = 4;
    p.cores = 2;
    p.nodes_per_memory = 4;
    p.cache_bytes = 4194304;
    p.copy_gbps_cache = 41.5;
    p.copy_gbps_memory = 7.25;
    p.memory_gbps_shared = 9.875;
    p.peer_gbps_cache = 12.5;
    p.private_cache_bytes = 1048576;
    p.peer_gbps_shared = 6.5;
    p.rendezvous_bytes = 16384;
    p.rendezvous_us = 2.25;
    p.slot_gbps = 4.75;
    p.turn_us = 2.5;
    p.flag_turn_us = 0.75;
    p.get_us = 0.625;
    p.kernel_gbps = 8.5;
    p.spin_share = 0.375;
    p.cache_falloff = 2.5;
    p.peer_contention = 0.25;
    p.copy_gbps_shared = 30.5;
    p.latency_us = 0.125;
    p.quiet_turn_share = 0.875;
    p.canary_us = 0.6875;
    p.window_gbps = 6.25;
    p.stream_bytes = 2097152;
    p.stream_gbps = 9.25;
    p.send_by_ref = 1;
    p.kernel_gbps_cache = 17.5;
    p.send_us = 0.3125;
    p.peer_ramp_bytes = 8192;
    p.reduce_gbps_cache[MRC_FLOAT32][MRC_SUM] = 20.1;
    p.reduce_gbps_memory[MRC_FLOAT32][MRC_SUM] = 5.3;
    p.reduce_gbps_cache[MRC_BFLOAT16][MRC_MAX] = 3.0000000000000004;
    p.reduce_gbps_memory[MRC_INT8][MRC_AVG] = 1e-3;
    p.message_us = 0.4;
    p.sync_us = 0;
    return p;
}

static void test_round_trip(void **state)
{
    (void)state;
    mrc_profile_t p = sample(), q;
    char *json = NULL;
    assert_int_equal(mrc_profile_to_json(&p, &json), MRC_OK);
    assert_non_null(strstr(json, "\"bfloat16\""));
    assert_non_null(strstr(json, "\"max\""));
    assert_int_equal(mrc_profile_parse(json, strlen(json), &q), MRC_OK);
    assert_memory_equal(&p, &q, sizeof p);
    mrc_free(json);

    /* Nothing measured: an empty reduce_gbps reads back. */
    memset(p.reduce_gbps_cache, 0, sizeof p.reduce_gbps_cache);
    memset(p.reduce_gbps_memory, 0, sizeof p.reduce_gbps_memory);
    assert_int_equal(mrc_profile_to_json(&p, &json), MRC_OK);
    assert_int_equal(mrc_profile_parse(json, strlen(json), &q), MRC_OK);
    assert_memory_equal(&p, &q, sizeof p);
    mrc_free(json);
}

/* peer_gbps_cache is optional (profiles written before it read back
 * with 0: the copy rate). */
static void test_optional_peer(void **state)
{
    (void)state;
    mrc_profile_t p = sample(), q;
    char *json = NULL;
    assert_int_equal(mrc_profile_to_json(&p, &json), MRC_OK);
    char *at = strstr(json, "  \"peer_gbps_cache\": 12.5,\n");
    assert_non_null(at);
    const char *rest = strchr(at, '\n') + 1;
    memmove(at, rest, strlen(rest) + 1);
    assert_int_equal(mrc_profile_parse(json, strlen(json), &q), MRC_OK);
    assert_true(q.peer_gbps_cache == 0);
    p.peer_gbps_cache = 0;
    assert_memory_equal(&p, &q, sizeof p);
    mrc_free(json);
}

/* The transport's figures are optional too (profiles written before
 * them read back with 0: no slots, no rendezvous, the copy rate). */
static void test_optional_transport(void **state)
{
    (void)state;
    mrc_profile_t p = sample(), q;
    char *json = NULL;
    assert_int_equal(mrc_profile_to_json(&p, &json), MRC_OK);
    const char *const lines[] = {
        "  \"peer_gbps_shared\": 6.5,\n", "  \"rendezvous_bytes\": 16384,\n",
        "  \"rendezvous_us\": 2.25,\n",   "  \"slot_gbps\": 4.75,\n",
        "  \"turn_us\": 2.5,\n",          "  \"flag_turn_us\": 0.75,\n",
        "  \"get_us\": 0.625,\n",         "  \"kernel_gbps\": 8.5,\n",
        "  \"spin_share\": 0.375,\n",     "  \"cache_falloff\": 2.5,\n",
        "  \"peer_contention\": 0.25,\n", "  \"copy_gbps_shared\": 30.5,\n",
        "  \"latency_us\": 0.125,\n",     "  \"quiet_turn_share\": 0.875,\n",
        "  \"canary_us\": 0.6875,\n",     "  \"window_gbps\": 6.25,\n",
        "  \"stream_bytes\": 2097152,\n", "  \"stream_gbps\": 9.25,\n",
        "  \"send_by_ref\": 1,\n",        "  \"kernel_gbps_cache\": 17.5,\n",
        "  \"send_us\": 0.3125,\n",       "  \"peer_ramp_bytes\": 8192,\n"};
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        char *at = strstr(json, lines[i]);
        if (!at)
            fail_msg("'%s' not in %s", lines[i], json);
        memmove(at, at + strlen(lines[i]), strlen(at + strlen(lines[i])) + 1);
    }
    assert_int_equal(mrc_profile_parse(json, strlen(json), &q), MRC_OK);
    p.peer_gbps_shared = p.rendezvous_bytes = p.rendezvous_us = 0;
    p.slot_gbps = p.turn_us = p.flag_turn_us = p.get_us = p.kernel_gbps = 0;
    p.spin_share = p.cache_falloff = p.peer_contention = 0;
    p.copy_gbps_shared = p.latency_us = p.quiet_turn_share = 0;
    p.canary_us = p.window_gbps = p.stream_bytes = p.stream_gbps = 0;
    p.send_by_ref = p.kernel_gbps_cache = p.send_us = p.peer_ramp_bytes = 0;
    assert_memory_equal(&p, &q, sizeof p);
    mrc_free(json);
}

/* The threshold a communicator takes from a profile: its stream_bytes,
 * else the built-in 8 MiB; past SIZE_MAX, SIZE_MAX. */
static void test_stream_bytes(void **state)
{
    (void)state;
    mrc_profile_t p = sample();
    assert_int_equal(mrc_profile_stream_bytes(&p), 2097152);
    p.stream_bytes = 0;
    assert_int_equal(mrc_profile_stream_bytes(&p), 8 << 20);
    assert_int_equal(mrc_profile_stream_bytes(NULL), 8 << 20);
    p.stream_bytes = 1e30;
    assert_true(mrc_profile_stream_bytes(&p) == SIZE_MAX);
}

/* send_by_ref's rule: the kernel's read beats the owner's copy and its
 * reader's of the fresh lines (the window rate, else the peer rate) one
 * after the other; no rule without the rates. */
static void test_reads_sends(void **state)
{
    (void)state;
    mrc_profile_t p = sample(); /* 8.5 against 41.5 then 6.25: 5.43 */
    assert_int_equal(mrc_profile_kernel_read_faster(&p), 1);
    p.kernel_gbps = 5.4;
    assert_int_equal(mrc_profile_kernel_read_faster(&p), 0);
    p.kernel_gbps = 5.45;
    assert_int_equal(mrc_profile_kernel_read_faster(&p), 1);
    p.window_gbps = 0; /* the peer rate: 41.5 then 12.5, 9.61 */
    assert_int_equal(mrc_profile_kernel_read_faster(&p), 0);
    p.kernel_gbps = 9.7;
    assert_int_equal(mrc_profile_kernel_read_faster(&p), 1);
    p.peer_gbps_cache = 0;
    assert_int_equal(mrc_profile_kernel_read_faster(&p), 0);
    p = sample();
    p.kernel_gbps = 0;
    assert_int_equal(mrc_profile_kernel_read_faster(&p), 0);
    assert_int_equal(mrc_profile_kernel_read_faster(NULL), 0);
}

/* The sample's JSON with `from` replaced by `to` (once). */
static char *edited(const char *from, const char *to)
{
    mrc_profile_t p = sample();
    char *json = NULL;
    assert_int_equal(mrc_profile_to_json(&p, &json), MRC_OK);
    char *at = strstr(json, from);
    if (!at)
        fail_msg("'%s' not in %s", from, json);
    size_t n = strlen(json) + strlen(to) + 1;
    char *out = malloc(n);
    assert_non_null(out);
    snprintf(out, n, "%.*s%s%s", (int)(at - json), json, to, at + strlen(from));
    mrc_free(json);
    return out;
}

static void refused(const char *from, const char *to, const char *message)
{
    char *text = edited(from, to);
    mrc_profile_t q;
    memset(&q, 0x5a, sizeof q);
    mrc_profile_t before = q;
    assert_int_equal(mrc_profile_parse(text, strlen(text), &q),
                     MRC_ERR_INVALID_ARG);
    if (!strstr(mrc_last_error(), message))
        fail_msg("'%s' -> '%s': '%s' lacks '%s'", from, to, mrc_last_error(),
                 message);
    /* Nothing partial reaches the caller. */
    assert_memory_equal(&q, &before, sizeof q);
    free(text);
}

static void test_bad_fields(void **state)
{
    (void)state;
    refused("\"version\": 1", "\"version\": 2",
            "profile version 2; this mrc reads version 1");
    refused("\"version\": 1", "\"version\": \"1\"", "\"version\"");
    refused("\"version\": 1,", "", "\"version\" is missing");
    refused("\"mrc-profile\"", "\"mrc-topology\"", "not a profile");
    refused("\"shm\"", "\"tcp\"", "\"transport\" must be");
    refused("\"ranks\": 4", "\"ranks\": 0", "\"ranks\"");
    refused("\"ranks\": 4", "\"ranks\": 2.5", "\"ranks\"");
    refused("\"cores\": 2,", "", "\"cores\" is missing");
    refused("\"nodes_per_memory\": 4", "\"nodes_per_memory\": -1",
            "\"nodes_per_memory\"");
    refused("\"cache_bytes\": 4194304", "\"cache_bytes\": 0",
            "\"cache_bytes\" must be a number above 0");
    refused("\"copy_gbps_cache\": 41.5", "\"copy_gbps_cache\": -41.5",
            "\"copy_gbps_cache\"");
    refused("\"copy_gbps_memory\": 7.25", "\"copy_gbps_memory\": \"fast\"",
            "\"copy_gbps_memory\"");
    refused("\"memory_gbps_shared\": 9.875", "\"memory_gbps_shared\": 1e300",
            "\"memory_gbps_shared\"");
    refused("\"peer_gbps_cache\": 12.5", "\"peer_gbps_cache\": -1",
            "\"peer_gbps_cache\"");
    refused("\"slot_gbps\": 4.75", "\"slot_gbps\": -4.75", "\"slot_gbps\"");
    refused("\"flag_turn_us\": 0.75", "\"flag_turn_us\": -1",
            "\"flag_turn_us\"");
    refused("\"spin_share\": 0.375", "\"spin_share\": 1.5", "\"spin_share\"");
    refused("\"quiet_turn_share\": 0.875", "\"quiet_turn_share\": 1.5",
            "\"quiet_turn_share\"");
    refused("\"canary_us\": 0.6875", "\"canary_us\": -0.5", "\"canary_us\"");
    refused("\"window_gbps\": 6.25", "\"window_gbps\": -1", "\"window_gbps\"");
    refused("\"send_by_ref\": 1", "\"send_by_ref\": 0.5",
            "\"send_by_ref\" must be 0 or 1");
    refused("\"send_by_ref\": 1", "\"send_by_ref\": 2", "\"send_by_ref\"");
    refused("\"kernel_gbps_cache\": 17.5", "\"kernel_gbps_cache\": -1",
            "\"kernel_gbps_cache\"");
    refused("\"kernel_gbps_cache\": 17.5", "\"kernel_gbps_cache\": 1e300",
            "\"kernel_gbps_cache\"");
    refused("\"send_us\": 0.3125", "\"send_us\": -0.5", "\"send_us\"");
    refused("\"send_us\": 0.3125", "\"send_us\": 1e300", "\"send_us\"");
    refused("\"peer_ramp_bytes\": 8192", "\"peer_ramp_bytes\": -1",
            "\"peer_ramp_bytes\"");
    refused("\"stream_bytes\": 2097152", "\"stream_bytes\": 0",
            "\"stream_bytes\"");
    refused("\"stream_bytes\": 2097152", "\"stream_bytes\": \"8M\"",
            "\"stream_bytes\"");
    refused("\"stream_bytes\": 2097152", "\"stream_bytes\": 0.5",
            "\"stream_bytes\"");
    refused("\"stream_bytes\": 2097152", "\"stream_bytes\": 1048576.5",
            "\"stream_bytes\"");
    refused("\"stream_gbps\": 9.25", "\"stream_gbps\": -9.25",
            "\"stream_gbps\"");
    refused("\"stream_gbps\": 9.25", "\"stream_gbps\": 1e300",
            "\"stream_gbps\"");
    refused("\"cache_falloff\": 2.5", "\"cache_falloff\": 65",
            "\"cache_falloff\"");
    refused("\"cache_falloff\": 2.5", "\"cache_falloff\": -1",
            "\"cache_falloff\"");
    refused("\"peer_contention\": 0.25", "\"peer_contention\": 17",
            "\"peer_contention\"");
    refused("\"peer_contention\": 0.25", "\"peer_contention\": -0.5",
            "\"peer_contention\"");
    refused("\"copy_gbps_shared\": 30.5", "\"copy_gbps_shared\": -1",
            "\"copy_gbps_shared\"");
    refused("\"rendezvous_us\": 2.25", "\"rendezvous_us\": \"long\"",
            "\"rendezvous_us\"");
    refused("\"rendezvous_bytes\": 16384", "\"rendezvous_bytes\": 1e300",
            "\"rendezvous_bytes\"");
    refused("\"message_us\": 0.4", "\"message_us\": -0.4", "\"message_us\"");
    refused("\"sync_us\": 0", "\"sync_us\": null", "\"sync_us\"");
    refused("\"sync_us\": 0", "\"sync_us\": 0, \"sync\": 1",
            "unknown field \"sync\"");
    refused("\"float32\"", "\"float33\"", "unknown dtype \"float33\"");
    refused("\"sum\"", "\"add\"", "unknown op \"add\"");
    refused("\"cache\": 20.1", "\"cache\": -1",
            "\"reduce_gbps.float32.sum.cache\"");
    refused("\"cache\": 20.1, ", "",
            "reduce_gbps.float32.sum.cache\" is "
            "missing");
    refused("{\"cache\": 20.1, \"memory\": 5.3}", "7",
            "\"reduce_gbps.float32.sum\" must be an object");
    refused("\"cache\": 20.1", "\"cache\": 20.1, \"dram\": 1",
            "unknown field \"dram\" in reduce_gbps.float32.sum");
}

static void test_bad_text(void **state)
{
    (void)state;
    mrc_profile_t q;
    const char *cases[][2] = {
        {"", "empty"},
        {"{\"version\": 1", "not JSON"},
        {"[1, 2]", "not a profile"},
        {"garbage", "not JSON"},
        {"{\"version\": 1, \"version\": 1}", "not JSON"},
        {"{\"version\": 1}", "\"transport\" is missing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(
            mrc_profile_parse(cases[i][0], strlen(cases[i][0]), &q),
            MRC_ERR_INVALID_ARG);
        if (!strstr(mrc_last_error(), cases[i][1]))
            fail_msg("'%s': '%s' lacks '%s'", cases[i][0], mrc_last_error(),
                     cases[i][1]);
    }
    assert_int_equal(mrc_profile_parse(NULL, 0, &q), MRC_ERR_INVALID_ARG);
    /* Nothing is written that would not read back. */
    mrc_profile_t p = sample();
    char *json = (char *)"untouched";
    p.copy_gbps_memory = NAN;
    assert_int_equal(mrc_profile_to_json(&p, &json), MRC_ERR_INVALID_ARG);
    assert_null(json);
    assert_non_null(strstr(mrc_last_error(), "\"copy_gbps_memory\""));
    p = sample();
    snprintf(p.transport, sizeof p.transport, "tcp");
    assert_int_equal(mrc_profile_to_json(&p, &json), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "\"transport\""));
    assert_int_equal(mrc_profile_to_json(NULL, NULL), MRC_ERR_INVALID_ARG);
}

static void write_text(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void load_refused(const char *path, mrc_status_t st, const char *message)
{
    mrc_profile_t q;
    assert_int_equal(mrc_profile_load(path, &q), st);
    if (!strstr(mrc_last_error(), message))
        fail_msg("%s: '%s' lacks '%s'", path, mrc_last_error(), message);
}

static void test_load(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    char dir[256];
    snprintf(dir, sizeof dir, "%s/mrc-profile-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    char path[512];
    mrc_profile_t p = sample(), q;
    char *json = NULL;
    assert_int_equal(mrc_profile_to_json(&p, &json), MRC_OK);

    snprintf(path, sizeof path, "%s/good.json", dir);
    write_text(path, json, strlen(json));
    assert_int_equal(mrc_profile_load(path, &q), MRC_OK);
    assert_memory_equal(&p, &q, sizeof p);
    mrc_free(json);

    /* The file's name in every message. */
    snprintf(path, sizeof path, "%s/old.json", dir);
    char *old = edited("\"version\": 1", "\"version\": 0");
    write_text(path, old, strlen(old));
    free(old);
    load_refused(path, MRC_ERR_INVALID_ARG, "old.json");
    load_refused(path, MRC_ERR_INVALID_ARG, "profile version 0");

    snprintf(path, sizeof path, "%s/empty.json", dir);
    write_text(path, "", 0);
    load_refused(path, MRC_ERR_INVALID_ARG, "empty.json: profile: empty");

    snprintf(path, sizeof path, "%s/big.json", dir);
    size_t big = ((size_t)1 << 20) + 1;
    char *spaces = malloc(big);
    assert_non_null(spaces);
    memset(spaces, ' ', big);
    write_text(path, spaces, big);
    free(spaces);
    load_refused(path, MRC_ERR_INVALID_ARG, "not a profile (at most 1 MiB)");
    unlink(path);

    load_refused(dir, MRC_ERR_INVALID_ARG, "is not a regular file");
    snprintf(path, sizeof path, "%s/missing.json", dir);
    load_refused(path, MRC_ERR_IO, "missing.json: cannot open");

    snprintf(path, sizeof path, "%s/good.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/old.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/empty.json", dir);
    unlink(path);
    rmdir(dir);
}

typedef struct rank_call {
    mrc_comm_t *comm;
    float v[3];
    mrc_status_t st;
} rank_call_t;

static void *allreduce_rank(void *arg)
{
    rank_call_t *r = arg;
    r->st = mrc_allreduce(r->v, r->v, 3, MRC_FLOAT32, MRC_SUM, r->comm);
    return NULL;
}

/* Two threads' allreduce under the profile in $MRC_PROFILE. */
static void run_pair(void)
{
    mrc_comm_t *comms[2];
    assert_int_equal(mrc_comm_init_all(comms, 2, NULL), MRC_OK);
    rank_call_t r[2] = {{.comm = comms[0], .v = {1, 2, 3}},
                        {.comm = comms[1], .v = {10, 20, 30}}};
    pthread_t tid;
    assert_int_equal(pthread_create(&tid, NULL, allreduce_rank, &r[1]), 0);
    allreduce_rank(&r[0]);
    pthread_join(tid, NULL);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(r[k].st, MRC_OK);
        assert_true(r[k].v[0] == 11 && r[k].v[1] == 22 && r[k].v[2] == 33);
    }
    mrc_comm_destroy(comms[0]);
    mrc_comm_destroy(comms[1]);
}

/* $MRC_PROFILE: used when right; a bad file, or one of another
 * transport, fails the communicator's creation naming it. */
static void test_env(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    char dir[256], path[512];
    snprintf(dir, sizeof dir, "%s/mrc-profile-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    mrc_profile_t p = sample();
    snprintf(p.transport, sizeof p.transport, "threads");
    char *json = NULL;
    assert_int_equal(mrc_profile_to_json(&p, &json), MRC_OK);
    snprintf(path, sizeof path, "%s/threads.json", dir);
    write_text(path, json, strlen(json));
    mrc_free(json);

    assert_int_equal(setenv("MRC_PROFILE", path, 1), 0);
    run_pair();
    assert_int_equal(setenv("MRC_PROFILE", "", 1), 0);
    run_pair();

    mrc_comm_t *comms[2];
    p = sample(); /* shm */
    assert_int_equal(mrc_profile_to_json(&p, &json), MRC_OK);
    write_text(path, json, strlen(json));
    mrc_free(json);
    assert_int_equal(setenv("MRC_PROFILE", path, 1), 0);
    assert_int_equal(mrc_comm_init_all(comms, 2, NULL), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "measured on the shm transport, "
                                             "and this communicator runs "
                                             "over threads"));
    assert_null(comms[0]);

    write_text(path, "{", 1);
    assert_int_equal(mrc_comm_init_all(comms, 2, NULL), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "$MRC_PROFILE: "));
    assert_non_null(strstr(mrc_last_error(), "threads.json: profile: not "
                                             "JSON"));
    unlink(path);
    assert_int_equal(mrc_comm_init_all(comms, 2, NULL), MRC_ERR_IO);
    assert_non_null(strstr(mrc_last_error(), "threads.json: cannot open"));
    unsetenv("MRC_PROFILE");
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_stream_bytes),
        cmocka_unit_test(test_reads_sends),
        cmocka_unit_test(test_optional_peer),
        cmocka_unit_test(test_optional_transport),
        cmocka_unit_test(test_bad_fields),
        cmocka_unit_test(test_bad_text),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
