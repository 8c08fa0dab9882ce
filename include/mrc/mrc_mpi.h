/*
 * mrc over MPI: a communicator for the ranks of an MPI communicator.
 * Ranks on the same host talk through shared memory, ranks on different
 * hosts through MPI point-to-point messages (on a communicator of mrc's
 * own, so that the caller's traffic is never mixed with mrc's).
 *
 *   MPI_Init(&argc, &argv);
 *   mrc_comm_t *comm;
 *   mrc_comm_init_mpi(MPI_COMM_WORLD, NULL, &comm);    (collective)
 *   mrc_allreduce(send, recv, count, MRC_FLOAT32, MRC_SUM, comm);
 *   mrc_comm_destroy(comm);                            (before MPI_Finalize)
 *
 * Present when the library was built with MPI (MRC_HAVE_MPI in
 * mrc/version.h). Rank r of `comm` is node r of the topology (default
 * ring:N). For tests, $MRC_MPI_HOSTS=K takes the ranks to be on K hosts
 * in blocks (K = N: every peer goes through MPI).
 */
#ifndef MRC_MRC_MPI_H
#define MRC_MRC_MPI_H

#include <mpi.h>

#include "mrc/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over `comm` (an intra-communicator): every rank calls it,
 * and every rank gets MRC_OK or every rank an error. Call collectives
 * through *out from one thread at a time; MPI must allow that thread to
 * make MPI calls. */
MRC_EXTERN mrc_status_t mrc_comm_init_mpi(MPI_Comm comm,
                                          const mrc_config_t *cfg,
                                          mrc_comm_t **out);

#ifdef __cplusplus
}
#endif

#endif /* MRC_MRC_MPI_H */
