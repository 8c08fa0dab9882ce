/*
 * libFuzzer entry for the program image reader (`mrc compile -o` writes
 * images, `mrc compile --load` reads them). Each input is tried twice: as
 * it is, which exercises the header checks, and with its header made
 * right for the bytes that follow (magic, version, payload length and
 * checksum), so that mutations reach the tables and the checker behind
 * the checksum. An accepted image must save and load back to the same
 * bytes. Built with `make fuzz` (clang).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mrc/mrc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The image layout of src/program/image.c: "MRCPROG\0", version (4),
 * header bytes (4), payload bytes (8), FNV-1a of the payload (8). */
enum { HEADER_BYTES = 32, IMAGE_VERSION = 1 };

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
    char *listing = NULL;
    if (mrc_program_load(data, size, &p) == MRC_OK) {
        if (mrc_program_save(p, &i1, &n1) != MRC_OK ||
            mrc_program_load(i1, n1, &back) != MRC_OK ||
            mrc_program_save(back, &i2, &n2) != MRC_OK || n1 != n2 ||
            memcmp(i1, i2, n1) != 0 ||
            mrc_program_listing(p, &listing) != MRC_OK)
            abort();
    } else if (p != NULL || mrc_last_error()[0] == '\0') {
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
