/* The fabric's geometry and exchanges: built by hand, from named
 * patterns, or read from JSON (see mrc/fabric.h). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "fabric/fabric_internal.h"

/* Ample for any chip, small enough that tiles x columns never overflows. */
#define MAX_TILES (1 << 20)

/* ---- geometry ----------------------------------------------------------- */

mrc_status_t mrc_fabric_create(const mrc_fabric_config_t *cfg,
                               mrc_fabric_t **out)
{
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_fabric_create: out is NULL");
    *out = NULL;
    static const mrc_fabric_config_t defaults = {0};
    if (!cfg)
        cfg = &defaults;
    int tiles = cfg->tiles ? cfg->tiles : MRC_FABRIC_DEFAULT_TILES;
    int columns = cfg->columns ? cfg->columns : MRC_FABRIC_DEFAULT_COLUMNS;
    int pb =
        cfg->packet_bytes ? cfg->packet_bytes : MRC_FABRIC_DEFAULT_PACKET_BYTES;
    if (tiles < 1 || tiles > MAX_TILES)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "a fabric has 1 to %d tiles, not %d", MAX_TILES,
                          tiles);
    if (!cfg->columns && columns > tiles)
        columns = tiles;
    if (columns < 1 || columns > tiles)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%d columns for %d tiles (1 to %d)", columns, tiles,
                          tiles);
    if (pb < 1)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "a packet carries at least 1 byte, not %d", pb);
    mrc_fabric_t *f = calloc(1, sizeof *f);
    if (!f)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    f->tiles = tiles;
    f->rows = (tiles + columns - 1) / columns;
    /* With ceil(T/C) rows, fewer columns may be needed (10 tiles in 4
     * columns of 3: the fourth holds 1; 9 in 4: the fourth is empty). */
    f->columns = (tiles + f->rows - 1) / f->rows;
    f->packet_bytes = pb;
    *out = f;
    return MRC_OK;
}

void mrc_fabric_destroy(mrc_fabric_t *f)
{
    free(f);
}

int mrc_fabric_tiles(const mrc_fabric_t *f)
{
    return f->tiles;
}

int mrc_fabric_columns(const mrc_fabric_t *f)
{
    return f->columns;
}

int mrc_fabric_rows(const mrc_fabric_t *f)
{
    return f->rows;
}

int mrc_fabric_packet_bytes(const mrc_fabric_t *f)
{
    return f->packet_bytes;
}

int mrc_fabric_column_of(const mrc_fabric_t *f, int tile)
{
    return mrc__fabric_col(f, tile);
}

int mrc_fabric_row_of(const mrc_fabric_t *f, int tile)
{
    return tile % f->rows;
}

int mrc_fabric_delay(const mrc_fabric_t *f, int source, int dest)
{
    int d = mrc__fabric_col(f, source) - mrc__fabric_col(f, dest);
    return mrc__fabric_ns(f, source) + (d < 0 ? -d : d) +
           mrc__fabric_ns(f, dest);
}

unsigned mrc__fabric_flags(const mrc_fabric_t *f, int source, const int *dests,
                           size_t n)
{
    int cs = mrc__fabric_col(f, source);
    unsigned flags = 0;
    for (size_t i = 0; i < n; i++) {
        int c = mrc__fabric_col(f, dests[i]);
        flags |= c > cs ? MRC_FABRIC_EAST : c < cs ? MRC_FABRIC_WEST : 0;
    }
    return flags;
}

/* ---- exchanges ---------------------------------------------------------- */

mrc_status_t mrc_exchange_create(mrc_exchange_t **out)
{
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_exchange_create: out is NULL");
    *out = calloc(1, sizeof **out);
    if (!*out || !((*out)->first = calloc(1, sizeof *(*out)->first))) {
        free(*out);
        *out = NULL;
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    return MRC_OK;
}

void mrc_exchange_destroy(mrc_exchange_t *x)
{
    if (!x)
        return;
    free(x->source);
    free(x->bytes);
    free(x->first);
    free(x->dests);
    free(x);
}

size_t mrc_exchange_entries(const mrc_exchange_t *x)
{
    return x->entries;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64, bytes = 0;
    while (c < need) {
        if (mrc__mul_size(c, 2, &c) != 0)
            return -1;
    }
    if (mrc__mul_size(c, size, &bytes) != 0)
        return -1;
    void *q = realloc(*p, bytes);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

mrc_status_t mrc_exchange_add(mrc_exchange_t *x, int source, const int *dests,
                              int num_dests, uint64_t bytes)
{
    if (!x || (!dests && num_dests > 0))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_exchange_add: NULL argument");
    size_t e = x->entries;
    if (source < 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "entry %zu: source %d is not a tile", e, source);
    if (num_dests < 1)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "entry %zu: no destinations (source %d)", e, source);
    if (bytes == 0)
        return mrc__error(MRC_ERR_INVALID_ARG, "entry %zu: 0 bytes (source %d)",
                          e, source);
    if (e == x->cap_entries) {
        size_t c = e ? 2 * e : 64;
        int *so = realloc(x->source, c * sizeof *so);
        if (so)
            x->source = so;
        uint64_t *by = so ? realloc(x->bytes, c * sizeof *by) : NULL;
        if (by)
            x->bytes = by;
        size_t *fi = by ? realloc(x->first, (c + 1) * sizeof *fi) : NULL;
        if (!fi)
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        x->first = fi;
        x->cap_entries = c;
    }
    if (grow((void **)&x->dests, &x->cap_dests,
             x->num_dests + (size_t)num_dests, sizeof *x->dests))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    int *d = x->dests + x->num_dests;
    memcpy(d, dests, (size_t)num_dests * sizeof *d);
    qsort(d, (size_t)num_dests, sizeof *d, cmp_int);
    for (int i = 0; i < num_dests; i++) {
        if (d[i] < 0)
            return mrc__error(MRC_ERR_INVALID_ARG,
                              "entry %zu: destination %d is not a tile", e,
                              d[i]);
        if (d[i] == source)
            return mrc__error(MRC_ERR_INVALID_ARG,
                              "entry %zu: tile %d sends to itself", e, source);
        if (i > 0 && d[i] == d[i - 1])
            return mrc__error(MRC_ERR_INVALID_ARG,
                              "entry %zu: destination %d appears twice", e,
                              d[i]);
    }
    x->source[e] = source;
    x->bytes[e] = bytes;
    x->num_dests += (size_t)num_dests;
    x->first[e + 1] = x->num_dests;
    x->entries = e + 1;
    return MRC_OK;
}

int mrc__exchange_has_dest(const mrc_exchange_t *x, size_t entry, int t)
{
    const int *d = x->dests + x->first[entry];
    size_t lo = 0, hi = x->first[entry + 1] - x->first[entry];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d[mid] == t)
            return 1;
        if (d[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* ---- named patterns ----------------------------------------------------- */

/* splitmix64: a small, well-mixed generator, the same on every machine. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state; /* mrc__mix64 adds the step itself */
    *state += 0x9e3779b97f4a7c15ull;
    return mrc__mix64(x);
}

enum { RANDOM_FANOUT = 8 };

static const char *const pattern_names[] = {
    "neighbour", "neighbor", "broadcast", "random", "all-to-all"};

int mrc_exchange_is_pattern(const char *name)
{
    for (size_t i = 0; name && i < sizeof pattern_names / sizeof *pattern_names;
         i++)
        if (strcmp(name, pattern_names[i]) == 0)
            return 1;
    return 0;
}

static mrc_status_t add_pattern(mrc_exchange_t *x, const char *name, int tiles,
                                int columns, uint64_t seed, uint64_t bytes)
{
    mrc_fabric_config_t cfg = {tiles, columns, 1};
    mrc_fabric_t *f = NULL;
    mrc_status_t st = mrc_fabric_create(&cfg, &f);
    if (st != MRC_OK)
        return st;
    if (strcmp(name, "neighbour") == 0 || strcmp(name, "neighbor") == 0) {
        /* The same row one column East; the last column's tiles (and a
         * short column's lower neighbours' row) go West. */
        for (int t = 0; t < tiles && st == MRC_OK && tiles > 1; t++) {
            int d = t + f->rows;
            if (d >= tiles)
                d = t - f->rows >= 0 ? t - f->rows : (t + 1) % tiles;
            st = mrc_exchange_add(x, t, &d, 1, bytes);
        }
    } else if (strcmp(name, "broadcast") == 0) {
        int *d = malloc(sizeof *d * (size_t)(tiles > 1 ? tiles - 1 : 1));
        if (!d)
            st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        for (int t = 1; t < tiles && st == MRC_OK; t++)
            d[t - 1] = t;
        if (st == MRC_OK && tiles > 1)
            st = mrc_exchange_add(x, 0, d, tiles - 1, bytes);
        free(d);
    } else if (strcmp(name, "random") == 0) {
        uint64_t state = seed;
        int fan = tiles - 1 < RANDOM_FANOUT ? tiles - 1 : RANDOM_FANOUT;
        for (int t = 0; t < tiles && st == MRC_OK; t++)
            for (int k = 0; k < fan && st == MRC_OK; k++) {
                int d = (int)(next_random(&state) % (uint64_t)(tiles - 1));
                d += d >= t; /* never itself */
                st = mrc_exchange_add(x, t, &d, 1, bytes);
            }
    } else if (strcmp(name, "all-to-all") == 0 &&
               (uint64_t)tiles * (uint64_t)(tiles - 1) > INT32_MAX) {
        st = mrc__error(
            MRC_ERR_INVALID_ARG,
            "all-to-all on %d tiles is %llu packets (at most "
            "%d)",
            tiles, (unsigned long long)tiles * (unsigned long long)(tiles - 1),
            INT32_MAX);
    } else if (strcmp(name, "all-to-all") == 0 &&
               (st = mrc__fabric_check_memory(
                    (uint64_t)tiles * (uint64_t)(tiles - 1),
                    (uint64_t)tiles * (uint64_t)(tiles - 1),
                    (uint64_t)tiles * (uint64_t)(tiles - 1),
                    (uint64_t)tiles * (uint64_t)(tiles - 1),
                    (uint64_t)(tiles - 1), tiles)) != MRC_OK) {
        /* Refused before the exchange is built: a tile sends and
         * receives tiles - 1 packets, so no schedule is shorter. */
    } else if (strcmp(name, "all-to-all") == 0) {
        /* Round k: every tile to the tile k after it, so that each round
         * is a permutation (one send and one receipt a tile). */
        for (int k = 1; k < tiles && st == MRC_OK; k++)
            for (int t = 0; t < tiles && st == MRC_OK; t++) {
                int d = (t + k) % tiles;
                st = mrc_exchange_add(x, t, &d, 1, bytes);
            }
    } else {
        st = mrc__error(MRC_ERR_INVALID_ARG,
                        "unknown pattern '%s' (neighbour, broadcast, "
                        "random, all-to-all, or a JSON file)",
                        name);
    }
    mrc_fabric_destroy(f);
    return st;
}

mrc_status_t mrc_exchange_pattern(const char *name, int tiles, int columns,
                                  uint64_t seed, uint64_t bytes,
                                  mrc_exchange_t **out)
{
    if (!out || !name)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_exchange_pattern: NULL argument");
    *out = NULL;
    mrc_exchange_t *x = NULL;
    mrc_status_t st = mrc_exchange_create(&x);
    if (st == MRC_OK)
        st = add_pattern(x, name, tiles, columns, seed, bytes ? bytes : 1);
    if (st != MRC_OK) {
        mrc_exchange_destroy(x);
        return st;
    }
    *out = x;
    return MRC_OK;
}

/* ---- JSON --------------------------------------------------------------- */

/* A JSON integer in [lo, hi], or an error naming `what`. */
static mrc_status_t get_int(json_t *v, const char *what, long long lo,
                            long long hi, long long *out)
{
    if (!json_is_integer(v))
        return mrc__error(MRC_ERR_PARSE, "%s is %s, not an integer", what,
                          v ? "of the wrong type" : "missing");
    long long n = json_integer_value(v);
    if (n < lo || n > hi)
        return mrc__error(MRC_ERR_PARSE, "%s is %lld (from %lld to %lld)", what,
                          n, lo, hi);
    *out = n;
    return MRC_OK;
}

static mrc_status_t read_entry(mrc_exchange_t *x, json_t *e, size_t i,
                               int **buf, size_t *cap)
{
    char what[96];
    long long source = 0, bytes = MRC_FABRIC_DEFAULT_PACKET_BYTES, d = 0;
    if (!json_is_object(e))
        return mrc__error(MRC_ERR_PARSE, "exchange[%zu] is not an object", i);
    snprintf(what, sizeof what, "exchange[%zu].source", i);
    mrc_status_t st =
        get_int(json_object_get(e, "source"), what, 0, MAX_TILES - 1, &source);
    snprintf(what, sizeof what, "exchange[%zu].bytes", i);
    if (st == MRC_OK && json_object_get(e, "bytes"))
        st = get_int(json_object_get(e, "bytes"), what, 1, 1ll << 40, &bytes);
    if (st != MRC_OK)
        return st;
    json_t *dests = json_object_get(e, "destinations");
    size_t n = json_array_size(dests);
    if (!json_is_array(dests) || n == 0)
        return mrc__error(MRC_ERR_PARSE, "exchange[%zu].destinations is %s", i,
                          json_is_array(dests) ? "empty"
                                               : "not an array of tiles");
    if (grow((void **)buf, cap, n, sizeof **buf))
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (size_t k = 0; k < n; k++) {
        snprintf(what, sizeof what, "exchange[%zu].destinations[%zu]", i, k);
        st = get_int(json_array_get(dests, k), what, 0, MAX_TILES - 1, &d);
        if (st != MRC_OK)
            return st;
        (*buf)[k] = (int)d;
    }
    st = mrc_exchange_add(x, (int)source, *buf, (int)n, (uint64_t)bytes);
    if (st != MRC_OK)
        mrc__error_prefix("exchange[%zu]", i);
    return st;
}

mrc_status_t mrc_exchange_parse_json(const char *text, size_t len,
                                     const char *origin, mrc_exchange_t **out,
                                     int *tiles, int *columns)
{
    const char *where = origin ? origin : "<json>";
    *out = NULL;
    *tiles = *columns = 0;
    mrc_status_t cst = mrc__check_json_text(len, where);
    if (cst != MRC_OK)
        return cst;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return mrc__error(MRC_ERR_PARSE, "%s:%d:%d: JSON syntax error: %s",
                          where, jerr.line, jerr.column, jerr.text);
    mrc_exchange_t *x = NULL;
    long long t = 0, c = 0;
    mrc_status_t st = MRC_OK;
    int *buf = NULL;
    size_t cap = 0;
    json_t *list = json_object_get(root, "exchange");
    if (!json_is_object(root))
        st = mrc__error(MRC_ERR_PARSE, "the top level is not an object");
    else if (!json_is_array(list))
        st = mrc__error(MRC_ERR_PARSE,
                        "\"exchange\" is %s (a list of {\"source\", "
                        "\"destinations\", \"bytes\"})",
                        list ? "not an array" : "missing");
    if (st == MRC_OK && json_object_get(root, "tiles"))
        st = get_int(json_object_get(root, "tiles"), "tiles", 1, MAX_TILES, &t);
    if (st == MRC_OK && json_object_get(root, "columns"))
        st = get_int(json_object_get(root, "columns"), "columns", 1, MAX_TILES,
                     &c);
    if (st == MRC_OK)
        st = mrc_exchange_create(&x);
    for (size_t i = 0; st == MRC_OK && i < json_array_size(list); i++)
        st = read_entry(x, json_array_get(list, i), i, &buf, &cap);
    free(buf);
    json_decref(root);
    if (st != MRC_OK) {
        mrc_exchange_destroy(x);
        mrc__error_prefix("%s", where);
        return st;
    }
    *out = x;
    *tiles = (int)t;
    *columns = (int)c;
    return MRC_OK;
}

mrc_status_t mrc_exchange_read(const char *path, mrc_exchange_t **out,
                               int *tiles, int *columns)
{
    if (!path || !out || !tiles || !columns)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_exchange_read: NULL argument");
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    mrc_status_t st = mrc__read_file(path, 0, &text, &len);
    if (st != MRC_OK)
        return st;
    st = mrc_exchange_parse_json(text, len, path, out, tiles, columns);
    free(text);
    return st;
}

mrc_status_t mrc__fabric_check_memory(uint64_t entries, uint64_t dests,
                                      uint64_t packets, uint64_t deliveries,
                                      uint64_t cycles, int tiles)
{
    /* An entry: source, bytes, first (4 + 8 + 8) and its destinations (4
     * each), in arrays grown by doubling. A packet: its entry, send cycle
     * and flags (9), and the bound's trip lists (4 a packet sent, 4 a
     * delivery). A tile and cycle: a mux entry and a busy byte (5), the
     * horizon rounded up to a power of two (twice at worst). */
    uint64_t need = mrc__sat_mul_add(entries, 2 * 20, 0);
    need = mrc__sat_mul_add(dests, 2 * 4, need);
    need = mrc__sat_mul_add(packets, 9 + 4, need);
    need = mrc__sat_mul_add(deliveries, 4, need);
    need =
        mrc__sat_mul_add(mrc__sat_mul_add(cycles, (uint64_t)tiles, 0), 5, need);
    return mrc__check_memory(need, entries ? "exchange and schedule tables"
                                           : "schedule tables");
}
