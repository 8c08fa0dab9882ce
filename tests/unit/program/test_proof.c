/* The symbolic proof of ring codes against the abstract run of every
 * message, on the compiled programs and on every single-field mutation of
 * their code; the port mask found from node 0's steps against the one
 * found by walking every message; and the same proof at sizes where the
 * checker used to check less. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrc/mrc.h"
#include "program/program_internal.h"

typedef struct prog_case {
    const char *spec, *strategy;
    int replica_size;
} prog_case_t;

static const prog_case_t cases[] = {
    {"ring:2", "ring", 0},
    {"ring:5", "ring", 0},
    {"ring:8", "auto", 0},
    {"torus2d:3,3", "auto", 0},
    {"hcm8", "hcm8", 0},
    {"torus-ladder:8", "barley-twist", 0},
    {"ladder:8", "ring-on-line", 2}, /* routed hops */
    {"prism:3,4", "prism-faces", 0},
    {"hcm8", "auto", 0},
};
enum { NUM_CASES = sizeof cases / sizeof cases[0] };

static mrc_program_t *compile(const prog_case_t *pc, mrc_collective_t c,
                              size_t count)
{
    mrc_topo_t *t = NULL;
    mrc_embedding_t *e = NULL;
    mrc_program_t *p = NULL;
    mrc_embed_config_t ec = {.strategy = pc->strategy,
                             .replica_size = pc->replica_size};
    if (mrc_topo_create(pc->spec, &t) != MRC_OK ||
        mrc_embed_create(t, &ec, &e) != MRC_OK)
        fail_msg("%s: %s", pc->spec, mrc_last_error());
    mrc_compile_config_t cc = {
        .collective = c, .count = count, .dtype = MRC_FLOAT32, .op = MRC_AVG};
    if (mrc_program_compile(e, &cc, &p) != MRC_OK)
        fail_msg("%s %s: %s", pc->spec, mrc_collective_name(c),
                 mrc_last_error());
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
    return p;
}

/* The symbolic verdict over every stream: MRC_OK, an error, or
 * MRC_ERR_UNSUPPORTED where the proof does not apply or cannot follow. */
static mrc_status_t symbolic(const mrc_program_t *p)
{
    if (!mrc__symbolic_applies(p))
        return MRC_ERR_UNSUPPORTED;
    for (int k = 0; k < p->num_streams; k++) {
        if (mrc__stream_size(p, k) < 2 ||
            mrc__stream_chunks(p, k, UINT64_MAX) == 0)
            continue;
        mrc_status_t st = mrc__check_symbolic_stream(p, k);
        if (st != MRC_OK)
            return st;
    }
    return MRC_OK;
}

/* The abstract run of every message (a relay dropped at no node). */
static mrc_status_t full_run(const mrc_program_t *p)
{
    return mrc__program_check_drop_relays(p, p->num_nodes);
}

/* One mutation of one field of instruction i; 0 if it does not apply. */
static int mutate(mrc__insn_t *in, int m)
{
    switch (m) {
    case 0: in->frag_const++; return 1;
    case 1: in->frag_const--; return 1;
    case 2: in->frag_step = (int8_t)(in->frag_step ? 0 : -1); return 1;
    case 3: in->frag_step++; return 1;
    case 4:
        in->buf_a =
            in->buf_a == MRC__BUF_RECV ? MRC__BUF_SCRATCH : MRC__BUF_RECV;
        return 1;
    case 5:
        in->buf_b = in->buf_b == MRC__BUF_SEND ? MRC__BUF_RECV : MRC__BUF_SEND;
        return 1;
    case 6:
        in->local = in->local == MRC__BUF_NONE ? MRC__BUF_SEND : MRC__BUF_NONE;
        return 1;
    case 7: return in->op == MRC__OP_LOOP ? (in->loop_extra++, 1) : 0;
    case 8: return in->op == MRC__OP_LOOP ? (in->loop_extra--, 1) : 0;
    case 9: in->local = MRC__BUF_RECV; return 1;
    default: return 0;
    }
}
enum { NUM_MUTATIONS = 10 };

/* The symbolic proof accepts exactly what the full run accepts: never a
 * program the run refuses (sound), and every program the run accepts
 * when no fragment is empty (complete on these codes), unless it says
 * it cannot follow one (MRC_ERR_UNSUPPORTED). */
static void test_symbolic_agrees_with_run(void **state)
{
    (void)state;
    const mrc_collective_t colls[] = {MRC_ALLREDUCE, MRC_REDUCE_SCATTER,
                                      MRC_ALLGATHER};
    const size_t counts[] = {1000, 3};
    int tried = 0, refused = 0, beyond = 0;
    for (int ci = 0; ci < NUM_CASES; ci++)
        for (int c = 0; c < 3; c++)
            for (int ki = 0; ki < 2; ki++) {
                mrc_program_t *p = compile(&cases[ci], colls[c], counts[ki]);
                assert_true(mrc__symbolic_applies(p));
                if (symbolic(p) != MRC_OK || full_run(p) != MRC_OK)
                    fail_msg("%s %s: %s", cases[ci].spec,
                             mrc_collective_name(colls[c]), mrc_last_error());
                int whole = counts[ki] >= 1000;
                for (int i = 0; i < p->code_len; i++)
                    for (int m = 0; m < NUM_MUTATIONS; m++) {
                        mrc__insn_t keep = p->code[i];
                        if (!mutate(&p->code[i], m)) {
                            p->code[i] = keep;
                            continue;
                        }
                        mrc_status_t sym = symbolic(p);
                        char why[512];
                        snprintf(why, sizeof why, "%s", mrc_last_error());
                        mrc_status_t run = full_run(p);
                        tried++;
                        refused += run != MRC_OK;
                        beyond += sym == MRC_ERR_UNSUPPORTED;
                        if ((sym == MRC_OK && run != MRC_OK) ||
                            (whole && run == MRC_OK && sym != MRC_OK &&
                             sym != MRC_ERR_UNSUPPORTED))
                            fail_msg("%s %s count %zu, instruction %d, "
                                     "mutation %d: symbolic %d (%s), run "
                                     "%d (%s)",
                                     cases[ci].spec,
                                     mrc_collective_name(colls[c]), counts[ki],
                                     i, m, sym, why, run, mrc_last_error());
                        p->code[i] = keep;
                    }
                mrc_program_destroy(p);
            }
    /* The mutations exercise both verdicts, and the proof follows
     * nearly all of them. */
    print_message("%d mutations: %d refused, %d beyond the proof\n", tried,
                  refused, beyond);
    assert_true(refused > tried / 4);
    assert_true(refused < tried);
    assert_true(beyond < tried / 10);
}

static void assert_same_mask(const mrc_program_t *a, const mrc_program_t *b,
                             const char *what)
{
    if (a->num_port_phases != b->num_port_phases ||
        a->num_port_uses != b->num_port_uses)
        fail_msg("%s: %d phases, %d uses; the walk finds %d, %d", what,
                 a->num_port_phases, a->num_port_uses, b->num_port_phases,
                 b->num_port_uses);
    for (int i = 0; i < a->num_port_phases; i++)
        assert_memory_equal(&a->port_phases[i], &b->port_phases[i],
                            sizeof a->port_phases[i]);
    for (int i = 0; i < a->num_port_uses; i++)
        assert_memory_equal(&a->port_uses[i], &b->port_uses[i],
                            sizeof a->port_uses[i]);
}

/* The mask from node 0's steps is the walk's, phase for phase. */
static void test_port_mask_from_node_zero(void **state)
{
    (void)state;
    const size_t counts[] = {1000, 5, 1};
    for (int ci = 0; ci < NUM_CASES; ci++)
        for (int c = 0; c < MRC_NUM_COLLECTIVES; c++)
            for (int ki = 0; ki < 3; ki++) {
                mrc_program_t *p =
                    compile(&cases[ci], (mrc_collective_t)c, counts[ki]);
                mrc_program_t *q =
                    compile(&cases[ci], (mrc_collective_t)c, counts[ki]);
                assert_int_equal(mrc__port_mask_build(p), MRC_OK);
                assert_int_equal(mrc__port_mask_build_walk(q), MRC_OK);
                char what[128];
                snprintf(what, sizeof what, "%s %s count %zu", cases[ci].spec,
                         mrc_collective_name((mrc_collective_t)c), counts[ki]);
                assert_same_mask(p, q, what);
                mrc_program_destroy(p);
                mrc_program_destroy(q);
            }
}

/* Sizes past the old cliffs (512 nodes: dataflow; 4096: every message)
 * get the whole proof, for every collective, and a broken large program
 * is caught by its code, not only by its tables. */
static void test_large_groups_proven(void **state)
{
    (void)state;
    const prog_case_t big[] = {{"ring:4097", "ring", 0},
                               {"torus2d:65,65", "auto", 0}};
    for (int ci = 0; ci < 2; ci++)
        for (int c = 0; c < MRC_NUM_COLLECTIVES; c++) {
            mrc_program_t *p = compile(&big[ci], (mrc_collective_t)c, 70000);
            if (mrc_program_check(p) != MRC_OK)
                fail_msg("%s %s: %s", big[ci].spec,
                         mrc_collective_name((mrc_collective_t)c),
                         mrc_last_error());
            assert_int_equal(mrc__port_mask_ready(p), MRC_OK);
            assert_true(p->num_port_phases > 0);
            mrc_program_destroy(p);
        }
    mrc_program_t *p = compile(&big[1], MRC_ALLREDUCE, 70000);
    for (int i = 0; i < p->code_len; i++)
        if (p->code[i].op == MRC__OP_SEND) {
            p->code[i].buf_b = MRC__BUF_SEND; /* resends its own input */
            break;
        }
    assert_int_equal(mrc_program_check(p), MRC_ERR_INVALID_PROGRAM);
    assert_non_null(strstr(mrc_last_error(), "contributions"));
    mrc_program_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symbolic_agrees_with_run),
        cmocka_unit_test(test_port_mask_from_node_zero),
        cmocka_unit_test(test_large_groups_proven),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
