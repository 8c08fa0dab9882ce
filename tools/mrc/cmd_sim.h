/*
 * What mrc sim (cmd_sim.c) shares with its sweep (cmd_sim_sweep.c): the
 * arguments read from the command line, and one simulation of them.
 */
#ifndef MRC_CLI_CMD_SIM_H
#define MRC_CLI_CMD_SIM_H

#include <stdint.h>

#include "mrc/mrc.h"

typedef struct sim_args {
    const char *spec, *strategy, *groups;
    int replica;
    mrc_collective_t coll;
    mrc_dtype_t dtype;
    mrc_algo_t algo;
    int hosts; /* hier */
    uint64_t size;
    mrc_sim_config_t cfg;
} sim_args_t;

/* One simulation: topology, rings, program, run. *rings gets the rings
 * of the first group. */
mrc_status_t sim_simulate(const sim_args_t *a, const mrc_topo_t *t,
                          const char *strategy, uint64_t size,
                          mrc_sim_result_t **out, int *rings);

/* --sweep MIN:MAX: the sizes in powers of two for each strategy,
 * written to PREFIX.csv and PREFIX.json, and PREFIX.svg with gnuplot
 * when it is installed. CLI status. */
int sim_sweep(const char *cmd, const sim_args_t *a, const mrc_topo_t *t,
              const char *range, const char *prefix);

#endif /* MRC_CLI_CMD_SIM_H */
