/*
 * The MPI transport: ranks of an MPI communicator. Peers on this host go
 * through the shared-memory transport; peers on other hosts through MPI
 * point-to-point on a communicator private to mrc. Built when MPI is
 * found; every MPI call it makes is a PMPI_ one, so that the drop-in
 * library (which defines the MPI_ collectives) never calls itself.
 */
#ifndef MRC_MPI_TRANSPORT_H
#define MRC_MPI_TRANSPORT_H

#include <mpi.h>

#include "transport/transport.h"

typedef struct mrc__mpi_endpoint mrc__mpi_endpoint_t;

/* An endpoint for rank `rank` of `comm` (which it takes over and frees).
 * local_of[r] is rank r's index in `shm` when r is on this host and goes
 * through shared memory, else -1; shm (taken over too) may be NULL when
 * no peer does. */
mrc_status_t mrc__mpi_endpoint_create(MPI_Comm comm, const int *local_of,
                                      mrc__shm_endpoint_t *shm,
                                      mrc__mpi_endpoint_t **out);
void mrc__mpi_endpoint_destroy(mrc__mpi_endpoint_t *e);
/* The transport over e. With host_memory (the ranks are on hosts in
 * equal blocks), ranks on several hosts also get the memory semantics
 * between the ranks of each host, through its segment. */
mrc__transport_t mrc__mpi_transport(mrc__mpi_endpoint_t *e, int host_memory);

#endif /* MRC_MPI_TRANSPORT_H */
