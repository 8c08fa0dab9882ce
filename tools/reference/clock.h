/*
 * The tools' and benchmarks' clock: seconds on CLOCK_MONOTONIC, for
 * timed loops and warm-ups (one definition for mrc's commands, mrc-bench
 * and the warm-up, which had each written it again).
 */
#ifndef MRC_CLOCK_H
#define MRC_CLOCK_H

#include <time.h>

static inline double mrc__ref_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif /* MRC_CLOCK_H */
