/*
 * The tile exchange fabric inside a chip (seed 001): time-deterministic
 * exchange with direction flags.
 *
 * A chip's T tiles stand in C North-South columns along an East-West
 * exchange. Every tile owns a set of output wires that runs the length of
 * the exchange, through one latch per column (a stage); a latch holds a
 * packet for one cycle of the common clock. A packet carries no
 * destination: it reaches a recipient after a delay fixed by distance,
 * and the recipient's multiplexer selects the sender's wires at exactly
 * that cycle. Two direction flags in the packet's header (East, West) let
 * the latches in a direction the flags do not name stay still: the energy
 * of toggling them is saved.
 *
 *   delay(s, r) = ns(s) + |column(s) - column(r)| + ns(r)
 *
 * where ns(t) = 1 + t's row (its distance from the exchange, in cycles).
 * Exchanges follow BSP (compute, sync, exchange): every cycle of the
 * exchange is fixed at compile time by mrc_fabric_schedule(), and
 * mrc_fabric_simulate() plays the schedule on the latches cycle by cycle
 * and checks every delivery. docs/fabric.md describes the model.
 */
#ifndef MRC_FABRIC_H
#define MRC_FABRIC_H

#include <stddef.h>
#include <stdint.h>

#include "mrc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Direction flags of a packet. */
enum { MRC_FABRIC_EAST = 1, MRC_FABRIC_WEST = 2 };

#define MRC_FABRIC_DEFAULT_TILES        1472
#define MRC_FABRIC_DEFAULT_COLUMNS      16
#define MRC_FABRIC_DEFAULT_PACKET_BYTES 4

typedef struct mrc_fabric_config {
    int tiles;        /* 0: 1472 */
    int columns;      /* 0: 16 (at most the tiles) */
    int packet_bytes; /* bytes a packet carries; 0: 4 (32 wires) */
} mrc_fabric_config_t;

typedef struct mrc_fabric mrc_fabric_t;
typedef struct mrc_exchange mrc_exchange_t;
typedef struct mrc_fabric_schedule mrc_fabric_schedule_t;

/* The geometry. Tiles are numbered column by column, West to East; in a
 * column by row, from the exchange outwards; the last column may be
 * shorter. */
MRC_EXTERN mrc_status_t mrc_fabric_create(const mrc_fabric_config_t *cfg,
                                          mrc_fabric_t **out);
MRC_EXTERN void mrc_fabric_destroy(mrc_fabric_t *f);
MRC_EXTERN int mrc_fabric_tiles(const mrc_fabric_t *f);
MRC_EXTERN int mrc_fabric_columns(const mrc_fabric_t *f);
/* tiles in a full column */
MRC_EXTERN int mrc_fabric_rows(const mrc_fabric_t *f);
MRC_EXTERN int mrc_fabric_packet_bytes(const mrc_fabric_t *f);
MRC_EXTERN int mrc_fabric_column_of(const mrc_fabric_t *f, int tile);
MRC_EXTERN int mrc_fabric_row_of(const mrc_fabric_t *f, int tile);
/* Cycles from a send by `source` to its arrival at `dest`. */
MRC_EXTERN int mrc_fabric_delay(const mrc_fabric_t *f, int source, int dest);

/* An exchange: a list of {source tile, destination tiles, bytes}; each
 * entry becomes ceil(bytes / packet_bytes) packets, each multicast to
 * all of the entry's destinations. */
MRC_EXTERN mrc_status_t mrc_exchange_create(mrc_exchange_t **out);
MRC_EXTERN void mrc_exchange_destroy(mrc_exchange_t *x);
/* Copies `dests`; refuses an empty list, a repeated destination, the
 * source among its destinations, or 0 bytes. Tile numbers are checked
 * against a fabric when the exchange is scheduled. */
MRC_EXTERN mrc_status_t mrc_exchange_add(mrc_exchange_t *x, int source,
                                         const int *dests, int num_dests,
                                         uint64_t bytes);
MRC_EXTERN size_t mrc_exchange_entries(const mrc_exchange_t *x);
/* A named pattern over `tiles` tiles in `columns` columns, one packet
 * (`bytes`) per entry:
 *   neighbour   every tile to the tile of its row one column East (the
 *               last column's West): traffic mostly one way
 *   broadcast   tile 0 to every other tile (one multicast)
 *   random      every tile to 8 tiles drawn with `seed`
 *   all-to-all  every tile to every other tile (T(T-1) entries) */
MRC_EXTERN mrc_status_t mrc_exchange_pattern(const char *name, int tiles,
                                             int columns, uint64_t seed,
                                             uint64_t bytes,
                                             mrc_exchange_t **out);
/* 1 if `name` is one of the named patterns above. */
MRC_EXTERN int mrc_exchange_is_pattern(const char *name);
/* Reads an exchange from a JSON file:
 *   {"tiles": 8, "columns": 2,          (both optional)
 *    "exchange": [{"source": 0, "destinations": [1, 5], "bytes": 8}, ...]}
 * ("bytes" defaults to 4, one packet of the default size). Sets *tiles and
 * *columns to the file's values, or 0 where it has none. Errors name the file
 * and the entry (line and column for bad JSON). */
MRC_EXTERN mrc_status_t mrc_exchange_read(const char *path,
                                          mrc_exchange_t **out, int *tiles,
                                          int *columns);
/* The same from text in memory; `origin` names it in errors. */
MRC_EXTERN mrc_status_t mrc_exchange_parse_json(const char *text, size_t len,
                                                const char *origin,
                                                mrc_exchange_t **out,
                                                int *tiles, int *columns);

/* The compile-time schedule (it borrows f and x, which must outlive it):
 * a send cycle and flags for every packet,
 * and each tile's multiplexer selection per cycle, such that every
 * destination sees its packet exactly at the fixed delay, no tile sends
 * two packets in a cycle and no multiplexer selects two. Greedy
 * list scheduling; its length is reported beside a lower bound. */
MRC_EXTERN mrc_status_t mrc_fabric_schedule(const mrc_fabric_t *f,
                                            const mrc_exchange_t *x,
                                            mrc_fabric_schedule_t **out);
MRC_EXTERN void mrc_fabric_schedule_destroy(mrc_fabric_schedule_t *s);

typedef struct mrc_fabric_schedule_info {
    uint64_t packets;
    uint64_t deliveries; /* packet x destination pairs */
    int64_t cycles;      /* from the first send (cycle 0) to the last
                            arrival, inclusive */
    /* No schedule is shorter: the largest, over tiles, of the shortest
     * time to send its packets one a cycle (longest trip first), and of
     * the shortest time to receive its packets one a cycle, none before
     * its trip. It weighs the most packets any tile sends or receives
     * together with their trips (their plain sum would not be a bound). */
    int64_t lower_bound_cycles;
} mrc_fabric_schedule_info_t;

MRC_EXTERN void mrc_fabric_schedule_info(const mrc_fabric_schedule_t *s,
                                         mrc_fabric_schedule_info_t *out);
/* Packet p (0 <= p < packets): its source, send cycle and flags. */
MRC_EXTERN int mrc_fabric_packet_source(const mrc_fabric_schedule_t *s,
                                        uint64_t p);
MRC_EXTERN int64_t mrc_fabric_packet_send_cycle(const mrc_fabric_schedule_t *s,
                                                uint64_t p);
MRC_EXTERN unsigned mrc_fabric_packet_flags(const mrc_fabric_schedule_t *s,
                                            uint64_t p);
/* The sender whose wires tile `tile`'s multiplexer selects in `cycle`, or
 * -1 (the null input). */
MRC_EXTERN int mrc_fabric_mux_select(const mrc_fabric_schedule_t *s, int tile,
                                     int64_t cycle);

typedef struct mrc_fabric_stats {
    uint64_t packets;
    uint64_t deliveries;      /* expected: packet x destination pairs */
    uint64_t delivered;       /* the right packet at its cycle */
    uint64_t misdelivered;    /* a tile received a packet not meant for it */
    uint64_t late;            /* the right packet after its cycle */
    uint64_t missed;          /* expected and never received */
    uint64_t slipped;         /* packets a tile could not send in their cycle
                                 (it had another to send in it) */
    int64_t cycles;           /* simulated: to the last arrival, inclusive */
    uint64_t toggles;         /* latch loads, latches gated by the flags */
    uint64_t toggles_ungated; /* the same packets with no gating */
} mrc_fabric_stats_t;

/* Plays the schedule on the fabric cycle by cycle: tiles put packets on
 * their wires at their send cycles (one a cycle), latches pass them one
 * stage a cycle in the directions their flags name (and, counted beside,
 * in both directions to the ends of the exchange), multiplexers take what
 * the selected wires hold at their column. Every arrival is checked
 * against the cycle the recipient's program expects it. */
MRC_EXTERN mrc_status_t mrc_fabric_simulate(const mrc_fabric_t *f,
                                            const mrc_fabric_schedule_t *s,
                                            mrc_fabric_stats_t *out);

#ifdef __cplusplus
}
#endif

#endif /* MRC_FABRIC_H */
