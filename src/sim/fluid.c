/*
 * One step of the fluid model: the flows in flight share the channels'
 * capacity max-min fairly, rates recomputed whenever a flow finishes;
 * each message also pays the latency of every link on its route
 * (cut-through).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/heap.h"
#include "sim/sim_internal.h"

struct mrc__sim_hent {
    double key;
    int32_t chan, version;
};

/* The work space's per-channel arrays; 0, or -1 out of memory. */
int mrc__sim_ws_init(mrc__sim_ws_t *w, int num_chan)
{
    size_t n = (size_t)num_chan + 1;
    memset(w, 0, sizeof *w);
    w->residual = malloc(n * sizeof *w->residual);
    w->count = calloc(n, sizeof *w->count);
    w->chan_start = calloc(n, sizeof *w->chan_start);
    w->chan_fill = calloc(n, sizeof *w->chan_fill);
    w->touched = malloc(n * sizeof *w->touched);
    w->version = calloc(n, sizeof *w->version);
    return w->residual && w->count && w->chan_start && w->chan_fill &&
                   w->touched && w->version
               ? 0
               : -1;
}

void mrc__sim_ws_free(mrc__sim_ws_t *w)
{
    free(w->residual);
    free(w->count);
    free(w->chan_start);
    free(w->chan_fill);
    free(w->chan_flows);
    free(w->touched);
    free(w->frozen);
    free(w->version);
    free(w->heap);
}

/* The fair sharing's heap of (fair share, channel); entries go stale when
 * a channel's share changes, and carry the version they were pushed with. */
static int hent_before(const void *a, const void *b)
{
    return ((const mrc__sim_hent_t *)a)->key <
           ((const mrc__sim_hent_t *)b)->key;
}

static void hpush(mrc__sim_ws_t *w, double key, int chan)
{
    mrc__sim_hent_t e = {key, chan, w->version[chan]};
    mrc__heap_push(w->heap, &w->heap_n, sizeof e, &e, hent_before);
}

static mrc__sim_hent_t hpop(mrc__sim_ws_t *w)
{
    mrc__sim_hent_t top;
    mrc__heap_pop(w->heap, &w->heap_n, sizeof top, &top, hent_before);
    return top;
}

/* Max-min fair rates for the unfinished flows (progressive filling): the
 * channel with the smallest fair share freezes its flows at that share,
 * which lowers the others' residual capacity; repeat. A heap keeps it
 * O((channels + flow hops) log channels). */
static void allocate(const mrc__sim_t *s, mrc__sim_flow_t *fl, int nf,
                     mrc__sim_ws_t *w)
{
    for (int i = 0; i < w->num_touched; i++) {
        int c = w->touched[i];
        w->residual[c] = s->cap[c];
        w->count[c] = 0;
        w->version[c]++;
    }
    for (int f = 0; f < nf; f++) {
        w->frozen[f] = (uint8_t)fl[f].done;
        if (fl[f].done)
            continue;
        const mrc__sim_route_t *rt = &s->routes[fl[f].route];
        for (int q = 0; q < rt->len; q++)
            w->count[s->chan_pool[rt->first + q]]++;
    }
    w->heap_n = 0;
    for (int i = 0; i < w->num_touched; i++) {
        int c = w->touched[i];
        if (w->count[c] > 0)
            hpush(w, w->residual[c] / w->count[c], c);
    }
    while (w->heap_n > 0) {
        mrc__sim_hent_t e = hpop(w);
        int best = e.chan;
        if (e.version != w->version[best] || w->count[best] == 0)
            continue;
        double share = e.key;
        for (int j = w->chan_start[best]; j < w->chan_fill[best]; j++) {
            int f = w->chan_flows[j];
            if (w->frozen[f])
                continue;
            w->frozen[f] = 1;
            fl[f].rate = share;
            const mrc__sim_route_t *rt = &s->routes[fl[f].route];
            for (int q = 0; q < rt->len; q++) {
                int c = s->chan_pool[rt->first + q];
                w->residual[c] -= share;
                w->count[c]--;
                w->version[c]++;
                if (c != best && w->count[c] > 0)
                    hpush(w, w->residual[c] / w->count[c], c);
            }
        }
    }
}

/* Channel -> flows for the flows fl[0..nf) (chan_fill counts, then
 * fills); the channels used are listed in touched. */
static void index_channels(const mrc__sim_t *s, const mrc__sim_flow_t *fl,
                           int nf, mrc__sim_ws_t *w)
{
    w->num_touched = 0;
    for (int f = 0; f < nf; f++) {
        const mrc__sim_route_t *rt = &s->routes[fl[f].route];
        for (int q = 0; q < rt->len; q++) {
            int c = s->chan_pool[rt->first + q];
            if (w->chan_fill[c]++ == 0)
                w->touched[w->num_touched++] = c;
        }
    }
    int total = 0;
    for (int i = 0; i < w->num_touched; i++) {
        int c = w->touched[i];
        w->chan_start[c] = total;
        total += w->chan_fill[c];
        w->chan_fill[c] = w->chan_start[c];
    }
    for (int f = 0; f < nf; f++) {
        const mrc__sim_route_t *rt = &s->routes[fl[f].route];
        for (int q = 0; q < rt->len; q++) {
            int c = s->chan_pool[rt->first + q];
            w->chan_flows[w->chan_fill[c]++] = f;
        }
    }
}

static void clear_index(mrc__sim_ws_t *w)
{
    for (int i = 0; i < w->num_touched; i++)
        w->chan_fill[w->touched[i]] = 0;
    w->num_touched = 0;
}

/* Room in the work space for nf flows over `hops` channel crossings. */
int mrc__sim_reserve(mrc__sim_ws_t *w, int nf, size_t hops, int num_chan)
{
    if (nf > w->cap_flows) {
        uint8_t *q = realloc(w->frozen, (size_t)nf);
        if (!q)
            return -1;
        w->frozen = q;
        w->cap_flows = nf;
    }
    int cap = w->cap_chan_flows;
    if (mrc__grow((void **)&w->chan_flows, &cap, (int)hops + 1,
                  sizeof *w->chan_flows))
        return -1;
    w->cap_chan_flows = cap;
    return mrc__grow((void **)&w->heap, &w->heap_cap,
                     (int)(hops + (size_t)num_chan + 1), sizeof *w->heap);
}

/* Room for the flows fl[0..nf) and their channel crossings. */
mrc_status_t mrc__sim_reserve_for(const mrc__sim_t *s, mrc__sim_ws_t *w,
                                  const mrc__sim_flow_t *fl, int nf)
{
    size_t hops = 0;
    for (int f = 0; f < nf; f++)
        hops += (size_t)s->routes[fl[f].route].len;
    if (mrc__sim_reserve(w, nf, hops, s->num_chan))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    return MRC_OK;
}

/* Max-min fair rates for the flows in flight fl[0..nf) (room reserved). */
void mrc__sim_share(const mrc__sim_t *s, mrc__sim_flow_t *fl, int nf,
                    mrc__sim_ws_t *w)
{
    index_channels(s, fl, nf, w);
    allocate(s, fl, nf, w);
    clear_index(w);
}

/* Runs a step's flows to completion; returns its duration (ns). */
double mrc__sim_run_step(const mrc__sim_t *s, mrc__sim_flow_t *fl, int nf,
                         mrc__sim_ws_t *w)
{
    index_channels(s, fl, nf, w);
    double now = 0, end = 0;
    int left = 0;
    for (int f = 0; f < nf; f++) {
        const mrc__sim_route_t *rt = &s->routes[fl[f].route];
        if (fl[f].remaining <= 0 || rt->len == 0) {
            fl[f].done = 1;
            end = fmax(end, rt->latency);
        } else {
            left++;
        }
    }
    while (left > 0) {
        allocate(s, fl, nf, w);
        double dt = INFINITY;
        for (int f = 0; f < nf; f++)
            if (!fl[f].done && fl[f].rate > 0)
                dt = fmin(dt, fl[f].remaining / fl[f].rate);
        now += dt;
        for (int f = 0; f < nf; f++) {
            if (fl[f].done)
                continue;
            fl[f].remaining -= fl[f].rate * dt;
            /* Finished, allowing for rounding in the subtraction. */
            if (fl[f].remaining <= 1e-9 * fl[f].bytes) {
                fl[f].done = 1;
                left--;
                end =
                    fmax(end, now + mrc__sim_route_delay(
                                        &s->routes[fl[f].route], fl[f].bytes));
            }
        }
    }
    clear_index(w);
    return end;
}
