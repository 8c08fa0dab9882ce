/*
 * Workloads inside the library: the ops as read (workload_read.c,
 * workload_chakra.c), and the scheduler's pure parts (workload_sched.c),
 * tested on their own with hand-computed times.
 */
#ifndef MRC_SIM_WORKLOAD_H
#define MRC_SIM_WORKLOAD_H

#include <stdint.h>

#include "mrc/sim.h"
#include "mrc/status.h"

#define WL_FORMAT "mrc-workload"
/* Ops in one step, and steps: bounds that keep the tables and the
 * products small; far beyond a training step's buckets. */
enum { WL_MAX_OPS = 1 << 20, WL_MAX_STEPS = 1 << 30 };
/* The largest collective (bytes per node), as `mrc sim --sweep`. */
#define WL_MAX_SIZE ((uint64_t)1 << 40)
/* A compute op's longest duration: a day, in us. */
#define WL_MAX_DURATION_US 8.64e10

/* One op as read, before and after its dependencies are resolved. */
typedef struct mrc__workload_op {
    char *id;
    mrc_workload_kind_t kind;
    double duration_us; /* compute */
    mrc_collective_t coll;
    uint64_t size;
    mrc_dtype_t dtype;
    mrc_op_t op;
    int root;
    char *groups; /* NULL: the caller's */
    int replica;  /* 0: the caller's */
    mrc_algo_t algo;
    int num_deps;
    int *deps;      /* indices, once resolved */
    char **dep_ids; /* as written, until resolved */
} mrc__workload_op_t;

struct mrc_workload {
    int steps;
    int num_ops;
    mrc__workload_op_t *ops;
};

/* Room for n ops in w->ops (zeroed). */
mrc_status_t mrc__workload_alloc_ops(mrc_workload_t *w, size_t n);

/* Reads the nodes of a Chakra execution trace as JSON (workload_chakra.c)
 * into w's ops, dependencies by id, not yet resolved. */
mrc_status_t mrc__workload_read_chakra(const char *text, size_t len,
                                       mrc_workload_t *w);

/* The streams: compute, and the network (one collective at a time). */
enum { MRC__WL_COMPUTE = 0, MRC__WL_COMM = 1, MRC__WL_STREAMS = 2 };

typedef struct mrc__workload_task {
    int stream;         /* MRC__WL_COMPUTE or MRC__WL_COMM */
    double duration_us; /* >= 0 */
    int num_deps;
    const int *deps; /* indices of tasks that must end first */
} mrc__workload_task_t;

/* Plays the tasks on their streams: a task is ready when its last
 * dependency ends; a free stream takes its ready tasks in the order they
 * became ready (ties: the lower index first), as a host enqueues work
 * on a stream when it can. Fills start[] and end[] (n each).
 * MRC_ERR_INVALID_ARG if the dependencies hold a cycle (some tasks never
 * become ready). */
mrc_status_t mrc__workload_schedule(const mrc__workload_task_t *tasks, int n,
                                    double *start, double *end);

/* The workload's ops as tasks (durations of collectives left 0; deps
 * resolved); free(). NULL if out of memory. */
mrc__workload_task_t *mrc__workload_tasks(const mrc_workload_t *w);

/* Looks for a dependency cycle: 0 if none; otherwise its length, with
 * the tasks of one cycle in cycle[] (in dependency order: each depends
 * on the next, the last on the first). cycle[] holds n entries. */
int mrc__workload_find_cycle(const mrc__workload_task_t *tasks, int n,
                             int *cycle);

/* The time in [0, inf) covered by intervals of b but not of a, where
 * each list holds disjoint intervals sorted by start: what of the
 * communication (b) no compute (a) hides. */
double mrc__workload_uncovered(const double *a_start, const double *a_end,
                               int na, const double *b_start,
                               const double *b_end, int nb);

#endif /* MRC_SIM_WORKLOAD_H */
