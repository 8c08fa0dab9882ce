/*
 * mrc_comm_init_mpi: a communicator for the ranks of an MPI communicator.
 *
 * The ranks find which of them share a host (MPI_Comm_split_type), the
 * first of each host draws a job id for that host's shared memory and
 * tells the others, and every rank builds the same topology and rings.
 * Then all ranks agree that every one of them succeeded, so that no rank
 * goes on with a communicator that a peer does not have.
 *
 * Only PMPI_ calls: the drop-in library defines the MPI_ collectives.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/comm_internal.h"
#include "common/common.h"
#include "mrc/mrc_mpi.h"
#include "transport/mpi/mpi_transport.h"

/* $MRC_MPI_HOSTS=K (for tests): ranks are taken to be on K hosts in
 * blocks (rank r on host r * K / N),
 * so that a job on one machine exercises MPI between hosts. 0: unset. */
static int pretend_hosts(int n)
{
    const char *v = getenv("MRC_MPI_HOSTS");
    long k;
    if (!v || mrc__parse_long(v, 1, n, &k) != 0)
        return 0;
    return (int)k;
}

/* This rank's part: the host's shared memory and the endpoint. */
/* The hosts, when the ranks are on them in equal blocks of consecutive
 * ranks (rank r on the host of rank r / L * L); else 1. */
static int hosts_in_blocks(const int *leader_of, int n)
{
    int hosts = 0;
    for (int r = 0; r < n; r++)
        hosts += leader_of[r] == r;
    if (hosts <= 1 || n % hosts != 0)
        return 1;
    int l = n / hosts;
    for (int r = 0; r < n; r++)
        if (leader_of[r] != r / l * l)
            return 1;
    return hosts;
}

static mrc_status_t setup_rank(MPI_Comm comm, int n, int rank,
                               mrc__mpi_endpoint_t **out, double timeout,
                               int send_by_ref, int *hosts)
{
    *out = NULL;
    *hosts = 1;
    MPI_Comm host = MPI_COMM_NULL, priv = MPI_COMM_NULL;
    int *local_of = malloc((size_t)n * sizeof *local_of);
    int *leader_of = malloc((size_t)n * sizeof *leader_of);
    int nlocal = 1, lrank = 0, leader = rank;
    mrc_status_t st = MRC_OK;
    /* Every step below is collective: all ranks take them, or none. */
    int have = local_of && leader_of, all_have = 0;
    PMPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, comm);
    if (!all_have) {
        free(local_of);
        free(leader_of);
        return mrc__error(MRC_ERR_NO_MEMORY,
                          "rank %d: %s out of memory for %d ranks", rank,
                          have ? "a rank is" : "this rank is", n);
    }
    /* Who shares this host, and which of them is first. */
    {
        int k = pretend_hosts(n);
        if (k > 0)
            PMPI_Comm_split(comm, (int)((long)rank * k / n), rank, &host);
        else
            PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank,
                                 MPI_INFO_NULL, &host);
        PMPI_Comm_size(host, &nlocal);
        PMPI_Comm_rank(host, &lrank);
        PMPI_Allreduce(&rank, &leader, 1, MPI_INT, MPI_MIN, host);
    }
    /* Every rank learns every rank's host (by its leader). */
    PMPI_Allgather(&leader, 1, MPI_INT, leader_of, 1, MPI_INT, comm);
    *hosts = hosts_in_blocks(leader_of, n);
    char job[40] = "";
    if (st == MRC_OK && lrank == 0 && nlocal > 1)
        st = mrc__random_job_id(job, sizeof job) == 0
                 ? MRC_OK
                 : mrc__error(MRC_ERR_TRANSPORT,
                              "rank %d: no random bytes for the job id: %s",
                              rank, strerror(errno));
    if (host != MPI_COMM_NULL)
        PMPI_Bcast(job, sizeof job, MPI_CHAR, 0, host);
    PMPI_Comm_dup(comm, &priv);
    mrc__shm_endpoint_t *shm = NULL;
    if (st == MRC_OK && nlocal > 1 && !job[0])
        st = mrc__error(MRC_ERR_TRANSPORT,
                        "rank %d: this host's first rank could not set up "
                        "shared memory",
                        rank);
    if (st == MRC_OK) {
        int k = 0;
        for (int r = 0; r < n; r++)
            local_of[r] = nlocal > 1 && leader_of[r] == leader ? k++ : -1;
        if (nlocal > 1)
            st = mrc__shm_attach(nlocal, lrank, job, NULL, timeout, &shm);
        if (st == MRC_OK && shm)
            mrc__shm_set_send_by_ref(shm, send_by_ref);
    }
    if (host != MPI_COMM_NULL)
        PMPI_Comm_free(&host);
    if (st == MRC_OK)
        st = mrc__mpi_endpoint_create(priv, local_of, shm, out);
    else if (priv != MPI_COMM_NULL)
        PMPI_Comm_free(&priv);
    free(local_of);
    free(leader_of);
    return st;
}

static void endpoint_free(void *e)
{
    mrc__mpi_endpoint_destroy(e);
}

mrc_status_t mrc_comm_init_mpi(MPI_Comm comm, const mrc_config_t *cfg,
                               mrc_comm_t **out)
{
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_comm_init_mpi: out is NULL");
    *out = NULL;
    int initialized = 0, finalized = 0, inter = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (!initialized || finalized)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_comm_init_mpi: MPI is %s",
                          finalized ? "finalized" : "not initialized");
    if (comm == MPI_COMM_NULL)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_comm_init_mpi: comm is MPI_COMM_NULL");
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        return mrc__error(MRC_ERR_UNSUPPORTED,
                          "mrc_comm_init_mpi: comm is an inter-communicator");
    int n, rank;
    PMPI_Comm_size(comm, &n);
    PMPI_Comm_rank(comm, &rank);
    shared_t *s = NULL;
    double timeout = 60;
    mrc_status_t st = mrc__comm_shared(n, cfg, &s, &timeout);
    char why[256] = "";
    if (st != MRC_OK)
        snprintf(why, sizeof why, "%s", mrc_last_error());
    mrc__mpi_endpoint_t *e = NULL;
    /* Collective whatever happened above (an error there is the same on
     * every rank, but the host's ranks must still meet). */
    /* Set-up waits are bounded even when calls are not (the drop-in
     * library's calls have no timeout, as in MPI): a host leader that
     * could not make the segment must not leave its peers waiting for it
     * for ever, and then every rank stays with MPI. */
    int hosts = 1;
    mrc_status_t est =
        setup_rank(comm, n, rank, &e, isfinite(timeout) ? timeout : 60,
                   mrc__comm_shared_sends_by_ref(s), &hosts);
    if (st == MRC_OK && est != MRC_OK) {
        st = est;
        snprintf(why, sizeof why, "%s", mrc_last_error());
    }
    /* Everyone or no one: the first rank that failed says why. */
    int failed = st != MRC_OK ? rank : n, first = n;
    PMPI_Allreduce(&failed, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first < n) {
        int code = (int)st;
        PMPI_Bcast(&code, 1, MPI_INT, first, comm);
        PMPI_Bcast(why, sizeof why, MPI_CHAR, first, comm);
        mrc__mpi_endpoint_destroy(e);
        mrc__comm_shared_release(s);
        return mrc__error((mrc_status_t)code,
                          "mrc_comm_init_mpi (rank %d): rank %d failed: %s",
                          rank, first, why);
    }
    /* Hosts of one rank each have no segment: no memory semantics, and
     * hier does not apply (the rings and the tree do the same). */
    mrc__comm_shared_hosts(s, hosts);
    return mrc__comm_attach(s, rank, mrc__mpi_transport(e, hosts > 1), e,
                            endpoint_free, timeout, out);
}
