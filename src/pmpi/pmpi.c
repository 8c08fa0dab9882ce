/*
 * libmrc_mpi.so: the drop-in MPI library. Loaded before MPI (LD_PRELOAD,
 * or linked ahead of it), it defines MPI_Allreduce, MPI_Reduce_scatter_block,
 * MPI_Reduce_scatter, MPI_Allgather, MPI_Bcast and MPI_Reduce (and their
 * MPI-4 _c forms where the MPI headers have them), and MPI_Alloc_mem and
 * MPI_Free_mem (mrc_mem_alloc: memory the peers map). A call that mrc can
 * do goes to an mrc communicator made for the MPI communicator on its
 * first such call (collective, like the call) and cached on it as an
 * attribute; anything else goes to the PMPI_ call unchanged:
 *
 *   mrc:  intra-communicators of 2 or more ranks; for MPI_Bcast and
 *         MPI_Allgather, data of any datatype; for the reductions, data
 *         whose type signature is one predefined integer or float type of
 *         8 to 64 bits, with MPI_SUM, MPI_PROD, MPI_MIN or MPI_MAX;
 *   MPI:  user-defined ops and the other predefined ones (MPI_BAND,
 *         MPI_MAXLOC, ...), reductions of other types (pairs such as
 *         MPI_DOUBLE_INT, 16-bit, long double, complex, structs of
 *         several types), inter-communicators, one-rank communicators,
 *         calls of no data, MPI_Reduce_scatter with unequal counts, an
 *         MPI_Allgather whose send and receive blocks differ.
 *
 * The route rests only on what MPI requires to agree on every rank (the
 * type signature and count, the op, the root, the communicator), never on
 * a datatype's layout, which may differ between ranks (a vector on one,
 * contiguous ints on another): all ranks take the same path. A rank whose
 * data is not contiguous by extent (holes, as in MPI_DOUBLE_INT's 12 bytes
 * in 16, or gaps, as in a vector) packs it (MPI_Pack) around the mrc call.
 * $MRC_MPI_VERBOSE=1 prints (on stderr, once per call site and path)
 * which path a call took and why.
 *
 * No timeout unless $MRC_TIMEOUT sets one: MPI waits as long as a
 * collective takes; a dead peer is still reported. While a rank waits in
 * mrc, MPI progresses (see the MPI transport's idle hook). An mrc failure
 * is reported through the communicator's error handler as MPI_ERR_OTHER,
 * after its message; if the program goes on (MPI_ERRORS_RETURN), the
 * calls after a failure that broke mrc's communicator go to MPI.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmpi_internal.h"
#include "transport/transport.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- the collectives --------------------------------------------------- */

/* The send side of a reduction: sendbuf, or recvbuf in place. */
static const void *input(const void *sendbuf, void *recvbuf)
{
    return sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
}

static int allreduce(const void *sendbuf, void *recvbuf, size_t count,
                     MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                     const void *site, const char *fn)
{
    const char *why = NULL;
    mrc_dtype_t dtype;
    mrc_op_t mop;
    size_t elems;
    cached_t *c = NULL;
    if (mrc__pmpi_reducible_data(type, count, op, &dtype, &mop, &elems, &why))
        c = mrc__pmpi_entry_of(comm, &why);
    if (!c) {
        mrc__pmpi_say(fn, site, "MPI", why);
        return -1;
    }
    mrc__pmpi_say(fn, site, "mrc", mrc_dtype_name(dtype));
    int ip = sendbuf == MPI_IN_PLACE;
    if (mrc__pmpi_reducible(type) >=
        0) { /* a predefined type: its buffers as they are */
        mrc_status_t st = mrc_allreduce(input(sendbuf, recvbuf), recvbuf, elems,
                                        dtype, mop, c->comm);
        return st == MRC_OK ? MPI_SUCCESS
                            : mrc__pmpi_failed(fn, comm, c, st, NULL);
    }
    size_t bytes = elems * mrc_dtype_size(dtype);
    data_t s, r;
    if (!mrc__pmpi_data_open(&s, (void *)input(sendbuf, recvbuf), count, type,
                             bytes, 1, comm, &why))
        return mrc__pmpi_stranded(fn, comm, why);
    if (ip)
        r = s;
    else if (!mrc__pmpi_data_open(&r, recvbuf, count, type, bytes, 0, comm,
                                  &why)) {
        mrc__pmpi_data_close(&s, 0, comm);
        return mrc__pmpi_stranded(fn, comm, why);
    }
    mrc_status_t st =
        mrc_allreduce(mrc__pmpi_data_at(&s), mrc__pmpi_data_at(&r), elems,
                      dtype, mop, c->comm);
    int rc = mrc__pmpi_data_close(&r, st == MRC_OK, comm);
    if (!ip)
        mrc__pmpi_data_close(&s, 0, comm);
    if (st != MRC_OK || rc != MPI_SUCCESS)
        return mrc__pmpi_failed(fn, comm, c, st, "unpacking the result failed");
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
    cached_t *c = NULL;
    int size = 0, rank = 0;
    mrc__pmpi_comm_shape(comm, &size, &rank);
    if (root < 0 || root >= size)
        why = "a root out of range (MPI reports it)";
    else if (mrc__pmpi_reducible_data(type, count, op, &dtype, &mop, &elems,
                                      &why))
        c = mrc__pmpi_entry_of(comm, &why);
    if (!c) {
        mrc__pmpi_say(fn, site, "MPI", why);
        return -1;
    }
    mrc__pmpi_say(fn, site, "mrc", mrc_dtype_name(dtype));
    int ip = sendbuf == MPI_IN_PLACE && rank == root, out = rank == root;
    if (mrc__pmpi_reducible(type) >=
        0) { /* a predefined type: buffers as they are */
        mrc_status_t st =
            mrc_reduce(input(sendbuf, recvbuf), out ? recvbuf : NULL, elems,
                       dtype, mop, root, c->comm);
        return st == MRC_OK ? MPI_SUCCESS
                            : mrc__pmpi_failed(fn, comm, c, st, NULL);
    }
    size_t bytes = elems * mrc_dtype_size(dtype);
    data_t s, r = {0};
    if (!mrc__pmpi_data_open(&s, (void *)input(sendbuf, recvbuf), count, type,
                             bytes, 1, comm, &why))
        return mrc__pmpi_stranded(fn, comm, why);
    if (ip)
        r = s;
    else if (out && !mrc__pmpi_data_open(&r, recvbuf, count, type, bytes, 0,
                                         comm, &why)) {
        mrc__pmpi_data_close(&s, 0, comm);
        return mrc__pmpi_stranded(fn, comm, why);
    }
    mrc_status_t st =
        mrc_reduce(mrc__pmpi_data_at(&s), out ? mrc__pmpi_data_at(&r) : NULL,
                   elems, dtype, mop, root, c->comm);
    int rc = out ? mrc__pmpi_data_close(&r, st == MRC_OK, comm) : MPI_SUCCESS;
    if (!ip)
        mrc__pmpi_data_close(&s, 0, comm);
    if (st != MRC_OK || rc != MPI_SUCCESS)
        return mrc__pmpi_failed(fn, comm, c, st, "unpacking the result failed");
    return MPI_SUCCESS;
}

EXPORT int MPI_Reduce(const void *sendbuf, void *recvbuf, int count,
                      MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    int rc = count < 0 ? -1
                       : reduce(sendbuf, recvbuf, (size_t)count, type, op, root,
                                comm, SITE, "MPI_Reduce");
    return rc >= 0 ? rc
                   : PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
}

static int reduce_scatter_block(const void *sendbuf, void *recvbuf,
                                size_t recvcount, MPI_Datatype type, MPI_Op op,
                                MPI_Comm comm, const void *site, const char *fn)
{
    const char *why = NULL;
    mrc_dtype_t dtype;
    mrc_op_t mop;
    size_t elems;
    cached_t *c = NULL;
    int n = 0, rank = 0;
    mrc__pmpi_comm_shape(comm, &n, &rank);
    if (mrc__pmpi_reducible_data(type, recvcount, op, &dtype, &mop, &elems,
                                 &why)) {
        if (elems > SIZE_MAX / (size_t)n / mrc_dtype_size(dtype))
            why = "a size that mrc cannot hold";
        else
            c = mrc__pmpi_entry_of(comm, &why);
    }
    if (!c) {
        mrc__pmpi_say(fn, site, "MPI", why);
        return -1;
    }
    mrc__pmpi_say(fn, site, "mrc", mrc_dtype_name(dtype));
    size_t block = elems * mrc_dtype_size(dtype);
    /* In place, MPI takes the input from all of recvbuf and writes the
     * result at its start, leaving the rest as it was: mrc's in-place form
     * (the result over the rank's own block) would overwrite that block,
     * so the result comes out of place, into a block of its own. */
    int ip = sendbuf == MPI_IN_PLACE;
    data_t s, r;
    if (!mrc__pmpi_data_open(&s, (void *)input(sendbuf, recvbuf),
                             recvcount * (size_t)n, type, block * (size_t)n, 1,
                             comm, &why))
        return mrc__pmpi_stranded(fn, comm, why);
    if (!mrc__pmpi_data_open(&r, recvbuf, recvcount, type, block, 0, comm,
                             &why)) {
        mrc__pmpi_data_close(&s, 0, comm);
        return mrc__pmpi_stranded(fn, comm, why);
    }
    void *into = mrc__pmpi_data_at(&r);
    if (ip && !r.packed && !(into = malloc(block))) {
        mrc__pmpi_data_close(&s, 0, comm);
        return mrc__pmpi_stranded(fn, comm, "out of memory for the result");
    }
    mrc_status_t st = mrc_reduce_scatter(mrc__pmpi_data_at(&s), into, elems,
                                         dtype, mop, c->comm);
    if (into != mrc__pmpi_data_at(&r)) {
        if (st == MRC_OK)
            memcpy(r.buf, into, block);
        free(into);
    }
    mrc__pmpi_data_close(&s, 0, comm);
    int rc = mrc__pmpi_data_close(&r, st == MRC_OK, comm);
    if (st != MRC_OK || rc != MPI_SUCCESS)
        return mrc__pmpi_failed(fn, comm, c, st, "unpacking the result failed");
    return MPI_SUCCESS;
}

EXPORT int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf,
                                    int recvcount, MPI_Datatype type, MPI_Op op,
                                    MPI_Comm comm)
{
    int rc =
        recvcount < 0
            ? -1
            : reduce_scatter_block(sendbuf, recvbuf, (size_t)recvcount, type,
                                   op, comm, SITE, "MPI_Reduce_scatter_block");
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
        mrc__pmpi_say("MPI_Reduce_scatter", SITE, "MPI",
                      "the ranks' counts differ");
    else
        rc = reduce_scatter_block(sendbuf, recvbuf, (size_t)recvcounts[0], type,
                                  op, comm, SITE, "MPI_Reduce_scatter");
    return rc >= 0 ? rc
                   : PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type, op,
                                         comm);
}

/* Allgather and broadcast move bytes: the route rests on the bytes of the
 * signature alone (any datatype; the ranks' layouts may differ). */
static int allgather(const void *sendbuf, size_t sendcount,
                     MPI_Datatype sendtype, void *recvbuf, size_t recvcount,
                     MPI_Datatype recvtype, MPI_Comm comm, const void *site,
                     const char *fn)
{
    const char *why = NULL;
    size_t sbytes = 0, rbytes = 0, total = 0;
    cached_t *c = NULL;
    int n = 0, rank = 0;
    mrc__pmpi_comm_shape(comm, &n, &rank);
    if (mrc__pmpi_data_bytes(recvtype, recvcount, &rbytes, &why) &&
        (sendbuf == MPI_IN_PLACE ||
         mrc__pmpi_data_bytes(sendtype, sendcount, &sbytes, &why))) {
        if (sendbuf != MPI_IN_PLACE && sbytes != rbytes)
            why = "send and receive blocks of different sizes (MPI reports "
                  "it)";
        else if (__builtin_mul_overflow(rbytes, (size_t)n, &total))
            why = "a size that mrc cannot hold";
        else if (rbytes == 0)
            why = "no data";
        else
            c = mrc__pmpi_entry_of(comm, &why);
    }
    if (!c) {
        mrc__pmpi_say(fn, site, "MPI", why);
        return -1;
    }
    mrc__pmpi_say(fn, site, "mrc", "bytes");
    MPI_Count lb = 0, extent = 0;
    if (mrc__pmpi_predefined(recvtype)) /* its extent is its size */
        extent = (MPI_Count)(rbytes / recvcount);
    else
        PMPI_Type_get_extent_x(recvtype, &lb, &extent);
    /* This rank's block of recvbuf, where in place has its input. */
    char *mine = (char *)recvbuf +
                 (MPI_Aint)rank * (MPI_Aint)recvcount * (MPI_Aint)extent;
    data_t s, r;
    if (!mrc__pmpi_data_open(&r, recvbuf, recvcount * (size_t)n, recvtype,
                             total, 0, comm, &why))
        return mrc__pmpi_stranded(fn, comm, why);
    int ok = sendbuf == MPI_IN_PLACE
                 ? mrc__pmpi_data_open(&s, mine, recvcount, recvtype, rbytes, 1,
                                       comm, &why)
                 : mrc__pmpi_data_open(&s, (void *)sendbuf, sendcount, sendtype,
                                       sbytes, 1, comm, &why);
    if (!ok) {
        mrc__pmpi_data_close(&r, 0, comm);
        return mrc__pmpi_stranded(fn, comm, why);
    }
    /* In place and contiguous, the input is already this rank's block of
     * the result: mrc's in-place form. */
    const void *from = mrc__pmpi_data_at(&s);
    mrc_status_t st =
        mrc_allgather(from, mrc__pmpi_data_at(&r), rbytes, MRC_UINT8, c->comm);
    mrc__pmpi_data_close(&s, 0, comm);
    int rc = mrc__pmpi_data_close(&r, st == MRC_OK, comm);
    if (st != MRC_OK || rc != MPI_SUCCESS)
        return mrc__pmpi_failed(fn, comm, c, st, "unpacking the result failed");
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
    cached_t *c = NULL;
    int size = 0, rank = 0;
    mrc__pmpi_comm_shape(comm, &size, &rank);
    if (root < 0 || root >= size)
        why = "a root out of range (MPI reports it)";
    else if (!mrc__pmpi_data_bytes(type, count, &bytes, &why))
        ;
    else if (bytes == 0)
        why = "no data";
    else
        c = mrc__pmpi_entry_of(comm, &why);
    if (!c) {
        mrc__pmpi_say(fn, site, "MPI", why);
        return -1;
    }
    mrc__pmpi_say(fn, site, "mrc", "bytes");
    if (mrc__pmpi_predefined(type)) { /* the buffer as it is */
        mrc_status_t st =
            mrc_broadcast(buf, buf, bytes, MRC_UINT8, root, c->comm);
        return st == MRC_OK ? MPI_SUCCESS
                            : mrc__pmpi_failed(fn, comm, c, st, NULL);
    }
    data_t d;
    if (!mrc__pmpi_data_open(&d, buf, count, type, bytes, rank == root, comm,
                             &why))
        return mrc__pmpi_stranded(fn, comm, why);
    mrc_status_t st =
        mrc_broadcast(mrc__pmpi_data_at(&d), mrc__pmpi_data_at(&d), bytes,
                      MRC_UINT8, root, c->comm);
    int rc = mrc__pmpi_data_close(&d, st == MRC_OK && rank != root, comm);
    if (st != MRC_OK || rc != MPI_SUCCESS)
        return mrc__pmpi_failed(fn, comm, c, st, "unpacking the result failed");
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
EXPORT int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                           MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    int rc = count < 0 ? -1
                       : allreduce(sendbuf, recvbuf, (size_t)count, type, op,
                                   comm, SITE, "MPI_Allreduce_c");
    return rc >= 0 ? rc
                   : PMPI_Allreduce_c(sendbuf, recvbuf, count, type, op, comm);
}

EXPORT int MPI_Reduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                        MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    int rc = count < 0 ? -1
                       : reduce(sendbuf, recvbuf, (size_t)count, type, op, root,
                                comm, SITE, "MPI_Reduce_c");
    return rc >= 0
               ? rc
               : PMPI_Reduce_c(sendbuf, recvbuf, count, type, op, root, comm);
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
                                const MPI_Count recvcounts[], MPI_Datatype type,
                                MPI_Op op, MPI_Comm comm)
{
    int size = 0, equal = 1;
    PMPI_Comm_size(comm, &size);
    for (int i = 1; i < size && equal; i++)
        equal = recvcounts[i] == recvcounts[0];
    int rc = -1;
    if (!equal || size < 1 || recvcounts[0] < 0)
        mrc__pmpi_say("MPI_Reduce_scatter_c", SITE, "MPI",
                      "the ranks' counts differ");
    else
        rc = reduce_scatter_block(sendbuf, recvbuf, (size_t)recvcounts[0], type,
                                  op, comm, SITE, "MPI_Reduce_scatter_c");
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

EXPORT int MPI_Bcast_c(void *buf, MPI_Count count, MPI_Datatype type, int root,
                       MPI_Comm comm)
{
    int rc = count < 0 ? -1
                       : bcast(buf, (size_t)count, type, root, comm, SITE,
                               "MPI_Bcast_c");
    return rc >= 0 ? rc : PMPI_Bcast_c(buf, count, type, root, comm);
}
#endif

/* Memory for MPI_Alloc_mem is mrc_mem_alloc's where it can be: the
 * peers on the host map it and read it with plain loads instead of
 * through the kernel. Only blocks of ALLOC_MEM_REGION_BYTES or more: a
 * region is a file and a descriptor, which a program of many small
 * blocks (RMA bookkeeping) would run out of for nothing. MPI_Free_mem
 * gives back to each what it gave (mrc_mem_free refuses a pointer that
 * is not its own). */
enum { ALLOC_MEM_REGION_BYTES = 16 << 10 };

EXPORT int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
    void *p = NULL;
    if (size >= (MPI_Aint)ALLOC_MEM_REGION_BYTES &&
        mrc_mem_alloc((size_t)size, &p) == MRC_OK) {
        memcpy(baseptr, &p, sizeof p);
        return MPI_SUCCESS;
    }
    return PMPI_Alloc_mem(size, info, baseptr);
}

EXPORT int MPI_Free_mem(void *base)
{
    return base && mrc_mem_free(base) == MRC_OK ? MPI_SUCCESS
                                                : PMPI_Free_mem(base);
}

/* The mrc communicators go before MPI does (their private MPI
 * communicators with them): deleting the attribute runs delete_entry. */
EXPORT int MPI_Finalize(void)
{
    mrc__pmpi_forget_all();
    return PMPI_Finalize();
}
