/* The drop-in library's reports: which path a call took and why
 * ($MRC_MPI_VERBOSE, once per call site and path), and failures, through
 * the communicator's error handler as MPI reports them. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmpi_internal.h"

enum { SITES = 256 };

/* The call sites said so far (their own lock: say runs on any thread). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void mrc__pmpi_report(const char *fn, const void *site, const char *path,
                      const char *why)
{
    static struct {
        const void *site;
        const char *fn, *why;
    } seen[SITES];
    static int num_seen;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < num_seen; i++)
        if (seen[i].site == site && seen[i].fn == fn && seen[i].why == why) {
            pthread_mutex_unlock(&lock);
            return;
        }
    if (num_seen < SITES) {
        seen[num_seen].site = site;
        seen[num_seen].fn = fn;
        seen[num_seen].why = why;
        num_seen++;
    }
    pthread_mutex_unlock(&lock);
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    Dl_info info;
    char where[256];
    if (dladdr(site, &info) && info.dli_sname)
        snprintf(
            where, sizeof where, "%s+0x%lx", info.dli_sname,
            (unsigned long)((const char *)site - (const char *)info.dli_saddr));
    else if (dladdr(site, &info) && info.dli_fname)
        snprintf(
            where, sizeof where, "%s+0x%lx", info.dli_fname,
            (unsigned long)((const char *)site - (const char *)info.dli_fbase));
    else
        snprintf(where, sizeof where, "%p", site);
    fprintf(stderr, "mrc_mpi: rank %d: %s from %s: %s (%s)\n", rank, fn, where,
            path, why);
}

/* A call failed in mrc (st; MRC_OK: around it, for `why`): says why, then
 * reports it as MPI does, through the communicator's error handler
 * (MPI_ERRORS_ARE_FATAL, the default, ends the job). A program that goes on
 * (MPI_ERRORS_RETURN, or a handler that returns) keeps a working communicator:
 * the calls after a failure that broke mrc's communicator go to MPI. */
int mrc__pmpi_failed(const char *fn, MPI_Comm comm, cached_t *c,
                     mrc_status_t st, const char *why)
{
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    fprintf(stderr, "mrc_mpi: %s on rank %d: %s\n", fn, rank,
            st == MRC_OK ? why : mrc_last_error());
    /* Any error from mrc's call: mrc may have poisoned its communicator
     * (it does after any error once the ranks have begun to talk). */
    if (st != MRC_OK && !c->dropped) {
        MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
        PMPI_Comm_get_errhandler(comm, &eh);
        int fatal = eh == MPI_ERRORS_ARE_FATAL;
        if (eh != MPI_ERRHANDLER_NULL)
            PMPI_Errhandler_free(&eh);
        if (!fatal) {
            c->dropped = 1;
            fprintf(stderr,
                    "mrc_mpi: rank %d: the later collectives on this "
                    "communicator go to MPI\n",
                    rank);
        }
    }
    PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
}

/* This rank cannot enter mrc for a call that the route sent there (no
 * memory for its packed copy, say), while its peers wait in mrc for it,
 * with no timeout unless the user set one: no error handler can leave the
 * ranks in step, so the job ends, saying why, as MPI does on a resource
 * failure. */
int mrc__pmpi_stranded(const char *fn, MPI_Comm comm, const char *why)
{
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    fprintf(stderr,
            "mrc_mpi: %s on rank %d: %s; the other ranks wait in mrc for "
            "this one, so the job ends\n",
            fn, rank, why);
    PMPI_Abort(comm, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
}
