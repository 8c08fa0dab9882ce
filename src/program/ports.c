/*
 * The port mask (see mrc__port_phase_t): which ports each node leaves idle
 * in each phase of the program, for the transports (a link that a phase
 * leaves idle may be switched off) and the simulator's energy figure.
 *
 * It is found by walking every node's chains in lockstep, step by step,
 * as the simulator's BSP mode does: the ports that the step's messages
 * leave and enter by (along the whole route of a relayed hop) are marked,
 * and a step whose marks equal the step before's extends its phase. A
 * ring program comes out as one phase per collective (its loops use the
 * same ports at every step), a chain as one phase per step.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"

typedef mrc__cursor_t walk_t;

typedef struct builder {
    int32_t *port_first; /* [num_nodes + 1]: into the marks */
    uint8_t *mark;       /* this step's ports in use */
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
        if ((j + 1 < p->route_off[r + 1] &&
             mark(b, p, v, p->route_ports[j])) ||
            (j > p->route_off[r] && mark(b, p, v, p->route_in_ports[j])))
            return -1;
    }
    return 0;
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

mrc_status_t mrc__port_mask_build(mrc_program_t *p)
{
    free_mask(p);
    for (int g = 0; g < p->num_groups; g++)
        if (p->groups[g].size > MRC__PORT_MASK_MAX_GROUP)
            return MRC_OK;
    builder_t b;
    memset(&b, 0, sizeof b);
    walk_t *w = calloc((size_t)p->num_entries + 1, sizeof *w);
    b.port_first = calloc((size_t)p->num_nodes + 1, sizeof *b.port_first);
    mrc_status_t st = MRC_OK;
    if (!w || !b.port_first)
        goto oom;
    for (int u = 0; u < p->num_nodes; u++)
        b.port_first[u + 1] = b.port_first[u] + p->nodes[u].num_ports;
    b.mark = calloc((size_t)b.port_first[p->num_nodes] + 1, 1);
    if (!b.mark)
        goto oom;
    int nw = 0;
    for (int u = 0; u < p->num_nodes; u++) {
        int g = p->nodes[u].group;
        if (g < 0)
            continue;
        for (int j = 0; j < p->groups[g].num_streams; j++) {
            int k = p->groups[g].first_stream + j;
            if (mrc__stream_chunks(p, k, UINT64_MAX) > 0)
                mrc__chain_begin(&w[nw++].it, p, u, k, 0, 1, 0);
        }
    }
    for (int step = 0, live = nw; live > 0; step++) {
        live = 0;
        for (int i = 0; i < nw; i++) {
            walk_t *c = &w[i];
            while (!c->done) {
                int r = mrc__cursor_peek(c, &st);
                if (r < 0)
                    goto done;
                if (r == 0)
                    break;
                if (c->op.step > step)
                    break;
                c->has_op = 0;
                if (c->op.kind == MRC__SEND &&
                    mark_route(&b, p, c->it.node, c->op.stream))
                    goto oom;
            }
            live += !c->done;
        }
        collect(&b);
        if (add_step(&b, step))
            goto oom;
        b.num_cur = 0;
    }
    p->port_phases = b.phases;
    p->port_uses = b.uses;
    p->num_port_phases = b.num_phases;
    p->num_port_uses = b.num_uses;
    if (b.num_phases > 0)
        b.phases[b.num_phases] = (mrc__port_phase_t){0, 0, b.num_uses};
    b.phases = NULL;
    b.uses = NULL;
    goto done;
oom:
    st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory finding the port mask");
done:
    free(w);
    free(b.port_first);
    free(b.mark);
    free(b.cur);
    free(b.phases);
    free(b.uses);
    return st;
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
    int lo = p->port_phases[ph].first_use, hi = p->port_phases[ph + 1].first_use;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (p->port_uses[mid].node < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int i = lo; i < p->port_phases[ph + 1].first_use &&
                     p->port_uses[i].node == u;
         i++)
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
