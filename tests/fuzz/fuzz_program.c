/*
 * libFuzzer entry for the program image reader (`mrc compile -o` writes
 * images, `mrc compile --load` reads them). Each input is tried twice: as
 * it is, which exercises the header checks, and with its header made
 * right for the bytes that follow (magic, version, payload length and
 * checksum), so that mutations reach the tables and the checker behind
 * the checksum. An accepted image must save and load back to the same
 * bytes, list every node's local program, and give its topology (the
 * origin's, checked against the program) or say why not. Built with
 * `make fuzz` (clang).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mrc/mrc.h"
#include "program/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The image layout of src/program/image.c: "MRCPROG\0", version (5),
 * header bytes (4), payload bytes (8), FNV-1a of the payload (8). */
enum { HEADER_BYTES = 32, IMAGE_VERSION = 5 };

static void put_le(uint8_t *d, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        d[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t fnv1a(const uint8_t *d, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= d[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void try_load(const uint8_t *data, size_t size)
{
    mrc_program_t *p = NULL, *back = NULL;
    void *i1 = NULL, *i2 = NULL;
    size_t n1 = 0, n2 = 0;
    char *listing = NULL, *local = NULL;
    mrc__image_origin_t origin;
    mrc_topo_t *topo = NULL;
    if (mrc__program_load_origin(data, size, &p, &origin) == MRC_OK) {
        if (mrc_program_save(p, &i1, &n1) != MRC_OK ||
            mrc_program_load(i1, n1, &back) != MRC_OK ||
            mrc_program_save(back, &i2, &n2) != MRC_OK || n1 != n2 ||
            memcmp(i1, i2, n1) != 0 ||
            mrc_program_listing(p, &listing) != MRC_OK)
            abort();
        /* (every node for small programs; the first and last else) */
        for (int u = 0; u < p->num_nodes; u++) {
            if (p->num_nodes > 16 && u > 0 && u < p->num_nodes - 1)
                continue;
            for (int json = 0; json < 2; json++) {
                if (mrc__program_node_listing(p, u, json, &local) != MRC_OK)
                    abort();
                mrc_free(local);
            }
        }
        if (mrc__image_topology(p, &origin, &topo) != MRC_OK &&
            (topo != NULL || mrc_last_error()[0] == '\0'))
            abort();
        mrc_topo_destroy(topo);
        mrc__image_origin_free(&origin);
    } else if (p != NULL || mrc_last_error()[0] == '\0' || origin.topology ||
               origin.strategy || origin.source) {
        abort(); /* a refusal must leave no object and say why */
    }
    mrc_free(listing);
    mrc_free(i1);
    mrc_free(i2);
    mrc_program_destroy(back);
    mrc_program_destroy(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    try_load(data, size);
    if (size < HEADER_BYTES)
        return 0;
    uint8_t *fixed = malloc(size);
    if (!fixed)
        return 0;
    memcpy(fixed, data, size);
    memcpy(fixed, "MRCPROG", 8);
    put_le(fixed + 8, IMAGE_VERSION, 4);
    put_le(fixed + 12, HEADER_BYTES, 4);
    put_le(fixed + 16, size - HEADER_BYTES, 8);
    put_le(fixed + 24, fnv1a(fixed + HEADER_BYTES, size - HEADER_BYTES), 8);
    if (memcmp(fixed, data, HEADER_BYTES) != 0)
        try_load(fixed, size);
    free(fixed);
    return 0;
}
