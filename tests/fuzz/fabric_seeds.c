/*
 * Writes the seed corpus of fuzz_fabric: each named pattern on a few small
 * fabrics, as the exchange files `mrc fabric --pattern FILE.json` reads.
 * Usage: fabric_seeds DIR
 */
#include <stdio.h>
#include <stdlib.h>

#include "fabric_internal.h"
#include "mrc/mrc.h"

static int write_exchange(const char *path, const mrc_exchange_t *x, int tiles,
                          int columns)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\"tiles\": %d, \"columns\": %d, \"exchange\": [", tiles,
            columns);
    for (size_t i = 0; i < x->entries; i++) {
        fprintf(f, "%s\n  {\"source\": %d, \"destinations\": [", i ? "," : "",
                x->source[i]);
        for (size_t k = x->first[i]; k < x->first[i + 1]; k++)
            fprintf(f, "%s%d", k > x->first[i] ? ", " : "", x->dests[k]);
        fprintf(f, "], \"bytes\": %llu}", (unsigned long long)x->bytes[i]);
    }
    fprintf(f, "]}\n");
    return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    static const char *const patterns[] = {"neighbour", "broadcast", "random",
                                           "all-to-all"};
    static const int sizes[][3] = {{4, 2, 4}, {9, 3, 8}, {16, 4, 12}};
    if (argc != 2) {
        fprintf(stderr, "usage: fabric_seeds DIR\n");
        return 2;
    }
    for (size_t p = 0; p < sizeof patterns / sizeof *patterns; p++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            mrc_exchange_t *x = NULL;
            char path[4096];
            if (mrc_exchange_pattern(patterns[p], sizes[s][0], sizes[s][1], 1,
                                     (uint64_t)sizes[s][2], &x) != MRC_OK) {
                fprintf(stderr, "fabric_seeds: %s\n", mrc_last_error());
                return 1;
            }
            snprintf(path, sizeof path, "%s/%s-%d.json", argv[1], patterns[p],
                     sizes[s][0]);
            int bad = write_exchange(path, x, sizes[s][0], sizes[s][1]);
            mrc_exchange_destroy(x);
            if (bad) {
                perror(path);
                return 1;
            }
        }
    return 0;
}
