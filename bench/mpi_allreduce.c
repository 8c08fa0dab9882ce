/*
 * mpi-allreduce: an ordinary MPI program (nothing of mrc in it), to run
 * as it is and under the drop-in library, side by side:
 *
 *   mpirun -np 2 build/bench/mpi-allreduce
 *   mpirun -np 2 -x LD_PRELOAD=build/libmrc_mpi.so build/bench/mpi-allreduce
 *
 * Per size: microseconds per MPI_Allreduce (float sum, in its own buffers
 * touched beforehand; the slowest rank, best of 3 loops), the minor page
 * faults per call (getrusage: what the allreduce itself faults in), and a
 * checksum of the result (exact inputs, so both runs must print the same).
 * With --quick, one call a size and no warm-up: the checksums alone mean
 * anything (the tests' check, in seconds where the timed loops take tens).
 *
 * With mrc-bench's sizing options (-b MIN -e MAX -f FACTOR -n ITERS
 * -w WARMUP -r REPEATS [--json]) it times MPI alone as mrc-bench times
 * each side: per size, the warm-up, then R loops of N calls (a barrier
 * before each), the slowest rank's time per call, the median of the R
 * loops. bench/compare.sh runs it beside mrc-bench as the anchor that
 * no mrc code shares a process with (float32 sum only).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static long minor_faults(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

typedef struct sweep {
    unsigned long long min, max, factor;
    int iters, warmup, repeats, json;
} sweep_t;

/* mrc-bench's sizing options; 0 if none was given, -1 on a bad one. */
static int parse_sweep(int argc, char **argv, sweep_t *w)
{
    *w = (sweep_t){1 << 20, 64 << 20, 4, 20, 5, 1, 0};
    int given = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "--mpi") == 0) {
            w->json |= argv[i][2] == 'j';
            given = 1;
            continue;
        }
        if (i + 1 >= argc)
            return -1;
        const char *o = argv[i], *v = argv[++i];
        char *end;
        unsigned long long x = strtoull(v, &end, 10);
        if (*end == 'K' || *end == 'k')
            x <<= 10, end++;
        else if (*end == 'M' || *end == 'm')
            x <<= 20, end++;
        if (strcmp(o, "-d") == 0 || strcmp(o, "-o") == 0) {
            if (strcmp(v, o[1] == 'd' ? "float32" : "sum") &&
                strcmp(v, o[1] == 'd' ? "f32" : "sum"))
                return -1; /* float32 sum only */
        } else if (*end || end == v) {
            return -1;
        } else if (strcmp(o, "-b") == 0 && x >= 4) {
            w->min = x;
        } else if (strcmp(o, "-e") == 0) {
            w->max = x;
        } else if (strcmp(o, "-f") == 0 && x >= 2) {
            w->factor = x;
        } else if (strcmp(o, "-n") == 0 && x >= 1 && x < 1000000) {
            w->iters = (int)x;
        } else if (strcmp(o, "-w") == 0 && x < 1000000) {
            w->warmup = (int)x;
        } else if (strcmp(o, "-r") == 0 && x >= 1 && x <= 99) {
            w->repeats = (int)x;
        } else if (strcmp(o, "-c") != 0) {
            return -1;
        }
        given = 1;
    }
    return w->min > w->max ? -1 : given;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The sweep: one row per size, as mrc-bench's (bytes, time_us). */
static void run_sweep(const sweep_t *w, int rank, int size)
{
    if (rank == 0)
        printf(w->json ? "{\"ranks\": %d, \"rows\": ["
                       : "# mpi-allreduce alone: %d ranks, float32 sum\n",
               size);
    int first = 1;
    for (unsigned long long b = w->min; b <= w->max; b *= w->factor) {
        int count = (int)(b / sizeof(float));
        float *in = calloc((size_t)count + 1, sizeof *in);
        float *out = calloc((size_t)count + 1, sizeof *out);
        if (!in || !out) {
            fprintf(stderr, "mpi-allreduce: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int i = 0; i < w->warmup; i++)
            MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t[99];
        for (int r = 0; r < w->repeats; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < w->iters; i++)
                MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM,
                              MPI_COMM_WORLD);
            double dt = (MPI_Wtime() - t0) / w->iters;
            MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX,
                          MPI_COMM_WORLD);
            t[r] = dt;
        }
        qsort(t, (size_t)w->repeats, sizeof t[0], by_value);
        double med = w->repeats % 2
                         ? t[w->repeats / 2]
                         : (t[w->repeats / 2 - 1] + t[w->repeats / 2]) / 2;
        if (rank == 0 && w->json)
            printf("%s\n  {\"bytes\": %llu, \"time_us\": %.4f}",
                   first ? "" : ",", b, med * 1e6);
        else if (rank == 0)
            printf("%12llu %12.3f\n", b, med * 1e6);
        first = 0;
        free(in);
        free(out);
        if (b > w->max / w->factor)
            break;
    }
    if (rank == 0 && w->json)
        printf("\n]}\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    sweep_t w;
    int quick = argc == 2 && strcmp(argv[1], "--quick") == 0;
    int sweep = quick ? 0 : parse_sweep(argc, argv, &w);
    if (sweep < 0) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi-allreduce [--quick] | [-b MIN] "
                            "[-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] "
                            "[-r REPEATS] [--json] (float32 sum only)\n");
        MPI_Finalize();
        return 2;
    }
    if (sweep) {
        run_sweep(&w, rank, size);
        MPI_Finalize();
        return 0;
    }
    const size_t sizes[] = {8, 1 << 20, 16 << 20, 64 << 20};
    if (rank == 0)
        printf("# mpi-allreduce: %d ranks, float sum\n%12s %12s %14s %18s\n",
               size, "bytes", "time(us)", "faults/call", "checksum");
    int rc = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0] && !rc; k++) {
        int count = (int)(sizes[k] / sizeof(float));
        float *in = malloc(sizes[k]), *out = malloc(sizes[k]);
        if (!in || !out) {
            fprintf(stderr, "mpi-allreduce: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int i = 0; i < count; i++)
            in[i] = (float)((i + rank) % 17);
        memset(out, 0, sizes[k]);
        int iters = quick                  ? 1
                    : sizes[k] < 4096      ? 10000
                    : sizes[k] < (4 << 20) ? 200
                                           : 20;
        for (int i = 0; i < (quick ? 0 : 5); i++)
            MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double best = 1e30;
        long faults = 0;
        for (int t = 0; t < (quick ? 1 : 3); t++) {
            MPI_Barrier(MPI_COMM_WORLD);
            long f0 = minor_faults();
            double t0 = MPI_Wtime();
            for (int i = 0; i < iters; i++)
                MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM,
                              MPI_COMM_WORLD);
            double dt = (MPI_Wtime() - t0) / iters;
            faults = (minor_faults() - f0) / iters;
            MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX,
                          MPI_COMM_WORLD);
            best = dt < best ? dt : best;
        }
        uint64_t sum = 0;
        for (int i = 0; i < count; i++)
            sum = sum * 31 + (uint64_t)out[i];
        if (rank == 0)
            printf("%12zu %12.1f %14ld %18llx\n", sizes[k], best * 1e6, faults,
                   (unsigned long long)sum);
        free(in);
        free(out);
    }
    MPI_Finalize();
    return rc;
}
