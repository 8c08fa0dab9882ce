/* The symmetric pipelined walk (one node standing for its group) against
 * the full walk of every node, and where it must not be taken. */
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
#include "program/plan.h"
#include "sim/sim_internal.h"

typedef struct setup {
    mrc_topo_t *topo;
    mrc_embedding_t *e;
    mrc_program_t *p;
} setup_t;

/* Compiles the collective on topo for the strategy (groups: NULL or
 * "A+B", algo the family); 0, or 1 where the program does not exist. */
static int make_on(setup_t *s, mrc_topo_t *topo, const char *strategy,
                   const char *groups, mrc_algo_t algo, mrc_collective_t c,
                   size_t count)
{
    memset(s, 0, sizeof *s);
    s->topo = topo;
    mrc_embed_config_t ec = {.strategy = strategy, .groups = groups};
    mrc_compile_config_t cc = {
        .collective = c, .count = count, .dtype = MRC_FLOAT32, .algo = algo};
    if (mrc_embed_create(topo, &ec, &s->e) != MRC_OK)
        fail_msg("%s, %s: %s", mrc_topo_name(topo), strategy, mrc_last_error());
    mrc_status_t st = mrc_program_compile(s->e, &cc, &s->p);
    if (st == MRC_ERR_UNSUPPORTED)
        return 1;
    if (st != MRC_OK)
        fail_msg("%s: %s", mrc_topo_name(topo), mrc_last_error());
    return 0;
}

static int make(setup_t *s, const char *spec, const char *strategy,
                mrc_collective_t c, size_t count)
{
    mrc_topo_t *topo = NULL;
    if (mrc_topo_create(spec, &topo) != MRC_OK)
        fail_msg("%s: %s", spec, mrc_last_error());
    return make_on(s, topo, strategy, NULL, MRC_ALGO_RINGS, c, count);
}

static void drop(setup_t *s)
{
    mrc_program_destroy(s->p);
    mrc_embed_destroy(s->e);
    mrc_topo_destroy(s->topo);
}

/* A hand-made profile: `per` nodes to a memory system, copies at 6 GB/s
 * in cache and 2 beyond (5 in cache from a peer: its own channel), the
 * system's memory 3, float32 sums at 4, 0.7 us a message; cache of
 * `cache` bytes. */
static mrc_profile_t profile(int per, double cache)
{
    mrc_profile_t f = {.version = MRC_PROFILE_VERSION,
                       .ranks = per,
                       .cores = per,
                       .nodes_per_memory = per,
                       .cache_bytes = cache,
                       .copy_gbps_cache = 6,
                       .copy_gbps_memory = 2,
                       .memory_gbps_shared = 3,
                       .peer_gbps_cache = 5,
                       .message_us = 0.7,
                       .sync_us = 0.2};
    snprintf(f.transport, sizeof f.transport, "threads");
    f.reduce_gbps_cache[MRC_FLOAT32][MRC_SUM] = 4;
    f.reduce_gbps_memory[MRC_FLOAT32][MRC_SUM] = 4;
    return f;
}

static mrc_sim_result_t *run(const setup_t *s, int chunks,
                             const mrc_profile_t *f, mrc__sim_fast_t sym)
{
    mrc_sim_config_t cfg = {
        .mode = MRC_SIM_PIPELINED, .chunks = chunks, .profile = f};
    mrc_sim_result_t *r = NULL;
    mrc__sim_sym = sym;
    mrc_status_t st = mrc_sim_run(s->p, s->topo, &cfg, &r);
    mrc__sim_sym = MRC__SIM_FAST_AUTO;
    if (st != MRC_OK)
        fail_msg("%s: %s", mrc_topo_name(s->topo), mrc_last_error());
    return r;
}

static void expect_rel(double got, double want, double tol, const char *what,
                       const char *where)
{
    if (fabs(got - want) > tol * fabs(want))
        fail_msg("%s, %s: %.17g, the full walk %.17g", where, what, got, want);
}

/* The symmetric walk gives the full walk's time, bytes and per-link
 * figures bit for bit, and its energy within 1e-12 (N times one node's
 * sum, not the sum of N). */
static void expect_same(const mrc_sim_result_t *y, const mrc_sim_result_t *x,
                        const char *where)
{
    expect_rel(y->time_us, x->time_us, 0, "time", where);
    expect_rel(y->bytes_moved, x->bytes_moved, 0, "bytes", where);
    assert_int_equal(y->num_links, x->num_links);
    for (int l = 0; l < 2 * x->num_links; l++) {
        expect_rel(y->link_bytes[l], x->link_bytes[l], 0, "link bytes", where);
        expect_rel(y->link_utilisation[l], x->link_utilisation[l], 0,
                   "utilisation", where);
    }
    expect_rel(y->energy_j, x->energy_j, 1e-12, "energy", where);
    expect_rel(y->energy_no_gating_j, x->energy_no_gating_j, 1e-12,
               "energy, no gating", where);
    expect_rel(y->efficiency, x->efficiency, 0, "efficiency", where);
}

/* profile(per, cache) of a transport with slots below a rendezvous
 * (shm's): a send is also its sender's copy into the slot, at 3 GB/s
 * (its first 2 KiB at half that), which then holds its sender's core
 * 0.3 us more. */
static mrc_profile_t slots_profile(int per, double cache)
{
    mrc_profile_t f = profile(per, cache);
    snprintf(f.transport, sizeof f.transport, "shm");
    f.rendezvous_bytes = 1 << 20;
    f.slot_gbps = 3;
    f.kernel_gbps = 4;
    f.send_us = 0.3;
    f.peer_ramp_bytes = 2048;
    return f;
}

/* Every collective on rings, tori, the torus ladder and hcm8, with and
 * without chunks, with no profile, one host in cache (a receiver's copy,
 * or shm's two copies through its slots), and a memory system per node
 * beyond cache: where the walk is taken it is the full walk's; it is
 * taken for the ring codes of these symmetric groups. */
static void test_sym_matches_full(void **state)
{
    (void)state;
    const char *specs[][2] = {{"ring:2", "ring"},
                              {"ring:3,bw=2,lat=100", "ring"},
                              {"ring:5", "auto"},
                              {"ring:8,lat=300", "ring"},
                              {"torus2d:4,4", "auto"},
                              {"torus2d:3,4,bw=7", "auto"},
                              {"torus-ladder:8", "peripheral-ring"},
                              {"ladder:8", "auto"},
                              {"hcm8", "auto"},
                              {"hcm8", "hcm8"}};
    enum { NSPECS = sizeof specs / sizeof specs[0] };
    const size_t count = 40320; /* 8!: divisible by every N x streams */
    int taken[NSPECS] = {0}, compared = 0;
    for (int i = 0; i < NSPECS; i++)
        for (int c = 0; c < MRC_NUM_COLLECTIVES; c++)
            for (int pr = 0; pr < 4; pr++)
                for (int chunks = 0; chunks <= 3; chunks += 3) {
                    setup_t s;
                    make(&s, specs[i][0], specs[i][1], (mrc_collective_t)c,
                         count);
                    int n = mrc_topo_num_nodes(s.topo);
                    mrc_profile_t f = pr == 1   ? profile(n, 1 << 30)
                                      : pr == 3 ? slots_profile(n, 1 << 30)
                                                : profile(1, 1024);
                    const mrc_profile_t *fp = pr ? &f : NULL;
                    mrc_sim_config_t cfg = {.mode = MRC_SIM_PIPELINED,
                                            .chunks = chunks,
                                            .profile = fp};
                    const char *why = NULL;
                    if (mrc__sim_sym_applies(s.p, s.topo, &cfg, &why)) {
                        char where[160];
                        snprintf(where, sizeof where,
                                 "%s %s, collective %d, profile %d, "
                                 "chunks %d",
                                 specs[i][0], specs[i][1], c, pr, chunks);
                        mrc_sim_result_t *x =
                            run(&s, chunks, fp, MRC__SIM_FAST_NEVER);
                        mrc_sim_result_t *y =
                            run(&s, chunks, fp, MRC__SIM_FAST_AUTO);
                        expect_same(y, x, where);
                        mrc_sim_result_destroy(x);
                        mrc_sim_result_destroy(y);
                        taken[i] += c == MRC_ALLREDUCE;
                        compared++;
                    } else {
                        assert_non_null(why);
                    }
                    drop(&s);
                }
    /* The rings, the tori and the ladders take it for allreduce, with
     * every profile and chunking. */
    for (int i = 0; i < 8; i++)
        if (taken[i] != 8)
            fail_msg("%s %s: the symmetric walk taken for %d of 8 "
                     "allreduces",
                     specs[i][0], specs[i][1], taken[i]);
    assert_true(compared >= 8 * 8 * 3);
}

/* Walks pipelined with the walk switched off and on (auto), and expects
 * the two to agree: where the walk does not apply, auto is the full
 * walk. */
static void expect_refused(const setup_t *s, const mrc_profile_t *f,
                           const char *want)
{
    mrc_sim_config_t cfg = {.mode = MRC_SIM_PIPELINED, .profile = f};
    const char *why = NULL;
    assert_false(mrc__sim_sym_applies(s->p, s->topo, &cfg, &why));
    if (!why || !strstr(why, want))
        fail_msg("%s: refused because \"%s\", expected \"%s\"",
                 mrc_topo_name(s->topo), why ? why : "(null)", want);
    mrc_sim_result_t *x = run(s, 0, f, MRC__SIM_FAST_NEVER);
    mrc_sim_result_t *y = run(s, 0, f, MRC__SIM_FAST_AUTO);
    expect_same(y, x, mrc_topo_name(s->topo));
    mrc_sim_result_destroy(x);
    mrc_sim_result_destroy(y);
}

/* Not taken where one node cannot stand for the others: uneven
 * fragments, several groups, a failed link, mixed link classes, a memory
 * system shared beyond cache, a code that is not a ring's. */
static void test_sym_refused(void **state)
{
    (void)state;
    setup_t s;
    make(&s, "ring:4", "ring", MRC_ALLREDUCE, 1001);
    expect_refused(&s, NULL, "one size");
    drop(&s);

    mrc_topo_t *t = NULL;
    assert_int_equal(mrc_topo_create("hcm8", &t), MRC_OK);
    assert_int_equal(
        make_on(&s, t, "hcm8", "4+4", MRC_ALGO_RINGS, MRC_ALLREDUCE, 40320), 0);
    expect_refused(&s, NULL, "several groups");
    drop(&s);

    mrc_topo_t *whole = NULL;
    assert_int_equal(mrc_topo_create("torus2d:4,4", &whole), MRC_OK);
    assert_int_equal(mrc_topo_fail_links(whole, "0-1", &t), MRC_OK);
    mrc_topo_destroy(whole);
    assert_int_equal(
        make_on(&s, t, "auto", NULL, MRC_ALGO_RINGS, MRC_ALLREDUCE, 40320), 0);
    expect_refused(&s, NULL, "alike");
    drop(&s);

    make(&s, "torus-ladder:8,rung=2", "peripheral-ring", MRC_ALLREDUCE, 40320);
    expect_refused(&s, NULL, "bandwidth");
    drop(&s);

    make(&s, "ring:4", "ring", MRC_ALLREDUCE, 40320);
    mrc_profile_t f = profile(4, 1024);
    expect_refused(&s, &f, "memory system");
    f = profile(2, 1 << 30); /* two hosts: copies and links */
    expect_refused(&s, &f, "differ");
    drop(&s);

    assert_int_equal(mrc_topo_create("ring:4", &t), MRC_OK);
    if (make_on(&s, t, NULL, NULL, MRC_ALGO_TREE, MRC_ALLREDUCE, 40320))
        fail_msg("tree: %s", mrc_last_error());
    expect_refused(&s, NULL, "ring code");
    drop(&s);

    make(&s, "ring:8", "ring", MRC_REDUCE, 40320);
    expect_refused(&s, NULL, "ring code");
    drop(&s);
}

/* Large groups: the symmetric walk has no bound but its events; the full
 * walk's bound of 4096 nodes stays, and its refusal says why the
 * symmetric walk did not apply. */
static void test_sym_large(void **state)
{
    (void)state;
    setup_t s;
    make(&s, "ring:5000", "ring", MRC_ALLREDUCE, 5000 * 2 * 3);
    mrc_sim_result_t *r = run(&s, 1, NULL, MRC__SIM_FAST_AUTO);
    assert_true(r->time_us > 0);
    mrc_sim_result_destroy(r);
    mrc_sim_config_t cfg = {.mode = MRC_SIM_PIPELINED};
    mrc__sim_sym = MRC__SIM_FAST_NEVER;
    assert_int_equal(mrc_sim_run(s.p, s.topo, &cfg, &r), MRC_ERR_INVALID_ARG);
    mrc__sim_sym = MRC__SIM_FAST_AUTO;
    assert_non_null(strstr(mrc_last_error(), "4096"));
    assert_non_null(strstr(mrc_last_error(), "switched off"));
    drop(&s);

    make(&s, "ring:5000", "ring", MRC_ALLREDUCE, 5000 * 2 * 3 + 1);
    assert_int_equal(mrc_sim_run(s.p, s.topo, &cfg, &r), MRC_ERR_INVALID_ARG);
    assert_null(r);
    assert_non_null(strstr(mrc_last_error(), "4096"));
    assert_non_null(strstr(mrc_last_error(), "one size"));
    drop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sym_matches_full),
        cmocka_unit_test(test_sym_refused),
        cmocka_unit_test(test_sym_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
