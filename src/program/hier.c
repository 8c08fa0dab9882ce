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
 * windows while a vector fits mrc__stage_max(L) bytes, else by
 * reference, as the direct families do.
 *
 * Accepts: a group of N nodes on H hosts in equal blocks of L = N / H
 * consecutive ranks (cfg->hosts = H; H = 1 or L = 1 included), any
 * count, every dtype and op. Does not apply to reduce-scatter and
 * allgather (each rank needs its own block: the rings do that).
 * Limits: one leader per host carries all of the host's traffic (one
 * link out per host, as a host with one network port has); hosts of
 * unequal sizes, or ranks not in blocks, are not accepted.
 */
#include "program_internal.h"

enum { ALW = MRC__PRED_ALWAYS, EQ = MRC__PRED_REL_EQ, IN = MRC__PRED_REL_IN,
       CHILD = MRC__PRED_TREE_CHILD, PARENT = MRC__PRED_TREE_PARENT,
       SB = MRC__BUF_SEND, RB = MRC__BUF_RECV, XB = MRC__BUF_SCRATCH,
       WB = MRC__BUF_WINDOW, NB = MRC__BUF_NONE, W = MRC__INSN_WHOLE,
       REF = MRC__INSN_REF, ALL = MRC__INSN_ALL, ACC = MRC__INSN_ACC,
       LOG = MRC__INSN_LOG, REV = MRC__INSN_REV, POW = MRC__INSN_POW,
       G = MRC__VIEW_GROUP, H = MRC__VIEW_HOST, L = MRC__VIEW_LEADERS,
       P = MRC__VIEW_PLACE, ALONE = MRC__PRED_ALONE };

/* In view v: an operation on fragments (f = fp * pos + fs * s + fc), a
 * sync, a get of the peer at root + pp * rel + ps * s + pc. */
#define OP(v, o, pr, lo, hi, fp, fs, fc, a, b, l, fl)                        \
    {.op = (o), .pred = (pr), .pred_lo = (lo), .pred_hi = (hi),            \
     .frag_pos = (fp), .frag_step = (fs), .frag_const = (fc), .buf_a = (a), \
     .buf_b = (b), .local = (l), .flags = (fl), .view = (v)}
#define LOOP(v, extra, fl)                                                   \
    {.op = MRC__OP_LOOP, .loop_extra = (extra), .flags = (fl), .view = (v)}
#define END(v) {.op = MRC__OP_END, .view = (v)}
#define SIGNAL(pr, lo, hi, f)                                                \
    {.op = MRC__OP_SIGNAL, .pred = (pr), .pred_lo = (lo), .pred_hi = (hi),  \
     .flag = (f), .view = H}
#define WAIT(...) WAIT_(__VA_ARGS__)
#define WAIT_(pr, lo, hi, pp, ps, pc, f)                                      \
    {.op = MRC__OP_WAIT, .pred = (pr), .pred_lo = (lo), .pred_hi = (hi),    \
     .peer_pos = (pp), .peer_step = (ps), .peer_const = (pc), .flag = (f),  \
     .view = H}
#define GET(...) GET_(__VA_ARGS__)
#define GET_(pr, lo, hi, pp, ps, pc, a, b, fl)                                \
    {.op = MRC__OP_GET, .pred = (pr), .pred_lo = (lo), .pred_hi = (hi),     \
     .peer_pos = (pp), .peer_step = (ps), .peer_const = (pc), .buf_a = (a), \
     .buf_b = (b), .local = NB, .flags = (fl), .view = H}
/* A get of fragments (blocks, by places): f = fp * pos + fs * s + fc of
 * the peer at root + pp * rel + ps * s + pc, reduced with l (ACC). */
#define GETF(...) GETF_(__VA_ARGS__)
#define GETF_(fp, fs, fc, pp, ps, pc, a, b, l, fl)                            \
    {.op = MRC__OP_GET, .pred = ALW, .frag_pos = (fp), .frag_step = (fs),   \
     .frag_const = (fc), .peer_pos = (pp), .peer_step = (ps),              \
     .peer_const = (pc), .buf_a = (a), .buf_b = (b), .local = (l),         \
     .flags = (fl), .view = H}
/* A tree edge between leaders: to / from root + rel + pc * 2^t. */
#define TREE(o, pr, lo, a, l, fl, pc)                                        \
    {.op = (o), .pred = (pr), .pred_lo = (lo), .pred_hi = -1, .buf_a = (a), \
     .buf_b = (a), .local = (l), .flags = (fl), .peer_const = (pc),        \
     .view = L}
#define NEXT_S 1, 1, 1
#define RANK_S 0, 1, 0
#define ROOT 0, 0, 0

/* Phase 1: the host's inputs into the leader's buffer `to`, in rank
 * order, by copy through the windows or (ref) from the peers' sendbufs. */
#define GATHER_SUM(to, ref)                                                  \
    OP(H, MRC__OP_EXPOSE, ALW, 0, 0, 0, 0, 0, SB, (ref) ? NB : WB, NB,      \
       (ref) ? REF | ALL : W),                                              \
    SIGNAL(ALW, 0, 0, 0),                                                   \
    LOOP(H, 1, 0),                                                          \
    WAIT(EQ, 0, 0, RANK_S, 0),                                              \
    GET(EQ, 0, 0, RANK_S, (ref) ? SB : WB, to, W | ACC),                    \
    END(H)

/* Phase 3: the leader's recvbuf to its host's peers; the leader leaves
 * only once they have read it (by reference they read its recvbuf). */
#define SPREAD(ref)                                                          \
    OP(H, MRC__OP_EXPOSE, EQ, 0, 0, 0, 0, 0, RB, (ref) ? NB : WB, NB,       \
       (ref) ? REF | ALL : W),                                              \
    SIGNAL(EQ, 0, 0, 1),                                                    \
    WAIT(IN, 1, -1, ROOT, 1),                                               \
    GET(IN, 1, -1, ROOT, (ref) ? RB : WB, RB, W),                           \
    SIGNAL(IN, 1, -1, 2),                                                   \
    LOOP(H, 0, 0),                                                          \
    WAIT(EQ, 0, 0, NEXT_S, 2),                                              \
    END(H),                                                                 \
    SIGNAL(EQ, 0, 0, 3),                                                    \
    WAIT(IN, 1, -1, ROOT, 3)

/* The rings' allreduce in view v (the leaders, or a place's nodes), in
 * place in recvbuf: fragment pos - s sent, pos - s - 1 received and
 * reduced; then passed round. avg divides the fragment a node completes
 * (pos + 1) by N before it goes round: a region once sent is not written
 * again until its receiver is known to have it. */
#define RING_IN(v)                                                           \
    LOOP(v, 0, 0),                                                          \
    OP(v, MRC__OP_SEND, ALW, 0, 0, 1, -1, 0, RB, RB, NB, 0),                \
    OP(v, MRC__OP_RECV, ALW, 0, 0, 1, -1, -1, RB, RB, RB, 0),               \
    END(v),                                                                 \
    OP(v, MRC__OP_SCALE, ALW, 0, 0, 1, 0, 1, NB, RB, NB, 0),                \
    LOOP(v, 0, 0),                                                          \
    OP(v, MRC__OP_SEND, ALW, 0, 0, 1, -1, 1, RB, RB, NB, 0),                \
    OP(v, MRC__OP_RECV, ALW, 0, 0, 1, -1, 0, RB, RB, NB, 0),                \
    END(v)

/* Phase 2 of allreduce: the ring over the leaders. */
#define RING_ALLREDUCE RING_IN(L)

#define SCALE_AT(pr, buf)                                                    \
    OP(G, MRC__OP_SCALE, pr, 0, 0, 0, 0, 0, NB, buf, NB, W)

/* By places (large vectors): the node at place l of each host reduces
 * block l of its host's inputs (direct2's first step, in the host), the
 * H nodes at place l run the rings' allreduce of block l between the
 * hosts (L rings at once, one per place), and every node gets the other
 * blocks from their places in its host (direct2's second step). Every
 * byte crosses a host's boundary 2 (H - 1) / H times, spread over the L
 * places, and each node sums 1 / L of the host's inputs. */
#define PLACE_RING RING_IN(P)

static const mrc__insn_t allreduce_places_copy[] = {
    OP(H, MRC__OP_EXPOSE, ALW, 0, 0, 0, 0, 0, SB, WB, NB, ALL),
    SIGNAL(ALW, 0, 0, 0),
    LOOP(H, 0, 0),
    WAIT(ALW, 0, 0, NEXT_S, 0),
    GETF(1, 0, 0, NEXT_S, WB, RB, SB, ACC),
    END(H),
    OP(H, MRC__OP_COPY, ALONE, 0, 0, 1, 0, 0, SB, RB, NB, 0),
    PLACE_RING,
    OP(H, MRC__OP_EXPOSE, ALW, 0, 0, 1, 0, 0, RB, WB, NB, 0),
    SIGNAL(ALW, 0, 0, 1),
    LOOP(H, 0, 0),
    WAIT(ALW, 0, 0, NEXT_S, 1),
    GETF(1, 1, 1, NEXT_S, WB, RB, NB, 0),
    END(H),
};

/* By reference, the last wait round keeps every node in the call until
 * its host's peers have read its buffers. */
static const mrc__insn_t allreduce_places_ref[] = {
    OP(H, MRC__OP_EXPOSE, ALW, 0, 0, 0, 0, 0, SB, NB, NB, REF | ALL),
    OP(H, MRC__OP_EXPOSE, ALW, 0, 0, 0, 0, 0, RB, NB, NB, REF | ALL),
    SIGNAL(ALW, 0, 0, 0),
    LOOP(H, 0, 0),
    WAIT(ALW, 0, 0, NEXT_S, 0),
    GETF(1, 0, 0, NEXT_S, SB, RB, SB, ACC),
    END(H),
    OP(H, MRC__OP_COPY, ALONE, 0, 0, 1, 0, 0, SB, RB, NB, 0),
    PLACE_RING,
    SIGNAL(ALW, 0, 0, 1),
    LOOP(H, 0, 0),
    WAIT(ALW, 0, 0, NEXT_S, 1),
    GETF(1, 1, 1, NEXT_S, RB, RB, NB, 0),
    END(H),
    SIGNAL(ALW, 0, 0, 2),
    LOOP(H, 0, 0),
    WAIT(ALW, 0, 0, NEXT_S, 2),
    END(H),
};

static const mrc__insn_t allreduce_copy[] = {
    GATHER_SUM(RB, 0), RING_ALLREDUCE, SPREAD(0),
};
static const mrc__insn_t allreduce_ref[] = {
    GATHER_SUM(RB, 1), RING_ALLREDUCE, SPREAD(1),
};

/* The leaders' partial sums in scratch; the tree's root (the group's
 * root) ends with the sum in recvbuf. */
#define TREE_REDUCE                                                          \
    OP(L, MRC__OP_COPY, EQ, 0, 0, 0, 0, 0, XB, RB, NB, W),                  \
    LOOP(L, 0, LOG),                                                        \
    TREE(MRC__OP_RECV, PARENT, 1, RB, RB, W | POW, 1),                      \
    TREE(MRC__OP_RECV, PARENT, 2, XB, XB, W | POW, 1),                      \
    TREE(MRC__OP_SEND, CHILD, 0, XB, NB, W | POW, -1),                      \
    END(L)

/* Every leader's peers wait for it, so that a disagreement found by a
 * leader fails its host too. */
#define RELEASE                                                              \
    SIGNAL(EQ, 0, 0, 1),                                                    \
    WAIT(IN, 1, -1, ROOT, 1),                                               \
    SIGNAL(IN, 1, -1, 2),                                                   \
    LOOP(H, 0, 0),                                                          \
    WAIT(EQ, 0, 0, NEXT_S, 2),                                              \
    END(H)

static const mrc__insn_t reduce_copy[] = {
    GATHER_SUM(XB, 0), TREE_REDUCE, RELEASE, SCALE_AT(EQ, RB),
};
static const mrc__insn_t reduce_ref[] = {
    GATHER_SUM(XB, 1), TREE_REDUCE, RELEASE, SCALE_AT(EQ, RB),
};

/* The root's sendbuf to the leaders by the tree (walked from the root
 * outwards), into their recvbufs. */
#define TREE_BROADCAST                                                       \
    OP(L, MRC__OP_COPY, EQ, 0, 0, 0, 0, 0, SB, RB, NB, W),                  \
    LOOP(L, 0, LOG),                                                        \
    TREE(MRC__OP_RECV, CHILD, 0, RB, NB, W | POW | REV, -1),                \
    TREE(MRC__OP_SEND, PARENT, 0, RB, NB, W | POW | REV, 1),                \
    END(L)

static const mrc__insn_t broadcast_copy[] = {TREE_BROADCAST, SPREAD(0)};
static const mrc__insn_t broadcast_ref[] = {TREE_BROADCAST, SPREAD(1)};

#undef OP
#undef LOOP
#undef END
#undef SIGNAL
#undef WAIT
#undef WAIT_
#undef GET
#undef GET_
#undef GETF
#undef GETF_
#undef TREE

#define T(code) {code, (int)(sizeof code / sizeof code[0])}

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
    uint64_t bytes = mrc__sat_mul_add(cfg->count, mrc_dtype_size(cfg->dtype),
                                      0);
    int ref = bytes > mrc__stage_max(local);
    *addressing = MRC__ADDR_SPLIT; /* the leaders' fragments */
    if (cfg->collective == MRC_ALLREDUCE && local > 1 &&
        bytes >= PLACES_FROM && hosts <= UINT16_MAX) {
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
