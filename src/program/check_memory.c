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
 * Accepts: groups of up to MEMORY_MAX_GROUP nodes (N^2 gets in all; the
 * direct families are for hosts). Limits: regions are whole fragments.
 */
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"

enum { MEMORY_MAX_GROUP = 512, FLAGS = 32, BARRIER_FLAG = 16,
       NUM_BUFS = MRC__BUF_WINDOW + 1 };

/* A peer's read of a region: by a GET, or (msg >= 0) by a message sent
 * from it, which the transport may read until the receiver has it (idx
 * INT32_MAX until then). */
typedef struct read_rec {
    int32_t reader, idx, next, msg;
} read_rec_t;

typedef struct region {
    uint64_t sig, count; /* the contributions it holds */
    int32_t last_w;      /* the owner's op index of its last write, or -1 */
    int32_t reads;       /* peers' reads since: into the read pool */
} region_t;

typedef struct mnode {
    mrc__cursor_t cur;
    int arrived;
    int32_t idx;       /* ops run */
    int32_t *vc;       /* [group size]: ops of each rank known to be done */
    int32_t *sig[FLAGS]; /* the clock at each flag's signal, or NULL */
    int32_t exposed[NUM_BUFS]; /* op index of an EXPOSE by reference */
    region_t *regions; /* [NUM_BUFS][frags] */
} mnode_t;

/* A message in flight (hier's leaders): what it carries and the
 * sender's clock when it sent it. */
typedef struct mmsg {
    int32_t src, dst, frag, taken;
    int32_t read; /* its read record on the sender's region */
    uint64_t tag;
    region_t data;
    int32_t *vc;
} mmsg_t;

typedef struct mcheck {
    const mrc_program_t *p;
    int in_place;
    mnode_t *nodes;
    read_rec_t *pool;
    int num_reads, cap_reads;
    mmsg_t *msgs;
    int num_msgs, cap_msgs;
} mcheck_t;

static int frags_of(const mrc_program_t *p, int n)
{
    return p->addressing == MRC__ADDR_WHOLE ? 1 : mrc__frag_space(p, n);
}

/* Send and receive buffers are one in place: a region of SEND is the
 * region of RECV with the same fragment (the offsets agree in every
 * collective's in-place form). */
static int canon(const mcheck_t *c, int buf)
{
    return c->in_place && buf == MRC__BUF_SEND ? MRC__BUF_RECV : buf;
}

static region_t *region(mcheck_t *c, int u, int buf, int f)
{
    const mrc_program_t *p = c->p;
    int n = p->groups[p->nodes[u].group].size;
    return &c->nodes[u].regions[(size_t)canon(c, buf) * (size_t)frags_of(p, n) +
                                (size_t)f];
}

static int rank_of(const mcheck_t *c, int u)
{
    return c->p->nodes[u].rank;
}

/* The contributions of a region as node u reads it: the input of u for
 * the send buffer not written in place. */
static region_t value(mcheck_t *c, int u, int buf, int f)
{
    if (buf == MRC__BUF_SEND && !c->in_place) {
        region_t own = {mrc__mix64((uint64_t)rank_of(c, u)), 1, -1, -1};
        return own;
    }
    return *region(c, u, buf, f);
}

/* u writes region r (its op index idx): every read by a peer must have
 * happened before. */
static int write_region(mcheck_t *c, int u, region_t *r, int buf, int f)
{
    mnode_t *nu = &c->nodes[u];
    for (int32_t i = r->reads; i >= 0; i = c->pool[i].next) {
        const read_rec_t *rr = &c->pool[i];
        int peer = c->p->members[c->p->groups[c->p->nodes[u].group]
                                     .first_member +
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

static int add_read(mcheck_t *c, region_t *r, int reader, int32_t idx)
{
    if (mrc__grow((void **)&c->pool, &c->cap_reads, c->num_reads + 1,
                  sizeof *c->pool)) {
        mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking");
        return -1;
    }
    c->pool[c->num_reads] = (read_rec_t){reader, idx, r->reads, -1};
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
static int signal_flag(mcheck_t *c, int u, int f, int n)
{
    mnode_t *nu = &c->nodes[u];
    if (f >= FLAGS || nu->sig[f]) {
        mrc__error(MRC_ERR_INVALID_PROGRAM,
                   "node %d signals flag %d twice in one call (or a flag "
                   "past %d)",
                   u, f % BARRIER_FLAG, BARRIER_FLAG - 1);
        return -1;
    }
    nu->sig[f] = malloc((size_t)n * sizeof *nu->sig[f]);
    if (!nu->sig[f]) {
        mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking");
        return -1;
    }
    memcpy(nu->sig[f], nu->vc, (size_t)n * sizeof *nu->vc);
    nu->sig[f][rank_of(c, u)] = nu->idx + 1;
    return 0;
}

/* What a GET or RECV of u brings (data), reduced with its local operand
 * if it has one, into its destination: a write of u's. */
static int deliver(mcheck_t *c, int u, const mrc__op_t *op, int f,
                   region_t data)
{
    if (op->local) {
        region_t l = value(c, u, op->local, f);
        data.sig += l.sig;
        data.count += l.count;
    }
    region_t *dst = region(c, u, op->dst, f);
    if (write_region(c, u, dst, op->dst, f) < 0)
        return -1;
    dst->sig = data.sig;
    dst->count = data.count;
    return 0;
}

/* A GET by u: checks the order and moves the contributions. */
static int get(mcheck_t *c, int u, const mrc__op_t *op, int n)
{
    mnode_t *nu = &c->nodes[u];
    int v = op->peer, vr = rank_of(c, v), f = op->frag;
    mnode_t *nv = &c->nodes[v];
    region_t *src = region(c, v, op->src, f);
    int cb = canon(c, op->src);
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
    region_t data = value(c, v, op->src, f);
    if (v != u && add_read(c, src, rank_of(c, u), nu->idx) < 0)
        return -1;
    if (deliver(c, u, op, f, data) < 0)
        return -1;
    (void)n;
    return 0;
}

/* The message u's RECV op takes for fragment f, or NULL if not sent
 * yet. A linear search: messages are few (the leaders' hops). */
static mmsg_t *find_msg(mcheck_t *c, int u, const mrc__op_t *op, int f)
{
    for (int i = 0; i < c->num_msgs; i++) {
        mmsg_t *m = &c->msgs[i];
        if (!m->taken && m->dst == u && m->src == op->peer &&
            m->tag == op->tag && m->frag == f)
            return m;
    }
    return NULL;
}

/* A SEND by u: the region's contributions leave with u's clock. */
static int send_msg(mcheck_t *c, int u, const mrc__op_t *op, int f, int n)
{
    mnode_t *nu = &c->nodes[u];
    for (int i = 0; i < c->num_msgs; i++) {
        const mmsg_t *m = &c->msgs[i];
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
    mmsg_t *m = &c->msgs[c->num_msgs];
    *m = (mmsg_t){u, op->peer, f, 0, -1, op->tag, value(c, u, op->src, f),
                  NULL};
    if (add_read(c, region(c, u, op->src, f), rank_of(c, op->peer),
                 INT32_MAX) < 0)
        return -1;
    m->read = c->num_reads - 1;
    c->pool[m->read].msg = c->num_msgs;
    m->vc = malloc((size_t)n * sizeof *m->vc);
    if (!m->vc) {
        mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking");
        return -1;
    }
    memcpy(m->vc, nu->vc, (size_t)n * sizeof *m->vc);
    m->vc[rank_of(c, u)] = nu->idx + 1;
    c->num_msgs++;
    return 0;
}

/* A RECV by u of fragment f: the message's contributions (with the
 * local operand's) into the destination, after the sender's past. */
static int recv_msg(mcheck_t *c, int u, const mrc__op_t *op, int f, int n)
{
    mmsg_t *m = find_msg(c, u, op, f);
    mnode_t *nu = &c->nodes[u];
    region_t data = m->data;
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
static void frag_span(const mcheck_t *c, const mrc__op_t *op, int n, int *lo,
                      int *hi)
{
    *lo = op->frag < 0 ? 0 : op->frag;
    *hi = op->frag < 0   ? frags_of(c->p, n) - 1
          : op->frags > 1 ? op->frag + op->frags - 1
                          : op->frag;
}

static int step_msg(mcheck_t *c, int u, const mrc__op_t *op, int n)
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

static int step_one(mcheck_t *c, int u, const mrc__op_t *op, int n);

/* Runs u's current op: 1 ran, 0 must wait, -1 error. An op on every
 * fragment (frag -1) runs as one op per fragment. */
static int step(mcheck_t *c, int u, const mrc__op_t *op, int n)
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

static int step_one(mcheck_t *c, int u, const mrc__op_t *op, int n)
{
    mnode_t *nu = &c->nodes[u];
    const mrc_program_t *p = c->p;
    const mrc__group_t *g = &p->groups[p->nodes[u].group];
    switch (op->kind) {
    case MRC__SIGNAL:
        return signal_flag(c, u, op->flag, n) < 0 ? -1 : 1;
    case MRC__WAIT: {
        const int32_t *s = c->nodes[op->peer].sig[op->flag];
        if (!s)
            return 0;
        merge(nu->vc, s, n);
        return 1;
    }
    case MRC__BARRIER: {
        int f = BARRIER_FLAG + op->flag;
        if (!nu->arrived) {
            if (signal_flag(c, u, f, n) < 0)
                return -1;
            nu->arrived = 1;
        }
        for (int i = 0; i < n; i++)
            if (!c->nodes[p->members[g->first_member + i]].sig[f])
                return 0;
        for (int i = 0; i < n; i++)
            merge(nu->vc, c->nodes[p->members[g->first_member + i]].sig[f],
                  n);
        nu->arrived = 0;
        return 1;
    }
    case MRC__EXPOSE: {
        int frags = frags_of(p, n);
        int lo = op->frag < 0 ? 0 : op->frag;
        int hi = op->frag < 0 ? frags - 1 : op->frag;
        if (op->ref) {
            nu->exposed[canon(c, op->src)] = nu->idx;
            if (c->in_place && canon(c, op->src) == MRC__BUF_RECV)
                nu->exposed[MRC__BUF_SEND] = nu->idx;
            return 1;
        }
        for (int f = lo; f <= hi; f++) {
            region_t data = value(c, u, op->src, f);
            region_t *w = region(c, u, MRC__BUF_WINDOW, f);
            if (write_region(c, u, w, MRC__BUF_WINDOW, f) < 0)
                return -1;
            w->sig = data.sig;
            w->count = data.count;
        }
        return 1;
    }
    case MRC__GET:
        return get(c, u, op, n) < 0 ? -1 : 1;
    case MRC__COPY: {
        region_t data = value(c, u, op->src, op->frag);
        region_t *dst = region(c, u, op->dst, op->frag);
        if (write_region(c, u, dst, op->dst, op->frag) < 0)
            return -1;
        dst->sig = data.sig;
        dst->count = data.count;
        return 1;
    }
    case MRC__SCALE: {
        region_t *dst = region(c, u, op->dst, op->frag);
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

/* What output fragment f of node u must hold; 0 if it is not an output. */
static int expected(const mcheck_t *c, int u, int f, int n, region_t *want)
{
    const mrc_program_t *p = c->p;
    uint64_t all = 0;
    for (int r = 0; r < n; r++)
        all += mrc__mix64((uint64_t)r);
    int block = p->addressing == MRC__ADDR_BLOCK_POS ? f : -1;
    int rank = rank_of(c, u);
    switch (p->cfg.collective) {
    case MRC_ALLREDUCE:
        *want = (region_t){all, (uint64_t)n, 0, 0};
        return 1;
    case MRC_REDUCE_SCATTER:
        *want = (region_t){all, (uint64_t)n, 0, 0};
        return block == rank;
    case MRC_ALLGATHER:
        *want = (region_t){mrc__mix64((uint64_t)block), 1, 0, 0};
        return 1;
    case MRC_REDUCE:
        *want = (region_t){all, (uint64_t)n, 0, 0};
        return rank == p->cfg.root;
    default:
        *want = (region_t){mrc__mix64((uint64_t)p->cfg.root), 1, 0, 0};
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
    return len / parts + ((uint64_t)f < len % parts);
}

static mrc_status_t check_end(mcheck_t *c)
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
        int n = p->groups[gi].size, frags = frags_of(p, n);
        mnode_t *nu = &c->nodes[u];
        /* No peer reads this node's buffers once it has left. */
        for (int b = MRC__BUF_SEND; b < MRC__BUF_WINDOW; b++)
            for (int f = 0; f < frags; f++) {
                region_t *r = &nu->regions[(size_t)b * (size_t)frags +
                                           (size_t)f];
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
            region_t want;
            if (!expected(c, u, f, n, &want) || frag_len(p, f, n) == 0)
                continue;
            region_t have = *region(c, u, MRC__BUF_RECV, f);
            if (have.count != want.count || have.sig != want.sig)
                return mrc__error(
                    MRC_ERR_INVALID_PROGRAM,
                    "%snode %d (rank %d), fragment %d: the output holds %llu "
                    "contributions where it needs %llu%s",
                    c->in_place ? "in place: " : "", u, rank_of(c, u), f,
                    (unsigned long long)have.count,
                    (unsigned long long)want.count,
                    have.count == want.count
                        ? " (some node's twice, another's missing)"
                        : "");
        }
    }
    return MRC_OK;
}

static void free_check(mcheck_t *c)
{
    for (int u = 0; c->nodes && u < c->p->num_nodes; u++) {
        free(c->nodes[u].vc);
        free(c->nodes[u].regions);
        for (int f = 0; f < FLAGS; f++)
            free(c->nodes[u].sig[f]);
    }
    free(c->nodes);
    free(c->pool);
    for (int i = 0; i < c->num_msgs; i++)
        free(c->msgs[i].vc);
    free(c->msgs);
}

static mrc_status_t setup(mcheck_t *c)
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
        int n = g->size, frags = frags_of(p, n);
        if (n > MEMORY_MAX_GROUP)
            return mrc__error(MRC_ERR_UNSUPPORTED,
                              "group %d has %d nodes: programs that read "
                              "peers' memory are checked up to %d",
                              gi, n, MEMORY_MAX_GROUP);
        if (g->num_streams != 1)
            return mrc__error(MRC_ERR_INVALID_PROGRAM,
                              "group %d: a program with memory instructions "
                              "has one stream a group, not %d",
                              gi, g->num_streams);
        mnode_t *nu = &c->nodes[u];
        nu->vc = calloc((size_t)n, sizeof *nu->vc);
        nu->regions = calloc((size_t)NUM_BUFS * (size_t)frags,
                             sizeof *nu->regions);
        if (!nu->vc || !nu->regions)
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory checking");
        for (int b = 0; b < NUM_BUFS; b++)
            nu->exposed[b] = -1;
        for (int i = 0; i < NUM_BUFS * frags; i++) {
            nu->regions[i].last_w = -1;
            nu->regions[i].reads = -1;
        }
        if (c->in_place) /* the receive buffer starts as the input */
            for (int f = 0; f < frags; f++) {
                region_t *r = &nu->regions[(size_t)MRC__BUF_RECV * frags + f];
                r->sig = mrc__mix64((uint64_t)p->nodes[u].rank);
                r->count = 1;
            }
        mrc__chain_begin(&nu->cur.it, p, u, g->first_stream, 0, 1, c->in_place);
    }
    return MRC_OK;
}

static mrc_status_t run(mcheck_t *c)
{
    const mrc_program_t *p = c->p;
    mrc_status_t st = MRC_OK;
    for (int moved = 1; moved;) {
        moved = 0;
        for (int u = 0; u < p->num_nodes; u++) {
            mnode_t *nu = &c->nodes[u];
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
                nu->vc[rank_of(c, u)] = ++nu->idx;
                nu->cur.has_op = 0;
                moved = 1;
            }
        }
    }
    for (int u = 0; u < p->num_nodes; u++) {
        const mnode_t *nu = &c->nodes[u];
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
    return check_end(c);
}

mrc_status_t mrc__check_memory_program(const mrc_program_t *p)
{
    for (int in_place = 0; in_place < 2; in_place++) {
        mcheck_t c;
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
