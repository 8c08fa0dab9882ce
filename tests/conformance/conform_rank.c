/*
 * One rank of the conformance cases over shared memory or MPI:
 *
 *   conform_rank shm CASE...        started by `mrc launch -n P`: attaches
 *                                   with $MRC_JOB and $MRC_JOB_TOKEN
 *   conform_rank mpi-p2p CASE...    under mpirun: every peer over MPI
 *                                   point-to-point
 *   conform_rank mpi-host CASE...   under mpirun: every peer through the
 *                                   MPI transport's shared-memory endpoint
 *
 * Runs the cases in order on one transport (a case that leaves it failed
 * goes last, or in a run of its own) and prints a line per case; exits 0
 * only when none failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "conform.h"
#ifdef MRC_CONFORM_MPI
#include "transport/mpi/mpi_transport.h"
#endif

static mrc_status_t env_int(const char *name, int *out)
{
    const char *v = getenv(name);
    char *end;
    long x = v ? strtol(v, &end, 10) : -1;
    if (!v || *end || x < 0 || x > 4096)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "$%s is not set (start under 'mrc launch')", name);
    *out = (int)x;
    return MRC_OK;
}

static int run_cases(conform_t *c, int argc, char **argv)
{
    int failed = 0;
    for (int a = 2; a < argc; a++) {
        const conform_case_t *k = conform_find(argv[a]);
        if (!k) {
            printf("rank %d: no case '%s'\n", c->rank, argv[a]);
            failed++;
            continue;
        }
        failed += conform_run(c, k) == CONFORM_FAIL;
    }
    return failed != 0;
}

static int shm_main(int argc, char **argv)
{
    conform_t c = {0};
    mrc__shm_endpoint_t *e = NULL;
    mrc_status_t st = env_int("MRC_NRANKS", &c.n);
    if (st == MRC_OK)
        st = env_int("MRC_RANK", &c.rank);
    const char *job = getenv("MRC_JOB"), *token = getenv("MRC_JOB_TOKEN");
    if (st == MRC_OK && !job)
        st = mrc__error(MRC_ERR_INVALID_ARG, "$MRC_JOB is not set");
    if (st == MRC_OK)
        st = mrc__shm_attach(c.n, c.rank, job, token && *token ? token : NULL,
                             30.0, &e);
    if (st != MRC_OK) {
        fprintf(stderr, "conform_rank: %s\n", mrc_last_error());
        return 2;
    }
    c.t = mrc__shm_transport(e);
    int rc = run_cases(&c, argc, argv);
    mrc__shm_detach(e);
    return rc;
}

#ifdef MRC_CONFORM_MPI
/* The MPI transport as mrc_comm_init_mpi builds it, with every peer on
 * one side: over MPI (p2p), or all on this host through shared memory. */
static int mpi_main(int argc, char **argv, int host)
{
    int provided, n, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int *local_of = malloc((size_t)n * sizeof *local_of);
    char job[40] = "";
    mrc__shm_endpoint_t *shm = NULL;
    mrc__mpi_endpoint_t *e = NULL;
    mrc_status_t st = local_of ? MRC_OK : MRC_ERR_NO_MEMORY;
    if (st == MRC_OK && host && rank == 0 &&
        mrc__random_job_id(job, sizeof job) != 0)
        st = mrc__error(MRC_ERR_TRANSPORT, "no random job id");
    MPI_Bcast(job, sizeof job, MPI_CHAR, 0, MPI_COMM_WORLD);
    for (int r = 0; local_of && r < n; r++)
        local_of[r] = host ? r : -1;
    if (st == MRC_OK && host)
        st = mrc__shm_attach(n, rank, job, NULL, 30.0, &shm);
    MPI_Comm priv;
    MPI_Comm_dup(MPI_COMM_WORLD, &priv);
    if (st == MRC_OK)
        st = mrc__mpi_endpoint_create(priv, local_of, shm, &e);
    free(local_of);
    if (st != MRC_OK) {
        fprintf(stderr, "conform_rank: %s\n", mrc_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    conform_t c = {0};
    c.t = mrc__mpi_transport(e);
    c.rank = rank;
    c.n = n;
    /* A known gap of the MPI transport: a cancel reaches only the peers
     * on its host (shm); remote peers wait out their timeout.
     * CONFORM_STRICT=1 runs the case anyway (to see the gap close). */
    const char *strict = getenv("CONFORM_STRICT");
    if (!host && !(strict && strcmp(strict, "1") == 0))
        c.skip_cancel = "mpi between hosts: cancel does not tell remote "
                        "peers (known gap of the MPI transport)";
    int rc = run_cases(&c, argc, argv);
    /* Ranks leave together: a failed case may leave messages in flight. */
    MPI_Barrier(MPI_COMM_WORLD);
    mrc__mpi_endpoint_destroy(e);
    MPI_Finalize();
    return rc;
}
#endif

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && strcmp(argv[1], "shm") == 0)
        return shm_main(argc, argv);
#ifdef MRC_CONFORM_MPI
    if (argc >= 2 && strcmp(argv[1], "mpi-p2p") == 0)
        return mpi_main(argc, argv, 0);
    if (argc >= 2 && strcmp(argv[1], "mpi-host") == 0)
        return mpi_main(argc, argv, 1);
#endif
    fprintf(stderr, "usage: conform_rank shm|mpi-p2p|mpi-host CASE...\n");
    return 2;
}
