/*
 * libFuzzer entry for the fabric exchange reader (`mrc fabric --pattern
 * FILE.json`). An accepted exchange on a small fabric is also scheduled
 * and simulated, and every packet must arrive at its cycle; big ones are
 * only read, so that the fuzzer stays fast. Built with `make fuzz`
 * (clang).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fabric_internal.h"
#include "mrc/mrc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { SMALL_TILES = 64, SMALL_PACKETS = 4096 };

/* Schedules and simulates x on a fabric of the file's size (or just big
 * enough for its tiles) when that is small. */
static void run_small(const mrc_exchange_t *x, int tiles, int columns)
{
    int top = 0;
    uint64_t packets = 0;
    for (size_t i = 0; i < x->entries; i++) {
        if (x->source[i] > top)
            top = x->source[i];
        for (size_t k = x->first[i]; k < x->first[i + 1]; k++)
            if (x->dests[k] > top)
                top = x->dests[k];
        packets += (x->bytes[i] + MRC_FABRIC_DEFAULT_PACKET_BYTES - 1) /
                   MRC_FABRIC_DEFAULT_PACKET_BYTES;
    }
    if (tiles == 0)
        tiles = top + 1;
    if (columns == 0)
        columns = tiles < 4 ? tiles : 4;
    if (tiles > SMALL_TILES || packets > SMALL_PACKETS)
        return;
    mrc_fabric_config_t cfg = {tiles, columns, 0};
    mrc_fabric_t *f = NULL;
    mrc_fabric_schedule_t *s = NULL;
    mrc_fabric_stats_t stats;
    if (mrc_fabric_create(&cfg, &f) != MRC_OK) {
        if (mrc_last_error()[0] == '\0')
            abort();
        return;
    }
    if (mrc_fabric_schedule(f, x, &s) == MRC_OK) {
        if (mrc_fabric_simulate(f, s, &stats) != MRC_OK ||
            stats.delivered != stats.deliveries || stats.misdelivered ||
            stats.late || stats.missed)
            abort();
    } else if (s != NULL || mrc_last_error()[0] == '\0') {
        abort();
    }
    mrc_fabric_schedule_destroy(s);
    mrc_fabric_destroy(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mrc_exchange_t *x = NULL;
    int tiles = 0, columns = 0;
    if (mrc_exchange_parse_json((const char *)data, size, "fuzz", &x, &tiles,
                                &columns) == MRC_OK) {
        if (x == NULL)
            abort();
        run_small(x, tiles, columns);
    } else if (x != NULL || mrc_last_error()[0] == '\0') {
        abort(); /* a refusal must leave no object and say why */
    }
    mrc_exchange_destroy(x);
    return 0;
}
