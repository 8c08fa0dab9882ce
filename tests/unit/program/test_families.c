/* The direct families: compiled and proven by the checker for groups of
 * 1..16 nodes, odd and tiny counts, every collective, by copy and by
 * reference, in place and not; refused with a reason where they do not
 * apply; and the checker catches each sync taken out of them. */
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

static mrc_status_t compile_hosts(const char *spec, const char *groups,
                                  mrc_algo_t algo, mrc_collective_t c,
                                  size_t count, int root, int hosts,
                                  mrc_program_t **p)
{
    mrc_topo_t *t = NULL;
    mrc_embedding_t *e = NULL;
    mrc_embed_config_t ec = {.strategy = "auto", .groups = groups};
    if (mrc_topo_create(spec, &t) != MRC_OK ||
        mrc_embed_create(t, &ec, &e) != MRC_OK)
        fail_msg("%s: %s", spec, mrc_last_error());
    mrc_compile_config_t cc = {.collective = c,
                               .count = count,
                               .dtype = MRC_FLOAT32,
                               .op = MRC_SUM,
                               .root = root,
                               .algo = algo,
                               .hosts = hosts};
    mrc_status_t st = mrc_program_compile(e, &cc, p);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
    return st;
}

static mrc_status_t compile(const char *spec, const char *groups,
                            mrc_algo_t algo, mrc_collective_t c, size_t count,
                            int root, mrc_program_t **p)
{
    return compile_hosts(spec, groups, algo, c, count, root, 1, p);
}

static int applies(mrc_algo_t a, mrc_collective_t c)
{
    return a == MRC_ALGO_DIRECT1 ||
           (c != MRC_REDUCE_SCATTER && c != MRC_ALLGATHER);
}

static int has_memory(mrc_algo_t a)
{
    return a == MRC_ALGO_DIRECT1 || a == MRC_ALGO_DIRECT2;
}

/* Every (family, collective, group size, count) compiles and is proven,
 * or is refused as not applying. The large counts take the reference
 * code (past the window), except direct1's copy-only collectives. */
static void test_families_proven(void **state)
{
    (void)state;
    /* (the last: 16 MiB of floats, past every group's window) */
    const size_t counts[] = {0, 1, 3, 7, 1001, 1 << 22};
    char spec[32];
    for (int n = 1; n <= 16; n++) {
        snprintf(spec, sizeof spec, "ring:%d", n > 1 ? n : 2);
        const char *groups = n > 1 ? NULL : "1+1";
        for (int a = MRC_ALGO_DIRECT1; a <= MRC_ALGO_TREE; a++)
            for (int c = 0; c < MRC_NUM_COLLECTIVES; c++)
                for (size_t ci = 0; ci < 6; ci++) {
                    mrc_program_t *p = NULL;
                    int root = n > 2 ? 2 : n - 1;
                    mrc_status_t st =
                        compile(spec, groups, (mrc_algo_t)a,
                                (mrc_collective_t)c, counts[ci], root, &p);
                    int big = counts[ci] == (1 << 22);
                    /* (direct1's broadcast by reference on 2 nodes
                     * only: not on a group of 1 either) */
                    int copy_only = a == MRC_ALGO_DIRECT1 && big &&
                                    (c == MRC_ALLREDUCE || c == MRC_REDUCE ||
                                     (c == MRC_BROADCAST && n != 2));
                    if (!applies((mrc_algo_t)a, (mrc_collective_t)c) ||
                        (big && copy_only)) {
                        if (st != MRC_ERR_UNSUPPORTED)
                            fail_msg("%s (n %d) %s %s %zu: %s, not refused",
                                     spec, n, mrc_algo_name((mrc_algo_t)a),
                                     mrc_collective_name((mrc_collective_t)c),
                                     counts[ci], mrc_status_name(st));
                        assert_non_null(strstr(mrc_last_error(),
                                               mrc_algo_name((mrc_algo_t)a)));
                        continue;
                    }
                    if (st != MRC_OK)
                        fail_msg("%s %s %s %zu: %s", spec,
                                 mrc_algo_name((mrc_algo_t)a),
                                 mrc_collective_name((mrc_collective_t)c),
                                 counts[ci], mrc_last_error());
                    assert_int_equal(mrc__program_has_memory_ops(p),
                                     has_memory((mrc_algo_t)a));
                    mrc_program_destroy(p);
                }
    }
}

/* The code does not grow with the group. */
static void test_code_length_constant(void **state)
{
    (void)state;
    for (int a = MRC_ALGO_DIRECT1; a <= MRC_ALGO_TREE; a++) {
        int len = -1;
        const char *specs[] = {"ring:2", "ring:9", "ring:16"};
        for (int i = 0; i < 3; i++) {
            mrc_program_t *p = NULL;
            if (compile(specs[i], NULL, (mrc_algo_t)a, MRC_ALLREDUCE, 100, 0,
                        &p) != MRC_OK)
                fail_msg("%s: %s", specs[i], mrc_last_error());
            if (len >= 0)
                assert_int_equal(p->code_len, len);
            len = p->code_len;
            mrc_program_destroy(p);
        }
    }
}

/* p's listing holds every line of want[0 .. n). */
static void listing_has(const mrc_program_t *p, const char *const *want,
                        size_t n)
{
    char *text = NULL;
    assert_int_equal(mrc_program_listing(p, &text), MRC_OK);
    for (size_t i = 0; i < n; i++)
        if (!strstr(text, want[i]))
            fail_msg("listing lacks '%s':\n%s", want[i], text);
    mrc_free(text);
}

/* p saved and loaded again (checked on load): the same family, hosts
 * and code. */
static void image_keeps(const mrc_program_t *p)
{
    mrc_program_t *q = NULL;
    void *img = NULL;
    size_t len = 0;
    assert_int_equal(mrc_program_save(p, &img, &len), MRC_OK);
    assert_int_equal(mrc_program_load(img, len, &q), MRC_OK);
    assert_int_equal(q->cfg.algo, p->cfg.algo);
    assert_int_equal(q->cfg.hosts, p->cfg.hosts);
    assert_int_equal(q->cfg.completion, p->cfg.completion);
    assert_int_equal(q->code_len, p->code_len);
    assert_memory_equal(q->code, p->code,
                        (size_t)p->code_len * sizeof *p->code);
    mrc_free(img);
    mrc_program_destroy(q);
}

/* The listing names the memory instructions, and an image round trip
 * keeps the program (checked again on load). */
static void test_listing_and_image(void **state)
{
    (void)state;
    mrc_program_t *p = NULL;
    assert_int_equal(
        compile("ring:5", NULL, MRC_ALGO_DIRECT2, MRC_REDUCE, 1 << 20, 3, &p),
        MRC_OK);
    const char *want[] = {"expose all of sendbuf by reference",
                          "get    frag (pos) mod N of sendbuf at node (rel + "
                          "s + 1) mod N from the root into scratch",
                          "signal flag 1", "wait   flag 2 of node (0)"};
    listing_has(p, want, sizeof want / sizeof *want);
    image_keeps(p);
    mrc_program_destroy(p);
}

/* Groups are compiled apart: each a stream in rank order. */
static void test_groups(void **state)
{
    (void)state;
    mrc_program_t *p = NULL;
    assert_int_equal(
        compile("hcm8", "4+2+2", MRC_ALGO_DIRECT2, MRC_ALLREDUCE, 999, 0, &p),
        MRC_OK);
    assert_int_equal(p->num_groups, 3);
    assert_int_equal(p->num_streams, 3);
    mrc_program_destroy(p);
}

/* Takes out instruction `drop` (or turns it into `op`) and expects the
 * checker to refuse the program, naming `what`. */
static void expect_refused(mrc_algo_t a, mrc_collective_t c, size_t count,
                           int n, int drop, const char *what)
{
    char spec[32];
    snprintf(spec, sizeof spec, "ring:%d", n);
    mrc_program_t *p = NULL;
    assert_int_equal(compile(spec, NULL, a, c, count, 0, &p), MRC_OK);
    assert_true(drop < p->code_len);
    memmove(&p->code[drop], &p->code[drop + 1],
            (size_t)(p->code_len - drop - 1) * sizeof *p->code);
    p->code_len--;
    assert_int_equal(mrc_program_check(p), MRC_ERR_INVALID_PROGRAM);
    if (!strstr(mrc_last_error(), what))
        fail_msg("dropping instruction %d of %s %s: '%s' lacks '%s'", drop,
                 mrc_algo_name(a), mrc_collective_name(c), mrc_last_error(),
                 what);
    mrc_program_destroy(p);
}

static int find(const mrc_program_t *p, int op, int nth)
{
    for (int i = 0; i < p->code_len; i++)
        if (p->code[i].op == op && nth-- == 0)
            return i;
    fail_msg("no opcode %d", op);
    return -1;
}

static int index_of(mrc_algo_t a, mrc_collective_t c, size_t count, int op,
                    int nth)
{
    mrc_program_t *p = NULL;
    assert_int_equal(compile("ring:4", NULL, a, c, count, 0, &p), MRC_OK);
    int i = find(p, op, nth);
    mrc_program_destroy(p);
    return i;
}

static void test_checker_catches(void **state)
{
    (void)state;
    /* No wait before the gets: the input is read before it is there. */
    expect_refused(
        MRC_ALGO_DIRECT1, MRC_ALLREDUCE, 100, 4,
        index_of(MRC_ALGO_DIRECT1, MRC_ALLREDUCE, 100, MRC__OP_WAIT, 0),
        "before node");
    /* No signal: the peers wait for ever. */
    expect_refused(
        MRC_ALGO_DIRECT2, MRC_ALLREDUCE, 100, 4,
        index_of(MRC_ALGO_DIRECT2, MRC_ALLREDUCE, 100, MRC__OP_SIGNAL, 1),
        "deadlock");
    /* By reference, without the final barrier: a node leaves while its
     * buffers are read. */
    expect_refused(
        MRC_ALGO_DIRECT2, MRC_ALLREDUCE, 1 << 20, 4,
        index_of(MRC_ALGO_DIRECT2, MRC_ALLREDUCE, 1 << 20, MRC__OP_BARRIER, 0),
        "leave");
    /* By reference, the second wait gone: in place, a node overwrites
     * its input block before its owner has read it. */
    expect_refused(
        MRC_ALGO_DIRECT2, MRC_ALLREDUCE, 1 << 20, 4,
        index_of(MRC_ALGO_DIRECT2, MRC_ALLREDUCE, 1 << 20, MRC__OP_WAIT, 1),
        "node");
    /* The root's release gone from reduce by reference. */
    expect_refused(
        MRC_ALGO_DIRECT2, MRC_REDUCE, 1 << 20, 4,
        index_of(MRC_ALGO_DIRECT2, MRC_REDUCE, 1 << 20, MRC__OP_WAIT, 2),
        "leave");
    /* An expose gone: the gets read a window nobody wrote. */
    expect_refused(
        MRC_ALGO_DIRECT2, MRC_BROADCAST, 100, 4,
        index_of(MRC_ALGO_DIRECT2, MRC_BROADCAST, 100, MRC__OP_EXPOSE, 1),
        "window");
}

/* direct2 by copy exposes every block of its input but its own (which
 * it reduces from its sendbuf, and no peer reads in its window): the
 * exposes before its first signal cover the vector but the block it
 * later exposes of its result, without overlap. */
static void test_exposes_all_but_own(void **state)
{
    (void)state;
    static const int sizes[] = {2, 3, 5, 8};
    static const size_t counts[] = {1, 7, 100};
    char spec[32];
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (size_t j = 0; j < sizeof counts / sizeof *counts; j++) {
            int n = sizes[i];
            size_t count = counts[j];
            snprintf(spec, sizeof spec, "ring:%d", n);
            mrc_program_t *p = NULL;
            assert_int_equal(compile(spec, NULL, MRC_ALGO_DIRECT2,
                                     MRC_ALLREDUCE, count, 0, &p),
                             MRC_OK);
            for (int u = 0; u < n; u++) {
                mrc__plan_t pl;
                assert_int_equal(mrc__plan_build(p, u, 0, 0, &pl), MRC_OK);
                unsigned char seen[100] = {0};
                uint64_t own_off = 0, own_len = 0, exposed = 0;
                int signalled = 0;
                for (int k = 0; k < pl.num_ops; k++) {
                    const mrc__op_t *op = &pl.ops[k];
                    if (op->kind == MRC__SIGNAL)
                        signalled = 1;
                    if (op->kind != MRC__EXPOSE)
                        continue;
                    if (signalled) { /* its block of the result */
                        own_off = op->dst_off;
                        own_len = op->count;
                        continue;
                    }
                    assert_int_equal(op->src, MRC__BUF_SEND);
                    assert_int_equal(op->src_off, op->dst_off);
                    for (uint64_t e = op->src_off; e < op->src_off + op->count;
                         e++) {
                        assert_true(e < count);
                        assert_int_equal(seen[e]++, 0);
                    }
                    exposed += op->count;
                }
                assert_int_equal(exposed, count - own_len);
                for (uint64_t e = own_off; e < own_off + own_len; e++)
                    assert_int_equal(seen[e], 0);
                mrc__plan_free(&pl);
            }
            mrc_program_destroy(p);
        }
}

/* A broadcast's root signals before it copies its input to its own
 * output, which no peer reads: its readers and its copy run at once.
 * (Copied first, direct1's 4 MiB broadcast at 2 shm ranks took 677-692
 * us, the reader's read waiting on the root's copy; signalled first,
 * 420-430.) Both families, by copy and by reference, both completions,
 * every root. */
static void test_broadcast_root_signals_first(void **state)
{
    (void)state;
    static const mrc_algo_t algos[] = {MRC_ALGO_DIRECT1, MRC_ALGO_DIRECT2};
    static const size_t counts[] = {100, (size_t)1 << 20};
    static const mrc_completion_t completions[] = {MRC_COMPLETION_GROUP,
                                                   MRC_COMPLETION_LOCAL};
    mrc_topo_t *t = NULL;
    mrc_embedding_t *e = NULL;
    mrc_embed_config_t ec = {.strategy = "auto"};
    assert_int_equal(mrc_topo_create("ring:2", &t), MRC_OK);
    assert_int_equal(mrc_embed_create(t, &ec, &e), MRC_OK);
    for (size_t a = 0; a < 2; a++)
        for (size_t c = 0; c < 2; c++)
            for (size_t l = 0; l < 2; l++)
                for (int root = 0; root < 2; root++) {
                    mrc_compile_config_t cc = {.collective = MRC_BROADCAST,
                                               .count = counts[c],
                                               .dtype = MRC_FLOAT32,
                                               .root = root,
                                               .algo = algos[a],
                                               .completion = completions[l]};
                    mrc_program_t *p = NULL;
                    assert_int_equal(mrc_program_compile(e, &cc, &p), MRC_OK);
                    mrc__plan_t pl;
                    assert_int_equal(mrc__plan_build(p, root, 0, 0, &pl),
                                     MRC_OK);
                    int signal = -1, copy = -1;
                    for (int k = 0; k < pl.num_ops; k++) {
                        if (pl.ops[k].kind == MRC__SIGNAL && signal < 0)
                            signal = k;
                        if (pl.ops[k].kind == MRC__COPY && copy < 0)
                            copy = k;
                    }
                    assert_true(signal >= 0 && copy >= 0);
                    if (signal > copy)
                        fail_msg("%s, %zu elements, completion %d, root %d: "
                                 "the root copies (op %d) before it signals "
                                 "(op %d)",
                                 mrc_algo_name(algos[a]), counts[c], (int)l,
                                 root, copy, signal);
                    mrc__plan_free(&pl);
                    mrc_program_destroy(p);
                }
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
}

/* An image whose expose of every fragment but one is on a vector the
 * node holds only a block of (reduce-scatter) is refused when loaded,
 * before its plan could index past the fragments. */
static void test_others_refused(void **state)
{
    (void)state;
    mrc_program_t *p = NULL;
    assert_int_equal(compile("ring:4", NULL, MRC_ALGO_DIRECT1,
                             MRC_REDUCE_SCATTER, 100, 0, &p),
                     MRC_OK);
    assert_int_equal(p->code[0].op, MRC__OP_EXPOSE);
    p->addressing = MRC__ADDR_SPLIT;
    p->code[0].flags = MRC__INSN_OTHERS;
    p->code[0].frag_pos = 1;
    void *img = NULL;
    size_t len = 0;
    mrc_program_t *q = NULL;
    if (mrc_program_save(p, &img, &len) == MRC_OK) {
        assert_int_equal(mrc_program_load(img, len, &q),
                         MRC_ERR_INVALID_PROGRAM);
        mrc_free(img);
    }
    assert_null(q);
    assert_non_null(strstr(mrc_last_error(), "every fragment but one"));
    mrc_program_destroy(p);
}

/* hier: every group of 1..16 on every count of hosts that splits it
 * (1 and N included), every collective, every root place, counts by
 * copy and by reference, proven in place and not; refused for
 * reduce-scatter, allgather and hosts that do not split the group. */
static void test_hier_proven(void **state)
{
    (void)state;
    const size_t counts[] = {0, 1, 3, 1001, 20011, 1 << 20};
    char spec[32];
    for (int n = 1; n <= 16; n++) {
        snprintf(spec, sizeof spec, "ring:%d", n > 1 ? n : 2);
        const char *groups = n > 1 ? NULL : "1+1";
        for (int h = 1; h <= n + 1; h++)
            for (int c = 0; c < MRC_NUM_COLLECTIVES; c++)
                for (size_t ci = 0; ci < 6; ci++)
                    for (int root = 0; root<n; root += n> 4 ? 3 : 1) {
                        mrc_program_t *p = NULL;
                        mrc_status_t st = compile_hosts(
                            spec, groups, MRC_ALGO_HIER, (mrc_collective_t)c,
                            counts[ci], root, h, &p);
                        int ok = n % h == 0 && c != MRC_REDUCE_SCATTER &&
                                 c != MRC_ALLGATHER;
                        if (!ok) {
                            assert_int_equal(st, MRC_ERR_UNSUPPORTED);
                            assert_non_null(strstr(mrc_last_error(), "hier"));
                            break;
                        }
                        if (st != MRC_OK)
                            fail_msg("%s on %d hosts, %s %zu root %d: %s", spec,
                                     h,
                                     mrc_collective_name((mrc_collective_t)c),
                                     counts[ci], root, mrc_last_error());
                        assert_int_equal(mrc__program_has_memory_ops(p), 1);
                        assert_int_equal(mrc__program_hosts(p), h);
                        mrc_program_destroy(p);
                    }
    }
}

/* Takes instruction i of hier's allreduce on ring:8 over 2 hosts out
 * (count 1001, or by reference) and expects the checker to say `what`. */
static void hier_refused(size_t count, int op, int nth, int view,
                         const char *what)
{
    mrc_program_t *p = NULL;
    assert_int_equal(compile_hosts("ring:8", NULL, MRC_ALGO_HIER, MRC_ALLREDUCE,
                                   count, 0, 2, &p),
                     MRC_OK);
    int drop = -1;
    for (int i = 0; i < p->code_len && drop < 0; i++)
        if (p->code[i].op == op && p->code[i].view == view && nth-- == 0)
            drop = i;
    assert_true(drop >= 0);
    memmove(&p->code[drop], &p->code[drop + 1],
            (size_t)(p->code_len - drop - 1) * sizeof *p->code);
    p->code_len--;
    assert_int_equal(mrc_program_check(p), MRC_ERR_INVALID_PROGRAM);
    if (!strstr(mrc_last_error(), what))
        fail_msg("hier without instruction %d: '%s' lacks '%s'", drop,
                 mrc_last_error(), what);
    mrc_program_destroy(p);
}

static void test_hier_checker_catches(void **state)
{
    (void)state;
    /* The leaders' first receive gone: the sender later writes what it
     * sent, with nobody known to have taken it. */
    hier_refused(1001, MRC__OP_RECV, 0, MRC__VIEW_LEADERS,
                 "which it sent to node");
    /* The leaders' last receive gone: a message nobody takes. */
    hier_refused(1001, MRC__OP_RECV, 1, MRC__VIEW_LEADERS, "never receives");
    /* The leaders' last send gone: a receive waits for ever. */
    hier_refused(1001, MRC__OP_SEND, 1, MRC__VIEW_LEADERS, "deadlock");
    /* The host's wait before the leader's gets: a window read before
     * its owner exposed it. */
    hier_refused(1001, MRC__OP_WAIT, 0, MRC__VIEW_HOST, "before node");
    /* By reference, the leader's wait for its readers gone: it leaves
     * while they read its recvbuf. */
    hier_refused(1 << 20, MRC__OP_WAIT, 2, MRC__VIEW_HOST, "leave");
    /* By places (100000 floats by copy, 1 Mi by reference): a place's
     * ring without its first receive; the gets of the other blocks
     * without their wait (they read the window's old copy, which its
     * owner then overwrites under them); by reference, the last wait
     * round gone. */
    hier_refused(100000, MRC__OP_RECV, 0, MRC__VIEW_PLACE,
                 "which it sent to node");
    hier_refused(100000, MRC__OP_WAIT, 1, MRC__VIEW_HOST, "may still read");
    hier_refused(1 << 20, MRC__OP_WAIT, 2, MRC__VIEW_HOST, "leave");
    /* avg scaled after the fragment went round (the scale moved to the
     * end): the sender writes what its receiver may still be reading. */
    mrc_program_t *p = NULL;
    assert_int_equal(compile_hosts("ring:8", NULL, MRC_ALGO_HIER, MRC_ALLREDUCE,
                                   1001, 0, 2, &p),
                     MRC_OK);
    p->cfg.op = MRC_AVG;
    int s = find(p, MRC__OP_SCALE, 0);
    mrc__insn_t scale = p->code[s];
    memmove(&p->code[s], &p->code[s + 1],
            (size_t)(p->code_len - s - 1) * sizeof *p->code);
    scale.view = MRC__VIEW_GROUP;
    scale.flags = MRC__INSN_WHOLE;
    p->code[p->code_len - 1] = scale;
    assert_int_equal(mrc_program_check(p), MRC_ERR_INVALID_PROGRAM);
    assert_non_null(strstr(mrc_last_error(), "which it sent to node"));
    mrc_program_destroy(p);
}

/* The listing shows the views; an image keeps them and the hosts. */
static void test_hier_listing_and_image(void **state)
{
    (void)state;
    mrc_program_t *p = NULL, *q = NULL;
    assert_int_equal(compile_hosts("ring:6", NULL, MRC_ALGO_HIER, MRC_BROADCAST,
                                   100, 4, 3, &p),
                     MRC_OK);
    const char *want[] = {"on 3 hosts", "[leaders] recv", "[host] get"};
    /* by places: its own view and fragments */
    mrc_program_t *big = NULL;
    assert_int_equal(compile_hosts("ring:6", NULL, MRC_ALGO_HIER, MRC_ALLREDUCE,
                                   100000, 0, 3, &big),
                     MRC_OK);
    assert_int_equal(big->addressing, MRC__ADDR_CELLS);
    const char *want_big[] = {"[place] send", "the slice cut in L blocks"};
    listing_has(big, want_big, 2);
    image_keeps(big);
    mrc_program_destroy(big);
    listing_has(p, want, sizeof want / sizeof *want);
    assert_int_equal(p->cfg.hosts, 3);
    image_keeps(p);
    void *img = NULL;
    size_t len = 0;
    /* A view in another family's image is refused on load. */
    mrc_program_t *r = NULL;
    assert_int_equal(
        compile("ring:4", NULL, MRC_ALGO_DIRECT1, MRC_ALLREDUCE, 10, 0, &r),
        MRC_OK);
    r->code[0].view = MRC__VIEW_HOST;
    assert_int_equal(mrc_program_save(r, &img, &len), MRC_OK);
    assert_int_equal(mrc_program_load(img, len, &q), MRC_ERR_INVALID_PROGRAM);
    assert_non_null(strstr(mrc_last_error(), "view"));
    mrc_free(img);
    mrc_program_destroy(r);
    mrc_program_destroy(p);
}

/* Node u's waits in p, and whether it gets. */
static int waits_of(const mrc_program_t *p, int u, int *gets)
{
    mrc__plan_t pl;
    assert_int_equal(mrc__plan_build(p, u, 0, 0, &pl), MRC_OK);
    int waits = 0;
    *gets = 0;
    for (int k = 0; k < pl.num_ops; k++) {
        waits += pl.ops[k].kind == MRC__WAIT || pl.ops[k].kind == MRC__BARRIER;
        *gets |= pl.ops[k].kind == MRC__GET;
    }
    mrc__plan_free(&pl);
    return waits;
}

/* Node u's signals in p. */
static int signals_of(const mrc_program_t *p, int u)
{
    mrc__plan_t pl;
    assert_int_equal(mrc__plan_build(p, u, 0, 0, &pl), MRC_OK);
    int n = 0;
    for (int k = 0; k < pl.num_ops; k++)
        n += pl.ops[k].kind == MRC__SIGNAL;
    mrc__plan_free(&pl);
    return n;
}

/* direct1's broadcast on 2 nodes past 64 KiB goes by reference with
 * either completion, the same code, proven: its root waits (at the
 * closing sync) until its leaf has read its buffer. */
static void local_broadcast_by_ref(void)
{
    mrc_topo_t *t = NULL;
    mrc_embedding_t *e = NULL;
    mrc_embed_config_t ec = {.strategy = "auto"};
    assert_int_equal(mrc_topo_create("ring:2", &t), MRC_OK);
    assert_int_equal(mrc_embed_create(t, &ec, &e), MRC_OK);
    for (int root = 0; root < 2; root++) {
        mrc_compile_config_t cc = {.collective = MRC_BROADCAST,
                                   .count = (64 << 10) / 4 + 1,
                                   .dtype = MRC_INT32,
                                   .root = root,
                                   .algo = MRC_ALGO_DIRECT1,
                                   .completion = MRC_COMPLETION_LOCAL};
        mrc_program_t *p = NULL, *g = NULL;
        assert_int_equal(mrc_program_compile(e, &cc, &p), MRC_OK);
        cc.completion = MRC_COMPLETION_GROUP;
        assert_int_equal(mrc_program_compile(e, &cc, &g), MRC_OK);
        assert_int_equal(mrc__program_exposes_by_ref(p), 1);
        assert_int_equal(p->code_len, g->code_len);
        assert_memory_equal(p->code, g->code,
                            (size_t)p->code_len * sizeof *p->code);
        int gets = 0;
        assert_true(waits_of(p, root, &gets) >= 1);
        assert_int_equal(gets, 0);
        assert_true(waits_of(p, 1 - root, &gets) >= 1);
        assert_int_equal(gets, 1);
        mrc_program_destroy(p);
        mrc_program_destroy(g);
    }
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
}

/* direct1's reduce and broadcast with local completion, proven on every
 * group size and root: a node that gets waits on the one it gets from
 * (and only a node that gets waits), the leaves of a reduce and the root
 * of a broadcast wait on nobody (but past 64 KiB on 2 nodes:
 * local_broadcast_by_ref); with group completion every node waits on
 * every other. The completion survives the image and is listed; the
 * other families compile the same code either way. */
static void test_local_completion(void **state)
{
    (void)state;
    char spec[32];
    for (int n = 1; n <= 5; n++)
        for (int root = 0; root<n; root += n> 2 ? 2 : 1)
            for (int k = 0; k < 2; k++) {
                mrc_collective_t c = k ? MRC_BROADCAST : MRC_REDUCE;
                snprintf(spec, sizeof spec, n > 1 ? "ring:%d" : "line:1", n);
                mrc_program_t *p = NULL, *g = NULL;
                mrc_topo_t *t = NULL;
                mrc_embedding_t *e = NULL;
                mrc_embed_config_t ec = {.strategy = "auto"};
                assert_int_equal(mrc_topo_create(spec, &t), MRC_OK);
                assert_int_equal(mrc_embed_create(t, &ec, &e), MRC_OK);
                mrc_compile_config_t cc = {.collective = c,
                                           .count = 7,
                                           .dtype = MRC_INT32,
                                           .op = MRC_SUM,
                                           .root = root,
                                           .algo = MRC_ALGO_DIRECT1,
                                           .completion = MRC_COMPLETION_LOCAL};
                assert_int_equal(mrc_program_compile(e, &cc, &p), MRC_OK);
                cc.completion = MRC_COMPLETION_GROUP;
                assert_int_equal(mrc_program_compile(e, &cc, &g), MRC_OK);
                for (int u = 0; u < n; u++) {
                    int gets = 0, ggets = 0;
                    int waits = waits_of(p, u, &gets);
                    int gwaits = waits_of(g, u, &ggets);
                    int receives = k ? u != root : u == root;
                    /* a root alone reads only its own input */
                    assert_int_equal(gets, receives && n > 1);
                    assert_int_equal(ggets, receives);
                    /* the root of a reduce waits on every leaf, not on
                     * itself: it reads its own input, not its window */
                    assert_int_equal(waits, !receives ? 0 : k ? 1 : n - 1);
                    if (!k && u == root)
                        assert_int_equal(signals_of(p, u), 0);
                    assert_true(gwaits >= n - 1);
                }
                image_keeps(p);
                listing_has(p, (const char *[]){"local completion"}, 1);
                mrc_program_destroy(p);
                mrc_program_destroy(g);
                /* Other families: the same code either way. */
                cc.algo = MRC_ALGO_TREE;
                assert_int_equal(mrc_program_compile(e, &cc, &g), MRC_OK);
                cc.completion = MRC_COMPLETION_LOCAL;
                assert_int_equal(mrc_program_compile(e, &cc, &p), MRC_OK);
                assert_int_equal(p->code_len, g->code_len);
                assert_memory_equal(p->code, g->code,
                                    (size_t)p->code_len * sizeof *p->code);
                mrc_program_destroy(p);
                mrc_program_destroy(g);
                cc.completion = (mrc_completion_t)7;
                assert_int_equal(mrc_program_compile(e, &cc, &p),
                                 MRC_ERR_INVALID_ARG);
                assert_non_null(strstr(mrc_last_error(), "completion"));
                mrc_embed_destroy(e);
                mrc_topo_destroy(t);
            }
    local_broadcast_by_ref();
}

/* The tree copies no input first: for reduce and allreduce over 1-9
 * nodes and several roots, no node copies unless it is alone; a node's
 * first receive reduces with its sendbuf, its later ones with what it
 * accumulated; a node sends its sendbuf when it has received nothing
 * before (a leaf) and its accumulation otherwise. The checker proves
 * each program (compile). */
static void test_tree_copies_nothing(void **state)
{
    (void)state;
    char spec[32];
    for (int n = 1; n <= 9; n++)
        for (int root = 0; root<n; root += n> 3 ? 3 : 1)
            for (int k = 0; k < 2; k++) {
                snprintf(spec, sizeof spec, n > 1 ? "ring:%d" : "line:1", n);
                mrc_topo_t *t = NULL;
                mrc_embedding_t *e = NULL;
                mrc_program_t *p = NULL;
                mrc_embed_config_t ec = {.strategy = "auto"};
                assert_int_equal(mrc_topo_create(spec, &t), MRC_OK);
                assert_int_equal(mrc_embed_create(t, &ec, &e), MRC_OK);
                mrc_compile_config_t cc = {.collective =
                                               k ? MRC_ALLREDUCE : MRC_REDUCE,
                                           .count = 11,
                                           .dtype = MRC_INT32,
                                           .op = MRC_SUM,
                                           .root = k ? 0 : root,
                                           .algo = MRC_ALGO_TREE};
                assert_int_equal(mrc_program_compile(e, &cc, &p), MRC_OK);
                for (int u = 0; u < n; u++) {
                    mrc__plan_t pl;
                    assert_int_equal(mrc__plan_build(p, u, 0, 0, &pl), MRC_OK);
                    int received = 0, sent = 0, copies = 0;
                    for (int i = 0; i < pl.num_ops; i++) {
                        const mrc__op_t *op = &pl.ops[i];
                        copies += op->kind == MRC__COPY;
                        if (op->kind == MRC__RECV &&
                            op->local != MRC__BUF_NONE) {
                            assert_int_equal(
                                op->local, received ? op->dst : MRC__BUF_SEND);
                            received++;
                        } else if (op->kind == MRC__SEND && !sent) {
                            /* (the reduce's send; a broadcast's follow) */
                            assert_int_equal(op->src == MRC__BUF_SEND,
                                             !received);
                            sent = 1;
                        }
                    }
                    assert_int_equal(copies, n == 1);
                    mrc__plan_free(&pl);
                }
                mrc_program_destroy(p);
                mrc_embed_destroy(e);
                mrc_topo_destroy(t);
            }
}

/* direct1's allgather and reduce-scatter go by reference past a window
 * of 16 KiB on 2 nodes, by copy up to mrc__stage_max on more; broadcast
 * by reference past 64 KiB on 2 nodes, by copy only up to
 * mrc__stage_max on more, allreduce and reduce
 * up to mrc__stage_reduce_max (1 MiB), past which direct1's, copy only,
 * does not apply. (count: floats a node, a block for allgather and
 * reduce-scatter: the window is n blocks; ref 2: refused.) */
static void test_copy_limit(void **state)
{
    (void)state;
    const struct {
        mrc_algo_t a;
        mrc_collective_t c;
        const char *spec;
        size_t count;
        int ref;
    } cases[] = {
        {MRC_ALGO_DIRECT1, MRC_ALLGATHER, "ring:2", 2048, 0}, /* 16 KiB */
        {MRC_ALGO_DIRECT1, MRC_ALLGATHER, "ring:2", 2049, 1}, /* past it */
        {MRC_ALGO_DIRECT1, MRC_REDUCE_SCATTER, "ring:2", 2048, 0},
        {MRC_ALGO_DIRECT1, MRC_REDUCE_SCATTER, "ring:2", 4096, 1},
        {MRC_ALGO_DIRECT1, MRC_ALLGATHER, "ring:3", 4096, 0}, /* 48 KiB */
        {MRC_ALGO_DIRECT1, MRC_REDUCE_SCATTER, "ring:4", 8192, 0},
        {MRC_ALGO_DIRECT2, MRC_ALLREDUCE, "ring:2", 65536, 0}, /* 256 KiB */
        {MRC_ALGO_DIRECT2, MRC_BROADCAST, "ring:2", 65536, 0},
        {MRC_ALGO_DIRECT2, MRC_REDUCE, "ring:2", 65536, 0},
        {MRC_ALGO_DIRECT2, MRC_ALLREDUCE, "ring:2", 1 << 20, 1}, /* 4 MiB */
        {MRC_ALGO_DIRECT2, MRC_BROADCAST, "ring:2", 1 << 20, 0},
        {MRC_ALGO_DIRECT2, MRC_REDUCE, "ring:2", 1 << 20, 1},
        {MRC_ALGO_DIRECT2, MRC_REDUCE, "ring:2", 1 << 18, 0},    /* 1 MiB */
        {MRC_ALGO_DIRECT1, MRC_BROADCAST, "ring:2", 1 << 14, 0}, /* 64 KiB */
        {MRC_ALGO_DIRECT1, MRC_BROADCAST, "ring:2", (1 << 14) + 1, 1},
        {MRC_ALGO_DIRECT1, MRC_BROADCAST, "ring:2", 1 << 22, 1}, /* 16 MiB */
        {MRC_ALGO_DIRECT1, MRC_BROADCAST, "ring:4", 1 << 19, 0}, /* 2 MiB */
        {MRC_ALGO_DIRECT1, MRC_BROADCAST, "ring:4", 1 << 22, 2},
        {MRC_ALGO_DIRECT1, MRC_ALLREDUCE, "ring:2", 1 << 18, 0},
        {MRC_ALGO_DIRECT1, MRC_ALLREDUCE, "ring:2", (1 << 18) + 1, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        mrc_program_t *p = NULL;
        mrc_status_t st = compile(cases[i].spec, NULL, cases[i].a, cases[i].c,
                                  cases[i].count, 0, &p);
        if (cases[i].ref == 2) {
            if (st != MRC_ERR_UNSUPPORTED)
                fail_msg("case %zu: %s, not refused", i, mrc_status_name(st));
            continue;
        }
        assert_int_equal(st, MRC_OK);
        if (mrc__program_exposes_by_ref(p) != cases[i].ref)
            fail_msg("case %zu: %s by %s", i, mrc_collective_name(cases[i].c),
                     cases[i].ref ? "copy" : "reference");
        assert_int_equal(mrc__program_uses_window(p), !cases[i].ref);
        mrc_program_destroy(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_families_proven),
        cmocka_unit_test(test_code_length_constant),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_listing_and_image),
        cmocka_unit_test(test_checker_catches),
        cmocka_unit_test(test_local_completion),
        cmocka_unit_test(test_tree_copies_nothing),
        cmocka_unit_test(test_copy_limit),
        cmocka_unit_test(test_exposes_all_but_own),
        cmocka_unit_test(test_broadcast_root_signals_first),
        cmocka_unit_test(test_others_refused),
        cmocka_unit_test(test_hier_proven),
        cmocka_unit_test(test_hier_checker_catches),
        cmocka_unit_test(test_hier_listing_and_image),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
