/*
 * mrc run's rows (run_rows.c): one collective run on every rank in
 * threads, timed and checked element by element against a sequential
 * reduction, and printed as nccl-tests rows or as JSON.
 */
#ifndef MRC_CLI_RUN_H
#define MRC_CLI_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "mrc/mrc.h"

typedef struct run_cfg {
    mrc_collective_t coll;
    size_t count; /* API count: per node, or per block for RS/AG */
    mrc_dtype_t dtype;
    mrc_op_t op;
    int root, iters, warmup;
    const mrc_profile_t *predict; /* --predict: the node model's profile */
} run_cfg_t;

/* One row: a strategy and collective, run, and what it gave. */
typedef struct row {
    const char *strategy;
    double efficiency;
    run_cfg_t rc;
    size_t bytes, elems;
    double time_us, algbw, busbw;
    size_t wrong;
    int failed;
    int unsupported;     /* a call refused the family asked for (--algo) */
    double predicted_us; /* --predict: the simulator's time; 0: none */
} row_t;

/* Runs row->rc on all ranks (one thread each) and fills the row's
 * figures; a failed call's error goes to error[errlen]. -1 when out of
 * memory for the threads. */
int run_row(mrc_comm_t **comms, int nranks, row_t *row, char *error,
            size_t errlen);

/* --predict: the simulator's time for the program the row's calls ran
 * (pipelined, as the executor runs chunks), with the profile's node
 * model; -1 (and the error on stderr) if it cannot be had. */
int run_predict(const char *cmd, const mrc_comm_t *c, row_t *row);

/* The table's two header lines; `predict` adds the prediction's columns. */
void run_print_header(int predict);
void run_print_row(const row_t *r);
/* The rows as one JSON object. */
void run_print_json(const char *topology, int nranks, const row_t *rows,
                    int nrows);

/* Refuses (with the figure) buffers of nranks ranks, two of count x
 * ranks elements and one more each, beyond the memory limit. */
mrc_status_t run_check_buffers(uint64_t count, int nranks, mrc_dtype_t dt);

#endif /* MRC_CLI_RUN_H */
