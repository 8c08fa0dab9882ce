/* The selector: candidates, reasons, forcing, and its small pieces; and
 * the MRC_DEBUG levels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "mrc/mrc.h"
#include "sim/select.h"

typedef struct fixture {
    mrc_topo_t *topo;
    mrc_embedding_t *e;
    mrc__select_input_t in;
} fixture_t;

static void make(fixture_t *f, const char *spec, mrc_collective_t c,
                 size_t count, mrc__sim_transport_t x)
{
    memset(f, 0, sizeof *f);
    mrc_embed_config_t ec = {0};
    if (mrc_topo_create(spec, &f->topo) != MRC_OK ||
        mrc_embed_create(f->topo, &ec, &f->e) != MRC_OK)
        fail_msg("%s: %s", spec, mrc_last_error());
    f->in = (mrc__select_input_t){
        .embedding = f->e,
        .topo = f->topo,
        .cc = {.collective = c, .count = count, .dtype = MRC_FLOAT32},
        .group = -1,
        .transport = x,
        .memory_ok = x != MRC__SIM_TRANSPORT_MPI,
        .ref_ok = 1};
}

static void drop(fixture_t *f)
{
    mrc_embed_destroy(f->e);
    mrc_topo_destroy(f->topo);
}

/* The chosen family applies and is the fastest of those that do. */
static void assert_fastest(const mrc__selection_t *s)
{
    assert_true(s->chosen >= 0 && s->chosen < MRC_NUM_ALGOS);
    const mrc__candidate_t *w = &s->cand[s->chosen];
    assert_int_equal(w->status, MRC_OK);
    for (int a = 0; a < MRC_NUM_ALGOS; a++) {
        assert_int_equal(s->cand[a].algo, a);
        if (s->cand[a].status == MRC_OK)
            assert_true(w->time_us <= s->cand[a].time_us);
        else
            assert_true(s->cand[a].why[0] != '\0');
    }
    assert_true(s->reason[0] != '\0');
}

static void test_shm_small_and_large(void **state)
{
    (void)state;
    fixture_t f;
    mrc__selection_t s;
    mrc_program_t *p = NULL;
    make(&f, "ring:4", MRC_ALLREDUCE, 64, MRC__SIM_TRANSPORT_SHM); /* 256 B */
    assert_int_equal(mrc__select(&f.in, MRC_ALGO_AUTO, &s, &p), MRC_OK);
    assert_fastest(&s);
    assert_int_equal(s.chosen, MRC_ALGO_DIRECT1);
    mrc_program_info_t info;
    assert_int_equal(mrc_program_info(p, &info), MRC_OK);
    assert_int_equal(info.config.algo, MRC_ALGO_DIRECT1);
    mrc_program_destroy(p);
    f.in.cc.count = 1 << 18; /* 1 MiB */
    assert_int_equal(mrc__select(&f.in, MRC_ALGO_AUTO, &s, NULL), MRC_OK);
    assert_fastest(&s);
    assert_int_equal(s.chosen, MRC_ALGO_DIRECT2);
    drop(&f);
}

/* No memory semantics: never direct1 or direct2, with the transport's
 * reason. */
static void test_no_memory(void **state)
{
    (void)state;
    fixture_t f;
    mrc__selection_t s;
    make(&f, "ring:4", MRC_ALLREDUCE, 64, MRC__SIM_TRANSPORT_MPI);
    assert_int_equal(mrc__select(&f.in, MRC_ALGO_AUTO, &s, NULL), MRC_OK);
    assert_fastest(&s);
    assert_true(s.chosen != MRC_ALGO_DIRECT1 && s.chosen != MRC_ALGO_DIRECT2);
    assert_int_equal(s.cand[MRC_ALGO_RINGS].status, MRC_OK);
    assert_int_equal(s.cand[MRC_ALGO_DIRECT1].status, MRC_ERR_UNSUPPORTED);
    assert_non_null(strstr(s.cand[MRC_ALGO_DIRECT1].why, "point-to-point"));
    f.in.transport = MRC__SIM_TRANSPORT_THREADS;
    f.in.memory_ok = 0;
    f.in.no_memory_why = "cannot, for this test";
    assert_int_equal(mrc__select(&f.in, MRC_ALGO_AUTO, &s, NULL), MRC_OK);
    assert_true(s.chosen != MRC_ALGO_DIRECT1 && s.chosen != MRC_ALGO_DIRECT2);
    assert_non_null(strstr(s.cand[MRC_ALGO_DIRECT2].why, "for this test"));
    drop(&f);
}

/* Forcing: the family, or MRC_ERR_UNSUPPORTED naming it and why. */
static void test_forced(void **state)
{
    (void)state;
    fixture_t f;
    mrc__selection_t s;
    mrc_program_t *p = NULL;
    make(&f, "ring:5", MRC_ALLGATHER, 3, MRC__SIM_TRANSPORT_SHM);
    assert_int_equal(mrc__select(&f.in, MRC_ALGO_DIRECT2, &s, &p),
                     MRC_ERR_UNSUPPORTED);
    assert_null(p);
    assert_non_null(strstr(mrc_last_error(), "direct2"));
    assert_non_null(strstr(mrc_last_error(), "allgather"));
    assert_int_equal(mrc__select(&f.in, MRC_ALGO_RINGS, &s, &p), MRC_OK);
    assert_int_equal(s.chosen, MRC_ALGO_RINGS);
    assert_non_null(strstr(s.reason, "forced"));
    assert_non_null(p);
    mrc_program_destroy(p);
    drop(&f);
}

/* On the links the simulator times rings; a family it cannot time is
 * skipped, never timed as free. */
static void test_links(void **state)
{
    (void)state;
    fixture_t f;
    mrc__selection_t s;
    make(&f, "hcm8", MRC_ALLREDUCE, 1 << 20, MRC__SIM_TRANSPORT_LINKS);
    assert_int_equal(mrc__select(&f.in, MRC_ALGO_AUTO, &s, NULL), MRC_OK);
    assert_fastest(&s);
    const mrc__candidate_t *r = &s.cand[MRC_ALGO_RINGS];
    assert_int_equal(r->status, MRC_OK);
    assert_true(r->time_us > 0 && r->busbw_gbps > 0);
    assert_true(r->efficiency > 0 && r->efficiency <= 1.0001);
    for (int a = 0; a < MRC_NUM_ALGOS; a++)
        if (s.cand[a].status == MRC_OK)
            assert_true(s.cand[a].time_us > 0);
    drop(&f);
}

/* Count 0 and a group of one compile and select. */
static void test_edges(void **state)
{
    (void)state;
    fixture_t f;
    mrc__selection_t s;
    make(&f, "line:1", MRC_REDUCE, 5, MRC__SIM_TRANSPORT_THREADS);
    assert_int_equal(mrc__select(&f.in, MRC_ALGO_AUTO, &s, NULL), MRC_OK);
    assert_fastest(&s);
    drop(&f);
    make(&f, "ring:3", MRC_BROADCAST, 0, MRC__SIM_TRANSPORT_SHM);
    f.in.cc.root = 2;
    assert_int_equal(mrc__select(&f.in, MRC_ALGO_AUTO, &s, NULL), MRC_OK);
    assert_fastest(&s);
    drop(&f);
}

static void test_pieces(void **state)
{
    (void)state;
    mrc__sim_transport_t x;
    assert_int_equal(mrc__sim_transport_parse("shm", &x), MRC_OK);
    assert_int_equal(x, MRC__SIM_TRANSPORT_SHM);
    assert_int_equal(mrc__sim_transport_parse("tcp", &x), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "'tcp'"));
    assert_int_equal(mrc__sim_transport_of("mpi"), MRC__SIM_TRANSPORT_MPI);
    assert_int_equal(mrc__sim_transport_of("unknown"),
                     MRC__SIM_TRANSPORT_THREADS);
    assert_int_equal(mrc__cpu_tier(4096), 0);
    assert_int_equal(mrc__cpu_tier((32 << 10) - 1), 0);
    assert_int_equal(mrc__cpu_tier(32 << 10), 1);
    assert_int_equal(mrc__cpu_tier((uint64_t)1 << 20), 1);
    assert_int_equal(mrc__cpu_tier((uint64_t)64 << 20), 2);
    assert_true(mrc__busbw_factor(MRC_ALLREDUCE, 4) == 1.5);
    assert_true(mrc__busbw_factor(MRC_ALLGATHER, 4) == 0.75);
    assert_true(mrc__busbw_factor(MRC_BROADCAST, 4) == 1);
    assert_int_equal(mrc__log_parse_level(NULL), MRC__LOG_NONE);
    assert_int_equal(mrc__log_parse_level(""), MRC__LOG_NONE);
    assert_int_equal(mrc__log_parse_level("info"), MRC__LOG_INFO);
    assert_int_equal(mrc__log_parse_level("TRACE"), MRC__LOG_TRACE);
    assert_int_equal(mrc__log_parse_level("WARN"), MRC__LOG_WARN);
    assert_int_equal(mrc__log_parse_level("loud"), MRC__LOG_WARN);
}

static mrc_profile_t flat_profile(const char *transport, double gbps)
{
    mrc_profile_t pr;
    memset(&pr, 0, sizeof pr);
    pr.version = MRC_PROFILE_VERSION;
    snprintf(pr.transport, sizeof pr.transport, "%s", transport);
    pr.ranks = pr.cores = pr.nodes_per_memory = 2;
    pr.cache_bytes = 1 << 20;
    pr.copy_gbps_cache = pr.copy_gbps_memory = gbps;
    pr.memory_gbps_shared = 64 * gbps; /* never the limit */
    return pr;
}

/* The shm model's rounds: one that ends at a flag costs less than one
 * that ends at a message (direct1's broadcast beats the tree's at 2
 * ranks, 8 bytes, group completion). A message goes through the slots,
 * copied in by its sender, unless its chunks are of the channel's
 * capacity (1 MiB) or more: then by rendezvous, the sender copying
 * nothing and the receiver reading through the kernel before it
 * reduces. The rings' reduce of 2 MiB at 2 ranks sends two messages of
 * 1 MiB a call: in 256 KiB chunks the leaf's copies of both take the
 * longest (0.357 + 2 MiB at 10.5 GB/s, the second tier's); in 1 MiB
 * chunks the root's kernel reads (0.357 + 2 x (0.1 + 1) us, 2 MiB at
 * 3 GB/s and reduced at 15): the constants of cpu_model.c. */
static void test_shm_rounds(void **state)
{
    (void)state;
    /* (with more ranks than cores a flag's round costs a message's) */
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        skip();
    fixture_t f;
    make(&f, "ring:2", MRC_BROADCAST, 2, MRC__SIM_TRANSPORT_SHM);
    f.in.want_times = 1;
    mrc__selection_t s;
    assert_int_equal(mrc__select(&f.in, MRC_ALGO_AUTO, &s, NULL), MRC_OK);
    assert_int_equal(s.chosen, MRC_ALGO_DIRECT1);
    assert_true(s.cand[MRC_ALGO_DIRECT1].time_us + 0.1 <
                s.cand[MRC_ALGO_TREE].time_us);
    drop(&f);
    const size_t chunks[2] = {256 << 10, 1 << 20};
    const double bytes = 2 << 20;
    double t[2];
    for (int i = 0; i < 2; i++) {
        make(&f, "ring:2", MRC_REDUCE, (size_t)bytes / 4,
             MRC__SIM_TRANSPORT_SHM);
        f.in.cc.chunk_bytes = chunks[i];
        f.in.want_times = 1;
        assert_int_equal(mrc__select(&f.in, MRC_ALGO_RINGS, &s, NULL), MRC_OK);
        t[i] = s.cand[MRC_ALGO_RINGS].time_us;
        drop(&f);
    }
    assert_true(fabs(t[0] - (0.357 + bytes / 10.5e3)) < 1e-9);
    assert_true(fabs(t[1] - (0.357 + 2 * (0.1 + 1.0) + bytes / 3e3 +
                             bytes / 15e3)) < 1e-9);
}

/* A communicator whose ranks' buffers are all shared regions
 * (mrc_config_t.shared_buffers) reads its peers in place: the shm model
 * then prices direct2's gets by reference as copies, not as the
 * kernel's, and at 4 MiB on 2 ranks takes direct2, where on ordinary
 * memory it takes a family that sends through the slots. */
static void test_shared_buffers(void **state)
{
    (void)state;
    mrc_algo_t chosen[2];
    double direct2[2];
    for (int mapped = 0; mapped < 2; mapped++) {
        fixture_t f;
        make(&f, "ring:2", MRC_ALLREDUCE, (size_t)1 << 20,
             MRC__SIM_TRANSPORT_SHM);
        f.in.want_times = 1;
        f.in.peers_mapped = mapped;
        mrc__selection_t s;
        assert_int_equal(mrc__select(&f.in, MRC_ALGO_AUTO, &s, NULL), MRC_OK);
        chosen[mapped] = s.chosen;
        direct2[mapped] = s.cand[MRC_ALGO_DIRECT2].time_us;
        drop(&f);
    }
    assert_true(chosen[0] == MRC_ALGO_RINGS || chosen[0] == MRC_ALGO_TREE);
    assert_int_equal(chosen[1], MRC_ALGO_DIRECT2);
    assert_true(direct2[1] < direct2[0]);
}

/* shm copies a send buffer exposed by reference into its owner's area
 * where it fits (mrc__shm_send_copied_max): direct1's allgather, by
 * reference past its window, is priced as those copies, and chosen at 2
 * and 4 ranks up to blocks of 8 MiB, the area (bench/family_sweep.sh and
 * bench/mpi_collectives.sh, both patterns); past the area its send
 * buffer is read through the kernel, at the memory's rate, and direct1
 * stays (16 MiB a rank: 6.5 ms against the rings' 8.4 at 2 ranks, 27
 * against 38 at 4, bench/family_sweep.sh -r 2). */
static void test_shm_send_copied(void **state)
{
    (void)state;
    static const struct {
        const char *spec;
        size_t block; /* bytes a rank gives */
        mrc_algo_t want;
    } cases[] = {
        {"ring:2", 16 << 10, MRC_ALGO_DIRECT1},
        {"ring:2", 128 << 10, MRC_ALGO_DIRECT1},
        {"ring:2", 1 << 20, MRC_ALGO_DIRECT1},
        {"ring:2", 4 << 20, MRC_ALGO_DIRECT1},
        {"ring:2", 16 << 20, MRC_ALGO_DIRECT1},
        {"ring:4", 1 << 20, MRC_ALGO_DIRECT1},
        {"ring:4", 8 << 20, MRC_ALGO_DIRECT1},
        {"ring:4", 16 << 20, MRC_ALGO_DIRECT1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fixture_t f;
        make(&f, cases[i].spec, MRC_ALLGATHER, cases[i].block / 4,
             MRC__SIM_TRANSPORT_SHM);
        f.in.want_times = 1;
        mrc__selection_t s;
        assert_int_equal(mrc__select(&f.in, MRC_ALGO_AUTO, &s, NULL), MRC_OK);
        assert_fastest(&s);
        if (s.chosen != cases[i].want)
            fail_msg("%s, allgather of %zu bytes a rank: %s, not %s",
                     cases[i].spec, cases[i].block, mrc_algo_name(s.chosen),
                     mrc_algo_name(cases[i].want));
        drop(&f);
    }
}

/* A profile's figures replace the CPU model's built-in constants: with
 * free syncs and messages and one rate everywhere, a family's time is
 * its bytes over that rate, so twice the rate halves every time; beyond
 * cache the ranks share the memory system; a profile of another
 * transport, or for the links, is refused with a message naming both.
 * (The selector times groups of up to 16 nodes by the simulator when it
 * has a profile: the CPU model is asked directly here.) */
static void test_profile(void **state)
{
    (void)state;
    fixture_t f;
    make(&f, "ring:4", MRC_ALLREDUCE, (size_t)1 << 20, MRC__SIM_TRANSPORT_SHM);
    mrc_profile_t slow = flat_profile("shm", 2), fast = flat_profile("shm", 4);
    int timed = 0;
    for (int i = 0; i < MRC_NUM_ALGOS; i++) {
        mrc__selection_t s;
        mrc_program_t *p = NULL;
        if (mrc__select(&f.in, (mrc_algo_t)i, &s, &p) != MRC_OK)
            continue;
        double a = 0, b = 0, builtin = 0;
        assert_int_equal(mrc__cpu_time_profile(
                             p, f.topo, MRC__SIM_TRANSPORT_SHM, &slow, 0, &a),
                         MRC_OK);
        assert_int_equal(mrc__cpu_time_profile(
                             p, f.topo, MRC__SIM_TRANSPORT_SHM, &fast, 0, &b),
                         MRC_OK);
        assert_int_equal(mrc__cpu_time_profile(p, f.topo,
                                               MRC__SIM_TRANSPORT_SHM, NULL, 0,
                                               &builtin),
                         MRC_OK);
        mrc_program_destroy(p);
        timed++;
        assert_true(a > 0);
        assert_true(fabs(a - 2 * b) < 1e-9 * a);
        assert_true(a != builtin);
    }
    assert_true(timed >= 2);
    mrc__selection_t a;

    mrc__cpu_cost_t k;
    mrc_profile_t pr = flat_profile("threads", 8);
    pr.memory_gbps_shared = 8; /* one node's worth, shared by 4 */
    pr.reduce_gbps_cache[MRC_FLOAT32][MRC_SUM] = 6;
    pr.message_us = 0.5;
    pr.sync_us = 0.25;
    assert_int_equal(mrc__cpu_cost_of_profile(&pr, MRC__SIM_TRANSPORT_THREADS,
                                              MRC_FLOAT32, MRC_SUM, 4, &k),
                     MRC_OK);
    assert_true(k.copy_gbps[0] == 8 && k.copy_gbps[2] == 2);
    assert_true(k.reduce_gbps[0] == 6 && k.reduce_gbps[2] == 2);
    assert_true(k.op_us == 0.5 && k.sync_us == 0.25);
    assert_int_equal(mrc__cpu_cost_tier(&k, 1 << 20), 0);
    assert_int_equal(mrc__cpu_cost_tier(&k, (1 << 20) + 1), 2);
    /* Not measured (int8 max): the copy rate. */
    assert_int_equal(mrc__cpu_cost_of_profile(&pr, MRC__SIM_TRANSPORT_THREADS,
                                              MRC_INT8, MRC_MAX, 1, &k),
                     MRC_OK);
    assert_true(k.reduce_gbps[0] == 8 && k.copy_gbps[2] == 8);

    f.in.profile = &pr; /* threads, on shm */
    assert_int_equal(mrc__select(&f.in, MRC_ALGO_AUTO, &a, NULL),
                     MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "measured on the threads "
                                             "transport, not shm"));
    assert_int_equal(mrc__cpu_cost_of_profile(&pr, MRC__SIM_TRANSPORT_LINKS,
                                              MRC_FLOAT32, MRC_SUM, 4, &k),
                     MRC_ERR_INVALID_ARG);
    drop(&f);
}

/* The selector's time for the rings' allreduce of `count` float32 on
 * `spec` over transport x with profile pr, and the program. */
static double rings_time(const char *spec, size_t count, mrc__sim_transport_t x,
                         const mrc_profile_t *pr, fixture_t *f,
                         mrc_program_t **p)
{
    make(f, spec, MRC_ALLREDUCE, count, x);
    f->in.want_times = 1;
    f->in.profile = pr;
    mrc__selection_t s;
    assert_int_equal(mrc__select(&f->in, MRC_ALGO_RINGS, &s, p), MRC_OK);
    return s.cand[MRC_ALGO_RINGS].time_us;
}

static double sim_pipelined(const mrc_program_t *p, const mrc_topo_t *t,
                            const mrc_profile_t *pr)
{
    mrc_sim_config_t sc = {.mode = MRC_SIM_PIPELINED, .profile = pr};
    mrc_sim_result_t *r = NULL;
    assert_int_equal(mrc_sim_run(p, t, &sc, &r), MRC_OK);
    double us = r->time_us;
    mrc_sim_result_destroy(r);
    return us;
}

static double cpu_time(const mrc_program_t *p, const mrc_topo_t *t,
                       mrc__sim_transport_t x, const mrc_profile_t *pr)
{
    double us = 0;
    assert_int_equal(mrc__cpu_time_profile(p, t, x, pr, 0, &us), MRC_OK);
    return us;
}

/* With a profile, a call on one host of 4 KiB or more a node in a group
 * of up to 16 nodes is timed by the simulator's node model, pipelined
 * (as --predict times a run), with every node on one memory system
 * (the profile's nodes_per_memory is where it was measured); a larger
 * group, and MPI between hosts, by the CPU model with the profile's
 * figures; a call below 4 KiB a node by the CPU model's constants. */
static void test_profile_times_by_simulator(void **state)
{
    (void)state;
    mrc_profile_t pr = flat_profile("shm", 8), one_host, mpi;
    pr.message_us = 0.5;
    pr.sync_us = 0.25;
    fixture_t f;
    mrc_program_t *p = NULL;

    double t = rings_time("ring:4", (size_t)1 << 18, MRC__SIM_TRANSPORT_SHM,
                          &pr, &f, &p);
    one_host = pr;
    one_host.nodes_per_memory = 4;
    double host = sim_pipelined(p, f.topo, &one_host);
    assert_true(host > 0 && host != sim_pipelined(p, f.topo, &pr));
    assert_true(t == host);
    mrc_program_destroy(p);
    drop(&f);

    t = rings_time("ring:66", (size_t)1 << 18, MRC__SIM_TRANSPORT_SHM, &pr, &f,
                   &p);
    assert_true(t > 0 && t == cpu_time(p, f.topo, MRC__SIM_TRANSPORT_SHM, &pr));
    mrc_program_destroy(p);
    drop(&f);

    mpi = pr;
    snprintf(mpi.transport, sizeof mpi.transport, "mpi");
    t = rings_time("ring:4", (size_t)1 << 18, MRC__SIM_TRANSPORT_MPI, &mpi, &f,
                   &p);
    assert_true(t > 0 &&
                t == cpu_time(p, f.topo, MRC__SIM_TRANSPORT_MPI, &mpi));
    mrc_program_destroy(p);
    drop(&f);

    t = rings_time("ring:4", 1023, MRC__SIM_TRANSPORT_SHM, &pr, &f, &p);
    double builtin = cpu_time(p, f.topo, MRC__SIM_TRANSPORT_SHM, NULL);
    assert_true(builtin != cpu_time(p, f.topo, MRC__SIM_TRANSPORT_SHM, &pr));
    assert_true(t == builtin);
    mrc_program_destroy(p);
    drop(&f);
}

/* direct1's time for a call of c on ring:2 (shm) with `completion`
 * (with pr, the selector's input profile; NULL: none). */
static double direct1_time(mrc_collective_t c, size_t count,
                           mrc_completion_t completion, const mrc_profile_t *pr)
{
    fixture_t f;
    make(&f, "ring:2", c, count, MRC__SIM_TRANSPORT_SHM);
    f.in.cc.completion = completion;
    f.in.want_times = 1;
    f.in.profile = pr;
    mrc__selection_t s;
    assert_int_equal(mrc__select(&f.in, MRC_ALGO_DIRECT1, &s, NULL), MRC_OK);
    drop(&f);
    return s.cand[MRC_ALGO_DIRECT1].time_us;
}

/* With local completion a broadcast's root and a reduce's leaves return
 * once their part is done and run calls ahead: the CPU model times a
 * call of a run, each node alone. direct1's broadcast of 32 KiB at 2
 * ranks (by copy, its root running ahead through the wide windows)
 * costs the leaf's get alone, where by group completion the root's copy
 * into its window comes first. Its broadcast of 1 MiB (by reference,
 * whose root waits at the closing sync for its reader) runs ahead of
 * nothing: timed whole by either completion, and the tree, whose root
 * does run ahead, is chosen (docs/performance.md, "Each piece copied
 * once": the tree and the rings at 0.67-0.94 of direct1's time on every
 * broadcast of 128 KiB-16 MiB at 2 ranks). An allreduce, whose every
 * node waits for the others' inputs of the same call, is timed as
 * before. With a profile, such a call still takes the built-in
 * constants (its rates are those of calls alone). */
static void test_runs_ahead(void **state)
{
    (void)state;
    const size_t kib32 = (size_t)1 << 13, mib = (size_t)1 << 18; /* floats */
    double by_copy[2] = {
        direct1_time(MRC_BROADCAST, kib32, MRC_COMPLETION_LOCAL, NULL),
        direct1_time(MRC_BROADCAST, kib32, MRC_COMPLETION_GROUP, NULL)};
    /* (32 KiB at the second tier's 10.5 GB/s: the root's copy) */
    assert_true(by_copy[0] > 0 && by_copy[1] > by_copy[0]);
    assert_true(fabs(by_copy[1] - by_copy[0] - (32 << 10) / 10.5e3) < 0.5);
    double local = direct1_time(MRC_BROADCAST, mib, MRC_COMPLETION_LOCAL, NULL);
    double group = direct1_time(MRC_BROADCAST, mib, MRC_COMPLETION_GROUP, NULL);
    /* (the root's copy into its area and the leaf's out of it, 1 MiB
     * each at the second tier's 10.5 GB/s, one after the other: how the
     * constants price a send buffer; by either completion) */
    assert_true(local == group);
    assert_true(fabs(local - 2.0 * (1 << 20) / 10.5e3) < 1.5);
    assert_true(
        direct1_time(MRC_ALLREDUCE, 1 << 10, MRC_COMPLETION_LOCAL, NULL) ==
        direct1_time(MRC_ALLREDUCE, 1 << 10, MRC_COMPLETION_GROUP, NULL));
    mrc_profile_t pr = flat_profile("shm", 2);
    assert_true(direct1_time(MRC_BROADCAST, kib32, MRC_COMPLETION_LOCAL, &pr) ==
                by_copy[0]);

    fixture_t f;
    make(&f, "ring:2", MRC_BROADCAST, mib, MRC__SIM_TRANSPORT_SHM);
    f.in.cc.completion = MRC_COMPLETION_LOCAL;
    mrc__selection_t s;
    assert_int_equal(mrc__select(&f.in, MRC_ALGO_AUTO, &s, NULL), MRC_OK);
    assert_int_equal(s.chosen, MRC_ALGO_TREE);
    drop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shm_small_and_large),
        cmocka_unit_test(test_no_memory),
        cmocka_unit_test(test_forced),
        cmocka_unit_test(test_links),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_pieces),
        cmocka_unit_test(test_profile),
        cmocka_unit_test(test_profile_times_by_simulator),
        cmocka_unit_test(test_shm_rounds),
        cmocka_unit_test(test_shared_buffers),
        cmocka_unit_test(test_shm_send_copied),
        cmocka_unit_test(test_runs_ahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
