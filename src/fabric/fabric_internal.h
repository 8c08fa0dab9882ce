/*
 * The fabric's objects, shared by the geometry, the scheduler and the
 * simulator (and by the tests, which break schedules on purpose).
 */
#ifndef MRC_FABRIC_INTERNAL_H
#define MRC_FABRIC_INTERNAL_H

#include <stdint.h>

#include "mrc/fabric.h"

struct mrc_fabric {
    int tiles, columns, rows, packet_bytes;
};

/* Entry i: source[i], its destinations dests[first[i] .. first[i + 1])
 * (sorted), bytes[i]. */
struct mrc_exchange {
    int *source;
    uint64_t *bytes;
    size_t *first; /* [entries + 1] */
    int *dests;
    size_t entries, cap_entries;
    size_t num_dests, cap_dests;
};

/* Packet p belongs to entry entry[p]; its send cycle and flags. Each
 * tile's multiplexer selections: mux[t][c] is the sender selected in
 * cycle c (-1: the null input), for c < horizon. */
struct mrc_fabric_schedule {
    const mrc_exchange_t *x; /* borrowed: must outlive the schedule */
    const mrc_fabric_t *f;   /* borrowed */
    uint64_t packets, deliveries;
    int32_t *entry; /* [packets] */
    int32_t *send;  /* [packets] send cycle */
    uint8_t *flags; /* [packets] */
    int32_t **mux;  /* [tiles][horizon] */
    int64_t horizon;
    int64_t cycles, lower_bound;
};

/* ns(t): cycles between tile t and the exchange, either way. */
static inline int mrc__fabric_ns(const mrc_fabric_t *f, int t)
{
    return 1 + t % f->rows;
}

static inline int mrc__fabric_col(const mrc_fabric_t *f, int t)
{
    return t / f->rows;
}

/* The flags a packet from `source` to `dests` needs. */
unsigned mrc__fabric_flags(const mrc_fabric_t *f, int source, const int *dests,
                           size_t n);

/* 1 if tile `t` is among the entry's (sorted) destinations. */
int mrc__exchange_has_dest(const mrc_exchange_t *x, size_t entry, int t);

/* Refuses, with the figure, an exchange or schedule that would not fit
 * in the memory limit (mrc__memory_limit): `entries` entries of `dests`
 * destinations in all still to be built (0 if built already), `packets`
 * packets making `deliveries` deliveries, and tables of at least
 * `cycles` cycles for each of `tiles` tiles. */
mrc_status_t mrc__fabric_check_memory(uint64_t entries, uint64_t dests,
                                      uint64_t packets, uint64_t deliveries,
                                      uint64_t cycles, int tiles);

#endif /* MRC_FABRIC_INTERNAL_H */
