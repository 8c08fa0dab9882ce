/*
 * The exchange scheduler: every cycle of an exchange fixed at compile time.
 *
 * A packet from s sent in cycle t reaches destination r in cycle
 * t + delay(s, r), where r's multiplexer must select s's wires in cycle
 * t + ns(s) + |column(s) - column(r)| (the packet is then at r's column;
 * it takes ns(r) more cycles to reach r). So a packet fits at t when s
 * sends nothing else at t and no destination's multiplexer is taken at
 * its cycle. Greedy list scheduling: packets in rounds (the i-th packet of
 * every sender, then the (i+1)-th: a pattern given as permutations, such
 * as all-to-all, stays conflict-free), each at the first cycle that fits
 * from its sender's first free one.
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "fabric/fabric_internal.h"

/* Packets are indexed by int32 in the schedule's tables. */
#define MAX_PACKETS ((uint64_t)INT32_MAX)

typedef struct builder {
    const mrc_fabric_t *f;
    const mrc_exchange_t *x;
    mrc_fabric_schedule_t *s;
    uint8_t **busy;      /* [tiles][horizon]: the tile sends in that cycle */
    int32_t *first_free; /* [tiles]: no free send cycle before this */
} builder_t;

static mrc_status_t check_tiles(const mrc_fabric_t *f, const mrc_exchange_t *x)
{
    for (size_t e = 0; e < x->entries; e++) {
        if (x->source[e] >= f->tiles)
            return mrc__error(MRC_ERR_INVALID_ARG,
                              "exchange entry %zu: source %d is not a tile "
                              "(the fabric has %d)",
                              e, x->source[e], f->tiles);
        for (size_t k = x->first[e]; k < x->first[e + 1]; k++)
            if (x->dests[k] >= f->tiles)
                return mrc__error(MRC_ERR_INVALID_ARG,
                                  "exchange entry %zu: destination %d is "
                                  "not a tile (the fabric has %d)",
                                  e, x->dests[k], f->tiles);
    }
    return MRC_OK;
}

static uint64_t packets_of(const mrc_fabric_t *f, uint64_t bytes)
{
    uint64_t pb = (uint64_t)f->packet_bytes;
    return bytes / pb + (bytes % pb != 0); /* no wrap near 2^64 */
}

/* The longest trip of entry e's packets (to its farthest destination). */
static int entry_delay(const mrc_fabric_t *f, const mrc_exchange_t *x, size_t e)
{
    int d = 0;
    for (size_t k = x->first[e]; k < x->first[e + 1]; k++) {
        int dk = mrc_fabric_delay(f, x->source[e], x->dests[k]);
        d = dk > d ? dk : d;
    }
    return d;
}

static int cmp_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

static int cmp_asc(const void *a, const void *b)
{
    return cmp_desc(b, a);
}

/* The lower bound of mrc/fabric.h: for each tile, its packets one a
 * cycle, longest trip first (when sending) or in order of trip (when
 * receiving: none arrives before its trip). */
static mrc_status_t lower_bound(const mrc_fabric_t *f, const mrc_exchange_t *x,
                                int64_t *out)
{
    int T = f->tiles;
    size_t *n_out = calloc((size_t)T + 1, sizeof *n_out);
    size_t *n_in = calloc((size_t)T + 1, sizeof *n_in);
    uint64_t total_out = 0, total_in = 0;
    mrc_status_t st = MRC_OK;
    int *d_out = NULL, *d_in = NULL;
    if (!n_out || !n_in)
        goto oom;
    for (size_t e = 0; e < x->entries; e++) {
        uint64_t k = packets_of(f, x->bytes[e]);
        n_out[x->source[e] + 1] += k;
        total_out += k;
        for (size_t j = x->first[e]; j < x->first[e + 1]; j++) {
            n_in[x->dests[j] + 1] += k;
            total_in += k;
        }
    }
    for (int t = 0; t < T; t++) {
        n_out[t + 1] += n_out[t];
        n_in[t + 1] += n_in[t];
    }
    d_out = malloc(sizeof *d_out * (total_out ? total_out : 1));
    d_in = malloc(sizeof *d_in * (total_in ? total_in : 1));
    if (!d_out || !d_in)
        goto oom;
    for (size_t e = 0; e < x->entries; e++) {
        uint64_t k = packets_of(f, x->bytes[e]);
        int s = x->source[e], de = entry_delay(f, x, e);
        for (uint64_t i = 0; i < k; i++)
            d_out[n_out[s]++] = de;
        for (size_t j = x->first[e]; j < x->first[e + 1]; j++) {
            int r = x->dests[j], dr = mrc_fabric_delay(f, s, r);
            for (uint64_t i = 0; i < k; i++)
                d_in[n_in[r]++] = dr;
        }
    }
    /* The fills moved each start to the next tile's: tile t's are now
     * [n[t - 1], n[t]). */
    int64_t bound = 0;
    for (int t = 0; t < T; t++) {
        size_t a = t ? n_out[t - 1] : 0, b = n_out[t];
        qsort(d_out + a, b - a, sizeof *d_out, cmp_desc);
        for (size_t i = a; i < b; i++)
            if ((int64_t)(i - a) + d_out[i] + 1 > bound)
                bound = (int64_t)(i - a) + d_out[i] + 1;
        a = t ? n_in[t - 1] : 0;
        b = n_in[t];
        qsort(d_in + a, b - a, sizeof *d_in, cmp_asc);
        int64_t arrive = -1;
        for (size_t i = a; i < b; i++)
            arrive = arrive + 1 > d_in[i] ? arrive + 1 : d_in[i];
        if (arrive + 1 > bound)
            bound = arrive + 1;
    }
    *out = bound;
    goto done;
oom:
    st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory for the lower bound");
done:
    free(n_out);
    free(n_in);
    free(d_out);
    free(d_in);
    return st;
}

/* Makes every tile's tables reach cycle `need` (doubling). */
static mrc_status_t reach(builder_t *b, int64_t need)
{
    mrc_fabric_schedule_t *s = b->s;
    if (need < s->horizon)
        return MRC_OK;
    int64_t h = s->horizon > 0 ? s->horizon : 64;
    while (h <= need)
        h *= 2;
    size_t old = (size_t)s->horizon;
    /* A mux entry and a busy byte per tile and cycle. */
    if (h > INT32_MAX)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "the schedule would need %lld cycles of %d tiles "
                          "(at most %d)",
                          (long long)h, b->f->tiles, INT32_MAX);
    mrc_status_t st =
        mrc__fabric_check_memory(0, 0, 0, 0, (uint64_t)h, b->f->tiles);
    if (st != MRC_OK)
        return st;
    for (int t = 0; t < b->f->tiles; t++) {
        int32_t *m = realloc(s->mux[t], (size_t)h * sizeof *m);
        if (m)
            s->mux[t] = m;
        uint8_t *u = m ? realloc(b->busy[t], (size_t)h) : NULL;
        if (!u)
            return mrc__error(MRC_ERR_NO_MEMORY,
                              "out of memory for %lld cycles of %d tiles",
                              (long long)h, b->f->tiles);
        b->busy[t] = u;
        for (size_t c = old; c < (size_t)h; c++)
            m[c] = -1;
        memset(u + old, 0, (size_t)h - old);
    }
    s->horizon = h;
    return MRC_OK;
}

/* Does packet p of entry e fit at cycle t? */
static int fits(const builder_t *b, size_t e, int64_t t)
{
    const mrc_fabric_t *f = b->f;
    const mrc_exchange_t *x = b->x;
    int src = x->source[e];
    if (b->busy[src][t])
        return 0;
    int64_t at = t + mrc__fabric_ns(f, src);
    int cs = mrc__fabric_col(f, src);
    for (size_t k = x->first[e]; k < x->first[e + 1]; k++) {
        int r = x->dests[k], dc = mrc__fabric_col(f, r) - cs;
        if (b->s->mux[r][at + (dc < 0 ? -dc : dc)] >= 0)
            return 0;
    }
    return 1;
}

static void place(builder_t *b, uint64_t p, size_t e, int64_t t)
{
    const mrc_fabric_t *f = b->f;
    const mrc_exchange_t *x = b->x;
    mrc_fabric_schedule_t *s = b->s;
    int src = x->source[e];
    b->busy[src][t] = 1;
    s->send[p] = (int32_t)t;
    int64_t at = t + mrc__fabric_ns(f, src);
    int cs = mrc__fabric_col(f, src);
    for (size_t k = x->first[e]; k < x->first[e + 1]; k++) {
        int r = x->dests[k], dc = mrc__fabric_col(f, r) - cs;
        int64_t c = at + (dc < 0 ? -dc : dc);
        s->mux[r][c] = src;
        if (c + mrc__fabric_ns(f, r) + 1 > s->cycles)
            s->cycles = c + mrc__fabric_ns(f, r) + 1;
    }
    while (b->first_free[src] < s->horizon && b->busy[src][b->first_free[src]])
        b->first_free[src]++;
}

/* Places every packet, in rounds across the senders. */
static mrc_status_t place_all(builder_t *b, const uint64_t *first_packet)
{
    const mrc_fabric_t *f = b->f;
    const mrc_exchange_t *x = b->x;
    int T = f->tiles;
    /* Each sender's entries in order: CSR by source. */
    size_t *start = calloc((size_t)T + 1, sizeof *start);
    size_t *list = malloc(sizeof *list * (x->entries ? x->entries : 1));
    int *active = malloc(sizeof *active * (size_t)T);
    size_t *at_entry = calloc((size_t)T, sizeof *at_entry);
    uint64_t *at_packet = calloc((size_t)T, sizeof *at_packet);
    mrc_status_t st = MRC_OK;
    if (!start || !list || !active || !at_entry || !at_packet) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    for (size_t e = 0; e < x->entries; e++)
        start[x->source[e] + 1]++;
    for (int t = 0; t < T; t++)
        start[t + 1] += start[t];
    for (size_t e = 0; e < x->entries; e++)
        list[start[x->source[e]] + at_entry[x->source[e]]++] = e;
    int num_active = 0;
    for (int t = 0; t < T; t++) {
        at_entry[t] = start[t];
        if (start[t + 1] > start[t])
            active[num_active++] = t;
    }
    /* Round by round: each active sender places its next packet. */
    while (num_active > 0 && st == MRC_OK) {
        int keep = 0;
        for (int i = 0; i < num_active && st == MRC_OK; i++) {
            int src = active[i];
            size_t e = list[at_entry[src]];
            uint64_t p = first_packet[e] + at_packet[src];
            int reach_ahead = entry_delay(f, x, e);
            int64_t t = b->first_free[src];
            for (;;) {
                st = reach(b, t + reach_ahead);
                if (st != MRC_OK || fits(b, e, t))
                    break;
                t++;
            }
            if (st != MRC_OK)
                break;
            b->s->entry[p] = (int32_t)e;
            place(b, p, e, t);
            if (++at_packet[src] == first_packet[e + 1] - first_packet[e]) {
                at_packet[src] = 0;
                at_entry[src]++;
            }
            if (at_entry[src] < start[src + 1])
                active[keep++] = src;
        }
        num_active = keep;
    }
done:
    free(start);
    free(list);
    free(active);
    free(at_entry);
    free(at_packet);
    return st;
}

/* Packets per entry (first_packet[e] .. first_packet[e + 1]), and the
 * totals of packets and deliveries; refused past MAX_PACKETS. */
static mrc_status_t count_packets(const mrc_fabric_t *f,
                                  const mrc_exchange_t *x,
                                  uint64_t *first_packet, uint64_t *packets,
                                  uint64_t *deliveries)
{
    *packets = *deliveries = 0;
    first_packet[0] = 0;
    for (size_t e = 0; e < x->entries; e++) {
        uint64_t k = packets_of(f, x->bytes[e]);
        if (k > MAX_PACKETS - *packets)
            return mrc__error(MRC_ERR_INVALID_ARG,
                              "the exchange has more than %llu packets "
                              "(of %d bytes)",
                              (unsigned long long)MAX_PACKETS, f->packet_bytes);
        *packets += k;
        *deliveries += k * (x->first[e + 1] - x->first[e]);
        first_packet[e + 1] = *packets;
    }
    return MRC_OK;
}

/* The memory a schedule takes, refused up front: no tile's tables can
 * be shorter than its busiest tile sends or receives (one packet a
 * cycle), plus the slack reach() adds. */
static mrc_status_t check_schedule_memory(const mrc_fabric_t *f,
                                          const mrc_exchange_t *x,
                                          const uint64_t *first_packet,
                                          uint64_t packets, uint64_t deliveries)
{
    uint64_t *load = calloc((size_t)f->tiles + 1, sizeof *load);
    uint64_t busiest = 0;
    if (!load)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (size_t e = 0; e < x->entries; e++) {
        uint64_t k = first_packet[e + 1] - first_packet[e];
        load[x->source[e]] += k;
        for (size_t j = x->first[e]; j < x->first[e + 1]; j++)
            load[x->dests[j]] += k;
    }
    for (int t = 0; t < f->tiles; t++)
        busiest = load[t] > busiest ? load[t] : busiest;
    free(load);
    return mrc__fabric_check_memory(0, 0, packets, deliveries,
                                    busiest + busiest / 4 + 64, f->tiles);
}

/* Schedule s (its totals set) built: every packet placed, its flags. */
static mrc_status_t build(builder_t *b, const uint64_t *first_packet)
{
    const mrc_fabric_t *f = b->f;
    const mrc_exchange_t *x = b->x;
    mrc_fabric_schedule_t *s = b->s;
    uint64_t n = s->packets ? s->packets : 1;
    s->entry = malloc(sizeof *s->entry * n);
    s->send = malloc(sizeof *s->send * n);
    s->flags = malloc(n);
    s->mux = calloc((size_t)f->tiles, sizeof *s->mux);
    b->busy = calloc((size_t)f->tiles, sizeof *b->busy);
    b->first_free = calloc((size_t)f->tiles, sizeof *b->first_free);
    if (!s->entry || !s->send || !s->flags || !s->mux || !b->busy ||
        !b->first_free)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory for %llu packets",
                          (unsigned long long)s->packets);
    mrc_status_t st = lower_bound(f, x, &s->lower_bound);
    /* Room for a schedule a quarter longer than the bound. */
    if (st == MRC_OK)
        st = reach(b, s->lower_bound + s->lower_bound / 4 + 64);
    if (st == MRC_OK)
        st = place_all(b, first_packet);
    for (uint64_t p = 0; st == MRC_OK && p < s->packets; p++) {
        size_t e = (size_t)s->entry[p];
        s->flags[p] =
            (uint8_t)mrc__fabric_flags(f, x->source[e], x->dests + x->first[e],
                                       x->first[e + 1] - x->first[e]);
    }
    return st;
}

mrc_status_t mrc_fabric_schedule(const mrc_fabric_t *f, const mrc_exchange_t *x,
                                 mrc_fabric_schedule_t **out)
{
    if (!f || !x || !out)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_fabric_schedule: NULL argument");
    *out = NULL;
    mrc_status_t st = check_tiles(f, x);
    if (st != MRC_OK)
        return st;
    uint64_t *first_packet = malloc(sizeof *first_packet * (x->entries + 1));
    if (!first_packet)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    uint64_t packets = 0, deliveries = 0;
    st = count_packets(f, x, first_packet, &packets, &deliveries);
    if (st == MRC_OK)
        st = check_schedule_memory(f, x, first_packet, packets, deliveries);
    mrc_fabric_schedule_t *s = NULL;
    builder_t b = {f, x, NULL, NULL, NULL};
    if (st == MRC_OK && !(s = calloc(1, sizeof *s)))
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory for %llu packets",
                        (unsigned long long)packets);
    if (st == MRC_OK) {
        s->f = f;
        s->x = x;
        s->packets = packets;
        s->deliveries = deliveries;
        b.s = s;
        st = build(&b, first_packet);
    }
    for (int t = 0; b.busy && t < f->tiles; t++)
        free(b.busy[t]);
    free(b.busy);
    free(b.first_free);
    free(first_packet);
    if (st != MRC_OK) {
        mrc_fabric_schedule_destroy(s);
        return st;
    }
    *out = s;
    return MRC_OK;
}

void mrc_fabric_schedule_destroy(mrc_fabric_schedule_t *s)
{
    if (!s)
        return;
    for (int t = 0; s->mux && t < s->f->tiles; t++)
        free(s->mux[t]);
    free(s->mux);
    free(s->entry);
    free(s->send);
    free(s->flags);
    free(s);
}

void mrc_fabric_schedule_info(const mrc_fabric_schedule_t *s,
                              mrc_fabric_schedule_info_t *out)
{
    out->packets = s->packets;
    out->deliveries = s->deliveries;
    out->cycles = s->cycles;
    out->lower_bound_cycles = s->lower_bound;
}

int mrc_fabric_packet_source(const mrc_fabric_schedule_t *s, uint64_t p)
{
    return p < s->packets ? s->x->source[s->entry[p]] : -1;
}

int64_t mrc_fabric_packet_send_cycle(const mrc_fabric_schedule_t *s, uint64_t p)
{
    return p < s->packets ? s->send[p] : -1;
}

unsigned mrc_fabric_packet_flags(const mrc_fabric_schedule_t *s, uint64_t p)
{
    return p < s->packets ? s->flags[p] : 0;
}

int mrc_fabric_mux_select(const mrc_fabric_schedule_t *s, int tile,
                          int64_t cycle)
{
    if (tile < 0 || tile >= s->f->tiles || cycle < 0 || cycle >= s->horizon)
        return -1;
    return s->mux[tile][cycle];
}
