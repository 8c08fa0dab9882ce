/*
 * The workload format (docs/simulator.md, "Workloads"): read with
 * jansson, every field checked and named with its op; ids resolved, and
 * dependency cycles named op by op. A file that is not in the mrc format
 * is read as a Chakra trace (workload_chakra.c).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "sim/workload.h"

void mrc_workload_destroy(mrc_workload_t *w)
{
    if (!w)
        return;
    for (int i = 0; i < w->num_ops; i++) {
        mrc__workload_op_t *o = &w->ops[i];
        for (int d = 0; o->dep_ids && d < o->num_deps; d++)
            free(o->dep_ids[d]);
        free(o->dep_ids);
        free(o->deps);
        free(o->id);
        free(o->groups);
    }
    free(w->ops);
    free(w);
}

/* Refuses keys outside `known`, to catch misspellings ("duration" for
 * "duration_us") rather than use a default silently. */
static mrc_status_t check_keys(json_t *obj, const char *const *known,
                               const char *entry)
{
    return mrc__json_known_keys(obj, known, entry, "field");
}

/* A string field parsed by `parse` (the mrc_*_parse functions). */
static mrc_status_t get_enum(json_t *o, const char *key, const char *entry,
                             mrc_status_t (*parse)(const char *, int *),
                             int *out)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return MRC_OK;
    if (!json_is_string(v))
        return mrc__error(MRC_ERR_PARSE, "%s: \"%s\" must be a string", entry,
                          key);
    if (parse(json_string_value(v), out) != MRC_OK) {
        mrc__error_prefix("%s: \"%s\"", entry, key);
        return MRC_ERR_PARSE;
    }
    return MRC_OK;
}

static mrc_status_t parse_coll(const char *s, int *o)
{
    mrc_collective_t c;
    mrc_status_t st = mrc_collective_parse(s, &c);
    *o = (int)c;
    return st;
}

static mrc_status_t parse_dtype(const char *s, int *o)
{
    mrc_dtype_t d;
    mrc_status_t st = mrc_dtype_parse(s, &d);
    *o = (int)d;
    return st;
}

static mrc_status_t parse_op(const char *s, int *o)
{
    mrc_op_t op;
    mrc_status_t st = mrc_op_parse(s, &op);
    *o = (int)op;
    return st;
}

static mrc_status_t parse_algo(const char *s, int *o)
{
    mrc_algo_t a;
    mrc_status_t st = mrc_algo_parse(s, &a);
    *o = (int)a;
    return st;
}

/* "size": bytes as an integer, or a string with a K/M/G/T suffix. */
static mrc_status_t get_size(json_t *o, const char *entry, uint64_t *out)
{
    json_t *v = json_object_get(o, "size");
    if (!v)
        return mrc__error(MRC_ERR_PARSE,
                          "%s: missing \"size\" (bytes per "
                          "node, such as 25M)",
                          entry);
    if (json_is_integer(v) && json_integer_value(v) > 0)
        *out = (uint64_t)json_integer_value(v);
    else if (!json_is_string(v) || mrc__parse_size(json_string_value(v), out) ||
             *out == 0)
        return mrc__error(MRC_ERR_PARSE,
                          "%s: \"size\" must be a positive "
                          "number of bytes (an integer, or a string such as "
                          "\"25M\")",
                          entry);
    if (*out > WL_MAX_SIZE)
        return mrc__error(MRC_ERR_PARSE,
                          "%s: \"size\" %llu is beyond the "
                          "simulator's limit of 1 TiB per node",
                          entry, (unsigned long long)*out);
    return MRC_OK;
}

/* "deps": an array of ids (strings). */
static mrc_status_t get_deps(json_t *o, const char *entry,
                             mrc__workload_op_t *op)
{
    json_t *v = json_object_get(o, "deps");
    if (!v)
        return MRC_OK;
    if (!json_is_array(v))
        return mrc__error(MRC_ERR_PARSE,
                          "%s: \"deps\" must be an array of "
                          "op ids",
                          entry);
    size_t n = json_array_size(v);
    op->dep_ids = calloc(n ? n : 1, sizeof *op->dep_ids);
    if (!op->dep_ids)
        return mrc__error(MRC_ERR_NO_MEMORY, "%s: out of memory", entry);
    for (size_t k = 0; k < n; k++) {
        json_t *d = json_array_get(v, k);
        if (!json_is_string(d))
            return mrc__error(MRC_ERR_PARSE,
                              "%s: \"deps\"[%zu] must be an "
                              "op id (a string)",
                              entry, k);
        if (!(op->dep_ids[k] = mrc__strdup(json_string_value(d))))
            return mrc__error(MRC_ERR_NO_MEMORY, "%s: out of memory", entry);
        op->num_deps = (int)k + 1;
    }
    return MRC_OK;
}

static mrc_status_t read_compute(json_t *o, const char *entry,
                                 mrc__workload_op_t *op)
{
    static const char *const known[] = {"id", "kind", "duration_us", "deps",
                                        NULL};
    mrc_status_t st = check_keys(o, known, entry);
    if (st != MRC_OK)
        return st;
    json_t *v = json_object_get(o, "duration_us");
    if (!v)
        return mrc__error(MRC_ERR_PARSE, "%s: missing \"duration_us\"", entry);
    op->duration_us = json_is_number(v) ? json_number_value(v) : -1;
    if (!isfinite(op->duration_us) || op->duration_us < 0 ||
        op->duration_us > WL_MAX_DURATION_US)
        return mrc__error(MRC_ERR_PARSE,
                          "%s: \"duration_us\" must be a "
                          "number from 0 to %.0f (a day)",
                          entry, WL_MAX_DURATION_US);
    return MRC_OK;
}

/* Fields that only some collectives take are refused on the others, so
 * that a root given to an allreduce is not ignored without a word. */
static mrc_status_t check_applies(json_t *o, const char *entry,
                                  const mrc__workload_op_t *op)
{
    int reduces = op->coll == MRC_ALLREDUCE || op->coll == MRC_REDUCE ||
                  op->coll == MRC_REDUCE_SCATTER;
    int rooted = op->coll == MRC_REDUCE || op->coll == MRC_BROADCAST;
    if (json_object_get(o, "op") && !reduces)
        return mrc__error(MRC_ERR_PARSE,
                          "%s: \"op\" does not apply to %s "
                          "(it reduces nothing)",
                          entry, mrc_collective_name(op->coll));
    if (json_object_get(o, "root") && !rooted)
        return mrc__error(MRC_ERR_PARSE,
                          "%s: \"root\" does not apply to %s "
                          "(only reduce and broadcast have a root)",
                          entry, mrc_collective_name(op->coll));
    if (json_object_get(o, "groups") && json_object_get(o, "replica_size"))
        return mrc__error(MRC_ERR_PARSE,
                          "%s: \"groups\" and "
                          "\"replica_size\" exclude each other",
                          entry);
    if (op->size % mrc_dtype_size(op->dtype))
        return mrc__error(MRC_ERR_PARSE,
                          "%s: \"size\" %llu is not a "
                          "whole number of %s elements",
                          entry, (unsigned long long)op->size,
                          mrc_dtype_name(op->dtype));
    return MRC_OK;
}

static mrc_status_t read_groups(json_t *o, const char *entry,
                                mrc__workload_op_t *op)
{
    json_t *g = json_object_get(o, "groups");
    json_t *r = json_object_get(o, "replica_size");
    if (g && (!json_is_string(g) || !*json_string_value(g)))
        return mrc__error(MRC_ERR_PARSE,
                          "%s: \"groups\" must be a string "
                          "such as \"4+4\" or \"0,4+1,5\"",
                          entry);
    if (g && !(op->groups = mrc__strdup(json_string_value(g))))
        return mrc__error(MRC_ERR_NO_MEMORY, "%s: out of memory", entry);
    if (r && (!json_is_integer(r) || json_integer_value(r) < 1 ||
              json_integer_value(r) > MRC_TOPO_MAX_NODES))
        return mrc__error(MRC_ERR_PARSE,
                          "%s: \"replica_size\" must be an "
                          "integer from 1 to %d",
                          entry, MRC_TOPO_MAX_NODES);
    op->replica = r ? (int)json_integer_value(r) : 0;
    json_t *root = json_object_get(o, "root");
    if (root && (!json_is_integer(root) || json_integer_value(root) < 0 ||
                 json_integer_value(root) >= MRC_TOPO_MAX_NODES))
        return mrc__error(MRC_ERR_PARSE,
                          "%s: \"root\" must be a rank "
                          "(an integer from 0)",
                          entry);
    op->root = root ? (int)json_integer_value(root) : 0;
    return MRC_OK;
}

static mrc_status_t read_collective(json_t *o, const char *entry,
                                    mrc__workload_op_t *op)
{
    static const char *const known[] = {
        "id",   "kind",   "collective",   "size", "dtype", "op",
        "root", "groups", "replica_size", "algo", "deps",  NULL};
    int coll = -1, dtype = MRC_FLOAT32, rop = MRC_SUM, algo = MRC_ALGO_RINGS;
    mrc_status_t st = check_keys(o, known, entry);
    if (st == MRC_OK && !json_object_get(o, "collective"))
        st = mrc__error(MRC_ERR_PARSE, "%s: missing \"collective\"", entry);
    if (st == MRC_OK)
        st = get_enum(o, "collective", entry, parse_coll, &coll);
    if (st == MRC_OK)
        st = get_enum(o, "dtype", entry, parse_dtype, &dtype);
    if (st == MRC_OK)
        st = get_enum(o, "op", entry, parse_op, &rop);
    if (st == MRC_OK)
        st = get_enum(o, "algo", entry, parse_algo, &algo);
    if (st == MRC_OK)
        st = get_size(o, entry, &op->size);
    op->coll = (mrc_collective_t)coll;
    op->dtype = (mrc_dtype_t)dtype;
    op->op = (mrc_op_t)rop;
    op->algo = (mrc_algo_t)algo;
    if (st == MRC_OK)
        st = read_groups(o, entry, op);
    if (st == MRC_OK)
        st = check_applies(o, entry, op);
    return st;
}

static mrc_status_t read_op(json_t *o, size_t index, mrc__workload_op_t *op)
{
    char entry[96];
    snprintf(entry, sizeof entry, "ops[%zu]", index);
    if (!json_is_object(o))
        return mrc__error(MRC_ERR_PARSE, "%s: must be an object", entry);
    json_t *id = json_object_get(o, "id");
    if (!json_is_string(id) || !*json_string_value(id) ||
        mrc__has_control(json_string_value(id)))
        return mrc__error(MRC_ERR_PARSE,
                          "%s: \"id\" must be a non-empty "
                          "string without control characters",
                          entry);
    if (!(op->id = mrc__strdup(json_string_value(id))))
        return mrc__error(MRC_ERR_NO_MEMORY, "%s: out of memory", entry);
    snprintf(entry, sizeof entry, "op \"%.60s\" (ops[%zu])", op->id, index);
    json_t *kind = json_object_get(o, "kind");
    const char *k = json_is_string(kind) ? json_string_value(kind) : "";
    mrc_status_t st = get_deps(o, entry, op);
    if (st != MRC_OK)
        return st;
    if (strcmp(k, "compute") == 0) {
        op->kind = MRC_WORKLOAD_COMPUTE;
        return read_compute(o, entry, op);
    }
    if (strcmp(k, "collective") == 0) {
        op->kind = MRC_WORKLOAD_COLLECTIVE;
        return read_collective(o, entry, op);
    }
    return mrc__error(MRC_ERR_PARSE,
                      "%s: \"kind\" must be \"compute\" or "
                      "\"collective\"",
                      entry);
}

static mrc_status_t read_header(json_t *root, int *steps)
{
    static const char *const known[] = {"format", "version", "name",
                                        "steps",  "ops",     NULL};
    json_t *fmt = json_object_get(root, "format");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), WL_FORMAT))
        return mrc__error(MRC_ERR_PARSE, "\"format\" must be \"" WL_FORMAT
                                         "\" (this is not an mrc workload)");
    json_t *v = json_object_get(root, "version");
    if (!json_is_integer(v) || json_integer_value(v) != MRC_WORKLOAD_VERSION)
        return mrc__error(MRC_ERR_PARSE,
                          "\"version\" must be %d (this mrc "
                          "reads version %d workloads)",
                          MRC_WORKLOAD_VERSION, MRC_WORKLOAD_VERSION);
    mrc_status_t st = check_keys(root, known, "top level");
    if (st != MRC_OK)
        return st;
    json_t *name = json_object_get(root, "name");
    if (name && !json_is_string(name))
        return mrc__error(MRC_ERR_PARSE, "\"name\" must be a string");
    json_t *s = json_object_get(root, "steps");
    if (s && (!json_is_integer(s) || json_integer_value(s) < 1 ||
              json_integer_value(s) > WL_MAX_STEPS))
        return mrc__error(MRC_ERR_PARSE,
                          "\"steps\" must be an integer from "
                          "1 to %d",
                          WL_MAX_STEPS);
    *steps = s ? (int)json_integer_value(s) : 1;
    json_t *ops = json_object_get(root, "ops");
    if (!json_is_array(ops) || json_array_size(ops) == 0 ||
        json_array_size(ops) > WL_MAX_OPS)
        return mrc__error(MRC_ERR_PARSE,
                          "\"ops\" must be an array of 1 to "
                          "%d ops",
                          WL_MAX_OPS);
    return MRC_OK;
}

mrc_status_t mrc__workload_alloc_ops(mrc_workload_t *w, size_t n)
{
    w->ops = calloc(n, sizeof *w->ops);
    if (!w->ops)
        return mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    return MRC_OK;
}

static mrc_status_t read_mrc(json_t *root, mrc_workload_t *w)
{
    mrc_status_t st = read_header(root, &w->steps);
    json_t *ops = json_object_get(root, "ops");
    if (st == MRC_OK)
        st = mrc__workload_alloc_ops(w, json_array_size(ops));
    for (size_t i = 0; st == MRC_OK && i < json_array_size(ops); i++) {
        w->num_ops = (int)i + 1;
        st = read_op(json_array_get(ops, i), i, &w->ops[i]);
    }
    return st;
}

/* ---- ids, dependencies, cycles ------------------------------------- */

/* An id and its op, sorted by id to find ids in O(log n). */
typedef struct wl_key {
    const char *id;
    int index;
} wl_key_t;

static int cmp_key(const void *a, const void *b)
{
    return strcmp(((const wl_key_t *)a)->id, ((const wl_key_t *)b)->id);
}

static int find_id(const wl_key_t *keys, int n, const char *id)
{
    wl_key_t k = {.id = id};
    const wl_key_t *f = bsearch(&k, keys, (size_t)n, sizeof k, cmp_key);
    return f ? f->index : -1;
}

static mrc_status_t resolve_deps(mrc_workload_t *w, const wl_key_t *keys)
{
    for (int i = 0; i < w->num_ops; i++) {
        mrc__workload_op_t *o = &w->ops[i];
        o->deps =
            malloc((o->num_deps ? (size_t)o->num_deps : 1) * sizeof *o->deps);
        if (!o->deps)
            return mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
        for (int d = 0; d < o->num_deps; d++) {
            o->deps[d] = find_id(keys, w->num_ops, o->dep_ids[d]);
            if (o->deps[d] < 0)
                return mrc__error(MRC_ERR_PARSE,
                                  "op \"%s\": \"deps\" names "
                                  "\"%s\", which is no op's id",
                                  o->id, o->dep_ids[d]);
            if (o->deps[d] == i)
                return mrc__error(MRC_ERR_PARSE,
                                  "op \"%s\": \"deps\" names "
                                  "the op itself",
                                  o->id);
        }
    }
    return MRC_OK;
}

/* Ids unique; every dependency names another op. */
static mrc_status_t resolve(mrc_workload_t *w)
{
    wl_key_t *keys = malloc((size_t)w->num_ops * sizeof *keys);
    if (!keys)
        return mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    for (int i = 0; i < w->num_ops; i++)
        keys[i] = (wl_key_t){w->ops[i].id, i};
    /* Equal ids keep no order under qsort: name the pair by index. */
    qsort(keys, (size_t)w->num_ops, sizeof *keys, cmp_key);
    mrc_status_t st = MRC_OK;
    for (int i = 1; i < w->num_ops && st == MRC_OK; i++) {
        int x = keys[i - 1].index, y = keys[i].index;
        if (strcmp(keys[i - 1].id, keys[i].id) == 0)
            st = mrc__error(MRC_ERR_PARSE,
                            "op \"%s\": the id is used twice "
                            "(ops[%d] and ops[%d])",
                            keys[i].id, x < y ? x : y, x < y ? y : x);
    }
    if (st == MRC_OK)
        st = resolve_deps(w, keys);
    free(keys);
    return st;
}

/* The ops as tasks (workload.h). */
mrc__workload_task_t *mrc__workload_tasks(const mrc_workload_t *w)
{
    size_t n = w->num_ops > 0 ? (size_t)w->num_ops : 1;
    mrc__workload_task_t *t = calloc(n, sizeof *t);
    for (int i = 0; t && i < w->num_ops; i++) {
        const mrc__workload_op_t *o = &w->ops[i];
        t[i] = (mrc__workload_task_t){
            .stream = o->kind == MRC_WORKLOAD_COMPUTE ? MRC__WL_COMPUTE
                                                      : MRC__WL_COMM,
            .duration_us = o->kind == MRC_WORKLOAD_COMPUTE ? o->duration_us : 0,
            .num_deps = o->num_deps,
            .deps = o->deps};
    }
    return t;
}

/* A cycle named op by op: "a -> b -> a" (each waits for the next). */
static mrc_status_t check_cycles(const mrc_workload_t *w, int *cycle)
{
    mrc__workload_task_t *t = mrc__workload_tasks(w);
    if (!t)
        return mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    int len = mrc__workload_find_cycle(t, w->num_ops, cycle);
    free(t);
    if (len == 0)
        return MRC_OK;
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    for (int k = 0; k < len; k++)
        mrc__sb_printf(&sb, "\"%s\" -> ", w->ops[cycle[k]].id);
    mrc__sb_printf(&sb, "\"%s\"", w->ops[cycle[0]].id);
    mrc_status_t st =
        mrc__error(MRC_ERR_PARSE,
                   "op \"%s\": \"deps\" make a "
                   "cycle (each waits for the next): %s",
                   w->ops[cycle[0]].id, sb.failed ? "?" : sb.data);
    mrc__sb_free(&sb);
    return st;
}

/* The mrc format is an object with "format" (or, misspelt, with
 * "ops"); anything else is read as a Chakra trace. */
static mrc_status_t read_any(const char *text, size_t len, mrc_workload_t *w)
{
    json_error_t jerr;
    json_t *root = json_loadb(
        text, len, JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return mrc__error(MRC_ERR_PARSE, "%d:%d: JSON syntax error: %s",
                          jerr.line, jerr.column, jerr.text);
    int mine = json_is_object(root) && (json_object_get(root, "format") ||
                                        json_object_get(root, "ops"));
    mrc_status_t st;
    if (!mine) {
        st = mrc__workload_read_chakra(text, len, w);
    } else {
        size_t pos = (size_t)jerr.position;
        while (pos < len && strchr(" \t\r\n", text[pos]))
            pos++;
        st = pos < len ? mrc__error(MRC_ERR_PARSE,
                                    "text after the "
                                    "workload's object (at byte %zu)",
                                    pos)
                       : read_mrc(root, w);
    }
    json_decref(root);
    return st;
}

mrc_status_t mrc_workload_parse(const char *text, size_t len,
                                const char *origin, mrc_workload_t **out)
{
    const char *where = origin ? origin : "<workload>";
    if (!out || !text)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_workload_parse: text or out is NULL");
    *out = NULL;
    mrc_status_t st = mrc__check_json_text(len, where);
    if (st != MRC_OK)
        return st;
    mrc_workload_t *w = calloc(1, sizeof *w);
    int *scratch = NULL;
    if (!w) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
        goto fail;
    }
    st = read_any(text, len, w);
    if (st == MRC_OK &&
        !(scratch = malloc((size_t)w->num_ops * sizeof *scratch)))
        st = mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    if (st == MRC_OK)
        st = resolve(w);
    if (st == MRC_OK)
        st = check_cycles(w, scratch);
    if (st != MRC_OK)
        goto fail;
    free(scratch);
    *out = w;
    return MRC_OK;

fail:
    mrc__error_prefix("%s", where);
    free(scratch);
    mrc_workload_destroy(w);
    return st;
}

mrc_status_t mrc_workload_load(const char *path, mrc_workload_t **out)
{
    char *text = NULL;
    size_t len = 0;
    if (!out || !path)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_workload_load: path or out is NULL");
    *out = NULL;
    mrc_status_t st = mrc__read_file(path, 0, &text, &len);
    if (st == MRC_OK)
        st = mrc_workload_parse(text, len, path, out);
    free(text);
    return st;
}
