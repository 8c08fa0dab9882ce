/*
 * The transport interface: what the executor needs to move a node's data,
 * as a const table of operations over an opaque context (one per rank).
 *
 * A receive names what to do with the data on arrival: copy it, or reduce
 * it with a local operand into the destination. A transport that can read
 * the sender's memory (threads) does that straight from the sender's
 * buffer, with no copy; others receive into staging and reduce from there.
 * Nothing here blocks: posting may be refused for now (MRC_INPROGRESS,
 * post again later), and completion is polled with test.
 */
#ifndef MRC_TRANSPORT_H
#define MRC_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "mrc/status.h"
#include "mrc/types.h"

/* The shared-memory transport of nranks ranks: a message of at least
 * this many bytes goes by rendezvous (the receiver reads the sender's
 * buffer through the kernel), a smaller one through the channel's slots:
 * the channel's capacity, 1 MiB up to 64 ranks, so a program's messages
 * (chunks, 256 KiB by default) go through the slots. Copied in by the
 * sender's core and out (or reduced) by the receiver's, a message keeps
 * both cores at work; read through the kernel it kept only the
 * receiver's, at a third of a user copy's rate on the build machine
 * (P = 2, a rings reduce of 2 MiB: 113 us a call through the slots, 208
 * from 16 KiB by rendezvous). `mrc calibrate` writes it into an shm
 * profile for the simulator. */
size_t mrc__shm_rendezvous_bytes(int nranks);
/* The bytes of one of those slots: a message below the threshold goes
 * through them in pieces of at most this, and its receiver takes a piece
 * once its sender has copied all of it in. */
size_t mrc__shm_slot_bytes(int nranks);

/* The largest send buffer exposed by reference that the shared-memory
 * transport copies into its owner's area instead, in a job of nranks with
 * no window beside it (memory.c, copy_send): the selector's and the
 * simulator's models price a get of one as that copy and its reader's,
 * not the kernel's read. */
size_t mrc__shm_send_copied_max(int nranks);

/* One posted transfer. The executor owns the memory (allocated with the
 * plan) and keeps it in place until `done`; the transport may use the
 * private words. */
typedef struct mrc__xfer {
    volatile int done; /* set by the transport (with release ordering) */
    int posted;
    int peer;
    uint64_t tag;
    void *dst;         /* receive: destination */
    const void *local; /* receive: local operand, or NULL to copy */
    size_t count;      /* elements */
    size_t bytes;
    mrc_dtype_t dtype;
    mrc_op_t op;
    int nontemporal; /* receive: write around the cache (large buffers) */
    uintptr_t priv[5];
} mrc__xfer_t;

/* What a call is, as its ranks must agree on it: the collective, count,
 * dtype, op and root packed in two words, so that a transport can put it
 * beside the first signal it publishes anyway and a peer can compare it
 * before touching this rank's memory. */
typedef struct mrc__call {
    uint64_t count;
    uint64_t meta; /* collective | dtype << 8 | op << 16 | root << 32 */
} mrc__call_t;

/* The descriptor with the family of the program that runs it (bits 24 to
 * 30 of meta; 0 is the rings) and its completion (bit 31: local). */
static inline mrc__call_t mrc__call_with_family(mrc__call_t c, int family,
                                                mrc_completion_t completion)
{
    uint64_t f = (uint64_t)(family & 0x7f) |
                 (uint64_t)(completion == MRC_COMPLETION_LOCAL) << 7;
    c.meta = (c.meta & ~((uint64_t)0xff << 24)) | f << 24;
    return c;
}

/* The descriptor of a call (op and root only where they matter: give
 * MRC_SUM and 0 for the others). */
static inline mrc__call_t mrc__call_make(mrc_collective_t coll, size_t count,
                                         mrc_dtype_t dtype, mrc_op_t op,
                                         int root)
{
    mrc__call_t c = {(uint64_t)count, (uint64_t)(coll & 0xff) |
                                          (uint64_t)(dtype & 0xff) << 8 |
                                          (uint64_t)(op & 0xff) << 16 |
                                          (uint64_t)(uint32_t)root << 32};
    return c;
}

static inline int mrc__call_same(mrc__call_t a, mrc__call_t b)
{
    return a.count == b.count && a.meta == b.meta;
}

/* One word for a call, for a header with room for only one: different
 * calls that a program could make do not collide in practice (a multiply
 * and xor mix of the two words). */
static inline uint64_t mrc__call_hash(mrc__call_t c)
{
    uint64_t h = c.count * 0x9e3779b97f4a7c15ull;
    h ^= (c.meta + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;
    return h ^ h >> 29;
}

/* Ranks a and b called different collectives (or counts, types, ops,
 * roots): sets the message that names both ranks and both calls ("rank 1
 * called allreduce of 100001 float32 (sum) but rank 0 allreduce of 100000
 * float32 (sum)") and returns MRC_ERR_INVALID_ARG. */
mrc_status_t mrc__call_mismatch(int a, mrc__call_t ca, int b, mrc__call_t cb);

/* Writes "allreduce of 100000 float32 (sum)" to out. */
void mrc__call_describe(mrc__call_t c, char *out, size_t size);

/* Memory semantics: the buffers a peer can read, by the numbers the
 * program gives them (enum mrc__buffer). */
enum mrc__mem_buf {
    MRC__MEM_SEND = 1,
    MRC__MEM_RECV,
    MRC__MEM_SCRATCH,
    MRC__MEM_WINDOW,
    MRC__MEM_BUFS
};

/* Flags a call may signal: the program's 0..15, barriers from 16. */
enum { MRC__FLAGS = 32, MRC__BARRIER_FLAG = 16 };

/* What a call exposes: its buffers (NULL and 0 where it has none), the
 * bytes of window it needs, and its group (transport ranks), the peers
 * that may read them. */
typedef struct mrc__exposure {
    const void *buf[MRC__MEM_BUFS]; /* by enum mrc__mem_buf; [0] unused */
    size_t bytes[MRC__MEM_BUFS];
    size_t window_bytes;
    const int32_t *members;
    int num_members;
} mrc__exposure_t;

typedef struct mrc__transport_ops {
    const char *name;
    /* The transport whose host profile (mrc calibrate) describes this
     * one where that is not `name`: the MPI ranks of one host run the
     * shared-memory endpoint itself, under MPI's name. NULL: name. */
    const char *profiled_as;
    /* A collective starts: seq numbers the calls of a communicator (the
     * same on every rank), call says what it is (the transport compares it
     * with the peers' before it touches their memory, and fails with
     * mrc__call_mismatch), recvs[0..n) are all the receives this rank will
     * post in it (peer and tag set). Posts may start once begin returns. */
    mrc_status_t (*begin)(void *ctx, uint64_t seq, const mrc__call_t *call,
                          const mrc__xfer_t *recvs, size_t n);
    /* Posts a send of x->bytes at buf to x->peer: MRC_OK once posted,
     * MRC_INPROGRESS to try again later. The buffer is borrowed until
     * x->done. */
    mrc_status_t (*isend)(void *ctx, const void *buf, mrc__xfer_t *x);
    /* Posts a receive described by x; the same return values. */
    mrc_status_t (*irecv)(void *ctx, mrc__xfer_t *x);
    /* Advances x (a posted transfer) and sets x->done when it is. */
    mrc_status_t (*test)(void *ctx, mrc__xfer_t *x);
    /* The collective is over: every transfer of this rank is done. */
    mrc_status_t (*end)(void *ctx);
    /* Optional (NULL: not offered), before end: MRC_OK once every peer
     * of the group (members[0..num_members), this rank among them: other
     * groups' calls may differ, in their root) has begun this call and
     * called it alike; MRC_INPROGRESS to ask again; the disagreement
     * (mrc__call_mismatch) or a peer's failure.
     * For a program in which a rank need not hear from every peer (a
     * reduce or broadcast by messages: the root of a broadcast hears from
     * nobody, a leaf from its parent only), so that ranks that disagree
     * still fail on every rank in the same call. */
    mrc_status_t (*agree)(void *ctx, const int32_t *members, int num_members);
    /* Optional (NULL: nothing to do): the collective failed on this rank
     * with status st. Once this returns no peer reads or writes this
     * rank's buffers of the call (in-flight reads are waited for, the
     * others revoked), and peers waiting on this rank learn that it
     * failed instead of waiting out the timeout. */
    void (*cancel)(void *ctx, mrc_status_t st);
    /* Memory semantics (all four NULL where the transport has none: the
     * direct families then do not apply to it).
     *
     * publish: after begin, before any other memory op of the call: the
     * call's buffers, which peers may read once the program exposes them
     * by reference, and *window, this rank's window for the call
     * (window_bytes), which the executor writes what it exposes by copy
     * into. A window stays readable by the group to the end of the call
     * on every rank: a transport keeps two (by the parity of seq), and
     * refuses with MRC_INPROGRESS (ask again) while a member has not
     * ended the call two before.
     * get: reads x->bytes at byte offset `off` of peer's buffer `buf`
     * (a window: of this call) into x->dst, reduced with x->local or
     * copied, as a receive does; synchronous (MRC_INPROGRESS: ask again).
     * The program has ordered the read after the peer's expose; the
     * transport refuses a read outside what the peer published, and a
     * peer whose call differs (mrc__call_mismatch).
     * signal: sets this rank's flag for this call. wait: MRC_OK once the
     * peer's flag is set for this call (or a later one), MRC_INPROGRESS
     * before; never blocks. */
    mrc_status_t (*publish)(void *ctx, const mrc__exposure_t *x, void **window);
    mrc_status_t (*get)(void *ctx, int peer, int buf, uint64_t off,
                        mrc__xfer_t *x);
    mrc_status_t (*signal)(void *ctx, int flag);
    mrc_status_t (*wait)(void *ctx, int peer, int flag);
    /* Optional (NULL: yes, where get is there): whether get can read a
     * peer's buffers by reference as well as its window (shared memory:
     * only where the kernel lets the ranks read each other's memory), so
     * that the caller picks a program that can run. */
    int (*reads_buffers)(void *ctx);
    /* Optional (NULL: none): called now and then while this rank waits
     * with nothing to do, never on the path of a transfer that moves. An
     * MPI program's ranks must let MPI progress while they wait in mrc
     * (a peer may be blocked in MPI_Send to this rank). */
    void (*idle)(void *ctx);
    /* Optional (NULL: nothing to do, as on the CPU transports): from now
     * on this rank leaves idle the ports p with idle_mask[p] set (p <
     * nports, the node's ports in the topology): the program's port mask
     * for the phase its calls have reached, so that a fabric can switch
     * those links off. Called at the first step of each phase. */
    void (*ports)(void *ctx, const uint8_t *idle_mask, int nports);
} mrc__transport_ops_t;

/* Up to this many bytes a whole-job allreduce over a transport with
 * memory semantics takes a single step (direct1). */
#define MRC__SMALL_BYTES 4096

typedef struct mrc__transport {
    const mrc__transport_ops_t *ops;
    void *ctx;
} mrc__transport_t;

/* The threads transport: all ranks in one process. The hub (every
 * rank's state) is shared; each rank gets its own context. */
typedef struct mrc__threads_hub mrc__threads_hub_t;
mrc_status_t mrc__threads_hub_create(int nranks, mrc__threads_hub_t **out);
void mrc__threads_hub_destroy(mrc__threads_hub_t *f);
mrc__transport_t mrc__threads_transport(mrc__threads_hub_t *f, int rank);

/* The shared-memory transport: ranks are processes of one host, joined
 * by the job id (its segment is "/mrc-JOB-seg"). token (NULL: none; at
 * most 32 characters) is a secret of the job that rank 0 writes in the
 * segment and the others check. Attaching waits up to timeout_s for
 * every rank. */
typedef struct mrc__shm_endpoint mrc__shm_endpoint_t;
mrc_status_t mrc__shm_attach(int nranks, int rank, const char *job,
                             const char *token, double timeout_s,
                             mrc__shm_endpoint_t **out);
void mrc__shm_detach(mrc__shm_endpoint_t *e);
/* Memory the ranks of a shared-memory job on this host map and read
 * directly (mrc_mem_alloc, mrc_mem_free; transport/shm/regions.c). */
mrc_status_t mrc__shm_region_alloc(size_t bytes, void **ptr);
mrc_status_t mrc__shm_region_free(void *ptr);
/* Whether [ptr, ptr + bytes) lies in a region that peers map (one of
 * those published). */
int mrc__shm_region_holds(const void *ptr, size_t bytes);
/* While it waits in its own loops (a failed call waiting for the reads
 * of its buffers in flight), e calls idle(arg) now and then; NULL:
 * nothing. So that the MPI transport can let MPI progress without shm
 * knowing MPI. */
void mrc__shm_set_idle(mrc__shm_endpoint_t *e, void (*idle)(void *), void *arg);
/* 1: e leaves a send buffer exposed by reference where it is when it is
 * the one the call before exposed (its lines are warm), and its peers
 * read it through the kernel, even where it would fit its area; a new
 * buffer still goes into the area (memory.c, copy_send). 0 (the endpoint
 * as attached; the api sets 1 without a profile, else the profile's
 * send_by_ref): every one that fits goes into the area. Every rank may
 * choose alike or not: the record says which, and readers follow it. */
void mrc__shm_set_send_by_ref(mrc__shm_endpoint_t *e, int on);
int mrc__shm_sends_by_ref(const mrc__shm_endpoint_t *e);
mrc__transport_t mrc__shm_transport(mrc__shm_endpoint_t *e);
/* The same operations under another name (what the communicator reports
 * and its cost model and profile go by), and calling the endpoint's idle
 * while the executor waits: an MPI job whose ranks are all on this host
 * runs on its segment directly, without a layer that only hands each
 * operation on. */
mrc__transport_t mrc__shm_transport_named(mrc__shm_endpoint_t *e,
                                          const char *name);

#endif /* MRC_TRANSPORT_H */
