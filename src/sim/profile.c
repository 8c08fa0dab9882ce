/*
 * Host profiles (mrc/profile.h) as versioned JSON (docs/simulator.md,
 * "Profiles"):
 *
 *   {"format": "mrc-profile", "version": 1, "transport": "threads",
 *    "ranks": 2, "cores": 2, "nodes_per_memory": 2,
 *    "cache_bytes": 4194304, "copy_gbps_cache": 40,
 *    "copy_gbps_memory": 8, "memory_gbps_shared": 10,
 *    "peer_gbps_cache": 12, "private_cache_bytes": 1048576,
 *    "peer_gbps_shared": 7, "rendezvous_bytes": 16384,
 *    "rendezvous_us": 1.5, "slot_gbps": 5, "turn_us": 3,
 *    "flag_turn_us": 1, "get_us": 0.5, "kernel_gbps": 9,
 *    "spin_share": 0.5, "cache_falloff": 2, "peer_contention": 0.3,
 *    "copy_gbps_shared": 30, "latency_us": 0.1, "quiet_turn_share": 0.5,
 *    "canary_us": 0.7, "window_gbps": 6, "stream_bytes": 8388608,
 *    "stream_gbps": 9, "send_by_ref": 1, "kernel_gbps_cache": 20,
 *    "send_us": 0.2, "peer_ramp_bytes": 32768 (these twenty-four
 *    optional),
 *    "reduce_gbps": {"float32": {"sum": {"cache": 20, "memory": 6}}},
 *    "message_us": 0.4, "sync_us": 0.2}
 *
 * Accepts: exactly these fields (an unknown one is refused, so that a
 * misspelt field is not silently the default); reduce_gbps may name any
 * subset of dtypes and ops (the rest are 0: not measured).
 * Limits: a file of another version is refused whole; there is no
 * migration between versions.
 */
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/common.h"
#include "mrc/profile.h"
#include "reduce/reduce.h"

#define PROFILE_FORMAT "mrc-profile"
/* A profile is a few KiB; anything much larger is not one. */
#define PROFILE_MAX_BYTES ((size_t)1 << 20)
/* Rates (GB/s) and costs (us) beyond these are no measurement. */
#define MAX_GBPS        1e5
#define MAX_US          1e7
#define MAX_CACHE_BYTES 1e12
/* The power of the cache share past cache_bytes (a step, nearly). */
#define MAX_CACHE_FALLOFF 64
/* Readers of a host slowing one another (1: each read at half its rate
 * beside one other). */
#define MAX_PEER_CONTENTION 16

static const char *const top_fields[] = {"format",
                                         "version",
                                         "transport",
                                         "ranks",
                                         "cores",
                                         "nodes_per_memory",
                                         "cache_bytes",
                                         "copy_gbps_cache",
                                         "copy_gbps_memory",
                                         "memory_gbps_shared",
                                         "peer_gbps_cache",
                                         "private_cache_bytes",
                                         "peer_gbps_shared",
                                         "rendezvous_bytes",
                                         "rendezvous_us",
                                         "slot_gbps",
                                         "turn_us",
                                         "flag_turn_us",
                                         "get_us",
                                         "kernel_gbps",
                                         "spin_share",
                                         "cache_falloff",
                                         "peer_contention",
                                         "copy_gbps_shared",
                                         "latency_us",
                                         "quiet_turn_share",
                                         "canary_us",
                                         "window_gbps",
                                         "stream_bytes",
                                         "stream_gbps",
                                         "send_by_ref",
                                         "kernel_gbps_cache",
                                         "send_us",
                                         "peer_ramp_bytes",
                                         "reduce_gbps",
                                         "message_us",
                                         "sync_us",
                                         NULL};

static mrc_status_t unknown_fields(json_t *obj, const char *const *names,
                                   const char *where)
{
    const char *key = mrc__json_unknown_key(obj, names);
    if (key)
        return mrc__error(MRC_ERR_INVALID_ARG, "unknown field \"%s\"%s%s", key,
                          *where ? " in " : "", where);
    return MRC_OK;
}

static mrc_status_t get_int(json_t *root, const char *name, long min, long max,
                            int *out)
{
    json_t *v = json_object_get(root, name);
    if (!v)
        return mrc__error(MRC_ERR_INVALID_ARG, "field \"%s\" is missing", name);
    if (!json_is_integer(v) || json_integer_value(v) < min ||
        json_integer_value(v) > max)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "field \"%s\" must be an integer in %ld..%ld", name,
                          min, max);
    *out = (int)json_integer_value(v);
    return MRC_OK;
}

/* A finite number in [min, max] (or (min, max] when !min_ok). */
static mrc_status_t get_number(json_t *obj, const char *name, const char *where,
                               double min, int min_ok, double max, double *out)
{
    json_t *v = json_object_get(obj, name);
    if (!v)
        return mrc__error(MRC_ERR_INVALID_ARG, "field \"%s%s\" is missing",
                          where, name);
    double x = json_number_value(v);
    if (!json_is_number(v) || !isfinite(x) || x < min ||
        (!min_ok && x == min) || x > max)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "field \"%s%s\" must be a number %s %g and at "
                          "most %g",
                          where, name, min_ok ? "of at least" : "above", min,
                          max);
    *out = x;
    return MRC_OK;
}

static int dtype_by_name(const char *name)
{
    for (int d = 0; d < MRC_NUM_DTYPES; d++)
        if (strcmp(name, mrc_dtype_name((mrc_dtype_t)d)) == 0)
            return d;
    return -1;
}

static int op_by_name(const char *name)
{
    for (int o = 0; o < MRC_NUM_OPS; o++)
        if (strcmp(name, mrc_op_name((mrc_op_t)o)) == 0)
            return o;
    return -1;
}

/* One {"cache": x, "memory": y} of reduce_gbps. */
static mrc_status_t read_rates(json_t *v, int d, int o, mrc_profile_t *p)
{
    char where[64];
    snprintf(where, sizeof where, "reduce_gbps.%s.%s.",
             mrc_dtype_name((mrc_dtype_t)d), mrc_op_name((mrc_op_t)o));
    static const char *const names[] = {"cache", "memory", NULL};
    if (!json_is_object(v))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "field \"%.*s\" must be an object {\"cache\": "
                          "GB/s, \"memory\": GB/s}",
                          (int)strlen(where) - 1, where);
    mrc_status_t st = unknown_fields(v, names, where);
    if (st == MRC_OK)
        st = get_number(v, "cache", where, 0, 1, MAX_GBPS,
                        &p->reduce_gbps_cache[d][o]);
    if (st == MRC_OK)
        st = get_number(v, "memory", where, 0, 1, MAX_GBPS,
                        &p->reduce_gbps_memory[d][o]);
    return st;
}

static mrc_status_t read_reduce(json_t *root, mrc_profile_t *p)
{
    json_t *red = json_object_get(root, "reduce_gbps");
    if (!red)
        return MRC_OK;
    if (!json_is_object(red))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "field \"reduce_gbps\" must be an object of "
                          "dtypes");
    const char *dname, *oname;
    json_t *ops, *v;
    json_object_foreach(red, dname, ops)
    {
        int d = dtype_by_name(dname);
        if (d < 0)
            return mrc__error(MRC_ERR_INVALID_ARG,
                              "reduce_gbps: unknown dtype \"%s\"", dname);
        if (!json_is_object(ops))
            return mrc__error(MRC_ERR_INVALID_ARG,
                              "field \"reduce_gbps.%s\" must be an object "
                              "of ops",
                              dname);
        json_object_foreach(ops, oname, v)
        {
            int o = op_by_name(oname);
            if (o < 0)
                return mrc__error(MRC_ERR_INVALID_ARG,
                                  "reduce_gbps.%s: unknown op \"%s\"", dname,
                                  oname);
            mrc_status_t st = read_rates(v, d, o, p);
            if (st != MRC_OK)
                return st;
        }
    }
    return MRC_OK;
}

/* The format and version first: a file of another version may hold
 * anything else. */
static mrc_status_t read_header(json_t *root, mrc_profile_t *p)
{
    if (!json_is_object(root))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "not a profile (the top level must be an object)");
    json_t *f = json_object_get(root, "format");
    if (f && (!json_is_string(f) ||
              strcmp(json_string_value(f), PROFILE_FORMAT) != 0))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "not a profile (\"format\" must be \"%s\")",
                          PROFILE_FORMAT);
    json_t *v = json_object_get(root, "version");
    if (!v)
        return mrc__error(MRC_ERR_INVALID_ARG, "field \"version\" is missing");
    if (!json_is_integer(v))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "field \"version\" must be an integer");
    if (json_integer_value(v) != MRC_PROFILE_VERSION)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "profile version %lld; this mrc reads version %d "
                          "(measure again with 'mrc calibrate')",
                          (long long)json_integer_value(v),
                          MRC_PROFILE_VERSION);
    p->version = MRC_PROFILE_VERSION;
    json_t *t = json_object_get(root, "transport");
    const char *ts = json_string_value(t);
    if (!t)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "field \"transport\" is missing");
    if (!ts || (strcmp(ts, "threads") != 0 && strcmp(ts, "shm") != 0 &&
                strcmp(ts, "mpi") != 0))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "field \"transport\" must be \"threads\", \"shm\" "
                          "or \"mpi\"");
    snprintf(p->transport, sizeof p->transport, "%s", ts);
    return MRC_OK;
}

/* The number fields of the top level, in the order they are checked:
 * each in (0, max], or [0, max] when zero_ok; an optional one may be
 * missing (0). */
static const struct number_field {
    const char *name;
    size_t at; /* offset of its double in mrc_profile_t */
    int zero_ok;
    double max;
    int optional;
} number_fields[] = {
    {"cache_bytes", offsetof(mrc_profile_t, cache_bytes), 0, MAX_CACHE_BYTES,
     0},
    {"copy_gbps_cache", offsetof(mrc_profile_t, copy_gbps_cache), 0, MAX_GBPS,
     0},
    {"copy_gbps_memory", offsetof(mrc_profile_t, copy_gbps_memory), 0, MAX_GBPS,
     0},
    {"memory_gbps_shared", offsetof(mrc_profile_t, memory_gbps_shared), 0,
     MAX_GBPS, 0},
    {"peer_gbps_cache", offsetof(mrc_profile_t, peer_gbps_cache), 1, MAX_GBPS,
     1},
    {"private_cache_bytes", offsetof(mrc_profile_t, private_cache_bytes), 1,
     MAX_CACHE_BYTES, 1},
    {"peer_gbps_shared", offsetof(mrc_profile_t, peer_gbps_shared), 1, MAX_GBPS,
     1},
    {"rendezvous_bytes", offsetof(mrc_profile_t, rendezvous_bytes), 1,
     MAX_CACHE_BYTES, 1},
    {"rendezvous_us", offsetof(mrc_profile_t, rendezvous_us), 1, MAX_US, 1},
    {"slot_gbps", offsetof(mrc_profile_t, slot_gbps), 1, MAX_GBPS, 1},
    {"turn_us", offsetof(mrc_profile_t, turn_us), 1, MAX_US, 1},
    {"flag_turn_us", offsetof(mrc_profile_t, flag_turn_us), 1, MAX_US, 1},
    {"get_us", offsetof(mrc_profile_t, get_us), 1, MAX_US, 1},
    {"kernel_gbps", offsetof(mrc_profile_t, kernel_gbps), 1, MAX_GBPS, 1},
    {"spin_share", offsetof(mrc_profile_t, spin_share), 1, 1, 1},
    {"cache_falloff", offsetof(mrc_profile_t, cache_falloff), 1,
     MAX_CACHE_FALLOFF, 1},
    {"peer_contention", offsetof(mrc_profile_t, peer_contention), 1,
     MAX_PEER_CONTENTION, 1},
    {"copy_gbps_shared", offsetof(mrc_profile_t, copy_gbps_shared), 1, MAX_GBPS,
     1},
    {"latency_us", offsetof(mrc_profile_t, latency_us), 1, MAX_US, 1},
    {"quiet_turn_share", offsetof(mrc_profile_t, quiet_turn_share), 1, 1, 1},
    {"canary_us", offsetof(mrc_profile_t, canary_us), 1, MAX_US, 1},
    {"window_gbps", offsetof(mrc_profile_t, window_gbps), 1, MAX_GBPS, 1},
    {"stream_bytes", offsetof(mrc_profile_t, stream_bytes), 0, MAX_CACHE_BYTES,
     1},
    {"stream_gbps", offsetof(mrc_profile_t, stream_gbps), 1, MAX_GBPS, 1},
    {"send_by_ref", offsetof(mrc_profile_t, send_by_ref), 1, 1, 1},
    {"kernel_gbps_cache", offsetof(mrc_profile_t, kernel_gbps_cache), 1,
     MAX_GBPS, 1},
    {"send_us", offsetof(mrc_profile_t, send_us), 1, MAX_US, 1},
    {"peer_ramp_bytes", offsetof(mrc_profile_t, peer_ramp_bytes), 1,
     MAX_CACHE_BYTES, 1},
    {"message_us", offsetof(mrc_profile_t, message_us), 1, MAX_US, 0},
    {"sync_us", offsetof(mrc_profile_t, sync_us), 1, MAX_US, 0},
};

static mrc_status_t read_profile(json_t *root, mrc_profile_t *p)
{
    mrc_status_t st = read_header(root, p);
    if (st == MRC_OK)
        st = unknown_fields(root, top_fields, "");
    if (st == MRC_OK)
        st = get_int(root, "ranks", 1, 1 << 20, &p->ranks);
    if (st == MRC_OK)
        st = get_int(root, "cores", 1, 1 << 20, &p->cores);
    if (st == MRC_OK)
        st =
            get_int(root, "nodes_per_memory", 1, 1 << 20, &p->nodes_per_memory);
    for (size_t i = 0;
         st == MRC_OK && i < sizeof number_fields / sizeof number_fields[0];
         i++) {
        const struct number_field *n = &number_fields[i];
        if (n->optional && !json_object_get(root, n->name))
            continue;
        st = get_number(root, n->name, "", 0, n->zero_ok, n->max,
                        (double *)((char *)p + n->at));
    }
    /* A size in bytes: a whole number (0 is absent). */
    if (st == MRC_OK && p->stream_bytes != 0 &&
        (p->stream_bytes < 1 || p->stream_bytes != floor(p->stream_bytes)))
        st = mrc__error(MRC_ERR_INVALID_ARG,
                        "field \"stream_bytes\" must be a whole number of "
                        "bytes, at least 1");
    if (st == MRC_OK && p->send_by_ref != 0 && p->send_by_ref != 1)
        st = mrc__error(MRC_ERR_INVALID_ARG,
                        "field \"send_by_ref\" must be 0 or 1");
    if (st == MRC_OK)
        st = read_reduce(root, p);
    return st;
}

mrc_status_t mrc_profile_parse(const char *json, size_t len, mrc_profile_t *out)
{
    if (!json || !out)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_profile_parse: NULL argument");
    mrc_profile_t p;
    memset(&p, 0, sizeof p);
    if (len == 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "profile: empty (write one with 'mrc calibrate "
                          "-o FILE')");
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return mrc__error(MRC_ERR_INVALID_ARG, "profile: not JSON: %d:%d: %s",
                          jerr.line, jerr.column, jerr.text);
    mrc_status_t st = read_profile(root, &p);
    json_decref(root);
    if (st != MRC_OK) {
        /* "profile version 2; ..." says it already. */
        if (strncmp(mrc_last_error(), "profile", 7) != 0)
            mrc__error_prefix("profile");
        return st;
    }
    *out = p;
    return MRC_OK;
}

mrc_status_t mrc_profile_load(const char *path, mrc_profile_t *out)
{
    if (!path || !out)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_profile_load: NULL argument");
    /* The size first, for a message about profiles rather than the
     * general input limit; mrc__read_file holds the cap on the read. */
    struct stat info;
    char a[32];
    if (stat(path, &info) == 0 && S_ISREG(info.st_mode) &&
        (uint64_t)info.st_size > PROFILE_MAX_BYTES)
        return mrc__error(
            MRC_ERR_INVALID_ARG, "%s is %s, not a profile (at most 1 MiB)",
            path, mrc__format_bytes((uint64_t)info.st_size, a, sizeof a));
    char *text = NULL;
    size_t len = 0;
    mrc_status_t st = mrc__read_file(path, PROFILE_MAX_BYTES, &text, &len);
    if (st != MRC_OK)
        return st;
    st = mrc_profile_parse(text, len, out);
    free(text);
    if (st != MRC_OK)
        mrc__error_prefix("%s", path);
    return st;
}

/* A number, or null for one JSON cannot hold (NaN, inf): the check
 * in mrc_profile_to_json then names its field. */
static void put_finite(mrc__strbuf_t *sb, double v)
{
    if (isfinite(v))
        mrc__sb_double(sb, v);
    else
        mrc__sb_puts(sb, "null");
}

static void put_number(mrc__strbuf_t *sb, const char *name, double v,
                       const char *sep)
{
    mrc__sb_printf(sb, "  \"%s\": ", name);
    put_finite(sb, v);
    mrc__sb_puts(sb, sep);
}

/* reduce_gbps: the measured pairs only (both 0: not measured). */
static void put_reduce(mrc__strbuf_t *sb, const mrc_profile_t *p)
{
    mrc__sb_puts(sb, "  \"reduce_gbps\": {");
    int nd = 0;
    for (int d = 0; d < MRC_NUM_DTYPES; d++) {
        int no = 0;
        for (int o = 0; o < MRC_NUM_OPS; o++) {
            double c = p->reduce_gbps_cache[d][o];
            double m = p->reduce_gbps_memory[d][o];
            if (c == 0 && m == 0)
                continue;
            if (no == 0)
                mrc__sb_printf(sb, "%s\n    \"%s\": {", nd++ ? "," : "",
                               mrc_dtype_name((mrc_dtype_t)d));
            mrc__sb_printf(sb,
                           "%s\n      \"%s\": {\"cache\": ", no++ ? "," : "",
                           mrc_op_name((mrc_op_t)o));
            put_finite(sb, c);
            mrc__sb_puts(sb, ", \"memory\": ");
            put_finite(sb, m);
            mrc__sb_puts(sb, "}");
        }
        if (no)
            mrc__sb_puts(sb, "\n    }");
    }
    mrc__sb_puts(sb, nd ? "\n  },\n" : "},\n");
}

mrc_status_t mrc_profile_to_json(const mrc_profile_t *p, char **json)
{
    if (!p || !json)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_profile_to_json: NULL argument");
    *json = NULL;
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    mrc__sb_puts(&sb, "{\n  \"format\": \"" PROFILE_FORMAT "\",\n");
    mrc__sb_printf(&sb, "  \"version\": %d,\n", MRC_PROFILE_VERSION);
    mrc__sb_puts(&sb, "  \"transport\": ");
    mrc__sb_json_string(&sb, p->transport);
    mrc__sb_printf(&sb,
                   ",\n  \"ranks\": %d,\n  \"cores\": %d,\n"
                   "  \"nodes_per_memory\": %d,\n",
                   p->ranks, p->cores, p->nodes_per_memory);
    put_number(&sb, "cache_bytes", p->cache_bytes, ",\n");
    put_number(&sb, "copy_gbps_cache", p->copy_gbps_cache, ",\n");
    put_number(&sb, "copy_gbps_memory", p->copy_gbps_memory, ",\n");
    put_number(&sb, "memory_gbps_shared", p->memory_gbps_shared, ",\n");
    put_number(&sb, "peer_gbps_cache", p->peer_gbps_cache, ",\n");
    put_number(&sb, "private_cache_bytes", p->private_cache_bytes, ",\n");
    put_number(&sb, "peer_gbps_shared", p->peer_gbps_shared, ",\n");
    put_number(&sb, "rendezvous_bytes", p->rendezvous_bytes, ",\n");
    put_number(&sb, "rendezvous_us", p->rendezvous_us, ",\n");
    put_number(&sb, "slot_gbps", p->slot_gbps, ",\n");
    put_number(&sb, "turn_us", p->turn_us, ",\n");
    put_number(&sb, "flag_turn_us", p->flag_turn_us, ",\n");
    put_number(&sb, "get_us", p->get_us, ",\n");
    put_number(&sb, "kernel_gbps", p->kernel_gbps, ",\n");
    put_number(&sb, "spin_share", p->spin_share, ",\n");
    if (p->cache_falloff > 0) /* (0: absent, as in earlier files) */
        put_number(&sb, "cache_falloff", p->cache_falloff, ",\n");
    if (p->peer_contention > 0)
        put_number(&sb, "peer_contention", p->peer_contention, ",\n");
    if (p->copy_gbps_shared > 0)
        put_number(&sb, "copy_gbps_shared", p->copy_gbps_shared, ",\n");
    if (p->latency_us > 0)
        put_number(&sb, "latency_us", p->latency_us, ",\n");
    if (p->quiet_turn_share > 0)
        put_number(&sb, "quiet_turn_share", p->quiet_turn_share, ",\n");
    if (p->canary_us > 0)
        put_number(&sb, "canary_us", p->canary_us, ",\n");
    if (p->window_gbps > 0)
        put_number(&sb, "window_gbps", p->window_gbps, ",\n");
    if (p->stream_bytes > 0)
        put_number(&sb, "stream_bytes", p->stream_bytes, ",\n");
    if (p->stream_gbps > 0)
        put_number(&sb, "stream_gbps", p->stream_gbps, ",\n");
    if (p->send_by_ref > 0)
        put_number(&sb, "send_by_ref", p->send_by_ref, ",\n");
    if (p->kernel_gbps_cache > 0)
        put_number(&sb, "kernel_gbps_cache", p->kernel_gbps_cache, ",\n");
    if (p->send_us > 0)
        put_number(&sb, "send_us", p->send_us, ",\n");
    if (p->peer_ramp_bytes > 0)
        put_number(&sb, "peer_ramp_bytes", p->peer_ramp_bytes, ",\n");
    put_reduce(&sb, p);
    put_number(&sb, "message_us", p->message_us, ",\n");
    put_number(&sb, "sync_us", p->sync_us, "\n}\n");
    char *text = mrc__sb_take(&sb);
    if (!text)
        return mrc__error(MRC_ERR_NO_MEMORY,
                          "mrc_profile_to_json: out of memory");
    /* Only what mrc_profile_parse reads back is written: a figure out of
     * range (a NaN, a negative rate) is refused here, naming it. */
    mrc_profile_t check;
    mrc_status_t st = mrc_profile_parse(text, strlen(text), &check);
    if (st != MRC_OK) {
        free(text);
        mrc__error_prefix("mrc_profile_to_json");
        return st;
    }
    *json = text;
    return MRC_OK;
}

size_t mrc_profile_stream_bytes(const mrc_profile_t *p)
{
    if (p && p->stream_bytes >= (double)SIZE_MAX)
        return SIZE_MAX;
    return p && p->stream_bytes >= 1 ? (size_t)p->stream_bytes
                                     : (size_t)MRC__NONTEMPORAL_BYTES;
}

int mrc_profile_kernel_read_faster(const mrc_profile_t *p)
{
    if (!p || p->kernel_gbps <= 0 || p->copy_gbps_cache <= 0)
        return 0;
    double peer = p->window_gbps > 0 ? p->window_gbps : p->peer_gbps_cache;
    if (peer <= 0)
        return 0;
    /* ns a byte: the owner's copy, then its reader's, against one read */
    return 1 / p->kernel_gbps < 1 / p->copy_gbps_cache + 1 / peer;
}
