/*
 * The checker of programs with memory-semantic instructions (the direct
 * families): an abstract run, without data, of every node's one chain,
 * with vector clocks for the order that signals, waits and barriers put
 * between the nodes.
 *
 * What it proves, for the buffers as aliased in place and not:
 *   - nothing deadlocks: every WAIT meets its SIGNAL, every node reaches
 *     every BARRIER of its group; no flag is signalled twice in a call;
 *   - every GET reads what it means to: a peer's window region only after
 *     the peer's EXPOSE of it happened before the read; a peer's buffer
 *     only once exposed by reference, and after the peer's last write to
 *     the region happened before the read;
 *   - no write races a read: when a node writes a region (its buffers or
 *     its window), every peer's earlier read of it happened before the
 *     write; and a node ends only when every peer's read of its buffers
 *     happened before (the window stays readable to the end of the call:
 *     the transport keeps it, see transport.h);
 *   - every output region holds exactly one contribution of each node it
 *     should (a count and a signature, as in check.c).
 * Sends and receives (the hier family's leaders) carry their sender's
 * clock and contributions to the receive that takes them.
 * Accepts: groups of up to MRC__MEM_MAX_GROUP nodes (N^2 gets in all; the
 * direct families are for hosts). Limits: regions are whole fragments.
 */
#include <stdlib.h>
#include <string.h>

#include "check_memory.h"

/* The contributions of a region as node u reads it: the input of u for
 * the send buffer not written in place. */
static mrc__mem_region_t value(mrc__mem_check_t *c, int u, int buf, int f)
{
    if (buf == MRC__BUF_SEND && !c->in_place) {
        mrc__mem_region_t own = {mrc__mix64((uint64_t)mrc__mem_rank(c, u)), 1,
                                 -1, -1};
        return own;
    }
    return *mrc__mem_region(c, u, buf, f);
}

/* u writes region r (its op index idx): every read by a peer must have
 * happened before. */
static int write_region(mrc__mem_check_t *c, int u, mrc__mem_region_t *r,
                        int buf, int f)
{
    mrc__mem_node_t *nu = &c->nodes[u];
    for (int32_t i = r->reads; i >= 0; i = c->pool[i].next) {
        const mrc__mem_read_t *rr = &c->pool[i];
        int peer =
            c->p->members[c->p->groups[c->p->nodes[u].group].first_member +
                          rr->reader];
        if (nu->vc[rr->reader] <= rr->idx) {
            mrc__error(MRC_ERR_INVALID_PROGRAM,
                       "%snode %d writes fragment %d of its buffer %d%s %d%s",
                       c->in_place ? "in place: " : "", u, f, buf,
                       rr->msg >= 0 ? ", which it sent to node" : " while node",
                       peer,
                       rr->msg >= 0 ? ", before that node's receive is known "
                                      "to have happened"
                                    : " may still read it: no signal orders "
                                      "the read before the write");
            return -1;
        }
    }
    r->reads = -1;
    r->last_w = nu->idx;
    return 0;
}

static int add_read(mrc__mem_check_t *c, mrc__mem_region_t *r, int reader,
                    int32_t idx)
{
    if (mrc__grow((void **)&c->pool, &c->cap_reads, c->num_reads + 1,
                  sizeof *c->pool)) {
        mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking");
        return -1;
    }
    c->pool[c->num_reads] = (mrc__mem_read_t){reader, idx, r->reads, -1};
    r->reads = c->num_reads++;
    return 0;
}

static void merge(int32_t *into, const int32_t *from, int n)
{
    for (int i = 0; i < n; i++)
        if (from[i] > into[i])
            into[i] = from[i];
}

/* Sets flag f of node u (a copy of its clock, this op included). */
static int signal_flag(mrc__mem_check_t *c, int u, int f, int n)
{
    mrc__mem_node_t *nu = &c->nodes[u];
    if (f >= MRC__MEM_FLAGS || nu->sig[f]) {
        mrc__error(MRC_ERR_INVALID_PROGRAM,
                   "node %d signals flag %d twice in one call (or a flag "
                   "past %d)",
                   u, f % MRC__MEM_BARRIER_FLAG, MRC__MEM_BARRIER_FLAG - 1);
        return -1;
    }
    nu->sig[f] = malloc((size_t)n * sizeof *nu->sig[f]);
    if (!nu->sig[f]) {
        mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking");
        return -1;
    }
    memcpy(nu->sig[f], nu->vc, (size_t)n * sizeof *nu->vc);
    nu->sig[f][mrc__mem_rank(c, u)] = nu->idx + 1;
    return 0;
}

/* What a GET or RECV of u brings (data), reduced with its local operand
 * if it has one, into its destination: a write of u's. */
static int deliver(mrc__mem_check_t *c, int u, const mrc__op_t *op, int f,
                   mrc__mem_region_t data)
{
    if (op->local) {
        mrc__mem_region_t l = value(c, u, op->local, f);
        data.sig += l.sig;
        data.count += l.count;
    }
    mrc__mem_region_t *dst = mrc__mem_region(c, u, op->dst, f);
    if (write_region(c, u, dst, op->dst, f) < 0)
        return -1;
    dst->sig = data.sig;
    dst->count = data.count;
    return 0;
}

/* A GET by u: checks the order and moves the contributions. */
static int get(mrc__mem_check_t *c, int u, const mrc__op_t *op, int n)
{
    mrc__mem_node_t *nu = &c->nodes[u];
    int v = op->peer, vr = mrc__mem_rank(c, v), f = op->frag;
    mrc__mem_node_t *nv = &c->nodes[v];
    mrc__mem_region_t *src = mrc__mem_region(c, v, op->src, f);
    int cb = mrc__mem_canon(c, op->src);
    if (op->src == MRC__BUF_WINDOW) {
        if (src->last_w < 0 || (v != u && nu->vc[vr] <= src->last_w)) {
            mrc__error(MRC_ERR_INVALID_PROGRAM,
                       "node %d gets fragment %d of node %d's window before "
                       "node %d exposed it there (or without waiting for "
                       "its signal)",
                       u, f, v, v);
            return -1;
        }
    } else if (v != u &&
               (nv->exposed[cb] < 0 || nu->vc[vr] <= nv->exposed[cb] ||
                (src->last_w >= 0 && nu->vc[vr] <= src->last_w))) {
        mrc__error(MRC_ERR_INVALID_PROGRAM,
                   "node %d gets fragment %d of node %d's buffer %d before "
                   "node %d exposed it, or before its last write to it "
                   "(no signal orders them)",
                   u, f, v, op->src, v);
        return -1;
    }
    mrc__mem_region_t data = value(c, v, op->src, f);
    if (v != u && add_read(c, src, mrc__mem_rank(c, u), nu->idx) < 0)
        return -1;
    if (deliver(c, u, op, f, data) < 0)
        return -1;
    (void)n;
    return 0;
}

/* The message u's RECV op takes for fragment f, or NULL if not sent
 * yet. A linear search: messages are few (the leaders' hops). */
static mrc__mem_msg_t *find_msg(mrc__mem_check_t *c, int u, const mrc__op_t *op,
                                int f)
{
    for (int i = 0; i < c->num_msgs; i++) {
        mrc__mem_msg_t *m = &c->msgs[i];
        if (!m->taken && m->dst == u && m->src == op->peer &&
            m->tag == op->tag && m->frag == f)
            return m;
    }
    return NULL;
}

/* A SEND by u: the region's contributions leave with u's clock. */
static int send_msg(mrc__mem_check_t *c, int u, const mrc__op_t *op, int f,
                    int n)
{
    mrc__mem_node_t *nu = &c->nodes[u];
    for (int i = 0; i < c->num_msgs; i++) {
        const mrc__mem_msg_t *m = &c->msgs[i];
        if (!m->taken && m->src == u && m->dst == op->peer &&
            m->tag == op->tag && m->frag == f) {
            mrc__error(MRC_ERR_INVALID_PROGRAM,
                       "node %d sends node %d two messages with tag %llx "
                       "(fragment %d) in flight at once",
                       u, op->peer, (unsigned long long)op->tag, f);
            return -1;
        }
    }
    if (mrc__grow((void **)&c->msgs, &c->cap_msgs, c->num_msgs + 1,
                  sizeof *c->msgs)) {
        mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking");
        return -1;
    }
    mrc__mem_msg_t *m = &c->msgs[c->num_msgs];
    *m = (mrc__mem_msg_t){
        u, op->peer, f, 0, -1, op->tag, value(c, u, op->src, f), NULL};
    if (add_read(c, mrc__mem_region(c, u, op->src, f),
                 mrc__mem_rank(c, op->peer), INT32_MAX) < 0)
        return -1;
    m->read = c->num_reads - 1;
    c->pool[m->read].msg = c->num_msgs;
    m->vc = malloc((size_t)n * sizeof *m->vc);
    if (!m->vc) {
        mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking");
        return -1;
    }
    memcpy(m->vc, nu->vc, (size_t)n * sizeof *m->vc);
    m->vc[mrc__mem_rank(c, u)] = nu->idx + 1;
    c->num_msgs++;
    return 0;
}

/* A RECV by u of fragment f: the message's contributions (with the
 * local operand's) into the destination, after the sender's past. */
static int recv_msg(mrc__mem_check_t *c, int u, const mrc__op_t *op, int f,
                    int n)
{
    mrc__mem_msg_t *m = find_msg(c, u, op, f);
    mrc__mem_node_t *nu = &c->nodes[u];
    mrc__mem_region_t data = m->data;
    merge(nu->vc, m->vc, n);
    m->taken = 1;
    c->pool[m->read].idx = nu->idx; /* read by this receive */
    if (deliver(c, u, op, f, data) < 0)
        return -1;
    return 0;
}

/* A SEND or RECV on every fragment it covers (a receive waits until all
 * of its messages are there, so that it runs whole). */
/* The fragments an op covers: lo .. hi. */
static void frag_span(const mrc__mem_check_t *c, const mrc__op_t *op, int n,
                      int *lo, int *hi)
{
    *lo = op->frag < 0 ? 0 : op->frag;
    *hi = op->frag < 0    ? mrc__mem_frags(c->p, n) - 1
          : op->frags > 1 ? op->frag + op->frags - 1
                          : op->frag;
}

static int step_msg(mrc__mem_check_t *c, int u, const mrc__op_t *op, int n)
{
    int lo, hi;
    frag_span(c, op, n, &lo, &hi);
    if (op->kind == MRC__RECV)
        for (int f = lo; f <= hi; f++)
            if (!find_msg(c, u, op, f))
                return 0;
    for (int f = lo; f <= hi; f++)
        if ((op->kind == MRC__SEND ? send_msg(c, u, op, f, n)
                                   : recv_msg(c, u, op, f, n)) < 0)
            return -1;
    return 1;
}

static int step_one(mrc__mem_check_t *c, int u, const mrc__op_t *op, int n);

/* Runs u's current op: 1 ran, 0 must wait, -1 error. An op on every
 * fragment (frag -1) runs as one op per fragment. */
static int step(mrc__mem_check_t *c, int u, const mrc__op_t *op, int n)
{
    if (op->kind == MRC__SEND || op->kind == MRC__RECV)
        return step_msg(c, u, op, n);
    if ((op->frag >= 0 && op->frags <= 1) || op->kind == MRC__SIGNAL ||
        op->kind == MRC__WAIT || op->kind == MRC__BARRIER ||
        (op->kind == MRC__EXPOSE && op->frag < 0))
        return step_one(c, u, op, n);
    int lo, hi;
    frag_span(c, op, n, &lo, &hi);
    mrc__op_t one = *op;
    one.frags = 0;
    for (one.frag = lo; one.frag <= hi; one.frag++)
        if (step_one(c, u, &one, n) < 0)
            return -1;
    return 1;
}

static int step_one(mrc__mem_check_t *c, int u, const mrc__op_t *op, int n)
{
    mrc__mem_node_t *nu = &c->nodes[u];
    const mrc_program_t *p = c->p;
    const mrc__group_t *g = &p->groups[p->nodes[u].group];
    switch (op->kind) {
    case MRC__SIGNAL: return signal_flag(c, u, op->flag, n) < 0 ? -1 : 1;
    case MRC__WAIT: {
        const int32_t *s = c->nodes[op->peer].sig[op->flag];
        if (!s)
            return 0;
        merge(nu->vc, s, n);
        return 1;
    }
    case MRC__BARRIER: {
        int f = MRC__MEM_BARRIER_FLAG + op->flag;
        if (!nu->arrived) {
            if (signal_flag(c, u, f, n) < 0)
                return -1;
            nu->arrived = 1;
        }
        for (int i = 0; i < n; i++)
            if (!c->nodes[p->members[g->first_member + i]].sig[f])
                return 0;
        for (int i = 0; i < n; i++)
            merge(nu->vc, c->nodes[p->members[g->first_member + i]].sig[f], n);
        nu->arrived = 0;
        return 1;
    }
    case MRC__EXPOSE: {
        int frags = mrc__mem_frags(p, n);
        int lo = op->frag < 0 ? 0 : op->frag;
        int hi = op->frag < 0 ? frags - 1 : op->frag;
        if (op->ref) {
            nu->exposed[mrc__mem_canon(c, op->src)] = nu->idx;
            if (c->in_place && mrc__mem_canon(c, op->src) == MRC__BUF_RECV)
                nu->exposed[MRC__BUF_SEND] = nu->idx;
            return 1;
        }
        for (int f = lo; f <= hi; f++) {
            mrc__mem_region_t data = value(c, u, op->src, f);
            mrc__mem_region_t *w = mrc__mem_region(c, u, MRC__BUF_WINDOW, f);
            if (write_region(c, u, w, MRC__BUF_WINDOW, f) < 0)
                return -1;
            w->sig = data.sig;
            w->count = data.count;
        }
        return 1;
    }
    case MRC__GET: return get(c, u, op, n) < 0 ? -1 : 1;
    case MRC__COPY: {
        mrc__mem_region_t data = value(c, u, op->src, op->frag);
        mrc__mem_region_t *dst = mrc__mem_region(c, u, op->dst, op->frag);
        if (write_region(c, u, dst, op->dst, op->frag) < 0)
            return -1;
        dst->sig = data.sig;
        dst->count = data.count;
        return 1;
    }
    case MRC__SCALE: {
        mrc__mem_region_t *dst = mrc__mem_region(c, u, op->dst, op->frag);
        uint64_t sig = dst->sig, count = dst->count;
        if (write_region(c, u, dst, op->dst, op->frag) < 0)
            return -1;
        dst->sig = sig; /* a scaling keeps the contributions */
        dst->count = count;
        return 1;
    }
    default:
        mrc__error(MRC_ERR_INVALID_PROGRAM,
                   "node %d: a program with memory instructions also "
                   "sends or receives (op %d), which this checker does not "
                   "order",
                   u, op->kind);
        return -1;
    }
}

static void free_check(mrc__mem_check_t *c)
{
    for (int u = 0; c->nodes && u < c->p->num_nodes; u++) {
        free(c->nodes[u].vc);
        free(c->nodes[u].regions);
        for (int f = 0; f < MRC__MEM_FLAGS; f++)
            free(c->nodes[u].sig[f]);
    }
    free(c->nodes);
    free(c->pool);
    for (int i = 0; i < c->num_msgs; i++)
        free(c->msgs[i].vc);
    free(c->msgs);
}

static mrc_status_t setup(mrc__mem_check_t *c)
{
    const mrc_program_t *p = c->p;
    c->nodes = calloc((size_t)p->num_nodes + 1, sizeof *c->nodes);
    if (!c->nodes)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking");
    for (int u = 0; u < p->num_nodes; u++) {
        int gi = p->nodes[u].group;
        if (gi < 0)
            continue;
        const mrc__group_t *g = &p->groups[gi];
        int n = g->size, frags = mrc__mem_frags(p, n);
        if (n > MRC__MEM_MAX_GROUP)
            return mrc__error(MRC_ERR_UNSUPPORTED,
                              "group %d has %d nodes: programs that read "
                              "peers' memory are checked up to %d",
                              gi, n, MRC__MEM_MAX_GROUP);
        if (g->num_streams != 1)
            return mrc__error(MRC_ERR_INVALID_PROGRAM,
                              "group %d: a program with memory instructions "
                              "has one stream a group, not %d",
                              gi, g->num_streams);
        mrc__mem_node_t *nu = &c->nodes[u];
        nu->vc = calloc((size_t)n, sizeof *nu->vc);
        nu->regions = calloc((size_t)MRC__MEM_NUM_BUFS * (size_t)frags,
                             sizeof *nu->regions);
        if (!nu->vc || !nu->regions)
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking");
        for (int b = 0; b < MRC__MEM_NUM_BUFS; b++)
            nu->exposed[b] = -1;
        for (int i = 0; i < MRC__MEM_NUM_BUFS * frags; i++) {
            nu->regions[i].last_w = -1;
            nu->regions[i].reads = -1;
        }
        if (c->in_place) /* the receive buffer starts as the input */
            for (int f = 0; f < frags; f++) {
                mrc__mem_region_t *r =
                    &nu->regions[(size_t)MRC__BUF_RECV * frags + f];
                r->sig = mrc__mix64((uint64_t)p->nodes[u].rank);
                r->count = 1;
            }
        mrc__cursor_begin(&nu->cur, p, u, g->first_stream, 0, 1, c->in_place);
    }
    return MRC_OK;
}

static mrc_status_t run(mrc__mem_check_t *c)
{
    const mrc_program_t *p = c->p;
    mrc_status_t st = MRC_OK;
    for (int moved = 1; moved;) {
        moved = 0;
        for (int u = 0; u < p->num_nodes; u++) {
            mrc__mem_node_t *nu = &c->nodes[u];
            if (p->nodes[u].group < 0 || nu->cur.done)
                continue;
            int n = p->groups[p->nodes[u].group].size;
            for (;;) {
                int r = mrc__cursor_peek(&nu->cur, &st);
                if (r < 0)
                    return st;
                if (r == 0) {
                    moved = 1;
                    break;
                }
                r = step(c, u, &nu->cur.op, n);
                if (r < 0)
                    return MRC_ERR_INVALID_PROGRAM;
                if (r == 0)
                    break;
                nu->vc[mrc__mem_rank(c, u)] = ++nu->idx;
                mrc__cursor_take(&nu->cur);
                moved = 1;
            }
        }
    }
    for (int u = 0; u < p->num_nodes; u++) {
        const mrc__mem_node_t *nu = &c->nodes[u];
        if (p->nodes[u].group >= 0 && !nu->cur.done)
            return mrc__error(MRC_ERR_INVALID_PROGRAM,
                              "deadlock: node %d waits for %s of node %d, "
                              "which never comes",
                              u,
                              nu->cur.op.kind == MRC__BARRIER ? "a barrier"
                              : nu->cur.op.kind == MRC__RECV  ? "a message"
                                                              : "a flag",
                              nu->cur.op.peer);
    }
    return mrc__check_memory_end(c);
}

mrc_status_t mrc__check_memory_program(const mrc_program_t *p)
{
    for (int in_place = 0; in_place < 2; in_place++) {
        mrc__mem_check_t c;
        memset(&c, 0, sizeof c);
        c.p = p;
        c.in_place = in_place;
        mrc_status_t st = setup(&c);
        if (st == MRC_OK)
            st = run(&c);
        free_check(&c);
        if (st != MRC_OK)
            return st;
    }
    return MRC_OK;
}
