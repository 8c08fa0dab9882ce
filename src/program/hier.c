/*
 * The hier family: a collective over ranks on several hosts, as one
 * program in three phases, each in its view of the group (enum
 * mrc__view): the ranks of a host meet through memory, their leaders
 * through messages.
 *
 *   allreduce  1. each host's ranks reduce into their leader, which gets
 *                 every peer's input in rank order (direct1's reduce);
 *              2. the leaders run the rings' allreduce over the hosts
 *                 (reduce-scatter, then allgather, in place in recvbuf);
 *              3. each leader's peers get the result from it (direct1's
 *                 broadcast). avg divides by N once, at the leader
 *                 that completes a fragment, as the rings do.
 *   reduce     1. as above, into the leaders' scratch; 2. a binomial
 *              tree of the leaders into the root, which is its host's
 *              leader (the leaders sit at the root's place in their host).
 *   broadcast  2. a binomial tree of the leaders from the root, then 3.
 *
 * Why these: between hosts a message costs far more than a read within
 * one, so each byte crosses a host's boundary as few times as the rings
 * allow (2 (H - 1) / H of the vector for allreduce, at each leader), and
 * the H - 1 hops of a ring or the log2 H of a tree replace the N - 1 of
 * a ring over every rank. A whole-vector chain between hosts would pay H
 * - 1 hops in turn for reduce and broadcast, so those take the tree.
 * Within a host the leader reads its peers directly, by copy through the
 * windows while a vector fits mrc__stage_reduce_max(L) bytes, else by
 * reference, as the direct families do.
 *
 * Accepts: a group of N nodes on H hosts in equal blocks of L = N / H
 * consecutive ranks (cfg->hosts = H; H = 1 or L = 1 included), any
 * count, every dtype and op. Does not apply to reduce-scatter and
 * allgather (each rank needs its own block: the rings do that).
 * Limits: one leader per host carries all of the host's traffic (one
 * link out per host, as a host with one network port has); hosts of
 * unequal sizes, or ranks not in blocks, are not accepted.
 *
 * allreduce, N = 6 on H = 2 hosts (L = 3), the leaders at place 0:
 *
 *            host 0: ranks 0 1 2            host 1: ranks 3 4 5
 *   1.       0 gets x_1, x_2 (0 + 1 + 2)    3 gets x_4, x_5 (3 + 4 + 5)
 *   2.       0 <==== rings' allreduce, H - 1 steps each way ====> 3
 *   3.       1, 2 get 0's result            4, 5 get 3's result
 *
 * By places (vectors from PLACES_FROM bytes) every rank is a leader of
 * one block: rank p of each host reduces block p of its host (1), the H
 * ranks at place p run the ring for block p (2: L rings at once), and
 * each rank gets the other blocks from their places in its host (3).
 */
#include "program_internal.h"
#include "template.h"

/* Instructions in the host's view (.view = H), the leaders' (L) or a
 * place's (P); a tree edge between leaders goes to / from root + rel +
 * peer_const * 2^t. */

/* Phase 1: the host's inputs into the leader's buffer `to`, in rank
 * order, by copy through the windows or (ref) from the peers' sendbufs. */
#define GATHER_SUM(to, ref)                                                    \
    {.op = EXPOSE,                                                             \
     .buf_a = SB,                                                              \
     .buf_b = (ref) ? NB : WB,                                                 \
     .flags = (ref) ? REF | ALL : W,                                           \
     .view = H},                                                               \
        {.op = SIGNAL, .view = H}, {.op = LOOP, .loop_extra = 1, .view = H},   \
        {.op = WAIT, .pred = EQ, RANK_S, .view = H},                           \
        {.op = GET,                                                            \
         .pred = EQ,                                                           \
         .buf_a = (ref) ? SB : WB,                                             \
         .buf_b = to,                                                          \
         .flags = W | ACC,                                                     \
         RANK_S,                                                               \
         .view = H},                                                           \
    {                                                                          \
        .op = END, .view = H                                                   \
    }

/* Phase 3: the leader's recvbuf to its host's peers; the leader leaves
 * only once they have read it (by reference they read its recvbuf). */
#define SPREAD(ref)                                                            \
    {.op = EXPOSE,                                                             \
     .pred = EQ,                                                               \
     .buf_a = RB,                                                              \
     .buf_b = (ref) ? NB : WB,                                                 \
     .flags = (ref) ? REF | ALL : W,                                           \
     .view = H},                                                               \
        {.op = SIGNAL, .pred = EQ, .flag = 1, .view = H},                      \
        {.op = WAIT,                                                           \
         .pred = IN,                                                           \
         .pred_lo = 1,                                                         \
         .pred_hi = -1,                                                        \
         ROOT,                                                                 \
         .flag = 1,                                                            \
         .view = H},                                                           \
        {.op = GET,                                                            \
         .pred = IN,                                                           \
         .pred_lo = 1,                                                         \
         .pred_hi = -1,                                                        \
         .buf_a = (ref) ? RB : WB,                                             \
         .buf_b = RB,                                                          \
         .flags = W,                                                           \
         ROOT,                                                                 \
         .view = H},                                                           \
        {.op = SIGNAL,                                                         \
         .pred = IN,                                                           \
         .pred_lo = 1,                                                         \
         .pred_hi = -1,                                                        \
         .flag = 2,                                                            \
         .view = H},                                                           \
        {.op = LOOP, .view = H},                                               \
        {.op = WAIT, .pred = EQ, NEXT_S, .flag = 2, .view = H},                \
        {.op = END, .view = H},                                                \
        {.op = SIGNAL, .pred = EQ, .flag = 3, .view = H},                      \
    {                                                                          \
        .op = WAIT, NOT_ROOT, ROOT, .flag = 3, .view = H                       \
    }

/* The rings' allreduce in view v (the leaders, or a place's nodes), in
 * place in recvbuf: fragment pos - s sent, pos - s - 1 received and
 * reduced; then passed round. avg divides the fragment a node completes
 * (pos + 1) by N before it goes round: a region once sent is not written
 * again until its receiver is known to have it. */
#define RING_IN(v)                                                             \
    {.op = LOOP, .view = v},                                                   \
        {.op = SEND,                                                           \
         .frag_pos = 1,                                                        \
         .frag_step = -1,                                                      \
         .buf_a = RB,                                                          \
         .buf_b = RB,                                                          \
         .view = v},                                                           \
        {.op = RECV,                                                           \
         .frag_pos = 1,                                                        \
         .frag_step = -1,                                                      \
         .frag_const = -1,                                                     \
         .buf_a = RB,                                                          \
         .buf_b = RB,                                                          \
         .local = RB,                                                          \
         .view = v},                                                           \
        {.op = END, .view = v},                                                \
        {.op = SCALE, .frag_pos = 1, .frag_const = 1, .buf_b = RB, .view = v}, \
        {.op = LOOP, .view = v},                                               \
        {.op = SEND,                                                           \
         .frag_pos = 1,                                                        \
         .frag_step = -1,                                                      \
         .frag_const = 1,                                                      \
         .buf_a = RB,                                                          \
         .buf_b = RB,                                                          \
         .view = v},                                                           \
        {.op = RECV,                                                           \
         .frag_pos = 1,                                                        \
         .frag_step = -1,                                                      \
         .buf_a = RB,                                                          \
         .buf_b = RB,                                                          \
         .view = v},                                                           \
    {                                                                          \
        .op = END, .view = v                                                   \
    }

/* Phase 2 of allreduce: the ring over the leaders. */
#define RING_ALLREDUCE RING_IN(L)

#define SCALE_AT(pr, buf)                                                      \
    {                                                                          \
        .op = SCALE, .pred = pr, .buf_b = buf, .flags = W                      \
    }

/* By places (large vectors): the node at place l of each host reduces
 * block l of its host's inputs (direct2's first step, in the host), the
 * H nodes at place l run the rings' allreduce of block l between the
 * hosts (L rings at once, one per place), and every node gets the other
 * blocks from their places in its host (direct2's second step). Every
 * byte crosses a host's boundary 2 (H - 1) / H times, spread over the L
 * places, and each node sums 1 / L of the host's inputs. */
#define PLACE_RING RING_IN(P)

static const mrc__insn_t allreduce_places_copy[] = {
    {.op = EXPOSE, .buf_a = SB, .buf_b = WB, .flags = ALL, .view = H},
    {.op = SIGNAL, .view = H},
    {.op = LOOP, .view = H},
    {.op = WAIT, NEXT_S, .view = H},
    {.op = GET,
     .frag_pos = 1,
     .buf_a = WB,
     .buf_b = RB,
     .local = SB,
     .flags = ACC,
     NEXT_S,
     .view = H},
    {.op = END, .view = H},
    {.op = COPY,
     .pred = ALONE,
     .frag_pos = 1,
     .buf_a = SB,
     .buf_b = RB,
     .view = H},
    PLACE_RING,
    {.op = EXPOSE, .frag_pos = 1, .buf_a = RB, .buf_b = WB, .view = H},
    {.op = SIGNAL, .flag = 1, .view = H},
    {.op = LOOP, .view = H},
    {.op = WAIT, NEXT_S, .flag = 1, .view = H},
    {.op = GET,
     .frag_pos = 1,
     .frag_step = 1,
     .frag_const = 1,
     .buf_a = WB,
     .buf_b = RB,
     NEXT_S,
     .view = H},
    {.op = END, .view = H},
};

/* By reference, the last wait round keeps every node in the call until
 * its host's peers have read its buffers. */
static const mrc__insn_t allreduce_places_ref[] = {
    {.op = EXPOSE, .buf_a = SB, .flags = REF | ALL, .view = H},
    {.op = EXPOSE, .buf_a = RB, .flags = REF | ALL, .view = H},
    {.op = SIGNAL, .view = H},
    {.op = LOOP, .view = H},
    {.op = WAIT, NEXT_S, .view = H},
    {.op = GET,
     .frag_pos = 1,
     .buf_a = SB,
     .buf_b = RB,
     .local = SB,
     .flags = ACC,
     NEXT_S,
     .view = H},
    {.op = END, .view = H},
    {.op = COPY,
     .pred = ALONE,
     .frag_pos = 1,
     .buf_a = SB,
     .buf_b = RB,
     .view = H},
    PLACE_RING,
    {.op = SIGNAL, .flag = 1, .view = H},
    {.op = LOOP, .view = H},
    {.op = WAIT, NEXT_S, .flag = 1, .view = H},
    {.op = GET,
     .frag_pos = 1,
     .frag_step = 1,
     .frag_const = 1,
     .buf_a = RB,
     .buf_b = RB,
     NEXT_S,
     .view = H},
    {.op = END, .view = H},
    {.op = SIGNAL, .flag = 2, .view = H},
    {.op = LOOP, .view = H},
    {.op = WAIT, NEXT_S, .flag = 2, .view = H},
    {.op = END, .view = H},
};

static const mrc__insn_t allreduce_copy[] = {
    GATHER_SUM(RB, 0),
    RING_ALLREDUCE,
    SPREAD(0),
};
static const mrc__insn_t allreduce_ref[] = {
    GATHER_SUM(RB, 1),
    RING_ALLREDUCE,
    SPREAD(1),
};

/* The leaders' partial sums in scratch; the tree's root (the group's
 * root) ends with the sum in recvbuf. */
#define TREE_REDUCE                                                            \
    {.op = COPY, .pred = EQ, .buf_a = XB, .buf_b = RB, .flags = W, .view = L}, \
        {.op = LOOP, .flags = LOG, .view = L},                                 \
        {.op = RECV,                                                           \
         .pred = PARENT,                                                       \
         .pred_lo = 1,                                                         \
         .pred_hi = -1,                                                        \
         .buf_a = RB,                                                          \
         .buf_b = RB,                                                          \
         .local = RB,                                                          \
         .flags = W | POW,                                                     \
         .peer_const = 1,                                                      \
         .view = L},                                                           \
        {.op = RECV,                                                           \
         .pred = PARENT,                                                       \
         .pred_lo = 2,                                                         \
         .pred_hi = -1,                                                        \
         .buf_a = XB,                                                          \
         .buf_b = XB,                                                          \
         .local = XB,                                                          \
         .flags = W | POW,                                                     \
         .peer_const = 1,                                                      \
         .view = L},                                                           \
        {.op = SEND,                                                           \
         .pred = CHILD,                                                        \
         .pred_hi = -1,                                                        \
         .buf_a = XB,                                                          \
         .buf_b = XB,                                                          \
         .flags = W | POW,                                                     \
         .peer_const = -1,                                                     \
         .view = L},                                                           \
    {                                                                          \
        .op = END, .view = L                                                   \
    }

/* Every leader's peers wait for it, so that a disagreement found by a
 * leader fails its host too. */
#define RELEASE                                                                \
    {.op = SIGNAL, .pred = EQ, .flag = 1, .view = H},                          \
        {.op = WAIT,                                                           \
         .pred = IN,                                                           \
         .pred_lo = 1,                                                         \
         .pred_hi = -1,                                                        \
         ROOT,                                                                 \
         .flag = 1,                                                            \
         .view = H},                                                           \
        {.op = SIGNAL,                                                         \
         .pred = IN,                                                           \
         .pred_lo = 1,                                                         \
         .pred_hi = -1,                                                        \
         .flag = 2,                                                            \
         .view = H},                                                           \
        {.op = LOOP, .view = H},                                               \
        {.op = WAIT, .pred = EQ, NEXT_S, .flag = 2, .view = H},                \
    {                                                                          \
        .op = END, .view = H                                                   \
    }

static const mrc__insn_t reduce_copy[] = {
    GATHER_SUM(XB, 0),
    TREE_REDUCE,
    RELEASE,
    SCALE_AT(EQ, RB),
};
static const mrc__insn_t reduce_ref[] = {
    GATHER_SUM(XB, 1),
    TREE_REDUCE,
    RELEASE,
    SCALE_AT(EQ, RB),
};

/* The root's sendbuf to the leaders by the tree (walked from the root
 * outwards), into their recvbufs. */
#define TREE_BROADCAST                                                         \
    {.op = COPY, .pred = EQ, .buf_a = SB, .buf_b = RB, .flags = W, .view = L}, \
        {.op = LOOP, .flags = LOG, .view = L},                                 \
        {.op = RECV,                                                           \
         .pred = CHILD,                                                        \
         .pred_hi = -1,                                                        \
         .buf_a = RB,                                                          \
         .buf_b = RB,                                                          \
         .flags = W | POW | REV,                                               \
         .peer_const = -1,                                                     \
         .view = L},                                                           \
        {.op = SEND,                                                           \
         .pred = PARENT,                                                       \
         .pred_hi = -1,                                                        \
         .buf_a = RB,                                                          \
         .buf_b = RB,                                                          \
         .flags = W | POW | REV,                                               \
         .peer_const = 1,                                                      \
         .view = L},                                                           \
    {                                                                          \
        .op = END, .view = L                                                   \
    }

static const mrc__insn_t broadcast_copy[] = {TREE_BROADCAST, SPREAD(0)};
static const mrc__insn_t broadcast_ref[] = {TREE_BROADCAST, SPREAD(1)};

#define T(code)                                                                \
    {                                                                          \
        code, (int)(sizeof code / sizeof code[0])                              \
    }

static const struct {
    const mrc__insn_t *code;
    int len;
} codes[MRC_NUM_COLLECTIVES][2] = {
    [MRC_ALLREDUCE] = {T(allreduce_copy), T(allreduce_ref)},
    [MRC_REDUCE] = {T(reduce_copy), T(reduce_ref)},
    [MRC_BROADCAST] = {T(broadcast_copy), T(broadcast_ref)},
};

#undef T

/* allreduce goes by places from this many bytes a vector, when a host
 * has more than one rank: below, the one leader's L - 1 whole-vector
 * reads cost less than L times as many messages between the hosts (a
 * guess until calibration, issue 15's). */
#define PLACES_FROM ((uint64_t)64 << 10)

mrc_status_t mrc__hier_code(const mrc_compile_config_t *cfg, int n,
                            const mrc__insn_t **code, int *len,
                            uint8_t *addressing)
{
    int hosts = cfg->hosts > 1 ? cfg->hosts : 1;
    if (!codes[cfg->collective][0].code)
        return mrc__error(MRC_ERR_UNSUPPORTED,
                          "hier does not apply to %s (every rank needs its "
                          "own block: use rings or direct1)",
                          mrc_collective_name(cfg->collective));
    if (n % hosts != 0)
        return mrc__error(MRC_ERR_UNSUPPORTED,
                          "hier needs the group's ranks on hosts in equal "
                          "blocks: %d ranks do not split over %d hosts",
                          n, hosts);
    int local = n / hosts;
    uint64_t bytes =
        mrc__sat_mul_add(cfg->count, mrc_dtype_size(cfg->dtype), 0);
    int ref = bytes > mrc__stage_reduce_max(local);
    *addressing = MRC__ADDR_SPLIT; /* the leaders' fragments */
    if (cfg->collective == MRC_ALLREDUCE && local > 1 && bytes >= PLACES_FROM &&
        hosts <= UINT16_MAX) {
        /* (the window holds the whole vector, as the leaders') */
        *code = ref ? allreduce_places_ref : allreduce_places_copy;
        *len = ref ? (int)(sizeof allreduce_places_ref /
                           sizeof allreduce_places_ref[0])
                   : (int)(sizeof allreduce_places_copy /
                           sizeof allreduce_places_copy[0]);
        *addressing = MRC__ADDR_CELLS;
        return MRC_OK;
    }
    *code = codes[cfg->collective][ref].code;
    *len = codes[cfg->collective][ref].len;
    return MRC_OK;
}
