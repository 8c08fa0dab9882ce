/*
 * The bulk-synchronous walks: a barrier after every step (the compute /
 * sync / exchange of seeds 001 and 003), a step ending when its last
 * message has arrived.
 *
 * - the lockstep walk: every chain of the program, one step at a time,
 *   each step a fluid simulation (fluid.c);
 * - the fast walk: one group of rings, one representative step per ring
 *   loop instead of every message (N^2 per ring);
 * - the walk by group: groups that run at once each walk their own steps
 *   behind their own barrier, sharing only the links they both use.
 *
 * For a ring of N nodes with bandwidth B and latency A, an allreduce of S
 * bytes on one bidirectional ring and one chunk is 2(N-1) steps of
 * A + S/(2NB) each: the unit tests hold the simulator to that exactly.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_internal.h"

mrc__sim_fast_t mrc__sim_fast = MRC__SIM_FAST_AUTO;

/* Above this many nodes a group is too large for the full walk, and the
 * fast walk is taken even where it is not exact. */
enum { FAST_MIN_GROUP = 4096 };

/* A growing list of flows. */
typedef struct flows {
    mrc__sim_flow_t *fl;
    int nf, cap;
} flows_t;

/* Appends flow f to b; 0, or -1 out of memory (*st). */
static int add_flow(flows_t *b, const mrc__sim_flow_t *f, mrc_status_t *st)
{
    if (mrc__grow((void **)&b->fl, &b->cap, b->nf + 1, sizeof *b->fl)) {
        *st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
        return -1;
    }
    b->fl[b->nf++] = *f;
    return 0;
}

/* Walks chains[idx[0..n)] (idx NULL: chains[0..n)) through their ops of
 * step `step` and earlier, appending the messages they make to b and
 * (node model) the nodes' own work to loc. The number of chains still
 * live, or -1 on an error (*st). */
static int step_flows(mrc__sim_t *s, mrc__sim_chain_t *chains,
                      const int32_t *idx, int n, int step, size_t esize,
                      flows_t *b, flows_t *loc, mrc_status_t *st)
{
    int live = 0;
    for (int i = 0; i < n; i++) {
        mrc__sim_chain_t *ch = &chains[idx ? idx[i] : i];
        while (!ch->done) {
            int rr = mrc__cursor_peek(ch, st);
            if (rr < 0)
                return -1;
            if (rr == 0 || ch->op.step > step)
                break;
            mrc__cursor_take(ch);
            mrc__sim_flow_t f[2];
            int made = mrc__sim_op_flow(s, ch->it.node, &ch->op, esize, f, st);
            if (made < 0)
                return -1;
            for (int j = 0; j < made; j++)
                if (add_flow(f[j].local ? loc : b, &f[j], st))
                    return -1;
        }
        live += !ch->done;
    }
    return live;
}

/* ---- every chain in lockstep ------------------------------------------ */

/* One BSP step: its messages, then (node model) each node's own work on
 * what it received, which needs the data there; its duration (ns). */
static mrc_status_t bsp_step(const mrc__sim_t *s, flows_t *b, flows_t *loc,
                             mrc__sim_ws_t *w, double *dur)
{
    mrc_status_t st = mrc__sim_reserve_for(s, w, b->fl, b->nf);
    if (st != MRC_OK)
        return st;
    *dur = b->nf ? mrc__sim_run_step(s, b->fl, b->nf, w) : 0;
    if (loc->nf == 0)
        return MRC_OK;
    if ((st = mrc__sim_reserve_for(s, w, loc->fl, loc->nf)) != MRC_OK)
        return st;
    *dur += mrc__sim_run_step(s, loc->fl, loc->nf, w);
    return MRC_OK;
}

mrc_status_t mrc__sim_run_lockstep(mrc__sim_t *s, mrc__sim_chain_t *chains,
                                   int nchains, size_t esize, mrc__sim_ws_t *w,
                                   mrc__sim_acct_t *a)
{
    flows_t b = {0}, loc = {0};
    mrc_status_t st = MRC_OK;
    for (int step = 0, live = nchains; live > 0 && st == MRC_OK; step++) {
        b.nf = loc.nf = 0;
        live = step_flows(s, chains, NULL, nchains, step, esize, &b, &loc, &st);
        if (live < 0 || b.nf + loc.nf == 0)
            continue;
        double dur;
        if ((st = bsp_step(s, &b, &loc, w, &dur)) != MRC_OK)
            break;
        mrc__sim_book_step(s, b.fl, b.nf, a->total_ns, dur, 1, a, step, -1);
        a->total_ns += dur;
        a->r->steps++;
    }
    free(b.fl);
    free(loc.fl);
    return st;
}

/* ---- large groups: one representative step per ring loop -------------- */

/* The flows of the fast walk's step: a ring loop's fragments, one per
 * node and stream at the stream's largest size, or a chain's one sender
 * per stream at step `step`. */
static mrc_status_t fast_step_flows(const mrc__sim_t *s, size_t esize, int step,
                                    flows_t *b)
{
    const mrc_program_t *p = s->p;
    const mrc__group_t *g = &p->groups[0];
    int n = g->size, whole = p->addressing == MRC__ADDR_WHOLE;
    b->nf = 0;
    for (int k = g->first_stream; k < g->first_stream + g->num_streams; k++) {
        uint64_t len = p->streams[k].slice_len;
        if (len == 0)
            continue;
        int first = 0, last = n;
        uint64_t bytes = len * esize;
        if (whole) { /* the one sender of this hop */
            int rel = p->cfg.collective == MRC_REDUCE ? step + 1 : step;
            first = (p->streams[k].root_pos + rel) % n;
            last = first + 1;
        } else if (p->addressing == MRC__ADDR_SPLIT) {
            bytes = (len + (uint64_t)n - 1) / (uint64_t)n * esize;
        }
        for (int pos = first; pos < last; pos++) {
            int u = mrc__stream_node(p, k, pos % n);
            const mrc__node_stream_t *e = mrc__node_stream(p, u, k);
            if (mrc__grow((void **)&b->fl, &b->cap, b->nf + 1, sizeof *b->fl))
                return mrc__error(MRC_ERR_NO_MEMORY,
                                  "out of memory simulating");
            b->fl[b->nf++] = (mrc__sim_flow_t){(double)bytes,
                                               0,
                                               (double)bytes,
                                               (int32_t)(e - p->node_streams),
                                               0,
                                               0};
        }
    }
    return MRC_OK;
}

/* BSP for a program of one group, without walking every message (N^2 per
 * ring). The steps of a ring loop move the same fragments over the same
 * routes, each node one per stream: one step is simulated, with every
 * fragment at the stream's largest size, and counted N-1 times per loop.
 * A chain (reduce, broadcast) is walked hop by hop: one sender per stream
 * and step. Exact when a stream's fragments are all one size (and always
 * for chains); otherwise the smaller fragments (one element less) are
 * counted at the larger size, which the full walk does only above
 * FAST_MIN_GROUP nodes, where it is out of reach. */
mrc_status_t mrc__sim_fast_bsp(const mrc__sim_t *s, mrc__sim_ws_t *w,
                               size_t esize, mrc__sim_acct_t *a)
{
    const mrc_program_t *p = s->p;
    int n = p->groups[0].size, whole = p->addressing == MRC__ADDR_WHOLE;
    int loops = mrc__program_loops(p);
    flows_t b = {0};
    mrc_status_t st = MRC_OK;
    for (int step = 0; step < (whole ? n - 1 : 1) && st == MRC_OK; step++) {
        st = fast_step_flows(s, esize, step, &b);
        if (st != MRC_OK || b.nf == 0)
            continue;
        if ((st = mrc__sim_reserve_for(s, w, b.fl, b.nf)) != MRC_OK)
            break;
        double dur = mrc__sim_run_step(s, b.fl, b.nf, w);
        double times = whole ? 1 : (double)loops * (n - 1);
        mrc__sim_book_step(s, b.fl, b.nf, a->total_ns, dur, times, a, step, -1);
        a->total_ns += dur * times;
        a->r->steps += whole ? 1 : loops * (n - 1);
    }
    free(b.fl);
    return st;
}

/* Whether the fast walk gives exactly what the full walk gives: chains,
 * or ring loops whose fragments are all one size. */
static int fast_is_exact(const mrc_program_t *p)
{
    if (p->addressing != MRC__ADDR_SPLIT)
        return 1;
    const mrc__group_t *g = &p->groups[0];
    for (int k = g->first_stream; k < g->first_stream + g->num_streams; k++)
        if (p->streams[k].slice_len % (uint64_t)g->size)
            return 0;
    return 1;
}

/* The fast walk has no node model's own work (it walks no RECV): with a
 * profile it is taken only where the full walk is out of reach. */
int mrc__sim_fast_applies(const mrc_program_t *p, mrc_sim_mode_t mode,
                          int node_model)
{
    return mode == MRC_SIM_BSP && p->num_groups == 1 &&
           p->cfg.algo == MRC_ALGO_RINGS &&
           (mrc__sim_fast == MRC__SIM_FAST_ALWAYS ||
            (mrc__sim_fast == MRC__SIM_FAST_AUTO &&
             (p->groups[0].size > FAST_MIN_GROUP ||
              (!node_model && fast_is_exact(p)))));
}

/* ---- BSP with several groups: a barrier per group ---------------------- */

/* Groups run their collectives at the same time and wait for nobody but
 * their own nodes: each walks its steps on its own clock (a step starts
 * when its group's previous step has arrived), while the flows of every
 * group in flight share the links' capacity (max-min fair, recomputed at
 * each event, as in a step). Groups of a valid embedding share no link,
 * so each then takes exactly the time it takes alone, and the run the
 * time of its slowest group. */
typedef struct gwalk {
    int first, n;      /* its chains: gidx[first .. first + n) */
    int step, steps;   /* the next step to gather; steps that moved */
    int finished;      /* every chain done */
    int pending;       /* flows of its step still moving */
    double start, end; /* its step's start; its last arrival so far */
    flows_t b;         /* its step's messages, for the accounting */
    flows_t loc;       /* its nodes' own work, after them (node model) */
    int in_local;      /* that work is under way */
} gwalk_t;

/* The walk by group: the groups, their chains, the flows in flight. */
typedef struct gstate {
    mrc__sim_t *s;
    mrc__sim_chain_t *chains;
    size_t esize;
    gwalk_t *gw;
    int32_t *gidx;  /* chains by group */
    flows_t act;    /* every group's flows in flight */
    int32_t *owner; /* beside them: the group */
    int cap_owner;
} gstate_t;

/* Joins flow f of group g to the flows in flight. */
static mrc_status_t join(gstate_t *gs, const mrc__sim_flow_t *f, int g)
{
    flows_t *a = &gs->act;
    if (mrc__grow((void **)&a->fl, &a->cap, a->nf + 1, sizeof *a->fl) ||
        mrc__grow((void **)&gs->owner, &gs->cap_owner, a->nf + 1,
                  sizeof *gs->owner))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    a->fl[a->nf] = *f;
    gs->owner[a->nf++] = g;
    return MRC_OK;
}

/* Gathers group g's next step that moves something, starting at t: its
 * flows with bytes and links join the flows in flight; the others end at
 * once, after their latency. */
static mrc_status_t gather(gstate_t *gs, int g, double t)
{
    gwalk_t *w = &gs->gw[g];
    mrc_status_t st = MRC_OK;
    w->b.nf = w->loc.nf = 0;
    w->in_local = 0;
    w->pending = 0;
    w->start = w->end = t;
    while (w->b.nf + w->loc.nf == 0) {
        int live = step_flows(gs->s, gs->chains, gs->gidx + w->first, w->n,
                              w->step, gs->esize, &w->b, &w->loc, &st);
        if (live < 0)
            return st;
        w->step++;
        if (w->b.nf + w->loc.nf == 0 && live == 0) {
            w->finished = 1;
            return MRC_OK;
        }
    }
    w->steps++;
    for (int f = 0; f < w->b.nf && st == MRC_OK; f++) {
        const mrc__sim_route_t *rt = &gs->s->routes[w->b.fl[f].route];
        if (w->b.fl[f].remaining <= 0 || rt->len == 0) {
            w->end = fmax(w->end, t + rt->latency);
            continue;
        }
        st = join(gs, &w->b.fl[f], g);
        w->pending++;
    }
    return st;
}

/* The chains by group, in their order (counting sort). */
static void index_groups(gstate_t *gs, int nchains)
{
    const mrc_program_t *p = gs->s->p;
    gwalk_t *gw = gs->gw;
    for (int i = 0; i < nchains; i++)
        gw[p->nodes[gs->chains[i].it.node].group].n++;
    for (int g = 1; g < p->num_groups; g++)
        gw[g].first = gw[g - 1].first + gw[g - 1].n;
    for (int g = 0; g < p->num_groups; g++)
        gw[g].n = 0;
    for (int i = 0; i < nchains; i++) {
        gwalk_t *w = &gw[p->nodes[gs->chains[i].it.node].group];
        gs->gidx[w->first + w->n++] = i;
    }
}

/* Groups whose step has arrived by `now` book it and start the next; the
 * number of groups still running, or -1 on an error (*st). */
static int advance(gstate_t *gs, double now, mrc__sim_acct_t *a,
                   mrc_status_t *st)
{
    int running = 0;
    for (int g = 0; g < gs->s->p->num_groups; g++) {
        gwalk_t *w = &gs->gw[g];
        while (!w->finished && w->pending == 0 && w->end <= now) {
            if (w->loc.nf > 0 && !w->in_local) { /* the nodes' own work */
                w->in_local = 1;
                for (int f = 0; f < w->loc.nf; f++, w->pending++)
                    if ((*st = join(gs, &w->loc.fl[f], g)) != MRC_OK)
                        return -1;
                continue;
            }
            mrc__sim_book_step(gs->s, w->b.fl, w->b.nf, w->start,
                               w->end - w->start, 1, a, w->step - 1, g);
            a->total_ns = fmax(a->total_ns, w->end);
            if ((*st = gather(gs, g, w->end)) != MRC_OK)
                return -1;
        }
        running += !w->finished;
    }
    return running;
}

/* The next event after now: a group's step arriving, or a flow ending. */
static mrc_status_t next_event(gstate_t *gs, mrc__sim_ws_t *ws, double now,
                               double *next)
{
    flows_t *a = &gs->act;
    *next = INFINITY;
    for (int g = 0; g < gs->s->p->num_groups; g++)
        if (!gs->gw[g].finished && gs->gw[g].pending == 0)
            *next = fmin(*next, gs->gw[g].end);
    if (a->nf > 0) {
        mrc_status_t st = mrc__sim_reserve_for(gs->s, ws, a->fl, a->nf);
        if (st != MRC_OK)
            return st;
        mrc__sim_share(gs->s, a->fl, a->nf, ws);
        for (int f = 0; f < a->nf; f++)
            if (a->fl[f].rate > 0)
                *next = fmin(*next, now + a->fl[f].remaining / a->fl[f].rate);
    }
    if (!isfinite(*next)) /* no rate and no arrival: cannot be */
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "simulation stalled at %.0f ns", now);
    return MRC_OK;
}

/* Moves the flows in flight on by dt to `now`; those finished end their
 * group's step (its last arrival so far) and leave. */
static void move_on(gstate_t *gs, double dt, double now)
{
    flows_t *a = &gs->act;
    for (int f = a->nf - 1; f >= 0; f--) {
        a->fl[f].remaining -= a->fl[f].rate * dt;
        if (!mrc__sim_flow_over(&a->fl[f], now))
            continue;
        gwalk_t *w = &gs->gw[gs->owner[f]];
        w->end = fmax(w->end,
                      now + mrc__sim_route_delay(&gs->s->routes[a->fl[f].route],
                                                 a->fl[f].bytes));
        w->pending--;
        a->fl[f] = a->fl[--a->nf];
        gs->owner[f] = gs->owner[a->nf];
    }
}

mrc_status_t mrc__sim_run_bsp_groups(mrc__sim_t *s, mrc__sim_chain_t *chains,
                                     int nchains, size_t esize,
                                     mrc__sim_ws_t *ws, mrc__sim_acct_t *a)
{
    int ng = s->p->num_groups;
    gstate_t gs = {s, chains, esize, NULL, NULL, {0}, NULL, 0};
    gs.gw = calloc((size_t)ng + 1, sizeof *gs.gw);
    gs.gidx = malloc(((size_t)nchains + 1) * sizeof *gs.gidx);
    mrc_status_t st = MRC_OK;
    if (!gs.gw || !gs.gidx) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
        goto done;
    }
    index_groups(&gs, nchains);
    for (int g = 0; g < ng && st == MRC_OK; g++)
        st = gather(&gs, g, 0);
    double now = 0, next;
    while (st == MRC_OK && advance(&gs, now, a, &st) > 0 &&
           (st = next_event(&gs, ws, now, &next)) == MRC_OK) {
        move_on(&gs, next - now, next);
        now = next;
    }
    for (int g = 0; g < ng; g++)
        if (gs.gw[g].steps > a->r->steps)
            a->r->steps = gs.gw[g].steps;
done:
    for (int g = 0; gs.gw && g < ng; g++) {
        free(gs.gw[g].b.fl);
        free(gs.gw[g].loc.fl);
    }
    free(gs.gw);
    free(gs.gidx);
    free(gs.act.fl);
    free(gs.owner);
    return st;
}
