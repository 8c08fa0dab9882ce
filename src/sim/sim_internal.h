/* Simulator internals shared with its tests. */
#ifndef MRC_SIM_INTERNAL_H
#define MRC_SIM_INTERNAL_H

/* When a single-group BSP run simulates one step per ring loop instead of
 * every message (fast_bsp in sim.c): when that is exact or the group is
 * too large to walk (auto), or always, or never. Tests set it to compare
 * the two paths. */
typedef enum mrc__sim_fast {
    MRC__SIM_FAST_AUTO,
    MRC__SIM_FAST_ALWAYS,
    MRC__SIM_FAST_NEVER
} mrc__sim_fast_t;

extern mrc__sim_fast_t mrc__sim_fast;

#endif
