/*
 * A node's plan: its chains expanded whole (one per stream and chunk, then
 * one per relayed hop and chunk), the bounds that size the plan before
 * anything is expanded, and the sizes of a node's buffers.
 */
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"
#include "ring_math.h"

typedef struct opbuf {
    mrc__op_t *ops;
    int num, cap;
} opbuf_t;

static mrc__op_t *push(opbuf_t *b)
{
    if (mrc__grow((void **)&b->ops, &b->cap, b->num + 1, sizeof *b->ops))
        return NULL;
    mrc__op_t *op = &b->ops[b->num++];
    memset(op, 0, sizeof *op);
    return op;
}

/* Appends the chains that node relays, one per (hop, chunk). */
static mrc_status_t add_relays(const mrc_program_t *p, int node, uint64_t chunk,
                               opbuf_t *ops, mrc__plan_t *plan, int *cap_chains)
{
    int32_t *first = NULL;
    mrc__relay_t *list = NULL;
    mrc_status_t st = mrc__relay_index(p, &first, &list);
    for (int i = st == MRC_OK ? first[node] : 0;
         st == MRC_OK && i < first[node + 1]; i++) {
        int chunks = mrc__stream_chunks(p, list[i].stream, chunk);
        for (int c = 0; c < chunks && st == MRC_OK; c++) {
            mrc__chain_iter_t it;
            mrc__relay_begin(&it, p, node, &list[i], c, chunks);
            int before = ops->num, r;
            mrc__op_t op;
            while ((r = mrc__chain_next(&it, &op, &st)) > 0) {
                mrc__op_t *slot = push(ops);
                if (!slot) {
                    r = -1;
                    st = mrc__error(MRC_ERR_NO_MEMORY,
                                    "out of memory expanding");
                    break;
                }
                *slot = op;
            }
            if (r < 0 || ops->num == before)
                continue;
            if (mrc__grow((void **)&plan->chain_off, cap_chains,
                          plan->num_chains + 2, sizeof *plan->chain_off))
                st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
            else
                plan->chain_off[++plan->num_chains] = ops->num;
        }
    }
    free(first);
    free(list);
    return st;
}

/* Runs the code for one (stream, chunk) chain, appending its ops. */
static mrc_status_t run_chain(const mrc_program_t *p, int node, int k,
                              int chunk, int chunks, int in_place, opbuf_t *out)
{
    mrc__chain_iter_t it;
    mrc__chain_begin(&it, p, node, k, chunk, chunks, in_place);
    mrc__op_t op;
    mrc_status_t st;
    int r;
    while ((r = mrc__chain_next(&it, &op, &st)) > 0) {
        mrc__op_t *slot = push(out);
        if (!slot)
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory expanding");
        *slot = op;
    }
    return r < 0 ? st : MRC_OK;
}

int mrc__stream_chunks(const mrc_program_t *p, int k, uint64_t chunk_elems)
{
    uint64_t len = p->streams[k].slice_len;
    uint64_t n = (uint64_t)mrc__stream_size(p, k);
    uint64_t maxf =
        p->addressing == MRC__ADDR_SPLIT ? mrc__split_max(len, n) : len;
    if (mrc__program_has_memory_ops(p))
        return 1; /* one chain a node; its syncs even when empty */
    if (len == 0)
        return 0;
    uint64_t c = (maxf + chunk_elems - 1) / chunk_elems;
    return c < 1 ? 1 : c > (1u << 23) ? (1 << 23) : (int)c;
}

uint64_t mrc__chain_ops_bound(const mrc_program_t *p, int n)
{
    /* Each instruction once, or once per iteration of its loop; a view's
     * group is never larger than the group, and iterations grow with it. */
    uint64_t ops = 0, iters = 1;
    for (int pc = 0; pc < p->code_len; pc++) {
        const mrc__insn_t *in = &p->code[pc];
        if (in->op == MRC__OP_LOOP) {
            int it = mrc__loop_iters(in, n);
            iters = it > 0 ? (uint64_t)it : 0;
        } else if (in->op == MRC__OP_END) {
            iters = 1;
        } else { /* every fragment but its own: two ops */
            ops += (in->flags & MRC__INSN_OTHERS) ? 2 * iters : iters;
        }
    }
    return ops;
}

void mrc__plan_bound(const mrc_program_t *p, int group, uint64_t chunk_elems,
                     uint64_t *chains, uint64_t *ops)
{
    *chains = *ops = 0;
    if (group < 0 || group >= p->num_groups)
        return;
    const mrc__group_t *g = &p->groups[group];
    uint64_t chunk = chunk_elems ? chunk_elems : mrc__chunk_elems(p);
    uint64_t per_chain = mrc__chain_ops_bound(p, g->size);
    for (int k = g->first_stream; k < g->first_stream + g->num_streams; k++) {
        uint64_t c = (uint64_t)mrc__stream_chunks(p, k, chunk);
        *chains += c;
        *ops = mrc__sat_mul_add(c, per_chain, *ops);
    }
}

mrc_status_t mrc__plan_build(const mrc_program_t *p, int node,
                             uint64_t chunk_elems, int in_place,
                             mrc__plan_t *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->node = node;
    plan->in_place = in_place;
    if (node < 0 || node >= p->num_nodes)
        return mrc__error(MRC_ERR_INVALID_ARG, "no node %d in the program",
                          node);
    const mrc__node_t *nd = &p->nodes[node];
    uint64_t chunk = chunk_elems ? chunk_elems : mrc__chunk_elems(p);
    opbuf_t ops = {0};
    int cap_chains = 0;
    if (mrc__grow((void **)&plan->chain_off, &cap_chains, 2,
                  sizeof *plan->chain_off))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    plan->chain_off[0] = 0;
    mrc_status_t st = MRC_OK;
    /* A node in no group may still relay other groups' hops. */
    const mrc__group_t *g = nd->group >= 0 ? &p->groups[nd->group] : NULL;
    for (int k = g ? g->first_stream : 0;
         g && k < g->first_stream + g->num_streams && st == MRC_OK; k++) {
        int chunks = mrc__stream_chunks(p, k, chunk);
        for (int c = 0; c < chunks && st == MRC_OK; c++) {
            int before = ops.num;
            st = run_chain(p, node, k, c, chunks, in_place, &ops);
            if (st != MRC_OK || ops.num == before)
                continue;
            if (mrc__grow((void **)&plan->chain_off, &cap_chains,
                          plan->num_chains + 2, sizeof *plan->chain_off)) {
                st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
                break;
            }
            plan->chain_off[++plan->num_chains] = ops.num;
        }
    }
    if (st == MRC_OK)
        st = add_relays(p, node, chunk, &ops, plan, &cap_chains);
    plan->ops = ops.ops;
    plan->num_ops = ops.num;
    if (st != MRC_OK)
        mrc__plan_free(plan);
    return st;
}

void mrc__plan_free(mrc__plan_t *plan)
{
    free(plan->chain_off);
    free(plan->ops);
    memset(plan, 0, sizeof *plan);
}

void mrc__buffer_elems(const mrc_program_t *p, int node, uint64_t *send,
                       uint64_t *recv, uint64_t *scratch)
{
    int g = node >= 0 && node < p->num_nodes ? p->nodes[node].group : -1;
    uint64_t n = g >= 0 ? (uint64_t)p->groups[g].size : 0, c = p->cfg.count;
    *send = *recv = c;
    *scratch = 0;
    switch (p->cfg.collective) {
    case MRC_REDUCE_SCATTER:
        *send = n * c;
        *scratch = n * c;
        break;
    case MRC_ALLGATHER: *recv = n * c; break;
    case MRC_REDUCE: *scratch = c; break;
    default: break;
    }
    if (g < 0)
        *send = *recv = 0;
}
