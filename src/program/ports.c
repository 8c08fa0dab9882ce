/*
 * The port mask (see mrc__port_phase_t): which ports each node leaves idle
 * in each phase of the program, for the transports (a link that a phase
 * leaves idle may be switched off) and the simulator's energy figure.
 *
 * A step's ports are those its messages leave and enter by (along the
 * whole route of a relayed hop), as the simulator's BSP mode counts
 * steps; a step whose ports equal the step before's extends its phase. A
 * ring program comes out as one phase per collective (its loops use the
 * same ports at every step), a chain as one phase per step.
 *
 * Also the ports a program uses at all (mrc__active_ports: the listing's
 * idle ports per node).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"

/* The walk's bound: a few seconds. */
#define WALK_MAX_OPS (1ull << 27)

typedef struct builder {
    int32_t *port_first;  /* [num_nodes + 1]: into the marks */
    uint8_t *mark;        /* this step's ports in use */
    mrc__port_use_t *cur; /* this step's, as a sorted list */
    int num_cur, cap_cur;
    mrc__port_phase_t *phases;
    int num_phases, cap_phases;
    mrc__port_use_t *uses;
    int num_uses, cap_uses;
} builder_t;

/* Marks a port in use this step, listing it the first time. */
static int mark(builder_t *b, const mrc_program_t *p, int v, int port)
{
    if (port < 0 || port >= p->nodes[v].num_ports ||
        b->mark[b->port_first[v] + port])
        return 0;
    b->mark[b->port_first[v] + port] = 1;
    if (mrc__grow((void **)&b->cur, &b->cap_cur, b->num_cur + 1,
                  sizeof *b->cur))
        return -1;
    b->cur[b->num_cur++] = (mrc__port_use_t){v, port};
    return 0;
}

/* Marks the ports of a SEND's route. */
static int mark_route(builder_t *b, const mrc_program_t *p, int u, int k)
{
    int r = mrc__node_stream(p, u, k)->route;
    if (r < 0)
        return 0;
    for (int j = p->route_off[r]; j < p->route_off[r + 1]; j++) {
        int v = p->route_nodes[j];
        if ((j + 1 < p->route_off[r + 1] && mark(b, p, v, p->route_ports[j])) ||
            (j > p->route_off[r] && mark(b, p, v, p->route_in_ports[j])))
            return -1;
    }
    return 0;
}

static int cmp_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int by_node_port(const void *a, const void *b)
{
    const mrc__port_use_t *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return (x->port > y->port) - (x->port < y->port);
}

/* The step's ports, sorted; the marks cleared for the next step. */
static void collect(builder_t *b)
{
    for (int i = 0; i < b->num_cur; i++)
        b->mark[b->port_first[b->cur[i].node] + b->cur[i].port] = 0;
    if (b->num_cur > 1)
        qsort(b->cur, (size_t)b->num_cur, sizeof *b->cur, by_node_port);
}

/* Appends the step's ports: to the last phase if they are the same. */
static int add_step(builder_t *b, int step)
{
    if (b->num_phases > 0) {
        mrc__port_phase_t *last = &b->phases[b->num_phases - 1];
        int n = b->num_uses - last->first_use;
        if (last->first_step + last->num_steps == step && n == b->num_cur &&
            (n == 0 || memcmp(b->uses + last->first_use, b->cur,
                              (size_t)n * sizeof *b->cur) == 0)) {
            last->num_steps++;
            return 0;
        }
    }
    if (mrc__grow((void **)&b->phases, &b->cap_phases, b->num_phases + 2,
                  sizeof *b->phases) ||
        mrc__grow((void **)&b->uses, &b->cap_uses, b->num_uses + b->num_cur + 1,
                  sizeof *b->uses))
        return -1;
    b->phases[b->num_phases++] = (mrc__port_phase_t){step, 1, b->num_uses};
    if (b->num_cur > 0)
        memcpy(b->uses + b->num_uses, b->cur,
               (size_t)b->num_cur * sizeof *b->cur);
    b->num_uses += b->num_cur;
    return 0;
}

static void free_mask(mrc_program_t *p)
{
    free(p->port_phases);
    free(p->port_uses);
    p->port_phases = NULL;
    p->port_uses = NULL;
    p->num_port_phases = p->num_port_uses = 0;
}

/* The builder's port index and marks; -1 if out of memory. */
static int builder_init(builder_t *b, const mrc_program_t *p)
{
    b->port_first = calloc((size_t)p->num_nodes + 1, sizeof *b->port_first);
    if (!b->port_first)
        return -1;
    for (int u = 0; u < p->num_nodes; u++)
        b->port_first[u + 1] = b->port_first[u] + p->nodes[u].num_ports;
    b->mark = calloc((size_t)b->port_first[p->num_nodes] + 1, 1);
    return b->mark ? 0 : -1;
}

static void builder_free(builder_t *b)
{
    free(b->port_first);
    free(b->mark);
    free(b->cur);
    free(b->phases);
    free(b->uses);
}

/* Hands the builder's phases to the program. */
static void keep(mrc_program_t *p, builder_t *b)
{
    p->port_phases = b->phases;
    p->port_uses = b->uses;
    p->num_port_phases = b->num_phases;
    p->num_port_uses = b->num_uses;
    if (b->num_phases > 0)
        b->phases[b->num_phases] = (mrc__port_phase_t){0, 0, b->num_uses};
    b->phases = NULL;
    b->uses = NULL;
}

/* A send of the walk: its step, node and stream. */
typedef struct send_event {
    int32_t step, node, stream;
} send_event_t;

static int by_step(const void *a, const void *b)
{
    const send_event_t *x = a, *y = b;
    return (x->step > y->step) - (x->step < y->step);
}

/* The mask by walking every message: every chain's sends listed with
 * their steps, sorted, and marked step by step (O(messages log
 * messages)); none when the program has more than WALK_MAX_OPS
 * operations. */
static mrc_status_t build_by_walk(mrc_program_t *p)
{
    uint64_t total = 0;
    for (int g = 0; g < p->num_groups; g++) {
        uint64_t chains, ops;
        mrc__plan_bound(p, g, UINT64_MAX, &chains, &ops);
        total = mrc__sat_mul_add(ops, (uint64_t)p->groups[g].size, total);
    }
    if (total > WALK_MAX_OPS)
        return MRC_OK;
    builder_t b;
    memset(&b, 0, sizeof b);
    mrc_status_t st = MRC_OK;
    send_event_t *ev = NULL;
    int num_ev = 0, cap_ev = 0, last = -1;
    if (builder_init(&b, p))
        goto oom;
    for (int u = 0; u < p->num_nodes; u++) {
        int g = p->nodes[u].group;
        for (int j = 0; g >= 0 && j < p->groups[g].num_streams; j++) {
            int k = p->groups[g].first_stream + j;
            if (mrc__stream_chunks(p, k, UINT64_MAX) == 0)
                continue;
            mrc__chain_iter_t it;
            mrc__chain_begin(&it, p, u, k, 0, 1, 0);
            mrc__op_t op;
            int r;
            while ((r = mrc__chain_next(&it, &op, &st)) > 0) {
                last = op.step > last ? op.step : last;
                if (op.kind != MRC__SEND)
                    continue;
                if (mrc__grow((void **)&ev, &cap_ev, num_ev + 1, sizeof *ev))
                    goto oom;
                ev[num_ev++] = (send_event_t){op.step, u, k};
            }
            if (r < 0)
                goto done;
        }
    }
    /* (qsort is not stable, but a step's marks are sorted after.) */
    if (num_ev > 1)
        qsort(ev, (size_t)num_ev, sizeof *ev, by_step);
    for (int step = 0, i = 0; step <= last; step++) {
        for (; i < num_ev && ev[i].step == step; i++)
            if (mark_route(&b, p, ev[i].node, ev[i].stream))
                goto oom;
        collect(&b);
        if (add_step(&b, step))
            goto oom;
        b.num_cur = 0;
    }
    keep(p, &b);
    goto done;
oom:
    st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory finding the port mask");
done:
    free(ev);
    builder_free(&b);
    return st;
}

/* A stream's steps: those of node 0's operations, as runs of
 * consecutive steps that send (send[0 ..)), and the last step of any. */
typedef struct stream_steps {
    int32_t *lo, *hi; /* sending runs */
    int num, cap;
    int last; /* -1: none */
} stream_steps_t;

static int add_send_step(stream_steps_t *t, int step)
{
    if (t->num > 0 &&
        (t->hi[t->num - 1] == step || t->hi[t->num - 1] + 1 == step)) {
        t->hi[t->num - 1] = step;
        return 0;
    }
    int cap = t->cap;
    if (mrc__grow((void **)&t->lo, &cap, t->num + 1, sizeof *t->lo) ||
        mrc__grow((void **)&t->hi, &t->cap, t->num + 1, sizeof *t->hi))
        return -1;
    t->lo[t->num] = t->hi[t->num] = step;
    t->num++;
    return 0;
}

/* 1 when every node of every stream sends at the same steps as the
 * stream's node 0: a code the symbolic proof covers (every node runs it
 * alike) over slices in which no fragment is empty. */
static int uniform(const mrc_program_t *p)
{
    if (!mrc__symbolic_applies(p))
        return 0;
    for (int k = 0; k < p->num_streams; k++) {
        uint64_t len = p->streams[k].slice_len;
        if (len > 0 && p->addressing == MRC__ADDR_SPLIT &&
            len < (uint64_t)mrc__stream_size(p, k))
            return 0;
    }
    return 1;
}

/* Node 0's runs of sending steps in each stream (t[k]), the last step
 * of any, and the number of cuts the runs make: 0; -1 out of memory; -2
 * an error of the expansion (*st). */
static int sending_steps(const mrc_program_t *p, stream_steps_t *t, int *last,
                         int *num_cuts, mrc_status_t *st)
{
    for (int k = 0; k < p->num_streams; k++) {
        t[k].last = -1;
        if (mrc__stream_chunks(p, k, UINT64_MAX) == 0)
            continue;
        mrc__chain_iter_t it;
        mrc__chain_begin(&it, p, mrc__stream_node(p, k, 0), k, 0, 1, 0);
        mrc__op_t op;
        int r;
        while ((r = mrc__chain_next(&it, &op, st)) > 0) {
            t[k].last = op.step > t[k].last ? op.step : t[k].last;
            if (op.kind == MRC__SEND && add_send_step(&t[k], op.step))
                return -1;
        }
        if (r < 0)
            return -2;
        *last = t[k].last > *last ? t[k].last : *last;
        *num_cuts += 2 * t[k].num;
    }
    return 0;
}

/* The mask of a uniform program in O(nodes x code + steps): each stream
 * sends from every node at node 0's steps, so a step's ports are the
 * union of the routes of the streams sending in it, which changes only
 * where a stream's runs of sending steps begin or end. */
static mrc_status_t build_uniform(mrc_program_t *p)
{
    builder_t b;
    memset(&b, 0, sizeof b);
    mrc_status_t st = MRC_OK;
    int ns = p->num_streams, last = -1;
    stream_steps_t *t = calloc((size_t)ns + 1, sizeof *t);
    int32_t *cut = NULL, *at = calloc((size_t)ns + 1, sizeof *at);
    if (!t || !at || builder_init(&b, p))
        goto oom;
    int num_cuts = 0, r = sending_steps(p, t, &last, &num_cuts, &st);
    if (r == -1)
        goto oom;
    if (r < 0)
        goto done;
    /* The steps where some stream starts or stops sending, in order. */
    cut = malloc(((size_t)num_cuts + 2) * sizeof *cut);
    if (!cut)
        goto oom;
    int nc = 0;
    cut[nc++] = 0;
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < t[k].num; i++) {
            cut[nc++] = t[k].lo[i];
            cut[nc++] = t[k].hi[i] + 1;
        }
    qsort(cut, (size_t)nc, sizeof *cut, cmp_int32);
    for (int i = 0; i < nc && cut[i] <= last; i++) {
        if (i > 0 && cut[i] == cut[i - 1])
            continue;
        int from = cut[i], to = last + 1;
        for (int j = i + 1; j < nc; j++)
            if (cut[j] > from) {
                to = cut[j] < last + 1 ? cut[j] : last + 1;
                break;
            }
        for (int k = 0; k < ns; k++) {
            while (at[k] < t[k].num && t[k].hi[at[k]] < from)
                at[k]++;
            if (at[k] == t[k].num || t[k].lo[at[k]] > from)
                continue;
            int n = mrc__stream_size(p, k);
            for (int pos = 0; pos < n; pos++)
                if (mark_route(&b, p, mrc__stream_node(p, k, pos), k))
                    goto oom;
        }
        collect(&b);
        if (add_step(&b, from))
            goto oom;
        b.phases[b.num_phases - 1].num_steps += to - from - 1;
        b.num_cur = 0;
    }
    keep(p, &b);
    goto done;
oom:
    st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory finding the port mask");
done:
    for (int k = 0; t && k < ns; k++) {
        free(t[k].lo);
        free(t[k].hi);
    }
    free(t);
    free(at);
    free(cut);
    builder_free(&b);
    return st;
}

mrc_status_t mrc__port_mask_build(mrc_program_t *p)
{
    free_mask(p);
    return uniform(p) ? build_uniform(p) : build_by_walk(p);
}

mrc_status_t mrc__port_mask_build_walk(mrc_program_t *p)
{
    free_mask(p);
    return build_by_walk(p);
}

int mrc__port_phase_of(const mrc_program_t *p, int step)
{
    int lo = 0, hi = p->num_port_phases - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const mrc__port_phase_t *ph = &p->port_phases[mid];
        if (step < ph->first_step)
            hi = mid - 1;
        else if (step >= ph->first_step + ph->num_steps)
            lo = mid + 1;
        else
            return mid;
    }
    return -1;
}

void mrc__port_idle(const mrc_program_t *p, int ph, int u, uint8_t *idle)
{
    int n = p->nodes[u].num_ports;
    memset(idle, 1, (size_t)n);
    if (ph < 0 || ph >= p->num_port_phases)
        return;
    /* The phase's uses are sorted by node: find u's run. */
    int lo = p->port_phases[ph].first_use,
        hi = p->port_phases[ph + 1].first_use;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (p->port_uses[mid].node < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int i = lo;
         i < p->port_phases[ph + 1].first_use && p->port_uses[i].node == u; i++)
        idle[p->port_uses[i].port] = 0;
}

static pthread_mutex_t mask_lock = PTHREAD_MUTEX_INITIALIZER;

mrc_status_t mrc__port_mask_ready(const mrc_program_t *p)
{
    if (__atomic_load_n(&p->port_mask_ready, __ATOMIC_ACQUIRE))
        return MRC_OK;
    /* The mask is derived from the program, which stays const for its
     * users: it is filled in once, as a cache. */
    mrc_program_t *w = (mrc_program_t *)(uintptr_t)p;
    mrc_status_t st = MRC_OK;
    pthread_mutex_lock(&mask_lock);
    if (!__atomic_load_n(&p->port_mask_ready, __ATOMIC_ACQUIRE)) {
        st = mrc__port_mask_build(w);
        if (st == MRC_OK)
            __atomic_store_n(&w->port_mask_ready, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&mask_lock);
    return st;
}

mrc_status_t mrc__active_ports(const mrc_program_t *p, int32_t **port_first,
                               uint8_t **active)
{
    *port_first = calloc((size_t)p->num_nodes + 1, sizeof **port_first);
    if (!*port_first)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int u = 0; u < p->num_nodes; u++)
        (*port_first)[u + 1] = (*port_first)[u] + p->nodes[u].num_ports;
    *active = calloc((size_t)(*port_first)[p->num_nodes] + 1, 1);
    if (!*active) {
        free(*port_first);
        *port_first = NULL;
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    /* A node uses its hop's route in a stream if it sends in it at all:
     * its chain is read up to its first send (the first operation of a
     * ring code), not expanded whole (N^2 operations for a ring). */
    mrc_status_t st = MRC_OK;
    for (int u = 0; u < p->num_nodes && st == MRC_OK; u++) {
        int g = p->nodes[u].group;
        for (int j = 0; g >= 0 && j < p->groups[g].num_streams; j++) {
            int k = p->groups[g].first_stream + j;
            int r = mrc__node_stream(p, u, k)->route;
            if (r < 0 || mrc__stream_chunks(p, k, UINT64_MAX) == 0)
                continue;
            mrc__chain_iter_t it;
            mrc__chain_begin(&it, p, u, k, 0, 1, 0);
            mrc__op_t op;
            int got;
            while ((got = mrc__chain_next(&it, &op, &st)) > 0 &&
                   op.kind != MRC__SEND)
                ;
            if (got < 0)
                break;
            if (got == 0)
                continue;
            for (int i = p->route_off[r]; i < p->route_off[r + 1]; i++) {
                int v = p->route_nodes[i];
                if (i + 1 < p->route_off[r + 1])
                    (*active)[(*port_first)[v] + p->route_ports[i]] = 1;
                if (i > p->route_off[r])
                    (*active)[(*port_first)[v] + p->route_in_ports[i]] = 1;
            }
        }
    }
    if (st != MRC_OK) {
        free(*port_first);
        free(*active);
        *port_first = NULL;
        *active = NULL;
    }
    return st;
}
