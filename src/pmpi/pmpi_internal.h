/*
 * Inside the drop-in MPI library: what its files share.
 *   pmpi.c       the MPI collectives it defines, and their routes
 *   cache.c      one mrc communicator per MPI communicator
 *   datatypes.c  what mrc can take: types, ops, a rank's data as bytes
 *   report.c     saying which path a call took, and failures
 * The lookups a call makes every time (its communicator's entry, its
 * datatype) are inline here, remembered per thread: a small call's
 * own work in this layer is a few dozen instructions.
 */
#ifndef MRC_PMPI_INTERNAL_H
#define MRC_PMPI_INTERNAL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "mrc/mrc.h"
#include "mrc/mrc_mpi.h"

typedef struct cached {
    struct cached *next, *prev;
    MPI_Comm of;
    mrc_comm_t *comm; /* NULL: mrc could not be set up; MPI does it all */
    int dropped;      /* a call failed in mrc: MPI does the rest */
    int size, rank;   /* of `of`, asked once */
} cached_t;

/* ---- cache.c ------------------------------------------------------------ */

/* The last communicator a thread's call took to mrc, and its entry: the
 * next call on it skips MPI's attribute lookup (and the mutex of the
 * key), which cost a small call more than mrc's own work. A communicator
 * freed anywhere bumps the generation, so no thread trusts an entry that
 * may be gone or a handle that may now name another communicator. */
typedef struct mrc__pmpi_route {
    MPI_Comm comm;
    cached_t *entry;
    uint64_t generation;
} mrc__pmpi_route_t;
extern uint64_t mrc__pmpi_generation;
extern __thread __attribute__((tls_model("initial-exec")))
mrc__pmpi_route_t mrc__pmpi_last_route;

static inline cached_t *mrc__pmpi_route_hit(MPI_Comm comm)
{
    const mrc__pmpi_route_t *r = &mrc__pmpi_last_route;
    if (r->entry && r->comm == comm &&
        r->generation ==
            __atomic_load_n(&mrc__pmpi_generation, __ATOMIC_ACQUIRE))
        return r->entry;
    return NULL;
}

/* The size of comm and this rank's place in it: from the last route's
 * entry when comm is its communicator (no call into MPI), else asked. */
static inline void mrc__pmpi_comm_shape(MPI_Comm comm, int *size, int *rank)
{
    const cached_t *hit = mrc__pmpi_route_hit(comm);
    if (hit) {
        *size = hit->size;
        *rank = hit->rank;
        return;
    }
    PMPI_Comm_size(comm, size);
    PMPI_Comm_rank(comm, rank);
}

/* Whether MRC_MPI_VERBOSE asks for the report of each call site's route
 * (read once): inline, as every call asks it (a function call and the
 * report's frame cost a small reduce 30 instructions of its 1750). */
extern int mrc__pmpi_verbose_flag; /* -1: not read yet */
int mrc__pmpi_verbose_read(void);
static inline int mrc__pmpi_verbose(void)
{
    int on = __atomic_load_n(&mrc__pmpi_verbose_flag, __ATOMIC_RELAXED);
    return on >= 0 ? on : mrc__pmpi_verbose_read();
}
/* The mrc communicator of comm, made on first use (collective: every
 * rank of comm gets here in the same call, as every rank takes the same
 * route). NULL: MPI does the call; *why says why. */
cached_t *mrc__pmpi_entry_of(MPI_Comm comm, const char **why);
/* Every mrc communicator freed (before MPI_Finalize). */
void mrc__pmpi_forget_all(void);

/* ---- datatypes.c -------------------------------------------------------- */

/* The mrc dtype of a predefined MPI type mrc reduces, or -1. */
int mrc__pmpi_reducible_type(MPI_Datatype t);

/* The same, remembered for the last type a thread asked about (a call
 * asks three times, and the compiler tests every handle each time). A
 * pure function of the handle: only predefined handles, which never
 * change meaning, map to a dtype, and a derived type's handle, reused
 * or not, is never one of them. */
typedef struct mrc__pmpi_type_memo {
    MPI_Datatype type;
    int dtype, known;
} mrc__pmpi_type_memo_t;
extern __thread __attribute__((tls_model("initial-exec")))
mrc__pmpi_type_memo_t mrc__pmpi_last_type;

static inline int mrc__pmpi_reducible(MPI_Datatype t)
{
    mrc__pmpi_type_memo_t *m = &mrc__pmpi_last_type;
    if (m->known && m->type == t)
        return m->dtype;
    m->type = t;
    m->dtype = mrc__pmpi_reducible_type(t);
    m->known = 1;
    return m->dtype;
}

/* A predefined type mrc takes as it is: a reducible one, or bytes. */
static inline int mrc__pmpi_predefined(MPI_Datatype t)
{
    return mrc__pmpi_reducible(t) >= 0 || t == MPI_BYTE || t == MPI_CHAR;
}

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

/* ---- datatypes.c ---- */

int mrc__pmpi_data_bytes(MPI_Datatype t, size_t count, size_t *bytes,
                         const char **why);
int mrc__pmpi_reducible_data(MPI_Datatype t, size_t count, MPI_Op op,
                             mrc_dtype_t *dtype, mrc_op_t *mop, size_t *elems,
                             const char **why);
int mrc__pmpi_data_open(data_t *d, void *buf, size_t count, MPI_Datatype t,
                        size_t bytes, int in, MPI_Comm comm, const char **why);
void *mrc__pmpi_data_at(const data_t *d);
int mrc__pmpi_data_close(data_t *d, int out, MPI_Comm comm);

/* ---- report.c ---- */

/* With MRC_MPI_VERBOSE, the route a call site took (path "mrc" or
 * "MPI") and why, once a site (rank 0); inline, as every call says it. */
void mrc__pmpi_report(const char *fn, const void *site, const char *path,
                      const char *why);
static inline void mrc__pmpi_say(const char *fn, const void *site,
                                 const char *path, const char *why)
{
    if (mrc__pmpi_verbose())
        mrc__pmpi_report(fn, site, path, why);
}
int mrc__pmpi_failed(const char *fn, MPI_Comm comm, cached_t *c,
                     mrc_status_t st, const char *why);
int mrc__pmpi_stranded(const char *fn, MPI_Comm comm, const char *why);

#define SITE __builtin_return_address(0)

#endif /* MRC_PMPI_INTERNAL_H */
