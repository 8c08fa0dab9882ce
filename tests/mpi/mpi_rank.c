/*
 * One rank of the MPI tests, started by mpirun:
 *
 *   mpi_rank api      mrc_comm_init_mpi on MPI_COMM_WORLD, on the halves
 *                     of a split and on a dup: every collective, dtype and
 *                     op, counts 0, 1, odd and large, in place and not,
 *                     checked element by element against the sequential
 *                     reduction and, for types MPI has, against MPI's own
 *                     result (PMPI_, so never through mrc)
 *   mpi_rank pmpi     under LD_PRELOAD=libmrc_mpi.so: MPI_Allreduce,
 *                     _Reduce_scatter_block, _Reduce_scatter, _Allgather,
 *                     _Bcast and _Reduce with MPI's types and ops (those
 *                     mrc takes and those it hands back), every root, in
 *                     place and not, on world, split and dup, each result
 *                     compared byte for byte with the PMPI_ call's
 *   mpi_rank big      under the preload, 2^31 + 2^16 int8 elements: an
 *                     MPI_Bcast of a contiguous type of 2^16 (as MPI-3
 *                     programs write counts above 2^31) against PMPI_Bcast,
 *                     and an in-place mrc_allreduce through
 *                     mrc_comm_init_mpi against the sum
 *
 *   mpi_rank pairs    under the preload, the pair types (MPI_DOUBLE_INT,
 *                     ...: holes inside, gaps between elements) through
 *                     every intercepted call, packed and compared with the
 *                     PMPI_ call's
 *   mpi_rank mixed    under the preload, MPI_Bcast and MPI_Allgather where
 *                     ranks pass different datatypes of one type signature
 *                     (a vector on rank 0, contiguous ints elsewhere): the
 *                     job completes with MPI's results
 *   mpi_rank rsb      under the preload, an in-place
 *                     MPI_Reduce_scatter_block leaves the receive buffer
 *                     past the result as MPI leaves it
 *   mpi_rank errors   under the preload with $MRC_TIMEOUT=1 and
 *                     MPI_ERRORS_RETURN: an allreduce that rank 0 enters
 *                     2 s late fails, and the calls after it still work
 *   mpi_rank fatal    the same failure under MPI_ERRORS_ARE_FATAL: the job
 *                     ends, saying why
 *   mpi_rank progress rank 0 posts an 8 MiB MPI_Irecv from rank 1 and
 *                     enters a collective, rank 1 sends it with a blocking
 *                     MPI_Send first: mrc's waits must let MPI progress
 *   mpi_rank late     MPI_Bcast whose root enters 3 s late
 *   mpi_rank dies     rank 1 is killed while rank 0 waits in MPI_Bcast
 *
 * Prints one line per rank; exits 0 only when everything held.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/mpi_types.h"
#include "reference.h"
#include "mrc/mrc.h"
#include "mrc/mrc_mpi.h"
#include "support/sweep.h"

static long cases, wrong, failed;
/* hier mode: the calls hier does not do must be refused as not applying
 * (counted here), and only those. */
static int hier_mode;
static long refused;

static void report(int rank, const char *what)
{
    if (failed + wrong <= 5)
        fprintf(stderr, "rank %d: %s\n", rank, what);
}

/* ---- api ---------------------------------------------------------------- */

/* MPI's result for the same inputs, out of place. */
static int mpi_call(mrc_collective_t c, const void *s, void *r, int count,
                    MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm)
{
    switch (c) {
    case MRC_ALLREDUCE: return PMPI_Allreduce(s, r, count, t, op, comm);
    case MRC_REDUCE_SCATTER:
        return PMPI_Reduce_scatter_block(s, r, count, t, op, comm);
    case MRC_ALLGATHER: return PMPI_Allgather(s, count, t, r, count, t, comm);
    case MRC_REDUCE: return PMPI_Reduce(s, r, count, t, op, root, comm);
    default: {
        int rank, size;
        PMPI_Comm_rank(comm, &rank);
        PMPI_Type_size(t, &size);
        if (rank == root)
            memcpy(r, s, (size_t)count * (size_t)size);
        return PMPI_Bcast(r, count, t, root, comm);
    }
    }
}

static void api_case(mrc_comm_t *comm, MPI_Comm mcomm, mrc_collective_t c,
                     size_t count, mrc_dtype_t d, mrc_op_t op, int ip, int root)
{
    int r = mrc_comm_rank(comm), n = mrc_comm_size(comm);
    size_t es = mrc_dtype_size(d);
    size_t in = c == MRC_REDUCE_SCATTER ? count * (size_t)n : count;
    size_t out = c == MRC_ALLGATHER ? count * (size_t)n : count;
    size_t big = (in > out ? in : out) + 1;
    char *a = malloc(big * es), *b = malloc(big * es), *m = malloc(big * es);
    char *s = malloc(big * es);
    if (!a || !b || !m || !s) {
        failed++;
        goto out;
    }
    memset(a, 0xab, big * es);
    memset(b, 0xcd, big * es);
    char *send, *recv;
    mrc__ref_place(c, ip, count, es, r, a, b, &send, &recv);
    mrc__ref_fill(send, c, count, r, n, d, op);
    memcpy(s, send, in * es); /* MPI's input, before mrc overwrites it */
    cases++;
    char what[160];
    snprintf(what, sizeof what, "%s %s %s count %zu%s root %d",
             mrc_collective_name(c), mrc_dtype_name(d), mrc_op_name(op), count,
             ip ? " in place" : "", root);
    mrc_status_t st = mrc__ref_call(c, send, recv, count, d, op, root, comm);
    if (st == MRC_ERR_UNSUPPORTED && hier_mode &&
        (c == MRC_REDUCE_SCATTER || c == MRC_ALLGATHER) &&
        strstr(mrc_last_error(), "hier does not apply")) {
        refused++;
        goto out;
    }
    if (st != MRC_OK) {
        failed++;
        report(r, mrc_last_error());
        goto out;
    }
    size_t w = mrc__ref_check(recv, c, count, r, n, root, d, op);
    if (w) {
        wrong += (long)w;
        report(r, what);
    }
    MPI_Datatype t = mrc__mpi_type(d);
    MPI_Op mop = mrc__mpi_op(op);
    int reducing = c != MRC_ALLGATHER && c != MRC_BROADCAST;
    if (t == MPI_DATATYPE_NULL || (reducing && mop == MPI_OP_NULL) ||
        count > INT32_MAX)
        goto out;
    memset(m, 0xcd, big * es);
    if (mpi_call(c, s, m, (int)count, t, mop, root, mcomm) != MPI_SUCCESS) {
        failed++;
        report(r, "PMPI call failed");
        goto out;
    }
    if ((c != MRC_REDUCE || r == root) && memcmp(recv, m, out * es) != 0) {
        wrong++;
        snprintf(what + strlen(what), sizeof what - strlen(what),
                 ": differs from MPI");
        report(r, what);
    }
out:
    free(a);
    free(b);
    free(m);
    free(s);
}

/* The communicators of an api sweep. */
typedef struct api_comms {
    mrc_comm_t *comm;
    MPI_Comm mcomm;
} api_comms_t;

static int api_keep(const sweep_case_t *c, void *ctx)
{
    (void)ctx;
    if (!c->reducing && c->op != MRC_SUM)
        return 0;
    return !(c->kind == 4 &&
             !(c->dtype == MRC_FLOAT32 || c->dtype == MRC_INT8) &&
             c->op != MRC_SUM);
}

static int api_run(const sweep_case_t *c, void *ctx)
{
    const api_comms_t *ac = ctx;
    int n = mrc_comm_size(ac->comm);
    api_case(ac->comm, ac->mcomm, c->coll, c->count, c->dtype, c->op,
             c->in_place, (c->kind + (int)c->dtype + (int)c->op) % n);
    return 0;
}

static void api_sweep(mrc_comm_t *comm, MPI_Comm mcomm)
{
    int n = mrc_comm_size(comm);
    const size_t counts[] = {0, 1, (size_t)n + 2, 1001, 300007};
    api_comms_t ac = {comm, mcomm};
    sweep_plan_t plan = {.counts = counts,
                         .ncounts = 5,
                         .keep = api_keep,
                         .run = api_run,
                         .ctx = &ac};
    sweep_cases(&plan);
}

static int api(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comms[3];
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
    /* halves in reverse order: ranks renumbered within each */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &comms[1]);
    comms[2] = MPI_COMM_WORLD;
    for (int i = 0; i < 3; i++) {
        mrc_comm_t *comm = NULL;
        if (mrc_comm_init_mpi(comms[i], NULL, &comm) != MRC_OK) {
            fprintf(stderr, "rank %d: %s\n", rank, mrc_last_error());
            failed++;
            continue;
        }
        api_sweep(comm, comms[i]);
        mrc_comm_destroy(comm);
    }
    MPI_Comm_free(&comms[0]);
    MPI_Comm_free(&comms[1]);
    /* Refusals name what is wrong, on every rank alike. */
    mrc_comm_t *comm = NULL;
    cases++;
    if (mrc_comm_init_mpi(MPI_COMM_NULL, NULL, &comm) != MRC_ERR_INVALID_ARG ||
        !strstr(mrc_last_error(), "MPI_COMM_NULL"))
        failed++, report(rank, "MPI_COMM_NULL was not refused");
    cases++;
    mrc_config_t bad = {.topology = "ring:1000"};
    if (mrc_comm_init_mpi(MPI_COMM_WORLD, &bad, &comm) == MRC_OK ||
        !strstr(mrc_last_error(), "rank 0 failed"))
        failed++, report(rank, "a wrong topology was not refused by all");
    printf("rank %d of %d: %ld cases, %ld wrong elements, %ld failed\n", rank,
           size, cases, wrong, failed);
    return wrong || failed;
}

/* The hier family forced on the world communicator of ranks on hosts
 * ($MRC_MPI_HOSTS): every call against MPI's, reduce-scatter and
 * allgather refused as hier does not do them. */
static int hier(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mrc_config_t cfg = {.algo = "hier"};
    mrc_comm_t *comm = NULL;
    hier_mode = 1;
    if (mrc_comm_init_mpi(MPI_COMM_WORLD, &cfg, &comm) != MRC_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, mrc_last_error());
        failed++;
    } else {
        api_sweep(comm, MPI_COMM_WORLD);
        mrc_comm_destroy(comm);
    }
    printf("rank %d of %d: hier: %ld cases, %ld wrong elements, %ld "
           "failed, %ld refused\n",
           rank, size, cases, wrong, failed, refused);
    return wrong || failed || refused == 0;
}

/* ---- pmpi --------------------------------------------------------------- */

enum {
    ALLREDUCE,
    RS_BLOCK,
    RS,
    RS_UNEQUAL,
    ALLGATHER,
    BCAST,
    REDUCE,
    NUM_CALLS
};
static const char *call_name[] = {"Allreduce",      "Reduce_scatter_block",
                                  "Reduce_scatter", "Reduce_scatter(unequal)",
                                  "Allgather",      "Bcast",
                                  "Reduce"};

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    for (int i = 0; i < *len; i++)
        ((float *)inout)[i] += ((float *)in)[i];
}

/* One call through MPI_ (mrc, if it takes it) or PMPI_ (MPI); `block` is
 * the per-rank count. */
static int pcall(int pmpi, int which, const void *s, void *r, int block,
                 MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm)
{
    int n;
    MPI_Comm_size(comm, &n);
    int counts[64];
    for (int i = 0; i < n && i < 64; i++)
        counts[i] = which == RS_UNEQUAL ? block + (i % 2) : block;
    switch (which) {
    case ALLREDUCE:
        return (pmpi ? PMPI_Allreduce : MPI_Allreduce)(s, r, block, t, op,
                                                       comm);
    case RS_BLOCK:
        return (pmpi ? PMPI_Reduce_scatter_block
                     : MPI_Reduce_scatter_block)(s, r, block, t, op, comm);
    case RS:
    case RS_UNEQUAL:
        return (pmpi ? PMPI_Reduce_scatter : MPI_Reduce_scatter)(s, r, counts,
                                                                 t, op, comm);
    case ALLGATHER:
        return (pmpi ? PMPI_Allgather : MPI_Allgather)(
            s, s == MPI_IN_PLACE ? 0 : block, t, r, block, t, comm);
    case BCAST: return (pmpi ? PMPI_Bcast : MPI_Bcast)(r, block, t, root, comm);
    default:
        return (pmpi ? PMPI_Reduce : MPI_Reduce)(s, r, block, t, op, root,
                                                 comm);
    }
}

/* Small integers that every type holds and every op keeps exact. */
static void fill(void *buf, size_t bytes, MPI_Datatype t, int rank, int salt)
{
    int size;
    MPI_Type_size(t, &size);
    unsigned char *p = buf;
    for (size_t i = 0; i < bytes; i++)
        p[i] = 0;
    if (t == MPI_FLOAT || t == MPI_DOUBLE) {
        for (size_t i = 0; i < bytes / (size_t)size; i++) {
            double v = (double)((rank + (int)i + salt) % 3);
            if (t == MPI_FLOAT)
                ((float *)buf)[i] = (float)v;
            else
                ((double *)buf)[i] = v;
        }
        return;
    }
    /* integers: the low byte of each element, 0..2 (little-endian) */
    for (size_t i = 0; i < bytes / (size_t)size; i++)
        p[i * (size_t)size] = (unsigned char)((rank + (int)i + salt) % 3);
}

static void pmpi_case(MPI_Comm comm, int which, MPI_Datatype t,
                      MPI_Datatype base, MPI_Op op, int block, int ip, int root)
{
    int rank, n;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &n);
    MPI_Aint lb, extent;
    MPI_Type_get_extent(t, &lb, &extent);
    size_t es = (size_t)extent; /* a vector's extent is more than its size */
    size_t total = (size_t)block * (size_t)n + (size_t)n; /* unequal: + n */
    size_t bytes = (total + 1) * es;
    char *in = malloc(bytes), *a = malloc(bytes), *b = malloc(bytes);
    char *sa = malloc(bytes), *sb = malloc(bytes);
    if (!in || !a || !b || !sa || !sb) {
        failed++;
        goto out;
    }
    (void)base;
    fill(in, bytes, t, rank, which);
    memset(a, 0x5a, bytes);
    memset(b, 0x5a, bytes);
    memcpy(sa, in, bytes);
    memcpy(sb, in, bytes);
    const void *s1 = sa, *s2 = sb;
    if (ip) {
        /* MPI_IN_PLACE: the input in recvbuf, where each call wants it */
        if (which == ALLGATHER) {
            memcpy(a + (size_t)rank * (size_t)block * es, in,
                   (size_t)block * es);
            memcpy(b + (size_t)rank * (size_t)block * es, in,
                   (size_t)block * es);
        } else if (which != BCAST) {
            memcpy(a, in, bytes);
            memcpy(b, in, bytes);
        }
        if (which != REDUCE || rank == root)
            s1 = s2 = MPI_IN_PLACE;
    }
    if (which == BCAST && rank == root) {
        memcpy(a, in, (size_t)block * es);
        memcpy(b, in, (size_t)block * es);
    }
    cases++;
    int rc1 = pcall(0, which, s1, a, block, t, op, root, comm);
    int rc2 = pcall(1, which, s2, b, block, t, op, root, comm);
    char what[200];
    char tname[MPI_MAX_OBJECT_NAME] = "", oname[32] = "";
    int len;
    MPI_Type_get_name(t, tname, &len);
    snprintf(oname, sizeof oname, "%s",
             op == MPI_SUM    ? "sum"
             : op == MPI_PROD ? "prod"
             : op == MPI_MIN  ? "min"
             : op == MPI_MAX  ? "max"
             : op == MPI_BAND ? "band"
                              : "user");
    snprintf(what, sizeof what, "MPI_%s %s %s block %d%s root %d (%d ranks)",
             call_name[which], tname[0] ? tname : "derived", oname, block,
             ip ? " in place" : "", root, n);
    if (rc1 != MPI_SUCCESS || rc2 != MPI_SUCCESS) {
        failed++;
        report(rank, what);
        goto out;
    }
    /* What MPI defines: the output (in place, the rest of recvbuf is
     * MPI's scratch); out of place, nothing past it may change. */
    size_t blk = (size_t)block * es, cmp = blk;
    if (which == RS_UNEQUAL)
        cmp = blk + (size_t)(rank % 2) * es;
    else if (which == ALLGATHER)
        cmp = blk * (size_t)n;
    else if (which == REDUCE && rank != root)
        cmp = 0;
    int bad = memcmp(a, b, cmp) != 0;
    for (size_t i = cmp; i < bytes && !ip && !bad; i++)
        bad = (unsigned char)a[i] != 0x5a;
    if (bad) {
        wrong++;
        report(rank, what);
    }
out:
    free(in);
    free(a);
    free(b);
    free(sa);
    free(sb);
}

static void pmpi_sweep(MPI_Comm comm, MPI_Datatype contig, MPI_Datatype vec,
                       MPI_Op user)
{
    int n, thin = sweep_is_thin();
    MPI_Comm_size(comm, &n);
    MPI_Datatype types[] = {MPI_FLOAT,
                            MPI_DOUBLE,
                            MPI_INT,
                            MPI_UNSIGNED,
                            MPI_LONG,
                            MPI_UNSIGNED_LONG,
                            MPI_LONG_LONG,
                            MPI_INT8_T,
                            MPI_UINT8_T,
                            MPI_SIGNED_CHAR,
                            MPI_UNSIGNED_CHAR,
                            MPI_SHORT,
                            contig,
                            vec};
    MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND, user};
    const int blocks[] = {0, 1, 3, 1001, 70001};
    int nt = sizeof types / sizeof types[0], no = sizeof ops / sizeof ops[0];
    for (int which = 0; which < NUM_CALLS; which++)
        for (int ti = 0; ti < nt; ti++)
            for (int oi = 0; oi < no; oi++)
                for (int k = 0; k < 5; k++)
                    for (int ip = 0; ip < 2; ip++) {
                        MPI_Datatype t = types[ti];
                        MPI_Op op = ops[oi];
                        int reducing = which != ALLGATHER && which != BCAST;
                        if (!reducing && oi > 0)
                            continue;
                        /* MPI's own rules: BAND on integers only, the user
                         * op on floats, no reductions of vectors */
                        int isfloat =
                            t == MPI_FLOAT || t == MPI_DOUBLE || t == contig;
                        if (reducing && op == MPI_BAND && isfloat)
                            continue;
                        if (reducing && op == user && t != MPI_FLOAT)
                            continue;
                        if (reducing && (t == vec || t == contig) && op != user)
                            continue; /* MPI refuses these */
                        if (reducing && t == contig)
                            continue; /* the user op is for MPI_FLOAT */
                        if (k == 4 && ti > 1 && ti != 7)
                            continue; /* the large block on a sample */
                        if (k == 4 && thin && (ti != 0 || oi > 0))
                            continue; /* thinner, as the sweep's (sweep.h) */
                        if (which == RS_UNEQUAL && ip)
                            continue;
                        int roots = which == REDUCE || which == BCAST ? n : 1;
                        for (int root = 0; root < roots; root++)
                            if (root == 0 || k == 2)
                                pmpi_case(comm, which, t, t, op, blocks[k], ip,
                                          root);
                    }
}

static int preloaded(void)
{
    return dlsym(RTLD_DEFAULT, "MPI_Allreduce") !=
           dlsym(RTLD_DEFAULT, "PMPI_Allreduce");
}

static int pmpi(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!preloaded()) {
        fprintf(stderr, "mpi_rank pmpi: libmrc_mpi.so is not preloaded\n");
        return 1;
    }
    MPI_Datatype contig, vec;
    MPI_Type_contiguous(3, MPI_FLOAT, &contig);
    MPI_Type_commit(&contig);
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Op user;
    MPI_Op_create(user_sum, 1, &user);
    MPI_Comm comms[3];
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &comms[1]);
    comms[2] = MPI_COMM_WORLD;
    for (int i = 0; i < 3; i++)
        pmpi_sweep(comms[i], contig, vec, user);
    MPI_Comm_free(&comms[0]);
    MPI_Comm_free(&comms[1]);
    MPI_Type_free(&contig);
    MPI_Type_free(&vec);
    MPI_Op_free(&user);
    printf("rank %d of %d: %ld cases, %ld wrong elements, %ld failed\n", rank,
           size, cases, wrong, failed);
    return wrong || failed;
}

/* ---- big ---------------------------------------------------------------- */

/* Fills p[0..n) with period[i % len], the period copied over and over
 * (with a division an element, fill and check, the test took 84 s; so,
 * 57 s, most of it the calls' own). */
static void fill_periodic(int8_t *p, size_t n, const int8_t *period, size_t len)
{
    size_t have = len < n ? len : n;
    memcpy(p, period, have);
    while (have < n) {
        size_t k = have < n - have ? have : n - have;
        memcpy(p + have, p, k); /* p[have + j] = p[j]: have is a multiple
                                   of len */
        have += k;
    }
}

/* 2^31 + 2^16 one-byte elements: past what an int count holds. */
static int big(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!preloaded()) {
        fprintf(stderr, "mpi_rank big: libmrc_mpi.so is not preloaded\n");
        return 1;
    }
    const int unit = 1 << 16, count = (1 << 15) + 1;
    size_t bytes = (size_t)unit * (size_t)count;
    int8_t *a = malloc(bytes), *b = malloc(bytes);
    if (!a || !b) {
        fprintf(stderr, "rank %d: no memory for 2 x %zu bytes\n", rank, bytes);
        return 1;
    }
    /* MPI_Bcast of a contiguous type of 2^16 int8 from the last rank, as
     * an MPI-3 program writes it, against PMPI_Bcast. */
    MPI_Datatype t;
    MPI_Type_contiguous(unit, MPI_INT8_T, &t);
    MPI_Type_commit(&t);
    int root = size - 1;
    int8_t period[251];
    for (int i = 0; i < 251; i++)
        period[i] = rank == root ? (int8_t)i : 0;
    fill_periodic(a, bytes, period, 251);
    memcpy(b, a, bytes);
    cases++;
    if (MPI_Bcast(a, count, t, root, MPI_COMM_WORLD) != MPI_SUCCESS ||
        PMPI_Bcast(b, count, t, root, MPI_COMM_WORLD) != MPI_SUCCESS)
        failed++;
    else
        wrong += memcmp(a, b, bytes) != 0;
    MPI_Type_free(&t);
    /* mrc_allreduce in place on as many int8, through mrc_comm_init_mpi,
     * every element against the sum of the ranks' inputs. */
    free(b);
    mrc_comm_t *comm;
    cases++;
    if (mrc_comm_init_mpi(MPI_COMM_WORLD, NULL, &comm) != MRC_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, mrc_last_error());
        failed++;
    } else {
        /* element i: (i + rank) % 7 - 3; the sum's period is 7 too */
        int8_t mine[7], sum[7];
        for (int i = 0; i < 7; i++) {
            mine[i] = (int8_t)((i + rank) % 7 - 3);
            int expect = 0;
            for (int r = 0; r < size; r++)
                expect += (i + r) % 7 - 3;
            sum[i] = (int8_t)expect;
        }
        fill_periodic(a, bytes, mine, 7);
        if (mrc_allreduce(a, a, bytes, MRC_INT8, MRC_SUM, comm) != MRC_OK) {
            fprintf(stderr, "rank %d: %s\n", rank, mrc_last_error());
            failed++;
        }
        for (size_t i = 0, j = 0; i < bytes && !failed; i++) {
            wrong += a[i] != sum[j];
            j = j == 6 ? 0 : j + 1;
        }
        mrc_comm_destroy(comm);
    }
    printf("rank %d of %d: %ld cases, %ld wrong elements, %ld failed "
           "(%zu elements)\n",
           rank, size, cases, wrong, failed, bytes);
    free(a);
    return wrong || failed;
}

/* ---- trust: what MPI programs may do that mrc once got wrong ----------- */

static int trust_done(const char *mode)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("rank %d of %d: %s: %ld cases, %ld wrong elements, %ld failed\n",
           rank, size, mode, cases, wrong, failed);
    return wrong || failed;
}

/* The data of count elements of t at buf, packed (no holes, no gaps). */
static char *packed(const void *buf, int count, MPI_Datatype t, int *bytes)
{
    int size = 0, pos = 0;
    PMPI_Pack_size(count, t, MPI_COMM_WORLD, &size);
    char *p = malloc((size_t)size + 1);
    if (p)
        PMPI_Pack(buf, count, t, p, size, &pos, MPI_COMM_WORLD);
    *bytes = pos;
    return p;
}

/* a and b hold the same count elements of t (their data, not holes). */
static int same_data(const void *a, const void *b, int count, MPI_Datatype t)
{
    if (t == MPI_LONG_DOUBLE_INT) {
        /* by value: a long double's padding is whatever MPI's scratch held */
        struct {
            long double v;
            int i;
        } x, y;
        for (int k = 0; k < count; k++) {
            memcpy(&x, (const char *)a + (size_t)k * sizeof x, sizeof x);
            memcpy(&y, (const char *)b + (size_t)k * sizeof y, sizeof y);
            if (x.v != y.v || x.i != y.i)
                return 0;
        }
        return 1;
    }
    int na, nb;
    char *pa = packed(a, count, t, &na), *pb = packed(b, count, t, &nb);
    int same = pa && pb && na == nb && memcmp(pa, pb, (size_t)na) == 0;
    free(pa);
    free(pb);
    return same;
}

/* Element i of a pair type: a value that ties across ranks now and then
 * (so MAXLOC must pick the lower index) and the index (rank-dependent). */
static void pair_fill(void *buf, int count, MPI_Datatype t, int rank, int salt)
{
    MPI_Aint lb, extent;
    MPI_Type_get_extent(t, &lb, &extent);
    memset(buf, 0x5a, (size_t)count * (size_t)extent);
    for (int i = 0; i < count; i++) {
        char *e = (char *)buf + (size_t)i * (size_t)extent;
        int v = (rank * 7 + i * 3 + salt) % 5, idx = rank * 100 + i;
/* The value at the start, the index where C puts it after a T. */
#define PAIR(T)                                                                \
    do {                                                                       \
        struct pair_##T {                                                      \
            T v;                                                               \
            int i;                                                             \
        };                                                                     \
        T x = (T)v;                                                            \
        memcpy(e, &x, sizeof x);                                               \
        memcpy(e + offsetof(struct pair_##T, i), &idx, sizeof idx);            \
    } while (0)
        typedef long double long_double;
        if (t == MPI_DOUBLE_INT)
            PAIR(double);
        else if (t == MPI_LONG_INT)
            PAIR(long);
        else if (t == MPI_SHORT_INT)
            PAIR(short);
        else if (t == MPI_2INT)
            PAIR(int);
        else if (t == MPI_FLOAT_INT)
            PAIR(float);
        else
            PAIR(long_double);
#undef PAIR
    }
}

static void pair_case(MPI_Datatype t, int which, MPI_Op op, int count, int ip,
                      int root)
{
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Aint lb, extent;
    MPI_Type_get_extent(t, &lb, &extent);
    int total = count * n + n; /* unequal blocks: up to one more each */
    size_t bytes = (size_t)total * (size_t)extent;
    char *in = malloc(bytes), *a = malloc(bytes), *b = malloc(bytes);
    if (!in || !a || !b) {
        failed++;
        goto out;
    }
    pair_fill(in, total, t, rank, which);
    memset(a, 0x5a, bytes);
    memset(b, 0x5a, bytes);
    const void *s1 = in, *s2 = in;
    if (which == BCAST) {
        if (rank == root) {
            memcpy(a, in, bytes);
            memcpy(b, in, bytes);
        }
    } else if (ip) {
        if (which == ALLGATHER) {
            size_t blk = (size_t)count * (size_t)extent;
            memcpy(a + (size_t)rank * blk, in, blk);
            memcpy(b + (size_t)rank * blk, in, blk);
        } else {
            memcpy(a, in, bytes);
            memcpy(b, in, bytes);
        }
        if (which != REDUCE || rank == root)
            s1 = s2 = MPI_IN_PLACE;
    }
    cases++;
    int rc1 = pcall(0, which, s1, a, count, t, op, root, MPI_COMM_WORLD);
    int rc2 = pcall(1, which, s2, b, count, t, op, root, MPI_COMM_WORLD);
    char tname[MPI_MAX_OBJECT_NAME] = "";
    int len;
    MPI_Type_get_name(t, tname, &len);
    char what[200];
    snprintf(what, sizeof what, "MPI_%s %s %s count %d%s root %d",
             call_name[which], tname,
             which == ALLGATHER || which == BCAST ? "-"
             : op == MPI_MAXLOC                   ? "maxloc"
                                                  : "minloc",
             count, ip ? " in place" : "", root);
    if (rc1 != MPI_SUCCESS || rc2 != MPI_SUCCESS) {
        failed++;
        report(rank, what);
        goto out;
    }
    int out = which == ALLGATHER                ? count * n
              : which == REDUCE && rank != root ? 0
              : which == RS_UNEQUAL             ? count + rank % 2
                                                : count;
    if (!same_data(a, b, out, t)) {
        wrong++;
        report(rank, what);
    }
out:
    free(in);
    free(a);
    free(b);
}

static int pairs(void)
{
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Datatype types[] = {MPI_DOUBLE_INT, MPI_LONG_INT,  MPI_SHORT_INT,
                            MPI_2INT,       MPI_FLOAT_INT, MPI_LONG_DOUBLE_INT};
    const int counts[] = {1, 2, 5, 1001};
    for (int ti = 0; ti < 6; ti++)
        for (int which = 0; which < NUM_CALLS; which++)
            for (int k = 0; k < 4; k++)
                for (int ip = 0; ip < 2; ip++)
                    for (int oi = 0; oi < 2; oi++) {
                        int moving = which == ALLGATHER || which == BCAST;
                        if ((moving && oi) || (which == RS_UNEQUAL && ip) ||
                            (which == BCAST && ip))
                            continue;
                        int roots = which == REDUCE || which == BCAST ? n : 1;
                        for (int root = 0; root < roots; root++)
                            pair_case(types[ti], which,
                                      oi ? MPI_MINLOC : MPI_MAXLOC, counts[k],
                                      ip, root);
                    }
    return trust_done("pairs");
}

/* Rank 0 passes `count` ints as one vector (every other int of its
 * buffer), the others as count MPI_INTs: one type signature. */
static void mixed_case(int which, int count, int root)
{
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int total = which == ALLGATHER ? count * n : count;
    int *a = malloc((size_t)(2 * total + 2) * sizeof *a);
    int *b = malloc((size_t)(2 * total + 2) * sizeof *b);
    int *s = malloc((size_t)(count + 1) * sizeof *s);
    if (!a || !b || !s) {
        failed++;
        goto out;
    }
    for (int i = 0; i < 2 * total + 2; i++)
        a[i] = b[i] = -1;
    for (int i = 0; i < count; i++)
        s[i] = rank * 1000 + i;
    MPI_Datatype vec; /* total ints, every other one */
    MPI_Type_vector(total, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Datatype rt = rank == 0 ? vec : MPI_INT;
    int rcount = rank == 0 ? 1 : total;
    int stride = rank == 0 ? 2 : 1;
    if (which == BCAST && rank == root)
        for (int i = 0; i < count; i++)
            a[i * stride] = s[i];
    cases++;
    int rc = MPI_SUCCESS;
    if (which == BCAST)
        rc = MPI_Bcast(a, rcount, rt, root, MPI_COMM_WORLD);
    else if (which == ALLGATHER) {
        /* rank 0 receives into a vector of n*count ints: its blocks */
        MPI_Datatype blk;
        MPI_Type_vector(count, 1, 2, MPI_INT, &blk);
        MPI_Type_create_resized(blk, 0, (MPI_Aint)(2 * count * sizeof(int)),
                                &rt);
        MPI_Type_free(&blk);
        if (rank == 0) {
            MPI_Type_commit(&rt);
            rc = MPI_Allgather(s, count, MPI_INT, a, 1, rt, MPI_COMM_WORLD);
            MPI_Type_free(&rt);
        } else {
            MPI_Type_free(&rt);
            rc = MPI_Allgather(s, count, MPI_INT, a, count, MPI_INT,
                               MPI_COMM_WORLD);
        }
    }
    MPI_Type_free(&vec);
    if (rc != MPI_SUCCESS) {
        failed++;
        goto out;
    }
    /* what MPI gives, all in MPI_INTs */
    if (which == BCAST) {
        if (rank == root)
            memcpy(b, s, (size_t)count * sizeof *b);
        PMPI_Bcast(b, count, MPI_INT, root, MPI_COMM_WORLD);
    } else
        PMPI_Allgather(s, count, MPI_INT, b, count, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < total; i++)
        if (a[i * stride] != b[i]) {
            wrong++;
            break;
        }
out:
    free(a);
    free(b);
    free(s);
}

static int mixed(void)
{
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    /* The moving calls only: Open MPI refuses MPI_SUM on a derived type,
     * and with a user op its own allreduce picks its algorithm by count,
     * so ranks whose counts differ hang in MPI alone. */
    const int counts[] = {1, 7, 1000, 100000};
    for (int k = 0; k < 4; k++)
        for (int root = 0; root < n; root++) {
            mixed_case(BCAST, counts[k], root);
            if (root == 0)
                mixed_case(ALLGATHER, counts[k], 0);
        }
    return trust_done("mixed");
}

/* In place, MPI takes the input from recvbuf and writes the rank's block
 * at its start: the rest stays as it was (PMPI_ shows it). */
static int rsb(void)
{
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const int blocks[] = {1, 3, 1000, 70001};
    for (int k = 0; k < 4; k++) {
        int block = blocks[k];
        size_t len = (size_t)block * (size_t)n + 64;
        int *a = malloc(len * sizeof *a), *b = malloc(len * sizeof *b);
        if (!a || !b) {
            failed++;
            free(a);
            free(b);
            continue;
        }
        for (size_t i = 0; i < len; i++)
            a[i] = b[i] = (int)(i % 1000) + rank * 7 + 0x5a5a0000;
        cases++;
        if (MPI_Reduce_scatter_block(MPI_IN_PLACE, a, block, MPI_INT, MPI_SUM,
                                     MPI_COMM_WORLD) != MPI_SUCCESS ||
            PMPI_Reduce_scatter_block(MPI_IN_PLACE, b, block, MPI_INT, MPI_SUM,
                                      MPI_COMM_WORLD) != MPI_SUCCESS)
            failed++;
        else if (memcmp(a, b, len * sizeof *a) != 0) {
            wrong++;
            size_t i = 0;
            while (a[i] == b[i])
                i++;
            fprintf(stderr,
                    "rank %d: block %d: recvbuf differs from MPI's at int "
                    "%zu\n",
                    rank, block, i);
        }
        free(a);
        free(b);
    }
    return trust_done("rsb");
}

/* An allreduce of 1 MiB (two steps through shared memory) that rank 0
 * enters 2 s late, with $MRC_TIMEOUT=1: both ranks time out in it. */
static int late_allreduce(int *out)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    enum { N = 1 << 18 };
    int *in = malloc(N * sizeof *in);
    for (int i = 0; i < N; i++)
        in[i] = i;
    if (rank == 0)
        sleep(2);
    int rc = MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    free(in);
    return rc;
}

static int errors(void)
{
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x = 1, sum = 0;
    cases++;
    if (MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) !=
            MPI_SUCCESS ||
        sum != n)
        failed++;
    int *out = malloc((1 << 18) * sizeof *out);
    cases++;
    if (late_allreduce(out) == MPI_SUCCESS) {
        fprintf(stderr, "rank %d: the late allreduce did not fail\n", rank);
        failed++;
    }
    free(out);
    /* A failed call does not leave a dead communicator. */
    for (int i = 0; i < 3; i++) {
        x = rank + i;
        sum = -1;
        cases++;
        int rc = MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: allreduce %d after it: error %d\n", rank,
                    i, rc);
            failed++;
        } else
            wrong += sum != n * (n - 1) / 2 + n * i;
        int v = rank == 0 ? 42 + i : 0;
        cases++;
        if (MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
            failed++;
        else
            wrong += v != 42 + i;
    }
    return trust_done("errors");
}

static int fatal(void)
{
    int x = 1, sum = 0; /* the communicator is made (in step) first */
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int *out = malloc((1 << 18) * sizeof *out);
    late_allreduce(out);
    free(out);
    cases++;
    failed++; /* not reached: the error ends the job */
    return trust_done("fatal");
}

/* Rank 0 waits for rank 1's 8 MiB message while it is in a collective;
 * rank 1 sends it, blocking, before its own. MPI alone completes. */
static int progress(void)
{
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    enum { BYTES = 8 << 20 };
    char *msg = malloc(BYTES);
    int *big = malloc((1 << 18) * sizeof *big);
    if (!msg || !big)
        return 1;
    for (int phase = 0; phase < 3; phase++) {
        int x = rank + 1, sum = 0, v = rank == 0 ? 7 : 0;
        /* the communicator exists before the message is in flight */
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        memset(msg, rank == 1 ? phase + 1 : 0, BYTES);
        MPI_Request req = MPI_REQUEST_NULL;
        if (rank == 0)
            MPI_Irecv(msg, BYTES, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &req);
        else if (rank == 1)
            MPI_Send(msg, BYTES, MPI_BYTE, 0, 5, MPI_COMM_WORLD);
        int rc;
        cases++;
        if (phase == 0) { /* one step through shared memory */
            rc = MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            wrong += rc == MPI_SUCCESS && sum != n * (n + 1) / 2;
        } else if (phase == 1) { /* two steps */
            for (int i = 0; i < 1 << 18; i++)
                big[i] = rank;
            rc = MPI_Allreduce(MPI_IN_PLACE, big, 1 << 18, MPI_INT, MPI_SUM,
                               MPI_COMM_WORLD);
            wrong += rc == MPI_SUCCESS && big[12345] != n * (n - 1) / 2;
        } else { /* the program's path */
            rc = MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
            wrong += rc == MPI_SUCCESS && v != 7;
        }
        failed += rc != MPI_SUCCESS;
        if (rank == 0) {
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            wrong += msg[0] != phase + 1 || msg[BYTES - 1] != phase + 1;
        }
    }
    free(msg);
    free(big);
    return trust_done("progress");
}

/* MPI_Bcast whose root enters 3 s after the others. */
static int late(void)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int x = 1, sum = 0, v = rank == 0 ? 99 : 0;
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        sleep(3);
    cases++;
    if (MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
        failed++;
    else
        wrong += v != 99;
    return trust_done("late");
}

/* Rank 1 is killed while rank 0 waits for its MPI_Bcast: with no timeout,
 * mrc still sees the dead peer and says so. Rank 0 holds off mpirun's
 * SIGTERM (SIGKILL follows later), so that mrc, not mpirun, is first. */
static int dies(void)
{
    int rank, x = 1, sum = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 1) {
        usleep(300000);
        raise(SIGKILL);
    }
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, NULL);
    cases++;
    if (rank == 0 &&
        MPI_Bcast(&x, 1, MPI_INT, 1, MPI_COMM_WORLD) == MPI_SUCCESS)
        failed++; /* the error handler ends the job before this */
    return trust_done("dies");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rc = 2;
    if (argc > 1 && strcmp(argv[1], "api") == 0)
        rc = api();
    else if (argc > 1 && strcmp(argv[1], "pmpi") == 0)
        rc = pmpi();
    else if (argc > 1 && strcmp(argv[1], "hier") == 0)
        rc = hier();
    else if (argc > 1 && strcmp(argv[1], "big") == 0)
        rc = big();
    else if (argc > 1 && strcmp(argv[1], "pairs") == 0)
        rc = pairs();
    else if (argc > 1 && strcmp(argv[1], "mixed") == 0)
        rc = mixed();
    else if (argc > 1 && strcmp(argv[1], "rsb") == 0)
        rc = rsb();
    else if (argc > 1 && strcmp(argv[1], "errors") == 0)
        rc = errors();
    else if (argc > 1 && strcmp(argv[1], "fatal") == 0)
        rc = fatal();
    else if (argc > 1 && strcmp(argv[1], "progress") == 0)
        rc = progress();
    else if (argc > 1 && strcmp(argv[1], "late") == 0)
        rc = late();
    else if (argc > 1 && strcmp(argv[1], "dies") == 0)
        rc = dies();
    else
        fprintf(stderr,
                "usage: mpi_rank api | hier | pmpi | big | pairs | mixed | "
                "rsb | errors | fatal | progress | late | dies\n");
    MPI_Finalize();
    return rc;
}
