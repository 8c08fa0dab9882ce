/*
 * The end of a run of the checker of memory programs (check_memory.c):
 * what every node's regions must hold, and the reads that must be over
 * before a node may leave the call.
 */
#include "check_memory.h"
#include "ring_math.h"

/* What output fragment f of node u must hold; 0 if it is not an output. */
static int expected(const mrc__mem_check_t *c, int u, int f, int n,
                    mrc__mem_region_t *want)
{
    const mrc_program_t *p = c->p;
    uint64_t all = 0;
    for (int r = 0; r < n; r++)
        all += mrc__mix64((uint64_t)r);
    int block = p->addressing == MRC__ADDR_BLOCK_POS ? f : -1;
    int rank = mrc__mem_rank(c, u);
    switch (p->cfg.collective) {
    case MRC_ALLREDUCE:
        *want = (mrc__mem_region_t){all, (uint64_t)n, 0, 0};
        return 1;
    case MRC_REDUCE_SCATTER:
        *want = (mrc__mem_region_t){all, (uint64_t)n, 0, 0};
        return block == rank;
    case MRC_ALLGATHER:
        *want = (mrc__mem_region_t){mrc__mix64((uint64_t)block), 1, 0, 0};
        return 1;
    case MRC_REDUCE:
        *want = (mrc__mem_region_t){all, (uint64_t)n, 0, 0};
        return rank == p->cfg.root;
    default:
        *want = (mrc__mem_region_t){mrc__mix64((uint64_t)p->cfg.root), 1, 0, 0};
        return 1;
    }
}

static uint64_t frag_len(const mrc_program_t *p, int f, int n)
{
    uint64_t len = p->cfg.count, parts = (uint64_t)mrc__frag_space(p, n);
    if (p->addressing == MRC__ADDR_CELLS) {
        int hosts = mrc__program_hosts(p);
        uint64_t start, flen;
        mrc__cells_range(0, len, n / hosts, hosts, f, 1, &start, &flen);
        return flen;
    }
    if (p->addressing != MRC__ADDR_SPLIT)
        return len;
    return mrc__split_len(len, parts, (uint64_t)f);
}

mrc_status_t mrc__check_memory_end(mrc__mem_check_t *c)
{
    const mrc_program_t *p = c->p;
    for (int i = 0; i < c->num_msgs; i++)
        if (!c->msgs[i].taken)
            return mrc__error(MRC_ERR_INVALID_PROGRAM,
                              "node %d sends node %d a message (tag %llx) "
                              "that it never receives",
                              c->msgs[i].src, c->msgs[i].dst,
                              (unsigned long long)c->msgs[i].tag);
    for (int u = 0; u < p->num_nodes; u++) {
        int gi = p->nodes[u].group;
        if (gi < 0)
            continue;
        int n = p->groups[gi].size, frags = mrc__mem_frags(p, n);
        mrc__mem_node_t *nu = &c->nodes[u];
        /* No peer reads this node's buffers once it has left. */
        for (int b = MRC__BUF_SEND; b < MRC__BUF_WINDOW; b++)
            for (int f = 0; f < frags; f++) {
                mrc__mem_region_t *r =
                    &nu->regions[(size_t)b * (size_t)frags + (size_t)f];
                /* (a message's read ends before its sender leaves: the
                 * executor waits for its sends) */
                for (int32_t i = r->reads; i >= 0; i = c->pool[i].next)
                    if (c->pool[i].msg < 0 &&
                        nu->vc[c->pool[i].reader] <= c->pool[i].idx)
                        return mrc__error(
                            MRC_ERR_INVALID_PROGRAM,
                            "%snode %d may leave the call while rank %d "
                            "still reads fragment %d of its buffer %d",
                            c->in_place ? "in place: " : "", u,
                            c->pool[i].reader, f, b);
            }
        for (int f = 0; f < frags; f++) {
            mrc__mem_region_t want;
            if (!expected(c, u, f, n, &want) || frag_len(p, f, n) == 0)
                continue;
            mrc__mem_region_t have = *mrc__mem_region(c, u, MRC__BUF_RECV, f);
            if (have.count != want.count || have.sig != want.sig)
                return mrc__error(
                    MRC_ERR_INVALID_PROGRAM,
                    "%snode %d (rank %d), fragment %d: the output holds %llu "
                    "contributions where it needs %llu%s",
                    c->in_place ? "in place: " : "", u, mrc__mem_rank(c, u), f,
                    (unsigned long long)have.count,
                    (unsigned long long)want.count,
                    have.count == want.count
                        ? " (some node's twice, another's missing)"
                        : "");
        }
    }
    return MRC_OK;
}
