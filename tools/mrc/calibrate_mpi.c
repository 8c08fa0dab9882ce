/*
 * `mrc calibrate --transport mpi` under mpirun (calibrate.h): rank 0
 * measures the host while the other ranks wait without taking a core;
 * then ranks 0 and 1 measure MPI's own round trip (0-byte messages) and
 * a message of mrc's MPI transport with every peer through MPI, as
 * between hosts ($MRC_MPI_HOSTS=2 on the pair), which is what the
 * selector's mpi model stands for.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calibrate.h"
#include "cli.h"
#include "common/common.h"
#include "mrc/mrc_mpi.h"

/* A barrier that sleeps while it waits: a spinning rank would take one
 * of the cores the probes on rank 0 are timing. */
static void idle_barrier(MPI_Comm comm)
{
    MPI_Request req;
    int done = 0;
    MPI_Ibarrier(comm, &req);
    const struct timespec nap = {0, 200000};
    while (!done) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (!done)
            nanosleep(&nap, NULL);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One way of a 0-byte MPI round trip between ranks 0 and 1 of `pair`
 * (us, the median over reps; rank 0's figure). */
static double mpi_sync_us(MPI_Comm pair, int rank, int trips, int reps)
{
    enum { MAX_REPS = 64 };
    double us[MAX_REPS];
    reps = reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;
    char b = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = MPI_Wtime();
        for (int i = 0; i < trips; i++) {
            if (rank == 0) {
                MPI_Send(&b, 0, MPI_CHAR, 1, 0, pair);
                MPI_Recv(&b, 0, MPI_CHAR, 1, 0, pair, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(&b, 0, MPI_CHAR, 0, 0, pair, MPI_STATUS_IGNORE);
                MPI_Send(&b, 0, MPI_CHAR, 0, 0, pair);
            }
        }
        us[r] = (MPI_Wtime() - t0) / (2.0 * trips) * 1e6;
    }
    qsort(us, (size_t)reps, sizeof *us, cmp_double);
    return us[reps / 2];
}

/* Ranks 0 and 1: the sync and the message of mrc over MPI. */
static mrc_status_t pair_probes(const cal_plan_t *plan, int rank, double *sync,
                                double *msg)
{
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    if (rank >= 2)
        return MRC_OK;
    *sync = mpi_sync_us(pair, rank, plan->trips / 4 + 1, plan->reps);
    /* Each rank its own host: every message through MPI. */
    setenv("MRC_MPI_HOSTS", "2", 1);
    mrc_comm_t *c = NULL;
    mrc_status_t st = mrc_comm_init_mpi(pair, &cal_turn_config, &c);
    if (st == MRC_OK)
        st = cal_turns(c, plan->trips / 10 + 1, plan->reps, msg);
    mrc_comm_destroy(c);
    MPI_Comm_free(&pair);
    return st;
}

/* Rank 0's status to every rank: 1 when every rank may go on. */
static int all_ok(mrc_status_t st, int rank, const char *cmd)
{
    int ok = st == MRC_OK;
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok && rank == 0)
        cli_fail(cmd, st);
    return ok;
}

int cal_mpi(const char *cmd, cal_plan_t *plan, mrc_profile_t *out, int *rank0)
{
    int inited = 0, rank = 0, size = 0;
    MPI_Initialized(&inited);
    if (!inited)
        MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    *rank0 = rank == 0;
    int rc = CLI_OK;
    if (size < 2) {
        rc = cli_usage(cmd, "calibrate",
                       "--transport mpi needs a job of at least 2 ranks "
                       "(mpirun -n 2)");
        goto done;
    }
    /* The job's ranks are the nodes that share this host's memory. */
    plan->ranks = size;
    plan->progress = rank == 0 ? plan->progress : NULL;
    mrc_status_t st = rank == 0 ? cal_measure_host(plan, out) : MRC_OK;
    idle_barrier(MPI_COMM_WORLD);
    if (!all_ok(st, rank, cmd)) {
        rc = CLI_FAIL;
        goto done;
    }
    double sync = 0, msg = 0;
    st = pair_probes(plan, rank, &sync, &msg);
    idle_barrier(MPI_COMM_WORLD);
    if (!all_ok(st, rank, cmd)) {
        rc = CLI_FAIL;
        goto done;
    }
    if (rank == 0 && (st = cal_set_costs(out, 2, sync, msg)) != MRC_OK) {
        cli_fail(cmd, st);
        rc = CLI_FAIL;
    }
done:
    MPI_Finalize();
    return rc;
}
