/*
 * Inside the shared-memory transport: the segment's layout, the endpoint,
 * and what its files share (transport.h is its interface).
 *   shm.c      the transport's operations: begin, end, cancel
 *   segment.c  creating, checking and attaching the job's segment
 *   failure.c  peers lost, calls failed, ranks that disagree
 *   p2p.c      messages: the channels, eager and rendezvous
 *   memory.c   memory semantics: publish, get, signal, wait
 *   regions.c  shared regions (mrc_mem_alloc): published, mapped by peers
 */
#ifndef MRC_SHM_INTERNAL_H
#define MRC_SHM_INTERNAL_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/common.h"
#include "transport/transport.h"

enum {
    SHM_MAGIC = 0x6d72637368, /* "mrcsh" */
    SHM_VERSION = 10,         /* 10: each rank's table of shared regions */
    TOKEN_BYTES = 32,
    HEADER_BYTES = 1 << 16,
    SLOT_HEADER = 64,
    SLOTS = 8,
    TOKENS = 1024, /* rendezvous sends in flight per rank */
    BOUNCE = 128 << 10,
    EARLY_SPARE_BYTES = 64 << 20, /* early buffers kept for reuse */
    /* A message from a shared region (mrc_mem_alloc) goes by rendezvous
     * from this size: below it the slots' copy costs less than the
     * handshake. */
    MAPPED_RENDEZVOUS_BYTES = 16 << 10,
};

/* The channels of a job share this budget (sparse until used: only ring
 * neighbours touch theirs), within per-slot limits. */
#define CHANNEL_BUDGET ((size_t)512 << 20)
#define SLOT_MAX       ((size_t)128 << 10)
#define SLOT_MIN       ((size_t)4 << 10)

typedef struct header {
    uint64_t magic; /* written last by rank 0 (release) */
    int32_t n;
    int32_t attached; /* atomic */
    uint64_t slot_bytes;
    int32_t ready; /* atomic: ranks past the rendezvous probe */
    int32_t lost;  /* atomic: 1 + the first rank seen gone, or 0 */
    uint32_t version;
    char token[TOKEN_BYTES]; /* the job's, from the launcher (or zeros) */
    /* then, for each rank: its pid (0 before attaching, -pid once left
     * cleanly), whether it can read the others' memory, and the address
     * of its probe word */
} header_t;

typedef struct rank_info {
    int32_t pid;
    int32_t can_read;
    uint64_t probe;
} rank_info_t;

/* Shared regions (regions.c): a rank's table of the regions it allocated
 * with mrc_mem_alloc, in the segment, which peers read to map them. */
enum { REGIONS = 64 };

typedef struct region_slot {
    uint64_t id;        /* atomic: 0 free, else never reused */
    uint64_t base, len; /* in the owner's memory */
    int32_t fd, pad;    /* the owner's descriptor of the region's file */
} region_slot_t;

typedef struct region_table {
    uint64_t gen;  /* atomic: bumped whenever a slot changed */
    uint64_t used; /* atomic: the slots below it may be taken */
    uint64_t pad[6];
    region_slot_t slot[REGIONS];
} region_table_t;

/* A peer's region mapped here for reading. */
typedef struct region_view {
    uint64_t id, base;
    size_t len;
    char *ptr;
} region_view_t;

typedef struct slot {
    int32_t full; /* atomic: 0 empty (sender's), 1 full (receiver's) */
    uint32_t len;
    uint64_t seq, tag, total, offset;
    uint64_t addr;  /* rendezvous: the data in the sender's memory */
    uint32_t token; /* rendezvous: the sender's completion flag */
    uint32_t rdv;
    uint64_t call; /* mrc__call_hash of the sender's call */
} slot_t;

/* A rendezvous completion flag: the receiver moves a POSTED one to
 * READING while it reads the sender's buffer, and to TAKEN after; a
 * sender that gives up moves a POSTED one to REVOKED. */
enum { RDV_POSTED, RDV_TAKEN, RDV_READING, RDV_REVOKED };
/* A rank's token 0 is no token: it counts the rendezvous its readers have
 * taken (each adds one after its RDV_TAKEN), so that the sender scans
 * its sends out only when one was. */
enum { TAKE_COUNT = 0 };

/* A piece that arrived before its receive was posted. */
typedef struct early {
    struct early *next;
    int peer;
    uint64_t seq, tag, total, got;
    uint64_t call;
    char *data;
    size_t cap; /* data's size */
    int rdv;    /* a rendezvous: addr and token instead of data */
    uint64_t addr;
    uint32_t token;
} early_t;

struct mrc__shm_endpoint {
    int n, rank;
    char name[96];
    char *base;
    size_t bytes;
    size_t slot_bytes;
    size_t rendezvous_bytes; /* mrc__shm_rendezvous_bytes(n) */
    header_t *hdr;
    rank_info_t *info;     /* [n] */
    int32_t *tokens;       /* [n][TOKENS] completion flags */
    uint32_t *free_tokens; /* this rank's unused tokens */
    int num_free;
    char *bounce;
    uint64_t seq;
    mrc__call_t call;    /* the program's call in progress */
    unsigned *send_slot; /* [n]: next slot of channel rank -> peer */
    unsigned *recv_slot; /* [n]: next slot of channel peer -> rank */
    mrc__xfer_t **sends; /* posted, not yet wholly copied in, FIFO */
    size_t num_sends, cap_sends;
    mrc__xfer_t **rdvs; /* rendezvous sends out, not yet read */
    size_t num_rdvs, cap_rdvs;
    mrc__xfer_t **recvs; /* posted, not yet done */
    size_t num_recvs, cap_recvs;
    /* Per peer: the posted receive whose rendezvous heads the channel
     * from it, waiting for its own test (drain); the sends not yet
     * wholly out to it (fill). Each pass of the executor tests every
     * chain: a look that is not O(1) here made a call of k chunks
     * O(k^2) (the tree at 4 ranks, 64 MiB in 256 chunks: 227 ms, 62 in
     * 64). */
    mrc__xfer_t **held;
    size_t *sends_to;
    int32_t reaped;  /* the count of rendezvous taken (TAKE_COUNT) reaped */
    size_t unlisted; /* rendezvous out but kept in sends (no memory) */
    /* Early messages, oldest first, so that a receive posted in the order
     * of the sends finds its own among the first; early_newest[p] is
     * peer p's newest, which the next piece from p continues. Both
     * children of the tree's root at 4 ranks run ahead of it: its list
     * held 900 messages at 128 MiB, and a walk of it for each piece, a
     * cost that grew as the square of the size, made that call 4x its
     * 64 MiB one. */
    early_t *early, *early_last, **early_newest;
    /* Records of early messages taken, kept with their buffers for the
     * next, last taken first, while they hold at most EARLY_SPARE_BYTES
     * (spare_bytes): a fresh buffer of a chunk's size is mapped by
     * malloc and faulted in page by page (a leaf of a reduce runs ahead
     * of its root every chunk; P = 2, tree, 512 KiB: 18% of the root's
     * time in page faults). A leaf runs a whole call ahead: 8 spares
     * left a 64 MiB tree's root faulting in 62 MiB of them a call. */
    early_t *spare;
    size_t spare_bytes;
    unsigned idle;
    unsigned looks; /* waits that found no flag (shm_wait) */
    double last_check;
    mrc_status_t lost; /* sticky once a peer is gone */
    int joined;        /* this rank's pid is in the header */
    uint64_t nth;      /* calls begun, by either path */
    mrc__call_t now;   /* the one in progress */
    double last_post_check;
    char token[TOKEN_BYTES];
    int all_read;    /* every rank can read every other's memory */
    uint64_t *ended; /* [n]: each rank's `ended` as last seen */
    /* This rank has ended a deep call its `ended` does not say yet: a
     * small deep call's end is written one call in ENDED_EVERY. */
    int ended_behind;
    int small_deep; /* a deep call of at most DEEP_WINDOW bytes */
    int prefetch_w; /* the core takes a line for writing on a prefetch */
    /* 1: a send buffer exposed by reference stays where it is when the
     * call just before exposed it too, and its peers read it through the
     * kernel (mrc__shm_set_send_by_ref); a new one is copied in. */
    int send_by_ref;
    /* The send buffer this rank exposed last, and in which call (nth):
     * send_by_ref reads only a buffer the call just before exposed too
     * (its lines are warm). */
    const void *last_send;
    size_t last_send_bytes;
    uint64_t last_send_nth;
    void (*on_idle)(void *); /* called now and then while waiting, or NULL */
    void *on_idle_arg;
    mrc__transport_ops_t named; /* mrc__shm_transport_named's table */
    /* Where the parts of the segment start (set_layout): found once, as
     * every flag, window and post is looked up at each call. */
    size_t win_max;
    char *windows, *posts, *channels;
    /* This call's exposure, published (shm_publish) but written to the
     * record only at the call's first signal, with that flag and the
     * stamp in one go: peers poll the record's line, and each write to it
     * while they poll costs a transfer between cores. */
    int pending;
    uint32_t pending_window;
    /* The address line of each parity holds an address (a call that
     * published buffers by reference): a call with none clears it once,
     * not at every call. */
    uint8_t ref_set[2];
    /* Whether this call compared its call with a peer's (a flag waited
     * for, a receive, the round of agreement); `unconfirmed`: seq + 1 of
     * the first call since the last look that did not (local completion:
     * a leaf of a reduce), whose calls a later publish compares with the
     * members' (memory.c). */
    int heard;
    uint64_t unconfirmed;
    /* This rank's deep calls so far, chained into one hash (each entry of
     * its log holds the chain to it): ranks whose chains meet at a call
     * agreed on every deep call up to it. */
    uint64_t chain;
    /* This call may leave a rank waiting on nobody (see "Memory
     * semantics"): its record in the ring. */
    int deep;
    /* Shared regions: this rank's table as last copied into the segment
     * (the process's generation), and its views of the peers' regions
     * ([n][REGIONS]), each peer's table generation as last looked at, and
     * the peers whose regions cannot be mapped (read through the kernel). */
    uint64_t regions_gen;
    char *regions;
    region_view_t *views;
    uint64_t *views_gen;
    char *no_views;
    int viewed;
};

static inline double mrc__shm_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline size_t tokens_bytes(int n)
{
    return ((size_t)n * TOKENS * sizeof(int32_t) + 4095) & ~(size_t)4095;
}

/* Memory semantics (publish, get, signal, wait).
 *
 * Each rank has two areas, one by the parity of a call's number, in the
 * segment (peers read them with plain loads): the record of what it
 * published for the call (its first 32 bytes: the call, its flags, the
 * window's size), its window of the call right after the record, and a
 * last line with the addresses and sizes of the buffers it exposes by
 * reference. A window holds what the largest group that can be formed
 * of the job's ranks may expose by copy (mrc__stage_max of its size); the
 * areas are touched only as used. A small call's data (up to 32 bytes)
 * is thus in the line of the record: the owner writes one line a call
 * and a peer that waited for a flag in it has the data too. Each line a
 * peer's core wrote costs a transfer between cores, and a small call's
 * time is mostly those (with the window in the next line an 8-byte
 * allreduce at P = 2 took 0.17-0.24 us, 0.12 with the data inline).
 *
 * An area is rewritten two calls on, once every member has ended the
 * call that used it, which ties a rank to its peers. A call in which a
 * rank may wait on nobody (direct1's reduce and broadcast with local
 * completion, `deep`) keeps its record instead in a ring of RECORDS
 * entries, each its record's line and a window of up to DEEP_WINDOW
 * bytes right after it, rewritten RECORDS calls on: a leaf of such reduces runs
 * up to RECORDS - RING_SLACK - 1 (55) calls ahead of its root, as an MPI
 * library's eager messages let it
 * (4-256 B at 4 ranks on 2 cores: 0.3-0.4 us a call against 1.6 through two).
 * Only those calls: a ring that every call went round is cold at each
 * turn (loops of 20 small allreduces timed 5-30% slower through 64). */
static inline size_t window_max(int n)
{
    size_t m = 0;
    for (int g = 1; g <= n; g++)
        if (mrc__stage_max(g) > m)
            m = mrc__stage_max(g);
    return m;
}

/* An area past its window: the record's line before it and the line of
 * addresses after it, 64-byte aligned. A window of at most SMALL_WINDOW
 * bytes rides in the record's line, after the record (one transfer
 * between cores for a small call); a larger one starts on the next
 * line: a peer polls the record's line while the owner copies into the
 * window, and a window sharing that line made it bounce between the
 * cores during the copy (P = 2, 512 B: 0.44 us a call against 0.37 in
 * its own lines; docs/performance.md). */
enum {
    AREA_EXTRA = 128,
    RECORD_BYTES = 32,
    SMALL_WINDOW = 64 - RECORD_BYTES,
    RECORDS = 64,
    DEEP_WINDOW = 1024
};

/* A deep call's record line and its window, one after the other in a
 * ring entry 128-byte aligned: the reader's core fetches lines in
 * aligned pairs, and a 64-256 B window then comes with the record (or
 * right after it, in the same page) as Open MPI's header and data do in
 * its fast boxes. */
enum { DEEP_ENTRY = 128 + DEEP_WINDOW };

/* A deep call's window past DEEP_WINDOW, up to WIDE_WINDOW, in a ring of
 * its own of WIDE_RECORDS entries (the record stays in the ring above):
 * rewritten WIDE_RECORDS calls on, not two, so that a leaf of such
 * reduces, or the root of such broadcasts, runs ahead of its peers too.
 * In the areas, 2-64 KiB ones at 4 ranks on 2 cores took 7-14 us a call,
 * each call's gate waiting for a peer that had no core; 1-7 through this
 * ring (1 MiB a rank). A ring apart: entries of 16 KiB in the ring of
 * records spread a small call's lines over 64 pages, and 4-512 B reduces
 * at 2 ranks took 5-18% longer in a slow spell (docs/performance.md). */
enum { WIDE_WINDOW = 65536, WIDE_RECORDS = 16 };

/* How often a rank writes the end of its small deep calls (every
 * rank's window in the ring) into its `ended` line, and how many calls ahead a
 * writer takes its own entry of the ring for writing (when it spans at most
 * WRITE_AHEAD_LINES lines: a 1 KiB window's 17 taken ahead made the 1
 * KiB reduce slower).
 *
 * Each line one core writes and the other reads moves between them, and
 * a store to a line the other core holds waits for it; stores leave the
 * core in order, so every store after it waits too. A leaf of a deep
 * reduce (the root of a deep broadcast) writes its entry, which its
 * peer read RECORDS calls before; the peer writes its `ended`, which
 * the leaf reads when its ring is full. With a line between the cores
 * at 250 ns one way (the build machine's VM, a whole session), each
 * call paid for both: 0.20-0.24 us a 4-64 B reduce or broadcast at 2
 * ranks, as many with either remedy alone, 0.13-0.18 with both
 * (docs/performance.md). */
enum { ENDED_EVERY = 16, WRITE_AHEAD = 2, WRITE_AHEAD_LINES = 9 };

/* How far short of the ring's length a writer of deep calls stops ahead
 * of its readers. At the full length its write-ahead above took for
 * writing the entry its reader was to read next, and the reader then
 * waited for the line to come back: at 2 ranks the reader of a 4 B
 * broadcast spent 10% of its time on that load (perf). 8 short, the
 * write-ahead lands on an entry read at least 6 calls before, and 4-64 B
 * broadcasts and reduces took 0.90-0.95 of the time
 * (docs/performance.md). */
enum { RING_SLACK = 8 };

static inline size_t windows_bytes(int n)
{
    return (size_t)n *
           (2 * (window_max(n) + AREA_EXTRA) + (size_t)RECORDS * DEEP_ENTRY +
            (size_t)WIDE_RECORDS * WIDE_WINDOW);
}

static inline char *area_at(const mrc__shm_endpoint_t *e, int r, uint64_t seq)
{
    return e->windows + ((size_t)r * 2 + (seq & 1)) * (e->win_max + AREA_EXTRA);
}

/* Rank r's line of the ring of records (after every rank's areas), of a
 * deep call seq, and its window of up to DEEP_WINDOW bytes in the lines
 * right after it (DEEP_ENTRY). */
static inline char *ring_record_at(const mrc__shm_endpoint_t *e, int r,
                                   uint64_t seq)
{
    return e->windows + (size_t)e->n * 2 * (e->win_max + AREA_EXTRA) +
           ((size_t)r * RECORDS + seq % RECORDS) * DEEP_ENTRY;
}

static inline char *ring_window_at(const mrc__shm_endpoint_t *e, int r,
                                   uint64_t seq)
{
    return ring_record_at(e, r, seq) + 64;
}

/* Rank r's window of a deep call seq past DEEP_WINDOW, up to WIDE_WINDOW
 * (after every rank's ring of records). */
static inline char *wide_window_at(const mrc__shm_endpoint_t *e, int r,
                                   uint64_t seq)
{
    return ring_record_at(e, e->n, 0) +
           ((size_t)r * WIDE_RECORDS + seq % WIDE_RECORDS) * WIDE_WINDOW;
}

/* Rank r's record of call seq (the calls of this rank's, e->deep). */
static inline char *record_at(const mrc__shm_endpoint_t *e, int r, uint64_t seq)
{
    return e->deep ? ring_record_at(e, r, seq) : area_at(e, r, seq);
}

/* Where rank r's window of call seq starts, for a window of `bytes`. */
static inline char *window_at(const mrc__shm_endpoint_t *e, int r, uint64_t seq,
                              size_t bytes)
{
    if (bytes <= SMALL_WINDOW)
        return record_at(e, r, seq) + RECORD_BYTES;
    if (e->deep && bytes <= DEEP_WINDOW)
        return ring_window_at(e, r, seq);
    if (e->deep && bytes <= WIDE_WINDOW)
        return wide_window_at(e, r, seq);
    return area_at(e, r, seq) + 64;
}

/* What a rank published for a call, by its parity or in its ring: the call and
 * its window's size, stamped last, and the flags. The flags are in this line,
 * not in lines of their own, so that a peer that waits and then reads polls one
 * line the owner wrote instead of two; a small window follows in the same line
 * for the same reason. */
typedef struct published {
    uint64_t seq;          /* atomic: seq + 1 of the call, written last */
    uint32_t flags;        /* atomic: bit f set once this rank has
                              signalled flag f in the call (reset before
                              seq is written) */
    uint32_t window_bytes; /* <= win_max, which is at most 8 MiB */
    mrc__call_t call;
} published_t;
_Static_assert(sizeof(published_t) == RECORD_BYTES,
               "the record is the first 32 bytes of an area");
_Static_assert(MRC__FLAGS <= 32, "a record's flags are 32 bits");

static inline published_t *pub_at(const mrc__shm_endpoint_t *e, int r,
                                  uint64_t seq)
{
    return (published_t *)record_at(e, r, seq);
}

/* Where the buffers a rank exposes by reference for a call are, in its
 * own address space (peers read them with cross-memory attach), and how
 * large, by enum mrc__mem_buf - 1 (the window's entry unused): the last
 * line of its area, read only by a get by reference. A size with
 * REF_COPIED set: the owner copied that buffer into its area instead
 * (at copied_at), and its peers read it there with plain loads. */
typedef struct by_ref {
    uint64_t addr[MRC__MEM_BUFS - 1];
    uint64_t bytes[MRC__MEM_BUFS - 1];
} by_ref_t;
_Static_assert(sizeof(by_ref_t) <= 64, "the addresses fit one line");
#define REF_COPIED ((uint64_t)1 << 63)

/* Where in rank r's area of call seq a send buffer copied in instead of
 * by reference starts: after the call's window where that is in the
 * area too, 64-byte aligned; the owner and its readers find it alike. */
static inline char *copied_at(const mrc__shm_endpoint_t *e, int r, uint64_t seq,
                              size_t window_bytes)
{
    char *base = area_at(e, r, seq) + 64;
    if (window_at(e, r, seq, window_bytes) != base)
        return base;
    return base + ((window_bytes + 63) & ~(size_t)63);
}

static inline by_ref_t *ref_at(const mrc__shm_endpoint_t *e, int r,
                               uint64_t seq)
{
    return (by_ref_t *)(area_at(e, r, seq) + 64 + e->win_max);
}

/* Each rank's post, read by the peers only while they wait for it: the
 * call it is in and how many it has begun (a peer waiting for a flag or a
 * message that will never come sees the difference), its calls by parity
 * (for the message when a peer's differs), why its last call failed (so
 * that the ranks waiting on it fail too), the last call it ended (the
 * windows' gating), and the peers reading its buffers now (so that a
 * rank whose call fails revokes its buffers before it returns). */
typedef struct rank_post {
    uint64_t nth; /* atomic: calls begun; 0 while `now` is rewritten */
    mrc__call_t now;
    mrc__call_t calls[2]; /* the call, by parity of its number, written
                             before its first message or flag */
    char pad0[8];
    int32_t failed; /* atomic: 0 none, 1 being written, 2 written */
    int32_t status, a, b;
    mrc__call_t ca, cb; /* a disagreement: rank a's and rank b's calls */
    char pad2[16];
    uint64_t ended; /* atomic: seq + 1 of the last call ended (of a
                       small deep call, at most ENDED_EVERY - 1 late) */
    char pad3[56];
    int32_t readers; /* atomic: peers inside a get of this rank's buffers */
    int32_t unused;
    uint64_t revoked; /* atomic: seq + 1 of a call that failed here */
    char pad4[48];
    /* The last RECORDS deep calls (see "Memory semantics"), by number
     * modulo RECORDS, each written at its begin: stamp (seq + 1, written
     * last; 0 while the entry is rewritten), count, meta, and the chain
     * of this rank's deep calls up to it (mrc__shm_chain). Only those: an
     * entry written at every call, in lines it goes round, took 16-19%
     * of a 64-512 B allreduce at 2 ranks (mrc-bench -n 20 -r 5 --mpi). */
    uint64_t log[RECORDS][4];
} rank_post_t;

static inline rank_post_t *post_at(const mrc__shm_endpoint_t *e, int r)
{
    return (rank_post_t *)e->posts + r;
}

/* `value` (seq + 1 of the last call ended) into this rank's `ended`
 * line. */
static inline void mrc__shm_write_ended(mrc__shm_endpoint_t *e, uint64_t value)
{
    __atomic_store_n(&post_at(e, e->rank)->ended, value, __ATOMIC_RELEASE);
    e->ended_behind = 0;
}

_Static_assert(sizeof(rank_post_t) == 256 + RECORDS * 32,
               "what peers poll keeps to lines of its own");

static inline size_t channels_at(int n)
{
    return HEADER_BYTES + tokens_bytes(n) + windows_bytes(n) +
           (size_t)n * (sizeof(rank_post_t) + sizeof(region_table_t));
}

static inline region_table_t *region_table_at(const mrc__shm_endpoint_t *e,
                                              int r)
{
    return (region_table_t *)e->regions + r;
}

/* Whether this core takes a line for writing on a prefetch (memory.c). */
int mrc__shm_prefetches_for_write(void);

/* ---- regions.c ---------------------------------------------------------- */

/* Copies the process's regions into this rank's table when they changed
 * (at the start of a call, before any address of it goes out). */
void mrc__shm_regions_publish(mrc__shm_endpoint_t *e);
/* Drops the views of regions their owners freed (a call's start). */
void mrc__shm_regions_look(mrc__shm_endpoint_t *e);
/* Where [addr, addr + bytes) of peer p's memory is mapped here, when it
 * lies in one of p's regions and p's regions can be mapped; else NULL
 * (read it through the kernel). */
const char *mrc__shm_peer_view(mrc__shm_endpoint_t *e, int p, uint64_t addr,
                               size_t bytes);
mrc_status_t mrc__shm_views_init(mrc__shm_endpoint_t *e);
void mrc__shm_views_free(mrc__shm_endpoint_t *e);

static inline char *slot_at(const mrc__shm_endpoint_t *e, int from, int to,
                            unsigned k)
{
    size_t stride = SLOT_HEADER + e->slot_bytes;
    size_t chan = ((size_t)from * (size_t)e->n + (size_t)to) * SLOTS;
    return e->channels + (chan + k) * stride;
}

/* ---- failure.c ---------------------------------------------------------- */

/* Whether rank r is there (or has left cleanly). */
int mrc__shm_peer_alive(const mrc__shm_endpoint_t *e, int r);
/* The job has lost rank r: every rank fails from now on, naming it. */
mrc_status_t mrc__shm_job_lost(mrc__shm_endpoint_t *e, int r);
/* Called while waiting: every few ms, checks that the peers are there
 * (and that none this rank waits on has failed its call). */
mrc_status_t mrc__shm_check_peers(mrc__shm_endpoint_t *e);
/* Every piece in this rank's slots, taken: into its posted receive, or
 * kept early (p2p.c). A rank that waits on a flag calls it now and
 * then: a sender held by full slots may be what it waits for. */
mrc_status_t mrc__shm_take_early(mrc__shm_endpoint_t *e);
/* Records in this rank's post why its call failed (the first reason
 * stays). */
void mrc__shm_post_failure(mrc__shm_endpoint_t *e, mrc_status_t st, int a,
                           int b, mrc__call_t ca, mrc__call_t cb);
/* Ranks a and b called different collectives (or counts, ...). */
mrc_status_t mrc__shm_disagree(mrc__shm_endpoint_t *e, int a, mrc__call_t ca,
                               int b, mrc__call_t cb);
/* MRC_OK, or the failure of peer r, taken on as this rank's own. */
mrc_status_t mrc__shm_peer_failed(mrc__shm_endpoint_t *e, int r);
/* This rank begins a call (either path): says which in its post. */
void mrc__shm_post_call(mrc__shm_endpoint_t *e, mrc__call_t call);
/* Whether peer r, in the same call as this rank, called it otherwise. */
mrc_status_t mrc__shm_call_differs(mrc__shm_endpoint_t *e, int r);
/* Rank r's call number seq from its post's log into *out: 1, or 0 when
 * r has not begun it, it was not deep, or r has gone RECORDS calls past
 * it. */
int mrc__shm_call_of(const mrc__shm_endpoint_t *e, int r, uint64_t seq,
                     mrc__call_t *out);
/* The same entry's chain of deep calls into *chain: 1, or 0 as above. */
int mrc__shm_chain_of(const mrc__shm_endpoint_t *e, int r, uint64_t seq,
                      uint64_t *chain);
/* The chain of deep calls after one more, call number seq. */
static inline uint64_t mrc__shm_chain(uint64_t chain, uint64_t seq,
                                      mrc__call_t call)
{
    return mrc__mix64(chain ^ mrc__call_hash(call) ^ seq);
}
/* While this rank waits on peer r: MRC_OK, or why r never will come. */
mrc_status_t mrc__shm_waiting_on(mrc__shm_endpoint_t *e, int r);
/* The transport's agree (transport.h): every peer has begun this call
 * and called it alike. */
mrc_status_t mrc__shm_agree(void *ctx, const int32_t *members, int num_members);

/* ---- segment.c --------------------------------------------------------- */

/* Reads `bytes` at addr of rank p's memory (cross-memory attach). */
mrc_status_t mrc__shm_read_peer(mrc__shm_endpoint_t *e, int p, void *dst,
                                uint64_t addr, size_t bytes);

/* ---- p2p.c -------------------------------------------------------------- */

/* A piece of peer's came for this call with another descriptor. */
mrc_status_t mrc__shm_message_differs(mrc__shm_endpoint_t *e, int peer);
/* Frees a list of early records and their buffers (p2p.c). */
void mrc__shm_early_free(early_t *list);
mrc_status_t mrc__shm_isend(void *ctx, const void *buf, mrc__xfer_t *x);
mrc_status_t mrc__shm_irecv(void *ctx, mrc__xfer_t *x);
mrc_status_t mrc__shm_test(void *ctx, mrc__xfer_t *x);

/* ---- memory.c ---------------------------------------------------------- */

mrc_status_t mrc__shm_publish(void *ctx, const mrc__exposure_t *x,
                              void **window);
mrc_status_t mrc__shm_get(void *ctx, int peer, int buf, uint64_t off,
                          mrc__xfer_t *x);
mrc_status_t mrc__shm_signal(void *ctx, int flag);
mrc_status_t mrc__shm_wait(void *ctx, int peer, int flag);
int mrc__shm_reads_buffers(void *ctx);

#endif /* MRC_SHM_INTERNAL_H */
