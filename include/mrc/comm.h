/*
 * Communicators and collectives: the C API, with NCCL's conventions for
 * counts and in-place operation.
 *
 *   mrc_comm_t *comms[8];
 *   mrc_config_t cfg = {.topology = "hcm8"};        (zeroed = defaults)
 *   mrc_comm_init_all(comms, 8, &cfg);              (one per thread)
 *   ... in thread r:
 *   mrc_allreduce(send, recv, count, MRC_FLOAT32, MRC_SUM, comms[r]);
 *
 * Every rank of a group must call the same collectives in the same order
 * with the same count, type, operator and root: the ranks compare them
 * before any touches a peer's buffers, and on a difference every rank's
 * call fails with MRC_ERR_INVALID_ARG naming both ranks and both calls
 * (with local completion, mrc_config_t.completion, a rank that only
 * sends fails at its next call instead).
 * Each call blocks until the rank's part is done, or until the timeout
 * (then MRC_ERR_TIMEOUT names the node and step it waited at). A call that
 * fails once it has begun to talk to its peers (any status) leaves the
 * communicator refusing every later call.
 */
#ifndef MRC_COMM_H
#define MRC_COMM_H

#include <stddef.h>

#include "mrc/status.h"
#include "mrc/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mrc_comm mrc_comm_t;

typedef struct mrc_config {
    /* Topology spec or file; NULL: ring:<nranks> (line:1 for one rank).
     * Its node count must equal nranks; rank r runs on node r. */
    const char *topology;
    /* Ring strategy (see `mrc help rings`); NULL: auto. */
    const char *strategy;
    /* Groups "A+B+..." of consecutive ranks, or rank lists "0,4+1,5+..."
     * (see mrc_embed_config_t.groups); NULL: one group. Each
     * communicator's collectives run within its own group, all groups at
     * once; mrc_comm_rank and mrc_comm_size are within the group. */
    const char *groups;
    /* Seconds any call may wait; 0: $MRC_TIMEOUT, else 60. (An
     * environment variable of this struct's that is set but cannot be
     * read, "soon" or "-3", fails the communicator's creation with
     * MRC_ERR_INVALID_ARG naming it, never stands for the default.) */
    double timeout_s;
    /* Pipelining chunk in bytes; 0: $MRC_CHUNK_BYTES, else 256 KiB. A
     * call whose plan (operations per chunk, for every rank of this
     * process) or scratch would pass $MRC_MAX_MEMORY (a size; default
     * half of physical memory) fails with MRC_ERR_INVALID_ARG and the
     * figure, on every rank, before anything is allocated. */
    size_t chunk_bytes;
    /* GCL replica size (instead of groups); 0: none. */
    int replica_size;
    /* At most this many rings per group (see mrc_embed_config_t). */
    int max_rings;
    /* Algorithm family: "rings", "direct1", "direct2", "tree", "hier"
     * or "auto" (see mrc_algo_t); NULL: $MRC_ALGO, else auto (the
     * selector's cost model picks one per call shape, with this host's
     * figures when $MRC_PROFILE names a profile from `mrc calibrate`; a
     * profile that cannot be read or is of another transport fails the
     * communicator's creation). A family that does not apply to a call
     * fails it with MRC_ERR_UNSUPPORTED and the reason. */
    const char *algo;
    /* The ranks are on this many hosts, in equal blocks of consecutive
     * ranks (what the hier family spans); 0: $MRC_HOSTS, else 1. For
     * threads and shm, which are on one host, this is a test's way to
     * run hier; mrc_comm_init_mpi finds the real hosts and ignores it. */
    int hosts;
    /* Links taken out of the topology before the rings are embedded,
     * "A-B[:K],..." (see mrc_topo_fail_links); NULL or "": none. */
    const char *failed_links;
    /* When a rank's reduce or broadcast returns: "group" or "local" (see
     * mrc_completion_t; the drop-in MPI library asks for local, as MPI's
     * collectives complete); NULL: $MRC_COMPLETION, else group. */
    const char *completion;
    /* 1: the buffers of this communicator's calls are, on every rank,
     * memory from mrc_mem_alloc (mrc.torch.use_shared_memory's tensors,
     * mrc-bench --mem-alloc), which the peers map and read with plain
     * loads: the selector then prices reading a peer's buffer in place
     * as a copy, not as the kernel's (which it avoids: docs/families.md).
     * Every rank must pass the same: ranks that choose different
     * families for a call fail it, naming both. 0: any memory. */
    int shared_buffers;
    /* A rank's copies and reductions write around the caches (no read
     * for ownership of each line) when its receive buffer is at least
     * this many bytes (a direct family's reducing gets: their block at
     * least this and 16 MiB); 0: $MRC_STREAM_BYTES, else the
     * stream_bytes of $MRC_PROFILE (where `mrc calibrate` found that it
     * pays on this host), else 8 MiB; SIZE_MAX: never. When this is 0,
     * a $MRC_STREAM_BYTES that is not a size fails the communicator's
     * creation (a size past any buffer, 1T, also means never). */
    size_t stream_bytes;
} mrc_config_t;

/* Creates nranks communicators that talk through threads of this
 * process: comms[r] is rank r, to be used by one thread at a time. */
MRC_EXTERN mrc_status_t mrc_comm_init_all(mrc_comm_t **comms, int nranks,
                                          const mrc_config_t *cfg);
/* One rank of a job of processes on this host, joined through shared
 * memory private to the job (created mode 0600 with O_EXCL, unlinked once
 * every rank has attached; a segment of that name that is not this
 * user's, not mode 0600 or not made by this job is refused with an error,
 * never joined). `job` (letters, digits, '-', '_'; 1 to 64) names the
 * job: every rank passes the same, and it should be hard to guess (mrc
 * launch makes 128 random bits, and a secret token besides, which
 * mrc_comm_init_env passes on). Waits up to the timeout for every rank;
 * a rank that dies makes the others' calls fail with MRC_ERR_PEER_LOST,
 * and the communicator then refuses further calls. */
MRC_EXTERN mrc_status_t mrc_comm_init_rank(mrc_comm_t **comm, int nranks,
                                           int rank, const char *job,
                                           const mrc_config_t *cfg);
/* The same, from $MRC_NRANKS, $MRC_RANK and $MRC_JOB (set by `mrc launch
 * -n N -- PROGRAM`). */
MRC_EXTERN mrc_status_t mrc_comm_init_env(mrc_comm_t **comm,
                                          const mrc_config_t *cfg);

/* Destroys a communicator (after every rank has finished its calls);
 * NULL is a no-op. */
MRC_EXTERN mrc_status_t mrc_comm_destroy(mrc_comm_t *comm);

/* Memory for buffers that the ranks of a job on one host read directly
 * (as MPI_Alloc_mem): over shared memory a peer maps it once and reads it
 * with plain loads, where other memory is read through the kernel (a
 * copy more for a reduction). Any buffer works with any call; these are
 * faster. bytes > 0; *ptr is page-aligned, or NULL on failure. Free with
 * mrc_mem_free (NULL is a no-op; a pointer it did not return is an
 * error). On Linux only 64 regions alive at once are shared (the
 * first ones); later ones are ordinary memory to the peers. */
MRC_EXTERN mrc_status_t mrc_mem_alloc(size_t bytes, void **ptr);
MRC_EXTERN mrc_status_t mrc_mem_free(void *ptr);

/* Rank within the communicator's group, and the group's size. */
MRC_EXTERN int mrc_comm_rank(const mrc_comm_t *comm);
MRC_EXTERN int mrc_comm_size(const mrc_comm_t *comm);

/* Buffers may lie at any address: one that is not aligned for its type
 * (an int32 array at an odd address) gives the same result, through a
 * slower copy.
 *
 * recvbuf[i] = op over the group of sendbuf[i], i < count, on every rank.
 * In place: sendbuf == recvbuf. */
MRC_EXTERN mrc_status_t mrc_allreduce(const void *sendbuf, void *recvbuf,
                                      size_t count, mrc_dtype_t dtype,
                                      mrc_op_t op, mrc_comm_t *comm);
/* sendbuf holds size x recvcount elements; rank r receives block r of the
 * reduction. In place: recvbuf == sendbuf + rank * recvcount. */
MRC_EXTERN mrc_status_t mrc_reduce_scatter(const void *sendbuf, void *recvbuf,
                                           size_t recvcount, mrc_dtype_t dtype,
                                           mrc_op_t op, mrc_comm_t *comm);
/* recvbuf holds size x sendcount elements: block r from rank r. In place:
 * sendbuf == recvbuf + rank * sendcount. */
MRC_EXTERN mrc_status_t mrc_allgather(const void *sendbuf, void *recvbuf,
                                      size_t sendcount, mrc_dtype_t dtype,
                                      mrc_comm_t *comm);
/* The reduction lands in the root's recvbuf (others may pass NULL). */
MRC_EXTERN mrc_status_t mrc_reduce(const void *sendbuf, void *recvbuf,
                                   size_t count, mrc_dtype_t dtype, mrc_op_t op,
                                   int root, mrc_comm_t *comm);
/* The root's sendbuf lands in every recvbuf (others' sendbuf is unused). */
MRC_EXTERN mrc_status_t mrc_broadcast(const void *sendbuf, void *recvbuf,
                                      size_t count, mrc_dtype_t dtype, int root,
                                      mrc_comm_t *comm);

#ifdef __cplusplus
}
#endif

#endif /* MRC_COMM_H */
