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
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
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
    int dropped;      /* a call failed in mrc: MPI does the rest */
    int size, rank;   /* of `of`, asked once */
} cached_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int keyval = MPI_KEYVAL_INVALID;
static cached_t *all; /* every live entry, for MPI_Finalize */
static int verbose = -1;

static int is_verbose(void)
{
    if (verbose < 0) {
        const char *v = getenv("MRC_MPI_VERBOSE");
        verbose = v && *v && strcmp(v, "0") != 0;
    }
    return verbose;
}

/* The last communicator a thread's call took to mrc, and its entry: the
 * next call on it skips MPI's attribute lookup (and the mutex of key()),
 * which cost a small call more than mrc's own work. A communicator freed
 * anywhere bumps the generation, so no thread trusts an entry that may
 * be gone or a handle that may now name another communicator. */
static uint64_t generation;
static __thread __attribute__((tls_model("initial-exec"))) struct {
    MPI_Comm comm;
    cached_t *entry;
    uint64_t generation;
} last_route;

static cached_t *route_hit(MPI_Comm comm)
{
    if (last_route.entry && last_route.comm == comm &&
        last_route.generation ==
            __atomic_load_n(&generation, __ATOMIC_ACQUIRE))
        return last_route.entry;
    return NULL;
}

/* The size of comm and this rank's place in it: from the last route's
 * entry when comm is its communicator (no call into MPI), else asked. */
static void comm_shape(MPI_Comm comm, int *size, int *rank)
{
    const cached_t *hit = route_hit(comm);
    if (hit) {
        *size = hit->size;
        *rank = hit->rank;
        return;
    }
    PMPI_Comm_size(comm, size);
    PMPI_Comm_rank(comm, rank);
}

static void route_remember(MPI_Comm comm, cached_t *c)
{
    last_route.comm = comm;
    last_route.entry = c;
    last_route.generation = __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
}

static int delete_entry(MPI_Comm comm, int key, void *value, void *extra)
{
    (void)comm;
    (void)key;
    (void)extra;
    cached_t *c = value;
    __atomic_add_fetch(&generation, 1, __ATOMIC_ACQ_REL);
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

/* The mrc communicator of comm, made on first use (collective: every
 * rank of comm gets here in the same call, as every rank takes the same
 * route). NULL: MPI does the call; *why says why. */
static cached_t *entry_of(MPI_Comm comm, const char **why)
{
    cached_t *hit = route_hit(comm);
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
        mrc_config_t cfg = {.timeout_s = drop_in_timeout()};
        int rank = 0;
        PMPI_Comm_rank(comm, &rank);
        c->rank = rank;
        if (mrc_comm_init_mpi(comm, &cfg, &c->comm) != MRC_OK) {
            if (rank == 0)
                fprintf(stderr,
                        "mrc_mpi: this communicator stays with MPI: %s\n",
                        mrc_last_error());
            c->comm = NULL;
        } else if (rank == 0 && is_verbose()) {
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

/* ---- what mrc can take ------------------------------------------------- */

/* A predefined type's mrc dtype for reductions; -1 if none. */
static int reducible_type(MPI_Datatype t)
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

/* The same, remembered for the last type a thread asked about (a call
 * asks three times, and the compiler tests every handle each time). A
 * pure function of the handle: only predefined handles, which never
 * change meaning, map to a dtype, and a derived type's handle, reused
 * or not, is never one of them. */
static __thread __attribute__((tls_model("initial-exec"))) struct {
    MPI_Datatype type;
    int dtype, known;
} last_type;

static int reducible(MPI_Datatype t)
{
    if (last_type.known && last_type.type == t)
        return last_type.dtype;
    last_type.type = t;
    last_type.dtype = reducible_type(t);
    last_type.known = 1;
    return last_type.dtype;
}

/* A predefined type mrc takes as it is: a reducible one, or bytes. */
static int predefined(MPI_Datatype t)
{
    return reducible(t) >= 0 || t == MPI_BYTE || t == MPI_CHAR;
}

static int same_basic(MPI_Datatype a, MPI_Datatype b)
{
    return a == b || (reducible(a) >= 0 && reducible(a) == reducible(b));
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
static int data_bytes(MPI_Datatype t, size_t count, size_t *bytes,
                      const char **why)
{
    MPI_Count size = 0;
    int d = reducible(t); /* predefined: no call into MPI */
    if (predefined(t))
        size = d >= 0 ? (MPI_Count)mrc_dtype_size((mrc_dtype_t)d) : 1;
    else if (PMPI_Type_size_x(t, &size) != MPI_SUCCESS)
        size = -1;
    if (size < 0 ||
        __builtin_mul_overflow(count, (size_t)size, bytes)) {
        *why = "a size that mrc cannot hold";
        return 0;
    }
    return 1;
}

/* Data to reduce: its mrc dtype, op and element count, or 0 with *why.
 * Decided on the type signature (its one basic type) and the op, which
 * MPI requires to agree on every rank: all ranks take the same route
 * whatever their datatypes' layouts. */
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
    MPI_Datatype base;
    size_t bytes;
    /* The common case, a predefined type, without asking MPI. */
    int d = reducible(t);
    if (d >= 0) {
        if (__builtin_mul_overflow(count, mrc_dtype_size((mrc_dtype_t)d),
                                   &bytes)) {
            *why = "a size that mrc cannot hold";
            return 0;
        }
    } else {
        if (signature_of(t, &base, 0) && base != MPI_DATATYPE_NULL)
            d = reducible(base);
        if (d < 0) {
            *why = "a datatype that is not made of one predefined 8- to "
                   "64-bit integer, float or double";
            return 0;
        }
        if (!data_bytes(t, count, &bytes, why))
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

/* ---- a rank's data as bytes mrc can take ------------------------------- */

/* count elements of t at buf as mrc sees them: at buf itself when t is
 * contiguous by extent, else packed (MPI_Pack) into a buffer of this
 * rank's: ranks may lay out the same signature differently, and each
 * packs or not for itself, without changing the call's route. */
typedef struct data {
    void *buf;
    size_t count;
    MPI_Datatype type;
    size_t bytes;
    char *packed; /* NULL: buf is used as it is */
} data_t;

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
static int data_open(data_t *d, void *buf, size_t count, MPI_Datatype t,
                     size_t bytes, int in, MPI_Comm comm, const char **why)
{
    *d = (data_t){buf, count, t, bytes, NULL};
    if (bytes == 0 || reducible(t) >= 0 || t == MPI_BYTE || t == MPI_CHAR ||
        contiguous(t, 0))
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

static void *data_at(const data_t *d)
{
    return d->packed ? d->packed : d->buf;
}

/* Unpacks d's bytes into its buffer if `out` (and the call succeeded),
 * and frees the packed copy. */
static int data_close(data_t *d, int out, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    if (d->packed && out)
        rc = pack_pieces(d, comm, 1);
    free(d->packed);
    d->packed = NULL;
    return rc;
}

/* ---- saying which path a call took ------------------------------------- */

enum { SITES = 256 };

static void say(const char *fn, const void *site, const char *path,
                const char *why)
{
    if (!is_verbose())
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


/* A call failed in mrc (st; MRC_OK: around it, for `why`): says why, then
 * reports it as MPI does, through the communicator's error handler
 * (MPI_ERRORS_ARE_FATAL, the default, ends the job). A program that goes on
 * (MPI_ERRORS_RETURN, or a handler that returns) keeps a working communicator:
 * the calls after a failure that broke mrc's communicator go to MPI. */
static int failed(const char *fn, MPI_Comm comm, cached_t *c, mrc_status_t st,
                  const char *why)
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
static int stranded(const char *fn, MPI_Comm comm, const char *why)
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

#define SITE __builtin_return_address(0)

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
    if (reducible_data(type, count, op, &dtype, &mop, &elems, &why))
        c = entry_of(comm, &why);
    if (!c) {
        say(fn, site, "MPI", why);
        return -1;
    }
    say(fn, site, "mrc", mrc_dtype_name(dtype));
    int ip = sendbuf == MPI_IN_PLACE;
    if (reducible(type) >= 0) { /* a predefined type: its buffers as they are */
        mrc_status_t st = mrc_allreduce(input(sendbuf, recvbuf), recvbuf,
                                        elems, dtype, mop, c->comm);
        return st == MRC_OK ? MPI_SUCCESS : failed(fn, comm, c, st, NULL);
    }
    size_t bytes = elems * mrc_dtype_size(dtype);
    data_t s, r;
    if (!data_open(&s, (void *)input(sendbuf, recvbuf), count, type, bytes, 1,
                   comm, &why))
        return stranded(fn, comm, why);
    if (ip)
        r = s;
    else if (!data_open(&r, recvbuf, count, type, bytes, 0, comm, &why)) {
        data_close(&s, 0, comm);
        return stranded(fn, comm, why);
    }
    mrc_status_t st =
        mrc_allreduce(data_at(&s), data_at(&r), elems, dtype, mop, c->comm);
    int rc = data_close(&r, st == MRC_OK, comm);
    if (!ip)
        data_close(&s, 0, comm);
    if (st != MRC_OK || rc != MPI_SUCCESS)
        return failed(fn, comm, c, st, "unpacking the result failed");
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
    comm_shape(comm, &size, &rank);
    if (root < 0 || root >= size)
        why = "a root out of range (MPI reports it)";
    else if (reducible_data(type, count, op, &dtype, &mop, &elems, &why))
        c = entry_of(comm, &why);
    if (!c) {
        say(fn, site, "MPI", why);
        return -1;
    }
    say(fn, site, "mrc", mrc_dtype_name(dtype));
    int ip = sendbuf == MPI_IN_PLACE && rank == root, out = rank == root;
    if (reducible(type) >= 0) { /* a predefined type: buffers as they are */
        mrc_status_t st = mrc_reduce(input(sendbuf, recvbuf),
                                     out ? recvbuf : NULL, elems, dtype, mop,
                                     root, c->comm);
        return st == MRC_OK ? MPI_SUCCESS : failed(fn, comm, c, st, NULL);
    }
    size_t bytes = elems * mrc_dtype_size(dtype);
    data_t s, r = {0};
    if (!data_open(&s, (void *)input(sendbuf, recvbuf), count, type, bytes, 1,
                   comm, &why))
        return stranded(fn, comm, why);
    if (ip)
        r = s;
    else if (out &&
             !data_open(&r, recvbuf, count, type, bytes, 0, comm, &why)) {
        data_close(&s, 0, comm);
        return stranded(fn, comm, why);
    }
    mrc_status_t st = mrc_reduce(data_at(&s), out ? data_at(&r) : NULL, elems,
                                 dtype, mop, root, c->comm);
    int rc = out ? data_close(&r, st == MRC_OK, comm) : MPI_SUCCESS;
    if (!ip)
        data_close(&s, 0, comm);
    if (st != MRC_OK || rc != MPI_SUCCESS)
        return failed(fn, comm, c, st, "unpacking the result failed");
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
    cached_t *c = NULL;
    int n = 0, rank = 0;
    comm_shape(comm, &n, &rank);
    if (reducible_data(type, recvcount, op, &dtype, &mop, &elems, &why)) {
        if (elems > SIZE_MAX / (size_t)n / mrc_dtype_size(dtype))
            why = "a size that mrc cannot hold";
        else
            c = entry_of(comm, &why);
    }
    if (!c) {
        say(fn, site, "MPI", why);
        return -1;
    }
    say(fn, site, "mrc", mrc_dtype_name(dtype));
    size_t block = elems * mrc_dtype_size(dtype);
    /* In place, MPI takes the input from all of recvbuf and writes the
     * result at its start, leaving the rest as it was: mrc's in-place form
     * (the result over the rank's own block) would overwrite that block,
     * so the result comes out of place, into a block of its own. */
    int ip = sendbuf == MPI_IN_PLACE;
    data_t s, r;
    if (!data_open(&s, (void *)input(sendbuf, recvbuf), recvcount * (size_t)n,
                   type, block * (size_t)n, 1, comm, &why))
        return stranded(fn, comm, why);
    if (!data_open(&r, recvbuf, recvcount, type, block, 0, comm, &why)) {
        data_close(&s, 0, comm);
        return stranded(fn, comm, why);
    }
    void *into = data_at(&r);
    if (ip && !r.packed && !(into = malloc(block))) {
        data_close(&s, 0, comm);
        return stranded(fn, comm, "out of memory for the result");
    }
    mrc_status_t st =
        mrc_reduce_scatter(data_at(&s), into, elems, dtype, mop, c->comm);
    if (into != data_at(&r)) {
        if (st == MRC_OK)
            memcpy(r.buf, into, block);
        free(into);
    }
    data_close(&s, 0, comm);
    int rc = data_close(&r, st == MRC_OK, comm);
    if (st != MRC_OK || rc != MPI_SUCCESS)
        return failed(fn, comm, c, st, "unpacking the result failed");
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
    comm_shape(comm, &n, &rank);
    if (data_bytes(recvtype, recvcount, &rbytes, &why) &&
        (sendbuf == MPI_IN_PLACE ||
         data_bytes(sendtype, sendcount, &sbytes, &why))) {
        if (sendbuf != MPI_IN_PLACE && sbytes != rbytes)
            why = "send and receive blocks of different sizes (MPI reports "
                  "it)";
        else if (__builtin_mul_overflow(rbytes, (size_t)n, &total))
            why = "a size that mrc cannot hold";
        else if (rbytes == 0)
            why = "no data";
        else
            c = entry_of(comm, &why);
    }
    if (!c) {
        say(fn, site, "MPI", why);
        return -1;
    }
    say(fn, site, "mrc", "bytes");
    MPI_Count lb = 0, extent = 0;
    if (predefined(recvtype)) /* its extent is its size */
        extent = (MPI_Count)(rbytes / recvcount);
    else
        PMPI_Type_get_extent_x(recvtype, &lb, &extent);
    /* This rank's block of recvbuf, where in place has its input. */
    char *mine = (char *)recvbuf +
                 (MPI_Aint)rank * (MPI_Aint)recvcount * (MPI_Aint)extent;
    data_t s, r;
    if (!data_open(&r, recvbuf, recvcount * (size_t)n, recvtype, total, 0, comm,
                   &why))
        return stranded(fn, comm, why);
    int ok =
        sendbuf == MPI_IN_PLACE
            ? data_open(&s, mine, recvcount, recvtype, rbytes, 1, comm, &why)
            : data_open(&s, (void *)sendbuf, sendcount, sendtype, sbytes, 1,
                        comm, &why);
    if (!ok) {
        data_close(&r, 0, comm);
        return stranded(fn, comm, why);
    }
    /* In place and contiguous, the input is already this rank's block of
     * the result: mrc's in-place form. */
    const void *from = data_at(&s);
    mrc_status_t st =
        mrc_allgather(from, data_at(&r), rbytes, MRC_UINT8, c->comm);
    data_close(&s, 0, comm);
    int rc = data_close(&r, st == MRC_OK, comm);
    if (st != MRC_OK || rc != MPI_SUCCESS)
        return failed(fn, comm, c, st, "unpacking the result failed");
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
    comm_shape(comm, &size, &rank);
    if (root < 0 || root >= size)
        why = "a root out of range (MPI reports it)";
    else if (!data_bytes(type, count, &bytes, &why))
        ;
    else if (bytes == 0)
        why = "no data";
    else
        c = entry_of(comm, &why);
    if (!c) {
        say(fn, site, "MPI", why);
        return -1;
    }
    say(fn, site, "mrc", "bytes");
    if (predefined(type)) { /* the buffer as it is */
        mrc_status_t st =
            mrc_broadcast(buf, buf, bytes, MRC_UINT8, root, c->comm);
        return st == MRC_OK ? MPI_SUCCESS : failed(fn, comm, c, st, NULL);
    }
    data_t d;
    if (!data_open(&d, buf, count, type, bytes, rank == root, comm, &why))
        return stranded(fn, comm, why);
    mrc_status_t st = mrc_broadcast(data_at(&d), data_at(&d), bytes, MRC_UINT8,
                                    root, c->comm);
    int rc = data_close(&d, st == MRC_OK && rank != root, comm);
    if (st != MRC_OK || rc != MPI_SUCCESS)
        return failed(fn, comm, c, st, "unpacking the result failed");
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
