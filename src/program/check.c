/*
 * The checker: an abstract run of every node's program, without data.
 *
 * Each node's chains run as the executor runs them: a SEND is posted and
 * the chain moves on, a RECV waits until the matching SEND (same sender,
 * receiver and tag) has been posted. Rounds repeat until nothing moves;
 * a chain that has not finished then waits forever (a deadlock), and a
 * send nobody received is an error too. Element counts of every matched
 * pair must agree.
 *
 * Contributions are tracked per buffer region as a count and a signature
 * (the wrapping sum of a random 64-bit value per group rank): a reduction
 * adds both, a copy moves them. At the end every output region must hold
 * exactly one contribution from each node it should (all of the group,
 * or for allgather and broadcast the one owner): the count catches
 * missing and doubled contributions, the signature which ones. Chunks
 * repeat their fragment's dataflow, so the run uses whole fragments.
 */
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"

enum { DATAFLOW_MAX_GROUP = 1024 };

typedef struct contrib {
    uint64_t sig;
    uint64_t count;
} contrib_t;

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A posted send: who, to whom, which tag, what it carries. */
typedef struct posting {
    int32_t src, dst;
    uint64_t tag;
    uint64_t count;
    contrib_t data;
    int32_t step, stream;
    uint8_t used, consumed;
} posting_t;

typedef struct table {
    posting_t *slots;
    size_t cap;
} table_t;

static size_t slot_of(const table_t *t, int src, int dst, uint64_t tag)
{
    uint64_t h = mix(((uint64_t)(uint32_t)src << 32 | (uint32_t)dst) ^
                     mix(tag));
    size_t i = (size_t)h & (t->cap - 1);
    while (t->slots[i].used &&
           !(t->slots[i].src == src && t->slots[i].dst == dst &&
             t->slots[i].tag == tag))
        i = (i + 1) & (t->cap - 1);
    return i;
}

typedef struct checker {
    const mrc_program_t *p;
    mrc__plan_t *plans; /* [num_nodes] */
    int32_t *cursor;    /* per node per chain, flattened */
    int32_t *cursor_off;
    contrib_t **state;  /* per node: [streams of group][N][2 buffers] */
    int dataflow;
    table_t sent;
} checker_t;

/* The state cell of (node, stream, fragment, buffer); NULL for the send
 * buffer (read-only: the node's own contribution). */
static contrib_t *cell(checker_t *c, int u, int k, int f, int buf)
{
    if (!c->dataflow || buf == MRC__BUF_SEND || buf == MRC__BUF_NONE)
        return NULL;
    const mrc__group_t *g = &c->p->groups[c->p->nodes[u].group];
    size_t i = ((size_t)(k - g->first_stream) * (size_t)g->size + (size_t)f) *
                   2 +
               (buf == MRC__BUF_SCRATCH);
    return &c->state[u][i];
}

static contrib_t read_buf(checker_t *c, int u, int k, int f, int buf)
{
    contrib_t own = {mix((uint64_t)c->p->nodes[u].rank), 1};
    contrib_t *x = cell(c, u, k, f, buf);
    return x ? *x : own;
}

static void free_checker(checker_t *c)
{
    if (c->plans)
        for (int u = 0; u < c->p->num_nodes; u++)
            mrc__plan_free(&c->plans[u]);
    if (c->state)
        for (int u = 0; u < c->p->num_nodes; u++)
            free(c->state[u]);
    free(c->plans);
    free(c->state);
    free(c->cursor);
    free(c->cursor_off);
    free(c->sent.slots);
}

/* Runs one op if it can; 1 if it ran, 0 if it must wait, -1 on error. */
static int step_op(checker_t *c, int u, const mrc__op_t *op)
{
    if (op->kind == MRC__SEND) {
        size_t i = slot_of(&c->sent, u, op->peer, op->tag);
        posting_t *s = &c->sent.slots[i];
        if (s->used) {
            mrc__error(MRC_ERR_INVALID_PROGRAM,
                       "node %d, stream %d, step %d: sends tag %llx to node "
                       "%d twice",
                       u, op->stream, op->step, (unsigned long long)op->tag,
                       op->peer);
            return -1;
        }
        *s = (posting_t){u, op->peer, op->tag, op->count,
                         read_buf(c, u, op->stream, op->frag, op->src),
                         op->step, op->stream, 1, 0};
        return 1;
    }
    if (op->kind == MRC__RECV) {
        size_t i = slot_of(&c->sent, op->peer, u, op->tag);
        posting_t *s = &c->sent.slots[i];
        if (!s->used)
            return 0;
        if (s->consumed) {
            mrc__error(MRC_ERR_INVALID_PROGRAM,
                       "node %d, stream %d, step %d: receives node %d's "
                       "message twice",
                       u, op->stream, op->step, op->peer);
            return -1;
        }
        if (s->count != op->count) {
            mrc__error(MRC_ERR_INVALID_PROGRAM,
                       "node %d, stream %d, step %d: receives %llu elements "
                       "from node %d, which sends %llu",
                       u, op->stream, op->step,
                       (unsigned long long)op->count, op->peer,
                       (unsigned long long)s->count);
            return -1;
        }
        s->consumed = 1;
        contrib_t *dst = cell(c, u, op->stream, op->frag, op->dst);
        if (dst) {
            contrib_t v = s->data;
            if (op->local) {
                contrib_t l = read_buf(c, u, op->stream, op->frag, op->local);
                v.sig += l.sig;
                v.count += l.count;
            }
            *dst = v;
        }
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
    uint64_t all = 0;
    for (int r = 0; r < n; r++)
        all += mix((uint64_t)r);
    switch (p->cfg.collective) {
    case MRC_ALLREDUCE:
        *want = (contrib_t){all, (uint64_t)n};
        return 1;
    case MRC_REDUCE_SCATTER:
        *want = (contrib_t){all, (uint64_t)n};
        return f == (ns->pos + 1) % n;
    case MRC_ALLGATHER: {
        int owner = p->nodes[mrc__stream_node(p, k, f)].rank;
        *want = (contrib_t){mix((uint64_t)owner), 1};
        return 1;
    }
    case MRC_REDUCE:
        *want = (contrib_t){all, (uint64_t)n};
        return p->nodes[u].rank == p->cfg.root && f == 0;
    default: /* broadcast */
        *want = (contrib_t){mix((uint64_t)p->cfg.root), 1};
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
    return len / n + ((uint64_t)f < len % n);
}

static mrc_status_t check_outputs(checker_t *c)
{
    const mrc_program_t *p = c->p;
    for (int u = 0; u < p->num_nodes; u++) {
        int gi = p->nodes[u].group;
        if (gi < 0)
            continue;
        const mrc__group_t *g = &p->groups[gi];
        int frags = p->addressing == MRC__ADDR_WHOLE ? 1 : g->size;
        for (int k = g->first_stream; k < g->first_stream + g->num_streams;
             k++)
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

mrc_status_t mrc_program_check(const mrc_program_t *p)
{
    if (!p)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_program_check: NULL");
    checker_t c;
    memset(&c, 0, sizeof c);
    c.p = p;
    mrc_status_t st = MRC_OK;
    int n = p->num_nodes;
    c.plans = calloc((size_t)n, sizeof *c.plans);
    c.state = calloc((size_t)n, sizeof *c.state);
    c.cursor_off = calloc((size_t)n + 1, sizeof *c.cursor_off);
    if (!c.plans || !c.state || !c.cursor_off)
        goto oom;
    c.dataflow = 1;
    for (int g = 0; g < p->num_groups; g++)
        if (p->groups[g].size > DATAFLOW_MAX_GROUP)
            c.dataflow = 0;
    size_t sends = 0;
    for (int u = 0; u < n; u++) {
        st = mrc__plan_build(p, u, UINT64_MAX, 0, &c.plans[u]);
        if (st != MRC_OK)
            goto done;
        c.cursor_off[u + 1] = c.cursor_off[u] + c.plans[u].num_chains;
        for (int i = 0; i < c.plans[u].num_ops; i++)
            sends += c.plans[u].ops[i].kind == MRC__SEND;
        int gi = p->nodes[u].group;
        if (c.dataflow && gi >= 0) {
            const mrc__group_t *g = &p->groups[gi];
            c.state[u] = calloc((size_t)g->num_streams * (size_t)g->size * 2 +
                                    1,
                                sizeof(contrib_t));
            if (!c.state[u])
                goto oom;
        }
    }
    c.sent.cap = 16;
    while (c.sent.cap < 2 * sends + 2)
        c.sent.cap *= 2;
    c.sent.slots = calloc(c.sent.cap, sizeof *c.sent.slots);
    c.cursor = calloc((size_t)c.cursor_off[n] + 1, sizeof *c.cursor);
    if (!c.sent.slots || !c.cursor)
        goto oom;

    for (int moved = 1; moved;) {
        moved = 0;
        for (int u = 0; u < n; u++) {
            const mrc__plan_t *pl = &c.plans[u];
            for (int ch = 0; ch < pl->num_chains; ch++) {
                int32_t *cur = &c.cursor[c.cursor_off[u] + ch];
                int end = pl->chain_off[ch + 1] - pl->chain_off[ch];
                while (*cur < end) {
                    int r = step_op(&c, u, &pl->ops[pl->chain_off[ch] + *cur]);
                    if (r < 0) {
                        st = MRC_ERR_INVALID_PROGRAM;
                        goto done;
                    }
                    if (r == 0)
                        break;
                    (*cur)++;
                    moved = 1;
                }
            }
        }
    }
    for (int u = 0; u < n; u++) {
        const mrc__plan_t *pl = &c.plans[u];
        for (int ch = 0; ch < pl->num_chains; ch++) {
            int cur = c.cursor[c.cursor_off[u] + ch];
            if (cur < pl->chain_off[ch + 1] - pl->chain_off[ch]) {
                const mrc__op_t *op = &pl->ops[pl->chain_off[ch] + cur];
                st = mrc__error(MRC_ERR_INVALID_PROGRAM,
                                "deadlock: node %d, stream %d, step %d waits "
                                "for node %d, which never sends it (tag "
                                "%llx)",
                                u, op->stream, op->step, op->peer,
                                (unsigned long long)op->tag);
                goto done;
            }
        }
    }
    for (size_t i = 0; i < c.sent.cap; i++) {
        const posting_t *s = &c.sent.slots[i];
        if (s->used && !s->consumed) {
            st = mrc__error(MRC_ERR_INVALID_PROGRAM,
                            "node %d, stream %d, step %d: sends to node %d, "
                            "which never receives it",
                            s->src, s->stream, s->step, s->dst);
            goto done;
        }
    }
    if (c.dataflow)
        st = check_outputs(&c);
done:
    free_checker(&c);
    return st;
oom:
    free_checker(&c);
    return mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking the "
                                         "program");
}
