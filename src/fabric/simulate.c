/*
 * The fabric, cycle by cycle.
 *
 * Every tile s owns one latch per column on its output wires. In each
 * cycle, from the entry latch at s's column outwards, each latch loads
 * what its inner neighbour held (the packet moves one stage a cycle), and
 * the entry latch loads the packet arriving down the tile's ns(s) cycles
 * of wire. With gating, the first latch East (West) of the entry loads
 * only packets whose flags name East (West): the rest of that side then
 * stays still. A second set of latches, ungated, counts what the same
 * packets would toggle with no flags.
 *
 *     W  <- [x-1] <- [x = column(s)] -> [x+1] ->  E      (s's wires)
 *                          ^
 *                        tile s, ns(s) cycles away
 *
 * Each tile's multiplexer takes, in the cycles of its schedule, what the
 * selected sender's latch at the tile's own column holds; it arrives
 * ns(r) cycles later, and is checked against the cycle the recipient's
 * program expects it (send cycle + delay).
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "fabric/fabric_internal.h"

typedef struct sim {
    const mrc_fabric_t *f;
    const mrc_fabric_schedule_t *s;
    int32_t *gated, *ungated; /* [tiles][columns] packet held, or -1 */
    uint32_t *live;           /* [tiles] latches holding a packet (both) */
    uint64_t *queue;          /* packets by source, then send cycle */
    size_t *next, *end;       /* [tiles]: each source's part of queue */
    int32_t *wire;            /* [tiles][ring]: packets on the N-S wire */
    int ring;                 /* wire slots a tile: ns(s) < ring */
} sim_t;

static void sim_free(sim_t *m)
{
    free(m->gated);
    free(m->ungated);
    free(m->live);
    free(m->queue);
    free(m->next);
    free(m->end);
    free(m->wire);
}

/* The tiles' send queues: packets by source, each in order of its send
 * cycle (two counting sorts, so ties keep packet order). */
static mrc_status_t build_queues(sim_t *m)
{
    const mrc_fabric_schedule_t *s = m->s;
    int T = m->f->tiles;
    int64_t H = s->horizon > 0 ? s->horizon : 1;
    size_t *by_cycle = calloc((size_t)H + 1, sizeof *by_cycle);
    uint64_t *tmp = malloc(sizeof *tmp * (s->packets ? s->packets : 1));
    mrc_status_t st = MRC_OK;
    if (!by_cycle || !tmp) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    for (uint64_t p = 0; p < s->packets; p++) {
        if (s->send[p] < 0 || s->send[p] >= H) {
            st =
                mrc__error(MRC_ERR_INVALID_ARG,
                           "packet %llu: send cycle %d is outside the "
                           "schedule (0 to %lld)",
                           (unsigned long long)p, s->send[p], (long long)H - 1);
            goto done;
        }
        by_cycle[s->send[p] + 1]++;
    }
    for (int64_t c = 0; c < H; c++)
        by_cycle[c + 1] += by_cycle[c];
    for (uint64_t p = 0; p < s->packets; p++)
        tmp[by_cycle[s->send[p]]++] = p;
    for (uint64_t i = 0; i < s->packets; i++)
        m->end[s->x->source[s->entry[tmp[i]]]]++;
    size_t at = 0;
    for (int t = 0; t < T; t++) {
        m->next[t] = at;
        at += m->end[t];
        m->end[t] = m->next[t];
    }
    for (uint64_t i = 0; i < s->packets; i++)
        m->queue[m->end[s->x->source[s->entry[tmp[i]]]]++] = tmp[i];
done:
    free(by_cycle);
    free(tmp);
    return st;
}

/* One cycle of tile t's latches (one set): returns the latches that hold
 * a packet afterwards. */
static uint32_t step_latches(const mrc_fabric_schedule_t *s, int32_t *lat,
                             int columns, int col, int32_t entering, int gate)
{
    uint32_t held = 0;
    for (int x = columns - 1; x > col; x--) {
        int32_t p = lat[x - 1];
        if (x - 1 == col && p >= 0 && gate && !(s->flags[p] & MRC_FABRIC_EAST))
            p = -1;
        lat[x] = p;
        held += p >= 0;
    }
    for (int x = 0; x < col; x++) {
        int32_t p = lat[x + 1];
        if (x + 1 == col && p >= 0 && gate && !(s->flags[p] & MRC_FABRIC_WEST))
            p = -1;
        lat[x] = p;
        held += p >= 0;
    }
    lat[col] = entering;
    return held + (entering >= 0);
}

/* The simulation's state for fabric f and schedule s, its memory refused
 * up front if it would not fit: two latches per tile and column (a
 * million tiles in as many columns would be 8 TiB), the wires, the
 * queues and the counting sort's buckets. */
static mrc_status_t sim_init(sim_t *m, const mrc_fabric_t *f,
                             const mrc_fabric_schedule_t *s)
{
    int T = f->tiles, C = f->columns;
    *m = (sim_t){f, s, NULL, NULL, NULL, NULL, NULL, NULL, NULL, f->rows + 2};
    size_t lat = (size_t)T * (size_t)C;
    uint64_t need = mrc__sat_mul_add(lat, 2 * sizeof(int32_t), 0);
    need = mrc__sat_mul_add(mrc__sat_mul_add((uint64_t)T, (uint64_t)m->ring, 0),
                            sizeof(int32_t), need);
    need = mrc__sat_mul_add((uint64_t)T, 3 * sizeof(int64_t), need);
    need = mrc__sat_mul_add(s->packets, 2 * sizeof(uint64_t), need);
    need = mrc__sat_mul_add((uint64_t)(s->horizon > 0 ? s->horizon : 1) + 1,
                            sizeof(size_t), need);
    mrc_status_t st = mrc__check_memory(need, "latches and queues for the "
                                              "fabric simulation");
    if (st != MRC_OK)
        return st;
    m->gated = malloc(sizeof *m->gated * lat);
    m->ungated = malloc(sizeof *m->ungated * lat);
    m->live = calloc((size_t)T, sizeof *m->live);
    m->queue = malloc(sizeof *m->queue * (s->packets ? s->packets : 1));
    m->next = calloc((size_t)T, sizeof *m->next);
    m->end = calloc((size_t)T, sizeof *m->end);
    m->wire = malloc(sizeof *m->wire * (size_t)T * (size_t)m->ring);
    if (!m->gated || !m->ungated || !m->live || !m->queue || !m->next ||
        !m->end || !m->wire)
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory to simulate %d tiles",
                        T);
    if (st == MRC_OK)
        st = build_queues(m);
    if (st != MRC_OK) {
        sim_free(m);
        return st;
    }
    for (size_t i = 0; i < lat; i++)
        m->gated[i] = m->ungated[i] = -1;
    for (size_t i = 0; i < (size_t)T * (size_t)m->ring; i++)
        m->wire[i] = -1;
    return MRC_OK;
}

/* Cycle c at the tiles: each puts its next due packet on its wire (one a
 * cycle, so a second packet for the same cycle slips), and the packet
 * entering its column steps through the latches, gated and not. */
static void tiles_cycle(sim_t *m, int64_t c, mrc_fabric_stats_t *out)
{
    const mrc_fabric_t *f = m->f;
    const mrc_fabric_schedule_t *s = m->s;
    int C = f->columns;
    for (int t = 0; t < f->tiles; t++) {
        int32_t *w = m->wire + (size_t)t * (size_t)m->ring;
        if (m->next[t] < m->end[t] && s->send[m->queue[m->next[t]]] <= c) {
            uint64_t p = m->queue[m->next[t]++];
            out->slipped += s->send[p] < c;
            w[(c + mrc__fabric_ns(f, t)) % m->ring] = (int32_t)p;
        }
        int32_t entering = w[c % m->ring];
        w[c % m->ring] = -1;
        if (entering < 0 && m->live[t] == 0)
            continue;
        int col = mrc__fabric_col(f, t);
        uint32_t g =
            step_latches(s, m->gated + (size_t)t * C, C, col, entering, 1);
        uint32_t u =
            step_latches(s, m->ungated + (size_t)t * C, C, col, entering, 0);
        out->toggles += g;
        out->toggles_ungated += u;
        m->live[t] = u; /* the ungated set holds whatever the gated does */
    }
}

/* Cycle c at the multiplexers: what the selected wires hold at each
 * tile's column, delivered on time, late, or to the wrong tile. */
static void mux_cycle(const sim_t *m, int64_t c, mrc_fabric_stats_t *out)
{
    const mrc_fabric_t *f = m->f;
    const mrc_fabric_schedule_t *s = m->s;
    for (int r = 0; r < f->tiles; r++) {
        int src = s->mux[r][c];
        if (src < 0)
            continue;
        int32_t p = m->gated[(size_t)src * f->columns + mrc__fabric_col(f, r)];
        if (p < 0)
            continue; /* nothing there: the delivery is missed */
        size_t e = (size_t)s->entry[p];
        int64_t arrive = c + mrc__fabric_ns(f, r);
        int64_t expect = (int64_t)s->send[p] + mrc_fabric_delay(f, src, r);
        if (!mrc__exchange_has_dest(s->x, e, r) || arrive < expect)
            out->misdelivered++;
        else if (arrive == expect)
            out->delivered++;
        else
            out->late++;
        if (arrive + 1 > out->cycles)
            out->cycles = arrive + 1;
    }
}

/* Packets still queued, on a wire, or in a latch (0: none). */
static uint64_t in_flight(const sim_t *m)
{
    uint64_t n = 0;
    for (int t = 0; t < m->f->tiles && n == 0; t++)
        n += (m->end[t] - m->next[t]) + m->live[t];
    for (size_t i = 0; n == 0 && i < (size_t)m->f->tiles * (size_t)m->ring; i++)
        n += m->wire[i] >= 0;
    return n;
}

mrc_status_t mrc_fabric_simulate(const mrc_fabric_t *f,
                                 const mrc_fabric_schedule_t *s,
                                 mrc_fabric_stats_t *out)
{
    if (!f || !s || !out)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_fabric_simulate: NULL argument");
    if (s->f->tiles != f->tiles || s->f->columns != f->columns ||
        s->f->rows != f->rows)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "the schedule is for another fabric (%d tiles in "
                          "%d columns, not %d in %d)",
                          s->f->tiles, s->f->columns, f->tiles, f->columns);
    memset(out, 0, sizeof *out);
    out->packets = s->packets;
    out->deliveries = s->deliveries;
    sim_t m;
    mrc_status_t st = sim_init(&m, f, s);
    if (st != MRC_OK)
        return st;
    /* Done when every packet has been sent and the latches are still. */
    for (int64_t c = 0; c < s->horizon || in_flight(&m) > 0; c++) {
        tiles_cycle(&m, c, out);
        if (c < s->horizon)
            mux_cycle(&m, c, out);
    }
    out->missed = s->deliveries - out->delivered - out->late;
    sim_free(&m);
    return MRC_OK;
}
