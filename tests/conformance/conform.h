/*
 * The transport conformance suite: one body of cases, written once
 * against mrc__transport_t, run unchanged by every rank of every
 * transport. A harness (threads, shm, MPI) gives each rank its transport
 * and calls the same case function on every rank.
 *
 * A case drives the transport the way the executor does: posts that may
 * be refused for now are posted again, and completion is polled (test,
 * wait) with a timeout; nothing blocks inside the transport.
 */
#ifndef MRC_CONFORM_H
#define MRC_CONFORM_H

#include <stdint.h>

#include "transport/transport.h"

/* What a case returns. */
enum conform_result { CONFORM_PASS, CONFORM_FAIL, CONFORM_SKIP };

/* One rank's view of the transport under test. seq numbers the calls on
 * this transport (the cases advance it, the same on every rank);
 * why/why_size receive the reason of a failure or skip. */
typedef struct conform {
    mrc__transport_t t;
    int rank, n;
    uint64_t seq;
    /* The transport cannot tell the peers of a cancel (the harness knows
     * why: a known gap, said in skip_cancel). */
    const char *skip_cancel;
    char why[512];
} conform_t;

typedef struct conform_case {
    const char *name;
    int min_ranks;
    /* The case leaves the transport failed (harnesses that cannot make a
     * fresh transport run it on its own, last). */
    int poisons;
    enum conform_result (*run)(conform_t *c);
} conform_case_t;

extern const conform_case_t conform_cases[];
extern const int conform_num_cases;

/* The case called name, or NULL. */
const conform_case_t *conform_find(const char *name);

/* Runs one case on this rank and prints "rank R: NAME: ok" (or FAIL:
 * why, or skip: why) on stdout; returns the result. */
enum conform_result conform_run(conform_t *c, const conform_case_t *k);

#endif /* MRC_CONFORM_H */
