/*
 * The selector: which algorithm family runs a call. Every family that
 * compiles for the call (and that the transport can run) is a candidate;
 * each candidate's time is predicted from its compiled program, and the
 * fastest wins. docs/families.md ("Selection") describes the model.
 */
#ifndef MRC_SIM_SELECT_H
#define MRC_SIM_SELECT_H

#include <stdint.h>

#include "mrc/profile.h"
#include "mrc/program.h"
#include "mrc/sim.h"
#include "mrc/topo.h"

/* What moves the data, as the cost model sees it. */
typedef enum mrc__sim_transport {
    MRC__SIM_TRANSPORT_LINKS, /* the topology's links: the simulator's model */
    MRC__SIM_TRANSPORT_THREADS, /* ranks as threads of one process */
    MRC__SIM_TRANSPORT_SHM, /* processes of one host over a shared segment */
    MRC__SIM_TRANSPORT_MPI, /* MPI point-to-point (across hosts) */
    MRC__SIM_NUM_TRANSPORTS
} mrc__sim_transport_t;

const char *mrc__sim_transport_name(mrc__sim_transport_t x);
/* "links", "threads", "shm" or "mpi"; MRC_ERR_INVALID_ARG naming them. */
mrc_status_t mrc__sim_transport_parse(const char *name,
                                      mrc__sim_transport_t *out);
/* The kind of a transport by its ops' name ("threads", "shm", "mpi"). */
mrc__sim_transport_t mrc__sim_transport_of(const char *transport_name);

/* Where a node's vector lives, by its bytes: the core's own caches, the
 * shared last-level cache, or memory. The copy and reduction rates
 * differ by an order of magnitude between them. */
enum { MRC__CPU_TIERS = 3 };

/* The CPU transports' constants (docs/families.md): a sync between
 * ranks, the fixed cost of one transfer, and copy and reduction rates
 * (GB/s of bytes written) per tier. */
typedef struct mrc__cpu_cost {
    double sync_us;
    /* A round that ends at a memory wait (WAIT, BARRIER: a flag in a
     * line the peer wrote), where it costs less than a message's round;
     * 0: sync_us. */
    double flag_sync_us;
    double op_us;
    double copy_gbps[MRC__CPU_TIERS];
    double reduce_gbps[MRC__CPU_TIERS];
    int send_copies; /* copies a send makes on the critical path (into a
                        segment or a buffer): 0, 1 or 2 */
    /* A message of rdv_bytes or more goes by rendezvous (the receiver
     * reads the sender's buffer through the kernel, into a bounce buffer
     * where it reduces, and the sender copies nothing): rdv_us more for
     * its receive (0: none does). */
    double rdv_bytes, rdv_us;
    /* What the kernel copies (a rendezvous's message, a get from a
     * buffer exposed by reference, between processes) moves at this
     * rate, and is then reduced in a pass of its own; 0: it is read with
     * plain loads like any copy. */
    double kernel_gbps;
    /* 1: a send buffer exposed by reference that fits the owner's area
     * goes there instead (shm, mrc__sim_send_copied), so a get of it is
     * its owner's copy and its reader's with plain loads, not the
     * kernel's read; a profile of the transport keeps it. */
    int copies_sends;
    /* With more ranks than cores, a receive waits for a sender that may
     * not hold a core: oversub_recv_us more, and its bytes 1 /
     * oversub_recv_gbps more (memory programs' gets need no running
     * peer). mrc__cpu_time_profile applies them only then. */
    double oversub_recv_us, oversub_recv_gbps;
    /* 0: the tiers of mrc__cpu_tier. Otherwise (a profile's) two
     * regimes: tier 0 up to this many bytes, tier 2 beyond. */
    double cache_bytes;
} mrc__cpu_cost_t;

/* The tier of a vector of `bytes`: 0 below 32 KiB, 1 up to 4 MiB, 2. */
int mrc__cpu_tier(uint64_t bytes);

const mrc__cpu_cost_t *mrc__cpu_cost(mrc__sim_transport_t x);

/* The tier of a vector of `bytes` under k (its cache_bytes, if any). */
int mrc__cpu_cost_tier(const mrc__cpu_cost_t *k, uint64_t bytes);

/* The CPU model's constants from a host profile, for a call of `dtype`
 * and `op` over `n` ranks of transport x: the profile's sync and message
 * costs, its copy and reduction rates in and beyond cache, and beyond
 * cache at most the memory system's shared bandwidth over the ranks that
 * share it. MRC_ERR_INVALID_ARG when the profile was measured on another
 * transport (or x is the links' model, which a profile does not
 * describe). */
mrc_status_t mrc__cpu_cost_of_profile(const mrc_profile_t *pr,
                                      mrc__sim_transport_t x, mrc_dtype_t dtype,
                                      mrc_op_t op, int n, mrc__cpu_cost_t *out);

typedef struct mrc__candidate {
    mrc_algo_t algo;
    /* MRC_OK: compiled and timed; otherwise why it does not apply. */
    mrc_status_t status;
    char why[256];
    double time_us;
    double busbw_gbps;
    double bound_gbps;
    double efficiency; /* algbw / bound */
    int code_instructions;
} mrc__candidate_t;

typedef struct mrc__selection {
    mrc_algo_t chosen; /* MRC_ALGO_AUTO when nothing applies */
    char reason[320];
    mrc__candidate_t cand[MRC_NUM_ALGOS];
} mrc__selection_t;

typedef struct mrc__select_input {
    const mrc_embedding_t *embedding;
    const mrc_topo_t *topo;
    mrc_compile_config_t cc; /* algo is ignored */
    int group;               /* the group to compile; -1: every group */
    mrc__sim_transport_t transport;
    /* 0 when the runtime cannot run expose/get programs (the families
     * direct1 and direct2) over this transport, with `no_memory_why`
     * saying why. */
    int memory_ok;
    const char *no_memory_why;
    /* 1 when expose/get work between the ranks of each host (cc.hosts),
     * even where memory_ok is 0 (MPI between hosts): the hier family. */
    int host_memory_ok;
    /* 1 when a peer's buffers can be read in place (exposure by
     * reference: cross-memory attach on shm); 0 skips such programs. */
    int ref_ok;
    /* Time every candidate even when only one applies (explain, logs);
     * otherwise a lone candidate is chosen untimed (time_us 0). */
    int want_times;
    /* A host profile (mrc calibrate), NULL: none; it must be of the
     * input's transport. What times a call with one: select.c,
     * SIM_SELECT_NODES. */
    const mrc_profile_t *profile;
    /* 1: the call's buffers are mapped by the peers on every rank
     * (mrc_config_t.shared_buffers): a get of a buffer exposed by
     * reference, or a rendezvous, reads with plain loads, not through
     * the kernel. */
    int peers_mapped;
} mrc__select_input_t;

/* Compiles and times every family (or only `force`, unless it is
 * MRC_ALGO_AUTO) and picks the fastest. *program (if not NULL) gets the
 * chosen program, which the caller destroys. MRC_ERR_UNSUPPORTED with
 * the reason as the last error when the forced family, or every family,
 * does not apply; other errors (out of memory) as they come. */
mrc_status_t mrc__select(const mrc__select_input_t *in, mrc_algo_t force,
                         mrc__selection_t *out, mrc_program_t **program);

/* Profile pr for a call whose `nodes` all run on one host (threads,
 * shm, MPI ranks of one host), in *copy: every node on one memory
 * system. A profile's nodes_per_memory is how many shared one where it
 * was measured (its ranks), and the simulator would otherwise split a
 * call of more nodes into hosts of that many. */
const mrc_profile_t *mrc__profile_one_host(const mrc_profile_t *pr, int nodes,
                                           mrc_profile_t *copy);

/* mrc_sim_run, refusing (MRC_ERR_UNSUPPORTED) a program whose memory
 * operations the simulator does not time, rather than a time of 0. */
mrc_status_t mrc__select_sim(const mrc_program_t *p, const mrc_topo_t *t,
                             const mrc_sim_config_t *cfg,
                             mrc_sim_result_t **out);

/* The CPU model's time of a program (us) for a transport kind; `topo`
 * (the program's, or NULL to skip it) gives the dependency depth of
 * send/receive programs through the simulator's BSP steps. */
mrc_status_t mrc__cpu_time(const mrc_program_t *p, const mrc_topo_t *topo,
                           mrc__sim_transport_t x, double *time_us);
/* The same with a profile's figures (NULL: the built-in ones), for
 * buffers the peers map (peers_mapped: nothing goes through the kernel)
 * or not. */
mrc_status_t mrc__cpu_time_profile(const mrc_program_t *p,
                                   const mrc_topo_t *topo,
                                   mrc__sim_transport_t x,
                                   const mrc_profile_t *profile,
                                   int peers_mapped, double *time_us);

/* Whether p's nodes that only send return once their part is done, and
 * so run calls ahead of their peers (a reduce or a broadcast with local
 * completion): the CPU model then times a call in a run of them, each
 * node alone, since none waits for a flag its peer raised a call ago. */
int mrc__cpu_runs_ahead(const mrc_program_t *p);

/* nccl-tests' bus bandwidth factor for a collective over n ranks. */
double mrc__busbw_factor(mrc_collective_t c, int n);

#endif /* MRC_SIM_SELECT_H */
