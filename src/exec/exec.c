/* The executor (see exec.h). */
#include <sched.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec.h"
#include "reduce/reduce.h"

/* A hint to the core that this thread spins on memory. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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
    if (!x->nontemporal ||
        getenv("MRC_NO_STAGING")) /* small buffers stay in cache */
        return MRC_OK;
    uint64_t biggest = 0;
    for (int ch = 0; ch < nc; ch++) {
        int toggle = 0, end = pl->chain_off[ch + 1];
        int base = (x->chain_group[ch] * x->window +
                    x->chain_rank[ch] % x->window) * 2;
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
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory for %zu bytes of "
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
    uint64_t slot = mrc__sat_mul_add(mrc__chunk_elems(p),
                                     mrc_dtype_size(p->cfg.dtype), 64);
    uint64_t per_op = 2 * sizeof(mrc__op_t) + 2 * sizeof(mrc__xfer_t) +
                      3 * sizeof(int32_t);
    uint64_t per_chain = 6 * sizeof(int32_t) + 1;
    uint64_t one = mrc__sat_mul_add(ops, per_op,
                                    mrc__sat_mul_add(chains, per_chain, 0));
    one = mrc__sat_mul_add(mrc__sat_mul_add(relay_chains, 2, 0), slot, one);
    char what[128];
    snprintf(what, sizeof what, "plans (%llu chunks of %zu bytes a rank, %d "
             "rank%s in this process)", (unsigned long long)chains,
             (size_t)p->cfg.chunk_bytes, ranks_here, ranks_here > 1 ? "s" : "");
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

mrc_status_t mrc__exec_prepare(mrc__exec_t *x, const mrc_program_t *p,
                               int node, int in_place, int ranks_here)
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
    /* Buffers this large overflow the caches anyway, so writes bypass
     * them: no read-for-ownership of each line before it is overwritten.
     * (Streaming only the final writes, and keeping partial sums cached
     * for the next hop, measured slower here: docs/performance.md.) */
    uint64_t se, re, xe;
    mrc__buffer_elems(p, node, &se, &re, &xe);
    const char *env = getenv("MRC_STREAM_BYTES");
    uint64_t threshold = (uint64_t)8 << 20;
    if (env)
        mrc__parse_size(env, &threshold);
    x->nontemporal = re * x->elem >= threshold;
    size_t n = (size_t)x->plan.num_ops;
    x->xfers = calloc(n + 1, sizeof *x->xfers);
    x->recvs = calloc(n + 1, sizeof *x->recvs);
    x->recv_of = malloc((n + 1) * sizeof *x->recv_of);
    x->send_list = malloc((n + 1) * sizeof *x->send_list);
    x->cursor = calloc((size_t)x->plan.num_chains + 1, sizeof *x->cursor);
    if (!x->xfers || !x->recvs || !x->recv_of || !x->send_list ||
        !x->cursor) {
        mrc__exec_release(x);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory planning node %d",
                          node);
    }
    st = plan_staging(x);
    if (st == MRC_OK)
        st = plan_relays(x);
    if (st == MRC_OK && !(x->idle_ports = malloc(
                              (size_t)p->nodes[node].num_ports + 1)))
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory planning node %d",
                        node);
    if (st != MRC_OK) {
        mrc__exec_release(x);
        return st;
    }
    x->memory = mrc__program_has_memory_ops(p);
    if (x->memory && g >= 0) {
        const mrc__group_t *gr = &p->groups[g];
        x->exposure.members = &p->members[gr->first_member];
        x->exposure.num_members = gr->size;
        /* A window only where the code uses one (by copy): programs by
         * reference expose their buffers in place. */
        int windowed = 0;
        for (int i = 0; i < p->code_len; i++)
            windowed |= p->code[i].buf_a == MRC__BUF_WINDOW ||
                        p->code[i].buf_b == MRC__BUF_WINDOW;
        x->exposure.window_bytes =
            windowed ? (size_t)mrc__window_elems(p->cfg.collective,
                                                 p->cfg.count, gr->size) *
                           x->elem
                     : 0;
        x->exposure.bytes[MRC__MEM_SEND] = (size_t)se * x->elem;
        x->exposure.bytes[MRC__MEM_RECV] = (size_t)re * x->elem;
        x->exposure.bytes[MRC__MEM_SCRATCH] = (size_t)xe * x->elem;
    }
    x->straight = x->memory && x->plan.num_chains == 1 && x->num_fwds == 0;
    for (size_t i = 0; i < n; i++) {
        const mrc__op_t *op = &x->plan.ops[i];
        x->recv_of[i] = -1;
        if (op->kind == MRC__FWD) { /* its receive, announced as any */
            x->recv_of[i] = (int32_t)x->num_recvs;
            x->recvs[x->num_recvs].peer = op->from;
            x->recvs[x->num_recvs].tag = op->tag;
            x->num_recvs++;
        } else if (op->kind == MRC__RECV) {
            x->recv_of[i] = (int32_t)x->num_recvs;
            x->recvs[x->num_recvs].peer = op->peer;
            x->recvs[x->num_recvs].tag = op->tag;
            x->num_recvs++;
        } else if (op->kind == MRC__SEND) {
            x->send_list[x->num_sends++] = (int32_t)i;
        }
        if (op->kind == MRC__SEND || op->kind == MRC__RECV)
            x->straight = 0;
    }
    return MRC_OK;
}

static char *buffer(int which, const void *sendbuf, void *recvbuf,
                    void *scratch)
{
    switch (which) {
    case MRC__BUF_SEND: return (char *)sendbuf;
    case MRC__BUF_RECV: return recvbuf;
    case MRC__BUF_SCRATCH: return scratch;
    default: return NULL;
    }
}

static void copy_plain(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
}

_Static_assert((int)MRC__MEM_SEND == (int)MRC__BUF_SEND &&
                   (int)MRC__MEM_RECV == (int)MRC__BUF_RECV &&
                   (int)MRC__MEM_SCRATCH == (int)MRC__BUF_SCRATCH &&
                   (int)MRC__MEM_WINDOW == (int)MRC__BUF_WINDOW,
               "the transport numbers buffers as the program does");

/* Gets: the tile of a run into one destination (get_run), and the size
 * from which a reduction is written around the caches. */
enum { GET_TILE = 64 << 10, GET_NONTEMPORAL = 1 << 20 };

/* A memory-semantic op: MRC_OK once done, MRC_INPROGRESS while it waits
 * (a flag, a barrier, a get the transport cannot do yet). A barrier is
 * this rank's flag and a wait on every member's, in rank order; xf
 * remembers how far it is. */
static mrc_status_t memory_op(mrc__exec_t *x, const mrc__transport_t *t,
                              const mrc__op_t *op, mrc__xfer_t *xf,
                              const void *sb, void *rb, void *xb)
{
    const mrc__transport_ops_t *o = t->ops;
    switch (op->kind) {
    case MRC__EXPOSE:
        if (!op->ref)
            memcpy(x->win + op->dst_off * x->elem,
                   buffer(op->src, sb, rb, xb) + op->src_off * x->elem,
                   op->count * x->elem);
        return MRC_OK;
    case MRC__GET: {
        mrc_op_t rop = x->program->cfg.op == MRC_AVG ? MRC_SUM
                                                     : x->program->cfg.op;
        xf->peer = op->peer;
        xf->count = op->count;
        xf->bytes = op->count * x->elem;
        xf->dtype = x->program->cfg.dtype;
        xf->op = rop;
        xf->dst = buffer(op->dst, sb, rb, xb) + op->dst_off * x->elem;
        xf->local = op->local ? buffer(op->local, sb, rb, xb) +
                                    op->local_off * x->elem
                              : NULL;
        /* A reduction of a block past the caches is written around
         * them, as are large copies. */
        xf->nontemporal =
            op->local ? xf->bytes >= (size_t)GET_NONTEMPORAL : x->nontemporal;
        return o->get(t->ctx, op->peer, op->src, op->src_off * x->elem, xf);
    }
    case MRC__SIGNAL:
        return o->signal(t->ctx, op->flag);
    case MRC__WAIT:
        return o->wait(t->ctx, op->peer, op->flag);
    default: { /* MRC__BARRIER */
        int flag = MRC__BARRIER_FLAG + op->flag;
        if (!xf->posted) {
            mrc_status_t st = o->signal(t->ctx, flag);
            if (st != MRC_OK)
                return st;
            xf->posted = 1;
            xf->priv[0] = 0;
        }
        while ((int)xf->priv[0] < x->exposure.num_members) {
            mrc_status_t st = o->wait(
                t->ctx, x->exposure.members[xf->priv[0]], flag);
            if (st != MRC_OK)
                return st;
            xf->priv[0]++;
        }
        return MRC_OK;
    }
    }
}

static int xfer_done(const mrc__xfer_t *xf)
{
    return __atomic_load_n(&xf->done, __ATOMIC_ACQUIRE);
}

/* A relay's op: receive the message into its slot (once the slot's last
 * send is done), then send it on from there. MRC_OK with *ready clear
 * while it waits. */
static mrc_status_t forward(mrc__exec_t *x, const mrc__transport_t *t, int i,
                            int *ready)
{
    const mrc__op_t *op = &x->plan.ops[i];
    mrc__xfer_t *in = &x->xfers[i];
    int f = x->fwd_of[i];
    mrc__xfer_t *out = &x->fwd_sends[f];
    char *slot = x->relay_mem + x->fwd_at[f];
    mrc_status_t st;
    *ready = 0;
    if (!in->posted) {
        if (x->fwd_prev[f] >= 0) {
            mrc__xfer_t *last = &x->fwd_sends[x->fwd_prev[f]];
            if (!xfer_done(last) && (st = t->ops->test(t->ctx, last)) != MRC_OK)
                return st;
            if (!xfer_done(last))
                return MRC_OK;
        }
        in->peer = op->from;
        in->tag = op->tag;
        in->count = op->count;
        in->bytes = op->count * x->elem;
        in->dtype = x->program->cfg.dtype;
        in->op = MRC_SUM;
        in->dst = slot;
        in->local = NULL;
        in->nontemporal = 0;
        st = t->ops->irecv(t->ctx, in);
        if (st != MRC_OK)
            return st == MRC_INPROGRESS ? MRC_OK : st;
    }
    if (!xfer_done(in)) {
        if ((st = t->ops->test(t->ctx, in)) != MRC_OK)
            return st;
        if (!xfer_done(in))
            return MRC_OK;
    }
    if (!out->posted) {
        out->peer = op->peer;
        out->tag = op->tag;
        out->count = op->count;
        out->bytes = op->count * x->elem;
        st = t->ops->isend(t->ctx, slot, out);
        if (st != MRC_OK)
            return st == MRC_INPROGRESS ? MRC_OK : st;
        if (mrc__log_level() >= MRC__LOG_TRACE)
            mrc__trace(x->plan.node,
                       "forwards stream %d step %d chunk %d (%llu elements) "
                       "from %d to %d, hop to %d",
                       op->stream, op->step, op->chunk,
                       (unsigned long long)op->count, op->from, op->peer,
                       op->ring_peer);
    }
    *ready = 1;
    return MRC_OK;
}

/* At an op of `step`: if it starts a later phase of the port mask than
 * the last handed over, hands the transport the ports this node leaves
 * idle in it (and traces them). Chains run ahead of each other, so the
 * phase is the latest any chain has reached. */
static void hand_ports(mrc__exec_t *x, const mrc__transport_t *t, int step)
{
    const mrc_program_t *p = x->program;
    if (step < x->ports_until)
        return;
    int trace = mrc__log_level() >= MRC__LOG_TRACE;
    /* Nobody to tell (the CPU transports, no trace): no mask needed. */
    if ((!t->ops->ports && !trace) || mrc__port_mask_ready(p) != MRC_OK) {
        x->ports_until = INT32_MAX;
        return;
    }
    int ph = mrc__port_phase_of(p, step);
    if (ph < 0) {
        x->ports_until = INT32_MAX;
        return;
    }
    const mrc__port_phase_t *f = &p->port_phases[ph];
    x->ports_until = f->first_step + f->num_steps;
    int u = x->plan.node, n = p->nodes[u].num_ports;
    mrc__port_idle(p, ph, u, x->idle_ports);
    if (t->ops->ports)
        t->ops->ports(t->ctx, x->idle_ports, n);
    if (trace) {
        char list[256];
        size_t at = 0;
        list[0] = 0;
        for (int q = 0; q < n && at + 16 < sizeof list; q++)
            if (x->idle_ports[q])
                at += (size_t)snprintf(list + at, sizeof list - at, "%s%d",
                                       at ? ", " : "", q);
        mrc__trace(u, "phase %d (steps %d-%d): idle ports {%s}", ph,
                   f->first_step, f->first_step + f->num_steps - 1, list);
    }
}

/* A run of gets into one destination, as the direct programs reduce a
 * block over the peers (GET, then WAIT and GET for each further peer,
 * each reading the destination as its local operand), is done a tile at
 * a time: each tile of the destination stays in cache while every peer's
 * tile is added to it, in the program's order per element (so the same
 * bits), instead of N - 1 passes over the whole block. The run's waits
 * are looked at first (nothing in between signals, so waiting for them
 * early cannot deadlock). Returns the number of ops done (0: op i is not
 * such a run and runs alone), or -1 while a wait is not satisfied. */
static int get_run(mrc__exec_t *x, const mrc__transport_t *t, int i,
                   int end, const void *sb, void *rb, void *xb,
                   mrc_status_t *st)
{
    const mrc__op_t *ops = x->plan.ops, *first = &ops[i];
    size_t bytes = first->count * x->elem;
    *st = MRC_OK;
    if (!first->local || bytes < 2 * (size_t)GET_TILE)
        return 0;
    int last = i;
    while (last + 2 < end && ops[last + 1].kind == MRC__WAIT &&
           ops[last + 2].kind == MRC__GET) {
        const mrc__op_t *g = &ops[last + 2];
        if (g->dst != first->dst || g->dst_off != first->dst_off ||
            g->count != first->count || g->local != first->dst ||
            g->local_off != first->dst_off)
            break;
        last += 2;
    }
    if (last == i)
        return 0;
    for (int k = i + 1; k < last; k += 2) {
        mrc__xfer_t *w = &x->xfers[k];
        if (w->done)
            continue;
        *st = t->ops->wait(t->ctx, ops[k].peer, ops[k].flag);
        if (*st == MRC_INPROGRESS) {
            *st = MRC_OK;
            return -1;
        }
        if (*st != MRC_OK)
            return 0;
        w->done = 1;
    }
    mrc_op_t rop = x->program->cfg.op == MRC_AVG ? MRC_SUM
                                                 : x->program->cfg.op;
    char *dst = buffer(first->dst, sb, rb, xb) + first->dst_off * x->elem;
    size_t tile = GET_TILE / x->elem * x->elem;
    for (size_t off = 0; off < bytes; off += tile) {
        size_t len = bytes - off < tile ? bytes - off : tile;
        for (int k = i; k <= last; k += 2) {
            const mrc__op_t *op = &ops[k];
            mrc__xfer_t *xf = &x->xfers[k];
            xf->peer = op->peer;
            xf->count = len / x->elem;
            xf->bytes = len;
            xf->dtype = x->program->cfg.dtype;
            xf->op = rop;
            xf->dst = dst + off;
            xf->local = buffer(op->local, sb, rb, xb) +
                        op->local_off * x->elem + off;
            /* The last write of a block past the caches goes around them. */
            xf->nontemporal = k == last && bytes >= (size_t)GET_NONTEMPORAL;
            xf->done = 0;
            while ((*st = t->ops->get(t->ctx, op->peer, op->src,
                                      op->src_off * x->elem + off, xf)) ==
                   MRC_INPROGRESS)
                sched_yield();
            if (*st != MRC_OK)
                return 0;
        }
    }
    return last - i + 1;
}

/* Advances one chain as far as it can go; sets *moved if it did. */
static mrc_status_t advance(mrc__exec_t *x, const mrc__transport_t *t,
                            int ch, const void *sb, void *rb, void *xb,
                            int *moved)
{
    const mrc__plan_t *pl = &x->plan;
    int begin = pl->chain_off[ch], end = pl->chain_off[ch + 1];
    mrc_status_t st;
    while (begin + x->cursor[ch] < end) {
        int i = begin + x->cursor[ch];
        const mrc__op_t *op = &pl->ops[i];
        mrc__xfer_t *xf = &x->xfers[i];
        hand_ports(x, t, op->step);
        if (op->kind == MRC__GET) {
            int done = get_run(x, t, i, end, sb, rb, xb, &st);
            if (st != MRC_OK)
                return st;
            if (done < 0)
                return MRC_OK; /* a wait of the run: later */
            if (done > 0) {
                x->cursor[ch] += done;
                *moved = 1;
                continue;
            }
        }
        switch (op->kind) {
        case MRC__SEND:
            if (!xf->posted) {
                xf->peer = op->peer;
                xf->tag = op->tag;
                xf->count = op->count;
                xf->bytes = op->count * x->elem;
                int slot = x->stage_of[i];
                const char *src = slot >= 0
                                      ? x->staging + (size_t)slot * x->slot_bytes
                                      : buffer(op->src, sb, rb, xb) +
                                            op->src_off * x->elem;
                st = t->ops->isend(t->ctx, src, xf);
                if (st == MRC_INPROGRESS)
                    return MRC_OK;
                if (st != MRC_OK)
                    return st;
                if (slot >= 0)
                    x->slot_user[slot] = i;
            }
            break;
        case MRC__RECV:
            if (!xf->posted) {
                int slot = x->stage_of[i];
                if (slot >= 0 && x->slot_user[slot] >= 0) {
                    /* The slot's last send may still be read; a transport
                     * may learn that it is done only when asked. */
                    mrc__xfer_t *last = &x->xfers[x->slot_user[slot]];
                    if (!__atomic_load_n(&last->done, __ATOMIC_ACQUIRE) &&
                        (st = t->ops->test(t->ctx, last)) != MRC_OK)
                        return st;
                    if (!__atomic_load_n(&last->done, __ATOMIC_ACQUIRE))
                        return MRC_OK;
                }
                xf->peer = op->peer;
                xf->tag = op->tag;
                xf->count = op->count;
                xf->bytes = op->count * x->elem;
                xf->dtype = x->program->cfg.dtype;
                xf->op = x->program->cfg.op == MRC_AVG ? MRC_SUM
                                                       : x->program->cfg.op;
                xf->dst = buffer(op->dst, sb, rb, xb) + op->dst_off * x->elem;
                xf->local = op->local ? buffer(op->local, sb, rb, xb) +
                                            op->local_off * x->elem
                                      : NULL;
                xf->nontemporal = x->nontemporal;
                if (slot >= 0) { /* a partial: into a cached slot */
                    xf->dst = x->staging + (size_t)slot * x->slot_bytes;
                    xf->nontemporal = 0;
                }
                st = t->ops->irecv(t->ctx, xf);
                if (st == MRC_INPROGRESS)
                    return MRC_OK;
                if (st != MRC_OK)
                    return st;
            }
            st = t->ops->test(t->ctx, xf);
            if (st != MRC_OK)
                return st;
            if (!__atomic_load_n(&xf->done, __ATOMIC_ACQUIRE))
                return MRC_OK;
            break;
        case MRC__COPY:
            (x->nontemporal ? mrc__copy_nontemporal : copy_plain)(
                buffer(op->dst, sb, rb, xb) + op->dst_off * x->elem,
                buffer(op->src, sb, rb, xb) + op->src_off * x->elem,
                op->count * x->elem);
            break;
        case MRC__SCALE:
            mrc__scale(buffer(op->dst, sb, rb, xb) + op->dst_off * x->elem,
                       op->count, x->program->cfg.dtype, x->group_size);
            break;
        case MRC__EXPOSE:
        case MRC__GET:
        case MRC__SIGNAL:
        case MRC__WAIT:
        case MRC__BARRIER:
            st = memory_op(x, t, op, xf, sb, rb, xb);
            if (st == MRC_INPROGRESS)
                return MRC_OK;
            if (st != MRC_OK)
                return st;
            break;
        case MRC__FWD: {
            int ready;
            if ((st = forward(x, t, i, &ready)) != MRC_OK)
                return st;
            if (!ready)
                return MRC_OK;
            break;
        }
        default:
            return mrc__error(MRC_ERR_INTERNAL, "unknown operation %d",
                              op->kind);
        }
        x->cursor[ch]++;
        *moved = 1;
    }
    return MRC_OK;
}

/* A chain is complete when its last op has run and every send it made has
 * been taken (so its staging slots are free for the next chain). */
/* Whether chain ch is complete; a transport's failure goes to *st. */
static int chain_complete(mrc__exec_t *x, const mrc__transport_t *t, int ch,
                          mrc_status_t *st)
{
    const mrc__plan_t *pl = &x->plan;
    if (pl->chain_off[ch] + x->cursor[ch] < pl->chain_off[ch + 1])
        return 0;
    for (int i = pl->chain_off[ch]; i < pl->chain_off[ch + 1]; i++) {
        mrc__xfer_t *xf = pl->ops[i].kind == MRC__FWD
                              ? &x->fwd_sends[x->fwd_of[i]]
                              : &x->xfers[i];
        if ((pl->ops[i].kind != MRC__SEND && pl->ops[i].kind != MRC__FWD) ||
            __atomic_load_n(&xf->done, __ATOMIC_ACQUIRE))
            continue;
        if ((*st = t->ops->test(t->ctx, xf)) != MRC_OK ||
            !__atomic_load_n(&xf->done, __ATOMIC_ACQUIRE))
            return 0;
    }
    return 1;
}

/* What the node waits for, for the timeout message. */
static mrc_status_t timed_out(const mrc__exec_t *x, double timeout_s)
{
    const mrc__plan_t *pl = &x->plan;
    for (int ch = 0; ch < pl->num_chains; ch++) {
        int i = pl->chain_off[ch] + x->cursor[ch];
        if (i < pl->chain_off[ch + 1]) {
            const mrc__op_t *op = &pl->ops[i];
            if (op->kind == MRC__FWD)
                return mrc__error(MRC_ERR_TIMEOUT,
                                  "node %d timed out after %g s at stream "
                                  "%d, step %d, relaying from node %d to "
                                  "node %d",
                                  pl->node, timeout_s, op->stream, op->step,
                                  op->from, op->peer);
            return mrc__error(MRC_ERR_TIMEOUT,
                              "node %d timed out after %g s at stream %d, "
                              "step %d, %s node %d",
                              pl->node, timeout_s, op->stream, op->step,
                              op->kind == MRC__SEND     ? "sending to"
                              : op->kind == MRC__WAIT   ? "waiting for a "
                                                          "flag of"
                              : op->kind == MRC__BARRIER ? "in a barrier "
                                                           "with"
                                                         : "waiting for",
                              op->peer);
        }
    }
    for (size_t k = 0; k < x->num_sends; k++) {
        const mrc__op_t *op = &pl->ops[x->send_list[k]];
        if (!x->xfers[x->send_list[k]].done)
            return mrc__error(MRC_ERR_TIMEOUT,
                              "node %d timed out after %g s: node %d has not "
                              "taken its data of stream %d, step %d",
                              pl->node, timeout_s, op->peer, op->stream,
                              op->step);
    }
    return mrc__error(MRC_ERR_TIMEOUT, "node %d timed out after %g s",
                      pl->node, timeout_s);
}

/* What the ranks must agree on: op only where it reduces, root only
 * where there is one. */
static mrc__call_t call_of(const mrc_compile_config_t *cfg)
{
    mrc_collective_t c = cfg->collective;
    int reducing = c == MRC_ALLREDUCE || c == MRC_REDUCE ||
                   c == MRC_REDUCE_SCATTER;
    int rooted = c == MRC_REDUCE || c == MRC_BROADCAST;
    return mrc__call_make(c, cfg->count, cfg->dtype,
                          reducing ? cfg->op : MRC_SUM,
                          rooted ? cfg->root : 0);
}

/* Publishes a memory program's buffers; waits (with the timeout) while
 * the transport still lets a peer read the window of two calls ago. */
static mrc_status_t publish(mrc__exec_t *x, const mrc__transport_t *t,
                            const void *sendbuf, void *recvbuf,
                            void *scratch, double timeout_s)
{
    if (!t->ops->publish || !t->ops->get || !t->ops->signal ||
        !t->ops->wait)
        return mrc__error(MRC_ERR_UNSUPPORTED,
                          "the %s transport cannot read peers' memory, "
                          "which %s needs",
                          t->ops->name, mrc_algo_name(x->program->cfg.algo));
    x->exposure.buf[MRC__MEM_SEND] = sendbuf;
    x->exposure.buf[MRC__MEM_RECV] = recvbuf;
    x->exposure.buf[MRC__MEM_SCRATCH] = scratch;
    void *w = NULL;
    double start = 0;
    for (unsigned spin = 0;; spin++) {
        mrc_status_t st = t->ops->publish(t->ctx, &x->exposure, &w);
        if (st != MRC_INPROGRESS) {
            x->win = w;
            return st;
        }
        if (t->ops->idle && spin % 16 == 15)
            t->ops->idle(t->ctx);
        if (spin % 64 == 63) {
            double now = now_s();
            if (start == 0)
                start = now;
            else if (timeout_s > 0 && now - start > timeout_s)
                return mrc__error(MRC_ERR_TIMEOUT,
                                  "node %d timed out after %g s: a peer "
                                  "has not ended the call before last",
                                  x->plan.node, timeout_s);
        }
        sched_yield();
    }
}

/* Looks without progress a rank spins for before it yields the core: a
 * pass over the chains (the general loop), or one op (a straight plan,
 * whose look is a few dozen instructions). Both about a microsecond:
 * long enough for a peer a few hundred nanoseconds behind on another
 * core, short enough that a peer waiting for this core (more ranks than
 * cores, or a loaded host) gets it soon: with two ranks on one core an
 * 8-byte call took 4.2 us spinning 64 looks of a straight plan, 2.9 us
 * with 32 (docs/performance.md). */
enum { SPIN_PASSES = 64, SPIN_LOOKS = 32 };

/* Nothing moved in this look: what the run loops do then. Lets the other
 * ranks run (and MPI progress, past the spin of `spin` looks: a probe
 * costs a microsecond, more than a small call's wait), and watches the
 * clock: MRC_ERR_TIMEOUT once timeout_s have passed without progress. */
static mrc_status_t stalled(mrc__exec_t *x, const mrc__transport_t *t,
                            size_t spin, size_t *idle, double *start,
                            double timeout_s)
{
    if (t->ops->idle && *idle >= spin && *idle % 16 == 15)
        t->ops->idle(t->ctx);
    if (++*idle % 64 == 0) {
        double now = now_s();
        if (*start == 0)
            *start = now;
        else if (timeout_s > 0 && now - *start > timeout_s)
            return timed_out(x, timeout_s);
    }
    /* A peer a few hundred nanoseconds behind (a small call's flag) is
     * waited for on the spot; a system call per look would cost more
     * than the wait. */
    if (*idle < spin)
        cpu_relax();
    else
        sched_yield();
    return MRC_OK;
}

/* Op i of a straight plan, but a run of gets: a local op, or a memory
 * op (MRC_INPROGRESS while it waits). */
static mrc_status_t straight_op(mrc__exec_t *x, const mrc__transport_t *t,
                                int i, const void *sb, void *rb, void *xb)
{
    const mrc__op_t *op = &x->plan.ops[i];
    switch (op->kind) {
    case MRC__COPY:
        (x->nontemporal ? mrc__copy_nontemporal : copy_plain)(
            buffer(op->dst, sb, rb, xb) + op->dst_off * x->elem,
            buffer(op->src, sb, rb, xb) + op->src_off * x->elem,
            op->count * x->elem);
        return MRC_OK;
    case MRC__SCALE:
        mrc__scale(buffer(op->dst, sb, rb, xb) + op->dst_off * x->elem,
                   op->count, x->program->cfg.dtype, x->group_size);
        return MRC_OK;
    default:
        return memory_op(x, t, op, &x->xfers[i], sb, rb, xb);
    }
}

/* A straight plan (x->straight: one chain of local and memory ops, as a
 * direct family's), after begin and publish: each op in turn, waiting on
 * the spot for the one that cannot go yet. The same ops as advance runs,
 * in the same order, without the chains' and sends' bookkeeping, which
 * cost a small call more than its data did. */
static mrc_status_t run_chain(mrc__exec_t *x, const mrc__transport_t *t,
                              const void *sb, void *rb, void *xb,
                              double timeout_s)
{
    const mrc__plan_t *pl = &x->plan;
    double start = 0;
    size_t idle = 0;
    mrc_status_t st;
    for (int i = 0; i < pl->num_ops;) {
        const mrc__op_t *op = &pl->ops[i];
        if (op->step >= x->ports_until) /* a look costs less without */
            hand_ports(x, t, op->step);
        int done = 0;
        st = MRC_OK;
        /* A run of gets (of blocks worth tiling), or 0: one alone. */
        if (op->kind == MRC__GET && op->local &&
            op->count * x->elem >= 2 * (size_t)GET_TILE) {
            done = get_run(x, t, i, pl->num_ops, sb, rb, xb, &st);
            if (st == MRC_OK && done < 0)
                st = MRC_INPROGRESS;
        }
        if (st == MRC_OK && done == 0) {
            done = 1;
            st = straight_op(x, t, i, sb, rb, xb);
        }
        /* A flag not yet set is looked at again on the spot, without the
         * way back through the op's dispatch: the look is then a load and
         * a pause, and the flag is seen sooner once it comes (a small
         * call's time is mostly this wait). */
        if (st == MRC_INPROGRESS && op->kind == MRC__WAIT) {
            do {
                st = stalled(x, t, SPIN_LOOKS, &idle, &start, timeout_s);
                if (st != MRC_OK)
                    return st;
                st = t->ops->wait(t->ctx, op->peer, op->flag);
            } while (st == MRC_INPROGRESS);
        }
        if (st == MRC_INPROGRESS) {
            st = stalled(x, t, SPIN_LOOKS, &idle, &start, timeout_s);
            if (st != MRC_OK)
                return st;
            continue;
        }
        if (st != MRC_OK)
            return st;
        x->cursor[0] = i += done;
        idle = 0;
        start = 0; /* the timeout counts time without progress */
    }
    return t->ops->end(t->ctx);
}

static mrc_status_t run(mrc__exec_t *x, const mrc__transport_t *t,
                        const mrc__call_t *as, uint64_t seq, const void *sendbuf, void *recvbuf,
                        void *scratch, double timeout_s)
{
    const mrc__plan_t *pl = &x->plan;
    memset(x->xfers, 0, (size_t)pl->num_ops * sizeof *x->xfers);
    x->cursor[0] = 0;
    /* Nobody to tell the ports (the CPU transports, no trace): no mask
     * is handed over in this call. */
    x->ports_until = t->ops->ports || mrc__log_level() >= MRC__LOG_TRACE
                         ? 0
                         : INT32_MAX;
    if (!x->straight) { /* the chains' bookkeeping, which run_chain has not */
        if (x->num_fwds)
            memset(x->fwd_sends, 0, x->num_fwds * sizeof *x->fwd_sends);
        memset(x->cursor, 0, (size_t)pl->num_chains * sizeof *x->cursor);
        memset(x->complete, 0, (size_t)pl->num_chains);
        memset(x->first_open, 0,
               (size_t)x->num_stream_ids * sizeof *x->first_open);
        for (int i = 0; i < x->num_slots; i++)
            x->slot_user[i] = -1;
    }
    mrc__call_t call = as ? *as : call_of(&x->program->cfg);
    /* The family too: ranks that chose different programs for one call
     * ($MRC_ALGO on some ranks only) disagree, and fail as such. */
    call = mrc__call_with_family(call, x->program->cfg.algo);
    mrc_status_t st = t->ops->begin(t->ctx, seq, &call, x->recvs,
                                    x->num_recvs);
    if (st != MRC_OK)
        return st;
    if (x->memory) {
        st = publish(x, t, sendbuf, recvbuf, scratch, timeout_s);
        if (st != MRC_OK)
            return st;
    }
    if (x->straight)
        return run_chain(x, t, sendbuf, recvbuf, scratch, timeout_s);
    double start = 0;
    size_t sends_left = x->num_sends, idle = 0;
    int chains_left = pl->num_chains;
    while (chains_left > 0 || sends_left > 0) {
        int moved = 0;
        chains_left = 0;
        for (int ch = 0; ch < pl->num_chains; ch++) {
            if (x->complete[ch])
                continue;
            int sid = x->chain_group[ch];
            if (x->staging && !x->relay_chain[ch] &&
                x->chain_rank[ch] >= x->first_open[sid] + x->window) {
                chains_left++; /* outside its stream's window for now */
                continue;
            }
            if (pl->chain_off[ch] + x->cursor[ch] < pl->chain_off[ch + 1]) {
                st = advance(x, t, ch, sendbuf, recvbuf, scratch, &moved);
                if (st != MRC_OK)
                    return st;
            }
            int complete = chain_complete(x, t, ch, &st);
            if (st != MRC_OK)
                return st;
            if (complete) {
                x->complete[ch] = 1;
                moved = 1;
                /* The window starts at the stream's first open chain. */
                int first = ch - x->chain_rank[ch];
                while (first + x->first_open[sid] < pl->num_chains &&
                       x->chain_group[first + x->first_open[sid]] == sid &&
                       x->complete[first + x->first_open[sid]])
                    x->first_open[sid]++;
                continue;
            }
            chains_left++;
        }
        while (sends_left > 0) {
            mrc__xfer_t *xf = &x->xfers[x->send_list[sends_left - 1]];
            if (!xf->posted)
                break;
            if (!__atomic_load_n(&xf->done, __ATOMIC_ACQUIRE)) {
                st = t->ops->test(t->ctx, xf);
                if (st != MRC_OK)
                    return st;
                if (!__atomic_load_n(&xf->done, __ATOMIC_ACQUIRE))
                    break;
            }
            sends_left--;
            moved = 1;
        }
        if (moved) {
            idle = 0;
            start = 0; /* the timeout counts time without progress */
            continue;
        }
        st = stalled(x, t, SPIN_PASSES, &idle, &start, timeout_s);
        if (st != MRC_OK)
            return st;
    }
    return t->ops->end(t->ctx);
}

mrc_status_t mrc__exec_run(mrc__exec_t *x, const mrc__transport_t *t,
                           const mrc__call_t *call, uint64_t seq,
                           const void *sendbuf, void *recvbuf, void *scratch,
                           double timeout_s)
{
    mrc_status_t st = run(x, t, call, seq, sendbuf, recvbuf, scratch, timeout_s);
    /* A peer may still be reading this rank's buffers, which the caller
     * is free to release once we return. */
    if (st != MRC_OK && t->ops->cancel)
        t->ops->cancel(t->ctx, st);
    return st;
}
