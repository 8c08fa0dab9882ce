/*
 * The warm-up before a timed loop, one rule for mrc run, mrc-bench and
 * mrc calibrate: the counted calls (the first prepares the program), then
 * MRC__WARM_MORE at a time until MRC__WARM_S have passed since the counted
 * ones. Cores idle before a row start cold: an allreduce of 4 KiB on
 * ring:2 took 22-24 us a call over 300 calls after a sleep of half a
 * second, 1.0-1.2 after 3000 (docs/simulator.md, "A cold host is not a
 * slow one"); a few calls of a small vector do not warm them, and
 * calibrate's guard, which pauses while its canary is slow, took the
 * cold start for a slow spell and waited out its whole budget.
 *
 * Every rank must make the same calls, so whether to go on is agreed
 * before each batch: by a MAX allreduce on the communicator (every rank's
 * clock, mrc__warm_agree_comm), or by whatever the caller's ranks share
 * (mrc run's threads: node 0's clock between two barriers).
 */
#ifndef MRC_WARM_H
#define MRC_WARM_H

#include "mrc/comm.h"

#define MRC__WARM_S 0.02
enum { MRC__WARM_MORE = 10 };

/* One call of the collective being warmed. */
typedef mrc_status_t (*mrc__warm_call_fn)(void *ctx);
/* *more in: this rank's word (its clock says go on); out: the ranks'
 * agreement, the same on every rank. */
typedef mrc_status_t (*mrc__warm_agree_fn)(void *actx, int *more);

/* `calls` calls, then batches for MRC__WARM_S more as agreed; calls 0:
 * none at all. Stops at the first failure and returns it. */
mrc_status_t mrc__warm_up(int calls, mrc__warm_call_fn call, void *ctx,
                          mrc__warm_agree_fn agree, void *actx);

/* The agreement by a MAX allreduce of one word on the communicator actx
 * (an mrc_comm_t *): every rank of it warms up together. */
mrc_status_t mrc__warm_agree_comm(void *actx, int *more);

#endif /* MRC_WARM_H */
