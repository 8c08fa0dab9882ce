/*
 * libmrc_mpi.so: the drop-in MPI library. Loaded before MPI (LD_PRELOAD,
 * or linked ahead of it), it defines MPI_Allreduce, MPI_Reduce_scatter_block,
 * MPI_Reduce_scatter, MPI_Allgather, MPI_Bcast and MPI_Reduce (and their
 * MPI-4 _c forms where the MPI headers have them). A call that mrc can
 * do goes to an mrc communicator made for the MPI communicator on its
 * first such call (collective, like the call) and cached on it as an
 * attribute; anything else goes to the PMPI_ call unchanged:
 *
 *   mrc:  intra-communicators of 2 or more ranks; for MPI_Bcast and
 *         MPI_Allgather, contiguous data of any predefined type (or of
 *         contiguous types built of one: how MPI-3 programs move more
 *         than 2^31 elements); for the reductions, a predefined integer or
 *         float type of 8 to 64 bits with MPI_SUM, MPI_PROD, MPI_MIN or
 *         MPI_MAX;
 *   MPI:  user-defined ops and the other predefined ones (MPI_BAND,
 *         MPI_MAXLOC, ...), derived types in reductions (Open MPI refuses
 *         predefined ops on them), other types (vectors, structs, pairs,
 *         16-bit, long double, complex), inter-communicators, one-rank
 *         communicators, MPI_Reduce_scatter with unequal counts, an
 *         MPI_Allgather whose send and receive blocks differ.
 *
 * The decision rests only on arguments that MPI requires to agree on
 * every rank, so all ranks take the same path. $MRC_MPI_VERBOSE=1 prints
 * (on stderr, once per call site and path) which path a call took and
 * why. An mrc failure (a timeout, a lost peer) is reported through the
 * communicator's error handler as MPI_ERR_OTHER, after its message.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrc/mrc.h"
#include "mrc/mrc_mpi.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- the cache: one mrc communicator per MPI communicator -------------- */

typedef struct cached {
    struct cached *next, *prev;
    MPI_Comm of;
    mrc_comm_t *comm; /* NULL: mrc could not be set up; MPI does it all */
} cached_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int keyval = MPI_KEYVAL_INVALID;
static cached_t *all; /* every live entry, for MPI_Finalize */
static int verbose = -1;

static int delete_entry(MPI_Comm comm, int key, void *value, void *extra)
{
    (void)comm;
    (void)key;
    (void)extra;
    cached_t *c = value;
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

/* The mrc communicator of comm, made on first use (collective: every
 * rank of comm gets here in the same call). NULL: MPI does the call; *why
 * says why. */
static mrc_comm_t *comm_of(MPI_Comm comm, const char **why)
{
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
        if (mrc_comm_init_mpi(comm, NULL, &c->comm) != MRC_OK) {
            int rank = 0;
            PMPI_Comm_rank(comm, &rank);
            if (rank == 0)
                fprintf(stderr,
                        "mrc_mpi: this communicator stays with MPI: %s\n",
                        mrc_last_error());
            c->comm = NULL;
        }
        pthread_mutex_lock(&lock);
        c->next = all;
        if (all)
            all->prev = c;
        all = c;
        pthread_mutex_unlock(&lock);
        PMPI_Comm_set_attr(comm, k, c);
    }
    if (!c->comm)
        *why = "mrc could not be set up on this communicator";
    return c->comm;
}

/* ---- what mrc can take ------------------------------------------------- */

/* A predefined type's mrc dtype for reductions; -1 if none. */
static int reducible(MPI_Datatype t)
{
    if (t == MPI_FLOAT)
        return MRC_FLOAT32;
    if (t == MPI_DOUBLE)
        return MRC_FLOAT64;
    if (t == MPI_INT || t == MPI_INT32_T)
        return sizeof(int) == 4 || t == MPI_INT32_T ? MRC_INT32 : -1;
    if (t == MPI_UNSIGNED || t == MPI_UINT32_T)
        return sizeof(unsigned) == 4 || t == MPI_UINT32_T ? MRC_UINT32 : -1;
    if (t == MPI_INT64_T || t == MPI_LONG_LONG)
        return MRC_INT64;
    if (t == MPI_UINT64_T || t == MPI_UNSIGNED_LONG_LONG)
        return MRC_UINT64;
    if (t == MPI_LONG)
        return sizeof(long) == 8 ? MRC_INT64 : MRC_INT32;
    if (t == MPI_UNSIGNED_LONG)
        return sizeof(long) == 8 ? MRC_UINT64 : MRC_UINT32;
    if (t == MPI_INT8_T || t == MPI_SIGNED_CHAR)
        return MRC_INT8;
    if (t == MPI_UINT8_T || t == MPI_UNSIGNED_CHAR)
        return MRC_UINT8;
    return -1;
}

/* What a datatype is made of: a predefined type `base` repeated `*mult`
 * times with no gaps (contiguous and dup types of one, to any depth). 0
 * if it is anything else. */
static int flatten(MPI_Datatype t, MPI_Datatype *base, size_t *mult)
{
    *mult = 1;
    MPI_Datatype cur = t;
    int owned = 0, ok = 0; /* owned: cur came from get_contents */
    for (int depth = 0; depth < 16; depth++) {
        int ni, na, nd, combiner;
        if (PMPI_Type_get_envelope(cur, &ni, &na, &nd, &combiner) !=
            MPI_SUCCESS)
            break;
        if (combiner == MPI_COMBINER_NAMED) {
            MPI_Aint lb, extent;
            int size;
            PMPI_Type_get_true_extent(cur, &lb, &extent);
            PMPI_Type_size(cur, &size);
            *base = cur;
            ok = lb == 0 && extent == size && size > 0;
            break;
        }
        if ((combiner != MPI_COMBINER_CONTIGUOUS &&
             combiner != MPI_COMBINER_DUP) ||
            ni > 1 || na != 0 || nd != 1)
            break;
        int count = 1;
        MPI_Aint unused;
        MPI_Datatype inner;
        PMPI_Type_get_contents(cur, ni, na, nd, &count, &unused, &inner);
        if (owned)
            PMPI_Type_free(&cur);
        cur = inner;
        int ci, ca, cd, cc;
        PMPI_Type_get_envelope(cur, &ci, &ca, &cd, &cc);
        owned = cc != MPI_COMBINER_NAMED;
        if (count < 0)
            break;
        *mult *= (size_t)count;
    }
    if (owned)
        PMPI_Type_free(&cur);
    return ok;
}

/* Data to move (no reduction): its bytes, or 0 with *why. */
static int movable(MPI_Datatype t, size_t count, size_t *bytes,
                   const char **why)
{
    MPI_Datatype base;
    size_t mult;
    if (!flatten(t, &base, &mult)) {
        *why = "a datatype that is not contiguous data of a predefined type";
        return 0;
    }
    int size;
    PMPI_Type_size(base, &size);
    *bytes = count * mult * (size_t)size;
    return 1;
}

/* Data to reduce: its mrc dtype and element count, or 0 with *why. */
static int reducible_data(MPI_Datatype t, size_t count, MPI_Op op,
                          mrc_dtype_t *dtype, mrc_op_t *mop, size_t *elems,
                          const char **why)
{
    if (op == MPI_SUM)
        *mop = MRC_SUM;
    else if (op == MPI_PROD)
        *mop = MRC_PROD;
    else if (op == MPI_MIN)
        *mop = MRC_MIN;
    else if (op == MPI_MAX)
        *mop = MRC_MAX;
    else {
        *why = "an operator other than MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX";
        return 0;
    }
    /* Predefined types only: MPI refuses MPI_SUM and the like on derived
     * ones, and so must we. */
    int d = reducible(t);
    if (d < 0) {
        *why = "a datatype that is not a predefined 8- to 64-bit integer, "
               "float or double";
        return 0;
    }
    *dtype = (mrc_dtype_t)d;
    *elems = count;
    return 1;
}

/* ---- saying which path a call took ------------------------------------- */

enum { SITES = 256 };

static void say(const char *fn, const void *site, const char *path,
                const char *why)
{
    if (verbose < 0) {
        const char *v = getenv("MRC_MPI_VERBOSE");
        verbose = v && *v && strcmp(v, "0") != 0;
    }
    if (!verbose)
        return;
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
        snprintf(where, sizeof where, "%s+0x%lx", info.dli_sname,
                 (unsigned long)((const char *)site -
                                 (const char *)info.dli_saddr));
    else if (dladdr(site, &info) && info.dli_fname)
        snprintf(where, sizeof where, "%s+0x%lx", info.dli_fname,
                 (unsigned long)((const char *)site -
                                 (const char *)info.dli_fbase));
    else
        snprintf(where, sizeof where, "%p", site);
    fprintf(stderr, "mrc_mpi: rank %d: %s from %s: %s (%s)\n", rank, fn,
            where, path, why);
}

static int failed(const char *fn, MPI_Comm comm)
{
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    fprintf(stderr, "mrc_mpi: %s on rank %d: %s\n", fn, rank,
            mrc_last_error());
    PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
}

#define SITE __builtin_return_address(0)

/* ---- the collectives --------------------------------------------------- */

static int allreduce(const void *sendbuf, void *recvbuf, size_t count,
                     MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                     const void *site, const char *fn)
{
    const char *why = NULL;
    mrc_dtype_t dtype;
    mrc_op_t mop;
    size_t elems;
    mrc_comm_t *c = NULL;
    if (reducible_data(type, count, op, &dtype, &mop, &elems, &why))
        c = comm_of(comm, &why);
    if (!c) {
        say(fn, site, "MPI", why);
        return -1;
    }
    say(fn, site, "mrc", mrc_dtype_name(dtype));
    const void *s = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (mrc_allreduce(s, recvbuf, elems, dtype, mop, c) != MRC_OK)
        return failed(fn, comm);
    return MPI_SUCCESS;
}

EXPORT int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                         MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    int rc = count < 0 ? -1
                       : allreduce(sendbuf, recvbuf, (size_t)count, type, op,
                                   comm, SITE, "MPI_Allreduce");
    return rc >= 0 ? rc
                   : PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
}

static int reduce(const void *sendbuf, void *recvbuf, size_t count,
                  MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
                  const void *site, const char *fn)
{
    const char *why = NULL;
    mrc_dtype_t dtype;
    mrc_op_t mop;
    size_t elems;
    mrc_comm_t *c = NULL;
    int size = 0, rank = 0;
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    if (root < 0 || root >= size)
        why = "a root out of range (MPI reports it)";
    else if (reducible_data(type, count, op, &dtype, &mop, &elems, &why))
        c = comm_of(comm, &why);
    if (!c) {
        say(fn, site, "MPI", why);
        return -1;
    }
    say(fn, site, "mrc", mrc_dtype_name(dtype));
    const void *s = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (mrc_reduce(s, rank == root ? recvbuf : NULL, elems, dtype, mop, root,
                   c) != MRC_OK)
        return failed(fn, comm);
    return MPI_SUCCESS;
}

EXPORT int MPI_Reduce(const void *sendbuf, void *recvbuf, int count,
                      MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    int rc = count < 0 ? -1
                       : reduce(sendbuf, recvbuf, (size_t)count, type, op,
                                root, comm, SITE, "MPI_Reduce");
    return rc >= 0 ? rc
                   : PMPI_Reduce(sendbuf, recvbuf, count, type, op, root,
                                 comm);
}

static int reduce_scatter_block(const void *sendbuf, void *recvbuf,
                                size_t recvcount, MPI_Datatype type,
                                MPI_Op op, MPI_Comm comm, const void *site,
                                const char *fn)
{
    const char *why = NULL;
    mrc_dtype_t dtype;
    mrc_op_t mop;
    size_t elems;
    mrc_comm_t *c = NULL;
    if (reducible_data(type, recvcount, op, &dtype, &mop, &elems, &why))
        c = comm_of(comm, &why);
    if (!c) {
        say(fn, site, "MPI", why);
        return -1;
    }
    say(fn, site, "mrc", mrc_dtype_name(dtype));
    int rank;
    PMPI_Comm_rank(comm, &rank);
    size_t block = elems * mrc_dtype_size(dtype);
    mrc_status_t st;
    if (sendbuf == MPI_IN_PLACE) {
        /* MPI: the input fills recvbuf and block 0 of it gets the result;
         * mrc in place: each rank's block stays where it is. */
        char *mine = (char *)recvbuf + (size_t)rank * block;
        st = mrc_reduce_scatter(recvbuf, mine, elems, dtype, mop, c);
        if (st == MRC_OK && rank > 0)
            memmove(recvbuf, mine, block);
    } else {
        st = mrc_reduce_scatter(sendbuf, recvbuf, elems, dtype, mop, c);
    }
    if (st != MRC_OK)
        return failed(fn, comm);
    return MPI_SUCCESS;
}

EXPORT int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf,
                                    int recvcount, MPI_Datatype type,
                                    MPI_Op op, MPI_Comm comm)
{
    int rc = recvcount < 0
                 ? -1
                 : reduce_scatter_block(sendbuf, recvbuf, (size_t)recvcount,
                                        type, op, comm, SITE,
                                        "MPI_Reduce_scatter_block");
    return rc >= 0 ? rc
                   : PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount,
                                               type, op, comm);
}

EXPORT int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf,
                              const int recvcounts[], MPI_Datatype type,
                              MPI_Op op, MPI_Comm comm)
{
    int size = 0, equal = 1;
    PMPI_Comm_size(comm, &size);
    for (int i = 1; i < size && equal; i++)
        equal = recvcounts[i] == recvcounts[0];
    int rc = -1;
    if (!equal || size < 1 || recvcounts[0] < 0)
        say("MPI_Reduce_scatter", SITE, "MPI",
            "the ranks' counts differ");
    else
        rc = reduce_scatter_block(sendbuf, recvbuf, (size_t)recvcounts[0],
                                  type, op, comm, SITE, "MPI_Reduce_scatter");
    return rc >= 0 ? rc
                   : PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type,
                                         op, comm);
}

static int allgather(const void *sendbuf, size_t sendcount,
                     MPI_Datatype sendtype, void *recvbuf, size_t recvcount,
                     MPI_Datatype recvtype, MPI_Comm comm, const void *site,
                     const char *fn)
{
    const char *why = NULL;
    size_t sbytes = 0, rbytes = 0;
    mrc_comm_t *c = NULL;
    if (movable(recvtype, recvcount, &rbytes, &why) &&
        (sendbuf == MPI_IN_PLACE ||
         movable(sendtype, sendcount, &sbytes, &why))) {
        if (sendbuf != MPI_IN_PLACE && sbytes != rbytes)
            why = "send and receive blocks of different sizes";
        else
            c = comm_of(comm, &why);
    }
    if (!c) {
        say(fn, site, "MPI", why);
        return -1;
    }
    say(fn, site, "mrc", "bytes");
    int rank;
    PMPI_Comm_rank(comm, &rank);
    const void *s = sendbuf == MPI_IN_PLACE
                        ? (char *)recvbuf + (size_t)rank * rbytes
                        : sendbuf;
    if (mrc_allgather(s, recvbuf, rbytes, MRC_UINT8, c) != MRC_OK)
        return failed(fn, comm);
    return MPI_SUCCESS;
}

EXPORT int MPI_Allgather(const void *sendbuf, int sendcount,
                         MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, MPI_Comm comm)
{
    int rc = sendcount < 0 || recvcount < 0
                 ? -1
                 : allgather(sendbuf, (size_t)sendcount, sendtype, recvbuf,
                             (size_t)recvcount, recvtype, comm, SITE,
                             "MPI_Allgather");
    return rc >= 0 ? rc
                   : PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf,
                                    recvcount, recvtype, comm);
}

static int bcast(void *buf, size_t count, MPI_Datatype type, int root,
                 MPI_Comm comm, const void *site, const char *fn)
{
    const char *why = NULL;
    size_t bytes = 0;
    mrc_comm_t *c = NULL;
    int size = 0;
    PMPI_Comm_size(comm, &size);
    if (root < 0 || root >= size)
        why = "a root out of range (MPI reports it)";
    else if (movable(type, count, &bytes, &why))
        c = comm_of(comm, &why);
    if (!c) {
        say(fn, site, "MPI", why);
        return -1;
    }
    say(fn, site, "mrc", "bytes");
    if (mrc_broadcast(buf, buf, bytes, MRC_UINT8, root, c) != MRC_OK)
        return failed(fn, comm);
    return MPI_SUCCESS;
}

EXPORT int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root,
                     MPI_Comm comm)
{
    int rc = count < 0 ? -1
                       : bcast(buf, (size_t)count, type, root, comm, SITE,
                               "MPI_Bcast");
    return rc >= 0 ? rc : PMPI_Bcast(buf, count, type, root, comm);
}

#if MPI_VERSION >= 4
/* MPI-4 large counts. */
EXPORT int MPI_Allreduce_c(const void *sendbuf, void *recvbuf,
                           MPI_Count count, MPI_Datatype type, MPI_Op op,
                           MPI_Comm comm)
{
    int rc = count < 0 ? -1
                       : allreduce(sendbuf, recvbuf, (size_t)count, type, op,
                                   comm, SITE, "MPI_Allreduce_c");
    return rc >= 0 ? rc
                   : PMPI_Allreduce_c(sendbuf, recvbuf, count, type, op,
                                      comm);
}

EXPORT int MPI_Reduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                        MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    int rc = count < 0 ? -1
                       : reduce(sendbuf, recvbuf, (size_t)count, type, op,
                                root, comm, SITE, "MPI_Reduce_c");
    return rc >= 0 ? rc
                   : PMPI_Reduce_c(sendbuf, recvbuf, count, type, op, root,
                                   comm);
}

EXPORT int MPI_Reduce_scatter_block_c(const void *sendbuf, void *recvbuf,
                                      MPI_Count recvcount, MPI_Datatype type,
                                      MPI_Op op, MPI_Comm comm)
{
    int rc = recvcount < 0
                 ? -1
                 : reduce_scatter_block(sendbuf, recvbuf, (size_t)recvcount,
                                        type, op, comm, SITE,
                                        "MPI_Reduce_scatter_block_c");
    return rc >= 0 ? rc
                   : PMPI_Reduce_scatter_block_c(sendbuf, recvbuf, recvcount,
                                                 type, op, comm);
}

EXPORT int MPI_Reduce_scatter_c(const void *sendbuf, void *recvbuf,
                                const MPI_Count recvcounts[],
                                MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    int size = 0, equal = 1;
    PMPI_Comm_size(comm, &size);
    for (int i = 1; i < size && equal; i++)
        equal = recvcounts[i] == recvcounts[0];
    int rc = -1;
    if (!equal || size < 1 || recvcounts[0] < 0)
        say("MPI_Reduce_scatter_c", SITE, "MPI", "the ranks' counts differ");
    else
        rc = reduce_scatter_block(sendbuf, recvbuf, (size_t)recvcounts[0],
                                  type, op, comm, SITE,
                                  "MPI_Reduce_scatter_c");
    return rc >= 0 ? rc
                   : PMPI_Reduce_scatter_c(sendbuf, recvbuf, recvcounts, type,
                                           op, comm);
}

EXPORT int MPI_Allgather_c(const void *sendbuf, MPI_Count sendcount,
                           MPI_Datatype sendtype, void *recvbuf,
                           MPI_Count recvcount, MPI_Datatype recvtype,
                           MPI_Comm comm)
{
    int rc = sendcount < 0 || recvcount < 0
                 ? -1
                 : allgather(sendbuf, (size_t)sendcount, sendtype, recvbuf,
                             (size_t)recvcount, recvtype, comm, SITE,
                             "MPI_Allgather_c");
    return rc >= 0 ? rc
                   : PMPI_Allgather_c(sendbuf, sendcount, sendtype, recvbuf,
                                      recvcount, recvtype, comm);
}

EXPORT int MPI_Bcast_c(void *buf, MPI_Count count, MPI_Datatype type,
                       int root, MPI_Comm comm)
{
    int rc = count < 0 ? -1
                       : bcast(buf, (size_t)count, type, root, comm, SITE,
                               "MPI_Bcast_c");
    return rc >= 0 ? rc : PMPI_Bcast_c(buf, count, type, root, comm);
}
#endif

/* The mrc communicators go before MPI does (their private MPI
 * communicators with them): deleting the attribute runs delete_entry. */
EXPORT int MPI_Finalize(void)
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
    return PMPI_Finalize();
}
