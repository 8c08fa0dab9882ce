/*
 * What another transport's set-up (MPI) needs to make a communicator:
 * the shared part (topology, rings, program cache) for nranks ranks, and
 * the communicator of one rank over a given transport.
 */
#ifndef MRC_COMM_INTERNAL_H
#define MRC_COMM_INTERNAL_H

#include "mrc/comm.h"
#include "mrc/program.h"
#include "mrc/sim.h"
#include "transport/transport.h"

typedef struct mrc__shared shared_t;

/* The shared part from cfg (NULL: defaults) and the call timeout. */
mrc_status_t mrc__comm_shared(int nranks, const mrc_config_t *cfg,
                              shared_t **out, double *timeout);
/* The communicator of `rank` over t. Takes over the caller's reference
 * on s and `owner` (freed with owner_free when the last communicator
 * goes, or now if this fails). */
mrc_status_t mrc__comm_attach(shared_t *s, int rank, mrc__transport_t t,
                              void *owner, void (*owner_free)(void *),
                              double timeout, mrc_comm_t **out);
void mrc__comm_shared_release(shared_t *s);
/* The ranks are on `hosts` hosts in equal blocks of consecutive ranks
 * (the hier family's input; 1: one host, or not in such blocks). */
void mrc__comm_shared_hosts(shared_t *s, int hosts);
/* Whether s's ranks read a send buffer by reference when it is the last
 * call's (its profile's send_by_ref; 1 without a profile): the
 * shared-memory endpoint's setting (mrc__shm_set_send_by_ref). */
int mrc__comm_shared_sends_by_ref(const shared_t *s);
/* Sets c's shared-memory endpoint's way with send buffers exposed by
 * reference, whatever its profile says (calibrate times both ways); none
 * when c has no such endpoint of its own (threads, MPI). */
void mrc__comm_set_send_by_ref(mrc_comm_t *c, int on);

/* nranks communicators over threads (as mrc_comm_init_all) that run
 * one given program, a loaded image's: every call must be the call it
 * was compiled for (another fails with MRC_ERR_UNSUPPORTED and both
 * shapes), and the groups and ranks are the program's. Takes over topo
 * and p (freed with the last communicator, or now if this fails);
 * timeout_s 0: $MRC_TIMEOUT, else 60. */
mrc_status_t mrc__comm_init_program(mrc_comm_t **comms, int nranks,
                                    mrc_topo_t *topo, mrc_program_t *p,
                                    double timeout_s);

/* The simulator's time for the program of c's last call (the very
 * program it ran: its family, groups and chunking), on the
 * communicators' topology under cfg (a profile for the node model);
 * MRC_ERR_INVALID_ARG if c has run no call yet. Call it between calls. */
mrc_status_t mrc__comm_predict(const mrc_comm_t *c, const mrc_sim_config_t *cfg,
                               mrc_sim_result_t **out);

#endif /* MRC_COMM_INTERNAL_H */
