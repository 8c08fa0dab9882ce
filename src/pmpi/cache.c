/* The drop-in library's cache: one mrc communicator per MPI
 * communicator, made on its first call that mrc takes, kept as an
 * attribute, freed with it (or before MPI_Finalize); and each thread's
 * last route. */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmpi_internal.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int keyval = MPI_KEYVAL_INVALID;
static cached_t *all; /* every live entry, for MPI_Finalize */
int mrc__pmpi_verbose_flag = -1;

int mrc__pmpi_verbose_read(void)
{
    const char *v = getenv("MRC_MPI_VERBOSE");
    int on = v && *v && strcmp(v, "0") != 0;
    __atomic_store_n(&mrc__pmpi_verbose_flag, on, __ATOMIC_RELAXED);
    return on;
}

uint64_t mrc__pmpi_generation;
__thread __attribute__((tls_model("initial-exec")))
mrc__pmpi_route_t mrc__pmpi_last_route;

static void route_remember(MPI_Comm comm, cached_t *c)
{
    mrc__pmpi_last_route.comm = comm;
    mrc__pmpi_last_route.entry = c;
    mrc__pmpi_last_route.generation =
        __atomic_load_n(&mrc__pmpi_generation, __ATOMIC_ACQUIRE);
}

static int delete_entry(MPI_Comm comm, int key, void *value, void *extra)
{
    (void)comm;
    (void)key;
    (void)extra;
    cached_t *c = value;
    __atomic_add_fetch(&mrc__pmpi_generation, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_lock(&lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        all = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&lock);
    mrc_comm_destroy(c->comm);
    free(c);
    return MPI_SUCCESS;
}

static int key(void)
{
    pthread_mutex_lock(&lock);
    if (keyval == MPI_KEYVAL_INVALID)
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_entry, &keyval,
                                NULL);
    int k = keyval;
    pthread_mutex_unlock(&lock);
    return k;
}

/* The drop-in's timeout: none unless $MRC_TIMEOUT sets one. MPI waits as
 * long as a collective takes (a root may come late and be correct), so a
 * default would kill correct programs; a dead peer is still seen and
 * reported without one. */
static double drop_in_timeout(void)
{
    const char *v = getenv("MRC_TIMEOUT");
    if (!v || !*v)
        return INFINITY;
    char *end;
    double t = strtod(v, &end);
    if (*end || !(t > 0)) {
        static int warned;
        if (!warned++)
            fprintf(stderr,
                    "mrc_mpi: MRC_TIMEOUT=%s is not a number of seconds "
                    "above 0: no timeout\n",
                    v);
        return INFINITY;
    }
    return t;
}

cached_t *mrc__pmpi_entry_of(MPI_Comm comm, const char **why)
{
    cached_t *hit = mrc__pmpi_route_hit(comm);
    if (hit && !hit->dropped)
        return hit; /* (only entries with an mrc communicator are kept) */
    int inter = 0, size = 0, found = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) {
        *why = "an inter-communicator";
        return NULL;
    }
    PMPI_Comm_size(comm, &size);
    if (size < 2) {
        *why = "a communicator of one rank";
        return NULL;
    }
    cached_t *c = NULL;
    int k = key();
    PMPI_Comm_get_attr(comm, k, &c, &found);
    if (!found) {
        c = calloc(1, sizeof *c);
        if (!c) {
            *why = "out of memory";
            return NULL;
        }
        c->of = comm;
        c->size = size;
        /* MPI's collectives complete locally: a rank returns once its
         * buffers may be reused ($MRC_COMPLETION=group to wait as mrc's
         * own API does). */
        mrc_config_t cfg = {.timeout_s = drop_in_timeout(),
                            .completion =
                                getenv("MRC_COMPLETION") ? NULL : "local"};
        int rank = 0;
        PMPI_Comm_rank(comm, &rank);
        c->rank = rank;
        if (mrc_comm_init_mpi(comm, &cfg, &c->comm) != MRC_OK) {
            if (rank == 0)
                fprintf(stderr,
                        "mrc_mpi: this communicator stays with MPI: %s\n",
                        mrc_last_error());
            c->comm = NULL;
        } else if (rank == 0 && mrc__pmpi_verbose()) {
            if (isinf(cfg.timeout_s))
                fprintf(stderr,
                        "mrc_mpi: a communicator of %d ranks: no timeout "
                        "($MRC_TIMEOUT unset), as in MPI\n",
                        size);
            else
                fprintf(stderr,
                        "mrc_mpi: a communicator of %d ranks: timeout %g s "
                        "($MRC_TIMEOUT)\n",
                        size, cfg.timeout_s);
        }
        pthread_mutex_lock(&lock);
        c->next = all;
        if (all)
            all->prev = c;
        all = c;
        pthread_mutex_unlock(&lock);
        PMPI_Comm_set_attr(comm, k, c);
    }
    if (!c->comm) {
        *why = "mrc could not be set up on this communicator";
        return NULL;
    }
    if (c->dropped) {
        *why = "an earlier call failed in mrc on this communicator";
        return NULL;
    }
    route_remember(comm, c);
    return c;
}

void mrc__pmpi_forget_all(void)
{
    for (;;) {
        pthread_mutex_lock(&lock);
        cached_t *c = all;
        pthread_mutex_unlock(&lock);
        if (!c)
            break;
        MPI_Comm comm = c->of;
        if (PMPI_Comm_delete_attr(comm, keyval) != MPI_SUCCESS)
            delete_entry(comm, keyval, c, NULL); /* should not happen */
    }
    if (keyval != MPI_KEYVAL_INVALID)
        PMPI_Comm_free_keyval(&keyval);
}
