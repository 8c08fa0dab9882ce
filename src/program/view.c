/*
 * The index spaces of a group that the code's expressions range over:
 * the views of the hier family (the group, a host, the hosts' leaders,
 * the nodes at one place of every host), the fragments a slice is cut
 * into (by places: blocks of pieces), and which nodes and iterations an
 * instruction's predicate and loop give a group of N.
 */
#include "program_internal.h"
#include "ring_math.h"

typedef mrc__view_pos_t view_t;

int mrc__program_hosts(const mrc_program_t *p)
{
    return p->cfg.algo == MRC_ALGO_HIER && p->cfg.hosts > 1 ? p->cfg.hosts : 1;
}

int mrc__frag_space(const mrc_program_t *p, int n)
{
    if (p->cfg.algo != MRC_ALGO_HIER || p->addressing == MRC__ADDR_CELLS)
        return n; /* (by places: L blocks of H pieces) */
    return mrc__program_hosts(p);
}

mrc__view_pos_t mrc__view_pos(const mrc_program_t *p, int which, int n, int pos,
                              int root)
{
    int hosts = mrc__program_hosts(p), l = n / hosts;
    if (which == MRC__VIEW_GROUP || l < 1 || n % hosts != 0)
        return (view_t){n, pos, mrc__ring_mod((long)pos - root, n), root, 0,
                        1, 1};
    if (which == MRC__VIEW_HOST) {
        int q = pos % l;
        return (view_t){l,        q,       mrc__ring_mod((long)q - root % l, l),
                        root % l, pos - q, 1,
                        1};
    }
    int q = pos / l;
    if (which == MRC__VIEW_PLACE)
        return (view_t){hosts, q, q, 0, pos % l, l, 1};
    return (view_t){hosts,
                    q,
                    mrc__ring_mod((long)q - root / l, hosts),
                    root / l,
                    root % l,
                    l,
                    pos % l == root % l};
}

/* hier by places (MRC__ADDR_CELLS): the first element and the length of
 * fragments first .. first + count - 1 (consecutive pieces of one
 * block) of a slice of len elements over `places` blocks of `hosts`
 * pieces. */
void mrc__cells_range(uint64_t off, uint64_t len, int places, int hosts,
                      int first, int count, uint64_t *start, uint64_t *out_len)
{
    uint64_t boff, blen, s0, s1, piece;
    mrc__split_part_qr(len / (uint64_t)places, len % (uint64_t)places,
                       (uint64_t)(first / hosts), &boff, &blen);
    uint64_t pq = blen / (uint64_t)hosts, pr = blen % (uint64_t)hosts;
    uint64_t a = (uint64_t)(first % hosts);
    mrc__split_part_qr(pq, pr, a, &s0, &piece);
    mrc__split_part_qr(pq, pr, a + (uint64_t)count, &s1, &piece);
    *start = off + boff + s0;
    *out_len = s1 - s0;
}

int mrc__pred_holds_ring(const mrc__insn_t *in, int rel, int n)
{
    int lo = mrc__pred_bound(in->pred_lo, n);
    int hi = mrc__pred_bound(in->pred_hi, n);
    switch (in->pred) {
    case MRC__PRED_ALWAYS: return 1;
    case MRC__PRED_REL_EQ: return rel == lo;
    case MRC__PRED_REL_IN: return lo <= rel && rel <= hi;
    case MRC__PRED_ALONE: return n == 1;
    default: return 0;
    }
}

/* Iterations of a loop for a group of n. */
int mrc__loop_iters(const mrc__insn_t *loop, int n)
{
    if (loop->flags & MRC__INSN_LOG)
        return mrc__ceil_log2(n);
    return n - 1 + loop->loop_extra;
}
