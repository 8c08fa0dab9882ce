/*
 * The checker's abstract run of programs that pass messages, without
 * data. Each node's chains run as the executor runs them: a SEND is
 * posted and the chain moves on, a RECV waits until the matching SEND
 * (same sender, receiver and tag) has been posted. Rounds repeat until
 * nothing moves; a chain that has not finished then waits forever (a
 * deadlock), and a send nobody received is an error too. Element counts
 * of every matched pair must agree.
 *
 * Contributions are tracked per buffer region as a count and a signature
 * (the wrapping sum of a random 64-bit value per group rank): a reduction
 * adds both, a copy moves them. At the end every output region must hold
 * exactly one contribution from each node it should (all of the group,
 * or for allgather and broadcast the one owner): the count catches
 * missing and doubled contributions, the signature which ones. Chunks
 * repeat their fragment's dataflow, so the run uses whole fragments.
 *
 * Operations are generated lazily, chain by chain, and a send is held only
 * until it is received, so memory grows with the contribution states
 * (nodes x streams x fragments).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"
#include "ring_math.h"

typedef struct contrib {
    uint64_t sig;
    uint64_t count;
} contrib_t;

typedef mrc__cursor_t chain_t;

typedef struct checker {
    const mrc_program_t *p;
    chain_t *chains;
    int num_chains;
    mrc__msgmap_t waiting; /* blocked receives: key -> chain (i[0]) */
    int32_t *ready;        /* chains to run: a stack */
    int num_ready;
    contrib_t **state;  /* per node: [streams of group][fragments][2] */
    const uint8_t *run; /* per group: 1 if its chains run here */
    uint64_t *all;      /* per group: the signature of all its ranks */
    /* Posted sends not yet received: w[0] elements, w[1] signature,
     * w[2] contribution count, i[0] step, i[1] stream, i[2] fragment. */
    mrc__msgmap_t sent;
} checker_t;

/* Fragments of each stream of a group. */
static int frags_of(const mrc_program_t *p, const mrc__group_t *g)
{
    return p->addressing == MRC__ADDR_WHOLE ? 1 : g->size;
}

/* The state cell of (node, stream, fragment, buffer); NULL for the send
 * buffer (read-only: the node's own contribution). */
static contrib_t *cell(checker_t *c, int u, int k, int f, int buf)
{
    if (buf == MRC__BUF_SEND || buf == MRC__BUF_NONE)
        return NULL;
    const mrc__group_t *g = &c->p->groups[c->p->nodes[u].group];
    size_t i = ((size_t)(k - g->first_stream) * (size_t)frags_of(c->p, g) +
                (size_t)f) *
                   2 +
               (buf == MRC__BUF_SCRATCH);
    return &c->state[u][i];
}

static contrib_t read_buf(checker_t *c, int u, int k, int f, int buf)
{
    contrib_t own = {mrc__mix64((uint64_t)c->p->nodes[u].rank), 1};
    contrib_t *x = cell(c, u, k, f, buf);
    return x ? *x : own;
}

static void free_checker(checker_t *c)
{
    if (c->state)
        for (int u = 0; u < c->p->num_nodes; u++)
            free(c->state[u]);
    free(c->state);
    free(c->all);
    free(c->chains);
    free(c->ready);
    mrc__msgmap_free(&c->sent);
    mrc__msgmap_free(&c->waiting);
}

/* The node an op waits for a message from (RECV, FWD), or -1. */
static int waits_on(const mrc__op_t *op)
{
    return op->kind == MRC__FWD    ? op->from
           : op->kind == MRC__RECV ? op->peer
                                   : -1;
}

/* Posts u's message of op to op->peer (a send, or a relay's forward:
 * `verb` says which); NULL (the error set) if one with its tag is
 * already on its way, or out of memory. */
static mrc__msg_t *post(checker_t *c, int u, const mrc__op_t *op,
                        const char *verb)
{
    if (*mrc__msgmap_find(&c->sent, u, op->peer, op->tag) >= 0) {
        mrc__error(MRC_ERR_INVALID_PROGRAM,
                   "node %d, stream %d, step %d: %s tag %llx to node %d "
                   "twice",
                   u, op->stream, op->step, verb, (unsigned long long)op->tag,
                   op->peer);
        return NULL;
    }
    mrc__msg_t *s = mrc__msgmap_add(&c->sent, u, op->peer, op->tag);
    if (!s)
        mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking");
    return s;
}

/* Wakes the chain that waits for u's message of op, if one does. */
static void wake(checker_t *c, int u, const mrc__op_t *op)
{
    int32_t *w = mrc__msgmap_find(&c->waiting, u, op->peer, op->tag);
    if (*w >= 0) {
        c->ready[c->num_ready++] = c->waiting.pool[*w].i[0];
        mrc__msgmap_remove(&c->waiting, w);
    }
}

/* A relay takes the message from the route's previous node and posts it,
 * payload and all, to the next: the signature travels unchanged, so the
 * receiver's dataflow is the sender's, and a relay that never forwards
 * leaves the receiver waiting (a deadlock) and the message unreceived. */
static int forward(checker_t *c, int u, const mrc__op_t *op)
{
    int32_t *link = mrc__msgmap_find(&c->sent, op->from, u, op->tag);
    if (*link < 0)
        return 0;
    mrc__msg_t in = c->sent.pool[*link];
    if (in.w[0] != op->count) {
        mrc__error(MRC_ERR_INVALID_PROGRAM,
                   "node %d, stream %d, step %d: relays %llu elements from "
                   "node %d, which sends %llu",
                   u, op->stream, op->step, (unsigned long long)op->count,
                   op->from, (unsigned long long)in.w[0]);
        return -1;
    }
    mrc__msgmap_remove(&c->sent, link);
    mrc__msg_t *s = post(c, u, op, "relays");
    if (!s)
        return -1;
    memcpy(s->w, in.w, sizeof s->w);
    memcpy(s->i, in.i, sizeof s->i);
    wake(c, u, op);
    return 1;
}

/* A posted message that nobody received, or NULL. */
static const mrc__msg_t *untaken(checker_t *c)
{
    for (int32_t i = 0; c->sent.live > 0 && i < c->sent.num; i++) {
        /* Live entries are the ones reachable from a bucket. */
        const mrc__msg_t *s = &c->sent.pool[i];
        if (*mrc__msgmap_find(&c->sent, s->src, s->dst, s->tag) == i)
            return s;
    }
    return NULL;
}

/* Runs one op if it can; 1 if it ran, 0 if it must wait, -1 on error. */
static int step_op(checker_t *c, int u, const mrc__op_t *op)
{
    if (op->kind == MRC__FWD)
        return forward(c, u, op);
    if (op->kind == MRC__SEND) {
        mrc__msg_t *s = post(c, u, op, "sends");
        if (!s)
            return -1;
        contrib_t data = read_buf(c, u, op->stream, op->frag, op->src);
        s->w[0] = op->count;
        s->w[1] = data.sig;
        s->w[2] = data.count;
        s->i[0] = op->step;
        s->i[1] = op->stream;
        s->i[2] = op->frag;
        wake(c, u, op);
        return 1;
    }
    if (op->kind == MRC__RECV) {
        int32_t *link = mrc__msgmap_find(&c->sent, op->peer, u, op->tag);
        if (*link < 0)
            return 0;
        mrc__msg_t *s = &c->sent.pool[*link];
        if (s->w[0] != op->count) {
            mrc__error(MRC_ERR_INVALID_PROGRAM,
                       "node %d, stream %d, step %d: receives %llu elements "
                       "from node %d, which sends %llu",
                       u, op->stream, op->step, (unsigned long long)op->count,
                       op->peer, (unsigned long long)s->w[0]);
            return -1;
        }
        /* Contributions are per node, not per fragment: a fragment
         * received into another (of the same length) would look right. */
        if (s->i[2] != op->frag) {
            mrc__error(MRC_ERR_INVALID_PROGRAM,
                       "node %d, stream %d, step %d: receives fragment %d "
                       "from node %d, which sends fragment %d",
                       u, op->stream, op->step, op->frag, op->ring_peer,
                       s->i[2]);
            return -1;
        }
        contrib_t *dst = cell(c, u, op->stream, op->frag, op->dst);
        if (dst) {
            contrib_t v = {s->w[1], s->w[2]};
            if (op->local) {
                contrib_t l = read_buf(c, u, op->stream, op->frag, op->local);
                v.sig += l.sig;
                v.count += l.count;
            }
            *dst = v;
        }
        mrc__msgmap_remove(&c->sent, link);
        return 1;
    }
    if (op->kind == MRC__COPY) {
        contrib_t *dst = cell(c, u, op->stream, op->frag, op->dst);
        if (dst)
            *dst = read_buf(c, u, op->stream, op->frag, op->src);
    }
    return 1; /* COPY, SCALE: local */
}

/* What an output region of node u, stream k, fragment f must hold; 0 if
 * it is not an output. */
static int expected(const checker_t *c, int u, int k, int f, contrib_t *want)
{
    const mrc_program_t *p = c->p;
    const mrc__group_t *g = &p->groups[p->nodes[u].group];
    int n = g->size;
    const mrc__node_stream_t *ns = mrc__node_stream(p, u, k);
    uint64_t all = c->all[p->nodes[u].group];
    switch (p->cfg.collective) {
    case MRC_ALLREDUCE: *want = (contrib_t){all, (uint64_t)n}; return 1;
    case MRC_REDUCE_SCATTER:
        *want = (contrib_t){all, (uint64_t)n};
        return f == mrc__ring_next(ns->pos, n);
    case MRC_ALLGATHER: {
        int owner = p->nodes[mrc__stream_node(p, k, f)].rank;
        *want = (contrib_t){mrc__mix64((uint64_t)owner), 1};
        return 1;
    }
    case MRC_REDUCE:
        *want = (contrib_t){all, (uint64_t)n};
        return p->nodes[u].rank == p->cfg.root && f == 0;
    default: /* broadcast */
        *want = (contrib_t){mrc__mix64((uint64_t)p->cfg.root), 1};
        return f == 0;
    }
}

/* Elements of fragment f of stream k (0: nothing to check). */
static uint64_t fragment_len(const mrc_program_t *p, int k, int f)
{
    uint64_t len = p->streams[k].slice_len;
    if (p->addressing != MRC__ADDR_SPLIT)
        return len;
    uint64_t n = (uint64_t)mrc__stream_size(p, k);
    return mrc__split_len(len, n, (uint64_t)f);
}

static mrc_status_t check_outputs(checker_t *c)
{
    const mrc_program_t *p = c->p;
    for (int u = 0; u < p->num_nodes; u++) {
        int gi = p->nodes[u].group;
        if (gi < 0 || !c->run[gi])
            continue;
        const mrc__group_t *g = &p->groups[gi];
        int frags = frags_of(p, g);
        for (int k = g->first_stream; k < g->first_stream + g->num_streams; k++)
            for (int f = 0; f < frags; f++) {
                contrib_t want;
                if (!expected(c, u, k, f, &want) || !fragment_len(p, k, f))
                    continue;
                contrib_t have = *cell(c, u, k, f, MRC__BUF_RECV);
                if (have.count != want.count || have.sig != want.sig)
                    return mrc__error(
                        MRC_ERR_INVALID_PROGRAM,
                        "node %d (rank %d), stream %d, fragment %d: the "
                        "output holds %llu contributions where it needs %llu"
                        "%s",
                        u, p->nodes[u].rank, k, f,
                        (unsigned long long)have.count,
                        (unsigned long long)want.count,
                        have.count == want.count
                            ? " (some node's twice, another's missing)"
                            : "");
            }
    }
    return MRC_OK;
}

void mrc__check_run_cost(const mrc_program_t *p, const uint8_t *run,
                         uint64_t *ops, uint64_t *bytes)
{
    *ops = *bytes = 0;
    for (int g = 0; g < p->num_groups; g++) {
        if (!run[g])
            continue;
        const mrc__group_t *gr = &p->groups[g];
        uint64_t chains, per_node;
        mrc__plan_bound(p, g, UINT64_MAX, &chains, &per_node);
        *ops = mrc__sat_mul_add(per_node, (uint64_t)gr->size, *ops);
        *bytes = mrc__sat_mul_add((uint64_t)gr->num_streams *
                                      (uint64_t)frags_of(p, gr) * 2 *
                                      sizeof(contrib_t),
                                  (uint64_t)gr->size, *bytes);
    }
}

static mrc_status_t oom(void)
{
    return mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking the "
                                         "program");
}

/* The state of every node of the groups that run, and their chains:
 * one per node and stream (whole fragments: one chunk), and one per
 * relay of a routed hop (but node drop's). */
static mrc_status_t start_chains(checker_t *c, int drop,
                                 const int32_t *relay_first,
                                 const mrc__relay_t *relays)
{
    const mrc_program_t *p = c->p;
    const uint8_t *run = c->run;
    int n = p->num_nodes;
    size_t chains = (size_t)relay_first[n];
    for (int u = 0; u < n; u++)
        if (p->nodes[u].group >= 0 && run[p->nodes[u].group])
            chains += (size_t)p->groups[p->nodes[u].group].num_streams;
    c->chains = calloc(chains + 1, sizeof *c->chains);
    c->ready = malloc((chains + 1) * sizeof *c->ready);
    if (!c->chains || !c->ready || mrc__msgmap_init(&c->sent, chains) ||
        mrc__msgmap_init(&c->waiting, chains))
        return oom();
    for (int u = 0; u < n; u++) {
        int gi = p->nodes[u].group;
        if (gi < 0 || !run[gi])
            continue;
        const mrc__group_t *g = &p->groups[gi];
        for (int k = g->first_stream; k < g->first_stream + g->num_streams; k++)
            if (mrc__stream_chunks(p, k, UINT64_MAX) > 0)
                mrc__cursor_begin(&c->chains[c->num_chains++], p, u, k, 0, 1,
                                  0);
        c->state[u] =
            calloc((size_t)g->num_streams * (size_t)frags_of(p, g) * 2 + 1,
                   sizeof(contrib_t));
        if (!c->state[u])
            return oom();
    }
    for (int u = 0; u < n; u++)
        for (int i = relay_first[u]; i < relay_first[u + 1]; i++)
            if (u != drop && run[p->streams[relays[i].stream].group] &&
                mrc__stream_chunks(p, relays[i].stream, UINT64_MAX) > 0)
                mrc__cursor_begin_relay(&c->chains[c->num_chains++], p, u,
                                        &relays[i], 0, 1);
    return MRC_OK;
}

/* Runs ready chains until each is done or waits for a message; a send
 * wakes its receiver's chain. */
static mrc_status_t run_ready(checker_t *c)
{
    mrc_status_t st = MRC_OK;
    for (int i = 0; i < c->num_chains; i++)
        c->ready[c->num_ready++] = i;
    while (c->num_ready > 0) {
        int i = c->ready[--c->num_ready];
        chain_t *ch = &c->chains[i];
        while (!ch->done) {
            int r = mrc__cursor_peek(ch, &st);
            if (r < 0)
                return st;
            if (r == 0)
                break;
            r = step_op(c, ch->it.at, &ch->op);
            if (r < 0)
                return MRC_ERR_INVALID_PROGRAM;
            if (r == 0) { /* wait for the message */
                mrc__msg_t *w = mrc__msgmap_add(&c->waiting, waits_on(&ch->op),
                                                ch->it.at, ch->op.tag);
                if (!w)
                    return oom();
                w->i[0] = i;
                break;
            }
            mrc__cursor_take(ch);
        }
    }
    return MRC_OK;
}

/* After the run: a chain that never finished (a deadlock) or a message
 * nobody received is an error. */
static mrc_status_t check_finished(checker_t *c)
{
    for (int i = 0; i < c->num_chains; i++) {
        const chain_t *ch = &c->chains[i];
        if (ch->done)
            continue;
        /* The chain stuck first may be far from the cause: a message
         * nobody takes (a relay that never forwards, a wrong peer)
         * names it. */
        char lost[128] = "";
        const mrc__msg_t *s = untaken(c);
        if (s)
            snprintf(lost, sizeof lost,
                     "; node %d's message of stream %d, step %d to node "
                     "%d is never received",
                     s->src, s->i[1], s->i[0], s->dst);
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "deadlock: node %d, stream %d, step %d waits for "
                          "node %d, which never sends it (tag %llx)%s%s",
                          ch->it.at, ch->op.stream, ch->op.step,
                          waits_on(&ch->op), (unsigned long long)ch->op.tag,
                          ch->op.kind == MRC__FWD ? " to relay" : "", lost);
    }
    const mrc__msg_t *s = untaken(c);
    if (s)
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "node %d, stream %d, step %d: sends to node %d, "
                          "which never receives it",
                          s->src, s->i[1], s->i[0], s->dst);
    return MRC_OK;
}

mrc_status_t mrc__check_run(const mrc_program_t *p, int drop,
                            const uint8_t *run)
{
    int any = 0;
    for (int g = 0; g < p->num_groups && !any; g++)
        any = run[g];
    if (!any)
        return MRC_OK;
    checker_t c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.run = run;
    int32_t *relay_first = NULL;
    mrc__relay_t *relays = NULL;
    c.state = calloc((size_t)p->num_nodes, sizeof *c.state);
    c.all = calloc((size_t)p->num_groups + 1, sizeof *c.all);
    mrc_status_t st = !c.state || !c.all ? oom() : MRC_OK;
    for (int g = 0; st == MRC_OK && g < p->num_groups; g++)
        for (int r = 0; run[g] && r < p->groups[g].size; r++)
            c.all[g] += mrc__mix64((uint64_t)r);
    if (st == MRC_OK)
        st = mrc__relay_index(p, &relay_first, &relays);
    if (st == MRC_OK)
        st = start_chains(&c, drop, relay_first, relays);
    if (st == MRC_OK)
        st = run_ready(&c);
    if (st == MRC_OK)
        st = check_finished(&c);
    if (st == MRC_OK)
        st = check_outputs(&c);
    free_checker(&c);
    free(relay_first);
    free(relays);
    return st;
}
