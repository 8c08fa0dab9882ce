/* The executor's preparation: one node's plan expanded from the program,
 * and everything a run needs taken up front (transfer records, staging
 * slots for partial sums, relay memory, the exposure of a memory
 * program), after the memory it takes is refused if it would not fit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"
#include "reduce/reduce.h"

void mrc__exec_release(mrc__exec_t *x)
{
    mrc__plan_free(&x->plan);
    free(x->stage_of);
    free(x->slot_user);
    free(x->staging);
    free(x->chain_rank);
    free(x->chain_group);
    free(x->first_open);
    free(x->complete);
    free(x->xfers);
    free(x->recvs);
    free(x->recv_of);
    free(x->send_list);
    free(x->cursor);
    free(x->fwd_of);
    free(x->fwd_sends);
    free(x->fwd_at);
    free(x->fwd_prev);
    free(x->relay_chain);
    free(x->relay_mem);
    free(x->idle_ports);
    free(x->own_read);
    memset(x, 0, sizeof *x);
}

static int same_region(int buf, uint64_t off, int buf2, uint64_t off2)
{
    return buf == buf2 && off == off2;
}

/* Is op i (a RECV) a transient partial: forwarded by a later SEND of its
 * chain, then overwritten (or in scratch, never output), with nothing else
 * reading it? Returns the forwarding SEND, or -1. */
static int transient(const mrc__plan_t *pl, int i, int end)
{
    const mrc__op_t *op = &pl->ops[i];
    int fwd = -1;
    for (int j = i + 1; j < end; j++) {
        const mrc__op_t *q = &pl->ops[j];
        int reads = (q->kind == MRC__SEND || q->kind == MRC__COPY) &&
                    same_region(q->src, q->src_off, op->dst, op->dst_off);
        int writes = (q->kind == MRC__RECV || q->kind == MRC__COPY ||
                      q->kind == MRC__SCALE) &&
                     same_region(q->dst, q->dst_off, op->dst, op->dst_off);
        reads |= q->kind == MRC__RECV && q->local &&
                 same_region(q->local, q->local_off, op->dst, op->dst_off);
        if (q->kind == MRC__SCALE && writes)
            return -1; /* scaled: an output */
        if (reads) {
            if (fwd >= 0 || q->kind != MRC__SEND)
                return -1;
            fwd = j;
            continue;
        }
        if (writes)
            return fwd; /* overwritten after its one forward */
    }
    return op->dst == MRC__BUF_SCRATCH ? fwd : -1;
}

/* Chooses the staged operations and sizes the slots. */
static mrc_status_t plan_staging(mrc__exec_t *x)
{
    const mrc__plan_t *pl = &x->plan;
    int nc = pl->num_chains, n = pl->num_ops;
    const char *env = getenv("MRC_WINDOW");
    x->window = env && atoi(env) > 0 ? atoi(env) : 2;
    x->stage_of = malloc(((size_t)n + 1) * sizeof *x->stage_of);
    x->chain_rank = calloc((size_t)nc + 1, sizeof *x->chain_rank);
    x->chain_group = calloc((size_t)nc + 1, sizeof *x->chain_group);
    x->complete = calloc((size_t)nc + 1, 1);
    x->first_open = calloc((size_t)nc + 1, sizeof *x->first_open);
    if (!x->stage_of || !x->chain_rank || !x->chain_group || !x->complete ||
        !x->first_open)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory planning");
    for (int i = 0; i < n; i++)
        x->stage_of[i] = -1;
    /* Chains come stream by stream; number them within their stream. */
    int ids = 0, prev_stream = -1, rank = 0;
    for (int ch = 0; ch < nc; ch++) {
        int k = pl->ops[pl->chain_off[ch]].stream;
        if (k != prev_stream) {
            ids++;
            rank = 0;
            prev_stream = k;
        }
        x->chain_group[ch] = ids - 1;
        x->chain_rank[ch] = rank++;
    }
    x->num_stream_ids = ids;
    /* Small buffers stay in cache. The tree's inner node does not stage:
     * its two slots hold it two chunks ahead of its parent, which reads
     * two children, and with more ranks than cores each slot it waits
     * for costs it a turn for its core (a 64 MiB allreduce on 4 threads
     * of 2 cores: 34-40 ms staged, 20 through scratch, the rings' 18.5). */
    if (!x->nontemporal || x->program->cfg.algo == MRC_ALGO_TREE ||
        getenv("MRC_NO_STAGING"))
        return MRC_OK;
    uint64_t biggest = 0;
    for (int ch = 0; ch < nc; ch++) {
        int toggle = 0, end = pl->chain_off[ch + 1];
        int base =
            (x->chain_group[ch] * x->window + x->chain_rank[ch] % x->window) *
            2;
        for (int i = pl->chain_off[ch]; i < end; i++) {
            if (pl->ops[i].kind != MRC__RECV)
                continue;
            int j = transient(pl, i, end);
            if (j < 0)
                continue;
            x->stage_of[i] = x->stage_of[j] = base + toggle;
            toggle ^= 1;
            if (pl->ops[i].count > biggest)
                biggest = pl->ops[i].count;
        }
    }
    if (biggest == 0)
        return MRC_OK;
    x->num_slots = ids * x->window * 2;
    x->slot_bytes = ((size_t)biggest * x->elem + 63) / 64 * 64;
    mrc_status_t st = mrc__check_memory(
        mrc__sat_mul_add((uint64_t)x->num_slots, x->slot_bytes, 0),
        "staging slots");
    if (st != MRC_OK)
        return st;
    x->staging = aligned_alloc(64, (size_t)x->num_slots * x->slot_bytes);
    x->slot_user = malloc((size_t)x->num_slots * sizeof *x->slot_user);
    if (!x->staging || !x->slot_user)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory for staging");
    return MRC_OK;
}

/* Relay memory: two slots per relay chain, each as large as the chain's
 * largest message, alternating so that a message can arrive while the
 * one before it is still being taken. */
static mrc_status_t plan_relays(mrc__exec_t *x)
{
    const mrc__plan_t *pl = &x->plan;
    size_t n = (size_t)pl->num_ops;
    x->fwd_of = malloc((n + 1) * sizeof *x->fwd_of);
    x->relay_chain = calloc((size_t)pl->num_chains + 1, 1);
    if (!x->fwd_of || !x->relay_chain)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory planning relays");
    for (size_t i = 0; i < n; i++) {
        x->fwd_of[i] = -1;
        if (pl->ops[i].kind == MRC__FWD)
            x->fwd_of[i] = (int32_t)x->num_fwds++;
    }
    if (x->num_fwds == 0)
        return MRC_OK;
    x->fwd_sends = calloc(x->num_fwds, sizeof *x->fwd_sends);
    x->fwd_at = malloc(x->num_fwds * sizeof *x->fwd_at);
    x->fwd_prev = malloc(x->num_fwds * sizeof *x->fwd_prev);
    if (!x->fwd_sends || !x->fwd_at || !x->fwd_prev)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory planning relays");
    uint64_t total = 0;
    for (int ch = 0; ch < pl->num_chains; ch++) {
        int begin = pl->chain_off[ch], end = pl->chain_off[ch + 1];
        if (pl->ops[begin].kind != MRC__FWD)
            continue;
        x->relay_chain[ch] = 1;
        uint64_t biggest = 0;
        for (int i = begin; i < end; i++)
            if (pl->ops[i].count > biggest)
                biggest = pl->ops[i].count;
        uint64_t slot = (biggest * x->elem + 63) / 64 * 64;
        int last[2] = {-1, -1}, j = 0;
        for (int i = begin; i < end; i++, j ^= 1) {
            int f = x->fwd_of[i];
            x->fwd_at[f] = total + (uint64_t)j * slot;
            x->fwd_prev[f] = last[j];
            last[j] = f;
        }
        total = mrc__sat_mul_add(2, slot, total);
    }
    mrc_status_t st = mrc__check_memory(total, "relay slots");
    if (st != MRC_OK)
        return st;
    x->relay_bytes = (size_t)total;
    x->relay_mem = aligned_alloc(64, x->relay_bytes ? x->relay_bytes : 64);
    if (!x->relay_mem)
        return mrc__error(MRC_ERR_NO_MEMORY,
                          "out of memory for %zu bytes of "
                          "relay slots",
                          x->relay_bytes);
    return MRC_OK;
}

/* Refuses, before anything is expanded, a plan that would not fit in the
 * memory limit: its operations (grown by doubling: twice their size at
 * worst) and the executor's state per operation and per chain. A chunk
 * of a few bytes on a large count is what gets here. */
static mrc_status_t check_plan_memory(const mrc_program_t *p, int node,
                                      int ranks_here)
{
    if (node < 0 || node >= p->num_nodes)
        return MRC_OK; /* mrc__plan_build says what is wrong */
    uint64_t chains, ops, relay_chains, relay_ops;
    mrc__plan_bound(p, p->nodes[node].group, 0, &chains, &ops);
    /* A relay's slots: two chunks per relay chain at most. */
    mrc__relay_bound(p, node, 0, &relay_chains, &relay_ops);
    chains += relay_chains;
    ops = mrc__sat_mul_add(1, relay_ops, ops);
    uint64_t slot =
        mrc__sat_mul_add(mrc__chunk_elems(p), mrc_dtype_size(p->cfg.dtype), 64);
    uint64_t per_op =
        2 * sizeof(mrc__op_t) + 2 * sizeof(mrc__xfer_t) + 3 * sizeof(int32_t);
    uint64_t per_chain = 6 * sizeof(int32_t) + 1;
    uint64_t one =
        mrc__sat_mul_add(ops, per_op, mrc__sat_mul_add(chains, per_chain, 0));
    one = mrc__sat_mul_add(mrc__sat_mul_add(relay_chains, 2, 0), slot, one);
    char what[128];
    snprintf(what, sizeof what,
             "plans (%llu chunks of %zu bytes a rank, %d "
             "rank%s in this process)",
             (unsigned long long)chains, (size_t)p->cfg.chunk_bytes, ranks_here,
             ranks_here > 1 ? "s" : "");
    mrc_status_t st = mrc__check_memory(
        mrc__sat_mul_add(one, (uint64_t)(ranks_here > 1 ? ranks_here : 1), 0),
        what);
    if (st == MRC_OK && ops > INT32_MAX)
        st = mrc__error(MRC_ERR_INVALID_ARG,
                        "the plan for node %d could have %llu operations, "
                        "more than %d: use larger chunks",
                        node, (unsigned long long)ops, INT32_MAX);
    return st;
}

/* What a memory program exposes: its group, the window where the code
 * uses one (by copy: programs by reference expose their buffers in
 * place), and its buffers' sizes (se, re, xe elements). */
static void plan_exposure(mrc__exec_t *x, const mrc__group_t *gr, uint64_t se,
                          uint64_t re, uint64_t xe)
{
    const mrc_program_t *p = x->program;
    x->exposure.members = &p->members[gr->first_member];
    x->exposure.num_members = gr->size;
    int windowed = mrc__program_uses_window(p);
    x->exposure.window_bytes =
        windowed ? (size_t)mrc__window_elems(p->cfg.collective, p->cfg.count,
                                             gr->size) *
                       x->elem
                 : 0;
    x->exposure.bytes[MRC__MEM_SEND] = (size_t)se * x->elem;
    x->exposure.bytes[MRC__MEM_RECV] = (size_t)re * x->elem;
    x->exposure.bytes[MRC__MEM_SCRATCH] = (size_t)xe * x->elem;
}

/* The receives to announce at each call (a relay's included), the sends
 * to see taken, and whether the plan runs straight (one chain of local
 * and memory ops). */
static void list_transfers(mrc__exec_t *x)
{
    x->straight = x->memory && x->plan.num_chains == 1 && x->num_fwds == 0;
    for (int i = 0; i < x->plan.num_ops; i++) {
        const mrc__op_t *op = &x->plan.ops[i];
        x->recv_of[i] = -1;
        if (op->kind == MRC__FWD || op->kind == MRC__RECV) {
            /* a relay's receive is announced as any */
            x->recv_of[i] = (int32_t)x->num_recvs;
            x->recvs[x->num_recvs].peer =
                op->kind == MRC__FWD ? op->from : op->peer;
            x->recvs[x->num_recvs].tag = op->tag;
            x->num_recvs++;
        } else if (op->kind == MRC__SEND) {
            x->send_list[x->num_sends++] = (int32_t)i;
        }
        if (op->kind == MRC__SEND || op->kind == MRC__RECV)
            x->straight = 0;
    }
    /* The first op that waits or uses a transfer (num_ops: none). */
    int i = 0;
    for (; i < x->plan.num_ops; i++) {
        int k = x->plan.ops[i].kind;
        if (k != MRC__EXPOSE && k != MRC__SIGNAL && k != MRC__COPY &&
            k != MRC__SCALE)
            break;
    }
    x->first_use = i;
}

/* Op kinds that write their destination buffer (dst, dst_off, count). */
static int writes_dst(int kind)
{
    return kind == MRC__RECV || kind == MRC__COPY || kind == MRC__SCALE ||
           kind == MRC__GET;
}

/* Whether elements [o1, o1 + n1) of buffer b1 and [o2, o2 + n2) of b2 may
 * share memory: in place, the send buffer lies inside the receive buffer
 * at an offset the plan does not say (allgather's), so any of one may be
 * any of the other. */
static int may_share(int in_place, int b1, uint64_t o1, uint64_t n1, int b2,
                     uint64_t o2, uint64_t n2)
{
    int send_recv1 = b1 == MRC__BUF_SEND || b1 == MRC__BUF_RECV;
    int send_recv2 = b2 == MRC__BUF_SEND || b2 == MRC__BUF_RECV;
    if (b1 != b2)
        return in_place && send_recv1 && send_recv2;
    return o1 < o2 + n2 && o2 < o1 + n1;
}

/* Where get j (of this node's own window) may read instead: the buffer
 * the last expose of those window elements copied them from, if it
 * copied all of them and no op up to j (j's own write included, but for
 * a plain copy onto the very elements it reads) wrote any of them since.
 * MRC__BUF_NONE otherwise. */
static struct mrc__own_read own_read_of(const mrc__plan_t *pl, int j)
{
    struct mrc__own_read none = {0, MRC__BUF_NONE};
    const mrc__op_t *g = &pl->ops[j];
    int i = j - 1;
    for (; i >= 0; i--) {
        const mrc__op_t *e = &pl->ops[i];
        if (e->kind == MRC__EXPOSE && !e->ref &&
            may_share(0, MRC__BUF_WINDOW, e->dst_off, e->count, MRC__BUF_WINDOW,
                      g->src_off, g->count))
            break;
    }
    if (i < 0)
        return none;
    const mrc__op_t *e = &pl->ops[i];
    if (g->src_off < e->dst_off ||
        g->src_off + g->count > e->dst_off + e->count ||
        e->src == MRC__BUF_WINDOW || e->src == MRC__BUF_NONE)
        return none;
    struct mrc__own_read at = {e->src_off + (g->src_off - e->dst_off), e->src};
    for (int k = i + 1; k <= j; k++) {
        const mrc__op_t *w = &pl->ops[k];
        if (!writes_dst(w->kind) ||
            !may_share(pl->in_place, w->dst, w->dst_off, w->count, at.buf,
                       at.off, g->count))
            continue;
        int onto_itself =
            k == j && w->dst == at.buf && w->dst_off == at.off && !w->local;
        if (!onto_itself)
            return none;
    }
    return at;
}

/* A straight plan's gets of its own window (see own_read in exec.h): a
 * small call's own get reading the window right after its expose and
 * signal read lines the peers were pulling over at that moment (P = 2,
 * 512 B allreduce: 0.39-0.40 us a call against 0.32 from sendbuf;
 * docs/performance.md). */
static mrc_status_t plan_own_reads(mrc__exec_t *x)
{
    const mrc__plan_t *pl = &x->plan;
    if (!x->straight)
        return MRC_OK;
    x->own_read = calloc((size_t)pl->num_ops + 1, sizeof *x->own_read);
    if (!x->own_read)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory planning node %d",
                          pl->node);
    for (int j = 0; j < pl->num_ops; j++) {
        const mrc__op_t *g = &pl->ops[j];
        if (g->kind == MRC__GET && g->peer == pl->node &&
            g->src == MRC__BUF_WINDOW)
            x->own_read[j] = own_read_of(pl, j);
    }
    return MRC_OK;
}

/* Whether a straight plan waits on every other member of its group (a
 * barrier, or a wait on each): every wait compares the calls, so the run
 * needs no agreement of its own (direct1's and direct2's; a hier member
 * waits on its leader only). -1: out of memory. */
static int waits_on_all(const mrc__exec_t *x)
{
    const mrc_program_t *p = x->program;
    uint8_t *seen = calloc((size_t)p->num_nodes, 1);
    if (!seen)
        return -1;
    for (int i = 0; i < x->plan.num_ops; i++) {
        const mrc__op_t *op = &x->plan.ops[i];
        if (op->kind == MRC__BARRIER) {
            free(seen);
            return 1;
        }
        if (op->kind == MRC__WAIT && op->peer >= 0 && op->peer < p->num_nodes)
            seen[op->peer] = 1;
    }
    int all = 1;
    for (int m = 0; m < x->group_size && all; m++)
        all = x->members[m] == x->plan.node || seen[x->members[m]];
    free(seen);
    return all;
}

/* The executor's tables for its plan: transfers, receives, the send
 * list, chain cursors, staging, relays and idle ports (the caller
 * releases x on a failure). */
static mrc_status_t plan_tables(mrc__exec_t *x, int node)
{
    size_t n = (size_t)x->plan.num_ops;
    x->xfers = calloc(n + 1, sizeof *x->xfers);
    x->recvs = calloc(n + 1, sizeof *x->recvs);
    x->recv_of = malloc((n + 1) * sizeof *x->recv_of);
    x->send_list = malloc((n + 1) * sizeof *x->send_list);
    x->cursor = calloc((size_t)x->plan.num_chains + 1, sizeof *x->cursor);
    if (!x->xfers || !x->recvs || !x->recv_of || !x->send_list || !x->cursor)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory planning node %d",
                          node);
    mrc_status_t st = plan_staging(x);
    if (st == MRC_OK)
        st = plan_relays(x);
    if (st == MRC_OK && !(x->idle_ports = malloc(
                              (size_t)x->program->nodes[node].num_ports + 1)))
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory planning node %d",
                        node);
    return st;
}

/* What the ranks must agree on: op only where it reduces, root only
 * where there is one. */
static mrc__call_t call_of(const mrc_compile_config_t *cfg)
{
    mrc_collective_t c = cfg->collective;
    int reducing =
        c == MRC_ALLREDUCE || c == MRC_REDUCE || c == MRC_REDUCE_SCATTER;
    int rooted = c == MRC_REDUCE || c == MRC_BROADCAST;
    return mrc__call_make(c, cfg->count, cfg->dtype,
                          reducing ? cfg->op : MRC_SUM, rooted ? cfg->root : 0);
}

mrc_status_t mrc__exec_prepare(mrc__exec_t *x, const mrc_program_t *p, int node,
                               int in_place, int ranks_here,
                               uint64_t stream_bytes)
{
    memset(x, 0, sizeof *x);
    x->program = p;
    x->elem = mrc_dtype_size(p->cfg.dtype);
    mrc_status_t st = check_plan_memory(p, node, ranks_here);
    if (st != MRC_OK)
        return st;
    st = mrc__plan_build(p, node, 0, in_place, &x->plan);
    if (st != MRC_OK)
        return st;
    int g = p->nodes[node].group;
    x->group_size = g >= 0 ? p->groups[g].size : 1;
    x->members = g >= 0 ? &p->members[p->groups[g].first_member] : NULL;
    /* More ranks than cores (or a group across hosts, whose size says
     * nothing of this one): a waiting rank's core is wanted soon. */
    int cores = mrc__online_cores();
    x->spin_looks = cores > 0 && x->group_size <= cores ? MRC__SPIN_LOOKS_OWN
                                                        : MRC__SPIN_LOOKS;
    /* With local completion a rank that only sends returns at once: no
     * round of agreement (a receiver compares what it receives). */
    x->agree =
        x->members && x->group_size > 1 &&
        p->cfg.completion == MRC_COMPLETION_GROUP &&
        (p->cfg.collective == MRC_REDUCE || p->cfg.collective == MRC_BROADCAST);
    /* Buffers this large overflow the caches anyway, so writes bypass
     * them: no read-for-ownership of each line before it is overwritten.
     * (Streaming only the final writes, and keeping partial sums cached
     * for the next hop, measured slower here: docs/performance.md.) */
    uint64_t se, re, xe;
    mrc__buffer_elems(p, node, &se, &re, &xe);
    x->nontemporal = re * x->elem >= stream_bytes;
    x->stream_bytes = stream_bytes;
    if (se * x->elem <= MRC__WARM_BYTES && re * x->elem <= MRC__WARM_BYTES) {
        x->warm_send = (size_t)(se * x->elem);
        x->warm_recv = (size_t)(re * x->elem);
    }
    st = plan_tables(x, node);
    if (st != MRC_OK) {
        mrc__exec_release(x);
        return st;
    }
    x->memory = mrc__program_has_memory_ops(p);
    if (x->memory && g >= 0)
        plan_exposure(x, &p->groups[g], se, re, xe);
    /* Buffers are published where the program exposes some by reference,
     * or this node gets from one of its own (which needs no expose). */
    x->by_ref = x->memory && mrc__program_exposes_by_ref(p);
    for (int i = 0; x->memory && i < x->plan.num_ops; i++)
        x->by_ref |= x->plan.ops[i].kind == MRC__GET &&
                     x->plan.ops[i].src != MRC__BUF_WINDOW;
    list_transfers(x);
    st = plan_own_reads(x);
    if (st != MRC_OK) {
        mrc__exec_release(x);
        return st;
    }
    if (x->agree && x->straight) {
        int all = waits_on_all(x);
        if (all < 0) {
            mrc__exec_release(x);
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        }
        x->agree = !all;
    }
    /* The family too: ranks that chose different programs for one call
     * ($MRC_ALGO on some ranks only) disagree, and fail as such. */
    x->call =
        mrc__call_with_family(call_of(&p->cfg), p->cfg.algo, p->cfg.completion);
    return MRC_OK;
}
