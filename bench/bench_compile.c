/*
 * Compile time and program size against the number of nodes: the shared
 * code must keep its length, the tables grow linearly, and compiling (the
 * code and the tables, without the checker) must stay under 10 ms at 4096
 * nodes. The checker's time is printed beside it: it runs every message of
 * every node, so it grows with N^2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mrc/mrc.h"
#include "program/program_internal.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

int main(void)
{
    const char *specs[] = {"ring:8",      "ring:64",      "ring:512",
                           "ring:4096",   "torus2d:2,4",  "torus2d:8,8",
                           "torus2d:16,32", "torus2d:64,64"};
    printf("%-14s %6s %6s %8s %12s %12s %12s %10s\n", "topology", "nodes",
           "code", "streams", "table(B)", "image(B)", "compile(ms)",
           "check(ms)");
    for (int i = 0; i < 8; i++) {
        mrc_topo_t *t = NULL;
        mrc_embedding_t *e = NULL;
        if (mrc_topo_create(specs[i], &t) != MRC_OK ||
            mrc_embed_create(t, NULL, &e) != MRC_OK) {
            fprintf(stderr, "%s\n", mrc_last_error());
            return 1;
        }
        mrc_compile_config_t cc = {.collective = MRC_ALLREDUCE,
                                   .count = 1 << 26,
                                   .dtype = MRC_FLOAT32};
        mrc_program_t *p = NULL;
        double best = 1e300;
        for (int rep = 0; rep < 5; rep++) {
            double t0 = now_ms();
            if (mrc__program_build(e, &cc, -1, &p) != MRC_OK) {
                fprintf(stderr, "%s\n", mrc_last_error());
                return 1;
            }
            double dt = now_ms() - t0;
            best = dt < best ? dt : best;
            if (rep < 4)
                mrc_program_destroy(p);
        }
        double t0 = now_ms();
        if (mrc_program_check(p) != MRC_OK) {
            fprintf(stderr, "%s\n", mrc_last_error());
            return 1;
        }
        double check = now_ms() - t0;
        mrc_program_info_t info;
        mrc_program_info(p, &info);
        printf("%-14s %6d %6d %8d %12zu %12zu %12.3f %10.1f\n", specs[i],
               info.num_nodes, info.code_instructions, info.num_streams,
               info.table_bytes, info.image_bytes, best, check);
        fflush(stdout);
        mrc_program_destroy(p);
        mrc_embed_destroy(e);
        mrc_topo_destroy(t);
    }
    return 0;
}
