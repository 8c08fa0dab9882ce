/*
 * mrc-bench: allreduce between processes, nccl-tests style, beside the
 * memory-bandwidth floor measured in the same run.
 *
 *   mrc launch -n 4 -- mrc-bench -b 1M -e 64M -f 4 [-d float32] [-o sum]
 *                                [-n 20] [-w 5] [-c 1] [--json]
 *   mpirun -np 4 mrc-bench [...] [--mpi] [-r 5]
 *   mrc launch -n 2 -- mrc-bench [...] --predict PROFILE
 *   mrc launch -n 2 -- mrc-bench [...] --mem-alloc
 *
 * Under mpirun the ranks join through mrc_comm_init_mpi, and --mpi also
 * times MPI's own MPI_Allreduce (PMPI_Allreduce, so even under the
 * drop-in library it is MPI's) on the same buffers in the same run;
 * -r R times R loops of each, in turn, and reports the medians.
 *
 * --predict PROFILE (a host profile of `mrc calibrate` for the transport
 * the ranks run on: shm under mrc launch, mpi under mpirun) adds the
 * simulator's time for the very program each row's calls ran (the
 * communicator's last plan, pipelined, with the profile's node model)
 * and predicted / measured.
 *
 * --mem-alloc takes the buffers from mrc_mem_alloc (memory the peers on
 * the host map and read directly) instead of malloc.
 *
 * Every rank times its own loop; a row reports the slowest rank. The
 * floor: an allreduce of S bytes on P ranks reads every input and writes
 * every output at least once, so busbw <= membw * (P-1) / P^2, where
 * membw is what all ranks copying at once achieve (measured here, before
 * each row's warm-up, with the same processes, on at least 64 MiB each).
 *
 * Buffers are touched (and the collective run -w times, then for 20 ms
 * more) before timing: fresh pages fault on first use, and
 * idle cores run their first calls cold, which is not the collective's
 * cost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/comm_internal.h"
#include "common/common.h"
#include "reference.h"
#include "warm.h"
#include "mrc/mrc.h"
#include "mrc/profile.h"
#if MRC_HAVE_MPI
#include "api/mpi_types.h"
#include "mrc/mrc_mpi.h"
#include "clock.h"
#endif

typedef struct args {
    uint64_t min, max, factor;
    mrc_dtype_t dtype;
    mrc_op_t op;
    int iters, warmup, check, json, mpi, repeats;
    const char *predict; /* --predict PROFILE, or NULL */
    int shared;          /* --mem-alloc */
} args_t;

static int usage(const char *msg, const char *v)
{
    fprintf(stderr, "mrc-bench: %s%s%s\n", msg, v ? " " : "", v ? v : "");
    fprintf(stderr,
            "usage: mrc-bench [-b MIN] [-e MAX] [-f FACTOR] "
            "[-d TYPE] [-o OP] [-n ITERS] [-w WARMUP] [-c 0|1] [-r REPEATS] "
            "[--json] [--mpi] [--predict PROFILE] [--mem-alloc]\n");
    return 2;
}

/* A row's buffer, from malloc or (--mem-alloc) mrc_mem_alloc. */
static void *buf_alloc(const args_t *a, size_t bytes)
{
    void *p = NULL;
    if (!a->shared)
        return malloc(bytes);
    return mrc_mem_alloc(bytes, &p) == MRC_OK ? p : NULL;
}

static void buf_free(const args_t *a, void *p)
{
    if (a->shared)
        mrc_mem_free(p);
    else
        free(p);
}

static int parse(int argc, char **argv, args_t *a)
{
    *a = (args_t){1 << 20, 64 << 20, 4, MRC_FLOAT32, MRC_SUM, 20, 5,
                  1,       0,        0, 1,           NULL,    0};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t x;
        if (strcmp(o, "--json") == 0) {
            a->json = 1;
            continue;
        }
        if (strcmp(o, "--mem-alloc") == 0) {
            a->shared = 1;
            continue;
        }
        if (strcmp(o, "--mpi") == 0) {
#if MRC_HAVE_MPI
            a->mpi = 1;
            continue;
#else
            return usage("--mpi: this build has no MPI", NULL);
#endif
        }
        if (!v)
            return usage("missing value after", o);
        i++;
        if (strcmp(o, "--predict") == 0) {
            a->predict = v;
        } else if (strcmp(o, "-d") == 0) {
            if (mrc_dtype_parse(v, &a->dtype) != MRC_OK)
                return usage("unknown type", v);
        } else if (strcmp(o, "-o") == 0) {
            if (mrc_op_parse(v, &a->op) != MRC_OK)
                return usage("unknown op", v);
        } else if (mrc__parse_size(v, &x) != 0) {
            return usage("not a number:", v);
        } else if (strcmp(o, "-b") == 0) {
            a->min = x;
        } else if (strcmp(o, "-e") == 0) {
            a->max = x;
        } else if (strcmp(o, "-f") == 0 && x >= 2) {
            a->factor = x;
        } else if (strcmp(o, "-n") == 0 && x >= 1 && x < 1000000) {
            a->iters = (int)x;
        } else if (strcmp(o, "-w") == 0 && x < 1000000) {
            a->warmup = (int)x;
        } else if (strcmp(o, "-c") == 0 && x <= 1) {
            a->check = (int)x;
        } else if (strcmp(o, "-r") == 0 && x >= 1 && x <= 99) {
            a->repeats = (int)x;
        } else {
            return usage("bad option or value:", o);
        }
    }
    if (a->min == 0 || a->min > a->max)
        return usage("wants 0 < -b <= -e", NULL);
    if (a->max < mrc_dtype_size(a->dtype))
        return usage("-e is less than one element of",
                     mrc_dtype_name(a->dtype));
    return 0;
}

/* The next size of the sweep, or 0 past MAX: a size times the factor
 * could wrap past 2^64 to a small number (or to 0, forever). */
static uint64_t next_size(const args_t *a, uint64_t bytes)
{
    uint64_t next;
    if (mrc__mul_u64(bytes, a->factor, &next) != 0 || next > a->max)
        return 0;
    return next;
}

/* What the largest row takes on every rank of this host at once (two
 * buffers, and the floor's two of at least 64 MiB), against the memory
 * limit, before any of it is allocated. */
static mrc_status_t check_bench_memory(const args_t *a, int P)
{
    uint64_t floor =
        a->max > ((uint64_t)64 << 20) ? a->max : (uint64_t)64 << 20;
    uint64_t rank = mrc__sat_mul_add(a->max, 2, 2 * floor);
    char what[64];
    snprintf(what, sizeof what, "buffers for -e %llu on %d ranks",
             (unsigned long long)a->max, P);
    return mrc__check_memory(mrc__sat_mul_add(rank, (uint64_t)P, 0), what);
}

/* The slowest rank's figure (max over ranks). */
static mrc_status_t slowest(double *v, mrc_comm_t *c)
{
    return mrc_allreduce(v, v, 1, MRC_FLOAT64, MRC_MAX, c);
}

/* Bytes read plus written per second by all ranks copying at once. */
static mrc_status_t membw(size_t bytes, mrc_comm_t *c, double *out)
{
    char *src = malloc(bytes), *dst = malloc(bytes);
    if (!src || !dst) {
        free(src);
        free(dst);
        return mrc__error(MRC_ERR_NO_MEMORY,
                          "rank %d: out of memory for the floor's %zu bytes",
                          mrc_comm_rank(c), 2 * bytes);
    }
    memset(src, 1, bytes);
    memset(dst, 2, bytes);
    double best = 1e30, zero = 0;
    mrc_status_t st = MRC_OK;
    for (int t = 0; t < 3 && st == MRC_OK; t++) {
        st = mrc_allreduce(&zero, &zero, 1, MRC_FLOAT64, MRC_SUM, c);
        double t0 = mrc__ref_now_s();
        for (int r = 0; r < 4; r++)
            memcpy(dst, src, bytes);
        double dt = mrc__ref_now_s() - t0;
        if (st == MRC_OK)
            st = slowest(&dt, c);
        best = dt < best ? dt : best;
    }
    *out = 2.0 * 4 * (double)bytes * mrc_comm_size(c) / best;
    free(src);
    free(dst);
    return st;
}

/* Whether this process is rank 0 of its job, or in none: the one that
 * reports what every rank finds alike before they have joined. */
static int env_rank0(void)
{
    const char *v = getenv("MRC_RANK");
    if (!v)
        v = getenv("OMPI_COMM_WORLD_RANK");
    if (!v)
        v = getenv("PMI_RANK");
    return !v || strcmp(v, "0") == 0;
}

/* --predict FILE: the profile, which must be of the transport the ranks
 * run on (another's costs would predict another run). 2, with the
 * message on rank 0, if it cannot be read or is of another transport;
 * every rank decides alike before joining, so none waits for another. */
static int load_predict(const char *path, const char *transport,
                        mrc_profile_t *out)
{
    mrc_status_t st = mrc_profile_load(path, out);
    if (st == MRC_OK && strcmp(out->transport, transport) == 0)
        return 0;
    if (!env_rank0())
        return 2;
    if (st != MRC_OK)
        fprintf(stderr, "mrc-bench: --predict: %s\n", mrc_last_error());
    else
        fprintf(stderr,
                "mrc-bench: --predict %s: a profile of the %s transport; "
                "these ranks run on %s ('mrc calibrate --transport %s')\n",
                path, out->transport, transport, transport);
    return 2;
}

/* The simulator's time (us) for the program of c's last call, with the
 * profile's node model, pipelined as the executor runs chunks. */
static mrc_status_t predict_us(const mrc_profile_t *prof, const mrc_comm_t *c,
                               double *out)
{
    mrc_sim_config_t cfg = {.mode = MRC_SIM_PIPELINED, .profile = prof};
    mrc_sim_result_t *res = NULL;
    mrc_status_t st = mrc__comm_predict(c, &cfg, &res);
    *out = st == MRC_OK ? res->time_us : 0;
    mrc_sim_result_destroy(res);
    return st;
}

/* One timed loop of mrc's: the slowest rank's time per call. With prof
 * and pred, *pred gets the prediction for the loop's program, taken
 * before the slowest rank's figure is agreed (that call has a program of
 * its own). Every rank predicts alike, so all fail together. */
static mrc_status_t mrc_loop(const args_t *a, const void *send, void *recv,
                             size_t count, mrc_comm_t *c, double *dt,
                             const mrc_profile_t *prof, double *pred)
{
    double zero = 0;
    mrc_status_t st = mrc_allreduce(&zero, &zero, 1, MRC_FLOAT64, MRC_SUM, c);
    double t0 = mrc__ref_now_s();
    for (int i = 0; i < a->iters && st == MRC_OK; i++)
        st = mrc_allreduce(send, recv, count, a->dtype, a->op, c);
    *dt = (mrc__ref_now_s() - t0) / a->iters;
    if (st == MRC_OK && prof && pred)
        st = predict_us(prof, c, pred);
    return st == MRC_OK ? slowest(dt, c) : st;
}

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#if MRC_HAVE_MPI
/* Started by mpirun (rather than by mrc launch)? */
static int under_mpirun(void)
{
    return !getenv("MRC_JOB") && (getenv("OMPI_COMM_WORLD_SIZE") ||
                                  getenv("PMI_SIZE") || getenv("PMIX_RANK"));
}

/* One allreduce of a row's, mrc's or MPI's (bench_call_t). */
typedef struct bench_call {
    const args_t *a;
    const void *send;
    void *recv;
    size_t count;
    mrc_comm_t *c;
} bench_call_t;

static mrc_status_t mrc_call(void *ctx)
{
    const bench_call_t *b = ctx;
    return mrc_allreduce(b->send, b->recv, b->count, b->a->dtype, b->a->op,
                         b->c);
}

#if MRC_HAVE_MPI
static mrc_status_t mpi_call(void *ctx)
{
    const bench_call_t *b = ctx;
    int rc = PMPI_Allreduce(b->send, b->recv, (int)b->count,
                            mrc__mpi_type(b->a->dtype), mrc__mpi_op(b->a->op),
                            MPI_COMM_WORLD);
    return rc == MPI_SUCCESS
               ? MRC_OK
               : mrc__error(MRC_ERR_TRANSPORT, "rank %d: MPI_Allreduce failed",
                            mrc_comm_rank(b->c));
}
#endif

/* MPI's own allreduce, prepared like mrc's: a checked call, the warm-up. */
static mrc_status_t mpi_prepare(const args_t *a, const void *send, void *recv,
                                size_t count, mrc_comm_t *c, double *wrong)
{
    MPI_Datatype t = mrc__mpi_type(a->dtype);
    MPI_Op op = mrc__mpi_op(a->op);
    int n = (int)count, r = mrc_comm_rank(c), P = mrc_comm_size(c);
    int rc = PMPI_Allreduce(send, recv, n, t, op, MPI_COMM_WORLD);
    if (a->check && rc == MPI_SUCCESS)
        *wrong += (double)mrc__ref_check(recv, MRC_ALLREDUCE, count, r, P, 0,
                                         a->dtype, a->op);
    if (rc != MPI_SUCCESS)
        return mrc__error(MRC_ERR_TRANSPORT, "rank %d: MPI_Allreduce failed",
                          r);
    bench_call_t b = {a, send, recv, count, c};
    return mrc__warm_up(a->warmup, mpi_call, &b, mrc__warm_agree_comm, c);
}

/* One timed loop of MPI's: the slowest rank's time per call. */
static mrc_status_t mpi_loop(const args_t *a, const void *send, void *recv,
                             size_t count, mrc_comm_t *c, double *dt)
{
    MPI_Datatype t = mrc__mpi_type(a->dtype);
    MPI_Op op = mrc__mpi_op(a->op);
    int rc = PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = mrc__ref_now_s();
    for (int i = 0; i < a->iters && rc == MPI_SUCCESS; i++)
        rc = PMPI_Allreduce(send, recv, (int)count, t, op, MPI_COMM_WORLD);
    *dt = (mrc__ref_now_s() - t0) / a->iters;
    if (rc != MPI_SUCCESS)
        return mrc__error(MRC_ERR_TRANSPORT, "rank %d: MPI_Allreduce failed",
                          mrc_comm_rank(c));
    return slowest(dt, c);
}
#endif

int main(int argc, char **argv)
{
    args_t a;
    if (parse(argc, argv, &a))
        return 2;
    mrc_comm_t *c = NULL;
    mrc_status_t init;
    mrc_profile_t profile;
    const mrc_profile_t *prof = NULL;
    const char *transport = "shm";
#if MRC_HAVE_MPI
    int mpi = under_mpirun();
    if (mpi)
        transport = "mpi";
    if (a.mpi && !mpi) {
        fprintf(stderr, "mrc-bench: --mpi: start it with mpirun\n");
        return 2;
    }
    if (a.mpi && (mrc__mpi_type(a.dtype) == MPI_DATATYPE_NULL ||
                  mrc__mpi_op(a.op) == MPI_OP_NULL)) {
        fprintf(stderr, "mrc-bench: --mpi: MPI has no %s %s\n",
                mrc_dtype_name(a.dtype), mrc_op_name(a.op));
        return 2;
    }
#endif
    if (a.predict) {
        if (load_predict(a.predict, transport, &profile))
            return 2;
        prof = &profile;
    }
    /* Every rank's buffers from mrc_mem_alloc: the selector may read
     * them in place. */
    mrc_config_t cfg = {.shared_buffers = a.shared};
#if MRC_HAVE_MPI
    if (mpi) {
        MPI_Init(&argc, &argv);
        init = mrc_comm_init_mpi(MPI_COMM_WORLD, &cfg, &c);
    } else {
        init = mrc_comm_init_env(&c, &cfg);
    }
#else
    init = mrc_comm_init_env(&c, &cfg);
#endif
    if (init != MRC_OK) {
        fprintf(stderr, "mrc-bench: %s\n", mrc_last_error());
        return 1;
    }
    int r = mrc_comm_rank(c), P = mrc_comm_size(c);
    size_t es = mrc_dtype_size(a.dtype);
    /* Every rank decides alike, so all refuse together. */
    mrc_status_t st = check_bench_memory(&a, P);
    if (st != MRC_OK) {
        if (r == 0)
            fprintf(stderr, "mrc-bench: %s\n", mrc_last_error());
        mrc_comm_destroy(c);
#if MRC_HAVE_MPI
        if (mpi)
            MPI_Finalize();
#endif
        return 2;
    }
    if (r == 0 && !a.json && prof)
        printf("# pred: the simulator's time for the program each row ran, "
               "with %s's node model (%s)\n",
               a.predict, transport);
    if (r == 0 && !a.json) {
        printf("# mrc-bench: allreduce, %d ranks, %s %s, %d iterations "
               "(%d warm-up), median of %d\n# floor = membw*(P-1)/P^2, membw "
               "measured "
               "before each row by all ranks at once\n"
               "%12s %12s %8s %6s %10s %9s %9s %9s %7s",
               P, mrc_dtype_name(a.dtype), mrc_op_name(a.op), a.iters, a.warmup,
               a.repeats, "size", "count", "type", "redop", "time(us)", "algbw",
               "busbw", "floor", "%floor");
        if (a.mpi)
            printf(" %10s %9s %7s", "mpi(us)", "mpi_bus", "x_mpi");
        if (prof)
            printf(" %10s %9s", "pred(us)", "pred/meas");
        printf(" %8s\n", "#wrong");
    }
    if (r == 0 && a.json) {
        printf("{\"ranks\": %d, ", P);
        if (prof) {
            char *q = mrc__json_quote(a.predict);
            printf("\"transport\": \"%s\", \"profile\": %s, ", transport,
                   q ? q : "null");
            free(q);
        }
        printf("\"rows\": [");
    }
    int first = 1;
    for (uint64_t bytes = a.min; bytes != 0 && st == MRC_OK;
         bytes = next_size(&a, bytes)) {
        size_t count = (size_t)(bytes / es);
        if (count == 0)
            continue;
        char *send = buf_alloc(&a, count * es),
             *recv = buf_alloc(&a, count * es);
        if (!send || !recv) {
            fprintf(stderr,
                    "mrc-bench: rank %d: out of memory for %llu "
                    "bytes\n",
                    r, (unsigned long long)bytes);
            return 1;
        }
        mrc__ref_fill(send, MRC_ALLREDUCE, count, r, P, a.dtype, a.op);
        memset(recv, 0, count * es);
        double wrong = 0, mem = 0;
        /* The floor is DRAM's: a buffer past the caches, whatever S. It is
         * measured before the warm-up: the first calls after freeing its
         * buffers run slow for about 10 ms. */
        size_t mem_bytes =
            count * es > ((size_t)64 << 20) ? count * es : (size_t)64 << 20;
        st = membw(mem_bytes, c, &mem);
        if (st == MRC_OK && a.check) {
            st = mrc_allreduce(send, recv, count, a.dtype, a.op, c);
            wrong = (double)mrc__ref_check(recv, MRC_ALLREDUCE, count, r, P, 0,
                                           a.dtype, a.op);
            if (st == MRC_OK)
                st = mrc_allreduce(&wrong, &wrong, 1, MRC_FLOAT64, MRC_SUM, c);
        }
        bench_call_t b = {&a, send, recv, count, c};
        if (st == MRC_OK)
            st = mrc__warm_up(a.warmup, mrc_call, &b, mrc__warm_agree_comm, c);
#if MRC_HAVE_MPI
        if (st == MRC_OK && a.mpi) {
            double mwrong = 0;
            st = mpi_prepare(&a, send, recv, count, c, &mwrong);
            if (st == MRC_OK)
                st =
                    mrc_allreduce(&mwrong, &mwrong, 1, MRC_FLOAT64, MRC_SUM, c);
            wrong += mwrong;
        }
#endif
        /* -r R: R loops of each, mrc's and MPI's in turn, so that both
         * see the machine in the same state; the medians are reported. */
        double dts[99], mpi_dts[99], pred = 0;
        for (int k = 0; k < a.repeats && st == MRC_OK; k++) {
            st = mrc_loop(&a, send, recv, count, c, &dts[k], prof,
                          k == 0 ? &pred : NULL);
#if MRC_HAVE_MPI
            if (st == MRC_OK && a.mpi)
                st = mpi_loop(&a, send, recv, count, c, &mpi_dts[k]);
#endif
        }
        double dt = st == MRC_OK ? median(dts, a.repeats) : 0;
        double mpi_dt = st == MRC_OK && a.mpi ? median(mpi_dts, a.repeats) : 0;
        buf_free(&a, send);
        buf_free(&a, recv);
        if (st != MRC_OK)
            break;
        double S = (double)count * (double)es, algbw = S / dt;
        double busbw = algbw * 2.0 * (P - 1) / P;
        double floor = P > 1 ? mem * (P - 1) / ((double)P * P) : mem / 2;
        double mpi_busbw = a.mpi ? S / mpi_dt * 2.0 * (P - 1) / P : 0;
        if (r == 0 && a.json) {
            printf("%s\n  {\"bytes\": %.0f, \"time_us\": %.3f, "
                   "\"mrc_busbw_gbps\": %.3f, \"floor_gbps\": %.3f, ",
                   first ? "" : ",", S, dt * 1e6, busbw / 1e9, floor / 1e9);
            if (a.mpi)
                printf("\"mpi_time_us\": %.3f, \"mpi_busbw_gbps\": %.3f, ",
                       mpi_dt * 1e6, mpi_busbw / 1e9);
            if (prof)
                printf("\"predicted_us\": %.3f, "
                       "\"predicted_over_measured\": %.4f, ",
                       pred, dt > 0 ? pred / (dt * 1e6) : 0);
            printf("\"wrong\": %.0f}", wrong);
        } else if (r == 0) {
            printf("%12.0f %12zu %8s %6s %10.1f %9.2f %9.2f %9.2f %6.0f%%", S,
                   count, mrc_dtype_name(a.dtype), mrc_op_name(a.op), dt * 1e6,
                   algbw / 1e9, busbw / 1e9, floor / 1e9, 100 * busbw / floor);
            if (a.mpi)
                printf(" %10.1f %9.2f %6.2fx", mpi_dt * 1e6, mpi_busbw / 1e9,
                       mpi_dt / dt);
            if (prof)
                printf(" %10.1f %9.3f", pred, dt > 0 ? pred / (dt * 1e6) : 0);
            printf(" %8.0f\n", wrong);
        }
        first = 0;
        fflush(stdout);
    }
    if (r == 0 && a.json)
        printf("\n]}\n");
    if (st != MRC_OK)
        fprintf(stderr, "mrc-bench: rank %d: %s\n", r, mrc_last_error());
    mrc_comm_destroy(c);
#if MRC_HAVE_MPI
    if (mpi)
        MPI_Finalize();
#endif
    return st == MRC_OK ? 0 : 1;
}
