/*
 * The workload scheduler's pure parts (workload.c), internal: tested on
 * their own with hand-computed times.
 */
#ifndef MRC_SIM_WORKLOAD_H
#define MRC_SIM_WORKLOAD_H

#include "mrc/status.h"

/* The streams: compute, and the network (one collective at a time). */
enum { MRC__WL_COMPUTE = 0, MRC__WL_COMM = 1, MRC__WL_STREAMS = 2 };

typedef struct mrc__wl_task {
    int stream;         /* MRC__WL_COMPUTE or MRC__WL_COMM */
    double duration_us; /* >= 0 */
    int num_deps;
    const int *deps; /* indices of tasks that must end first */
} mrc__wl_task_t;

/* Plays the tasks on their streams: a task is ready when its last
 * dependency ends; a free stream takes its ready tasks in the order they
 * became ready (ties: the lower index first), as a host enqueues work
 * on a stream when it can. Fills start[] and end[] (n each).
 * MRC_ERR_INVALID_ARG if the dependencies hold a cycle (some tasks never
 * become ready). */
mrc_status_t mrc__wl_schedule(const mrc__wl_task_t *tasks, int n,
                              double *start, double *end);

/* Looks for a dependency cycle: 0 if none; otherwise its length, with
 * the tasks of one cycle in cycle[] (in dependency order: each depends
 * on the next, the last on the first). cycle[] holds n entries. */
int mrc__wl_find_cycle(const mrc__wl_task_t *tasks, int n, int *cycle);

/* The time in [0, inf) covered by intervals of b but not of a, where
 * each list holds disjoint intervals sorted by start: what of the
 * communication (b) no compute (a) hides. */
double mrc__wl_uncovered(const double *a_start, const double *a_end, int na,
                         const double *b_start, const double *b_end, int nb);

#endif /* MRC_SIM_WORKLOAD_H */
