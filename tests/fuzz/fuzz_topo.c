/*
 * libFuzzer entry for everything that parses a topology: the input is tried
 * as a topology file and as a generator spec. Whatever is accepted must
 * write and read back to the same text. Built with `make fuzz` (clang).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mrc/mrc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const mrc_topo_t *t)
{
    char *j1 = NULL, *j2 = NULL;
    mrc_topo_t *back = NULL;
    if (mrc_topo_to_json(t, &j1) != MRC_OK ||
        mrc_topo_parse_json(j1, strlen(j1), "again", &back) != MRC_OK ||
        mrc_topo_to_json(back, &j2) != MRC_OK || strcmp(j1, j2) != 0)
        abort();
    mrc_free(j1);
    mrc_free(j2);
    mrc_topo_destroy(back);
}

/* 1 if every number in spec is at most 64 or past 2^31 (refused before
 * anything is built). Generators build what they are asked: full:2687 is
 * 3.6 million links, a second in a plain build and 40 in this one, so
 * sizes in between are the memory limits' business, not the parser's. */
static int small_sizes(const char *spec)
{
    for (const char *c = spec; *c; c++) {
        if (*c < '0' || *c > '9')
            continue;
        unsigned long long v = 0;
        int digits = 0;
        for (; *c >= '0' && *c <= '9'; c++, digits++)
            v = digits < 19 ? v * 10 + (unsigned)(*c - '0') : v;
        if (v > 64 && v <= (1ull << 31) && digits < 19)
            return 0;
        if (!*c)
            break;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mrc_topo_t *t = NULL;
    if (mrc_topo_parse_json((const char *)data, size, "fuzz", &t) == MRC_OK) {
        check_round_trip(t);
        mrc_topo_destroy(t);
    } else if (t != NULL || mrc_last_error()[0] == '\0') {
        abort(); /* a refusal must leave no object and say why */
    }
    if (size < 64) {
        char spec[64];
        memcpy(spec, data, size);
        spec[size] = '\0';
        /* Keep generated sizes small so the fuzzer stays fast (full:1730
         * has 1.5 million links, a JSON text of about 100 MB). */
        if (strlen(spec) == size && !strpbrk(spec, "/") && small_sizes(spec) &&
            mrc_topo_generate(spec, &t) == MRC_OK) {
            if (mrc_topo_num_nodes(t) <= 4096 && mrc_topo_num_links(t) <= 65536)
                check_round_trip(t);
            mrc_topo_destroy(t);
        }
    }
    return 0;
}
