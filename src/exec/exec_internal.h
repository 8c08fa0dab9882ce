/*
 * Inside the executor: what its files share (exec.h is its interface).
 *   prepare.c  the plan and everything a run needs, taken up front
 *   exec.c     a call: begin, the run loops' waiting, the timeout
 *   chains.c   the general loop: every chain advanced in turn
 *   memory_ops.c  memory-semantic ops, and the straight plans they make
 */
#ifndef MRC_EXEC_INTERNAL_H
#define MRC_EXEC_INTERNAL_H

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "exec.h"

/* A hint to the core that this thread spins on memory. */
static inline void mrc__exec_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static inline double mrc__exec_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The caller's buffer a program names (enum mrc__buffer). */
static inline char *mrc__exec_buffer(int which, const void *sendbuf,
                                     void *recvbuf, void *scratch)
{
    switch (which) {
    case MRC__BUF_SEND: return (char *)sendbuf;
    case MRC__BUF_RECV: return recvbuf;
    case MRC__BUF_SCRATCH: return scratch;
    default: return NULL;
    }
}

/* Op op's region of buffer `which` (its elements from off). */
#define MRC__EXEC_AT(x, which, off, sb, rb, xb)                                \
    (mrc__exec_buffer((which), (sb), (rb), (xb)) + (off) * (x)->elem)

/* Looks without progress a rank spins for before it yields the core: a
 * pass over the chains (the general loop), or one op (a straight plan,
 * whose look is a few dozen instructions). Long enough for a peer a few
 * hundred nanoseconds behind on another core, short enough that a peer
 * waiting for this core gets it soon: with two ranks on one core an
 * 8-byte call took 4.2 us spinning 64 looks of a straight plan, 2.9 us
 * with 32. A straight plan whose group has a core for each rank spins
 * MRC__SPIN_LOOKS_OWN: a peer that copies 512 B-4 KiB into its window
 * is later than 32 looks, and a yield then cost P = 2 4 KiB 1.55 us a
 * call against 1.45 (docs/performance.md). */
enum { MRC__SPIN_PASSES = 64, MRC__SPIN_LOOKS = 32, MRC__SPIN_LOOKS_OWN = 128 };

/* A call whose buffers are at most this many bytes fetches their lines as
 * it starts (exec.c, warm_buffers). P = 2, new buffers every call: 1-4
 * KiB reduce, broadcast, allgather and allreduce took 0.68-1.02 of their
 * time without (geometric means 0.76-0.97; docs/performance.md). */
enum { MRC__WARM_BYTES = 4096 };

/* Before a run ends, where x->agree (the callers test it, so that a run
 * without pays no call): the transport's agreement that every
 * peer of the group began this call alike, looked at until it comes, as
 * a wait is (spin, *idle, *start: mrc__exec_stalled's). */
mrc_status_t mrc__exec_agree(mrc__exec_t *x, const mrc__transport_t *t,
                             size_t spin, size_t *idle, double *start,
                             double timeout_s);

/* Nothing moved in this look: lets the other ranks run, and watches the
 * clock (MRC_ERR_TIMEOUT once timeout_s have passed without progress;
 * *idle and *start are the loop's, reset by it when something moves). */
mrc_status_t mrc__exec_stalled(mrc__exec_t *x, const mrc__transport_t *t,
                               size_t spin, size_t *idle, double *start,
                               double timeout_s);

/* At an op of `step`: hands the transport the port mask of a phase not
 * handed over yet (and traces it). */
void mrc__exec_hand_ports(mrc__exec_t *x, const mrc__transport_t *t, int step);

/* The general loop (chains.c): every chain advanced in turn until all
 * are complete and every send taken, after begin (and publish). */
mrc_status_t mrc__exec_run_chains(mrc__exec_t *x, const mrc__transport_t *t,
                                  const void *sb, void *rb, void *xb,
                                  double timeout_s);

/* Memory semantics (memory.c). A memory op: MRC_OK once done,
 * MRC_INPROGRESS while it waits. */
mrc_status_t mrc__exec_memory_op(mrc__exec_t *x, const mrc__transport_t *t,
                                 const mrc__op_t *op, mrc__xfer_t *xf,
                                 const void *sb, void *rb, void *xb);
/* A run of gets from op i into one destination, a tile at a time: the
 * ops it took (0: none, op i alone; -1: a wait of the run not yet
 * granted); a failure in *st. */
int mrc__exec_get_run(mrc__exec_t *x, const mrc__transport_t *t, int i, int end,
                      const void *sb, void *rb, void *xb, mrc_status_t *st);
/* Publishes a memory program's buffers (waiting, with the timeout, while
 * the transport refuses). */
mrc_status_t mrc__exec_publish(mrc__exec_t *x, const mrc__transport_t *t,
                               const void *sendbuf, void *recvbuf,
                               void *scratch, double timeout_s);
/* A straight plan, after begin and publish. */
mrc_status_t mrc__exec_run_straight(mrc__exec_t *x, const mrc__transport_t *t,
                                    const void *sb, void *rb, void *xb,
                                    double timeout_s);

#endif /* MRC_EXEC_INTERNAL_H */
