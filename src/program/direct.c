/*
 * The families compiled over the group in rank order: the direct
 * families here, and the tree (tree.c, whose code this builder takes).
 *
 * The direct families: every node reads its peers' memory instead of
 * passing fragments round a ring (the shared-memory algorithms of the
 * field, as programs). One stream per group, in rank order (pos = rank),
 * one chain per node, and the memory-semantic instructions: a node
 * exposes a buffer (by copy into its window, or by reference), signals a
 * flag, and its peers wait for the flag, then get what they need.
 *
 *   direct1  one step. allreduce: every node gets every input, in rank
 *            order, so every node forms the same bits; reduce: the root
 *            does; reduce-scatter: every node gets its block of every
 *            input; allgather: every node gets every block; broadcast:
 *            every node gets the root's vector.
 *   direct2  two steps: a reduce-scatter (each node reduces its block,
 *            its own input first, then round the ranks from pos + 1),
 *            then the blocks go to who needs them (allreduce: everyone;
 *            reduce: the root); broadcast: a scatter from the root, then
 *            an allgather.
 *
 * Accepts: any group (1 node included), any count, every dtype and op.
 * Exposure by copy (the window) while the window fits in
 * mrc__stage_max(N) bytes (allreduce and reduce: mrc__stage_reduce_max),
 * else by reference, which adds a final sync so that no node leaves
 * while a peer reads its buffers (direct1's allgather and reduce-scatter
 * on 2 nodes from a smaller window: copy_limit).
 * direct1's allreduce and reduce are by copy only (they are for small
 * messages); its broadcast too but on 2 nodes. direct2 does not apply to
 * reduce-scatter and allgather, whose one step is direct1.
 * Every node waits on a flag of every peer, or on one that has (direct2's
 * broadcast: the others on the root, whose scatter waited on all): the
 * transports compare the calls at a wait, so ranks that disagree fail on
 * every rank in the same call, as they do on the rings. direct1's reduce
 * and broadcast end there: no round back from the root (its window, by
 * copy, is written again only two calls on, once every member has ended
 * this one: the transport's gate), so a small broadcast costs one flag,
 * not three. With local completion (MPI's rule: a rank returns once its
 * own part is done) a node that only sends waits on nobody: the leaves
 * of a reduce expose and signal, the root of a broadcast too, and only
 * a node that gets waits, on the one it gets from (the wait compares
 * their calls, so no node reads another call's data).
 * Limits: every node reads N - 1 peers (N² gets in all), so these are for
 * hosts, not for machines of thousands of nodes (the selector knows).
 *
 * direct1's allreduce, N = 3 (x_r: rank r's input, W_r: its window):
 * every rank copies x_r to W_r and signals; then for s = 0 .. N-1 it
 * waits for rank s's flag and adds W_s, so every rank sums in rank order
 * and ends with the same bits:
 *
 *   rank  expose     s = 0      s = 1           s = 2
 *   0     W_0 = x_0  r = x_0    r = x_0 + x_1   r = x_0 + x_1 + x_2
 *   1     W_1 = x_1  r = x_0    r = x_0 + x_1   r = x_0 + x_1 + x_2
 *   2     W_2 = x_2  r = x_0    r = x_0 + x_1   r = x_0 + x_1 + x_2
 *
 * direct2's allreduce, N = 3, x_r[b] block b of rank r's input: rank b
 * reduces block b, its own first, then round the ranks from b + 1 (step
 * 1), exposes it, and gets the other blocks from their ranks (step 2):
 *
 *   rank  step 1: r[b] =                    step 2: gets
 *   0     x_0[0] + x_1[0] + x_2[0]          r[1] from 1, r[2] from 2
 *   1     x_1[1] + x_2[1] + x_0[1]          r[2] from 2, r[0] from 0
 *   2     x_2[2] + x_0[2] + x_1[2]          r[0] from 0, r[1] from 1
 */
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"
#include "template.h"
#include "ring_math.h"

/* ---- direct1 ------------------------------------------------------------ */

/* Every input into the window; rank s's added in rank order. */
static const mrc__insn_t d1_allreduce[] = {
    {.op = EXPOSE, .buf_a = SB, .buf_b = WB, .flags = W},
    {.op = SIGNAL},
    {.op = LOOP, .loop_extra = 1},
    {.op = WAIT, RANK_S},
    {.op = GET, .buf_a = WB, .buf_b = RB, .flags = W | ACC, RANK_S},
    {.op = END},
    {.op = SCALE, .buf_b = RB, .flags = W},
};

/* Every node waits for every flag (each wait compares the calls, so
 * ranks that disagree fail on every rank in the same call); only the
 * root gets. A node returns once all have come: its window, by copy, is
 * read until the root ends the call, and is written again two calls on,
 * once every member has ended this one (the transport's gate). */
static const mrc__insn_t d1_reduce[] = {
    {.op = EXPOSE, .buf_a = SB, .buf_b = WB, .flags = W},
    {.op = SIGNAL},
    {.op = LOOP, .loop_extra = 1},
    {.op = WAIT, RANK_S},
    {.op = GET, .pred = EQ, .buf_a = WB, .buf_b = RB, .flags = W | ACC, RANK_S},
    {.op = END},
    {.op = SCALE, .pred = EQ, .buf_b = RB, .flags = W},
};

/* Fragment f is the block of the node at pos f. */
static const mrc__insn_t d1_reduce_scatter[] = {
    {.op = EXPOSE, .buf_a = SB, .buf_b = WB, .flags = ALL},
    {.op = SIGNAL},
    {.op = LOOP},
    {.op = WAIT, NEXT_S},
    {.op = GET,
     .frag_pos = 1,
     .buf_a = WB,
     .buf_b = RB,
     .local = SB,
     .flags = ACC,
     NEXT_S},
    {.op = END},
    {.op = COPY, .pred = ALONE, .frag_pos = 1, .buf_a = SB, .buf_b = RB},
    {.op = SCALE, .frag_pos = 1, .buf_b = RB},
};

static const mrc__insn_t d1_reduce_scatter_ref[] = {
    {.op = EXPOSE, .buf_a = SB, .flags = REF | ALL},
    {.op = SIGNAL},
    {.op = LOOP},
    {.op = WAIT, NEXT_S},
    {.op = GET,
     .frag_pos = 1,
     .buf_a = SB,
     .buf_b = RB,
     .local = SB,
     .flags = ACC,
     NEXT_S},
    {.op = END},
    {.op = COPY, .pred = ALONE, .frag_pos = 1, .buf_a = SB, .buf_b = RB},
    {.op = SCALE, .frag_pos = 1, .buf_b = RB},
    {.op = BARRIER, .flag = 1},
};

static const mrc__insn_t d1_allgather[] = {
    {.op = EXPOSE, .frag_pos = 1, .buf_a = SB, .buf_b = WB},
    {.op = SIGNAL},
    {.op = COPY, .frag_pos = 1, .buf_a = SB, .buf_b = RB},
    {.op = LOOP},
    {.op = WAIT, NEXT_S},
    {.op = GET,
     .frag_pos = 1,
     .frag_step = 1,
     .frag_const = 1,
     .buf_a = WB,
     .buf_b = RB,
     NEXT_S},
    {.op = END},
};

static const mrc__insn_t d1_allgather_ref[] = {
    {.op = EXPOSE, .buf_a = SB, .flags = REF | ALL},
    {.op = SIGNAL},
    {.op = COPY, .frag_pos = 1, .buf_a = SB, .buf_b = RB},
    {.op = LOOP},
    {.op = WAIT, NEXT_S},
    {.op = GET,
     .frag_pos = 1,
     .frag_step = 1,
     .frag_const = 1,
     .buf_a = SB,
     .buf_b = RB,
     NEXT_S},
    {.op = END},
    {.op = BARRIER, .flag = 1},
};

/* Every node signals (the root once its vector is in the window) and
 * waits for every other's flag, as in reduce; the others then get the
 * root's vector. In every broadcast the root signals before it copies
 * its input to its own output, which no peer reads, so that its readers
 * and its copy run at once (direct1's 4 MiB at 2 shm ranks, by
 * reference: 677-692 us a call with the copy first, 420-430 after). */
static const mrc__insn_t d1_broadcast[] = {
    {.op = EXPOSE, .pred = EQ, .buf_a = SB, .buf_b = WB, .flags = W},
    {.op = SIGNAL},
    {.op = COPY, .pred = EQ, .buf_a = SB, .buf_b = RB, .flags = W},
    {.op = LOOP},
    {.op = WAIT, NEXT_S},
    {.op = END},
    {.op = GET, NOT_ROOT, .buf_a = WB, .buf_b = RB, .flags = W, ROOT},
};

/* Local completion: the leaves expose, signal and return; the root
 * starts from its own input (no one reads its window, so it neither
 * exposes nor signals: a cold 4-byte reduce's root spent 1722
 * instructions a call with them) and adds each leaf's window once its
 * flag has come, in the same order as d1_reduce (from the root on). */
static const mrc__insn_t d1_reduce_local[] = {
    {.op = EXPOSE, NOT_ROOT, .buf_a = SB, .buf_b = WB, .flags = W},
    {.op = SIGNAL, NOT_ROOT},
    {.op = COPY, .pred = EQ, .buf_a = SB, .buf_b = RB, .flags = W},
    {.op = LOOP},
    {.op = WAIT, .pred = EQ, NEXT_S},
    {.op = GET,
     .pred = EQ,
     .buf_a = WB,
     .buf_b = RB,
     .local = RB,
     .flags = W | ACC,
     NEXT_S},
    {.op = END},
    {.op = SCALE, .pred = EQ, .buf_b = RB, .flags = W},
};

/* Local completion: the root exposes, signals and returns; each other
 * node waits for the root's flag and gets its vector. */
static const mrc__insn_t d1_broadcast_local[] = {
    {.op = EXPOSE, .pred = EQ, .buf_a = SB, .buf_b = WB, .flags = W},
    {.op = SIGNAL, .pred = EQ},
    {.op = COPY, .pred = EQ, .buf_a = SB, .buf_b = RB, .flags = W},
    {.op = WAIT, NOT_ROOT, ROOT},
    {.op = GET, NOT_ROOT, .buf_a = WB, .buf_b = RB, .flags = W, ROOT},
};

/* By reference (on 2 nodes from copy_limit's size): the root exposes
 * its vector where it is, the others read it, and every node waits at
 * the end for all (the root's buffer is read until its readers are
 * done; so with local completion too). */
static const mrc__insn_t d1_broadcast_ref[] = {
    {.op = EXPOSE, .pred = EQ, .buf_a = SB, .flags = REF | ALL},
    {.op = SIGNAL, .pred = EQ},
    {.op = COPY, .pred = EQ, .buf_a = SB, .buf_b = RB, .flags = W},
    {.op = WAIT, NOT_ROOT, ROOT},
    {.op = GET, NOT_ROOT, .buf_a = SB, .buf_b = RB, .flags = W, ROOT},
    {.op = BARRIER, .flag = 1},
};

/* ---- direct2 ------------------------------------------------------------ */

/* Split fragments: f is block f, reduced by the node at pos f. */
static const mrc__insn_t d2_allreduce[] = {
    /* Every block but its own, which it reduces from its sendbuf: 1/N
     * less copying than all of it. */
    {.op = EXPOSE, .frag_pos = 1, .buf_a = SB, .buf_b = WB, .flags = OTHERS},
    {.op = SIGNAL},
    {.op = LOOP},
    {.op = WAIT, NEXT_S},
    {.op = GET,
     .frag_pos = 1,
     .buf_a = WB,
     .buf_b = RB,
     .local = SB,
     .flags = ACC,
     NEXT_S},
    {.op = END},
    {.op = COPY, .pred = ALONE, .frag_pos = 1, .buf_a = SB, .buf_b = RB},
    {.op = SCALE, .frag_pos = 1, .buf_b = RB},
    {.op = EXPOSE, .frag_pos = 1, .buf_a = RB, .buf_b = WB},
    {.op = SIGNAL, .flag = 1},
    {.op = LOOP},
    {.op = WAIT, NEXT_S, .flag = 1},
    {.op = GET,
     .frag_pos = 1,
     .frag_step = 1,
     .frag_const = 1,
     .buf_a = WB,
     .buf_b = RB,
     NEXT_S},
    {.op = END},
};

static const mrc__insn_t d2_allreduce_ref[] = {
    {.op = EXPOSE, .buf_a = SB, .flags = REF | ALL},
    {.op = EXPOSE, .buf_a = RB, .flags = REF | ALL},
    {.op = SIGNAL},
    {.op = LOOP},
    {.op = WAIT, NEXT_S},
    {.op = GET,
     .frag_pos = 1,
     .buf_a = SB,
     .buf_b = RB,
     .local = SB,
     .flags = ACC,
     NEXT_S},
    {.op = END},
    {.op = COPY, .pred = ALONE, .frag_pos = 1, .buf_a = SB, .buf_b = RB},
    {.op = SCALE, .frag_pos = 1, .buf_b = RB},
    {.op = SIGNAL, .flag = 1},
    {.op = LOOP},
    {.op = WAIT, NEXT_S, .flag = 1},
    {.op = GET,
     .frag_pos = 1,
     .frag_step = 1,
     .frag_const = 1,
     .buf_a = RB,
     .buf_b = RB,
     NEXT_S},
    {.op = END},
    {.op = BARRIER, .flag = 2},
};

/* Blocks reduced into scratch, then gathered by the root. */
static const mrc__insn_t d2_reduce[] = {
    /* Every block but its own, which it reduces from its sendbuf: 1/N
     * less copying than all of it. */
    {.op = EXPOSE, .frag_pos = 1, .buf_a = SB, .buf_b = WB, .flags = OTHERS},
    {.op = SIGNAL},
    {.op = LOOP},
    {.op = WAIT, NEXT_S},
    {.op = GET,
     .frag_pos = 1,
     .buf_a = WB,
     .buf_b = XB,
     .local = SB,
     .flags = ACC,
     NEXT_S},
    {.op = END},
    {.op = COPY, .pred = ALONE, .frag_pos = 1, .buf_a = SB, .buf_b = XB},
    {.op = SCALE, .frag_pos = 1, .buf_b = XB},
    {.op = EXPOSE, .frag_pos = 1, .buf_a = XB, .buf_b = WB},
    {.op = SIGNAL, .flag = 1},
    {.op = COPY, .pred = EQ, .frag_pos = 1, .buf_a = XB, .buf_b = RB},
    {.op = LOOP},
    {.op = WAIT, .pred = EQ, NEXT_S, .flag = 1},
    {.op = GET,
     .pred = EQ,
     .frag_pos = 1,
     .frag_step = 1,
     .frag_const = 1,
     .buf_a = WB,
     .buf_b = RB,
     NEXT_S},
    {.op = END},
};

static const mrc__insn_t d2_reduce_ref[] = {
    {.op = EXPOSE, .buf_a = SB, .flags = REF | ALL},
    {.op = EXPOSE, .buf_a = XB, .flags = REF | ALL},
    {.op = SIGNAL},
    {.op = LOOP},
    {.op = WAIT, NEXT_S},
    {.op = GET,
     .frag_pos = 1,
     .buf_a = SB,
     .buf_b = XB,
     .local = SB,
     .flags = ACC,
     NEXT_S},
    {.op = END},
    {.op = COPY, .pred = ALONE, .frag_pos = 1, .buf_a = SB, .buf_b = XB},
    {.op = SCALE, .frag_pos = 1, .buf_b = XB},
    {.op = SIGNAL, .flag = 1},
    {.op = COPY, .pred = EQ, .frag_pos = 1, .buf_a = XB, .buf_b = RB},
    {.op = LOOP},
    {.op = WAIT, .pred = EQ, NEXT_S, .flag = 1},
    {.op = GET,
     .pred = EQ,
     .frag_pos = 1,
     .frag_step = 1,
     .frag_const = 1,
     .buf_a = XB,
     .buf_b = RB,
     NEXT_S},
    {.op = END},
    {.op = SIGNAL, .pred = EQ, .flag = 2},
    {.op = WAIT, NOT_ROOT, ROOT, .flag = 2},
};

/* A scatter from the root, then an allgather. */
static const mrc__insn_t d2_broadcast[] = {
    {.op = EXPOSE, .pred = EQ, .buf_a = SB, .buf_b = WB, .flags = ALL},
    {.op = SIGNAL, .pred = EQ},
    {.op = COPY, .pred = EQ, .buf_a = SB, .buf_b = RB, .flags = W},
    {.op = WAIT, NOT_ROOT, ROOT},
    {.op = GET, NOT_ROOT, .frag_pos = 1, .buf_a = WB, .buf_b = RB, ROOT},
    {.op = EXPOSE, NOT_ROOT, .frag_pos = 1, .buf_a = RB, .buf_b = WB},
    {.op = SIGNAL, .flag = 1},
    {.op = LOOP},
    {.op = WAIT, NEXT_S, .flag = 1},
    {.op = GET,
     NOT_ROOT,
     .frag_pos = 1,
     .frag_step = 1,
     .frag_const = 1,
     .buf_a = WB,
     .buf_b = RB,
     NEXT_S},
    {.op = END},
};

static const mrc__insn_t d2_broadcast_ref[] = {
    {.op = EXPOSE, .pred = EQ, .buf_a = SB, .flags = REF | ALL},
    {.op = EXPOSE, .buf_a = RB, .flags = REF | ALL},
    {.op = SIGNAL, .pred = EQ},
    {.op = COPY, .pred = EQ, .buf_a = SB, .buf_b = RB, .flags = W},
    {.op = WAIT, NOT_ROOT, ROOT},
    {.op = GET, NOT_ROOT, .frag_pos = 1, .buf_a = SB, .buf_b = RB, ROOT},
    {.op = SIGNAL, .flag = 1},
    {.op = LOOP},
    {.op = WAIT, NOT_ROOT, NEXT_S, .flag = 1},
    {.op = GET,
     NOT_ROOT,
     .frag_pos = 1,
     .frag_step = 1,
     .frag_const = 1,
     .buf_a = RB,
     .buf_b = RB,
     NEXT_S},
    {.op = END},
    {.op = BARRIER, .flag = 2},
};

#define T(code, addr)                                                          \
    {                                                                          \
        code, (int)(sizeof code / sizeof code[0]), addr                        \
    }

typedef struct family_code {
    const mrc__insn_t *code;
    int len;
    uint8_t addressing;
} family_code_t;

/* [family - DIRECT1][collective][by reference]; a NULL code: does not
 * apply (or not that way). */
static const family_code_t codes[2][MRC_NUM_COLLECTIVES][2] = {
    {
        [MRC_ALLREDUCE] = {T(d1_allreduce, MRC__ADDR_WHOLE)},
        [MRC_REDUCE_SCATTER] = {T(d1_reduce_scatter, MRC__ADDR_BLOCK_POS),
                                T(d1_reduce_scatter_ref, MRC__ADDR_BLOCK_POS)},
        [MRC_ALLGATHER] = {T(d1_allgather, MRC__ADDR_BLOCK_POS),
                           T(d1_allgather_ref, MRC__ADDR_BLOCK_POS)},
        [MRC_REDUCE] = {T(d1_reduce, MRC__ADDR_WHOLE)},
        [MRC_BROADCAST] = {T(d1_broadcast, MRC__ADDR_WHOLE),
                           T(d1_broadcast_ref, MRC__ADDR_WHOLE)},
    },
    {
        [MRC_ALLREDUCE] = {T(d2_allreduce, MRC__ADDR_SPLIT),
                           T(d2_allreduce_ref, MRC__ADDR_SPLIT)},
        [MRC_REDUCE] = {T(d2_reduce, MRC__ADDR_SPLIT),
                        T(d2_reduce_ref, MRC__ADDR_SPLIT)},
        [MRC_BROADCAST] = {T(d2_broadcast, MRC__ADDR_SPLIT),
                           T(d2_broadcast_ref, MRC__ADDR_SPLIT)},
    },
};

/* direct1's reduce and broadcast with local completion (by copy; the
 * broadcast by reference is the same code either way: its root waits
 * for its reader). */
static const family_code_t local_codes[MRC_NUM_COLLECTIVES][2] = {
    [MRC_REDUCE] = {T(d1_reduce_local, MRC__ADDR_WHOLE)},
    [MRC_BROADCAST] = {T(d1_broadcast_local, MRC__ADDR_WHOLE),
                       T(d1_broadcast_ref, MRC__ADDR_WHOLE)},
};

#undef T

uint64_t mrc__window_elems(mrc_collective_t c, uint64_t count, int n)
{
    uint64_t blocks = c == MRC_REDUCE_SCATTER || c == MRC_ALLGATHER
                          ? (uint64_t)(n > 0 ? n : 1)
                          : 1;
    return mrc__sat_mul_add(blocks, count, 0);
}

/* The calls that take their form by reference on 2 nodes from a
 * smaller window than the stage (copy_limit): direct1's one reader. */
static int early_ref(mrc_algo_t a, mrc_collective_t c, int n)
{
    return n == 2 && a == MRC_ALGO_DIRECT1 &&
           (c == MRC_ALLGATHER || c == MRC_REDUCE_SCATTER ||
            c == MRC_BROADCAST);
}

/* The largest window direct1's allgather and reduce-scatter copy their
 * input through on 2 nodes; past it, by reference. There a peer's
 * input read once, through the kernel (shm) or straight (threads),
 * beats a copy into the window that the peer then reads (lines its
 * writer's core has just written). The drop-in library's suite, 2 ranks
 * on 2 cores, mrc / Open MPI by copy and by reference from this size,
 * the same buffers: allgather of 16-256 KiB a rank 1.08, 1.61, 1.07,
 * 1.10, 1.07 -> 0.76, 0.80, 0.91, 0.94, 0.95; reduce-scatter of 32-256
 * KiB 0.68-0.26 -> 0.35-0.24. Other buffers each call: allgather of
 * 64-128 KiB 1.07-1.25 -> 0.96-1.04, of 16-32 KiB 0.54-0.75 -> 0.92-
 * 0.98 (an 8 KiB block by reference, 0.53-0.58 -> 0.90-1.00: hence
 * 16 KiB). The form by reference lost for broadcast, reduce and
 * allreduce, as the selector then chose it over the tree and the rings
 * (broadcast of 64-256 KiB 0.96-0.98 -> 1.07-1.15, reduce of 512 KiB
 * 1.10 -> 1.40); and on 4 ranks, where the reference's closing sync (a
 * node waits for its readers) cost more than the copy: allgather of 64
 * KiB blocks, 4 ranks on 2 cores, 26 us by copy, 36-40 by reference (a
 * build that took the reference past 4-16 KiB on any group).
 * direct1's broadcast on 2 nodes too, past 64 KiB: read through the
 * kernel (a host's profile may say that this beats the root's copy into
 * its area and the leaf's of it: send_by_ref, mrc/profile.h), a
 * broadcast of 256 KiB-1 MiB at 2 ranks took 15-81 us where the form
 * by copy took 21-99, and with the root's copy into its area (then
 * without a profile) 16-99, beside Open MPI's 14-75 (a single run each, `mpirun
 * -n 2 -x LD_PRELOAD=libmrc_mpi.so -x MRC_ALGO=direct1 mpi-collectives
 * -c bcast -b 16K -e 16M` on builds whose form and copy were switched
 * by a temporary environment variable). From past
 * 64 KiB, not 128: the suite's 128 KiB went from 10.65 to 7.33 us (Open
 * MPI 7.68), 5 rounds. Not from 16 KiB: a broadcast by copy of up to
 * WIDE_WINDOW (64 KiB, shm) lives in a ring of its own, and its root,
 * with local completion, returns at once and runs calls ahead of its
 * peers, which the form by reference, whose root waits for its reader,
 * cannot.
 * The same for every node of the group, as the form must be. */
static uint64_t copy_limit(mrc_algo_t a, mrc_collective_t c, int n)
{
    if (c == MRC_ALLREDUCE || c == MRC_REDUCE)
        return mrc__stage_reduce_max(n);
    uint64_t stage = mrc__stage_max(n);
    uint64_t lim = (uint64_t)(c == MRC_BROADCAST ? 64 : 16) << 10;
    return early_ref(a, c, n) && lim < stage ? lim : stage;
}

/* The code of a family for a collective and a group of n nodes. */
static mrc_status_t pick(const mrc_compile_config_t *cfg, int n,
                         const family_code_t **out)
{
    if (cfg->algo == MRC_ALGO_HIER) {
        static _Thread_local family_code_t hier;
        mrc_status_t st =
            mrc__hier_code(cfg, n, &hier.code, &hier.len, &hier.addressing);
        *out = &hier;
        return st;
    }
    if (cfg->algo == MRC_ALGO_TREE) {
        static _Thread_local family_code_t tree;
        mrc_status_t st = mrc__tree_code(cfg, &tree.code, &tree.len);
        tree.addressing = MRC__ADDR_WHOLE;
        *out = &tree;
        return st;
    }
    int fam = cfg->algo == MRC_ALGO_DIRECT1 ? 0 : 1;
    const family_code_t *byc = codes[fam][cfg->collective];
    if (fam == 0 && cfg->completion == MRC_COMPLETION_LOCAL &&
        local_codes[cfg->collective][0].code)
        byc = local_codes[cfg->collective];
    uint64_t window =
        mrc__sat_mul_add(mrc__window_elems(cfg->collective, cfg->count, n),
                         mrc_dtype_size(cfg->dtype), 0);
    uint64_t limit = copy_limit(cfg->algo, cfg->collective, n);
    int ref = window > limit;
    if (!byc[0].code)
        return mrc__error(MRC_ERR_UNSUPPORTED, "%s does not apply to %s%s",
                          mrc_algo_name(cfg->algo),
                          mrc_collective_name(cfg->collective),
                          fam == 1 ? " (its one step is direct1)" : "");
    /* (direct1's broadcast by reference is for 2 nodes, one reader of
     * the root's buffer: on more, every leaf would read it through the
     * kernel at once, which nothing has measured) */
    int copy_only =
        !byc[1].code || (cfg->collective == MRC_BROADCAST && fam == 0 &&
                         !early_ref(cfg->algo, cfg->collective, n));
    if (ref && copy_only) {
        char a[32], b[32];
        return mrc__error(MRC_ERR_UNSUPPORTED,
                          "%s does not apply to %s of %s on %d nodes: it "
                          "copies its input through the window, which "
                          "holds at most %s (use direct2 or rings)",
                          mrc_algo_name(cfg->algo),
                          mrc_collective_name(cfg->collective),
                          mrc__format_bytes(window, a, sizeof a), n,
                          mrc__format_bytes(limit, b, sizeof b));
    }
    *out = &byc[ref];
    return MRC_OK;
}

mrc_status_t mrc__direct_applies(const mrc_compile_config_t *cfg, int n)
{
    const family_code_t *fc;
    return pick(cfg, n, &fc);
}

/* The tables: one stream per group over the whole vector, positions in
 * rank order; no routes (a get names its peer, not a link). */
static mrc_status_t build_tables(mrc_program_t *p, const mrc_embedding_t *e,
                                 int only)
{
    int eg = mrc_embed_num_groups(e);
    for (int g = 0, pg = 0; g < eg; g++) {
        if (only >= 0 && g != only)
            continue;
        const int *gnodes;
        int size = mrc_embed_group_nodes(e, g, &gnodes);
        mrc__group_t *gr = &p->groups[pg];
        int m = pg == 0
                    ? 0
                    : p->groups[pg - 1].first_member + p->groups[pg - 1].size;
        gr->size = size;
        gr->first_stream = pg;
        gr->num_streams = 1;
        gr->first_member = m;
        mrc__stream_t *st = &p->streams[pg];
        st->group = pg;
        st->slice_off = 0;
        st->slice_len = p->cfg.count;
        st->root_pos = p->cfg.root;
        p->ring_first[pg] = m;
        for (int i = 0; i < size; i++) {
            int u = gnodes[i];
            p->members[m + i] = u;
            p->ring_order[m + i] = u;
            p->nodes[u].group = pg;
            p->nodes[u].rank = i;
            p->nodes[u].first_entry = m + i;
            mrc__node_stream_t *ns = &p->node_streams[m + i];
            ns->pos = i;
            ns->next = gnodes[mrc__ring_next(i, size)];
            ns->prev = gnodes[mrc__ring_prev(i, size)];
            ns->out_port = ns->in_port = ns->route = -1;
        }
        pg++;
    }
    return MRC_OK;
}

mrc_status_t mrc__family_build(const mrc_embedding_t *e,
                               const mrc_compile_config_t *cfg, int only,
                               mrc_program_t **out)
{
    const mrc_topo_t *t = mrc_embed_topology(e);
    int eg = mrc_embed_num_groups(e), nn = mrc_topo_num_nodes(t);
    const family_code_t *fc = NULL;
    const mrc__insn_t *first = NULL;
    int members = 0, ng = 0;
    for (int g = 0; g < eg; g++) {
        if (only >= 0 && g != only)
            continue;
        int size = mrc_embed_group_nodes(e, g, NULL);
        const family_code_t *c = NULL;
        mrc_status_t st = pick(cfg, size, &c);
        if (st != MRC_OK)
            return st;
        /* (the tree's and hier's code is in one struct per thread: compare
         * the code, not the struct) */
        if (fc && c->code != first)
            return mrc__error(MRC_ERR_UNSUPPORTED,
                              "%s: the groups would need different code "
                              "(by copy and by reference); compile them "
                              "apart",
                              mrc_algo_name(cfg->algo));
        fc = c;
        first = c->code;
        members += size;
        ng++;
    }
    if (!fc)
        return mrc__error(MRC_ERR_INVALID_ARG, "no group to compile");
    mrc_program_t *p = calloc(1, sizeof *p);
    if (!p)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    p->cfg = *cfg;
    p->addressing = fc->addressing;
    p->code_len = fc->len;
    p->num_nodes = nn;
    p->num_groups = ng;
    p->num_streams = ng;
    p->num_members = members;
    p->num_entries = members;
    if (mrc__program_alloc(p, members, 0) != MRC_OK) {
        mrc_program_destroy(p);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory compiling");
    }
    memcpy(p->code, fc->code, (size_t)fc->len * sizeof *p->code);
    for (int u = 0; u < nn; u++) {
        p->nodes[u].group = -1;
        p->nodes[u].rank = -1;
        p->nodes[u].num_ports = mrc_topo_num_ports(t, u);
    }
    build_tables(p, e, only);
    *out = p;
    return MRC_OK;
}

int mrc__program_has_memory_ops(const mrc_program_t *p)
{
    for (int i = 0; i < p->code_len; i++)
        if (p->code[i].op >= MRC__OP_EXPOSE)
            return 1;
    return 0;
}

int mrc__program_uses_window(const mrc_program_t *p)
{
    for (int i = 0; i < p->code_len; i++)
        if (p->code[i].buf_a == MRC__BUF_WINDOW ||
            p->code[i].buf_b == MRC__BUF_WINDOW)
            return 1;
    return 0;
}

int mrc__program_exposes_by_ref(const mrc_program_t *p)
{
    for (int i = 0; i < p->code_len; i++)
        if (p->code[i].op == MRC__OP_EXPOSE &&
            (p->code[i].flags & MRC__INSN_REF))
            return 1;
    return 0;
}

int mrc__program_loops(const mrc_program_t *p)
{
    int loops = 0;
    for (int i = 0; i < p->code_len; i++)
        loops += p->code[i].op == MRC__OP_LOOP;
    return loops;
}
