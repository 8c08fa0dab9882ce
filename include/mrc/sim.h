/*
 * The simulator: the same program that runs, played on a model of the
 * hardware. Every link direction is a channel (count x bandwidth, a
 * latency); a message loads every channel of its route; messages that
 * share a channel share its bandwidth fairly (max-min). Time, bandwidth,
 * per-link utilisation, and energy with and without switching idle links
 * off (seed 000, claim 7). docs/simulator.md describes the model.
 */
#ifndef MRC_SIM_H
#define MRC_SIM_H

#include "mrc/program.h"
#include "mrc/status.h"
#include "mrc/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mrc_sim_mode {
    /* A barrier after every step (the compute/sync/exchange of seeds 001
     * and 003): a step ends when its last message has arrived. */
    MRC_SIM_BSP,
    /* Each chunk moves as soon as its data is ready. */
    MRC_SIM_PIPELINED
} mrc_sim_mode_t;

typedef struct mrc_sim_config {
    mrc_sim_mode_t mode;
    /* Energy per bit moved over one link (pJ); 0: the default, 5. */
    double pj_per_bit;
    /* Power of one physical link while it is on (W); 0: default 0.5. */
    double link_power_w;
    /* Time a switched-off link takes to come back (us); 0: default 1.
     * The program knows each phase's links in advance (its `ports`
     * instruction), so links are woken ahead of use: waking costs energy
     * (link power for this long), not time. */
    double wake_us;
    /* Chunks per fragment; 0: the program's own chunking. */
    int chunks;
    /* A host profile (borrowed): the node model charges local copies,
     * reductions, per-message overhead and syncs, and moves messages
     * between nodes of one host through memory (docs/simulator.md, "Node
     * model"). NULL, the default: local memory is free, only links cost
     * time (an accelerator interconnect). */
    const struct mrc_profile *profile;
    /* With a profile: the nodes' buffers are memory their peers map
     * (mrc_mem_alloc), so a node reduces a peer's data in its one pass,
     * with no copy into a bounce buffer first. 0, the default: ordinary
     * memory, read through the kernel where the profile has its rate. */
    int peers_mapped;
    /* Pipelined mode: 0 or 1 times one call alone, its nodes starting
     * together. 2..MRC_SIM_MAX_CALLS times a call in a run of that many,
     * back to back, as a loop of calls runs: each node begins its next
     * call when it has ended this one (with the group's completion, a
     * reduce's or broadcast's node ends a call once every member of its
     * group has begun it), and time_us is the period: (end of the last
     * call - end of the second) / (calls - 2), or of 2 calls the second's
     * end less the first's (the first call, every node starting it at
     * once, is the run's start, not its pace); the link, energy and
     * bandwidth figures are a call's share of the run. A call that every
     * node runs alike takes the same time either way. */
    int calls;
} mrc_sim_config_t;

/* The longest run of calls mrc_sim_config_t.calls takes. */
#define MRC_SIM_MAX_CALLS 16

typedef struct mrc_sim_result {
    double time_us;
    double algbw_gbps; /* data bytes per node / time */
    double busbw_gbps; /* algbw x nccl-tests' factor for the collective */
    double bound_gbps; /* the slowest node's outgoing bandwidth / the share
                          of its data it must send */
    double efficiency; /* algbw / bound */
    double energy_j;   /* idle links switched off */
    double energy_no_gating_j; /* every link on throughout */
    double bytes_moved;        /* over all channels (a routed message
                                  counts once per link it crosses) */
    int steps;
    int num_links;
    /* [2 * num_links]: entry i, direction d at 2i + d. */
    double *link_bytes;       /* bytes carried */
    double *link_utilisation; /* busy share of the whole time */
} mrc_sim_result_t;

/* Simulates a program on its topology (the one it was compiled for). */
MRC_EXTERN mrc_status_t mrc_sim_run(const mrc_program_t *p,
                                    const mrc_topo_t *topo,
                                    const mrc_sim_config_t *cfg,
                                    mrc_sim_result_t **out);
MRC_EXTERN void mrc_sim_result_destroy(mrc_sim_result_t *r);

/*
 * Workloads (docs/simulator.md, "Workloads"): a step of collectives and
 * compute with dependencies, such as a data-parallel training step whose
 * gradient buckets are reduced while the backward pass goes on. Compute
 * runs on one stream, collectives on another (one at a time: each is
 * simulated with the links to itself); an op starts when its stream is
 * free and its dependencies have ended, in the order ops became ready.
 */
typedef struct mrc_workload mrc_workload_t;

/* The workload format's version; a file of another version is refused. */
#define MRC_WORKLOAD_VERSION 1

/* Reads a workload from JSON text: the mrc format, or the communication
 * and compute nodes of a Chakra execution trace exported as JSON.
 * `origin` (a file name, or NULL) prefixes errors. MRC_ERR_PARSE naming
 * the op and the field that is wrong. */
MRC_EXTERN mrc_status_t mrc_workload_parse(const char *json, size_t len,
                                           const char *origin,
                                           mrc_workload_t **out);
MRC_EXTERN mrc_status_t mrc_workload_load(const char *path,
                                          mrc_workload_t **out);
MRC_EXTERN void mrc_workload_destroy(mrc_workload_t *w);

typedef enum mrc_workload_kind {
    MRC_WORKLOAD_COMPUTE,
    MRC_WORKLOAD_COLLECTIVE
} mrc_workload_kind_t;

typedef struct mrc_workload_op_result {
    const char *id; /* the workload's; valid while the workload lives */
    mrc_workload_kind_t kind;
    double start_us, end_us; /* within one step */
} mrc_workload_op_result_t;

typedef struct mrc_workload_result {
    int steps;         /* the workload's repetitions */
    double step_us;    /* one step: from 0 to the last op's end */
    double total_us;   /* steps x step_us (steps end to end) */
    double compute_us; /* one step's compute, summed */
    double comm_us;    /* one step's collectives, summed */
    /* Communication not hidden behind compute: the time in a step when
     * a collective runs and no compute does, which is also the time
     * compute waits on communication (step_us - compute_us). */
    double exposed_comm_us;
    double energy_j;           /* one step, links off when idle */
    double energy_no_gating_j; /* one step, every link on throughout */
    int distinct_collectives;  /* simulated once each */
    int num_ops;
    mrc_workload_op_result_t *ops; /* [num_ops], in the workload's order */
} mrc_workload_result_t;

/* Simulates one step of `w` on `topo`: each distinct collective (kind,
 * size, dtype, op, root, groups, algo) is compiled on an embedding of
 * `ec` (its strategy; its groups for ops that name none) and simulated
 * once with `cfg`, then the ops are scheduled over their dependencies.
 * An op's error is prefixed with its id. */
MRC_EXTERN mrc_status_t mrc_sim_workload(const mrc_workload_t *w,
                                         const mrc_topo_t *topo,
                                         const mrc_embed_config_t *ec,
                                         const mrc_sim_config_t *cfg,
                                         mrc_workload_result_t **out);
MRC_EXTERN void mrc_workload_result_destroy(mrc_workload_result_t *r);

#ifdef __cplusplus
}
#endif

#endif /* MRC_SIM_H */
