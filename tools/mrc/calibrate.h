/*
 * The probes of `mrc calibrate` (calibrate_probe.c): short measurements
 * of this host's copy and reduction rates and of a transport's message
 * and sync costs, each the median of several repetitions.
 */
#ifndef MRC_CLI_CALIBRATE_H
#define MRC_CLI_CALIBRATE_H

#include <pthread.h>
#include <stddef.h>

#include "mrc/mrc.h"
#include "clock.h"

/* How much to measure, and whom to tell how far it got. */
typedef struct cal_plan {
    const char *transport; /* "threads", "shm" or "mpi" */
    int ranks;             /* nodes sharing the memory system, >= 2 */
    int reps;              /* repetitions a figure is the median of */
    size_t memory_bytes;   /* a vector well beyond the last-level cache */
    size_t rep_bytes;      /* bytes a repetition moves at least */
    int all_ops_beyond;    /* 0: beyond cache, only sum of each dtype */
    int trips;             /* round trips a sync or message figure times */
    double steady_wait_s;  /* pauses for a slow host, in all (s) */
    /* Called between probes with the share done (0..1) and what runs. */
    void (*progress)(void *ctx, double done, const char *what);
    void *ctx;
} cal_plan_t;

/* Where the ranks of a probe or a --check row run: rank r of P on one
 * CPU, in blocks of consecutive ranks (4 on 2 CPUs: 0 and 1 on the
 * first, 2 and 3 on the second; P up to the CPUs: one each), as a job's
 * processes are bound. Unbound, a new thread starts on its creator's
 * CPU and the kernel spreads it only later (two new ranks of a 4 KiB
 * allreduce took 16 us a call for their first 50 ms on this VM), and
 * 4 ranks on 2 cores shared them differently from run to run (threads
 * at P = 4, unbound: direct1's 256 KiB predicted at 0.68 of its time in
 * one capture, 2.16 in another). Blocks put the tree's two busiest
 * ranks (0 and 2) on two cores.
 * cal_pin_rank: for a new thread, in *attr (initialised, the caller
 * destroys it): 1, or 0 with *attr untouched (one CPU, or it cannot be
 * set). cal_pin_self: the calling process. */
int cal_pin_rank(pthread_attr_t *attr, int rank, int ranks);
void cal_pin_self(int rank, int ranks);
/* Copy rate of one node (GB/s) for vectors of `bytes`, a repetition
 * copying them until it has moved rep_bytes. */
double cal_copy_gbps(size_t bytes, size_t rep_bytes, int reps);
/* How much a probe measures (reps, memory_bytes, rep_bytes), --quick or
 * not: calibrate's and --check's alike. */
void cal_plan_sizes(cal_plan_t *plan, int quick);
/* This host's copy rates now, measured as a profile's are
 * (calibrate_host.c): the fastest of 64 KiB, 256 KiB and 1 MiB in cache,
 * plan->memory_bytes beyond it. */
void cal_copy_now(const cal_plan_t *plan, double *cache_gbps,
                  double *memory_gbps);
/* This host's copy rates now beside those a profile measured (ratios:
 * now / then), and whether both are within 0.8-1.25 (the check's bounds
 * at P = 2). A profile measured while the host's memory ran at another
 * speed predicts every call for that speed: on the build machine one
 * calibration measured copies in cache at 105 GB/s and beyond at 15,
 * where the others measured 131 and 25, and its check had 18 rows of 29
 * within. What --check prints, and calibrate measures again for. */
typedef struct cal_rates {
    double cache, memory;          /* GB/s, now */
    double cache_ratio, mem_ratio; /* now / the profile's */
    int as_calibrated;
} cal_rates_t;
void cal_rates_beside(const mrc_profile_t *prof, cal_rates_t *r);
/* Total copy rate (GB/s) of `threads` nodes each copying `bytes` at
 * once; 0 when a thread cannot start. */
double cal_shared_gbps(int threads, size_t bytes, int reps);
/* Reduction rate (GB/s of one input operand) of the library's kernel for
 * vectors of `bytes`. */
double cal_reduce_gbps(mrc_dtype_t dtype, mrc_op_t op, size_t bytes,
                       size_t rep_bytes, int reps);
/* One way of a flag round trip (us) between two threads, or two
 * processes when `processes`; < 0 with the last error on failure. */
double cal_sync_us(int processes, int trips, int reps);
/* The probe calls (calibrate_calls.c). The message probe's call (us): a
 * steady allreduce of cal_probe_count(ranks) floats by the rings on
 * `ranks` ranks of the transport (threads in this process, shm between
 * processes it starts); MRC_OK or the failure with the last error. */
mrc_status_t cal_message_us(const char *transport, int ranks, int trips,
                            int reps, double *out);
/* Floats of the message probe on `ranks` ranks: some in every fragment
 * of both streams. */
size_t cal_probe_count(int ranks);

/* A timed probe: `reps` loops of `iters` allreduces of `count` floats
 * by the family (0: the rings), out of place as applications mostly
 * call. */
typedef struct cal_probe {
    size_t count;
    int iters, reps;
    mrc_algo_t algo;
    /* Its ranks write around the caches from this receive buffer on
     * (mrc_config_t.stream_bytes); 0: the calibration's threshold. */
    size_t stream_bytes;
    /* 1: an allgather of `count` floats a rank instead of an allreduce */
    int allgather;
    /* 1: a loop of broadcasts of `count` floats from rank 0 instead of
     * an allreduce, which the simulator times as a call in a run of
     * CAL_RUN_CALLS: what a loop of rooted calls measures is how soon
     * the root can send the next, not a call's latency */
    int broadcast;
    /* 1: shm's ranks read send buffers exposed by reference through the
     * kernel (mrc__shm_set_send_by_ref); 0: copied in where they fit */
    int send_by_ref;
} cal_probe_t;
/* The receive buffer from which the probes' ranks, and the single-node
 * copy and reduction probes, write around the caches, as runs with the
 * profile do: the calibration's stream_bytes once measured (0: the
 * built-in MRC__NONTEMPORAL_BYTES until then). */
void cal_set_stream_bytes(size_t bytes);
size_t cal_stream_bytes(void);
/* The probe on `ranks` ranks of the transport (threads or shm): the
 * median us a call (calibrate_calls.c). */
mrc_status_t cal_probe_once(const char *transport, int ranks,
                            const cal_probe_t *pr, double *out);

/* A host that slows down (calibrate_steady.c): each measurement is
 * bracketed by a canary (a short call whose time tells the host's
 * speed); one beside a canary over `factor` times the fastest seen is
 * timed again after a pause (half a second, four times the last at each
 * try), up to CAL_GUARD_TRIES times and budget_s of pauses in all. Counted: the
 * measurements, those timed again, those kept beside a slow canary; the
 * canary's fastest and its slowest beside a measurement kept (us). */
enum { CAL_GUARD_TRIES = 6, CAL_GUARD_WAIT_S = 300 };
typedef struct cal_guard {
    double factor, budget_s;
    double best_us, worst_us, waited_s;
    int measured, retried, unsteady;
} cal_guard_t;
/* A guard for canaries on `ranks` ranks: twice the best is slow; with
 * more ranks than the host's cores three times (there a steady host's
 * 4 KiB allreduce is bimodal: 4 ranks on 2 cores took 22 or 48 us, row
 * after row). */
cal_guard_t cal_guard_new(int ranks, double budget_s);
/* A canary's time: the fastest seen so far kept. */
void cal_guard_saw(cal_guard_t *g, double us);
int cal_guard_slow(const cal_guard_t *g, double us);
/* A pause for the host, if the budget has one left: 1, else 0. */
int cal_guard_pause(cal_guard_t *g);
/* After attempt `attempt` of a measurement between canaries[0] and [1]:
 * 1 to time it again (after a pause), 0 to keep it. Callers given the
 * same canaries decide alike. */
int cal_guard_again(cal_guard_t *g, const double canaries[2], int attempt);
/* Whether every measurement kept ran beside steady canaries. */
int cal_guard_held(const cal_guard_t *g);
/* The canary calibrate brackets its probes with (a 4 KiB allreduce of
 * two threads, us a call): the host's speed now. */
mrc_status_t cal_host_canary(double *us);

/* The canary now beside the profile's (canary_us, its fastest when
 * calibrated), as cal_rates_beside puts the copy rates: while it runs
 * more than the guard's factor times slower, waits for the host to come
 * back, at most budget_s in all, as a row's guard does; then the last
 * one measured, its ratio to the profile's, and whether it is within
 * the guard's factor either way (faster: the calibration ran in a slow
 * spell). A profile without a canary, or a canary that could not run:
 * ratio 0, held. */
typedef struct cal_canary {
    double us, ratio; /* us a call now; now / the profile's */
    int held;
} cal_canary_t;
void cal_canary_beside(const mrc_profile_t *prof, double budget_s,
                       cal_canary_t *k);

/* calibrate's guard: a new calibration pausing at most wait_s, and how
 * it went. */
void cal_steady_begin(double wait_s);
cal_guard_t cal_steady_report(void);
/* 1 when the last cal_measure fitted a peer's windows (threads) and the
 * fit stopped at a bound: the profile then has no window_gbps. */
int cal_windows_at_bound(void);
/* 1 when its fit of a node's copies with its own buffers past its core's
 * cache (shm, copy_gbps_shared) stopped at a bound: the profile then has
 * no such level. */
int cal_own_level_at_bound(void);
/* What the last cal_measure timed of the two ways with a send buffer
 * exposed by reference (shm at 2 ranks: direct1's allgather of 128 KiB
 * a rank, us a call): copied into its owner's area, and read through the
 * kernel; both 0 where it took the rates' rule instead. */
void cal_send_ref_us(double *copied, double *by_ref);
/* The lower bound of every rate's fit (GB/s), and how near a bound a fit
 * counts as stopped there, as a share of it (cal_fit_probes). */
#define CAL_RATE_FLOOR_GBPS 0.01
#define CAL_AT_BOUND        1e-3
/* The names of p's rates left at their fits' lower bound (CAL_RATE_FLOOR_GBPS,
 * calibrate_floor.c): up to max of them into names; returns how many
 * there are. */
int cal_rates_at_floor(const mrc_profile_t *p, const char **names, int max);
/* measure(ctx) bracketed by canaries, and run again while the host is
 * slower than its best (calibrate_steady.c): what it set is the last
 * run's. */
mrc_status_t cal_steady_run(mrc_status_t (*measure)(void *ctx), void *ctx);
/* cal_probe_once under cal_steady_run. */
mrc_status_t cal_probe_allreduce(const char *transport, int ranks,
                                 const cal_probe_t *pr, double *out);
/* The simulator's time (us) of the probe's call on ring:`ranks` under
 * profile p (an allreduce, an allgather of count a rank, or a broadcast
 * as a call in a run of CAL_RUN_CALLS). */
enum { CAL_RUN_CALLS = 8 };
mrc_status_t cal_sim_probe(const mrc_profile_t *p, int ranks,
                           const cal_probe_t *pr, double *us);

/* --check (calibrate_check.c): what the validation sweep runs and how
 * it reports. */
enum { CAL_CHECK_MAX_RUNS = 99 };
typedef struct cal_check {
    const char *transport; /* "threads" or "shm" */
    const char *profile;   /* the profile's file; NULL: measured just now */
    int nranks;            /* P, >= 2 */
    int runs;              /* timed loops a row is the median of */
    int quick, json;
    double wait_s; /* pauses for a slow host, in all (s) */
    /* What the rows call (allreduce by default); a row's bytes are a
     * node's vector, all blocks for reduce-scatter and allgather. */
    mrc_collective_t collective;
    /* A row's prediction: a call alone (1) or a call in a run of this
     * many (mrc_sim_config_t.calls), as the row's loop runs them. */
    int calls;
} cal_check_t;

/* The sweep against the profile's predictions, the table on stdout: on
 * threads in this process; on shm, P processes of this program started
 * as one job (cli_launch), each running cal_check_rank. A CLI status. */
int cal_check(const char *cmd, const mrc_profile_t *prof, const cal_check_t *o);
/* The shm sweep (calibrate_check_shm.c): the header, then the job. */
int cal_check_shm(const char *cmd, const mrc_profile_t *prof,
                  const cal_check_t *o);
/* One rank of the shm sweep, in a job cal_check started (its MRC_JOB):
 * rank 0 prints the rows and the summary after cal_check's header. */
int cal_check_rank(const char *cmd, const cal_check_t *o);

/* Shared by the two sweeps. The families swept, and the last size. */
extern const mrc_algo_t cal_check_families[4];
size_t cal_check_last_bytes(int quick);
/* Calls in one timed loop of a size: a few milliseconds at least
 * (--quick: an eighth of that). */
int cal_check_iters(size_t bytes, int quick);
/* One rank's share of a row of `count` float32 of collective `coll` on
 * c: two warm-up calls, then o->runs loops of iters calls; sync(ctx, st)
 * starts each loop with the other ranks (and returns the status to go
 * on with); t[r] gets loop r's time per call (s). canaries: the us a
 * call of a 4 KiB allreduce on `canary` (a rings communicator of the
 * same ranks, the same for every row of the sweep) before and after,
 * the slowest rank's (the same on every rank). */
mrc_status_t cal_check_loops(mrc_comm_t *c, mrc_comm_t *canary,
                             mrc_collective_t coll, size_t count, int iters,
                             int runs,
                             mrc_status_t (*sync)(void *, mrc_status_t),
                             void *ctx, double *t, double canaries[2]);
/* The simulator's time (us) for the program of c's last call, alone
 * (calls 1) or in a run of `calls`. */
mrc_status_t cal_check_predict(const mrc_comm_t *c, const mrc_profile_t *prof,
                               int calls, double *us);
/* The median of v[0..n) (reorders v). */
double cal_check_median(double *v, int n);

/* A row's measured side (us): the median of its runs, and the fastest
 * and slowest of them. */
typedef struct cal_meas {
    double median, fastest, slowest;
} cal_meas_t;
/* Of the runs' times v[0..n) in seconds (reorders v). */
cal_meas_t cal_check_meas(double *v, int n);

/* The table: rows counted within [lo, hi], and of the rows outside, those
 * that one of their own runs would have put within (`reach`): the runs'
 * spread is as wide as the miss, so the row tells noise, not a model
 * error. */
typedef struct cal_table {
    int json, rows, within, reach;
    double lo, hi;
} cal_table_t;
/* The bounds for P ranks under the profile (wider when ranks outnumber
 * the cores); no output. */
void cal_table_init(cal_table_t *t, const cal_check_t *o,
                    const mrc_profile_t *prof);
/* What was measured: transport, P, profile, host, load, runs; and this
 * host's copy rates beside the profile's, with a warning (cmd's, on
 * stderr) when they have moved. */
void cal_table_head(const char *cmd, const cal_table_t *t, const cal_check_t *o,
                    const mrc_profile_t *prof);
void cal_table_row(cal_table_t *t, mrc_algo_t family, size_t bytes,
                   cal_meas_t m, double pred);
/* The summary, and how often the host ran slow beside a row. */
void cal_table_end(const cal_table_t *t, const cal_guard_t *g);

/* Frees the buffers the single-node probes keep between them. */
void cal_release(void);

/* Tells plan->progress, if any, how far the probes got (0..1). */
void cal_tell(const cal_plan_t *plan, double done, const char *what);

/* Runs every probe of `plan` into *out (a whole profile). */
mrc_status_t cal_measure(const cal_plan_t *plan, mrc_profile_t *out);
/* The host's part: everything but sync_us and message_us. */
mrc_status_t cal_measure_host(const cal_plan_t *plan, mrc_profile_t *out);
/* sync_us, and message_us fitted so that the simulator times the
 * probe's call (cal_turns on `ranks` ranks) as measured: call_us. */
mrc_status_t cal_set_costs(mrc_profile_t *p, int ranks, double sync_us,
                           double call_us);

/* Fits through the simulator (calibrate_fit.c). A figure of the profile
 * a fit sets: the double at `at`, or what `set` makes of x (from the
 * profile the fit started with, base). */
typedef struct fit_knob {
    size_t at;
    void (*set)(mrc_profile_t *p, const mrc_profile_t *base, double x);
} fit_knob_t;
#define KNOB(field) (&(const fit_knob_t){offsetof(mrc_profile_t, field), NULL})
/* Sets x in [lo, hi] into p so that the simulator times n probes' calls
 * on `ranks` nodes as measured (us), as near as one figure can: one call
 * exactly, several with their misses balanced (the sum of the logarithms
 * of simulated over measured 0). *clamped: measurements no x in range
 * explains (x is then the bound). */
mrc_status_t cal_fit_probes(mrc_profile_t *p, const fit_knob_t *set, double lo,
                            double hi, int ranks, const cal_probe_t *pr,
                            const double *us, int n, int *clamped);
/* cal_fit_probes on one call; on a rings allreduce of `count` floats. */
mrc_status_t cal_fit_family(mrc_profile_t *p, const fit_knob_t *set, double lo,
                            double hi, int ranks, const cal_probe_t *pr,
                            double us, int *clamped);
mrc_status_t cal_fit_rings(mrc_profile_t *p, const fit_knob_t *set, double lo,
                           double hi, int ranks, size_t count, double us,
                           int *clamped);

/* A message's costs (calibrate_messages.c): the small calls they are
 * fitted to, a tree allreduce and broadcasts of this many bytes; the
 * broadcast loops the sender's cost is fitted to (the rings' and the
 * tree's); latency_us and message_us fitted to the tree's call (chain)
 * and the rings' (call_us), and on shm send_us to the loops
 * (cal_broadcast_loops' probes and their times, rings then tree; 0: not
 * measured). */
enum { CAL_FLAG_PROBE_BYTES = 4 << 10 };
void cal_broadcast_loops(const cal_plan_t *plan, cal_probe_t loops[2]);
mrc_status_t cal_fit_messages(const cal_plan_t *plan, mrc_profile_t *p,
                              int ranks, double sync_us, double call_us,
                              const cal_probe_t *chain, double chain_us,
                              const cal_probe_t loops[2],
                              const double loops_us[2]);

/* The message probe's communicator (ring:2, rings) and its loop: the
 * median us of a small allreduce of the same shape every call. */
extern const mrc_config_t cal_turn_config;
mrc_status_t cal_turns(mrc_comm_t *c, int trips, int reps, double *out);

/* --transport mpi under mpirun (calibrate_mpi.c, built with MPI): every
 * rank calls it; rank 0 measures the host while the others wait without
 * spinning, ranks 0 and 1 the MPI sync and message (every peer through
 * MPI, as between hosts). *rank0 is 1 on rank 0, which alone has the
 * profile. A CLI status, with the message printed. */
int cal_mpi(const char *cmd, cal_plan_t *plan, mrc_profile_t *out, int *rank0);

#endif /* MRC_CLI_CALIBRATE_H */
