/* What the drop-in library can take: which MPI types and ops mrc
 * reduces (by type signature, never by layout, so that all ranks take one
 * route), and a rank's data as the bytes mrc sees (packed around the call
 * where the layout has holes or gaps). */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmpi_internal.h"

/* A predefined type's mrc dtype for reductions; -1 if none. */
int mrc__pmpi_reducible_type(MPI_Datatype t)
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

__thread __attribute__((tls_model("initial-exec")))
mrc__pmpi_type_memo_t mrc__pmpi_last_type;

static int same_basic(MPI_Datatype a, MPI_Datatype b)
{
    return a == b || (mrc__pmpi_reducible(a) >= 0 &&
                      mrc__pmpi_reducible(a) == mrc__pmpi_reducible(b));
}

/* The one predefined type that t's type signature repeats, in *base
 * (MPI_DATATYPE_NULL for a type of no data): 1; 0 if the signature mixes
 * types (MPI_DOUBLE_INT and the other pairs of two types, structs of
 * several) or cannot be read. MPI requires the ranks' signatures to
 * match, so this is the same on every rank whatever layout each rank's
 * datatype gives its data. */
static int signature_of(MPI_Datatype t, MPI_Datatype *base, int depth)
{
    *base = MPI_DATATYPE_NULL;
    MPI_Count size = 0;
    if (PMPI_Type_size_x(t, &size) != MPI_SUCCESS)
        return 0;
    if (size == 0)
        return 1;
    int ni, na, nd, comb;
    if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return 0;
    if (comb == MPI_COMBINER_NAMED) {
        if (t == MPI_2INT) {
            *base = MPI_INT;
            return 1;
        }
        if (t == MPI_DOUBLE_INT || t == MPI_LONG_INT || t == MPI_SHORT_INT ||
            t == MPI_FLOAT_INT || t == MPI_LONG_DOUBLE_INT)
            return 0;
        *base = t;
        return 1;
    }
    if (depth > 32 || nd < 1)
        return 0;
    int *ints = malloc((size_t)(ni + 1) * sizeof *ints);
    MPI_Aint *aints = malloc((size_t)(na + 1) * sizeof *aints);
    MPI_Datatype *types = malloc((size_t)nd * sizeof *types);
    int ok = ints && aints && types &&
             PMPI_Type_get_contents(t, ni, na, nd, ints, aints, types) ==
                 MPI_SUCCESS;
    int got = ok ? nd : 0;
    for (int i = 0; i < got; i++) {
        /* a struct's member of no elements adds nothing to it */
        int skip =
            comb == MPI_COMBINER_STRUCT && i + 1 < ni && ints[1 + i] == 0;
        MPI_Datatype b;
        if (ok && !skip) {
            ok = signature_of(types[i], &b, depth + 1);
            if (ok && b != MPI_DATATYPE_NULL) {
                if (*base == MPI_DATATYPE_NULL)
                    *base = b;
                else if (!same_basic(*base, b))
                    ok = 0;
            }
        }
        int ci, ca, cd, cc;
        PMPI_Type_get_envelope(types[i], &ci, &ca, &cd, &cc);
        if (cc != MPI_COMBINER_NAMED)
            PMPI_Type_free(&types[i]);
    }
    free(ints);
    free(aints);
    free(types);
    return ok;
}

/* count elements of t lie in count * size bytes from their buffer, in
 * order, with no holes and no gaps between elements (contiguous by
 * extent): mrc may take them as they are. A pair type such as
 * MPI_DOUBLE_INT (size 12, extent 16) is not; contiguous and dup types of
 * a type that is, are. Anything else is packed (see data_t). */
static int contiguous(MPI_Datatype t, int depth)
{
    MPI_Count size = 0, lb = 0, extent = 0, tlb = 0, textent = 0;
    if (PMPI_Type_size_x(t, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent_x(t, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent_x(t, &tlb, &textent) != MPI_SUCCESS)
        return 0;
    if (size <= 0 || lb != 0 || tlb != 0 || extent != size || textent != size)
        return 0;
    int ni, na, nd, comb;
    if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return 0;
    if (comb == MPI_COMBINER_NAMED)
        return 1;
    /* Sizes alone cannot rule out overlapping blocks beside a hole. */
    if ((comb != MPI_COMBINER_CONTIGUOUS && comb != MPI_COMBINER_DUP) ||
        ni > 1 || na != 0 || nd != 1 || depth > 32)
        return 0;
    int count = 1;
    MPI_Aint unused;
    MPI_Datatype inner;
    if (PMPI_Type_get_contents(t, ni, na, nd, &count, &unused, &inner) !=
        MPI_SUCCESS)
        return 0;
    int ok = contiguous(inner, depth + 1);
    int ci, ca, cd, cc;
    PMPI_Type_get_envelope(inner, &ci, &ca, &cd, &cc);
    if (cc != MPI_COMBINER_NAMED)
        PMPI_Type_free(&inner);
    return ok;
}

/* The bytes of count elements of t (the same on every rank: MPI requires
 * the signatures to match), or 0 with *why. */
int mrc__pmpi_data_bytes(MPI_Datatype t, size_t count, size_t *bytes,
                         const char **why)
{
    MPI_Count size = 0;
    int d = mrc__pmpi_reducible(t); /* predefined: no call into MPI */
    if (mrc__pmpi_predefined(t))
        size = d >= 0 ? (MPI_Count)mrc_dtype_size((mrc_dtype_t)d) : 1;
    else if (PMPI_Type_size_x(t, &size) != MPI_SUCCESS)
        size = -1;
    if (size < 0 || __builtin_mul_overflow(count, (size_t)size, bytes)) {
        *why = "a size that mrc cannot hold";
        return 0;
    }
    return 1;
}

/* Data to reduce: its mrc dtype, op and element count, or 0 with *why.
 * Decided on the type signature (its one basic type) and the op, which
 * MPI requires to agree on every rank: all ranks take the same route
 * whatever their datatypes' layouts. */
int mrc__pmpi_reducible_data(MPI_Datatype t, size_t count, MPI_Op op,
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
    MPI_Datatype base;
    size_t bytes;
    /* The common case, a predefined type, without asking MPI. */
    int d = mrc__pmpi_reducible(t);
    if (d >= 0) {
        if (__builtin_mul_overflow(count, mrc_dtype_size((mrc_dtype_t)d),
                                   &bytes)) {
            *why = "a size that mrc cannot hold";
            return 0;
        }
    } else {
        if (signature_of(t, &base, 0) && base != MPI_DATATYPE_NULL)
            d = mrc__pmpi_reducible(base);
        if (d < 0) {
            *why = "a datatype that is not made of one predefined 8- to "
                   "64-bit integer, float or double";
            return 0;
        }
        if (!mrc__pmpi_data_bytes(t, count, &bytes, why))
            return 0;
    }
    if (bytes == 0) {
        *why = "no data";
        return 0;
    }
    *dtype = (mrc_dtype_t)d;
    *elems = bytes / mrc_dtype_size(*dtype);
    return 1;
}

/* Packs or unpacks in pieces small enough for MPI's int sizes. */
static int pack_pieces(data_t *d, MPI_Comm comm, int unpack)
{
    MPI_Count size = 0, lb = 0, extent = 0;
    PMPI_Type_size_x(d->type, &size);
    PMPI_Type_get_extent_x(d->type, &lb, &extent);
    size_t per = size > 0 ? ((size_t)1 << 30) / (size_t)size : 0;
    if (per == 0)
        per = 1;
    for (size_t i = 0; i < d->count; i += per) {
        size_t k = d->count - i < per ? d->count - i : per;
        size_t len = k * (size_t)size;
        if (len > INT_MAX)
            return MPI_ERR_TYPE;
        char *at = (char *)d->buf + (MPI_Aint)i * (MPI_Aint)extent;
        int pos = 0, rc;
        if (unpack)
            rc = PMPI_Unpack(d->packed + i * (size_t)size, (int)len, &pos, at,
                             (int)k, d->type, comm);
        else
            rc = PMPI_Pack(at, (int)k, d->type, d->packed + i * (size_t)size,
                           (int)len, &pos, comm);
        if (rc != MPI_SUCCESS)
            return rc;
        if ((size_t)pos != len)
            return MPI_ERR_TRUNCATE; /* a packed form with headers */
    }
    return MPI_SUCCESS;
}

/* Sets d up for count elements of t at buf; `in`: its data is input
 * (packed now). 0 with *why if a buffer is short of memory. */
int mrc__pmpi_data_open(data_t *d, void *buf, size_t count, MPI_Datatype t,
                        size_t bytes, int in, MPI_Comm comm, const char **why)
{
    *d = (data_t){buf, count, t, bytes, NULL};
    if (bytes == 0 || mrc__pmpi_reducible(t) >= 0 || t == MPI_BYTE ||
        t == MPI_CHAR || contiguous(t, 0))
        return 1; /* predefined types first: no call into MPI */
    d->packed = malloc(bytes);
    if (!d->packed) {
        *why = "out of memory for a packed copy of the data";
        return 0;
    }
    if (in && pack_pieces(d, comm, 0) != MPI_SUCCESS) {
        *why = "MPI_Pack failed";
        free(d->packed);
        d->packed = NULL;
        return 0;
    }
    return 1;
}

void *mrc__pmpi_data_at(const data_t *d)
{
    return d->packed ? d->packed : d->buf;
}

/* Unpacks d's bytes into its buffer if `out` (and the call succeeded),
 * and frees the packed copy. */
int mrc__pmpi_data_close(data_t *d, int out, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    if (d->packed && out)
        rc = pack_pieces(d, comm, 1);
    free(d->packed);
    d->packed = NULL;
    return rc;
}
