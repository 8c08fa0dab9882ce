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
} mrc_sim_config_t;

typedef struct mrc_sim_result {
    double time_us;
    double algbw_gbps;  /* data bytes per node / time */
    double busbw_gbps;  /* algbw x nccl-tests' factor for the collective */
    double bound_gbps;  /* the slowest node's outgoing bandwidth / the share
                           of its data it must send */
    double efficiency;  /* algbw / bound */
    double energy_j;            /* idle links switched off */
    double energy_no_gating_j;  /* every link on throughout */
    double bytes_moved;         /* over all channels (a routed message
                                   counts once per link it crosses) */
    int steps;
    int num_links;
    /* [2 * num_links]: entry i, direction d at 2i + d. */
    double *link_bytes;        /* bytes carried */
    double *link_utilisation;  /* busy share of the whole time */
} mrc_sim_result_t;

/* Simulates a program on its topology (the one it was compiled for). */
MRC_EXTERN mrc_status_t mrc_sim_run(const mrc_program_t *p,
                                    const mrc_topo_t *topo,
                                    const mrc_sim_config_t *cfg,
                                    mrc_sim_result_t **out);
MRC_EXTERN void mrc_sim_result_destroy(mrc_sim_result_t *r);

#ifdef __cplusplus
}
#endif

#endif /* MRC_SIM_H */
