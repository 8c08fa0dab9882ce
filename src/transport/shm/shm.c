/*
 * The shared-memory transport: ranks are processes of one host.
 *
 * One POSIX shared-memory segment per job, "/mrc-JOB-seg", created by rank
 * 0 (O_EXCL, mode 0600) and unlinked as soon as every rank has attached
 * (the name is 128 random bits from the launcher, so it cannot be
 * guessed). The other ranks open it without following links and refuse
 * it unless it is this user's, mode 0600 exactly, of the size the job
 * needs, with a header of the right magic and version and the job's token
 * (from the launcher): a segment another user made first, or one left by
 * an earlier job of the same name, is refused with the reason. It holds
 * the header (the ranks' pids), each rank's rendezvous completion flags,
 * and one channel per ordered pair of ranks: a ring of slots, each
 * written by the sender only while empty and read by the receiver only
 * while full (one writer, one reader, no locks).
 *
 * Agreement: before any rank reads a peer's data it compares the peer's
 * call (collective, count, dtype, op, root), published beside the first
 * signal the peer gives anyway (a slot's stamp, a message's header), with
 * its own; on a difference every rank that sees it fails naming both
 * ranks and both calls, and a rank whose call fails says so in its post,
 * so the peers waiting on it fail with the same message instead of
 * waiting out the timeout.
 *
 * Small messages are eager: a send is copied into the channel piece by
 * piece and is done when its last piece is in; the receiver reduces (or copies)
 * each piece straight from the slot into its destination. A piece for a
 * receive not yet posted (the sender may be ahead, even a call ahead) is
 * kept in private memory until it is. So a channel never stays full and
 * no order of posting can deadlock.
 *
 * Large messages go by rendezvous when the kernel lets ranks read each
 * other's memory (cross-memory attach, probed when the job starts): the
 * slot carries only the sender's address, the receiver reads the data
 * straight from the sender's buffer (into its destination for a copy, or
 * through a small cache-resident bounce buffer for a reduction) and sets
 * the sender's completion flag. One copy instead of two.
 *
 * Memory semantics, for the direct programs: a rank publishes its
 * buffers of a call (their addresses and sizes, stamped with the call's
 * number and its descriptor) and gets a window in the segment, one of two
 * by the call's parity, which it may reuse once every member has ended
 * the call two before. A get from a window is a plain load from the
 * segment; a get from a buffer published by reference reads it with
 * cross-memory attach (through the bounce buffer when it reduces),
 * pinned by a reader count in the owner's post, so that an owner whose
 * call fails revokes its buffers and waits for the reads in flight before
 * it returns. Reads outside what the owner published are refused. Flags
 * are bits of the record a rank publishes for a call, in the line that
 * holds the call and the bounds of its buffers, so that a peer that waits
 * for a flag and then reads polls one line of the owner's, not two; a
 * wait is one look (the executor polls), and while the flag is not there
 * it watches the peers as a receive does.
 *
 * A peer that dies is seen directly: a rank that waits checks its peers'
 * pids every few milliseconds and fails with MRC_ERR_PEER_LOST.
 */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "reduce/reduce.h"
#include "transport/transport.h"

enum {
    SHM_MAGIC = 0x6d72637368, /* "mrcsh" */
    SHM_VERSION = 5,
    TOKEN_BYTES = 32,
    HEADER_BYTES = 1 << 16,
    SLOT_HEADER = 64,
    SLOTS = 8,
    TOKENS = 1024, /* rendezvous sends in flight per rank */
    RDV_MIN = 16 << 10,
    BOUNCE = 128 << 10,
};

/* The channels of a job share this budget (sparse until used: only ring
 * neighbours touch theirs), within per-slot limits. */
#define CHANNEL_BUDGET ((size_t)512 << 20)
#define SLOT_MAX ((size_t)128 << 10)
#define SLOT_MIN ((size_t)4 << 10)

typedef struct header {
    uint64_t magic; /* written last by rank 0 (release) */
    int32_t n;
    int32_t attached; /* atomic */
    uint64_t slot_bytes;
    int32_t ready;    /* atomic: ranks past the rendezvous probe */
    int32_t lost;     /* atomic: 1 + the first rank seen gone, or 0 */
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

static volatile uint64_t probe_word = 0x70726f6265; /* "probe" */

typedef struct slot {
    int32_t full; /* atomic: 0 empty (sender's), 1 full (receiver's) */
    uint32_t len;
    uint64_t seq, tag, total, offset;
    uint64_t addr;  /* rendezvous: the data in the sender's memory */
    uint32_t token; /* rendezvous: the sender's completion flag */
    uint32_t rdv;
    uint64_t call;  /* mrc__call_hash of the sender's call */
} slot_t;

/* A rendezvous completion flag: the receiver moves a POSTED one to
 * READING while it reads the sender's buffer, and to TAKEN after; a
 * sender that gives up moves a POSTED one to REVOKED. */
enum { RDV_POSTED, RDV_TAKEN, RDV_READING, RDV_REVOKED };

/* A piece that arrived before its receive was posted. */
typedef struct early {
    struct early *next;
    int peer;
    uint64_t seq, tag, total, got;
    uint64_t call;
    char *data;
    int rdv; /* a rendezvous: addr and token instead of data */
    uint64_t addr;
    uint32_t token;
} early_t;

struct mrc__shm_endpoint {
    int n, rank;
    char name[96];
    char *base;
    size_t bytes;
    size_t slot_bytes;
    header_t *hdr;
    rank_info_t *info;      /* [n] */
    int32_t *tokens;        /* [n][TOKENS] completion flags */
    uint32_t *free_tokens;  /* this rank's unused tokens */
    int num_free;
    char *bounce;
    uint64_t seq;
    mrc__call_t call;    /* the program's call in progress */
    unsigned *send_slot; /* [n]: next slot of channel rank -> peer */
    unsigned *recv_slot; /* [n]: next slot of channel peer -> rank */
    mrc__xfer_t **sends; /* posted, not yet wholly copied in, FIFO */
    size_t num_sends, cap_sends;
    mrc__xfer_t **rdvs;  /* rendezvous sends out, not yet read */
    size_t num_rdvs, cap_rdvs;
    mrc__xfer_t **recvs; /* posted, not yet done */
    size_t num_recvs, cap_recvs;
    early_t *early;
    unsigned idle;
    unsigned looks; /* waits that found no flag (shm_wait) */
    double last_check;
    mrc_status_t lost; /* sticky once a peer is gone */
    int joined;        /* this rank's pid is in the header */
    uint64_t nth;        /* calls begun, by either path */
    mrc__call_t now;     /* the one in progress */
    double last_post_check;
    char token[TOKEN_BYTES];
    int all_read;       /* every rank can read every other's memory */
    uint64_t *ended;    /* [n]: each rank's `ended` as last seen */
    void (*on_idle)(void *); /* called now and then while waiting, or NULL */
    void *on_idle_arg;
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
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static size_t tokens_bytes(int n)
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
 * allreduce at P = 2 took 0.17-0.24 us, 0.12 with the data inline). */
static size_t window_max(int n)
{
    size_t m = 0;
    for (int g = 1; g <= n; g++)
        if (mrc__stage_max(g) > m)
            m = mrc__stage_max(g);
    return m;
}

/* An area past its window: the record before it (RECORD_BYTES) and the
 * line of addresses after it, 64-byte aligned. */
enum { AREA_EXTRA = 128, RECORD_BYTES = 32 };

static size_t windows_bytes(int n)
{
    return (size_t)n * 2 * (window_max(n) + AREA_EXTRA);
}

static char *area_at(const mrc__shm_endpoint_t *e, int r, uint64_t seq)
{
    return e->windows +
           ((size_t)r * 2 + (seq & 1)) * (e->win_max + AREA_EXTRA);
}

static char *window_at(const mrc__shm_endpoint_t *e, int r, uint64_t seq)
{
    return area_at(e, r, seq) + RECORD_BYTES;
}

/* What a rank published for a call, by its parity (the start of its
 * area): the call and its window's size, stamped last, and the flags.
 * The flags are in this line, not in lines of their own, so that a peer
 * that waits and then reads polls one line the owner wrote instead of
 * two; the window follows in the same line for the same reason. */
typedef struct published {
    uint64_t seq;          /* atomic: seq + 1 of the call, written last */
    uint32_t flags;        /* atomic: bit f set once this rank has
                              signalled flag f in the call (reset before
                              seq is written) */
    uint32_t window_bytes; /* <= win_max, which is at most 2 MiB */
    mrc__call_t call;
} published_t;
_Static_assert(sizeof(published_t) == RECORD_BYTES,
               "the record is the first 32 bytes of an area");
_Static_assert(MRC__FLAGS <= 32, "a record's flags are 32 bits");

static published_t *pub_at(const mrc__shm_endpoint_t *e, int r,
                           uint64_t seq)
{
    return (published_t *)area_at(e, r, seq);
}

/* Where the buffers a rank exposes by reference for a call are, in its
 * own address space (peers read them with cross-memory attach), and how
 * large, by enum mrc__mem_buf - 1 (the window's entry unused): the last
 * line of its area, read only by a get by reference. */
typedef struct by_ref {
    uint64_t addr[MRC__MEM_BUFS - 1];
    uint64_t bytes[MRC__MEM_BUFS - 1];
} by_ref_t;
_Static_assert(sizeof(by_ref_t) <= 64, "the addresses fit one line");

static by_ref_t *ref_at(const mrc__shm_endpoint_t *e, int r, uint64_t seq)
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
    char pad1[8];
    int32_t failed; /* atomic: 0 none, 1 being written, 2 written */
    int32_t status, a, b;
    mrc__call_t ca, cb; /* a disagreement: rank a's and rank b's calls */
    char pad2[16];
    uint64_t ended; /* atomic: seq + 1 of the last call ended */
    char pad3[56];
    int32_t readers;  /* atomic: peers inside a get of this rank's buffers */
    int32_t unused;
    uint64_t revoked; /* atomic: seq + 1 of a call that failed here */
    char pad4[48];
} rank_post_t;

static rank_post_t *post_at(const mrc__shm_endpoint_t *e, int r)
{
    return (rank_post_t *)e->posts + r;
}

_Static_assert(sizeof(rank_post_t) == 256,
               "what peers poll keeps to lines of its own");

static size_t channels_at(int n)
{
    return HEADER_BYTES + tokens_bytes(n) + windows_bytes(n) +
           (size_t)n * sizeof(rank_post_t);
}

static char *slot_at(const mrc__shm_endpoint_t *e, int from, int to,
                     unsigned k)
{
    size_t stride = SLOT_HEADER + e->slot_bytes;
    size_t chan = ((size_t)from * (size_t)e->n + (size_t)to) * SLOTS;
    return e->channels + (chan + k) * stride;
}

/* Finds where the parts of the segment mapped at e->base start, in the
 * order the accessors above lay them out. */
static void set_layout(mrc__shm_endpoint_t *e)
{
    size_t n = (size_t)e->n;
    e->win_max = window_max(e->n);
    e->windows = e->base + HEADER_BYTES + tokens_bytes(e->n);
    e->posts = e->windows + windows_bytes(e->n);
    e->channels = e->posts + n * sizeof(rank_post_t);
    assert(e->channels == e->base + channels_at(e->n));
}

static size_t segment_bytes(int n, size_t slot_bytes)
{
    return channels_at(n) +
           (size_t)n * (size_t)n * SLOTS * (SLOT_HEADER + slot_bytes);
}

static size_t pick_slot_bytes(int n)
{
    size_t pairs = (size_t)n * (size_t)(n > 1 ? n - 1 : 1);
    size_t s = CHANNEL_BUDGET / pairs / SLOTS;
    s = s > SLOT_MAX ? SLOT_MAX : s < SLOT_MIN ? SLOT_MIN : s;
    return s & ~(size_t)63;
}


/* ---- peers ------------------------------------------------------------ */

/* A rank that has left cleanly has sent all it had to: its data stays in
 * the segment for the others to take. Only a rank that vanished without
 * leaving is lost. */
static int peer_alive(const mrc__shm_endpoint_t *e, int r)
{
    pid_t pid = __atomic_load_n(&e->info[r].pid, __ATOMIC_ACQUIRE);
    return pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH;
}

/* The job has lost rank r: every rank fails from now on, naming it (a
 * survivor that gave up may leave descriptors that can no longer be
 * read; those failures are this loss too). */
static mrc_status_t job_lost(mrc__shm_endpoint_t *e, int r)
{
    int32_t none = 0;
    __atomic_compare_exchange_n(&e->hdr->lost, &none, r + 1, 0,
                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    r = __atomic_load_n(&e->hdr->lost, __ATOMIC_ACQUIRE) - 1;
    int32_t pid = e->info[r].pid;
    e->lost = mrc__error(MRC_ERR_PEER_LOST, "rank %d: rank %d (pid %d) is gone",
                         e->rank, r, pid < 0 ? -pid : pid);
    return e->lost;
}

static mrc_status_t pending_failed(mrc__shm_endpoint_t *e);
struct rank_post;
static mrc_status_t failure_error(const mrc__shm_endpoint_t *e,
                                  const struct rank_post *p);

/* Called while waiting: every few ms, checks that the peers are there
 * (and that none this rank waits on has failed its call). */
static mrc_status_t check_peers(mrc__shm_endpoint_t *e)
{
    if (e->lost != MRC_OK)
        return e->lost;
    const rank_post_t *mine = post_at(e, e->rank);
    if (__atomic_load_n(&mine->failed, __ATOMIC_ACQUIRE) == 2)
        return failure_error(e, mine);
    int32_t lost = __atomic_load_n(&e->hdr->lost, __ATOMIC_ACQUIRE);
    if (lost > 0)
        return job_lost(e, lost - 1);
    if (++e->idle % 256)
        return MRC_OK;
    double t = now_s();
    if (t - e->last_check < 0.005)
        return MRC_OK;
    e->last_check = t;
    for (int r = 0; r < e->n; r++)
        if (r != e->rank && !peer_alive(e, r))
            return job_lost(e, r);
    return pending_failed(e);
}

/* ---- failures and disagreements ---------------------------------------- */

/* Records in this rank's post why its call failed (the first reason
 * stays): a disagreement between ranks a and b (b >= 0, their calls ca
 * and cb), or status st of rank a. */
static void post_failure(mrc__shm_endpoint_t *e, mrc_status_t st, int a,
                         int b, mrc__call_t ca, mrc__call_t cb)
{
    rank_post_t *p = post_at(e, e->rank);
    int32_t none = 0;
    if (!__atomic_compare_exchange_n(&p->failed, &none, 1, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    p->status = st;
    p->a = a;
    p->b = b;
    p->ca = ca;
    p->cb = cb;
    __atomic_store_n(&p->failed, 2, __ATOMIC_RELEASE);
}

/* Ranks a and b called different collectives (or counts, ...): the
 * message, kept in this rank's post for the ranks waiting on it. */
static mrc_status_t disagree(mrc__shm_endpoint_t *e, int a, mrc__call_t ca,
                             int b, mrc__call_t cb)
{
    post_failure(e, MRC_ERR_INVALID_ARG, a, b, ca, cb);
    return mrc__call_mismatch(a, ca, b, cb);
}

/* The failure recorded in post p, as the error it was. */
static mrc_status_t failure_error(const mrc__shm_endpoint_t *e,
                                  const struct rank_post *p)
{
    if (p->status == MRC_ERR_INVALID_ARG && p->b >= 0)
        return mrc__call_mismatch(p->a, p->ca, p->b, p->cb);
    return mrc__error((mrc_status_t)p->status,
                      "rank %d: rank %d failed its call (%s), so this call "
                      "cannot complete",
                      e->rank, p->a, mrc_status_name((mrc_status_t)p->status));
}

/* MRC_OK, or the failure of peer r, taken on as this rank's own (so the
 * ranks waiting on this one learn it in turn). */
static mrc_status_t peer_failed(mrc__shm_endpoint_t *e, int r)
{
    const rank_post_t *p = post_at(e, r);
    if (__atomic_load_n(&p->failed, __ATOMIC_ACQUIRE) != 2)
        return MRC_OK;
    /* A lost rank is named as such, whoever saw it first. */
    if (p->status == MRC_ERR_PEER_LOST &&
        __atomic_load_n(&e->hdr->lost, __ATOMIC_ACQUIRE) > 0)
        return job_lost(e, 0);
    post_failure(e, (mrc_status_t)p->status, p->a, p->b, p->ca, p->cb);
    return failure_error(e, p);
}

/* This rank begins a call (either path): says which in its post. */
static void post_call(mrc__shm_endpoint_t *e, mrc__call_t call)
{
    rank_post_t *p = post_at(e, e->rank);
    e->now = call;
    __atomic_store_n(&p->nth, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&p->now.count, call.count, __ATOMIC_RELAXED);
    __atomic_store_n(&p->now.meta, call.meta, __ATOMIC_RELAXED);
    __atomic_store_n(&p->nth, ++e->nth, __ATOMIC_RELEASE);
}

/* Whether peer r, in the same call as this rank (its nth too), called
 * it with another collective, count, type, op or root: then it may wait
 * in another path, or for messages this rank will never send. */
static mrc_status_t call_differs(mrc__shm_endpoint_t *e, int r)
{
    rank_post_t *p = post_at(e, r);
    if (__atomic_load_n(&p->nth, __ATOMIC_ACQUIRE) != e->nth)
        return MRC_OK;
    /* A seqlock: the peer may be on to its next call meanwhile. */
    mrc__call_t theirs = {__atomic_load_n(&p->now.count, __ATOMIC_RELAXED),
                          __atomic_load_n(&p->now.meta, __ATOMIC_RELAXED)};
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&p->nth, __ATOMIC_RELAXED) != e->nth ||
        mrc__call_same(theirs, e->now))
        return MRC_OK;
    return disagree(e, r, theirs, e->rank, e->now);
}

/* The program's peers this rank waits on: has one failed? */
static mrc_status_t pending_failed(mrc__shm_endpoint_t *e)
{
    for (size_t i = 0; i < e->num_recvs + e->num_sends + e->num_rdvs; i++) {
        size_t j = i - e->num_recvs, k = j - e->num_sends;
        int p = i < e->num_recvs   ? e->recvs[i]->peer
                : j < e->num_sends ? e->sends[j]->peer
                                   : e->rdvs[k]->peer;
        mrc_status_t st = peer_failed(e, p);
        if (st == MRC_OK)
            st = call_differs(e, p);
        if (st != MRC_OK)
            return st; /* and in this rank's post: said at every look */
    }
    return MRC_OK;
}

/* ---- attaching -------------------------------------------------------- */

/* Whether the segment open on fd can be this job's: a regular object of
 * this user's, mode 0600 exactly (as rank 0 creates it; another user's,
 * or one anybody may write, was not made by this job), of the size the
 * job needs. MRC_INPROGRESS while rank 0 has not sized it yet. */
static mrc_status_t check_segment(const mrc__shm_endpoint_t *e, int fd,
                                  size_t bytes)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: cannot stat shared memory %s: %s",
                          e->rank, e->name, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: shared memory %s is not a regular "
                          "object: refused",
                          e->rank, e->name);
    if (sb.st_uid != geteuid())
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: shared memory %s belongs to uid %ld, not "
                          "to this user (uid %ld): another user made it "
                          "first; refused",
                          e->rank, e->name, (long)sb.st_uid,
                          (long)geteuid());
    /* Rank 0 sets the mode before the size: until it has a size, the
     * mode may still be the umask's. */
    if (sb.st_size == 0)
        return MRC_INPROGRESS;
    if ((sb.st_mode & 07777) != 0600)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: shared memory %s has mode %04o, not "
                          "0600: not made by this job; refused",
                          e->rank, e->name, (unsigned)(sb.st_mode & 07777));
    if ((uint64_t)sb.st_size != bytes)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: shared memory %s is %lld bytes, not the "
                          "%zu of a job of %d ranks: not this job's; refused",
                          e->rank, e->name, (long long)sb.st_size, bytes,
                          e->n);
    return MRC_OK;
}

/* The header rank 0 wrote: MRC_INPROGRESS until it has. */
static mrc_status_t check_header(const mrc__shm_endpoint_t *e)
{
    const header_t *h = e->hdr;
    uint64_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
    if (magic == 0)
        return MRC_INPROGRESS;
    if (magic != SHM_MAGIC || h->version != SHM_VERSION)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: shared memory %s has no mrc header of "
                          "version %d (magic %#llx, version %u): not this "
                          "job's; refused",
                          e->rank, e->name, SHM_VERSION,
                          (unsigned long long)magic, h->version);
    if (memcmp(h->token, e->token, TOKEN_BYTES) != 0)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: shared memory %s carries another job's "
                          "token (one left by an earlier job of the same "
                          "id?); refused",
                          e->rank, e->name);
    if (h->n != e->n || h->slot_bytes != e->slot_bytes)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "rank %d: the job has %d ranks, this rank was "
                          "told %d",
                          e->rank, h->n, e->n);
    return MRC_OK;
}

static mrc_status_t open_segment(mrc__shm_endpoint_t *e, double timeout_s)
{
    size_t bytes = segment_bytes(e->n, e->slot_bytes);
    int fd;
    if (e->rank == 0) {
        fd = shm_open(e->name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
        if (fd < 0 && errno == EEXIST)
            return mrc__error(MRC_ERR_TRANSPORT,
                              "rank 0: shared memory %s already exists "
                              "(another user's, or left by an earlier job "
                              "of the same id); refused",
                              e->name);
        if (fd < 0)
            return mrc__error(MRC_ERR_TRANSPORT,
                              "rank 0: cannot create shared memory %s: %s",
                              e->name, strerror(errno));
        /* The umask may have taken bits away; the peers want 0600. */
        if (fchmod(fd, 0600) != 0) {
            int err = errno;
            close(fd);
            shm_unlink(e->name);
            return mrc__error(MRC_ERR_TRANSPORT,
                              "rank 0: cannot set the mode of shared memory "
                              "%s: %s",
                              e->name, strerror(err));
        }
        if (ftruncate(fd, (off_t)bytes) != 0) {
            int err = errno;
            close(fd);
            shm_unlink(e->name);
            return mrc__error(MRC_ERR_TRANSPORT,
                              "rank 0: cannot size shared memory %s to %zu "
                              "bytes: %s",
                              e->name, bytes, strerror(err));
        }
    } else {
        double start = now_s();
        for (;;) {
            fd = shm_open(e->name, O_RDWR | O_NOFOLLOW, 0);
            mrc_status_t st = fd >= 0 ? check_segment(e, fd, bytes) : MRC_OK;
            if (fd >= 0 && st == MRC_OK)
                break;
            if (fd >= 0)
                close(fd);
            if (st != MRC_OK && st != MRC_INPROGRESS)
                return st;
            else if (fd < 0 && errno != ENOENT)
                return mrc__error(MRC_ERR_TRANSPORT,
                                  "rank %d: cannot open shared memory %s: %s",
                                  e->rank, e->name, strerror(errno));
            if (now_s() - start > timeout_s)
                return mrc__error(MRC_ERR_TIMEOUT,
                                  "rank %d: rank 0 did not create the job's "
                                  "shared memory within %g s",
                                  e->rank, timeout_s);
            usleep(1000);
        }
    }
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = errno;
    close(fd);
    if (m == MAP_FAILED)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: cannot map %zu bytes of shared memory: %s",
                          e->rank, bytes, strerror(err));
    e->base = m;
    e->bytes = bytes;
    e->hdr = m;
    set_layout(e);
    return MRC_OK;
}

/* Reads `bytes` at `addr` in rank p's memory. */
static mrc_status_t read_peer(mrc__shm_endpoint_t *e, int p, void *dst,
                              uint64_t addr, size_t bytes)
{
    while (bytes > 0) {
        struct iovec l = {dst, bytes}, r = {(void *)(uintptr_t)addr, bytes};
        ssize_t got = process_vm_readv(e->info[p].pid, &l, 1, &r, 1, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0 && (errno == ESRCH || !peer_alive(e, p)))
            return job_lost(e, p);
        if (got <= 0 && __atomic_load_n(&e->hdr->lost, __ATOMIC_ACQUIRE))
            return job_lost(e, 0); /* names the rank first seen gone */
        if (got <= 0)
            return mrc__error(MRC_ERR_TRANSPORT,
                              "rank %d: cannot read %zu bytes of rank %d: %s",
                              e->rank, bytes, p,
                              got < 0 ? strerror(errno) : "nothing read");
        dst = (char *)dst + got;
        addr += (uint64_t)got;
        bytes -= (size_t)got;
    }
    return MRC_OK;
}

/* Can this rank read every peer's memory (process_vm_readv: the kernel
 * may forbid it, as Yama does)? Each rank says so in the header; senders
 * use rendezvous only towards ranks that can. Then waits for all. */
static mrc_status_t probe_peers(mrc__shm_endpoint_t *e, double timeout_s)
{
    int ok = 1;
    for (int p = 0; p < e->n && ok; p++) {
        uint64_t v = 0;
        struct iovec l = {&v, sizeof v},
                     r = {(void *)(uintptr_t)e->info[p].probe, sizeof v};
        ok = process_vm_readv(e->info[p].pid, &l, 1, &r, 1, 0) ==
                 (ssize_t)sizeof v &&
             v == probe_word;
    }
    e->bounce = ok ? malloc(BOUNCE) : NULL;
    e->free_tokens = malloc(TOKENS * sizeof *e->free_tokens);
    if (!e->free_tokens)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int t = 0; t < TOKENS; t++)
        e->free_tokens[e->num_free++] = (uint32_t)(TOKENS - 1 - t);
    __atomic_store_n(&e->info[e->rank].can_read, ok && e->bounce != NULL,
                     __ATOMIC_RELEASE);
    __atomic_add_fetch(&e->hdr->ready, 1, __ATOMIC_ACQ_REL);
    double start = now_s();
    while (__atomic_load_n(&e->hdr->ready, __ATOMIC_ACQUIRE) < e->n) {
        for (int r = 0; r < e->n; r++)
            if (!peer_alive(e, r))
                return mrc__error(MRC_ERR_PEER_LOST,
                                  "rank %d: rank %d died while the job "
                                  "started",
                                  e->rank, r);
        if (now_s() - start > timeout_s)
            return mrc__error(MRC_ERR_TIMEOUT,
                              "rank %d: the ranks did not all start within "
                              "%g s",
                              e->rank, timeout_s);
        usleep(200);
    }
    e->all_read = 1;
    for (int r = 0; r < e->n; r++)
        e->all_read &= __atomic_load_n(&e->info[r].can_read, __ATOMIC_ACQUIRE);
    return MRC_OK;
}

mrc_status_t mrc__shm_attach(int nranks, int rank, const char *job,
                             const char *token, double timeout_s,
                             mrc__shm_endpoint_t **out)
{
    *out = NULL;
    if ((size_t)nranks * sizeof(rank_info_t) + sizeof(header_t) >
        HEADER_BYTES)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "shared memory takes at most %zu ranks, not %d",
                          (HEADER_BYTES - sizeof(header_t)) /
                              sizeof(rank_info_t),
                          nranks);
    mrc__shm_endpoint_t *e = calloc(1, sizeof *e);
    if (!e)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    e->n = nranks;
    e->rank = rank;
    e->slot_bytes = pick_slot_bytes(nranks);
    snprintf(e->name, sizeof e->name, "/mrc-%s-seg", job);
    if (token)
        memcpy(e->token, token, strnlen(token, sizeof e->token));
    e->send_slot = calloc((size_t)nranks, sizeof *e->send_slot);
    e->recv_slot = calloc((size_t)nranks, sizeof *e->recv_slot);
    e->ended = calloc((size_t)nranks, sizeof *e->ended);
    mrc_status_t st = e->send_slot && e->recv_slot && e->ended
                          ? open_segment(e, timeout_s)
                          : mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    if (st != MRC_OK) {
        mrc__shm_detach(e);
        return st;
    }
    header_t *h = e->hdr;
    e->info = (rank_info_t *)(e->base + sizeof(header_t));
    e->tokens = (int32_t *)(e->base + HEADER_BYTES);
    if (rank == 0) {
        h->n = nranks;
        h->slot_bytes = e->slot_bytes;
        h->version = SHM_VERSION;
        memcpy(h->token, e->token, TOKEN_BYTES);
        __atomic_store_n(&h->magic, (uint64_t)SHM_MAGIC, __ATOMIC_RELEASE);
    } else {
        double start = now_s();
        while ((st = check_header(e)) == MRC_INPROGRESS) {
            if (now_s() - start > timeout_s) {
                st = mrc__error(MRC_ERR_TIMEOUT,
                                "rank %d: the job's shared memory was not "
                                "set up within %g s",
                                rank, timeout_s);
                break;
            }
            usleep(1000);
        }
        if (st != MRC_OK) {
            mrc__shm_detach(e);
            return st;
        }
    }
    e->info[rank].probe = (uint64_t)(uintptr_t)&probe_word;
    __atomic_store_n(&e->info[rank].pid, (int32_t)getpid(), __ATOMIC_RELEASE);
    e->joined = 1;
    __atomic_add_fetch(&h->attached, 1, __ATOMIC_ACQ_REL);
    /* Everybody in: the name goes (nobody else can open it from now on). */
    double start = now_s();
    while (__atomic_load_n(&h->attached, __ATOMIC_ACQUIRE) < nranks) {
        for (int r = 0; r < nranks; r++)
            if (!peer_alive(e, r)) {
                st = mrc__error(MRC_ERR_PEER_LOST,
                                "rank %d: rank %d died while the job started",
                                rank, r);
                break;
            }
        if (st == MRC_OK && now_s() - start > timeout_s)
            st = mrc__error(MRC_ERR_TIMEOUT,
                            "rank %d: %d of %d ranks attached within %g s",
                            rank, h->attached, nranks, timeout_s);
        if (st != MRC_OK) {
            if (rank == 0)
                shm_unlink(e->name);
            mrc__shm_detach(e);
            return st;
        }
        usleep(200);
    }
    if (rank == 0)
        shm_unlink(e->name);
    st = probe_peers(e, timeout_s);
    if (st != MRC_OK) {
        mrc__shm_detach(e);
        return st;
    }
    *out = e;
    return MRC_OK;
}

void mrc__shm_detach(mrc__shm_endpoint_t *e)
{
    if (!e)
        return;
    if (e->joined) { /* never write to a segment that was refused */
        int32_t pid = e->info[e->rank].pid;
        if (pid > 0)
            __atomic_store_n(&e->info[e->rank].pid, -pid, __ATOMIC_RELEASE);
    }
    if (e->base) {
        munmap(e->base, e->bytes);
    }
    while (e->early) {
        early_t *x = e->early;
        e->early = x->next;
        free(x->data);
        free(x);
    }
    free(e->send_slot);
    free(e->recv_slot);
    free(e->ended);
    free(e->free_tokens);
    free(e->bounce);
    free(e->sends);
    free(e->rdvs);
    free(e->recvs);
    free(e);
}

/* ---- moving data ------------------------------------------------------ */

static int push(void ***list, size_t *n, size_t *cap, void *item)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        void **q = realloc(*list, c * sizeof *q);
        if (!q)
            return -1;
        *list = q;
        *cap = c;
    }
    (*list)[(*n)++] = item;
    return 0;
}

/* Applies `len` bytes at `offset` of a message to its receive. */
static void apply(mrc__xfer_t *x, uint64_t offset, const void *src,
                  size_t len)
{
    size_t esize = mrc_dtype_size(x->dtype);
    char *dst = (char *)x->dst + offset;
    if (x->local)
        mrc__reduce(dst, (const char *)x->local + offset, src, len / esize,
                    x->dtype, x->op);
    else
        memcpy(dst, src, len);
    x->priv[1] += len;
    if (x->priv[1] == x->bytes)
        __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
}

/* A rendezvous: reads the whole message from the sender's buffer (into
 * the destination for a copy; through the bounce buffer for a reduction)
 * and raises the sender's completion flag. */
static mrc_status_t take_rdv(mrc__shm_endpoint_t *e, mrc__xfer_t *x,
                             uint64_t addr, uint32_t token)
{
    int32_t *flag = &e->tokens[(size_t)x->peer * TOKENS + token];
    int32_t posted = RDV_POSTED;
    if (!__atomic_compare_exchange_n(flag, &posted, RDV_READING, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        /* The sender gave up its call and took its buffer back. */
        mrc_status_t st = peer_failed(e, x->peer);
        return st != MRC_OK ? st
                            : mrc__error(MRC_ERR_TRANSPORT,
                                         "rank %d: rank %d withdrew its "
                                         "data",
                                         e->rank, x->peer);
    }
    mrc_status_t st = MRC_OK;
    if (!x->local) {
        st = read_peer(e, x->peer, x->dst, addr, x->bytes);
        x->priv[1] = x->bytes;
    } else {
        size_t esize = mrc_dtype_size(x->dtype);
        size_t step = BOUNCE / esize * esize;
        for (size_t off = 0; off < x->bytes && st == MRC_OK; off += step) {
            size_t len = x->bytes - off < step ? x->bytes - off : step;
            st = read_peer(e, x->peer, e->bounce, addr + off, len);
            if (st == MRC_OK)
                apply(x, off, e->bounce, len);
        }
    }
    /* Failed, the buffer is the sender's to revoke again. */
    __atomic_store_n(flag, st == MRC_OK ? RDV_TAKEN : RDV_POSTED,
                     __ATOMIC_RELEASE);
    if (st != MRC_OK)
        return st;
    __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
    return MRC_OK;
}

static mrc__xfer_t *posted_recv(mrc__shm_endpoint_t *e, int peer,
                                uint64_t seq, uint64_t tag, size_t *at)
{
    for (size_t i = 0; i < e->num_recvs; i++) {
        mrc__xfer_t *x = e->recvs[i];
        if (x->peer == peer && x->tag == tag && x->priv[2] == seq) {
            *at = i;
            return x;
        }
    }
    return NULL;
}

/* The sender of a message of this rank's call is in another call: the
 * message naming both (the sender's call is in its post, written before
 * its first message). */
static mrc_status_t message_differs(mrc__shm_endpoint_t *e, int peer)
{
    /* The sender may be a call ahead, with an eager send out: its call of
     * the other parity is the one to read. */
    mrc__call_t *c = &post_at(e, peer)->calls[e->seq & 1];
    mrc__call_t theirs = {__atomic_load_n(&c->count, __ATOMIC_RELAXED),
                          __atomic_load_n(&c->meta, __ATOMIC_RELAXED)};
    return disagree(e, peer, theirs, e->rank, e->call);
}

static mrc_status_t keep_early(mrc__shm_endpoint_t *e, int peer,
                               const slot_t *s, const void *data)
{
    /* A message of this very call that no receive expects, or of another
     * call than this rank's: the ranks disagree. */
    if (s->seq == e->seq && s->call != mrc__call_hash(e->call))
        return message_differs(e, peer);
    early_t *x = e->early;
    for (; x; x = x->next)
        if (x->peer == peer && x->seq == s->seq && x->tag == s->tag)
            break;
    if (!x) {
        x = calloc(1, sizeof *x);
        if (x && !s->rdv && !(x->data = malloc(s->total ? s->total : 1))) {
            free(x);
            x = NULL;
        }
        if (!x)
            return mrc__error(MRC_ERR_NO_MEMORY,
                              "rank %d: out of memory for %llu early bytes "
                              "from rank %d",
                              e->rank, (unsigned long long)s->total, peer);
        x->peer = peer;
        x->seq = s->seq;
        x->tag = s->tag;
        x->total = s->total;
        x->call = s->call;
        x->rdv = (int)s->rdv;
        x->addr = s->addr;
        x->token = s->token;
        x->next = e->early;
        e->early = x;
        if (s->rdv)
            return MRC_OK;
    }
    if (s->offset + s->len > x->total)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: a piece from rank %d runs past its "
                          "message (%llu + %u > %llu bytes)",
                          e->rank, peer, (unsigned long long)s->offset,
                          s->len, (unsigned long long)x->total);
    memcpy(x->data + s->offset, data, s->len);
    x->got += s->len;
    return MRC_OK;
}

/* Takes every full slot addressed to this rank. */
static mrc_status_t drain(mrc__shm_endpoint_t *e, int *moved)
{
    for (int p = 0; p < e->n; p++) {
        if (p == e->rank)
            continue;
        for (;;) {
            char *at = slot_at(e, p, e->rank, e->recv_slot[p]);
            slot_t *s = (slot_t *)at;
            if (!__atomic_load_n(&s->full, __ATOMIC_ACQUIRE))
                break;
            size_t i;
            mrc_status_t st = MRC_OK;
            mrc__xfer_t *x = posted_recv(e, p, s->seq, s->tag, &i);
            if (x && s->call != mrc__call_hash(e->call))
                return message_differs(e, p);
            if (x && (s->total != x->bytes ||
                      s->offset + s->len > x->bytes))
                return mrc__error(MRC_ERR_TRANSPORT,
                                  "rank %d: %llu bytes arrived from rank %d "
                                  "where %zu were expected",
                                  e->rank, (unsigned long long)s->total, p,
                                  x->bytes);
            if (x && s->rdv)
                st = take_rdv(e, x, s->addr, s->token);
            else if (x)
                apply(x, s->offset, at + SLOT_HEADER, s->len);
            else
                st = keep_early(e, p, s, at + SLOT_HEADER);
            if (st != MRC_OK)
                return st;
            if (x && x->done)
                e->recvs[i] = e->recvs[--e->num_recvs];
            __atomic_store_n(&s->full, 0, __ATOMIC_RELEASE);
            e->recv_slot[p] = (e->recv_slot[p] + 1) % SLOTS;
            *moved = 1;
        }
    }
    return MRC_OK;
}

/* Sends: priv[0] the buffer, priv[1] bytes out, priv[3] 1 once a piece
 * (an empty message is one piece too) or the rendezvous is out, priv[2]
 * the rendezvous token + 1. */
static int by_rendezvous(const mrc__shm_endpoint_t *e, const mrc__xfer_t *x)
{
    return x->bytes >= RDV_MIN && e->bounce &&
           __atomic_load_n(&e->info[x->peer].can_read, __ATOMIC_ACQUIRE);
}

/* Puts out what pending sends can: pieces where slots are free, or a
 * rendezvous (then the send is done when its receiver says so). */
static void fill(mrc__shm_endpoint_t *e, int *moved)
{
    size_t keep = 0;
    for (size_t i = 0; i < e->num_sends; i++) {
        mrc__xfer_t *x = e->sends[i];
        const char *buf = (const char *)x->priv[0];
        int rdv = by_rendezvous(e, x);
        while (!x->priv[3] || (!rdv && x->priv[1] < x->bytes)) {
            uint64_t off = x->priv[1];
            char *at = slot_at(e, e->rank, x->peer, e->send_slot[x->peer]);
            slot_t *s = (slot_t *)at;
            if (__atomic_load_n(&s->full, __ATOMIC_ACQUIRE))
                break;
            if (rdv && e->num_free == 0)
                break; /* every token in flight: later */
            size_t len = x->bytes - off;
            if (rdv) {
                uint32_t t = e->free_tokens[--e->num_free];
                __atomic_store_n(&e->tokens[(size_t)e->rank * TOKENS + t],
                                 RDV_POSTED, __ATOMIC_RELAXED);
                x->priv[2] = t + 1;
                s->addr = (uint64_t)(uintptr_t)buf;
                s->token = t;
                len = 0;
            } else {
                if (len > e->slot_bytes)
                    len = e->slot_bytes;
                memcpy(at + SLOT_HEADER, buf + off, len);
            }
            s->rdv = (uint32_t)rdv;
            s->len = (uint32_t)len;
            s->call = mrc__call_hash(e->call);
            s->seq = e->seq;
            s->tag = x->tag;
            s->total = x->bytes;
            s->offset = off;
            __atomic_store_n(&s->full, 1, __ATOMIC_RELEASE);
            e->send_slot[x->peer] = (e->send_slot[x->peer] + 1) % SLOTS;
            x->priv[1] = off + len;
            x->priv[3] = 1;
            *moved = 1;
        }
        if (x->priv[3] && !rdv && x->priv[1] >= x->bytes)
            __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
        else if (!x->priv[3] || !rdv)
            e->sends[keep++] = x;
        else if (push((void ***)&e->rdvs, &e->num_rdvs, &e->cap_rdvs, x))
            e->sends[keep++] = x; /* no memory: watched from here */
    }
    e->num_sends = keep;
}

/* Rendezvous sends whose receivers have read them are done. */
static void reap_rdvs(mrc__shm_endpoint_t *e, int *moved)
{
    size_t keep = 0;
    for (size_t i = 0; i < e->num_rdvs; i++) {
        mrc__xfer_t *x = e->rdvs[i];
        uint32_t t = (uint32_t)x->priv[2] - 1;
        if (__atomic_load_n(&e->tokens[(size_t)e->rank * TOKENS + t],
                            __ATOMIC_ACQUIRE) != RDV_TAKEN) {
            e->rdvs[keep++] = x;
            continue;
        }
        e->free_tokens[e->num_free++] = t;
        x->priv[2] = 0;
        __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
        *moved = 1;
    }
    e->num_rdvs = keep;
}

static mrc_status_t progress(mrc__shm_endpoint_t *e)
{
    int moved = 0;
    mrc_status_t st = drain(e, &moved);
    if (st != MRC_OK)
        return st;
    reap_rdvs(e, &moved);
    fill(e, &moved);
    if (moved) {
        e->idle = 0;
        return MRC_OK;
    }
    return check_peers(e);
}

/* ---- the transport operations ----------------------------------------- */

static mrc_status_t shm_begin(void *ctx, uint64_t seq,
                              const mrc__call_t *call,
                              const mrc__xfer_t *recvs, size_t n)
{
    (void)recvs;
    (void)n;
    mrc__shm_endpoint_t *e = ctx;
    if (e->lost != MRC_OK)
        return e->lost;
    e->seq = seq;
    e->call = *call;
    e->pending = 0;
    post_call(e, *call);
    /* For a peer's message when this call and its sender's differ: read
     * only after a message of this call, which is sent after this. */
    mrc__call_t *mine = &post_at(e, e->rank)->calls[seq & 1];
    __atomic_store_n(&mine->count, call->count, __ATOMIC_RELAXED);
    __atomic_store_n(&mine->meta, call->meta, __ATOMIC_RELAXED);
    /* What came early for this call was sent for the same call. */
    uint64_t h = mrc__call_hash(*call);
    for (const early_t *m = e->early; m; m = m->next)
        if (m->seq == seq && m->call != h)
            return message_differs(e, m->peer);
    return MRC_OK;
}

static mrc_status_t shm_isend(void *ctx, const void *buf, mrc__xfer_t *x)
{
    mrc__shm_endpoint_t *e = ctx;
    x->priv[0] = (uintptr_t)buf;
    x->priv[1] = 0;
    x->priv[2] = 0;
    x->priv[3] = 0;
    if (push((void ***)&e->sends, &e->num_sends, &e->cap_sends, x))
        return mrc__error(MRC_ERR_NO_MEMORY, "rank %d: out of memory",
                          e->rank);
    x->posted = 1;
    int moved = 0;
    fill(e, &moved);
    return MRC_OK;
}

static mrc_status_t shm_irecv(void *ctx, mrc__xfer_t *x)
{
    mrc__shm_endpoint_t *e = ctx;
    x->priv[1] = 0;
    x->priv[2] = e->seq;
    x->posted = 1;
    /* What came early is taken now. A channel delivers a message's pieces
     * in order, so what came is a prefix; the rest will find the receive
     * posted. */
    mrc_status_t st = progress(e);
    if (st != MRC_OK)
        return st;
    for (early_t **pp = &e->early; *pp; pp = &(*pp)->next) {
        early_t *m = *pp;
        if (m->peer != x->peer || m->seq != e->seq || m->tag != x->tag)
            continue;
        if (m->call != mrc__call_hash(e->call))
            return message_differs(e, x->peer);
        if (m->total != x->bytes)
            return mrc__error(MRC_ERR_TRANSPORT,
                              "rank %d: %llu bytes arrived from rank %d "
                              "where %zu were expected",
                              e->rank, (unsigned long long)m->total, x->peer,
                              x->bytes);
        if (m->rdv)
            st = take_rdv(e, x, m->addr, m->token);
        else
            apply(x, 0, m->data, m->got);
        *pp = m->next;
        free(m->data);
        free(m);
        if (st != MRC_OK)
            return st;
        break;
    }
    if (!x->done &&
        push((void ***)&e->recvs, &e->num_recvs, &e->cap_recvs, x))
        return mrc__error(MRC_ERR_NO_MEMORY, "rank %d: out of memory",
                          e->rank);
    return MRC_OK;
}

static mrc_status_t shm_test(void *ctx, mrc__xfer_t *x)
{
    mrc__shm_endpoint_t *e = ctx;
    if (__atomic_load_n(&x->done, __ATOMIC_ACQUIRE))
        return MRC_OK;
    return progress(e);
}

static mrc_status_t shm_end(void *ctx)
{
    mrc__shm_endpoint_t *e = ctx;
    if (e->lost == MRC_OK) /* the windows of this call may be reused */
        __atomic_store_n(&post_at(e, e->rank)->ended, e->seq + 1,
                         __ATOMIC_RELEASE);
    return e->lost;
}

/* This rank's call failed: says so in its post (the ranks waiting on it
 * fail too, naming the cause), and takes back every rendezvous send no
 * receiver has started to read; one being read is waited for (one copy,
 * or the reader's death). Eager sends are copies: nothing to take back. */
static void shm_cancel(void *ctx, mrc_status_t st)
{
    mrc__shm_endpoint_t *e = ctx;
    mrc__call_t none = {0, 0};
    post_failure(e, st, e->rank, -1, none, none);
    for (size_t i = 0; i < e->num_rdvs; i++) {
        mrc__xfer_t *x = e->rdvs[i];
        int32_t *flag =
            &e->tokens[(size_t)e->rank * TOKENS + (uint32_t)x->priv[2] - 1];
        int32_t posted = RDV_POSTED;
        if (__atomic_compare_exchange_n(flag, &posted, RDV_REVOKED, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            continue;
        while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == RDV_READING &&
               peer_alive(e, x->peer))
            sched_yield();
    }
    /* No get of this rank's buffers starts from now on, and the ones in
     * flight are waited for (or their reader's death). */
    rank_post_t *mine = post_at(e, e->rank);
    __atomic_store_n(&mine->revoked, e->seq + 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&mine->readers, __ATOMIC_ACQUIRE) > 0) {
        int gone = 0;
        for (int r = 0; r < e->n; r++)
            gone |= !peer_alive(e, r);
        if (gone)
            break;
        sched_yield();
    }
    /* The tokens stay spent, and nothing is left to send: the
     * communicator refuses further calls. */
    e->num_rdvs = 0;
    e->num_sends = 0;
    e->num_recvs = 0;
}

/* ---- memory semantics --------------------------------------------------- */

/* While this rank waits on peer r (a flag, a window to reuse): MRC_OK, or
 * why it never will come (the job lost a rank, r failed its call, or r
 * is in this call with another descriptor). */
static mrc_status_t waiting_on(mrc__shm_endpoint_t *e, int r)
{
    mrc_status_t st = check_peers(e);
    if (st == MRC_OK)
        st = peer_failed(e, r);
    if (st == MRC_OK)
        st = call_differs(e, r);
    return st;
}

static mrc_status_t shm_publish(void *ctx, const mrc__exposure_t *x,
                                void **window)
{
    mrc__shm_endpoint_t *e = ctx;
    uint64_t seq = e->seq;
    if (e->lost != MRC_OK)
        return e->lost;
    if (x->window_bytes > e->win_max)
        return mrc__error(MRC_ERR_UNSUPPORTED,
                          "rank %d: a window of %zu bytes is more than the "
                          "%zu a rank of this job has in shared memory",
                          e->rank, x->window_bytes, e->win_max);
    /* The window of call seq - 2 may be read until its readers end it. */
    for (int i = 0; seq >= 2 && i < x->num_members; i++) {
        int m = x->members[i];
        if (m < 0 || m >= e->n)
            return mrc__error(MRC_ERR_INTERNAL, "rank %d: no rank %d",
                              e->rank, m);
        if (m == e->rank || e->ended[m] >= seq - 1)
            continue;
        e->ended[m] = __atomic_load_n(&post_at(e, m)->ended,
                                      __ATOMIC_ACQUIRE);
        if (e->ended[m] >= seq - 1)
            continue;
        mrc_status_t st = waiting_on(e, m);
        return st != MRC_OK ? st : MRC_INPROGRESS;
    }
    /* The buffers' addresses go to the address line now (read only by
     * a get by reference, after the record says they are there); the
     * record itself at the first signal (write_record). */
    by_ref_t *ref = ref_at(e, e->rank, seq);
    for (int b = 1; b < MRC__MEM_BUFS; b++) {
        int by_ref = b != MRC__MEM_WINDOW && x->buf[b];
        ref->addr[b - 1] = by_ref ? (uint64_t)(uintptr_t)x->buf[b] : 0;
        ref->bytes[b - 1] = by_ref ? x->bytes[b] : 0;
    }
    e->pending_window = (uint32_t)x->window_bytes;
    e->pending = 1;
    *window = window_at(e, e->rank, seq);
    return MRC_OK;
}

/* Reduces (or copies) the len bytes at src into x's destination at byte
 * `at`; x->nontemporal: written around the cache (no read for ownership; the
 * executor asks for it where the block is past the caches anyway: P=2,
 * 16 MiB took 1.1-1.2x MPI's time so, 1.4-1.5x without). */
static void take(const mrc__xfer_t *x, const char *src, size_t at,
                 size_t len)
{
    char *dst = (char *)x->dst + at;
    size_t es = mrc_dtype_size(x->dtype);
    if (x->local)
        (x->nontemporal ? mrc__reduce_nontemporal : mrc__reduce)(
            dst, (const char *)x->local + at, src, len / es, x->dtype, x->op);
    else if (x->nontemporal)
        mrc__copy_nontemporal(dst, src, len);
    else
        memmove(dst, src, len);
}

/* Reads x->bytes at addr of peer r's memory into x (through the bounce
 * buffer, a piece at a time, when it reduces), pinned against r's
 * revoking its buffers. */
static mrc_status_t read_pinned(mrc__shm_endpoint_t *e, int r, uint64_t addr,
                                mrc__xfer_t *x)
{
    if (!e->bounce || !__atomic_load_n(&e->info[r].can_read,
                                       __ATOMIC_ACQUIRE))
        return mrc__error(MRC_ERR_UNSUPPORTED,
                          "rank %d cannot read rank %d's memory (the kernel "
                          "forbids cross-memory attach here): a program "
                          "that reads buffers by reference cannot run; use "
                          "rings",
                          e->rank, r);
    rank_post_t *rp = post_at(e, r);
    __atomic_add_fetch(&rp->readers, 1, __ATOMIC_ACQ_REL);
    mrc_status_t st = MRC_OK;
    if (__atomic_load_n(&rp->revoked, __ATOMIC_ACQUIRE) == e->seq + 1) {
        st = peer_failed(e, r);
        if (st == MRC_OK)
            st = mrc__error(MRC_ERR_TRANSPORT,
                            "rank %d: rank %d withdrew its buffers", e->rank,
                            r);
    } else if (!x->local) {
        st = read_peer(e, r, x->dst, addr, x->bytes);
    } else {
        size_t es = mrc_dtype_size(x->dtype), step = BOUNCE / es * es;
        for (size_t off = 0; off < x->bytes && st == MRC_OK; off += step) {
            size_t len = x->bytes - off < step ? x->bytes - off : step;
            st = read_peer(e, r, e->bounce, addr + off, len);
            if (st == MRC_OK)
                take(x, e->bounce, off, len);
        }
    }
    __atomic_sub_fetch(&rp->readers, 1, __ATOMIC_ACQ_REL);
    return st;
}

/* This call's record, with `flags` set and the stamp last: one burst of
 * writes to the line the peers poll. No peer reads the record of call seq
 * - 2 in this place any more: every member has ended that call. */
static void write_record(mrc__shm_endpoint_t *e, uint32_t flags)
{
    published_t *p = pub_at(e, e->rank, e->seq);
    __atomic_store_n(&p->flags, flags, __ATOMIC_RELAXED);
    p->call = e->call;
    p->window_bytes = e->pending_window;
    __atomic_store_n(&p->seq, e->seq + 1, __ATOMIC_RELEASE);
    e->pending = 0;
}

static mrc_status_t shm_get(void *ctx, int peer, int buf, uint64_t off,
                            mrc__xfer_t *x)
{
    mrc__shm_endpoint_t *e = ctx;
    uint64_t seq = e->seq;
    if (peer < 0 || peer >= e->n || buf < 1 || buf >= MRC__MEM_BUFS)
        return mrc__error(MRC_ERR_INTERNAL,
                          "rank %d: no buffer %d of rank %d", e->rank, buf,
                          peer);
    if (peer == e->rank && e->pending) /* a get of its own before any */
        write_record(e, 0);            /* signal: the record first */
    const published_t *p = pub_at(e, peer, seq);
    if (buf == MRC__MEM_WINDOW) /* while the bounds come */
        __builtin_prefetch(window_at(e, peer, seq) + off);
    if (__atomic_load_n(&p->seq, __ATOMIC_ACQUIRE) != seq + 1) {
        mrc_status_t st = peer_failed(e, peer);
        return st != MRC_OK ? st
                            : mrc__error(MRC_ERR_TRANSPORT,
                                         "rank %d reads rank %d's memory, "
                                         "which has not published its "
                                         "buffers of call %llu",
                                         e->rank, peer,
                                         (unsigned long long)seq);
    }
    if (!mrc__call_same(p->call, e->call))
        return disagree(e, peer, p->call, e->rank, e->call);
    const by_ref_t *ref = ref_at(e, peer, seq);
    uint64_t size = buf == MRC__MEM_WINDOW ? p->window_bytes
                                           : ref->bytes[buf - 1];
    if ((buf != MRC__MEM_WINDOW && !ref->addr[buf - 1]) || off > size ||
        x->bytes > size - off)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d reads %zu bytes at %llu of rank %d's "
                          "buffer %d, which holds %llu",
                          e->rank, x->bytes, (unsigned long long)off, peer,
                          buf, (unsigned long long)size);
    mrc_status_t st = MRC_OK;
    if (buf == MRC__MEM_WINDOW)
        take(x, window_at(e, peer, seq) + off, 0, x->bytes);
    else if (peer == e->rank)
        take(x, (const char *)(uintptr_t)ref->addr[buf - 1] + off, 0,
             x->bytes);
    else
        st = read_pinned(e, peer, ref->addr[buf - 1] + off, x);
    if (st == MRC_OK)
        __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
    return st;
}

static mrc_status_t shm_signal(void *ctx, int flag)
{
    mrc__shm_endpoint_t *e = ctx;
    if (flag < 0 || flag >= MRC__FLAGS)
        return mrc__error(MRC_ERR_INTERNAL, "rank %d: no flag %d", e->rank,
                          flag);
    if (e->pending) { /* the call's first signal writes its record */
        write_record(e, (uint32_t)1 << flag);
        return MRC_OK;
    }
    /* The flags are in this call's record: only after publish. */
    published_t *p = pub_at(e, e->rank, e->seq);
    if (__atomic_load_n(&p->seq, __ATOMIC_RELAXED) != e->seq + 1)
        return mrc__error(MRC_ERR_INTERNAL,
                          "rank %d signals flag %d of call %llu before it "
                          "published its buffers",
                          e->rank, flag, (unsigned long long)e->seq);
    uint32_t bits = __atomic_load_n(&p->flags, __ATOMIC_RELAXED);
    __atomic_store_n(&p->flags, bits | (uint32_t)1 << flag,
                     __ATOMIC_RELEASE);
    return MRC_OK;
}

static mrc_status_t shm_wait(void *ctx, int peer, int flag)
{
    mrc__shm_endpoint_t *e = ctx;
    if (flag < 0 || flag >= MRC__FLAGS || peer < 0 || peer >= e->n)
        return mrc__error(MRC_ERR_INTERNAL, "rank %d: no flag %d of rank %d",
                          e->rank, flag, peer);
    if (e->lost != MRC_OK)
        return e->lost;
    /* The peer's record of this call: its stamp first, so that the flags
     * read after it are this call's (they are reset before the stamp is
     * written), and the peer does not rewrite the record before this
     * rank has ended the call (publish waits for that). */
    const published_t *p = pub_at(e, peer, e->seq);
    if (__atomic_load_n(&p->seq, __ATOMIC_ACQUIRE) == e->seq + 1 &&
        (__atomic_load_n(&p->flags, __ATOMIC_ACQUIRE) >> flag & 1)) {
        /* What the get after a wait reads next, fetched alongside (each
         * line a peer's core wrote costs a transfer between cores). */
        __builtin_prefetch(window_at(e, peer, e->seq));
        /* A peer that set a flag of this call has begun it, so it has
         * ended the one before: the next publish need not read its
         * `ended` line (one transfer between cores less a call). */
        if (e->ended[peer] < e->seq)
            e->ended[peer] = e->seq;
        if (!mrc__call_same(p->call, e->call))
            return disagree(e, peer, p->call, e->rank, e->call);
        return MRC_OK;
    }
    /* Not yet: look at the peers now and then (their posts are lines
     * they write at every call; polling them would slow them down), and
     * at this rank's own state one look in 16: a look is the loop a
     * waiting rank spins in, and its spin before it yields the core is
     * counted in looks. */
    if (++e->looks % 16 != 0)
        return MRC_INPROGRESS;
    mrc_status_t st = check_peers(e);
    if (st == MRC_OK && e->idle % 64 == 0)
        st = waiting_on(e, peer);
    return st != MRC_OK ? st : MRC_INPROGRESS;
}

static int shm_reads_buffers(void *ctx)
{
    const mrc__shm_endpoint_t *e = ctx;
    return e->all_read && e->bounce != NULL;
}

static const mrc__transport_ops_t shm_ops = {
    .name = "shm",
    .begin = shm_begin,
    .isend = shm_isend,
    .irecv = shm_irecv,
    .test = shm_test,
    .end = shm_end,
    .cancel = shm_cancel,
    .publish = shm_publish,
    .get = shm_get,
    .signal = shm_signal,
    .wait = shm_wait,
    .reads_buffers = shm_reads_buffers,
};

void mrc__shm_set_idle(mrc__shm_endpoint_t *e, void (*idle)(void *),
                       void *arg)
{
    e->on_idle = idle;
    e->on_idle_arg = arg;
}

mrc__transport_t mrc__shm_transport(mrc__shm_endpoint_t *e)
{
    mrc__transport_t t = {&shm_ops, e};
    return t;
}
