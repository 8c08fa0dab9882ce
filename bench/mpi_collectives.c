/*
 * mpi-collectives: an ordinary MPI program (nothing of mrc in it) that
 * times the five collectives the way the field's standard suites do, to
 * run as it is and under the drop-in library:
 *
 *   mpirun -np 2 build/bench/mpi-collectives
 *   mpirun -np 2 -x LD_PRELOAD=build/libmrc_mpi.so build/bench/mpi-collectives
 *   bench/mpi_collectives.sh [-r RUNS] [-n RANKS] [-- OPTIONS]  (both, in turn)
 *
 * Per collective and size: a warm-up, a barrier, then ITERS calls on the
 * same send and receive buffers; the time a call is the loop's average,
 * and a row reports the slowest rank's (as the suites' max column).
 * Reductions are float sums (MPI_FLOAT, MPI_SUM), allgather and broadcast
 * move bytes (MPI_BYTE), as those suites count them: "size" is the bytes
 * of a rank's input (allreduce, reduce, broadcast: the vector;
 * reduce-scatter: the whole vector, MPI_Reduce_scatter_block of size / P
 * each; allgather: what each rank contributes). Sizes 4 B to 16 MiB by
 * powers of 2 (-b, -e); a size a collective cannot take (under one float,
 * or a reduce-scatter of less than one float a rank) is skipped.
 *
 * --cold: every call's buffers differ from the previous call's (a ring of
 * buffer sets spanning at least 64 MiB a rank, each touched before the
 * timing), as applications that reduce a different tensor each time do.
 *
 * --alloc-mem: the buffers come from MPI_Alloc_mem (which the drop-in
 * library serves from mrc_mem_alloc: memory its peers on the host map).
 *
 * --shapes K: the calls cycle through K counts a size (its own, then one
 * element less, ... K - 1 less; at most as many as it has elements), as
 * applications whose messages vary in length do: a library that prepares
 * each shape of call pays for it at every new one.
 *
 * After the timed loop every size is run once more on exact inputs (small
 * integers, so float sums are exact in any order) and checked element by
 * element against a sequential reduction on every rank; a wrong element
 * names the collective, size, rank and index and the run exits 1.
 *
 * Options: -c LIST (allreduce,reduce,reduce_scatter,allgather,bcast; all by
 * default), -b MIN, -e MAX (bytes, K/M suffixes), -n ITERS (default 1000;
 * sizes above 8 KiB a tenth, at least 5), -w WARMUP (default 100; above
 * 8 KiB a tenth, rounded up), --cold,
 * --alloc-mem, --shapes K, --json. Output: one row per collective and size,
 * `coll size us check`.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Past this many bytes a size takes a tenth of the calls (as the suites). */
#define LARGE_BYTES (8 << 10)

enum { ALLREDUCE, REDUCE, REDUCE_SCATTER, ALLGATHER, BCAST, NUM_COLLS };

static const char *const coll_names[NUM_COLLS] = {
    "allreduce", "reduce", "reduce_scatter", "allgather", "bcast"};

typedef struct opts {
    unsigned long long min, max;
    int iters, warmup, cold, json, shapes;
    int colls[NUM_COLLS];
    int alloc_mem;
} opts_t;

/* Bytes a rank sends and receives for a collective of `size` on p ranks
 * (0 send: the size does not apply). */
static void buffer_bytes(int coll, size_t size, int p, size_t *sb, size_t *rb)
{
    *sb = *rb = size;
    if (coll == REDUCE_SCATTER) {
        size_t block = size / sizeof(float) / (size_t)p * sizeof(float);
        *sb = block * (size_t)p;
        *rb = block;
    } else if (coll == ALLGATHER) {
        *rb = size * (size_t)p;
    }
    int reduces = coll == ALLREDUCE || coll == REDUCE || coll == REDUCE_SCATTER;
    if (reduces && *rb < sizeof(float))
        *sb = 0;
}

static int parse_size(const char *v, unsigned long long *out)
{
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    if (end == v)
        return -1;
    if (*end == 'K' || *end == 'k')
        x <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        x <<= 20, end++;
    if (*end || x == 0 || x > (1ULL << 30))
        return -1;
    *out = x;
    return 0;
}

static int parse_colls(char *list, int *colls)
{
    memset(colls, 0, NUM_COLLS * sizeof *colls);
    for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
        int found = 0;
        for (int c = 0; c < NUM_COLLS; c++)
            if (strcmp(t, coll_names[c]) == 0)
                colls[c] = found = 1;
        if (!found)
            return -1;
    }
    return 0;
}

/* The options, or -1 (with the option named on stderr by rank 0). */
static int parse(int argc, char **argv, opts_t *o, int rank)
{
    *o = (opts_t){4, 16 << 20, 1000, 100, 0, 0, 1, {1, 1, 1, 1, 1}, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long v = 0;
        int bad = 0;
        if (strcmp(a, "--cold") == 0)
            o->cold = 1;
        else if (strcmp(a, "--alloc-mem") == 0)
            o->alloc_mem = 1;
        else if (strcmp(a, "--json") == 0)
            o->json = 1;
        else if (i + 1 >= argc)
            bad = 1;
        else if (strcmp(a, "-c") == 0)
            bad = parse_colls(argv[++i], o->colls);
        else if (strcmp(a, "-b") == 0)
            bad = parse_size(argv[++i], &o->min);
        else if (strcmp(a, "-e") == 0)
            bad = parse_size(argv[++i], &o->max);
        else if (strcmp(a, "--shapes") == 0) {
            char *end;
            v = strtol(argv[++i], &end, 10);
            bad = *end || v < 1 || v > 100000;
            o->shapes = (int)v;
        } else if (strcmp(a, "-n") == 0 || strcmp(a, "-w") == 0) {
            char *end;
            v = strtol(argv[++i], &end, 10);
            bad = *end || v < (a[1] == 'n') || v > 1000000;
            *(a[1] == 'n' ? &o->iters : &o->warmup) = (int)v;
        } else
            bad = 1;
        if (bad || o->min > o->max) {
            if (rank == 0)
                fprintf(stderr,
                        "mpi-collectives: bad option or value: %s%s%s\n"
                        "usage: mpi-collectives [-c LIST] [-b MIN] "
                        "[-e MAX] [-n ITERS] [-w WARMUP] [--cold] "
                        "[--alloc-mem] [--shapes K] [--json]\n",
                        a, argv[i] != a ? " " : "",
                        argv[i] != a ? argv[i] : "");
            return -1;
        }
    }
    return 0;
}

/* Buffer sets for one size: one, or (cold) enough to span 64 MiB. */
typedef struct sets {
    int n, alloc_mem; /* alloc_mem: the buffers are MPI_Alloc_mem's */
    char **send, **recv;
} sets_t;

static char *buffer(const sets_t *s, size_t bytes)
{
    void *p = NULL;
    if (!s->alloc_mem)
        return malloc(bytes ? bytes : 1);
    return MPI_Alloc_mem((MPI_Aint)(bytes ? bytes : 1), MPI_INFO_NULL, &p) ==
                   MPI_SUCCESS
               ? p
               : NULL;
}

static void unbuffer(const sets_t *s, char *p)
{
    if (!s->alloc_mem)
        free(p);
    else if (p)
        MPI_Free_mem(p);
}

static void free_sets(sets_t *s)
{
    for (int i = 0; i < s->n; i++) {
        unbuffer(s, s->send[i]);
        unbuffer(s, s->recv[i]);
    }
    free(s->send);
    free(s->recv);
    *s = (sets_t){0, s->alloc_mem, NULL, NULL};
}

static int make_sets(sets_t *s, size_t sb, size_t rb, int cold)
{
    size_t span = (size_t)64 << 20, each = sb + rb;
    int n = cold ? (int)((span + each - 1) / each) : 1;
    n = n < 2 && cold ? 2 : n > 4096 ? 4096 : n;
    s->n = 0;
    s->send = calloc((size_t)n, sizeof *s->send);
    s->recv = calloc((size_t)n, sizeof *s->recv);
    if (!s->send || !s->recv)
        return -1;
    for (; s->n < n; s->n++) {
        s->send[s->n] = buffer(s, sb);
        s->recv[s->n] = buffer(s, rb);
        if (!s->send[s->n] || !s->recv[s->n]) {
            s->n++;
            return -1;
        }
        memset(s->send[s->n], 1, sb); /* touched: no page faults timed */
        memset(s->recv[s->n], 0, rb);
    }
    return 0;
}

/* The elements of one call of `coll` of `size` on p ranks: floats (a
 * block of them for reduce-scatter), bytes for allgather and broadcast. */
static int elements(int coll, size_t size, int p)
{
    int n = (int)(size / sizeof(float));
    return coll == REDUCE_SCATTER               ? n / p
           : coll == ALLGATHER || coll == BCAST ? (int)size
                                                : n;
}

/* One call of collective `coll` of `size`, `less` elements short, on
 * buffers s, r. */
static void call(int coll, size_t size, int less, int p, void *s, void *r)
{
    int n = elements(coll, size, p) - less;
    switch (coll) {
    case ALLREDUCE:
        MPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case REDUCE:
        MPI_Reduce(s, r, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case REDUCE_SCATTER:
        MPI_Reduce_scatter_block(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
        break;
    default: MPI_Bcast(s, n, MPI_BYTE, 0, MPI_COMM_WORLD); break;
    }
}

/* The slowest rank's average us a call (--shapes: call i is i mod K
 * elements short). */
static double timed(const opts_t *o, int coll, size_t size, int p, sets_t *sets)
{
    /* The counts of the field's collective suites (1000 calls after 100
     * up to 8 KiB, a tenth of each above): at 4 ranks on 2 cores a loop
     * of 100 small calls lasts 10-30 us, less than one wake-up of a
     * rank, and times the first calls' scheduling more than the calls. */
    int large = size > LARGE_BYTES;
    int iters = large ? o->iters / 10 : o->iters;
    int warmup = large ? (o->warmup + 9) / 10 : o->warmup;
    iters = iters < 5 ? 5 : iters;
    int k = elements(coll, size, p);
    k = o->shapes < k ? o->shapes : k;
    for (int i = 0; i < warmup; i++)
        call(coll, size, i % k, p, sets->send[i % sets->n],
             sets->recv[i % sets->n]);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
        call(coll, size, i % k, p, sets->send[i % sets->n],
             sets->recv[i % sets->n]);
    double us = (MPI_Wtime() - t0) / iters * 1e6, worst = 0;
    MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

/* Input element i of rank r: a small integer (exact sums), or a byte. */
static float value(int r, size_t i)
{
    return (float)((r * 3 + (int)(i % 11)) % 8);
}

static unsigned char byte_of(int r, size_t i)
{
    return (unsigned char)((r * 31 + (int)i * 7) & 0xff);
}

/* One call on exact inputs, checked on every rank; the first wrong
 * element, or -1 for none (agreed by all ranks). */
static long long checked(int coll, size_t size, int p, int me, char *s, char *r)
{
    size_t sb, rb, n = size / sizeof(float);
    buffer_bytes(coll, size, p, &sb, &rb);
    for (size_t i = 0; i < sb; i++)
        s[i] = 0;
    if (coll == ALLGATHER || coll == BCAST)
        for (size_t i = 0; i < size; i++)
            s[i] = (char)byte_of(me, i);
    else
        for (size_t i = 0; i < sb / sizeof(float); i++)
            ((float *)s)[i] = value(me, i);
    memset(r, 0xee, rb);
    call(coll, size, 0, p, s, coll == BCAST ? (void *)s : r);
    long long bad = -1;
    if (coll == ALLGATHER) {
        for (size_t i = 0; bad < 0 && i < rb; i++)
            if ((unsigned char)r[i] != byte_of((int)(i / size), i % size))
                bad = (long long)i;
    } else if (coll == BCAST) {
        for (size_t i = 0; bad < 0 && i < size; i++)
            if ((unsigned char)s[i] != byte_of(0, i))
                bad = (long long)i;
    } else if (coll != REDUCE || me == 0) {
        size_t first = coll == REDUCE_SCATTER ? (size_t)me * (rb / 4) : 0;
        size_t len = coll == REDUCE_SCATTER ? rb / 4 : n;
        for (size_t i = 0; bad < 0 && i < len; i++) {
            float want = 0;
            for (int k = 0; k < p; k++)
                want += value(k, first + i);
            if (((float *)r)[i] != want)
                bad = (long long)i;
        }
    }
    long long worst = bad;
    MPI_Allreduce(&bad, &worst, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (bad >= 0)
        fprintf(stderr,
                "mpi-collectives: %s of %zu bytes: rank %d element %lld "
                "is wrong\n",
                coll_names[coll], size, me, bad);
    return worst;
}

/* One collective over the sizes; 0, or 1 on a wrong result. */
static int sweep(const opts_t *o, int coll, int p, int me, int *rows)
{
    int failed = 0;
    for (unsigned long long size = o->min; size <= o->max; size *= 2) {
        size_t sb, rb;
        buffer_bytes(coll, (size_t)size, p, &sb, &rb);
        if (sb == 0)
            continue;
        sets_t sets = {.alloc_mem = o->alloc_mem};
        int ok = make_sets(&sets, sb, rb, o->cold) == 0, all = 0;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all) {
            if (me == 0)
                fprintf(stderr,
                        "mpi-collectives: no memory for %s of %llu "
                        "bytes\n",
                        coll_names[coll], size);
            free_sets(&sets);
            return 1;
        }
        double us = timed(o, coll, (size_t)size, p, &sets);
        long long bad =
            checked(coll, (size_t)size, p, me, sets.send[0], sets.recv[0]);
        failed |= bad >= 0;
        if (me == 0 && o->json)
            printf("%s\n  {\"collective\": \"%s\", \"bytes\": %llu, "
                   "\"us\": %.3f, \"check\": \"%s\"}",
                   (*rows)++ ? "," : "", coll_names[coll], size, us,
                   bad >= 0 ? "wrong" : "ok");
        else if (me == 0)
            printf("%-15s %10llu %12.3f %s\n", coll_names[coll], size, us,
                   bad >= 0 ? "WRONG" : "ok");
        fflush(stdout);
        free_sets(&sets);
    }
    return failed;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me = 0, p = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    opts_t o;
    if (parse(argc, argv, &o, me) != 0) {
        MPI_Finalize();
        return 2;
    }
    if (me == 0 && o.json)
        printf("{\"ranks\": %d, \"cold\": %s, \"shapes\": %d, \"rows\": [", p,
               o.cold ? "true" : "false", o.shapes);
    else if (me == 0)
        printf("# %d ranks, %s buffers, %d count%s a size\n%-15s %10s %12s "
               "%s\n",
               p, o.cold ? "cold (a new set each call)" : "the same", o.shapes,
               o.shapes > 1 ? "s" : "", "collective", "bytes", "us", "check");
    int failed = 0, rows = 0;
    for (int c = 0; c < NUM_COLLS; c++)
        if (o.colls[c])
            failed |= sweep(&o, c, p, me, &rows);
    if (me == 0 && o.json)
        printf("\n]}\n");
    MPI_Finalize();
    return failed ? 1 : 0;
}
