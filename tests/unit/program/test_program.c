/* The program: constant code length, listing, image round trip, refused
 * images, and the checker against deliberately broken programs. */
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

static mrc_program_t *compile(const char *spec, const char *strategy,
                              mrc_collective_t c, size_t count, int root)
{
    mrc_topo_t *t = NULL;
    mrc_embedding_t *e = NULL;
    mrc_program_t *p = NULL;
    mrc_embed_config_t ec = {.strategy = strategy};
    if (mrc_topo_create(spec, &t) != MRC_OK ||
        mrc_embed_create(t, &ec, &e) != MRC_OK)
        fail_msg("%s: %s", spec, mrc_last_error());
    mrc_compile_config_t cc = {.collective = c,
                               .count = count,
                               .dtype = MRC_FLOAT32,
                               .op = MRC_SUM,
                               .root = root};
    if (mrc_program_compile(e, &cc, &p) != MRC_OK)
        fail_msg("%s %s: %s", spec, mrc_collective_name(c), mrc_last_error());
    /* The program keeps no pointer into the embedding or topology. */
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
    return p;
}

/* The bound that memory is sized from holds for every node, collective
 * and chunking: a plan never has more chains or operations. */
static void test_plan_bound(void **state)
{
    (void)state;
    const char *specs[] = {"ring:5", "hcm8", "torus-ladder:8"};
    const uint64_t chunks[] = {0, 1, 3, 64};
    for (size_t si = 0; si < 3; si++)
        for (int c = 0; c < MRC_NUM_COLLECTIVES; c++) {
            mrc_program_t *p =
                compile(specs[si], "auto", (mrc_collective_t)c, 1001, 1);
            for (size_t ki = 0; ki < 4; ki++)
                for (int u = 0; u < p->num_nodes; u++) {
                    uint64_t chains = 0, ops = 0;
                    mrc__plan_bound(p, p->nodes[u].group, chunks[ki], &chains,
                                    &ops);
                    mrc__plan_t plan;
                    assert_int_equal(
                        mrc__plan_build(p, u, chunks[ki], 0, &plan), MRC_OK);
                    if ((uint64_t)plan.num_chains > chains ||
                        (uint64_t)plan.num_ops > ops)
                        fail_msg(
                            "%s %s chunk %llu node %d: %d chains, %d "
                            "ops; bound %llu, %llu",
                            specs[si], mrc_collective_name((mrc_collective_t)c),
                            (unsigned long long)chunks[ki], u, plan.num_chains,
                            plan.num_ops, (unsigned long long)chains,
                            (unsigned long long)ops);
                    mrc__plan_free(&plan);
                }
            mrc_program_destroy(p);
        }
}

static void test_code_length_constant(void **state)
{
    (void)state;
    for (int c = 0; c < MRC_NUM_COLLECTIVES; c++) {
        int len = -1;
        const char *specs[] = {"ring:2",   "ring:8",      "ring:64",
                               "ring:512", "torus2d:8,8", "hcm8"};
        for (int i = 0; i < 6; i++) {
            mrc_program_t *p =
                compile(specs[i], "auto", (mrc_collective_t)c, 1000, 1);
            mrc_program_info_t info;
            assert_int_equal(mrc_program_info(p, &info), MRC_OK);
            if (len < 0)
                len = info.code_instructions;
            assert_int_equal(info.code_instructions, len);
            assert_true(info.table_bytes > 0);
            mrc_program_destroy(p);
        }
    }
}

static void test_listing(void **state)
{
    (void)state;
    mrc_program_t *p = compile("hcm8", "hcm8", MRC_ALLREDUCE, 1000, 0);
    char *text = NULL;
    assert_int_equal(mrc_program_listing(p, &text), MRC_OK);
    assert_non_null(strstr(text, "send   frag (pos - s) mod N"));
    assert_non_null(strstr(text, "recv   frag (pos - s - 1) mod N"));
    assert_non_null(strstr(text, "by out_port[node]"));
    assert_non_null(strstr(text, "node table"));
    assert_non_null(strstr(text, "idle ports"));
    assert_non_null(strstr(text, "step 0: send frag 0"));
    mrc_free(text);
    mrc_program_destroy(p);
}

static void test_image_round_trip(void **state)
{
    (void)state;
    for (int c = 0; c < MRC_NUM_COLLECTIVES; c++) {
        mrc_program_t *p =
            compile("prism:3,3", "prism-faces", (mrc_collective_t)c, 777, 2);
        void *img = NULL, *img2 = NULL;
        size_t len = 0, len2 = 0;
        assert_int_equal(mrc_program_save(p, &img, &len), MRC_OK);
        mrc_program_t *q = NULL;
        assert_int_equal(mrc_program_load(img, len, &q), MRC_OK);
        assert_int_equal(mrc_program_save(q, &img2, &len2), MRC_OK);
        assert_int_equal(len, len2);
        assert_memory_equal(img, img2, len);
        mrc_free(img);
        mrc_free(img2);
        mrc_program_destroy(p);
        mrc_program_destroy(q);
    }
}

/* Rewrites the checksum so that a corruption reaches the validation. */
static void reseal(uint8_t *img, size_t len)
{
    uint64_t sum = mrc__fnv1a(img + 32, len - 32);
    for (int i = 0; i < 8; i++)
        img[24 + i] = (uint8_t)(sum >> (8 * i));
}

/* The image's header as of `version`, with `len` bytes in all, sealed. */
static void restamp(uint8_t *img, uint8_t version, size_t len)
{
    img[8] = version;
    for (int i = 0; i < 8; i++)
        img[16 + i] = (uint8_t)((len - 32) >> (8 * i));
    reseal(img, len);
}

static void test_refused_images(void **state)
{
    (void)state;
    mrc_program_t *p = compile("hcm8", "hcm8", MRC_ALLREDUCE, 1000, 0);
    void *img = NULL;
    size_t len = 0;
    assert_int_equal(mrc_program_save(p, &img, &len), MRC_OK);
    uint8_t *copy = malloc(len);
    mrc_program_t *q = (mrc_program_t *)(uintptr_t)1;
    /* Every truncation. */
    for (size_t n = 0; n < len; n++) {
        assert_int_equal(mrc_program_load(img, n, &q), MRC_ERR_INVALID_PROGRAM);
        assert_null(q);
    }
    /* Every single flipped byte: the checksum or the header catches it. */
    for (size_t i = 0; i < len; i++) {
        memcpy(copy, img, len);
        copy[i] ^= 0x40;
        assert_int_equal(mrc_program_load(copy, len, &q),
                         MRC_ERR_INVALID_PROGRAM);
        assert_null(q);
    }
    assert_non_null(strstr(mrc_last_error(), "checksum"));
    /* Corruptions behind a valid checksum: validation and the checker
     * refuse every one, and nothing crashes (this runs under ASan). */
    int refused = 0;
    for (size_t i = 32; i < len; i++)
        for (int bit = 0; bit < 8; bit += 3) {
            memcpy(copy, img, len);
            copy[i] ^= (uint8_t)(1 << bit);
            reseal(copy, len);
            if (mrc_program_load(copy, len, &q) != MRC_OK)
                refused++;
            else
                mrc_program_destroy(q); /* a harmless bit (a spare one) */
            q = NULL;
        }
    assert_true(refused > 0);
    memcpy(copy, img, len);
    copy[8] = 9; /* version */
    assert_int_equal(mrc_program_load(copy, len, &q), MRC_ERR_INVALID_PROGRAM);
    assert_non_null(strstr(mrc_last_error(), "version 9"));
    assert_int_equal(mrc_program_load("not an image at all, no magic", 30, &q),
                     MRC_ERR_INVALID_PROGRAM);
    assert_non_null(strstr(mrc_last_error(), "not an mrc program image"));
    free(copy);
    mrc_free(img);
    mrc_program_destroy(p);
}

/* Breaks a compiled program in memory and expects the checker to name
 * the fault. */
static void expect_broken(mrc_program_t *p, const char *says)
{
    mrc_status_t st = mrc_program_check(p);
    if (st != MRC_ERR_INVALID_PROGRAM || !strstr(mrc_last_error(), says))
        fail_msg("status %d, '%s' (wanted '%s')", st, mrc_last_error(), says);
    assert_non_null(strstr(mrc_last_error(), "node "));
}

static int find_op(const mrc_program_t *p, int op, int nth)
{
    for (int i = 0; i < p->code_len; i++)
        if (p->code[i].op == op && nth-- == 0)
            return i;
    return -1;
}

/* A node's port count is read from the image and sizes the tables that
 * the listing and the executor build: one past the most a topology node
 * may have is refused (a 640-byte image claiming 2^30 ports made the
 * listing take a gigabyte and half a minute; found by fuzz_program). */
static void test_image_port_count_bounded(void **state)
{
    (void)state;
    mrc_program_t *p = compile("ring:2", "ring", MRC_ALLREDUCE, 3, 0);
    void *img = NULL;
    size_t len = 0;
    assert_int_equal(mrc_program_save(p, &img, &len), MRC_OK);
    /* Node 0's {group, rank, num_ports, first_entry}, after the header
     * (32), config (42), counts (32), code, groups, members, streams,
     * ring tables. */
    size_t at = 106 + 24 * (size_t)p->code_len + 16 * (size_t)p->num_groups +
                4 * (size_t)p->num_members + 36 * (size_t)p->num_streams +
                4 * (size_t)p->num_entries + 8;
    uint8_t *b = img;
    assert_true(at + 4 <= len);
    assert_int_equal(b[at] | b[at + 1] << 8 | b[at + 2] << 16,
                     p->nodes[0].num_ports);
    const int32_t ports[] = {MRC_TOPO_MAX_PORTS, MRC_TOPO_MAX_PORTS + 1,
                             (1 << 30) + 2};
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 4; i++)
            b[at + (size_t)i] = (uint8_t)((uint32_t)ports[k] >> (8 * i));
        reseal(b, len);
        mrc_program_t *q = NULL;
        mrc_status_t st = mrc_program_load(b, len, &q);
        if (k == 0) {
            if (st != MRC_OK)
                fail_msg("%s", mrc_last_error());
        } else {
            assert_int_equal(st, MRC_ERR_INVALID_PROGRAM);
            assert_null(q);
            assert_non_null(strstr(mrc_last_error(), "ports"));
        }
        mrc_program_destroy(q);
    }
    mrc_free(img);
    mrc_program_destroy(p);
}

static void test_checker_refuses_broken(void **state)
{
    (void)state;
    /* A receive into another fragment than the one sent. */
    mrc_program_t *p = compile("ring:5", "ring", MRC_ALLREDUCE, 1000, 0);
    p->code[find_op(p, MRC__OP_RECV, 0)].frag_const = 0;
    expect_broken(p, "receives fragment");
    mrc_program_destroy(p);

    /* A send that reads the send buffer at every step: a partial sum is
     * lost and a node's input counted twice. */
    p = compile("ring:5", "ring", MRC_ALLREDUCE, 1000, 0);
    int s = find_op(p, MRC__OP_SEND, 0);
    p->code[s].buf_b = MRC__BUF_SEND;
    expect_broken(p, "contributions");
    mrc_program_destroy(p);

    /* A copy where the allgather needed a reduction... */
    p = compile("ring:5", "ring", MRC_ALLREDUCE, 1000, 0);
    p->code[find_op(p, MRC__OP_RECV, 0)].local = MRC__BUF_NONE;
    expect_broken(p, "contributions");
    mrc_program_destroy(p);

    /* A node that sends to the wrong neighbour: its table disagrees with
     * the ring order (checked at every size, before the code). */
    p = compile("ring:5", "ring", MRC_ALLREDUCE, 1000, 0);
    mrc__node_stream_t *ns = (mrc__node_stream_t *)mrc__node_stream(p, 2, 0);
    ns->next = 0;
    expect_broken(p, "disagrees with the ring order");
    mrc_program_destroy(p);

    /* Two nodes with one rank: one block written twice, one never. */
    p = compile("ring:5", "ring", MRC_ALLGATHER, 1000, 0);
    p->nodes[3].rank = p->nodes[4].rank;
    expect_broken(p, "rank");
    mrc_program_destroy(p);

    /* A missing send: deadlock, named by node and step. */
    p = compile("ring:5", "ring", MRC_ALLREDUCE, 1000, 0);
    s = find_op(p, MRC__OP_SEND, 1); /* the allgather's send */
    p->code[s].pred = MRC__PRED_REL_EQ;
    p->code[s].pred_lo = 3;
    expect_broken(p, "deadlock: node");
    mrc_program_destroy(p);

    /* Sizes that disagree: a fragment from another stream's slice. */
    p = compile("ring:5", "ring", MRC_ALLREDUCE, 1003, 0);
    p->streams[1].slice_len -= 1;
    expect_broken(p, "elements");
    mrc_program_destroy(p);

    /* A reduce whose chain skips a node. */
    p = compile("ring:6", "ring", MRC_REDUCE, 100, 2);
    int r = find_op(p, MRC__OP_RECV, 0);
    p->code[r].pred_lo = 3;
    expect_broken(p, "node");
    mrc_program_destroy(p);

    /* Large groups get the same proof: the tables against the ring
     * order, the code over the index. */
    p = compile("ring:5000", "ring", MRC_ALLREDUCE, 5000, 0);
    assert_int_equal(mrc_program_check(p), MRC_OK);
    ns = (mrc__node_stream_t *)mrc__node_stream(p, 2, 0);
    ns->next = 0;
    expect_broken(p, "disagrees with the ring order");
    mrc_program_destroy(p);
    p = compile("ring:5000", "ring", MRC_ALLREDUCE, 5000, 0);
    p->code[find_op(p, MRC__OP_RECV, 0)].frag_const = 0;
    expect_broken(p, "receives fragment");
    mrc_program_destroy(p);
    /* A code outside the symbolic proof, too large to run every message
     * of: refused with why, never passed unproven. */
    p = compile("ring:5000", "ring", MRC_ALLREDUCE, 5000, 0);
    s = find_op(p, MRC__OP_SEND, 1);
    p->code[s].pred = MRC__PRED_REL_EQ;
    expect_broken(p, "cannot be proven");
    mrc_program_destroy(p);
}

static mrc_program_t *compile_rs(const char *spec, const char *strategy,
                                 int replica_size, mrc_collective_t c,
                                 size_t count)
{
    mrc_topo_t *t = NULL;
    mrc_embedding_t *e = NULL;
    mrc_program_t *p = NULL;
    mrc_embed_config_t ec = {.strategy = strategy,
                             .replica_size = replica_size};
    if (mrc_topo_create(spec, &t) != MRC_OK ||
        mrc_embed_create(t, &ec, &e) != MRC_OK)
        fail_msg("%s: %s", spec, mrc_last_error());
    mrc_compile_config_t cc = {
        .collective = c, .count = count, .dtype = MRC_FLOAT32, .op = MRC_SUM};
    if (mrc_program_compile(e, &cc, &p) != MRC_OK)
        fail_msg("%s %s: %s", spec, mrc_collective_name(c), mrc_last_error());
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
    return p;
}

/* Routed hops: the relays are indexed from the routes, each relay's plan
 * forwards every message of its hop (FWD from the route's node before it
 * to the one after, same tag), the bound covers them, the checker proves
 * the relayed programs and catches a relay that never forwards. */
static void test_relays(void **state)
{
    (void)state;
    const struct {
        const char *spec, *strategy;
        int rs, relays, node, from, to;
    } cases[] = {
        /* column rings 0 2 6 4: hops 2 -> 6 and 4 -> 0 pass 4 and 2. */
        {"ladder:8", "ring-on-line", 2, 8, 4, 2, 6},
        /* rung rings 0 4 8 12: every hop passes a node of another group,
         * the way back five of them; both ways round. */
        {"ladder:16", "rung-ring-4", 0, 64, 2, 0, 4},
    };
    for (size_t ci = 0; ci < 2; ci++)
        for (int c = 0; c < MRC_NUM_COLLECTIVES; c++) {
            mrc_program_t *p =
                compile_rs(cases[ci].spec, cases[ci].strategy, cases[ci].rs,
                           (mrc_collective_t)c, 1001);
            int32_t *first = NULL;
            mrc__relay_t *list = NULL;
            assert_int_equal(mrc__relay_index(p, &first, &list), MRC_OK);
            assert_int_equal(first[p->num_nodes], cases[ci].relays);
            free(first);
            free(list);

            int u = cases[ci].node;
            mrc__plan_t plan;
            assert_int_equal(mrc__plan_build(p, u, 100, 0, &plan), MRC_OK);
            int fwds = 0, seen = 0;
            for (int i = 0; i < plan.num_ops; i++) {
                const mrc__op_t *op = &plan.ops[i];
                if (op->kind != MRC__FWD)
                    continue;
                fwds++;
                assert_true(op->count > 0 && op->count <= 100);
                seen |= op->from == cases[ci].from && op->peer == cases[ci].to;
            }
            assert_true(fwds > 0);
            /* (A chain from the root does not use the hop into it.) */
            assert_true(seen || c == MRC_REDUCE || c == MRC_BROADCAST);
            uint64_t chains, ops, rchains, rops;
            mrc__plan_bound(p, p->nodes[u].group, 100, &chains, &ops);
            mrc__relay_bound(p, u, 100, &rchains, &rops);
            assert_true((uint64_t)plan.num_chains <= chains + rchains);
            assert_true((uint64_t)plan.num_ops <= ops + rops);
            mrc__plan_free(&plan);

            assert_int_equal(mrc_program_check(p), MRC_OK);
            assert_int_equal(mrc__program_check_drop_relays(p, u),
                             MRC_ERR_INVALID_PROGRAM);
            char want[64];
            snprintf(want, sizeof want, "to node %d is never received", u);
            if (!strstr(mrc_last_error(), want))
                fail_msg("%s: '%s' does not say '%s'", cases[ci].strategy,
                         mrc_last_error(), want);
            mrc_program_destroy(p);
        }
}

/* The port mask: one phase for a ring program (its loops use the same
 * ports at every step), one per step for a chain; relays' ports are in
 * use; the listing shows it; the image carries it, and refuses one that
 * would switch off a port the program's messages need. */
static void test_port_mask(void **state)
{
    (void)state;
    mrc_program_t *p =
        compile_rs("ladder:8", "ring-on-line", 2, MRC_ALLREDUCE, 1000);
    assert_int_equal(mrc__port_mask_ready(p), MRC_OK);
    assert_int_equal(p->num_port_phases, 1);
    assert_int_equal(p->port_phases[0].first_step, 0);
    assert_int_equal(p->port_phases[0].num_steps, 6); /* 2 (N - 1) */
    uint8_t idle[8];
    /* Node 2 relays 4 -> 0 and 0 -> 4 (ports 0 and 2), sends to 6
     * through 4: only its rung (port 1) is idle. */
    mrc__port_idle(p, 0, 2, idle);
    assert_int_equal(idle[0], 0);
    assert_int_equal(idle[1], 1);
    assert_int_equal(idle[2], 0);
    char *text = NULL;
    assert_int_equal(mrc_program_listing(p, &text), MRC_OK);
    assert_non_null(strstr(text, "phase 0 (steps 0-5): node 2 idle ports "
                                 "{1}"));
    mrc_free(text);
    void *img = NULL;
    size_t len = 0;
    assert_int_equal(mrc_program_save(p, &img, &len), MRC_OK);
    /* The last use is (node 7, port 0), before the origin (none: three
     * empty texts and an efficiency, 20 bytes): say port 1 instead. */
    uint8_t *d = img;
    assert_int_equal(d[len - 20 - 4], 0);
    d[len - 20 - 4] = 1;
    reseal(d, len);
    mrc_program_t *q = NULL;
    assert_int_equal(mrc_program_load(d, len, &q), MRC_ERR_INVALID_PROGRAM);
    assert_non_null(strstr(mrc_last_error(), "port mask"));
    mrc_free(img);
    mrc_program_destroy(p);

    p = compile("prism:3,3", "prism-faces", MRC_REDUCE, 1000, 0);
    assert_int_equal(mrc__port_mask_ready(p), MRC_OK);
    assert_true(p->num_port_phases > 1);
    for (int ph = 0; ph < p->num_port_phases; ph++)
        assert_int_equal(p->port_phases[ph].num_steps, 1);
    mrc_program_destroy(p);
}

/* Version 4 carries the origin: the topology comes back and is checked
 * against the program; an image without one (mrc_program_save, or a
 * version 3 image) loads but has no topology to run on; older versions
 * are refused with what to do. */
static void test_image_origin(void **state)
{
    (void)state;
    mrc_program_t *p = compile("ring:8", "auto", MRC_ALLREDUCE, 1000, 0);
    mrc_topo_t *t = NULL, *back = NULL;
    assert_int_equal(mrc_topo_create("ring:8", &t), MRC_OK);
    char *json = NULL;
    assert_int_equal(mrc_topo_to_json(t, &json), MRC_OK);
    mrc__image_origin_t o = {json, "auto", "ring:8", 1.0}, got;
    void *img = NULL;
    size_t len = 0;
    assert_int_equal(mrc__program_save_origin(p, &o, &img, &len), MRC_OK);
    mrc_program_t *q = NULL;
    assert_int_equal(mrc__program_load_origin(img, len, &q, &got), MRC_OK);
    assert_string_equal(got.topology, json);
    assert_string_equal(got.strategy, "auto");
    assert_string_equal(got.source, "ring:8");
    assert_true(got.efficiency == 1.0);
    assert_int_equal(mrc__image_topology(q, &got, &back), MRC_OK);
    assert_int_equal(mrc_topo_num_nodes(back), 8);
    mrc_topo_destroy(back);
    mrc__image_origin_free(&got);
    mrc_program_destroy(q);
    mrc_free(img);

    /* Another topology of as many nodes but other ports: refused. */
    mrc_topo_t *other = NULL;
    char *other_json = NULL;
    assert_int_equal(mrc_topo_create("full:8", &other), MRC_OK);
    assert_int_equal(mrc_topo_to_json(other, &other_json), MRC_OK);
    o.topology = other_json;
    assert_int_equal(mrc__program_save_origin(p, &o, &img, &len), MRC_OK);
    assert_int_equal(mrc__program_load_origin(img, len, &q, &got), MRC_OK);
    assert_int_equal(mrc__image_topology(q, &got, &back),
                     MRC_ERR_INVALID_PROGRAM);
    assert_non_null(strstr(mrc_last_error(), "not its program's"));
    assert_null(back);
    mrc__image_origin_free(&got);
    mrc_program_destroy(q);
    mrc_free(img);
    mrc_free(other_json);
    mrc_topo_destroy(other);

    /* No origin: loads, and says there is no topology. */
    assert_int_equal(mrc_program_save(p, &img, &len), MRC_OK);
    assert_int_equal(mrc__program_load_origin(img, len, &q, &got), MRC_OK);
    assert_null(got.topology);
    assert_int_equal(mrc__image_topology(q, &got, &back),
                     MRC_ERR_INVALID_PROGRAM);
    assert_non_null(strstr(mrc_last_error(), "no topology"));
    mrc_program_destroy(q);
    /* The same as version 4 (no completion byte, after the config's 40
     * bytes from the header's 32): still read, as group completion. */
    uint8_t *d = img;
    memmove(d + 72, d + 73, len - 73);
    size_t len4 = len - 1;
    restamp(d, 4, len4);
    assert_int_equal(mrc__program_load_origin(d, len4, &q, &got), MRC_OK);
    assert_int_equal(q->cfg.completion, MRC_COMPLETION_GROUP);
    assert_int_equal(q->code_len, p->code_len);
    mrc_program_destroy(q);
    /* The same as version 3 (no origin bytes either): still read. */
    size_t len3 = len4 - 20;
    restamp(d, 3, len3);
    assert_int_equal(mrc__program_load_origin(d, len3, &q, &got), MRC_OK);
    assert_null(got.topology);
    mrc_program_destroy(q);
    /* Version 2: refused, saying to recompile. */
    d[8] = 2;
    assert_int_equal(mrc_program_load(d, len3, &q), MRC_ERR_INVALID_PROGRAM);
    assert_non_null(strstr(mrc_last_error(), "version 2"));
    assert_non_null(strstr(mrc_last_error(), "recompile"));
    mrc_free(img);
    mrc_free(json);
    mrc_topo_destroy(t);
    mrc_program_destroy(p);
}

/* A node's local program: its own peers, ports and fragments, no table
 * placeholders, and nodes differ where their tables do. */
static void test_node_listing(void **state)
{
    (void)state;
    mrc_program_t *p = compile("ring:8", "auto", MRC_ALLREDUCE, 1000, 0);
    char *n3 = NULL, *n0 = NULL, *js = NULL;
    assert_int_equal(mrc__program_node_listing(p, 3, 0, &n3), MRC_OK);
    assert_int_equal(mrc__program_node_listing(p, 0, 0, &n0), MRC_OK);
    assert_non_null(strstr(n3, "local program of node 3"));
    assert_non_null(strstr(n3, "to node 4 by port"));
    assert_non_null(strstr(n3, "from node 2 on port"));
    assert_non_null(strstr(n3, "frag (3 - s) mod 8"));
    assert_null(strstr(n3, "next[pos]"));
    assert_null(strstr(n3, "out_port[node]"));
    assert_null(strstr(n3, "prev[pos]"));
    assert_null(strstr(n3, "in_port[node]"));
    assert_non_null(strstr(n0, "to node 1 by port"));
    assert_null(strstr(n0, "frag (3 - s) mod 8"));
    assert_string_not_equal(n0, n3);
    assert_int_equal(mrc__program_node_listing(p, 3, 1, &js), MRC_OK);
    assert_non_null(strstr(js, "\"node\": 3"));
    assert_non_null(strstr(js, "\"next\": 4"));
    mrc_free(js);
    assert_int_equal(mrc__program_node_listing(p, 8, 0, &js),
                     MRC_ERR_INVALID_ARG);
    assert_null(js);
    mrc_free(n0);
    mrc_free(n3);
    mrc_program_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_bound),
        cmocka_unit_test(test_code_length_constant),
        cmocka_unit_test(test_listing),
        cmocka_unit_test(test_image_round_trip),
        cmocka_unit_test(test_refused_images),
        cmocka_unit_test(test_image_port_count_bounded),
        cmocka_unit_test(test_checker_refuses_broken),
        cmocka_unit_test(test_relays),
        cmocka_unit_test(test_port_mask),
        cmocka_unit_test(test_image_origin),
        cmocka_unit_test(test_node_listing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
