/* The simulator against closed forms, conservation and energy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrc/mrc.h"
#include "program/plan.h"
#include "sim/sim_internal.h"
#include "transport/transport.h"

typedef struct setup {
    mrc_topo_t *topo;
    mrc_embedding_t *e;
    mrc_program_t *p;
} setup_t;

/* spec's topology, embedding (ec) and program (cc). */
static setup_t make_cc(const char *spec, const mrc_embed_config_t *ec,
                       const mrc_compile_config_t *cc)
{
    setup_t s = {0};
    if (mrc_topo_create(spec, &s.topo) != MRC_OK ||
        mrc_embed_create(s.topo, ec, &s.e) != MRC_OK ||
        mrc_program_compile(s.e, cc, &s.p) != MRC_OK)
        fail_msg("%s: %s", spec, mrc_last_error());
    return s;
}

static setup_t make(const char *spec, const char *strategy, mrc_collective_t c,
                    size_t count, mrc_dtype_t d)
{
    mrc_embed_config_t ec = {.strategy = strategy};
    mrc_compile_config_t cc = {.collective = c, .count = count, .dtype = d};
    return make_cc(spec, &ec, &cc);
}

static void drop(setup_t *s)
{
    mrc_program_destroy(s->p);
    mrc_embed_destroy(s->e);
    mrc_topo_destroy(s->topo);
}

static mrc_sim_result_t *sim_cfg(const setup_t *s, mrc_sim_config_t cfg)
{
    mrc_sim_result_t *r = NULL;
    if (mrc_sim_run(s->p, s->topo, &cfg, &r) != MRC_OK)
        fail_msg("%s", mrc_last_error());
    return r;
}

static mrc_sim_result_t *sim_mode(const setup_t *s, int chunks,
                                  mrc_sim_mode_t mode)
{
    return sim_cfg(s, (mrc_sim_config_t){.mode = mode, .chunks = chunks});
}

static mrc_sim_result_t *sim(const setup_t *s, int chunks)
{
    return sim_mode(s, chunks, MRC_SIM_BSP);
}

static void expect_close(double got, double want, const char *what)
{
    if (fabs(got - want) > 1e-9 * fmax(1, fabs(want)))
        fail_msg("%s: %.12g, expected %.12g", what, got, want);
}

/* ring:N,bw=B,lat=A, one bidirectional ring, BSP, one chunk: an allreduce
 * of S bytes takes 2(N-1)(A + S/(2NB)); reduce-scatter and allgather take
 * half the steps. */
static void test_closed_forms(void **state)
{
    (void)state;
    const int ns[] = {2, 3, 4, 5, 8, 13};
    const double bws[] = {1, 12.5, 50}, lats[] = {0, 100, 1500};
    for (int i = 0; i < 6; i++)
        for (int b = 0; b < 3; b++)
            for (int a = 0; a < 3; a++) {
                int N = ns[i];
                char spec[64];
                snprintf(spec, sizeof spec, "ring:%d,bw=%g,lat=%g", N, bws[b],
                         lats[a]);
                /* float32, count divisible by 2N: every fragment equal */
                size_t count = (size_t)(2 * N) * 1000 * (size_t)(b + 1);
                double S = 4.0 * (double)count, B = bws[b], A = lats[a];
                setup_t s =
                    make(spec, "ring", MRC_ALLREDUCE, count, MRC_FLOAT32);
                mrc_sim_result_t *r = sim(&s, 1);
                expect_close(r->time_us * 1e3,
                             2.0 * (N - 1) * (A + S / (2.0 * N * B)),
                             "allreduce");
                assert_int_equal(r->steps, 2 * (N - 1));
                mrc_sim_result_destroy(r);
                drop(&s);
                /* reduce-scatter and allgather: count per block, so the
                 * ring moves S = N * count * 4 bytes in N-1 steps. */
                for (int c = 0; c < 2; c++) {
                    mrc_collective_t coll =
                        c ? MRC_ALLGATHER : MRC_REDUCE_SCATTER;
                    size_t block = 2 * 500 * (size_t)(a + 1);
                    setup_t t = make(spec, "ring", coll, block, MRC_FLOAT32);
                    r = sim(&t, 1);
                    double Sb = 4.0 * (double)block;
                    expect_close(r->time_us * 1e3,
                                 (N - 1) * (A + Sb / (2.0 * B)),
                                 c ? "allgather" : "reduce-scatter");
                    mrc_sim_result_destroy(r);
                    drop(&t);
                }
            }
}

/* Bytes on every channel equal the bytes the program sends over it, and
 * no link direction carries more than it could in the time. */
static void test_conservation(void **state)
{
    (void)state;
    const char *specs[] = {"hcm8", "torus-ladder:8", "prism:3,3",
                           "torus2d:4,4"};
    for (int i = 0; i < 4; i++) {
        setup_t s = make(specs[i], "auto", MRC_ALLREDUCE, 100000, MRC_FLOAT32);
        mrc_sim_result_t *r = sim(&s, 0);
        double sum = 0;
        for (int l = 0; l < r->num_links; l++) {
            const mrc_link_t *link = mrc_topo_link(s.topo, l);
            for (int d = 0; d < 2; d++) {
                sum += r->link_bytes[2 * l + d];
                assert_true(r->link_utilisation[2 * l + d] <= 1 + 1e-9);
                assert_true(r->link_bytes[2 * l + d] <=
                            link->count * link->bandwidth_gbps * r->time_us *
                                1e3 * (1 + 1e-9));
            }
        }
        expect_close(sum, r->bytes_moved, "bytes moved");
        assert_true(r->energy_j <= r->energy_no_gating_j);
        /* The same run twice gives the same figures. */
        mrc_sim_result_t *again = sim(&s, 0);
        assert_true(again->time_us == r->time_us);
        assert_true(again->energy_j == r->energy_j);
        mrc_sim_result_destroy(again);
        mrc_sim_result_destroy(r);
        drop(&s);
    }
}

/* A strategy that leaves links idle saves energy with gating; one that
 * uses every link saves (almost) nothing. */
static void test_energy_gating(void **state)
{
    (void)state;
    /* The peripheral ring uses 16 of torus-ladder:16's 24 links in every
     * step: gating saves exactly 8 links' power for the whole time. */
    setup_t idle = make("torus-ladder:16", "peripheral-ring", MRC_ALLREDUCE,
                        1 << 20, MRC_FLOAT32);
    mrc_sim_result_t *r = sim(&idle, 0);
    expect_close(r->energy_no_gating_j - r->energy_j,
                 0.5 * 8 * r->time_us * 1e-6, "energy saved");
    mrc_sim_result_destroy(r);
    drop(&idle);

    setup_t ring = make("ring:8", "ring", MRC_ALLREDUCE, 1 << 20, MRC_FLOAT32);
    r = sim(&ring, 0);
    /* Every link busy in every step: nothing to switch off. */
    expect_close(r->energy_j, r->energy_no_gating_j, "nothing saved");
    mrc_sim_result_destroy(r);
    drop(&ring);
}

/* Pipelined: on a symmetric ring each step needs the last, so it matches
 * the closed form too; a reduce chain (one hop after another) gains from
 * chunks. Elsewhere it moves the same bytes, but need not be faster than
 * BSP: with no barrier, a later step's message can take bandwidth from
 * an earlier one that others wait for. */
static void test_pipelined(void **state)
{
    (void)state;
    setup_t r4 =
        make("ring:4,bw=2,lat=100", "ring", MRC_ALLREDUCE, 16000, MRC_FLOAT32);
    mrc_sim_result_t *r = sim_mode(&r4, 1, MRC_SIM_PIPELINED);
    expect_close(r->time_us * 1e3, 6 * (100 + 64000.0 / 16), "pipelined");
    mrc_sim_result_destroy(r);
    drop(&r4);

    const char *specs[] = {"hcm8", "torus-ladder:8", "prism:3,3"};
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < MRC_NUM_COLLECTIVES; c++) {
            setup_t s = make(specs[i], "auto", (mrc_collective_t)c, 1 << 18,
                             MRC_FLOAT32);
            mrc_sim_result_t *b = sim_mode(&s, 8, MRC_SIM_BSP);
            mrc_sim_result_t *q = sim_mode(&s, 8, MRC_SIM_PIPELINED);
            assert_true(q->time_us > 0);
            expect_close(q->bytes_moved, b->bytes_moved, "same bytes");
            assert_true(q->energy_j <= q->energy_no_gating_j * (1 + 1e-12));
            mrc_sim_result_destroy(b);
            mrc_sim_result_destroy(q);
            drop(&s);
        }
    /* A chain of 7 hops: 16 chunks pipeline it. */
    setup_t red = make("ring:8", "ring", MRC_REDUCE, 1 << 20, MRC_FLOAT32);
    mrc_sim_result_t *b = sim_mode(&red, 16, MRC_SIM_BSP);
    mrc_sim_result_t *q = sim_mode(&red, 16, MRC_SIM_PIPELINED);
    assert_true(q->time_us < 0.5 * b->time_us);
    mrc_sim_result_destroy(b);
    mrc_sim_result_destroy(q);
    drop(&red);
}

/* The fast path for large groups (one step per ring loop, a chain hop by
 * hop) gives what walking every message gives, on groups small enough to
 * walk: counts divisible so that every fragment has the same size. */
static void test_fast_path(void **state)
{
    (void)state;
    const char *specs[][2] = {{"ring:8,lat=300", "ring"},
                              {"torus2d:4,4", "auto"},
                              {"torus-ladder:16", "peripheral-ring"}};
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < MRC_NUM_COLLECTIVES; c++)
            for (int chunks = 0; chunks <= 4; chunks += 4) {
                setup_t s = make(specs[i][0], specs[i][1], (mrc_collective_t)c,
                                 16 * 4096, MRC_FLOAT32);
                mrc__sim_fast = MRC__SIM_FAST_NEVER;
                mrc_sim_result_t *full = sim(&s, chunks);
                mrc__sim_fast = MRC__SIM_FAST_ALWAYS;
                mrc_sim_result_t *fast = sim(&s, chunks);
                mrc__sim_fast = MRC__SIM_FAST_AUTO;
                expect_close(fast->time_us, full->time_us, "time");
                assert_int_equal(fast->steps, full->steps);
                expect_close(fast->bytes_moved, full->bytes_moved, "bytes");
                expect_close(fast->energy_j, full->energy_j, "energy");
                expect_close(fast->energy_no_gating_j, full->energy_no_gating_j,
                             "energy, no gating");
                for (int l = 0; l < 2 * full->num_links; l++)
                    expect_close(fast->link_bytes[l], full->link_bytes[l],
                                 "link bytes");
                mrc_sim_result_destroy(full);
                mrc_sim_result_destroy(fast);
                drop(&s);
            }
}

/* Groups that run at once wait for nobody but their own nodes: with the
 * groups of hcm8 (which share no link), the run takes the time of its
 * slowest group simulated alone, not the sum of per-step maxima; bytes
 * and link loads are the groups' sums, energy at most theirs. */
static void test_independent_groups(void **state)
{
    (void)state;
    const char *groups[] = {"4+2+2", "2+2+2+2", "4+4"};
    const mrc_sim_mode_t modes[] = {MRC_SIM_BSP, MRC_SIM_PIPELINED};
    mrc_topo_t *topo = NULL;
    assert_int_equal(mrc_topo_create("hcm8", &topo), MRC_OK);
    for (int gi = 0; gi < 3; gi++)
        for (int c = 0; c < MRC_NUM_COLLECTIVES; c++) {
            mrc_embed_config_t ec = {.strategy = "hcm8", .groups = groups[gi]};
            mrc_compile_config_t cc = {.collective = (mrc_collective_t)c,
                                       .count = 3 * 100003,
                                       .dtype = MRC_FLOAT32};
            mrc_embedding_t *e = NULL;
            mrc_program_t *whole = NULL;
            if (mrc_embed_create(topo, &ec, &e) != MRC_OK ||
                mrc_program_compile(e, &cc, &whole) != MRC_OK)
                fail_msg("%s: %s", groups[gi], mrc_last_error());
            int ng = mrc_embed_num_groups(e);
            for (int m = 0; m < 2; m++) {
                mrc_sim_config_t sc = {.mode = modes[m], .chunks = 2};
                mrc_sim_result_t *all = NULL;
                assert_int_equal(mrc_sim_run(whole, topo, &sc, &all), MRC_OK);
                double slowest = 0, bytes = 0, energy = 0;
                int steps = 0;
                double *links =
                    calloc(2 * (size_t)all->num_links, sizeof *links);
                assert_non_null(links);
                for (int g = 0; g < ng; g++) {
                    mrc_program_t *one = NULL;
                    mrc_sim_result_t *r = NULL;
                    if (mrc__program_compile_group(e, &cc, g, &one) != MRC_OK ||
                        mrc_sim_run(one, topo, &sc, &r) != MRC_OK)
                        fail_msg("group %d: %s", g, mrc_last_error());
                    slowest = fmax(slowest, r->time_us);
                    bytes += r->bytes_moved;
                    energy += r->energy_j;
                    steps = r->steps > steps ? r->steps : steps;
                    for (int l = 0; l < 2 * r->num_links; l++)
                        links[l] += r->link_bytes[l];
                    mrc_sim_result_destroy(r);
                    mrc_program_destroy(one);
                }
                expect_close(all->time_us, slowest, "the slowest group");
                expect_close(all->bytes_moved, bytes, "bytes");
                /* A physical link that two groups use in opposite
                 * directions is on once for both. */
                assert_true(all->energy_j <= energy * (1 + 1e-9));
                for (int l = 0; l < 2 * all->num_links; l++)
                    expect_close(all->link_bytes[l], links[l], "link bytes");
                if (modes[m] == MRC_SIM_BSP)
                    assert_int_equal(all->steps, steps);
                free(links);
                mrc_sim_result_destroy(all);
            }
            mrc_program_destroy(whole);
            mrc_embed_destroy(e);
        }
    mrc_topo_destroy(topo);
}

/* Compiles `algo` for the collective on spec (groups: NULL or "A+B");
 * 0, or 1 where the family does not apply. */
static int make_algo(setup_t *s, const char *spec, const char *groups,
                     mrc_algo_t algo, mrc_collective_t c, size_t count)
{
    memset(s, 0, sizeof *s);
    mrc_embed_config_t ec = {.groups = groups};
    mrc_compile_config_t cc = {
        .collective = c, .count = count, .dtype = MRC_FLOAT32, .algo = algo};
    if (mrc_topo_create(spec, &s->topo) != MRC_OK ||
        mrc_embed_create(s->topo, &ec, &s->e) != MRC_OK)
        fail_msg("%s: %s", spec, mrc_last_error());
    mrc_status_t st = mrc_program_compile(s->e, &cc, &s->p);
    if (st == MRC_ERR_UNSUPPORTED)
        return 1;
    if (st != MRC_OK)
        fail_msg("%s: %s", spec, mrc_last_error());
    return 0;
}

/* The memory-semantic ops of the direct families. direct1's allreduce on
 * a ring of 4 (B = 2 bytes/ns, A = 100 ns), BSP: at step s every node
 * gets rank s's vector of S bytes; the next node and the far one share
 * the first hop toward them (B/2 each), and the far one is two hops
 * away: 4 (2S/B + 2A). */
static void test_memory_closed_form(void **state)
{
    (void)state;
    setup_t s;
    assert_int_equal(make_algo(&s, "ring:4,bw=2,lat=100", NULL,
                               MRC_ALGO_DIRECT1, MRC_ALLREDUCE, 16000),
                     0);
    mrc_sim_result_t *r = sim(&s, 0);
    expect_close(r->time_us * 1e3, 4 * (2 * 64000.0 / 2 + 200), "direct1");
    assert_int_equal(r->steps, 4);
    /* Each step: 3 gets, 4 link crossings of 64000 bytes. */
    expect_close(r->bytes_moved, 4 * 4 * 64000.0, "bytes");
    mrc_sim_result_destroy(r);
    drop(&s);
}

/* A get moves count elements over the shortest path from the owner, in
 * either mode (on ring:5 the path from u to v is min(|u-v|, 5-|u-v|)
 * hops); every family and collective runs to its end (no stall), in
 * place of a window (small) and by reference with its barrier (large). */
static void test_memory_conservation(void **state)
{
    (void)state;
    const mrc_algo_t algos[] = {MRC_ALGO_DIRECT1, MRC_ALGO_DIRECT2};
    const size_t counts[] = {1001, 2000000};
    for (int a = 0; a < 2; a++)
        for (int c = 0; c < MRC_NUM_COLLECTIVES; c++)
            for (int k = 0; k < 2; k++) {
                setup_t s;
                if (make_algo(&s, "ring:5", NULL, algos[a], (mrc_collective_t)c,
                              counts[k])) {
                    drop(&s);
                    continue;
                }
                double want = 0;
                for (int u = 0; u < 5; u++) {
                    mrc__chain_iter_t it;
                    mrc__op_t op;
                    mrc_status_t st = MRC_OK;
                    mrc__chain_begin(&it, s.p, u, 0, 0, 1, 0);
                    while (mrc__chain_next(&it, &op, &st) > 0) {
                        if (op.kind != MRC__GET)
                            continue;
                        int d = abs(op.peer - u);
                        d = d < 5 - d ? d : 5 - d;
                        want += (double)op.count * 4 * d;
                    }
                    assert_int_equal(st, MRC_OK);
                }
                assert_true(want > 0);
                mrc_sim_result_t *b = sim_mode(&s, 0, MRC_SIM_BSP);
                mrc_sim_result_t *q = sim_mode(&s, 0, MRC_SIM_PIPELINED);
                expect_close(b->bytes_moved, want, "bsp bytes");
                expect_close(q->bytes_moved, want, "pipelined bytes");
                assert_true(b->time_us > 0 && q->time_us > 0);
                assert_true(q->energy_j <= q->energy_no_gating_j * 1.000001);
                mrc_sim_result_destroy(b);
                mrc_sim_result_destroy(q);
                drop(&s);
            }
}

/* Barriers and signals are per group: direct programs on ring:5 with
 * groups 2+3 take the time of their slower group alone, in either mode
 * (by reference, with the final barrier, and through the window). */
static void test_memory_groups(void **state)
{
    (void)state;
    const mrc_algo_t algos[] = {MRC_ALGO_DIRECT1, MRC_ALGO_DIRECT2};
    const size_t counts[] = {1001, 2000000};
    const mrc_sim_mode_t modes[] = {MRC_SIM_BSP, MRC_SIM_PIPELINED};
    int ran = 0;
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < 2; k++) {
            setup_t s;
            if (make_algo(&s, "ring:5", "2+3", algos[a], MRC_ALLREDUCE,
                          counts[k])) { /* direct1 of a large vector */
                drop(&s);
                continue;
            }
            ran++;
            mrc_compile_config_t cc = s.p->cfg;
            for (int m = 0; m < 2; m++) {
                mrc_sim_result_t *all = sim_mode(&s, 0, modes[m]);
                double slowest = 0, bytes = 0;
                for (int g = 0; g < 2; g++) {
                    setup_t one = s;
                    if (mrc__program_compile_group(s.e, &cc, g, &one.p) !=
                        MRC_OK)
                        fail_msg("group %d: %s", g, mrc_last_error());
                    mrc_sim_result_t *r = sim_mode(&one, 0, modes[m]);
                    slowest = fmax(slowest, r->time_us);
                    bytes += r->bytes_moved;
                    mrc_sim_result_destroy(r);
                    mrc_program_destroy(one.p);
                }
                expect_close(all->time_us, slowest, "the slower group");
                expect_close(all->bytes_moved, bytes, "bytes");
                mrc_sim_result_destroy(all);
            }
            drop(&s);
        }
    assert_int_equal(ran, 3);
}

static void test_refusals(void **state)
{
    (void)state;
    setup_t s = make("ring:4", "ring", MRC_ALLREDUCE, 1000, MRC_FLOAT32);
    mrc_topo_t *other = NULL;
    assert_int_equal(mrc_topo_create("ring:5", &other), MRC_OK);
    mrc_sim_result_t *r = NULL;
    assert_int_equal(mrc_sim_run(s.p, other, NULL, &r), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "4 nodes"));
    assert_null(r);
    mrc_topo_destroy(other);
    drop(&s);
}

/* A run of calls (mrc_sim_config_t.calls), pipelined, links only. */
static mrc_sim_result_t *sim_calls(const setup_t *s, int calls)
{
    return sim_cfg(
        s, (mrc_sim_config_t){.mode = MRC_SIM_PIPELINED, .calls = calls});
}

/* The tree's broadcast of `count` floats on spec, with completion c. */
static setup_t make_bcast(const char *spec, size_t count, mrc_completion_t c)
{
    mrc_embed_config_t ec = {0};
    mrc_compile_config_t cc = {.collective = MRC_BROADCAST,
                               .count = count,
                               .dtype = MRC_FLOAT32,
                               .algo = MRC_ALGO_TREE,
                               .completion = c};
    return make_cc(spec, &ec, &cc);
}

/* A call in a run of 8 takes less than a call alone (and some time):
 * the run overlaps its calls. Drops s. */
static void expect_run_faster(setup_t *s)
{
    mrc_sim_result_t *one = sim_calls(s, 1), *run = sim_calls(s, 8);
    assert_true(run->time_us > 0 && run->time_us < one->time_us);
    mrc_sim_result_destroy(one);
    mrc_sim_result_destroy(run);
    drop(s);
}

/* A run of calls against closed forms. A group whose nodes all do the
 * same ends each call at once: its period is the call's time, whether
 * the symmetric walk or the full one times it, and its figures are a
 * call's (its links' energy switched off between busy spells at least
 * the call's alone: the gaps between calls are the run's). The tree's
 * broadcast on ring:2 (its two links one of 2 lanes of B = 2 bytes/ns,
 * A = 1000 ns; S = 1000 bytes, tau = S / 2B = 250 ns): with local
 * completion the root's part ends as it posts, its calls' messages
 * queue on the link, and the leaf ends one every tau. With the group's,
 * the root ends call k once the leaf has begun it (ended k - 1), A
 * later: it runs one call ahead, and every two calls take a message's
 * A + tau and the news's A, a call (2A + tau) / 2 = 1125 ns; one call
 * alone takes A + tau. */
static void test_run_of_calls(void **state)
{
    (void)state;
    setup_t s =
        make("ring:4,bw=2,lat=100", "ring", MRC_ALLREDUCE, 4000, MRC_FLOAT32);
    for (int sym = 0; sym < 2; sym++) {
        mrc__sim_sym = sym ? MRC__SIM_FAST_AUTO : MRC__SIM_FAST_NEVER;
        mrc_sim_result_t *one = sim_calls(&s, 0), *run = sim_calls(&s, 8);
        expect_close(run->time_us, one->time_us, "rings' period");
        expect_close(run->bytes_moved, one->bytes_moved, "a call's bytes");
        expect_close(run->energy_no_gating_j, one->energy_no_gating_j,
                     "a call's energy, links on");
        /* (gated: the gaps between calls too, where a link stays on) */
        assert_true(run->energy_j >= one->energy_j * (1 - 1e-12) &&
                    run->energy_j <= run->energy_no_gating_j * (1 + 1e-12));
        mrc_sim_result_destroy(one);
        mrc_sim_result_destroy(run);
    }
    mrc__sim_sym = MRC__SIM_FAST_AUTO;
    drop(&s);

    const double A = 1000, tau = 250;
    s = make_bcast("ring:2,bw=2,lat=1000", 250, MRC_COMPLETION_LOCAL);
    mrc_sim_result_t *one = sim_calls(&s, 1), *run = sim_calls(&s, 8);
    expect_close(one->time_us * 1e3, A + tau, "one call");
    expect_close(run->time_us * 1e3, tau, "local completion's period");
    expect_close(run->bytes_moved, one->bytes_moved, "a call's bytes");
    mrc_sim_result_destroy(run);
    run = sim_calls(&s, 2); /* the second's end less the first's */
    expect_close(run->time_us * 1e3, tau, "two calls");
    mrc_sim_result_destroy(run);
    mrc_sim_result_destroy(one);
    drop(&s);

    s = make_bcast("ring:2,bw=2,lat=1000", 250, MRC_COMPLETION_GROUP);
    run = sim_calls(&s, 8);
    expect_close(run->time_us * 1e3, (2 * A + tau) / 2, "group's period");
    assert_true(run->energy_j <= run->energy_no_gating_j * (1 + 1e-12));
    mrc_sim_result_destroy(run);
    drop(&s);

    /* Two groups of ring:4 (0,1 and 2,3, each pair one lane apart: S/B
     * = 500 ns), each agreeing apart: the same form. */
    assert_int_equal(make_algo(&s, "ring:4,bw=2,lat=1000", "0,1+2,3",
                               MRC_ALGO_TREE, MRC_BROADCAST, 250),
                     0);
    run = sim_calls(&s, 8);
    expect_close(run->time_us * 1e3, (2 * A + 500) / 2, "two groups");
    mrc_sim_result_destroy(run);
    drop(&s);

    /* A group of 1024 on a ring (the round of agreement's latency, the
     * farthest pair's, from one search a member): in a run a call takes
     * less than alone, and the walk takes well under a second. */
    s = make_bcast("ring:1024,bw=2,lat=1000", 250, MRC_COMPLETION_GROUP);
    expect_run_faster(&s);

    /* The rings' reduce and broadcast (their rounds of agreement take
     * paths the rings' own walk has none of): a run overlaps the calls,
     * and a call in it takes less than a call alone. */
    for (int c = 0; c < 2; c++) {
        s = make("ring:4,bw=2,lat=1000", "ring", c ? MRC_BROADCAST : MRC_REDUCE,
                 250, MRC_FLOAT32);
        expect_run_faster(&s);
    }
}

/* A run of calls out of range, or in BSP mode: refused, naming why. */
static void test_run_of_calls_refused(void **state)
{
    (void)state;
    setup_t s = make("ring:4", "ring", MRC_ALLREDUCE, 1000, MRC_FLOAT32);
    mrc_sim_result_t *r = NULL;
    mrc_sim_config_t cfg = {.mode = MRC_SIM_PIPELINED,
                            .calls = MRC_SIM_MAX_CALLS + 1};
    assert_int_equal(mrc_sim_run(s.p, s.topo, &cfg, &r), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "runs of 1 to 16"));
    cfg.calls = -1;
    assert_int_equal(mrc_sim_run(s.p, s.topo, &cfg, &r), MRC_ERR_INVALID_ARG);
    cfg = (mrc_sim_config_t){.mode = MRC_SIM_BSP, .calls = 4};
    assert_int_equal(mrc_sim_run(s.p, s.topo, &cfg, &r), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "pipelined mode only"));
    assert_null(r);
    drop(&s);
}

/* Physical links idle in phase ph of the port mask: both ends' ports
 * idle (the test's own reading of the mask). */
static int idle_lanes(const mrc_program_t *p, const mrc_topo_t *t, int ph)
{
    uint8_t ia[64], ib[64];
    int idle = 0;
    for (int i = 0; i < mrc_topo_num_links(t); i++) {
        const mrc_link_t *l = mrc_topo_link(t, i);
        mrc__port_idle(p, ph, l->a, ia);
        mrc__port_idle(p, ph, l->b, ib);
        for (int c = 0; c < l->count; c++)
            idle += ia[l->port_a + c] && ib[l->port_b + c];
    }
    return idle;
}

/* The energy with idle links switched off comes from the program's port
 * mask: on a one-phase program (a ring allreduce, every lane in use at
 * every step or never), gating saves exactly link power x time for each
 * lane the mask leaves idle; and a mask that keeps one more lane on costs
 * exactly that lane's power for the whole run, in both modes. */
static void test_energy_from_mask(void **state)
{
    (void)state;
    mrc_topo_t *t = NULL;
    mrc_embedding_t *e = NULL;
    mrc_program_t *p = NULL;
    mrc_embed_config_t ec = {.strategy = "ring-on-line", .replica_size = 2};
    mrc_compile_config_t cc = {
        .collective = MRC_ALLREDUCE, .count = 1 << 16, .dtype = MRC_FLOAT32};
    assert_int_equal(mrc_topo_create("ladder:8", &t), MRC_OK);
    assert_int_equal(mrc_embed_create(t, &ec, &e), MRC_OK);
    assert_int_equal(mrc_program_compile(e, &cc, &p), MRC_OK);
    assert_int_equal(mrc__port_mask_ready(p), MRC_OK);
    assert_int_equal(p->num_port_phases, 1);
    int idle = idle_lanes(p, t, 0);
    assert_int_equal(idle, 4); /* the rungs: 0-1, 2-3, 4-5, 6-7 */
    const double watts = 0.5;
    for (int mode = 0; mode < 2; mode++) {
        mrc_sim_config_t sc = {.mode = (mrc_sim_mode_t)mode,
                               .link_power_w = watts};
        mrc_sim_result_t *r = NULL;
        assert_int_equal(mrc_sim_run(p, t, &sc, &r), MRC_OK);
        double saved = r->energy_no_gating_j - r->energy_j;
        double want = watts * r->time_us * 1e-6 * idle;
        if (mode == MRC_SIM_BSP)
            assert_true(fabs(saved - want) <= 1e-9 * want);
        double base = r->energy_j, time_s = r->time_us * 1e-6;
        mrc_sim_result_destroy(r);
        if (mode != MRC_SIM_BSP)
            continue; /* pipelined runs book links by their messages */
        /* Node 0 said to use its rung port too (port 0: link 0-1). */
        mrc__port_use_t *u = p->port_uses;
        mrc__port_use_t *grown =
            malloc(((size_t)p->num_port_uses + 1) * sizeof *grown);
        assert_non_null(grown);
        grown[0] = (mrc__port_use_t){0, 0};
        memcpy(grown + 1, u, (size_t)p->num_port_uses * sizeof *u);
        p->port_uses = grown;
        p->num_port_uses++;
        p->port_phases[1].first_use++;
        assert_int_equal(idle_lanes(p, t, 0), idle - 1);
        assert_int_equal(mrc_sim_run(p, t, &sc, &r), MRC_OK);
        double extra = r->energy_j - base;
        assert_true(fabs(extra - watts * time_s) <= 1e-9 * watts * time_s);
        mrc_sim_result_destroy(r);
        p->port_uses = u;
        p->num_port_uses--;
        p->port_phases[1].first_use--;
        free(grown);
    }
    mrc_program_destroy(p);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
}

/* ---- the node model: a host profile ------------------------------------ */

/* A hand-made profile: one host of `per` nodes, copies at C GB/s in
 * cache and Cm beyond, the host's memory M, float32 sums at R (both
 * regimes), message_us m, sync_us y. */
static mrc_profile_t profile(int per, double C, double Cm, double M, double R,
                             double m, double y)
{
    mrc_profile_t f = {.version = MRC_PROFILE_VERSION,
                       .ranks = per,
                       .cores = per,
                       .nodes_per_memory = per,
                       .cache_bytes = 1 << 20,
                       .copy_gbps_cache = C,
                       .copy_gbps_memory = Cm,
                       .memory_gbps_shared = M,
                       .message_us = m,
                       .sync_us = y};
    snprintf(f.transport, sizeof f.transport, "threads");
    f.reduce_gbps_cache[MRC_FLOAT32][MRC_SUM] = R;
    f.reduce_gbps_memory[MRC_FLOAT32][MRC_SUM] = R;
    return f;
}

static mrc_sim_result_t *sim_profile(const setup_t *s, mrc_sim_mode_t mode,
                                     const mrc_profile_t *f)
{
    return sim_cfg(s,
                   (mrc_sim_config_t){.mode = mode, .chunks = 1, .profile = f});
}

/* The pipelined walk's time of s's program with profile f (us). */
static double sim_us(const setup_t *s, mrc_sim_mode_t mode,
                     const mrc_profile_t *f)
{
    mrc_sim_result_t *r = sim_profile(s, mode, f);
    double t = r->time_us;
    mrc_sim_result_destroy(r);
    return t;
}

static double pipelined_us(const setup_t *s, const mrc_profile_t *f)
{
    return sim_us(s, MRC_SIM_PIPELINED, f);
}

/* What setting *figure (a field of f) to `value` adds to the pipelined
 * walk's time of s's program, as a call alone (calls 1) or a call in a
 * run (ns); *figure is left at value. */
static double added_ns(const setup_t *s, mrc_profile_t *f, double *figure,
                       double value, int calls)
{
    double t[2];
    for (int on = 0; on < 2; on++) {
        *figure = on ? value : 0;
        mrc_sim_result_t *r =
            sim_cfg(s, (mrc_sim_config_t){.mode = MRC_SIM_PIPELINED,
                                          .chunks = 1,
                                          .profile = f,
                                          .calls = calls});
        t[on] = r->time_us * 1e3;
        mrc_sim_result_destroy(r);
    }
    return t[1] - t[0];
}

/* The pipelined walk's time (us) with the peers' buffers mapped (read
 * in place, mrc_mem_alloc). */
static double mapped_us(const setup_t *s, const mrc_profile_t *f)
{
    mrc_sim_result_t *r =
        sim_cfg(s, (mrc_sim_config_t){.mode = MRC_SIM_PIPELINED,
                                      .chunks = 1,
                                      .profile = f,
                                      .peers_mapped = 1});
    double t = r->time_us;
    mrc_sim_result_destroy(r);
    return t;
}

/* A ring allreduce of S bytes on N nodes of one host, in cache, BSP, one
 * bidirectional ring: in each of its 2(N-1) steps a node receives two
 * messages (one a stream), each costing its core message_us m, and
 * copies the S/N bytes they hold at its copy rate C; the
 * N-1 steps of the reduce-scatter reduce them as they take them, which
 * costs what a reduction at R takes beyond that copy (nothing when R is
 * the faster). The links' bandwidth and latency play no part: the ranks
 * of one host talk through memory. */
static void test_node_closed_form(void **state)
{
    (void)state;
    const int ns[] = {2, 4};
    const double Cs[] = {5, 20}, Rs[] = {2, 8}, ms[] = {0, 1.5};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < 2; j++) {
                int N = ns[i];
                double C = Cs[k], R = Rs[j], m = ms[j];
                mrc_profile_t f = profile(N, C, 1, 1, R, m, 0);
                size_t count = (size_t)(2 * N) * 1000;
                double S = 4.0 * (double)count;
                setup_t s =
                    make(i ? "ring:4,bw=3,lat=700" : "ring:2,bw=3,lat=700",
                         "ring", MRC_ALLREDUCE, count, MRC_FLOAT32);
                mrc_sim_result_t *r = sim_profile(&s, MRC_SIM_BSP, &f);
                double want = 2.0 * (N - 1) * (2 * m * 1e3 + S / (N * C)) +
                              (N - 1) * S / N * fmax(0, 1 / R - 1 / C);
                expect_close(r->time_us * 1e3, want, "allreduce");
                assert_int_equal(r->steps, 2 * (N - 1));
                /* Memory is not a link: no link carries a byte. */
                assert_true(r->bytes_moved == 0);
                mrc_sim_result_destroy(r);
                drop(&s);
            }
}

/* A transport with slots and rendezvous (shm): the same ring allreduce
 * on ring:2, each step's two messages (one a stream) of S/4 bytes. Below
 * rendezvous_bytes they go through the slots at slot_gbps Q, and a node's
 * core copies its two sends into slots beside its two receives out of
 * them: a step takes 2 (m + (S/2) / Q), and its messages arrive a
 * piece's fill later (S/4 / Q: each is one piece). From it on, by
 * rendezvous: the
 * receiver's core takes both messages one after the other at the peer rate P,
 * each rendezvous_us r more: m + (S/2) / P + 2 r (a latency would have let the
 * two overlap). Gets by reference go by rendezvous too. Through shm's
 * slots the sum a node forms as it takes (S/2 in all, at R) is its work
 * after the take, one pass: S/2 / R, where beside the take (threads,
 * rendezvous, no threshold) only what it takes beyond the receiver's
 * copy, S/2 (1/R - 1/C). */
static void test_node_slots_rendezvous(void **state)
{
    (void)state;
    const double C = 20, P = 10, Q = 4, R = 8, m = 0.5, rdv = 1.5;
    size_t count = 4000;
    double S = 4.0 * (double)count, reduce = S / 2 * fmax(0, 1 / R - 1 / C);
    double one_pass = S / 2 / R;
    setup_t s = make("ring:2", "ring", MRC_ALLREDUCE, count, MRC_FLOAT32);
    mrc_profile_t f = profile(2, C, 1, 1, R, m, 0);
    snprintf(f.transport, sizeof f.transport, "shm");
    f.peer_gbps_cache = P;
    f.slot_gbps = Q;
    f.rendezvous_us = rdv;
    f.rendezvous_bytes = S / 4 + 1;
    mrc_sim_result_t *r = sim_profile(&s, MRC_SIM_BSP, &f);
    expect_close(r->time_us * 1e3,
                 2 * (2 * (2 * m * 1e3 + S / 2 / Q) + S / 4 / Q) + one_pass,
                 "slots");
    mrc_sim_result_destroy(r);
    /* The threads transport's receiver reads the sender's buffer: no
     * copy into a slot on the sender's core. */
    snprintf(f.transport, sizeof f.transport, "threads");
    r = sim_profile(&s, MRC_SIM_BSP, &f);
    expect_close(r->time_us * 1e3, 2 * (2 * m * 1e3 + S / 2 / Q) + reduce,
                 "threads' slots");
    mrc_sim_result_destroy(r);
    snprintf(f.transport, sizeof f.transport, "shm");
    f.rendezvous_bytes = S / 4;
    r = sim_profile(&s, MRC_SIM_BSP, &f);
    expect_close(r->time_us * 1e3,
                 2 * (2 * m * 1e3 + S / 2 / P + 2 * rdv * 1e3) + reduce,
                 "rendezvous");
    mrc_sim_result_destroy(r);
    /* Without the transport's threshold neither applies. */
    f.rendezvous_bytes = 0;
    r = sim_profile(&s, MRC_SIM_BSP, &f);
    expect_close(r->time_us * 1e3, 2 * (2 * m * 1e3 + S / 2 / P) + reduce,
                 "plain");
    mrc_sim_result_destroy(r);
    drop(&s);
}

/* A message's latency within a host (latency_us L), beside its cost on
 * the receiver's core (message_us): the messages of a ring allreduce's
 * step (both streams, every node) overlap their latencies, so in BSP
 * each of its 2(N-1) steps takes L more; pipelined, one stream's latency
 * also overlaps the other stream's work on the same core, so between L
 * and 2(N-1) L more. The tree's on ring:2 follow one another (the leaf's
 * to the root, the root's back): 2 L more. A memory program's gets take
 * get_us, not L. */
static void test_node_latency(void **state)
{
    (void)state;
    const double L = 0.7;
    for (int N = 2; N <= 4; N += 2)
        for (int mode = 0; mode < 2; mode++) {
            mrc_profile_t f = profile(N, 20, 1, 1, 8, 0.5, 0);
            setup_t s =
                make(N == 2 ? "ring:2" : "ring:4", "ring", MRC_ALLREDUCE,
                     (size_t)(2 * N) * 1000, MRC_FLOAT32);
            mrc_sim_mode_t m = mode ? MRC_SIM_PIPELINED : MRC_SIM_BSP;
            mrc_sim_result_t *r = sim_profile(&s, m, &f);
            double t0 = r->time_us;
            mrc_sim_result_destroy(r);
            f.latency_us = L;
            r = sim_profile(&s, m, &f);
            double more = r->time_us - t0;
            if (mode == 0)
                expect_close(more * 1e3, 2.0 * (N - 1) * L * 1e3,
                             "rings' latency");
            else /* one stream's latency overlaps the other's work */
                assert_true(more >= L - 1e-9 &&
                            more <= 2.0 * (N - 1) * L + 1e-9);
            mrc_sim_result_destroy(r);
            drop(&s);
        }
    const mrc_algo_t algos[] = {MRC_ALGO_TREE, MRC_ALGO_DIRECT1};
    for (int a = 0; a < 2; a++) {
        setup_t s;
        assert_int_equal(
            make_algo(&s, "ring:2", NULL, algos[a], MRC_ALLREDUCE, 4000), 0);
        mrc_profile_t f = profile(2, 20, 1, 1, 8, 0.5, 0);
        expect_close(added_ns(&s, &f, &f.latency_us, L, 1), a ? 0 : 2 * L * 1e3,
                     a ? "direct1's gets" : "the tree's two messages");
        drop(&s);
    }
}

/* More nodes on a host than cores: every message of a ring allreduce is
 * a wait on another node, which also waits for that node's turn for a
 * core (turn_us T): the closed form of test_node_closed_form with m + T.
 * With as many cores as nodes, no turn. */
static void test_node_turns(void **state)
{
    (void)state;
    const double C = 20, R = 8, m = 0.5, T = 3;
    size_t count = 8000;
    double S = 4.0 * (double)count;
    setup_t s = make("ring:4", "ring", MRC_ALLREDUCE, count, MRC_FLOAT32);
    mrc_profile_t f = profile(4, C, 1, 1, R, m, 0);
    f.turn_us = T;
    for (int cores = 2; cores <= 4; cores += 2) {
        f.cores = cores;
        double mt = 2 * m + (cores < 4 ? T : 0);
        mrc_sim_result_t *r = sim_profile(&s, MRC_SIM_BSP, &f);
        expect_close(r->time_us * 1e3,
                     6 * (mt * 1e3 + S / (4 * C)) +
                         3 * S / 4 * fmax(0, 1 / R - 1 / C),
                     cores < 4 ? "turns" : "no turns");
        mrc_sim_result_destroy(r);
    }
    drop(&s);
}

/* The pipelined walk takes a message's turn only in a step where more
 * nodes have a message than the host has cores (scaled between: (want -
 * cores) / (nodes - cores) of it). The tree's allreduce on ring:4 has
 * four such steps in a row, one chunk each: 1 -> 0 and 3 -> 2, 2 -> 0,
 * then 0 -> 2, then 0 -> 1 and 2 -> 3. Only the first and the last have
 * four nodes: 2 T more on 2 or 3 cores, none on 4. The two quiet steps
 * between take quiet_turn_share q of it each: 2 T + 2 q T. The rings have
 * every node in every step: 6 T (their two streams' turns at once),
 * whatever q. Copies here take no time, so that the turns are all there
 * is. */
static void test_node_turns_by_crowd(void **state)
{
    (void)state;
    const double T = 3, Q[] = {0, 0.5, 1};
    const mrc_algo_t algos[] = {MRC_ALGO_TREE, MRC_ALGO_RINGS};
    for (int a = 0; a < 2; a++) {
        setup_t s;
        assert_int_equal(
            make_algo(&s, "ring:4", NULL, algos[a], MRC_ALLREDUCE, 4096), 0);
        mrc_profile_t f = profile(4, 1e12, 1e12, 1e12, 1e12, 0, 0);
        for (int q = 0; q < 3; q++)
            for (int cores = 2; cores <= 4; cores++) {
                double want = a ? 6 * T : 2 * T + 2 * Q[q] * T;
                f.cores = cores;
                f.quiet_turn_share = Q[q];
                expect_close(added_ns(&s, &f, &f.turn_us, T, 1) / 1e3,
                             cores < 4 ? want : 0, a ? "rings" : "tree");
            }
        drop(&s);
    }
}

/* An allreduce of `count` floats by the family on ring:2 (the node
 * model's closed forms below: two cores, one host). */
static setup_t ring2(mrc_algo_t algo, size_t count)
{
    setup_t s;
    assert_int_equal(make_algo(&s, "ring:2", NULL, algo, MRC_ALLREDUCE, count),
                     0);
    return s;
}

/* Cores that read one another's lines at once slow one another
 * (peer_contention c): in the pipelined walk a node's reads of peers'
 * lines take 1 + c x (readers - 1) times as long. Only the peer rate P
 * costs anything here (copies, reductions and messages free, in
 * cache). The tree's allreduce on ring:2, one chunk, has one reader a
 * step (1 -> 0, then 0 -> 1): 2 S / P whatever c. The rings' has both
 * nodes reading in both steps: S / P without contention, (1 + c) times
 * that with it. */
static void test_node_contention(void **state)
{
    (void)state;
    const double P = 10, c = 0.5;
    size_t count = 4096;
    double S = 4.0 * (double)count;
    const mrc_algo_t algos[] = {MRC_ALGO_TREE, MRC_ALGO_RINGS};
    for (int a = 0; a < 2; a++) {
        setup_t s = ring2(algos[a], count);
        mrc_profile_t f = profile(2, 1e12, 1e12, 1e12, 1e12, 0, 0);
        f.peer_gbps_cache = P;
        double alone = pipelined_us(&s, &f) * 1e3;
        f.peer_contention = c;
        double contended = pipelined_us(&s, &f) * 1e3;
        expect_close(alone, (a ? 1 : 2) * S / P, a ? "rings" : "tree");
        expect_close(contended, (a ? 1 + c : 2) * S / P,
                     a ? "rings, contended" : "tree, contended");
        drop(&s);
    }
}

/* shm's sender copies a small message into a slot, its receiver out of
 * it, one fragment after the other: the two copies run side by side,
 * each at the slots' rate Q, on two cores, once the first piece is in
 * (a slot's bytes, 128 KiB here): a message of one piece is copied in
 * and then out. The tree's allreduce on ring:2 has one message a step:
 * 2 S / Q on threads, 4 S / Q on shm (each message one piece, its two
 * copies one after the other). The rings' has each node sending and
 * receiving at once, the two copies on one core: S / Q on threads (the
 * receiver alone copies), on shm 2 S / Q and the first fragment's fill
 * (S / 4 / Q, before which no receiver has anything to take; the later
 * ones overlap the other stream's copies). Only the slots cost anything
 * here. */
static void test_node_slot_copies(void **state)
{
    (void)state;
    const double Q = 10;
    size_t count = 4096;
    double S = 4.0 * (double)count;
    const mrc_algo_t algos[] = {MRC_ALGO_TREE, MRC_ALGO_RINGS};
    for (int a = 0; a < 2; a++) {
        setup_t s = ring2(algos[a], count);
        mrc_profile_t f = profile(2, 1e12, 1e12, 1e12, 1e12, 0, 0);
        f.slot_gbps = Q;
        f.rendezvous_bytes = 2 * S;
        double threads = pipelined_us(&s, &f) * 1e3;
        snprintf(f.transport, sizeof f.transport, "shm");
        double shm = pipelined_us(&s, &f) * 1e3;
        expect_close(threads, (a ? 1 : 2) * S / Q, "threads");
        expect_close(shm, a ? 2 * S / Q + S / 4 / Q : 4 * S / Q,
                     a ? "shm's rings" : "shm's tree");
        drop(&s);
    }
    /* A message of two pieces (the tree's of 2 slots, 256 KiB): only its
     * first piece's fill is exposed, 2 S / Q + 2 (S / 2) / Q. */
    count = 2 * mrc__shm_slot_bytes(2) / sizeof(float);
    S = 4.0 * (double)count;
    setup_t s = ring2(MRC_ALGO_TREE, count);
    mrc_profile_t f = profile(2, 1e12, 1e12, 1e12, 1e12, 0, 0);
    snprintf(f.transport, sizeof f.transport, "shm");
    f.slot_gbps = Q;
    f.rendezvous_bytes = 2 * S;
    expect_close(pipelined_us(&s, &f) * 1e3, 3 * S / Q,
                 "shm's tree, two pieces a message");
    drop(&s);
}

/* A send through shm's slots is its sender's core's copy: the sender
 * goes on once the message is through, not as it posts it; and a copy
 * of its own data is work on the same core (so that on a core a node
 * either alone keeps the root's copies and sends in turn; the wait
 * alone, on a crowded host, last). The tree's
 * broadcast on ring:2 in a run of calls (the group's completion), the
 * root's local copy at C then its send of S at the slots' rate Q (one
 * piece): the root's calls follow one another at S / C + S / Q (the
 * leaf, a call behind, takes each message in the root's next copy and
 * send). The send's core is its peer channel (peer rate P below C):
 * were the send posted and left, the root's next copy would run beside
 * it on its own channel, and the calls would follow at S / Q. */
static void test_node_sender_core(void **state)
{
    (void)state;
    const double C = 20, Q = 10, P = 5;
    size_t count = 4096;
    double S = 4.0 * (double)count;
    setup_t s = make_bcast("ring:2", count, MRC_COMPLETION_GROUP);
    mrc_profile_t f = profile(2, C, 1e12, 1e12, 1e12, 0, 0);
    snprintf(f.transport, sizeof f.transport, "shm");
    f.peer_gbps_cache = P;
    f.slot_gbps = Q;
    f.rendezvous_bytes = 2 * S;
    mrc_sim_result_t *r =
        sim_cfg(&s, (mrc_sim_config_t){
                        .mode = MRC_SIM_PIPELINED, .profile = &f, .calls = 8});
    expect_close(r->time_us * 1e3, S / C + S / Q, "the root's period");
    mrc_sim_result_destroy(r);
    drop(&s);
    /* The rings' broadcast: two streams, each the root's copy of a half
     * and its send. The root's copies are its core's work as its sends
     * are: they take turns, a call alone S / C + S / Q and the second
     * half's fill S / 2Q, a call in a run S / C + S / Q. (On two
     * channels, as before, one stream's copy ran beside the other's send:
     * 2867 and 2048 ns here.) */
    assert_int_equal(
        make_algo(&s, "ring:2", NULL, MRC_ALGO_RINGS, MRC_BROADCAST, count), 0);
    for (int calls = 1; calls <= 8; calls += 7) {
        r = sim_cfg(&s, (mrc_sim_config_t){.mode = MRC_SIM_PIPELINED,
                                           .profile = &f,
                                           .calls = calls});
        expect_close(
            r->time_us * 1e3, S / C + S / Q + (calls == 1 ? S / 2 / Q : 0),
            calls == 1 ? "the rings' call alone" : "the rings' period");
        mrc_sim_result_destroy(r);
    }
    drop(&s);
    /* The wait itself, on a host of one core for the two nodes (crowded:
     * a node's copy stays on its own channel, and the busy nodes share
     * the core). The root copies (the leaf waiting) and then sends (the
     * leaf taking; a sender is not counted busy): S / C + S / Q, as
     * above. Posted and left, the root's next copy shared the core with
     * the leaf's take: 2549 ns here. */
    s = make_bcast("ring:2", count, MRC_COMPLETION_GROUP);
    f.cores = 1;
    r = sim_cfg(&s, (mrc_sim_config_t){
                        .mode = MRC_SIM_PIPELINED, .profile = &f, .calls = 8});
    expect_close(r->time_us * 1e3, S / C + S / Q, "one core's period");
    mrc_sim_result_destroy(r);
    drop(&s);
}

/* A send through the slots holds its sender's core send_us (H) once its
 * bytes are in: its receiver has it then; the sender's next message and
 * its next call wait. Broadcasts on ring:2, beside the same without the
 * hold: the tree's (one message a call) a call alone as without it, a
 * call in a run H more; the rings' (two, a stream each) alone H more
 * (the second half's send waits for the first's hold), in a run 2 H. */
static void test_node_send_hold(void **state)
{
    (void)state;
    const double C = 20, Q = 10, P = 5, H = 300;
    size_t count = 4096;
    double S = 4.0 * (double)count;
    mrc_profile_t f = profile(2, C, 1e12, 1e12, 1e12, 0, 0);
    snprintf(f.transport, sizeof f.transport, "shm");
    f.peer_gbps_cache = P;
    f.slot_gbps = Q;
    f.rendezvous_bytes = 2 * S;
    static const struct {
        mrc_algo_t algo;
        int calls;
        double holds; /* H in the time */
        const char *what;
    } rows[] = {
        {MRC_ALGO_TREE, 1, 0, "the tree's call alone"},
        {MRC_ALGO_TREE, 8, 1, "the tree's period"},
        {MRC_ALGO_RINGS, 1, 1, "the rings' call alone"},
        {MRC_ALGO_RINGS, 8, 2, "the rings' period"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        setup_t s = {0};
        assert_int_equal(
            make_algo(&s, "ring:2", NULL, rows[i].algo, MRC_BROADCAST, count),
            0);
        expect_close(added_ns(&s, &f, &f.send_us, H / 1e3, rows[i].calls),
                     rows[i].holds * H, rows[i].what);
        drop(&s);
    }
}

/* A read of a peer's lines runs at half its rate for its first
 * peer_ramp_bytes R: broadcasts of S bytes on ring:2, each one read of S,
 * take min(S, R) / rate more than without the ramp, alone and as a call
 * in a run: the tree's message through shm's slots (at Q), the threads'
 * read of the buffer (at the peer rate P), direct1's get of the root's
 * window (at P); a message from the rendezvous threshold on, read
 * through the kernel (at K), none. */
static void test_node_peer_ramp(void **state)
{
    (void)state;
    const double C = 20, Q = 10, P = 5, K = 4;
    size_t count = 4096;
    double S = 4.0 * (double)count;
    static const struct {
        mrc_algo_t algo;
        int shm;     /* slots and a threshold */
        int kernel;  /* the message at the threshold, by the kernel */
        double rate; /* of the ramped read; 0: none */
        const char *what;
    } cases[] = {
        {MRC_ALGO_TREE, 1, 0, Q, "through the slots"},
        {MRC_ALGO_TREE, 0, 0, P, "the threads' read"},
        {MRC_ALGO_DIRECT1, 1, 0, P, "a get of a window"},
        {MRC_ALGO_TREE, 1, 1, 0, "through the kernel"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        mrc_profile_t f = profile(2, C, 1e12, 1e12, 1e12, 0, 0);
        f.peer_gbps_cache = P;
        if (cases[c].shm) {
            snprintf(f.transport, sizeof f.transport, "shm");
            f.slot_gbps = Q;
            f.rendezvous_bytes = cases[c].kernel ? S / 2 : 2 * S;
            f.kernel_gbps = cases[c].kernel ? K : 0;
        }
        for (int k = 0; k < 4; k++) {
            double R = k < 2 ? S / 2 : 2 * S;
            int calls = k % 2 ? 8 : 1;
            setup_t s = {0};
            assert_int_equal(make_algo(&s, "ring:2", NULL, cases[c].algo,
                                       MRC_BROADCAST, count),
                             0);
            expect_close(added_ns(&s, &f, &f.peer_ramp_bytes, R, calls),
                         cases[c].rate > 0 ? fmin(S, R) / cases[c].rate : 0,
                         cases[c].what);
            drop(&s);
        }
    }
}

/* A node whose own buffers are partly past its private cache runs its
 * in-cache rates at the share copy_gbps_shared leaves them: the closed
 * form of test_node_closed_form (ring:2, BSP, m = 0) with C and R times
 * k = 1 / (o / 1 + (1 - o) C / Cs), o the private cache's share of the
 * node's set (its send and receive buffers, 2 S). And a peer's lines
 * past its writer's cache come at Cs too (the profile has no
 * peer_gbps_shared): the messages, a peer's lines at the copy rate C,
 * at k blend(o, C, Cs) = k k C. Within it, nothing changes. */
static void test_node_own_level(void **state)
{
    (void)state;
    const double C = 20, R = 8, Cs = 5;
    size_t count = 4000;
    double S = 4.0 * (double)count;
    setup_t s =
        make("ring:2,bw=3,lat=700", "ring", MRC_ALLREDUCE, count, MRC_FLOAT32);
    mrc_profile_t f = profile(2, C, 1, 1, R, 0, 0);
    double messages = 2.0 * (S / (2 * C)), sum = S / 2 * (1 / R - 1 / C);
    f.copy_gbps_shared = Cs;
    for (int past = 0; past < 2; past++) {
        f.private_cache_bytes = past ? S / 2 : 2 * S;
        double o = past ? 0.25 : 1, k = 1 / (o + (1 - o) * C / Cs);
        mrc_sim_result_t *r = sim_profile(&s, MRC_SIM_BSP, &f);
        expect_close(r->time_us * 1e3, messages / (k * k) + sum / k,
                     past ? "past the private cache" : "within it");
        mrc_sim_result_destroy(r);
    }
    drop(&s);
}

/* In the pipelined walk a crowded host's cores are shared by the nodes
 * with work in flight. The tree's allreduce of S bytes on ring:4, one
 * chunk, copies at C and nothing else: four steps (1 -> 0 and 3 -> 2,
 * 2 -> 0, 0 -> 2, 0 -> 1 and 2 -> 3), each a copy of S by one or two
 * receivers, a core each: 4 S / C on 2 cores as on 4. The rings have
 * every node busy at once throughout: on 2 cores, twice their time on
 * 4. (A model that gave every node a core predicts the rings alike on
 * both; one that shared the cores among all the host's nodes, busy or
 * not, the tree slower on 2.) With spin_share w, the waiting nodes take
 * w of a core each: a step of b receivers has b + (4 - b) w wanting the
 * 2 cores. w = 1/2: the first and last steps (b = 2) 3 / 2 S / C each,
 * the inner ones (b = 1) 5 / 4 S / C: 11 / 2 S / C in all; w = 1: every
 * step 2 S / C. The rings, every node at work, as before. On shm, whose
 * sends go through slots at Q = C, a step's senders wait while their
 * copies sit in the slots: the tree is 4 S / C on 2 cores still (its
 * senders counted busy, the outer steps would take 2 S / C: 6 S / C);
 * a message's fill (one piece, S / C) is no delay there, its receiver's
 * core running another node meanwhile. With 4 cores each sum the tree
 * forms as it takes a slot's message is its receiver's work after the
 * take, at R = C: the two up the tree (into 0 and 2, then into 0) add
 * 2 S / C to 8 S / C; on 2 cores a node's pass runs between turns, as
 * before. */
static void test_node_cores_shared(void **state)
{
    (void)state;
    const double C = 20;
    size_t count = 4096;
    double S = 4.0 * (double)count;
    setup_t s;
    assert_int_equal(
        make_algo(&s, "ring:4", NULL, MRC_ALGO_TREE, MRC_ALLREDUCE, count), 0);
    mrc_profile_t f = profile(4, C, 1, 1, C, 0, 0);
    mrc_sim_result_t *r = sim_profile(&s, MRC_SIM_PIPELINED, &f);
    expect_close(r->time_us * 1e3, 4 * S / C, "tree, 4 cores");
    mrc_sim_result_destroy(r);
    f.cores = 2;
    r = sim_profile(&s, MRC_SIM_PIPELINED, &f);
    expect_close(r->time_us * 1e3, 4 * S / C, "tree, 2 cores");
    mrc_sim_result_destroy(r);
    f.spin_share = 0.5;
    r = sim_profile(&s, MRC_SIM_PIPELINED, &f);
    expect_close(r->time_us * 1e3, 5.5 * S / C, "tree, 2 cores, w 1/2");
    mrc_sim_result_destroy(r);
    f.spin_share = 1;
    r = sim_profile(&s, MRC_SIM_PIPELINED, &f);
    expect_close(r->time_us * 1e3, 2 * 4 * S / C, "tree, 2 cores, w 1");
    mrc_sim_result_destroy(r);
    f.cores = 4; /* a core each: no one waits for one */
    r = sim_profile(&s, MRC_SIM_PIPELINED, &f);
    expect_close(r->time_us * 1e3, 4 * S / C, "tree, 4 cores, w 1");
    mrc_sim_result_destroy(r);
    mrc_profile_t q = f;
    snprintf(q.transport, sizeof q.transport, "shm");
    q.slot_gbps = C;
    q.rendezvous_bytes = 2 * S;
    q.cores = 2;
    q.spin_share = 0;
    r = sim_profile(&s, MRC_SIM_PIPELINED, &q);
    expect_close(r->time_us * 1e3, 4 * S / C, "shm's tree, 2 cores");
    mrc_sim_result_destroy(r);
    q.cores = 4;
    r = sim_profile(&s, MRC_SIM_PIPELINED, &q);
    expect_close(r->time_us * 1e3, 10 * S / C, "shm's tree, 4 cores");
    mrc_sim_result_destroy(r);
    drop(&s);
    assert_int_equal(
        make_algo(&s, "ring:4", NULL, MRC_ALGO_RINGS, MRC_ALLREDUCE, count), 0);
    double t[2];
    for (int i = 0; i < 2; i++) {
        f.cores = i ? 2 : 4;
        r = sim_profile(&s, MRC_SIM_PIPELINED, &f);
        t[i] = r->time_us;
        mrc_sim_result_destroy(r);
    }
    expect_close(t[1], 2 * t[0], "rings, 2 cores");
    f.spin_share = 0;
    r = sim_profile(&s, MRC_SIM_PIPELINED, &f);
    expect_close(r->time_us, t[1], "rings, 2 cores, w 0");
    mrc_sim_result_destroy(r);
    drop(&s);
}

/* A memory program's waits are on flags: flag_turn_us F, not turn_us,
 * is their turn for a core when the nodes outnumber the cores. direct1's
 * allreduce on ring:4, BSP, has a round for each rank s, in which every
 * other node waits for s's flag: F more a round at most, so between F
 * and 4 F more in all; turn_us changes nothing, nor does F with a core
 * for every node. */
static void test_node_flag_turns(void **state)
{
    (void)state;
    const double F = 5;
    setup_t s;
    assert_int_equal(
        make_algo(&s, "ring:4", NULL, MRC_ALGO_DIRECT1, MRC_ALLREDUCE, 256), 0);
    mrc_profile_t f = profile(4, 20, 1, 1, 8, 0.5, 0.1);
    f.cores = 2;
    double t[4];
    for (int i = 0; i < 4; i++) {
        f.turn_us = i == 1 ? 7 : 0;
        f.flag_turn_us = i >= 2 ? F : 0;
        f.cores = i == 3 ? 4 : 2;
        mrc_sim_result_t *r = sim_profile(&s, MRC_SIM_BSP, &f);
        t[i] = r->time_us;
        mrc_sim_result_destroy(r);
    }
    assert_true(fabs(t[1] - t[0]) <= 1e-9 * t[0]); /* turn_us: no effect */
    assert_true(t[2] - t[0] >= F * (1 - 1e-9));
    assert_true(t[2] - t[0] <= 4 * F * (1 + 1e-9));
    assert_true(fabs(t[3] - t[0]) <= 1e-9 * t[0]); /* a core each */
    drop(&s);
}

/* A flow whose rest is too small to move the clock is over: half a
 * byte's reduction left 5e-10 bytes at 3e5 ns, below the clock's
 * resolution there, and the pipelined walk stood still forever. */
static void test_flow_over_at_large_times(void **state)
{
    (void)state;
    mrc__sim_flow_t f = {5.4860205267459605e-10,
                         21.194097796640531,
                         0.5295866529234825,
                         0,
                         0,
                         0};
    assert_true(mrc__sim_flow_over(&f, 309835.47890711419));
    assert_false(mrc__sim_flow_over(&f, 1.0)); /* there it still moves */
    f.remaining = 1e-12;
    assert_true(mrc__sim_flow_over(&f, 1.0));
}

/* A memory program's window by copy is a third buffer of the working
 * set. direct1's allreduce of S bytes on ring:2 exposes its input by
 * copy: 2 nodes x 3 S touched; the rings, 2 x 2 S. With a cache of 5 S
 * and memory slower than the cache, direct1 is past it (and slower than
 * with a cache of 6 S) where the rings are not (the same with either). */
static void test_node_window_in_set(void **state)
{
    (void)state;
    size_t count = 4096;
    double S = 4.0 * (double)count;
    const mrc_algo_t algos[] = {MRC_ALGO_DIRECT1, MRC_ALGO_RINGS};
    for (int a = 0; a < 2; a++) {
        setup_t s;
        assert_int_equal(
            make_algo(&s, "ring:2", NULL, algos[a], MRC_ALLREDUCE, count), 0);
        mrc_profile_t f = profile(2, 40, 4, 8, 40, 0.25, 0.1);
        f.cache_bytes = 5 * S;
        double small = pipelined_us(&s, &f);
        f.cache_bytes = 6 * S;
        double large = pipelined_us(&s, &f);
        if (a == 0)
            assert_true(small > 1.05 * large);
        else
            expect_close(small, large, "rings, 5 S or 6 S of cache");
        drop(&s);
    }
}

/* How much longer (ns) a run of s takes with a window rate of W than
 * with none (the peer rate), in the given mode. */
static double window_more(const setup_t *s, mrc_sim_mode_t mode,
                          mrc_profile_t f, double W)
{
    f.window_gbps = 0;
    double without = sim_us(s, mode, &f);
    f.window_gbps = W;
    return (sim_us(s, mode, &f) - without) * 1e3;
}

/* A peer's window at a rate of its own (window_gbps W): direct1's
 * allreduce of S bytes on ring:2 has each node get its own window and its
 * peer's (node 0 in step 0, node 1 in step 1), S bytes, S / W where the
 * peer rate P gave S / P (in cache): pipelined each node's one such get
 * is on its path, in BSP each step's. The rings, which read no window,
 * do not move, nor does direct2 of 2 MiB, which reads its peers'
 * buffers by reference; nor direct1 with more nodes than cores (a
 * reader's core ran some of its writers too: the rate stands aside). */
static void test_node_window_rate(void **state)
{
    (void)state;
    const double P = 10, W = 4, S = 4.0 * 4096;
    const double more = S / W - S / P;
    mrc_profile_t f = profile(2, 40, 4, 8, 20, 0.25, 0.1);
    f.peer_gbps_cache = P;
    setup_t s;
    assert_int_equal(
        make_algo(&s, "ring:2", NULL, MRC_ALGO_DIRECT1, MRC_ALLREDUCE, 4096),
        0);
    expect_close(window_more(&s, MRC_SIM_BSP, f, W), 2 * more,
                 "direct1's gets of windows, BSP");
    expect_close(window_more(&s, MRC_SIM_PIPELINED, f, W), more,
                 "direct1's get of a window, pipelined");
    mrc_profile_t crowded = f;
    crowded.cores = 1;
    expect_close(window_more(&s, MRC_SIM_PIPELINED, crowded, W), 0,
                 "2 nodes on 1 core");
    drop(&s);
    assert_int_equal(
        make_algo(&s, "ring:2", NULL, MRC_ALGO_RINGS, MRC_ALLREDUCE, 4096), 0);
    expect_close(window_more(&s, MRC_SIM_BSP, f, W), 0, "the rings");
    drop(&s);
    assert_int_equal(make_algo(&s, "ring:2", NULL, MRC_ALGO_DIRECT2,
                               MRC_ALLREDUCE, (size_t)1 << 19),
                     0);
    expect_close(window_more(&s, MRC_SIM_PIPELINED, f, W), 0,
                 "direct2 by reference");
    drop(&s);
}

/* A call that writes around the caches (its receive buffer at least
 * stream_bytes) moves the share of its bytes the cache holds at
 * stream_gbps W: the closed form of test_node_closed_form with its
 * copies, peers' lines and reductions at W, on ring:2, S = 1 MiB, all of
 * it in cache. A byte below the threshold the rates in cache stand. A
 * family that reduces by gets writes around only from blocks of 16 MiB:
 * direct2 of 4 MiB (blocks of 2 MiB) does not move; of 64 MiB (blocks
 * of 32 MiB) it does; direct1's allgather, whose gets only copy, goes
 * around from the threshold. */
static void test_node_stream_rate(void **state)
{
    (void)state;
    const int N = 2;
    const double C = 20, R = 8, W = 5, m = 1.5;
    size_t count = (size_t)1 << 18;
    double S = 4.0 * (double)count;
    mrc_profile_t f = profile(N, C, 1, 1, R, m, 0);
    f.cache_bytes = (double)(1u << 30);
    f.stream_gbps = W;
    f.stream_bytes = S;
    setup_t s = make("ring:2", "ring", MRC_ALLREDUCE, count, MRC_FLOAT32);
    expect_close(sim_us(&s, MRC_SIM_BSP, &f) * 1e3,
                 2.0 * (N - 1) * (2 * m * 1e3 + S / (N * W)),
                 "rings around the caches");
    /* The receive buffers written around them take no room in them: two
     * send buffers of S fit a cache of 3 S (with the receive buffers,
     * 4 S, they would not). */
    f.cache_bytes = 3 * S;
    expect_close(sim_us(&s, MRC_SIM_BSP, &f) * 1e3,
                 2.0 * (N - 1) * (2 * m * 1e3 + S / (N * W)),
                 "rings around the caches, the send buffers in cache");
    f.cache_bytes = (double)(1u << 30);
    f.stream_bytes = S + 1;
    expect_close(sim_us(&s, MRC_SIM_BSP, &f) * 1e3,
                 2.0 * (N - 1) * (2 * m * 1e3 + S / (N * C)) +
                     (N - 1) * S / N * (1 / R - 1 / C),
                 "rings through the caches");
    drop(&s);
    const size_t counts[] = {(size_t)1 << 20, (size_t)1 << 24};
    for (int a = 0; a < 2; a++) {
        assert_int_equal(make_algo(&s, "ring:2", NULL, MRC_ALGO_DIRECT2,
                                   MRC_ALLREDUCE, counts[a]),
                         0);
        f.stream_bytes = (double)(1u << 20);
        f.stream_gbps = 0;
        double through = sim_us(&s, MRC_SIM_BSP, &f);
        f.stream_gbps = W;
        double around = sim_us(&s, MRC_SIM_BSP, &f);
        if (a == 0)
            expect_close(around, through, "direct2's blocks of 2 MiB");
        else
            assert_true(around > 1.5 * through);
        drop(&s);
    }
    /* direct1's allgather only copies what it gets: around the caches
     * from the threshold, its blocks of 1 MiB notwithstanding. */
    assert_int_equal(make_algo(&s, "ring:2", NULL, MRC_ALGO_DIRECT1,
                               MRC_ALLGATHER, (size_t)1 << 18),
                     0);
    f.stream_gbps = 0;
    double through = sim_us(&s, MRC_SIM_BSP, &f);
    f.stream_gbps = W;
    assert_true(sim_us(&s, MRC_SIM_BSP, &f) > 1.5 * through);
    drop(&s);
}

/* A call around the caches: its receive buffers take no room in them,
 * a memory program's window still does. direct1's allgather of D bytes a
 * node on ring:2 (a vector of 2 x 1024 float32) exposes its input by
 * copy (a window of 4 KiB; from 16 KiB, by reference): through the caches each
 * node's set is 3 D (send, window, receive), around them 2 D; the host's two
 * nodes' 4 D fit a cache of 4 D (as a cache of 1 GiB) and not one of 3.5 D,
 * where the share past it goes at the memory's rate, 5 times slower than the
 * stream rate. */
static void test_node_stream_window_set(void **state)
{
    (void)state;
    const double W = 5;
    double D = 4.0 * 2 * 1024;
    setup_t s;
    assert_int_equal(
        make_algo(&s, "ring:2", NULL, MRC_ALGO_DIRECT1, MRC_ALLGATHER, 1024),
        0);
    mrc_profile_t f = profile(2, 20, 1, 2, 8, 0.5, 0);
    f.stream_gbps = W;
    f.stream_bytes = 1;
    f.cache_bytes = (double)(1u << 30);
    double ample = sim_us(&s, MRC_SIM_BSP, &f);
    f.cache_bytes = 4 * D;
    expect_close(sim_us(&s, MRC_SIM_BSP, &f), ample,
                 "send buffers and windows in a cache of 4 D");
    f.cache_bytes = 3.5 * D;
    assert_true(sim_us(&s, MRC_SIM_BSP, &f) > 1.05 * ample);
    drop(&s);
}

/* Beyond cache the nodes of one memory system share its bandwidth M.
 * With no cache at all and M equal to one node's copy rate Cm: one node
 * copying alone (the root of a reduce on ring:2 takes S in two messages,
 * m each, and reduces it as it goes, at R < Cm) has its full rate; two
 * nodes copying at once
 * (an allgather on ring:2: each receives the other's block and copies
 * its own) take twice as long as with memory to spare (M = 2 Cm). */
static void test_node_memory_sharing(void **state)
{
    (void)state;
    const double Cm = 4, R = 3, m = 0.25;
    size_t count = 1 << 19; /* 2 MiB of float32 */
    double S = 4.0 * (double)count;
    mrc_profile_t shared = profile(2, 50, Cm, Cm, R, m, 0);
    mrc_profile_t ample = profile(2, 50, Cm, 2 * Cm, R, m, 0);
    shared.cache_bytes = ample.cache_bytes = 0;
    setup_t b = make("ring:2", "ring", MRC_REDUCE, count, MRC_FLOAT32);
    for (int i = 0; i < 2; i++) {
        mrc_sim_result_t *r =
            sim_profile(&b, MRC_SIM_BSP, i ? &ample : &shared);
        expect_close(r->time_us * 1e3, 2 * m * 1e3 + S / R, "one alone");
        mrc_sim_result_destroy(r);
    }
    drop(&b);
    setup_t g = make("ring:2", "ring", MRC_ALLGATHER, count / 2, MRC_FLOAT32);
    /* The messages' own cost is their receiver's work, which a shared
     * channel stretches as it does their bytes: none here. */
    shared.message_us = ample.message_us = 0;
    mrc_sim_result_t *r = sim_profile(&g, MRC_SIM_BSP, &shared);
    double two = r->time_us * 1e3;
    mrc_sim_result_destroy(r);
    r = sim_profile(&g, MRC_SIM_BSP, &ample);
    double spare = r->time_us * 1e3;
    mrc_sim_result_destroy(r);
    /* Each node moves S/2 in and S/2 of its own: S at Cm with memory to
     * spare, at Cm / 2 shared. */
    expect_close(spare, S / Cm, "memory to spare");
    expect_close(two, 2 * spare, "two at once");
    drop(&g);
}

/* Between the regimes: a broadcast of S bytes on ring:2 is two messages
 * (one a stream, message_us m each to the receiver's core), the
 * receiver's copy of S (and the root's own copy beside it). With a
 * cache that holds half the host's working set (two nodes' send and
 * receive buffers, 4 S) half the bytes move at the cache's rate C and
 * half at the memory's Cm (a quarter and three quarters with a share
 * that falls as the square past the cache); with a peer rate P below C, what a
 * node takes from its peer in cache moves at P, as long as the peer's own cache
 * holds it. */
static void test_node_blend(void **state)
{
    (void)state;
    const double C = 20, Cm = 4, P = 5, m = 0.5;
    size_t count = 1 << 16;
    double S = 4.0 * (double)count;
    setup_t b = make("ring:2", "ring", MRC_BROADCAST, count, MRC_FLOAT32);
    mrc_profile_t half = profile(2, C, Cm, 1000, 10, m, 0);
    half.cache_bytes = 2 * S;
    mrc_sim_result_t *r = sim_profile(&b, MRC_SIM_BSP, &half);
    expect_close(r->time_us * 1e3, 2 * m * 1e3 + S * (0.5 / C + 0.5 / Cm),
                 "half in cache");
    mrc_sim_result_destroy(r);
    /* A share that falls as the square past the cache: a quarter. */
    half.cache_falloff = 2;
    r = sim_profile(&b, MRC_SIM_BSP, &half);
    expect_close(r->time_us * 1e3, 2 * m * 1e3 + S * (0.25 / C + 0.75 / Cm),
                 "a quarter in cache");
    mrc_sim_result_destroy(r);
    mrc_profile_t peer = profile(2, C, Cm, 1000, 10, m, 0);
    peer.cache_bytes = 8 * S;
    peer.peer_gbps_cache = P;
    r = sim_profile(&b, MRC_SIM_BSP, &peer);
    expect_close(r->time_us * 1e3, 2 * m * 1e3 + S / P, "from the peer");
    mrc_sim_result_destroy(r);
    /* The writer's own cache holds half its buffers (2 S a node): half
     * the bytes come from it at P, half from the shared cache at C. */
    peer.private_cache_bytes = S;
    r = sim_profile(&b, MRC_SIM_BSP, &peer);
    expect_close(r->time_us * 1e3, 2 * m * 1e3 + S * (0.5 / P + 0.5 / C),
                 "half from the peer's cache");
    mrc_sim_result_destroy(r);
    drop(&b);
}

/* shm's rendezvous: a broadcast's one message of S bytes on ring:2 goes
 * through the kernel at kernel_gbps K in cache. With half the working set
 * in cache, the half that misses costs the kernel's work on it and the
 * memory's fetch (Cm) in turn: S (0.5 / K + 0.5 (1 / K + 1 / Cm)). */
static void test_node_kernel_beyond_cache(void **state)
{
    (void)state;
    const double C = 20, Cm = 4, P = 5, K = 2, m = 0.5;
    size_t count = 1 << 16;
    double S = 4.0 * (double)count;
    setup_t b = make("ring:2", "ring", MRC_BROADCAST, count, MRC_FLOAT32);
    mrc_profile_t f = profile(2, C, Cm, 1000, 10, m, 0);
    snprintf(f.transport, sizeof f.transport, "shm");
    f.peer_gbps_cache = P;
    f.kernel_gbps = K;
    f.rendezvous_bytes = S / 2;
    f.cache_bytes = 8 * S;
    mrc_sim_result_t *r = sim_profile(&b, MRC_SIM_BSP, &f);
    expect_close(r->time_us * 1e3, 2 * m * 1e3 + S / K, "in cache");
    mrc_sim_result_destroy(r);
    f.cache_bytes = 2 * S;
    r = sim_profile(&b, MRC_SIM_BSP, &f);
    expect_close(r->time_us * 1e3,
                 2 * m * 1e3 + S * (0.5 / K + 0.5 * (1 / K + 1 / Cm)),
                 "half in cache");
    mrc_sim_result_destroy(r);
    drop(&b);
}

/* shm copies a send buffer exposed by reference into its owner's area
 * where it fits (mrc__shm_send_copied_max): direct1's allgather on ring:2
 * of 64 KiB a node (by reference past its 16 KiB window) is then timed by
 * that copy and its peer's read, whatever the kernel's rate, and as much
 * longer as the owner's copy (S / C, pipelined: its peer's get waits
 * for it) than with the peers' buffers
 * mapped (read in place); a send buffer past the area (16 MiB) is the
 * kernel's read, and a slower kernel makes it slower. */
static void test_node_send_copied(void **state)
{
    (void)state;
    mrc_profile_t f = profile(2, 40, 40, 1000, 20, 0, 0);
    snprintf(f.transport, sizeof f.transport, "shm");
    f.peer_gbps_cache = 10;
    f.rendezvous_bytes = 1 << 20;
    f.cache_bytes = (double)(1 << 30);
    const size_t counts[] = {1 << 14, 1 << 22}; /* floats a node */
    for (int i = 0; i < 2; i++) {
        setup_t s;
        assert_int_equal(make_algo(&s, "ring:2", NULL, MRC_ALGO_DIRECT1,
                                   MRC_ALLGATHER, counts[i]),
                         0);
        double t[2];
        for (int k = 0; k < 2; k++) {
            f.kernel_gbps = k ? 0.5 : 5;
            t[k] = sim_us(&s, MRC_SIM_PIPELINED, &f);
        }
        if (i == 0) {
            expect_close(t[1], t[0], "a copied send buffer: no kernel");
            expect_close((t[0] - mapped_us(&s, &f)) * 1e3, 4.0 * counts[i] / 40,
                         "the owner's copy");
        } else {
            assert_true(t[1] > t[0] * 2); /* read through the kernel */
        }
        drop(&s);
    }
}

/* A send buffer read through the kernel (send_by_ref 1: direct1's
 * allgather on ring:2 of 64 KiB a node, by reference past its 16 KiB
 * window) goes at kernel_gbps_cache in cache where the profile has it,
 * above the peer rate too (its lines are clean), else at the kernel's
 * rate capped at the peer's: each node's get of S bytes takes S / rate,
 * so the call's time moves by the difference. Where the send buffer is
 * copied into its owner's area (send_by_ref 0), where the peers' buffers
 * are mapped (plain loads), and on a host with fewer cores than nodes
 * (where it was never fitted), the field changes nothing. */
static void test_node_kernel_send(void **state)
{
    (void)state;
    mrc_profile_t f = profile(2, 40, 40, 1000, 20, 0, 0);
    snprintf(f.transport, sizeof f.transport, "shm");
    f.peer_gbps_cache = 10;
    f.kernel_gbps = 5;
    f.rendezvous_bytes = 1 << 20;
    f.cache_bytes = (double)(1 << 30);
    f.send_by_ref = 1;
    const size_t count = 1 << 14; /* floats a node */
    const double S = 4.0 * count;
    setup_t s;
    assert_int_equal(
        make_algo(&s, "ring:2", NULL, MRC_ALGO_DIRECT1, MRC_ALLGATHER, count),
        0);
    const double rates[] = {0, 20, 40};
    double t[3];
    for (int i = 0; i < 3; i++) {
        f.kernel_gbps_cache = rates[i];
        t[i] = sim_us(&s, MRC_SIM_PIPELINED, &f);
    }
    expect_close((t[0] - t[2]) * 1e3, S / 5 - S / 40, "kernel rate, then 40");
    expect_close((t[1] - t[2]) * 1e3, S / 20 - S / 40, "20, then 40");
    f.send_by_ref = 0;
    double copied[2];
    for (int i = 0; i < 2; i++) {
        f.kernel_gbps_cache = rates[2 * i];
        copied[i] = sim_us(&s, MRC_SIM_PIPELINED, &f);
    }
    expect_close(copied[1], copied[0], "copied into the area: no kernel");
    f.send_by_ref = 1;
    double mapped[2], crowded[2];
    for (int i = 0; i < 2; i++) {
        f.kernel_gbps_cache = rates[2 * i];
        mapped[i] = mapped_us(&s, &f);
        f.cores = 1;
        crowded[i] = sim_us(&s, MRC_SIM_PIPELINED, &f);
        f.cores = 2;
    }
    expect_close(mapped[1], mapped[0], "mapped: plain loads");
    expect_close(crowded[1], crowded[0], "more nodes than cores");
    drop(&s);
}

/* Without a profile every figure is the link model's (the closed form of
 * test_closed_forms); with one the links no longer time the ranks of one
 * host. Pipelined overlaps one stream's message latency with the other's
 * work: never slower than BSP, never faster than its chain of 2(N-1)
 * messages one after the other. */
static void test_node_profile_null(void **state)
{
    (void)state;
    setup_t s =
        make("ring:2,bw=3,lat=700", "ring", MRC_ALLREDUCE, 4000, MRC_FLOAT32);
    double S = 16000, link = 2.0 * (700 + S / (2.0 * 2 * 3));
    mrc_sim_result_t *r = sim_profile(&s, MRC_SIM_BSP, NULL);
    expect_close(r->time_us * 1e3, link, "no profile");
    assert_true(r->bytes_moved > 0);
    mrc_sim_result_destroy(r);
    mrc_profile_t f = profile(2, 10, 1, 1, 4, 2, 0);
    r = sim_profile(&s, MRC_SIM_BSP, &f);
    double bsp = r->time_us;
    expect_close(bsp * 1e3, 2 * (2 * 2e3 + S / 2 / 10) + S / 2 * (0.25 - 0.1),
                 "profile");
    mrc_sim_result_destroy(r);
    r = sim_profile(&s, MRC_SIM_PIPELINED, &f);
    assert_true(r->time_us <= bsp * (1 + 1e-12));
    assert_true(r->time_us >= 2 * 2.0);
    mrc_sim_result_destroy(r);
    drop(&s);
}

/* Every family, collective and mode runs under the node model, on one
 * host (no link carries a byte: the ranks talk through memory) and on
 * two hosts of two nodes (the links carry what crosses hosts), and with
 * groups (hcm8 4+2+2, each group walking its own steps). */
static void test_node_families(void **state)
{
    (void)state;
    const mrc_algo_t algos[] = {MRC_ALGO_RINGS, MRC_ALGO_DIRECT1,
                                MRC_ALGO_DIRECT2, MRC_ALGO_TREE};
    int ran = 0;
    for (int a = 0; a < 4; a++)
        for (int c = 0; c < MRC_NUM_COLLECTIVES; c++)
            for (int per = 2; per <= 4; per += 2)
                for (int m = 0; m < 2; m++) {
                    setup_t s;
                    if (make_algo(&s, "ring:4", NULL, algos[a],
                                  (mrc_collective_t)c, 3001)) {
                        drop(&s); /* does not apply */
                        continue;
                    }
                    mrc_profile_t f = profile(per, 10, 5, 8, 4, 1, 0.5);
                    mrc_sim_result_t *r = sim_profile(
                        &s, m ? MRC_SIM_PIPELINED : MRC_SIM_BSP, &f);
                    assert_true(r->time_us >= 1 && isfinite(r->time_us));
                    if (per == 4)
                        assert_true(r->bytes_moved == 0);
                    mrc_sim_result_destroy(r);
                    drop(&s);
                    ran++;
                }
    assert_true(ran >= 40);
    for (int m = 0; m < 2; m++) {
        setup_t s;
        assert_int_equal(make_algo(&s, "hcm8", "4+2+2", MRC_ALGO_RINGS,
                                   MRC_ALLREDUCE, 100003),
                         0);
        mrc_profile_t f = profile(8, 10, 5, 8, 4, 1, 0.5);
        mrc_sim_result_t *r =
            sim_profile(&s, m ? MRC_SIM_PIPELINED : MRC_SIM_BSP, &f);
        /* The group of 4 alone: 6 messages, 3 reductions of a quarter. */
        double S = 4.0 * 100003;
        assert_true(r->time_us * 1e3 >= 6 * 1e3 + 3 * S / 4 / 4);
        assert_true(r->bytes_moved == 0);
        mrc_sim_result_destroy(r);
        drop(&s);
    }
}

/* A profile of another version, or with a rate the model divides by at
 * 0, is refused with the field named. */
static void test_node_bad_profile(void **state)
{
    (void)state;
    setup_t s = make("ring:2", "ring", MRC_ALLREDUCE, 1000, MRC_FLOAT32);
    mrc_profile_t f = profile(2, 10, 1, 1, 4, 2, 0);
    f.version = MRC_PROFILE_VERSION + 1;
    mrc_sim_config_t cfg = {.mode = MRC_SIM_BSP, .profile = &f};
    mrc_sim_result_t *r = NULL;
    assert_int_equal(mrc_sim_run(s.p, s.topo, &cfg, &r), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "version"));
    assert_null(r);
    f = profile(2, 10, 0, 1, 4, 2, 0);
    assert_int_equal(mrc_sim_run(s.p, s.topo, &cfg, &r), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "copy_gbps_memory"));
    f = profile(2, 10, 1, 1, 4, -1, 0);
    assert_int_equal(mrc_sim_run(s.p, s.topo, &cfg, &r), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "message_us"));
    drop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_closed_forms),
        cmocka_unit_test(test_conservation),
        cmocka_unit_test(test_energy_gating),
        cmocka_unit_test(test_pipelined),
        cmocka_unit_test(test_fast_path),
        cmocka_unit_test(test_independent_groups),
        cmocka_unit_test(test_memory_closed_form),
        cmocka_unit_test(test_memory_conservation),
        cmocka_unit_test(test_memory_groups),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_run_of_calls),
        cmocka_unit_test(test_run_of_calls_refused),
        cmocka_unit_test(test_energy_from_mask),
        cmocka_unit_test(test_node_closed_form),
        cmocka_unit_test(test_node_slots_rendezvous),
        cmocka_unit_test(test_node_latency),
        cmocka_unit_test(test_node_turns),
        cmocka_unit_test(test_node_turns_by_crowd),
        cmocka_unit_test(test_node_cores_shared),
        cmocka_unit_test(test_node_contention),
        cmocka_unit_test(test_node_slot_copies),
        cmocka_unit_test(test_node_sender_core),
        cmocka_unit_test(test_node_send_hold),
        cmocka_unit_test(test_node_peer_ramp),
        cmocka_unit_test(test_node_own_level),
        cmocka_unit_test(test_node_flag_turns),
        cmocka_unit_test(test_flow_over_at_large_times),
        cmocka_unit_test(test_node_memory_sharing),
        cmocka_unit_test(test_node_window_in_set),
        cmocka_unit_test(test_node_window_rate),
        cmocka_unit_test(test_node_stream_rate),
        cmocka_unit_test(test_node_stream_window_set),
        cmocka_unit_test(test_node_send_copied),
        cmocka_unit_test(test_node_kernel_send),
        cmocka_unit_test(test_node_blend),
        cmocka_unit_test(test_node_kernel_beyond_cache),
        cmocka_unit_test(test_node_profile_null),
        cmocka_unit_test(test_node_families),
        cmocka_unit_test(test_node_bad_profile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
