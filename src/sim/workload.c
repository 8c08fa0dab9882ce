/*
 * Workloads (docs/simulator.md, "Workloads"): a step of compute and
 * collectives with dependencies, played on two streams. Each distinct
 * collective is compiled and simulated once; the step is then an event
 * schedule over the dependencies, where a collective takes its simulated
 * time and compute the time the file gives it.
 *
 *   compute  |fwd|bwd4|bwd3|bwd2|bwd1|
 *   network       |   |ar4 |ar3 |ar2 |ar1|   <- exposed: after bwd1
 *
 * Reads the mrc format and, for traces made elsewhere, the nodes of a
 * Chakra execution trace exported as JSON.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "mrc/sim.h"
#include "sim/select.h"
#include "sim/workload.h"

#define WL_FORMAT "mrc-workload"
/* Ops in one step, and steps: bounds that keep the tables and the
 * products small; far beyond a training step's buckets. */
enum { WL_MAX_OPS = 1 << 20, WL_MAX_STEPS = 1 << 30 };
/* The largest collective (bytes per node), as `mrc sim --sweep`. */
#define WL_MAX_SIZE ((uint64_t)1 << 40)
/* A compute op's longest duration: a day, in us. */
#define WL_MAX_DURATION_US 8.64e10

typedef struct wl_op {
    char *id;
    mrc_workload_kind_t kind;
    double duration_us; /* compute */
    mrc_collective_t coll;
    uint64_t size;
    mrc_dtype_t dtype;
    mrc_op_t op;
    int root;
    char *groups; /* NULL: the caller's */
    int replica;  /* 0: the caller's */
    mrc_algo_t algo;
    int num_deps;
    int *deps;       /* indices, once resolved */
    char **dep_ids;  /* as written, until resolved */
} wl_op_t;

struct mrc_workload {
    int steps;
    int num_ops;
    wl_op_t *ops;
};

void mrc_workload_destroy(mrc_workload_t *w)
{
    if (!w)
        return;
    for (int i = 0; i < w->num_ops; i++) {
        wl_op_t *o = &w->ops[i];
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

/* ---- the scheduler ------------------------------------------------- */

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* dependents of each task in CSR form: first[i] .. first[i + 1]. */
static mrc_status_t dependents(const mrc__wl_task_t *t, int n, int **first,
                               int **list)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += (size_t)t[i].num_deps;
    *first = calloc((size_t)n + 1, sizeof **first);
    *list = malloc((total ? total : 1) * sizeof **list);
    if (!*first || !*list)
        return mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    for (int i = 0; i < n; i++)
        for (int d = 0; d < t[i].num_deps; d++)
            (*first)[t[i].deps[d] + 1]++;
    for (int i = 0; i < n; i++)
        (*first)[i + 1] += (*first)[i];
    int *fill = calloc((size_t)n + 1, sizeof *fill);
    if (!fill)
        return mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    for (int i = 0; i < n; i++)
        for (int d = 0; d < t[i].num_deps; d++) {
            int p = t[i].deps[d];
            (*list)[(*first)[p] + fill[p]++] = i;
        }
    free(fill);
    return MRC_OK;
}

/* The scheduler's state: a FIFO of ready tasks per stream (a task
 * enters each once, so n slots each), the running task per stream. */
typedef struct wl_sched {
    int *fifo[MRC__WL_STREAMS];
    int head[MRC__WL_STREAMS], tail[MRC__WL_STREAMS];
    int running[MRC__WL_STREAMS];
    int *indeg, *first, *list, *fresh;
} wl_sched_t;

/* Queues the tasks that became ready at one instant, lowest index first. */
static void enqueue(wl_sched_t *s, const mrc__wl_task_t *t, int nfresh)
{
    qsort(s->fresh, (size_t)nfresh, sizeof *s->fresh, cmp_int);
    for (int k = 0; k < nfresh; k++) {
        int st = t[s->fresh[k]].stream;
        s->fifo[st][s->tail[st]++] = s->fresh[k];
    }
}

/* Ends every running task that ends at `now`; returns how many. */
static int finish(wl_sched_t *s, const mrc__wl_task_t *t, const double *end,
                  double now)
{
    int nfresh = 0, done = 0;
    for (int st = 0; st < MRC__WL_STREAMS; st++) {
        int i = s->running[st];
        if (i < 0 || end[i] > now)
            continue;
        s->running[st] = -1;
        done++;
        for (int k = s->first[i]; k < s->first[i + 1]; k++)
            if (--s->indeg[s->list[k]] == 0)
                s->fresh[nfresh++] = s->list[k];
    }
    enqueue(s, t, nfresh);
    return done;
}

static mrc_status_t play(wl_sched_t *s, const mrc__wl_task_t *t, int n,
                         double *start, double *end)
{
    int nfresh = 0, done = 0;
    for (int i = 0; i < n; i++)
        if ((s->indeg[i] = t[i].num_deps) == 0)
            s->fresh[nfresh++] = i;
    enqueue(s, t, nfresh);
    double now = 0;
    for (;;) {
        int any = 0;
        for (int st = 0; st < MRC__WL_STREAMS; st++) {
            if (s->running[st] < 0 && s->head[st] < s->tail[st]) {
                int i = s->fifo[st][s->head[st]++];
                start[i] = now;
                end[i] = now + t[i].duration_us;
                s->running[st] = i;
            }
            any |= s->running[st] >= 0;
        }
        if (!any)
            break;
        now = INFINITY;
        for (int st = 0; st < MRC__WL_STREAMS; st++)
            if (s->running[st] >= 0 && end[s->running[st]] < now)
                now = end[s->running[st]];
        done += finish(s, t, end, now);
    }
    if (done < n)
        return mrc__error(MRC_ERR_INVALID_ARG, "workload: %d of %d ops "
                          "never become ready (a dependency cycle)",
                          n - done, n);
    return MRC_OK;
}

mrc_status_t mrc__wl_schedule(const mrc__wl_task_t *tasks, int n,
                              double *start, double *end)
{
    wl_sched_t s = {.running = {-1, -1}};
    mrc_status_t st = MRC_OK;
    if (n <= 0)
        return MRC_OK;
    for (int k = 0; k < MRC__WL_STREAMS; k++)
        s.fifo[k] = malloc((size_t)n * sizeof *s.fifo[k]);
    s.indeg = malloc((size_t)n * sizeof *s.indeg);
    s.fresh = malloc((size_t)n * sizeof *s.fresh);
    if (!s.fifo[0] || !s.fifo[1] || !s.indeg || !s.fresh)
        st = mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    if (st == MRC_OK)
        st = dependents(tasks, n, &s.first, &s.list);
    if (st == MRC_OK)
        st = play(&s, tasks, n, start, end);
    for (int k = 0; k < MRC__WL_STREAMS; k++)
        free(s.fifo[k]);
    free(s.indeg);
    free(s.fresh);
    free(s.first);
    free(s.list);
    return st;
}

/* Depth-first over the dependencies without recursion (a chain of a
 * million ops would overflow the stack): colour 1 on the path, 2 done.
 * A dependency on a task on the path closes a cycle, read back from the
 * path. */
int mrc__wl_find_cycle(const mrc__wl_task_t *t, int n, int *cycle)
{
    char *colour = calloc((size_t)n, 1);
    int *path = malloc((size_t)n * sizeof *path);
    int *next = malloc((size_t)n * sizeof *next);
    int len = 0;
    for (int root = 0; colour && path && next && root < n && !len; root++) {
        if (colour[root])
            continue;
        int depth = 0;
        path[depth++] = root;
        next[root] = 0;
        colour[root] = 1;
        while (depth > 0 && !len) {
            int i = path[depth - 1];
            if (next[i] == t[i].num_deps) {
                colour[i] = 2;
                depth--;
                continue;
            }
            int d = t[i].deps[next[i]++];
            if (colour[d] == 0) {
                colour[d] = 1;
                next[d] = 0;
                path[depth++] = d;
            } else if (colour[d] == 1) {
                int k = depth - 1;
                while (path[k] != d)
                    k--;
                for (; k < depth; k++)
                    cycle[len++] = path[k];
            }
        }
    }
    free(colour);
    free(path);
    free(next);
    return len;
}

double mrc__wl_uncovered(const double *as, const double *ae, int na,
                         const double *bs, const double *be, int nb)
{
    double total = 0;
    int j = 0;
    for (int i = 0; i < nb; i++) {
        double lo = bs[i], len = be[i] - bs[i];
        /* Intervals of a that end before this one starts cover nothing
         * of it nor of later ones. */
        while (j < na && ae[j] <= lo)
            j++;
        for (int k = j; k < na && as[k] < be[i]; k++) {
            double a = as[k] > lo ? as[k] : lo;
            double b = ae[k] < be[i] ? ae[k] : be[i];
            if (b > a)
                len -= b - a;
        }
        total += len;
    }
    return total;
}

/* ---- reading the mrc format ---------------------------------------- */

/* Refuses keys outside `known`, to catch misspellings ("duration" for
 * "duration_us") rather than use a default silently. */
static mrc_status_t check_keys(json_t *obj, const char *const *known,
                               const char *entry)
{
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val)
    {
        int ok = 0;
        for (const char *const *k = known; *k; k++)
            ok |= strcmp(key, *k) == 0;
        if (ok)
            continue;
        mrc__strbuf_t sb;
        mrc__sb_init(&sb);
        for (const char *const *k = known; *k; k++)
            mrc__sb_printf(&sb, "%s%s", k == known ? "" : ", ", *k);
        mrc_status_t st = mrc__error(MRC_ERR_PARSE, "%s: unknown field "
                                     "\"%s\" (known: %s)", entry, key,
                                     sb.failed ? "?" : sb.data);
        mrc__sb_free(&sb);
        return st;
    }
    return MRC_OK;
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
        return mrc__error(MRC_ERR_PARSE, "%s: \"%s\" must be a string",
                          entry, key);
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
        return mrc__error(MRC_ERR_PARSE, "%s: missing \"size\" (bytes per "
                          "node, such as 25M)", entry);
    if (json_is_integer(v) && json_integer_value(v) > 0)
        *out = (uint64_t)json_integer_value(v);
    else if (!json_is_string(v) ||
             mrc__parse_size(json_string_value(v), out) || *out == 0)
        return mrc__error(MRC_ERR_PARSE, "%s: \"size\" must be a positive "
                          "number of bytes (an integer, or a string such as "
                          "\"25M\")", entry);
    if (*out > WL_MAX_SIZE)
        return mrc__error(MRC_ERR_PARSE, "%s: \"size\" %llu is beyond the "
                          "simulator's limit of 1 TiB per node", entry,
                          (unsigned long long)*out);
    return MRC_OK;
}

/* "deps": an array of ids (strings). */
static mrc_status_t get_deps(json_t *o, const char *entry, wl_op_t *op)
{
    json_t *v = json_object_get(o, "deps");
    if (!v)
        return MRC_OK;
    if (!json_is_array(v))
        return mrc__error(MRC_ERR_PARSE, "%s: \"deps\" must be an array of "
                          "op ids", entry);
    size_t n = json_array_size(v);
    op->dep_ids = calloc(n ? n : 1, sizeof *op->dep_ids);
    if (!op->dep_ids)
        return mrc__error(MRC_ERR_NO_MEMORY, "%s: out of memory", entry);
    for (size_t k = 0; k < n; k++) {
        json_t *d = json_array_get(v, k);
        if (!json_is_string(d))
            return mrc__error(MRC_ERR_PARSE, "%s: \"deps\"[%zu] must be an "
                              "op id (a string)", entry, k);
        if (!(op->dep_ids[k] = mrc__strdup(json_string_value(d))))
            return mrc__error(MRC_ERR_NO_MEMORY, "%s: out of memory", entry);
        op->num_deps = (int)k + 1;
    }
    return MRC_OK;
}

static mrc_status_t read_compute(json_t *o, const char *entry, wl_op_t *op)
{
    static const char *const known[] = {"id", "kind", "duration_us", "deps",
                                        NULL};
    mrc_status_t st = check_keys(o, known, entry);
    if (st != MRC_OK)
        return st;
    json_t *v = json_object_get(o, "duration_us");
    if (!v)
        return mrc__error(MRC_ERR_PARSE, "%s: missing \"duration_us\"",
                          entry);
    op->duration_us = json_is_number(v) ? json_number_value(v) : -1;
    if (!isfinite(op->duration_us) || op->duration_us < 0 ||
        op->duration_us > WL_MAX_DURATION_US)
        return mrc__error(MRC_ERR_PARSE, "%s: \"duration_us\" must be a "
                          "number from 0 to %.0f (a day)", entry,
                          WL_MAX_DURATION_US);
    return MRC_OK;
}

/* Fields that only some collectives take are refused on the others, so
 * that a root given to an allreduce is not ignored without a word. */
static mrc_status_t check_applies(json_t *o, const char *entry,
                                  const wl_op_t *op)
{
    int reduces = op->coll == MRC_ALLREDUCE || op->coll == MRC_REDUCE ||
                  op->coll == MRC_REDUCE_SCATTER;
    int rooted = op->coll == MRC_REDUCE || op->coll == MRC_BROADCAST;
    if (json_object_get(o, "op") && !reduces)
        return mrc__error(MRC_ERR_PARSE, "%s: \"op\" does not apply to %s "
                          "(it reduces nothing)", entry,
                          mrc_collective_name(op->coll));
    if (json_object_get(o, "root") && !rooted)
        return mrc__error(MRC_ERR_PARSE, "%s: \"root\" does not apply to %s "
                          "(only reduce and broadcast have a root)", entry,
                          mrc_collective_name(op->coll));
    if (json_object_get(o, "groups") && json_object_get(o, "replica_size"))
        return mrc__error(MRC_ERR_PARSE, "%s: \"groups\" and "
                          "\"replica_size\" exclude each other", entry);
    if (op->size % mrc_dtype_size(op->dtype))
        return mrc__error(MRC_ERR_PARSE, "%s: \"size\" %llu is not a "
                          "whole number of %s elements", entry,
                          (unsigned long long)op->size,
                          mrc_dtype_name(op->dtype));
    return MRC_OK;
}

static mrc_status_t read_groups(json_t *o, const char *entry, wl_op_t *op)
{
    json_t *g = json_object_get(o, "groups");
    json_t *r = json_object_get(o, "replica_size");
    if (g && (!json_is_string(g) || !*json_string_value(g)))
        return mrc__error(MRC_ERR_PARSE, "%s: \"groups\" must be a string "
                          "such as \"4+4\" or \"0,4+1,5\"", entry);
    if (g && !(op->groups = mrc__strdup(json_string_value(g))))
        return mrc__error(MRC_ERR_NO_MEMORY, "%s: out of memory", entry);
    if (r && (!json_is_integer(r) || json_integer_value(r) < 1 ||
              json_integer_value(r) > MRC_TOPO_MAX_NODES))
        return mrc__error(MRC_ERR_PARSE, "%s: \"replica_size\" must be an "
                          "integer from 1 to %d", entry, MRC_TOPO_MAX_NODES);
    op->replica = r ? (int)json_integer_value(r) : 0;
    json_t *root = json_object_get(o, "root");
    if (root && (!json_is_integer(root) || json_integer_value(root) < 0 ||
                 json_integer_value(root) >= MRC_TOPO_MAX_NODES))
        return mrc__error(MRC_ERR_PARSE, "%s: \"root\" must be a rank "
                          "(an integer from 0)", entry);
    op->root = root ? (int)json_integer_value(root) : 0;
    return MRC_OK;
}

static mrc_status_t read_collective(json_t *o, const char *entry,
                                    wl_op_t *op)
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

static mrc_status_t read_op(json_t *o, size_t index, wl_op_t *op)
{
    char entry[96];
    snprintf(entry, sizeof entry, "ops[%zu]", index);
    if (!json_is_object(o))
        return mrc__error(MRC_ERR_PARSE, "%s: must be an object", entry);
    json_t *id = json_object_get(o, "id");
    if (!json_is_string(id) || !*json_string_value(id) ||
        mrc__has_control(json_string_value(id)))
        return mrc__error(MRC_ERR_PARSE, "%s: \"id\" must be a non-empty "
                          "string without control characters", entry);
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
    return mrc__error(MRC_ERR_PARSE, "%s: \"kind\" must be \"compute\" or "
                      "\"collective\"", entry);
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
    if (!json_is_integer(v) ||
        json_integer_value(v) != MRC_WORKLOAD_VERSION)
        return mrc__error(MRC_ERR_PARSE, "\"version\" must be %d (this mrc "
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
        return mrc__error(MRC_ERR_PARSE, "\"steps\" must be an integer from "
                          "1 to %d", WL_MAX_STEPS);
    *steps = s ? (int)json_integer_value(s) : 1;
    json_t *ops = json_object_get(root, "ops");
    if (!json_is_array(ops) || json_array_size(ops) == 0 ||
        json_array_size(ops) > WL_MAX_OPS)
        return mrc__error(MRC_ERR_PARSE, "\"ops\" must be an array of 1 to "
                          "%d ops", WL_MAX_OPS);
    return MRC_OK;
}

static mrc_status_t alloc_ops(mrc_workload_t *w, size_t n)
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
        st = alloc_ops(w, json_array_size(ops));
    for (size_t i = 0; st == MRC_OK && i < json_array_size(ops); i++) {
        w->num_ops = (int)i + 1;
        st = read_op(json_array_get(ops, i), i, &w->ops[i]);
    }
    return st;
}

/* ---- reading a Chakra execution trace ------------------------------ */

/*
 * Chakra's jsonizer writes the trace's GlobalMetadata and then each Node
 * as protobuf's JSON mapping, one object after another: camelCase names
 * (ctrlDeps, durationMicros, int64Val), 64-bit integers as strings, enums
 * by name. A JSON array of such nodes is read too, and snake_case names.
 * Compute and other local nodes become compute ops of their duration;
 * COMM_COLL_NODE a collective of comm_type and comm_size over every node.
 */

/* An integer that protobuf's JSON may write as a number or a string. */
static int pb_uint(json_t *v, uint64_t *out)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        long long x;
        char *end;
        const char *s = json_string_value(v);
        x = strtoll(s, &end, 10);
        if (*s >= '0' && *s <= '9' && !*end && x >= 0) {
            *out = (uint64_t)x;
            return 0;
        }
    }
    return -1;
}

static json_t *pb_get(json_t *o, const char *camel, const char *snake)
{
    json_t *v = json_object_get(o, camel);
    return v ? v : json_object_get(o, snake);
}

/* The integer value of the attribute `name`, in any of its *Val keys. */
static int pb_attr(json_t *node, const char *name, uint64_t *out)
{
    json_t *attrs = json_object_get(node, "attr"), *a;
    size_t i;
    json_array_foreach(attrs, i, a)
    {
        json_t *n = json_object_get(a, "name");
        if (!json_is_string(n) || strcmp(json_string_value(n), name))
            continue;
        const char *key;
        json_t *v;
        json_object_foreach(a, key, v)
        {
            size_t len = strlen(key);
            if (len > 3 && (strcmp(key + len - 3, "Val") == 0 ||
                            strcmp(key + len - 3, "val") == 0))
                return pb_uint(v, out);
        }
    }
    return -1;
}

static mrc_status_t chakra_deps(json_t *node, const char *entry,
                                wl_op_t *op)
{
    json_t *lists[2] = {pb_get(node, "ctrlDeps", "ctrl_deps"),
                        pb_get(node, "dataDeps", "data_deps")};
    size_t n = json_array_size(lists[0]) + json_array_size(lists[1]);
    op->dep_ids = calloc(n ? n : 1, sizeof *op->dep_ids);
    if (!op->dep_ids)
        return mrc__error(MRC_ERR_NO_MEMORY, "%s: out of memory", entry);
    for (int l = 0; l < 2; l++) {
        json_t *d;
        size_t k;
        json_array_foreach(lists[l], k, d)
        {
            uint64_t id;
            char text[24];
            if (pb_uint(d, &id))
                return mrc__error(MRC_ERR_PARSE, "%s: a dependency is not "
                                  "a node id", entry);
            snprintf(text, sizeof text, "%llu", (unsigned long long)id);
            if (!(op->dep_ids[op->num_deps] = mrc__strdup(text)))
                return mrc__error(MRC_ERR_NO_MEMORY, "%s: out of memory",
                                  entry);
            op->num_deps++;
        }
    }
    return MRC_OK;
}

/* comm_type (CollectiveCommType) as a collective of mrc's, or -1. */
static int chakra_collective(uint64_t type)
{
    switch (type) {
    case 0: return MRC_ALLREDUCE;
    case 1: return MRC_REDUCE;
    case 2: return MRC_ALLGATHER;
    case 5: return MRC_BROADCAST;
    case 7: return MRC_REDUCE_SCATTER;
    default: return -1;
    }
}

static mrc_status_t chakra_comm(json_t *node, const char *entry, wl_op_t *op)
{
    uint64_t type, size;
    if (pb_attr(node, "comm_type", &type) || chakra_collective(type) < 0)
        return mrc__error(MRC_ERR_PARSE, "%s: attribute comm_type must be "
                          "ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST or "
                          "REDUCE_SCATTER (0, 1, 2, 5, 7)", entry);
    if (pb_attr(node, "comm_size", &size) || size == 0 ||
        size > WL_MAX_SIZE)
        return mrc__error(MRC_ERR_PARSE, "%s: attribute comm_size must be "
                          "1 byte to 1 TiB", entry);
    op->kind = MRC_WORKLOAD_COLLECTIVE;
    op->coll = (mrc_collective_t)chakra_collective(type);
    op->size = size;
    /* The trace gives bytes, not elements: float32 when they divide. */
    op->dtype = size % 4 ? MRC_UINT8 : MRC_FLOAT32;
    op->op = MRC_SUM;
    op->algo = MRC_ALGO_RINGS;
    return MRC_OK;
}

static mrc_status_t read_chakra_node(json_t *node, size_t index,
                                     wl_op_t *op)
{
    char entry[64];
    uint64_t id, dur = 0;
    snprintf(entry, sizeof entry, "node %zu of the trace", index);
    if (!json_is_object(node) || pb_uint(json_object_get(node, "id"), &id))
        return mrc__error(MRC_ERR_PARSE, "%s: must be an object with an "
                          "\"id\"", entry);
    snprintf(entry, sizeof entry, "Chakra node %llu", (unsigned long long)id);
    char text[24];
    snprintf(text, sizeof text, "%llu", (unsigned long long)id);
    if (!(op->id = mrc__strdup(text)))
        return mrc__error(MRC_ERR_NO_MEMORY, "%s: out of memory", entry);
    mrc_status_t st = chakra_deps(node, entry, op);
    if (st != MRC_OK)
        return st;
    json_t *type = json_object_get(node, "type");
    const char *t = json_is_string(type) ? json_string_value(type) : "";
    uint64_t tn = 0;
    int is_int = pb_uint(type, &tn) == 0;
    if (strcmp(t, "COMM_COLL_NODE") == 0 || (is_int && tn == 7))
        return chakra_comm(node, entry, op);
    if (strcmp(t, "COMM_SEND_NODE") == 0 || strcmp(t, "COMM_RECV_NODE") == 0 ||
        (is_int && (tn == 5 || tn == 6)))
        return mrc__error(MRC_ERR_PARSE, "%s: point-to-point nodes (send, "
                          "recv) are not simulated", entry);
    json_t *d = pb_get(node, "durationMicros", "duration_micros");
    if (d && pb_uint(d, &dur))
        return mrc__error(MRC_ERR_PARSE, "%s: durationMicros must be a "
                          "non-negative integer", entry);
    op->kind = MRC_WORKLOAD_COMPUTE;
    op->duration_us = (double)dur;
    return MRC_OK;
}

/* The values of the text one after another (the jsonizer's stream), or
 * the elements of a lone array; an object without an "id" is metadata.
 * Appends each node to `nodes`. */
static mrc_status_t chakra_nodes(const char *text, size_t len, json_t *nodes)
{
    size_t pos = 0;
    while (pos < len) {
        json_error_t jerr;
        json_t *v = json_loadb(text + pos, len - pos,
                               JSON_DISABLE_EOF_CHECK |
                                   JSON_REJECT_DUPLICATES,
                               &jerr);
        if (!v)
            return mrc__error(MRC_ERR_PARSE, "JSON syntax error at byte "
                              "%zu: %s", pos + (size_t)jerr.position,
                              jerr.text);
        int ok = json_is_array(v) || json_is_object(v);
        if (json_is_array(v))
            json_array_extend(nodes, v);
        else if (json_object_get(v, "id"))
            json_array_append(nodes, v);
        json_decref(v);
        if (!ok)
            return mrc__error(MRC_ERR_PARSE, "a Chakra trace holds objects "
                              "(its metadata and nodes), not other values");
        /* With JSON_DISABLE_EOF_CHECK, position is how far it read. */
        pos += (size_t)jerr.position;
        while (pos < len && strchr(" \t\r\n", text[pos]))
            pos++;
    }
    return MRC_OK;
}

static mrc_status_t read_chakra(const char *text, size_t len,
                                mrc_workload_t *w)
{
    json_t *nodes = json_array();
    mrc_status_t st = nodes ? chakra_nodes(text, len, nodes)
                            : mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    size_t n = json_array_size(nodes);
    if (st == MRC_OK && (n == 0 || n > WL_MAX_OPS))
        st = n ? mrc__error(MRC_ERR_PARSE, "a Chakra trace with %zu nodes: "
                            "at most %d are read", n, WL_MAX_OPS)
               : mrc__error(MRC_ERR_PARSE, "neither an mrc workload "
                            "(\"format\": \"" WL_FORMAT "\") nor a Chakra "
                            "trace (no node with an \"id\")");
    w->steps = 1;
    if (st == MRC_OK)
        st = alloc_ops(w, n);
    for (size_t i = 0; st == MRC_OK && i < n; i++) {
        w->num_ops = (int)i + 1;
        st = read_chakra_node(json_array_get(nodes, i), i, &w->ops[i]);
    }
    json_decref(nodes);
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
        wl_op_t *o = &w->ops[i];
        o->deps = malloc((o->num_deps ? (size_t)o->num_deps : 1) *
                         sizeof *o->deps);
        if (!o->deps)
            return mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
        for (int d = 0; d < o->num_deps; d++) {
            o->deps[d] = find_id(keys, w->num_ops, o->dep_ids[d]);
            if (o->deps[d] < 0)
                return mrc__error(MRC_ERR_PARSE, "op \"%s\": \"deps\" names "
                                  "\"%s\", which is no op's id", o->id,
                                  o->dep_ids[d]);
            if (o->deps[d] == i)
                return mrc__error(MRC_ERR_PARSE, "op \"%s\": \"deps\" names "
                                  "the op itself", o->id);
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
            st = mrc__error(MRC_ERR_PARSE, "op \"%s\": the id is used twice "
                            "(ops[%d] and ops[%d])", keys[i].id,
                            x < y ? x : y, x < y ? y : x);
    }
    if (st == MRC_OK)
        st = resolve_deps(w, keys);
    free(keys);
    return st;
}

/* The tasks of the workload's ops (durations of collectives left 0). */
static mrc__wl_task_t *tasks_of(const mrc_workload_t *w)
{
    size_t n = w->num_ops > 0 ? (size_t)w->num_ops : 1;
    mrc__wl_task_t *t = calloc(n, sizeof *t);
    for (int i = 0; t && i < w->num_ops; i++) {
        const wl_op_t *o = &w->ops[i];
        t[i] = (mrc__wl_task_t){
            .stream = o->kind == MRC_WORKLOAD_COMPUTE ? MRC__WL_COMPUTE
                                                      : MRC__WL_COMM,
            .duration_us = o->kind == MRC_WORKLOAD_COMPUTE ? o->duration_us
                                                           : 0,
            .num_deps = o->num_deps,
            .deps = o->deps};
    }
    return t;
}

/* A cycle named op by op: "a -> b -> a" (each waits for the next). */
static mrc_status_t check_cycles(const mrc_workload_t *w, int *cycle)
{
    mrc__wl_task_t *t = tasks_of(w);
    if (!t)
        return mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    int len = mrc__wl_find_cycle(t, w->num_ops, cycle);
    free(t);
    if (len == 0)
        return MRC_OK;
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    for (int k = 0; k < len; k++)
        mrc__sb_printf(&sb, "\"%s\" -> ", w->ops[cycle[k]].id);
    mrc__sb_printf(&sb, "\"%s\"", w->ops[cycle[0]].id);
    mrc_status_t st = mrc__error(MRC_ERR_PARSE, "op \"%s\": \"deps\" make a "
                                 "cycle (each waits for the next): %s",
                                 w->ops[cycle[0]].id,
                                 sb.failed ? "?" : sb.data);
    mrc__sb_free(&sb);
    return st;
}

/* The mrc format is an object with "format" (or, misspelt, with
 * "ops"); anything else is read as a Chakra trace. */
static mrc_status_t read_any(const char *text, size_t len, mrc_workload_t *w)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_DISABLE_EOF_CHECK |
                              JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return mrc__error(MRC_ERR_PARSE, "%d:%d: JSON syntax error: %s",
                          jerr.line, jerr.column, jerr.text);
    int mine = json_is_object(root) && (json_object_get(root, "format") ||
                                        json_object_get(root, "ops"));
    mrc_status_t st;
    if (!mine) {
        st = read_chakra(text, len, w);
    } else {
        size_t pos = (size_t)jerr.position;
        while (pos < len && strchr(" \t\r\n", text[pos]))
            pos++;
        st = pos < len ? mrc__error(MRC_ERR_PARSE, "text after the "
                                    "workload's object (at byte %zu)", pos)
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

/* ---- simulating a step --------------------------------------------- */

void mrc_workload_result_destroy(mrc_workload_result_t *r)
{
    if (!r)
        return;
    free(r->ops);
    free(r);
}

static int same_collective(const wl_op_t *a, const wl_op_t *b)
{
    return a->coll == b->coll && a->size == b->size &&
           a->dtype == b->dtype && a->op == b->op && a->root == b->root &&
           a->replica == b->replica && a->algo == b->algo &&
           (a->groups == b->groups ||
            (a->groups && b->groups && strcmp(a->groups, b->groups) == 0));
}

/* One collective as `mrc sim` runs it: embedding, the family (the
 * selector's on the links' model for auto), program, simulation. */
static mrc_status_t sim_collective(const wl_op_t *o, const mrc_topo_t *t,
                                   const mrc_embed_config_t *ec0,
                                   const mrc_sim_config_t *cfg,
                                   mrc_sim_result_t **out)
{
    mrc_embed_config_t ec = *ec0;
    if (o->groups || o->replica) {
        ec.groups = o->groups;
        ec.replica_size = o->replica;
    }
    mrc_embedding_t *e = NULL;
    mrc_program_t *p = NULL;
    mrc_compile_config_t cc = {.collective = o->coll,
                               .count = (size_t)(o->size /
                                                 mrc_dtype_size(o->dtype)),
                               .dtype = o->dtype,
                               .op = o->op,
                               .root = o->root,
                               .algo = o->algo};
    mrc_status_t st = mrc_embed_create(t, &ec, &e);
    if (st == MRC_OK && cc.algo == MRC_ALGO_AUTO) {
        mrc__select_input_t in = {.embedding = e, .topo = t, .cc = cc,
                                  .group = -1, .memory_ok = 1, .ref_ok = 1};
        mrc__selection_t sel;
        st = mrc__select(&in, MRC_ALGO_AUTO, &sel, NULL);
        cc.algo = sel.chosen;
    }
    if (st == MRC_OK)
        st = mrc_program_compile(e, &cc, &p);
    if (st == MRC_OK)
        st = mrc__select_sim(p, t, cfg, out);
    mrc_program_destroy(p);
    mrc_embed_destroy(e);
    return st;
}

/* The time of every collective op, each distinct one simulated once;
 * energy summed over the ops. */
static mrc_status_t time_collectives(const mrc_workload_t *w,
                                     const mrc_topo_t *t,
                                     const mrc_embed_config_t *ec,
                                     const mrc_sim_config_t *cfg,
                                     mrc__wl_task_t *tasks,
                                     mrc_workload_result_t *r)
{
    /* first[k]: the first op of the k-th distinct collective. */
    int *first = malloc((size_t)w->num_ops * sizeof *first);
    double *energy = calloc((size_t)w->num_ops * 2, sizeof *energy);
    mrc_status_t st = first && energy ? MRC_OK
                                      : mrc__error(MRC_ERR_NO_MEMORY,
                                                   "workload: out of memory");
    for (int i = 0; st == MRC_OK && i < w->num_ops; i++) {
        const wl_op_t *o = &w->ops[i];
        if (o->kind != MRC_WORKLOAD_COLLECTIVE)
            continue;
        int j = i;
        for (int k = 0; k < r->distinct_collectives && j == i; k++)
            if (same_collective(&w->ops[first[k]], o))
                j = first[k];
        if (j == i) {
            first[r->distinct_collectives] = i;
            mrc_sim_result_t *s = NULL;
            st = sim_collective(o, t, ec, cfg, &s);
            if (st != MRC_OK) {
                mrc__error_prefix("op \"%s\" (%s of %llu bytes)", o->id,
                                  mrc_collective_name(o->coll),
                                  (unsigned long long)o->size);
                break;
            }
            tasks[i].duration_us = s->time_us;
            energy[2 * i] = s->energy_j;
            energy[2 * i + 1] = s->energy_no_gating_j;
            r->distinct_collectives++;
            mrc_sim_result_destroy(s);
        }
        tasks[i].duration_us = tasks[j].duration_us;
        r->comm_us += tasks[i].duration_us;
        r->energy_j += energy[2 * j];
        r->energy_no_gating_j += energy[2 * j + 1];
    }
    free(first);
    free(energy);
    return st;
}

/* Power of every link on (W): the energy of the time no collective
 * runs, when idle links are not switched off. */
static double links_power_w(const mrc_topo_t *t, const mrc_sim_config_t *cfg)
{
    double per_link = cfg->link_power_w > 0 ? cfg->link_power_w : 0.5;
    double links = 0;
    for (int i = 0; i < mrc_topo_num_links(t); i++)
        links += mrc_topo_link(t, i)->count;
    return per_link * links;
}

static int cmp_start(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Exposed communication: collective time that no compute overlaps. Each
 * stream runs one op at a time, so its intervals sorted by start are
 * disjoint. */
static mrc_status_t exposed(const mrc_workload_result_t *r, double *out)
{
    size_t n = r->num_ops > 0 ? (size_t)r->num_ops : 1;
    /* (start, end) pairs: compute from the front, collectives from the
     * back. */
    double *v = malloc(n * 2 * sizeof *v), *c = v, *m = v;
    if (!v)
        return mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    int nc = 0, nm = 0;
    for (int i = 0; i < r->num_ops; i++) {
        const mrc_workload_op_result_t *o = &r->ops[i];
        double *p = o->kind == MRC_WORKLOAD_COMPUTE ? &c[2 * nc++]
                                                    : &v[2 * (n - ++nm)];
        p[0] = o->start_us;
        p[1] = o->end_us;
    }
    m = v + 2 * (n - (size_t)nm);
    qsort(c, (size_t)nc, 2 * sizeof *v, cmp_start);
    qsort(m, (size_t)nm, 2 * sizeof *v, cmp_start);
    /* Split into the start and end lists the sweep takes. */
    double *t = malloc(n * 4 * sizeof *t);
    if (!t) {
        free(v);
        return mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    }
    for (int k = 0; k < nc; k++) {
        t[k] = c[2 * k];
        t[n + k] = c[2 * k + 1];
    }
    for (int k = 0; k < nm; k++) {
        t[2 * n + k] = m[2 * k];
        t[3 * n + k] = m[2 * k + 1];
    }
    *out = mrc__wl_uncovered(t, t + n, nc, t + 2 * n, t + 3 * n, nm);
    free(t);
    free(v);
    return MRC_OK;
}

static mrc_status_t fill_result(const mrc_workload_t *w,
                                const mrc__wl_task_t *tasks,
                                const double *start, const double *end,
                                mrc_workload_result_t *r)
{
    r->ops = calloc((size_t)w->num_ops, sizeof *r->ops);
    if (!r->ops)
        return mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    r->num_ops = w->num_ops;
    r->steps = w->steps;
    for (int i = 0; i < w->num_ops; i++) {
        r->ops[i] = (mrc_workload_op_result_t){.id = w->ops[i].id,
                                               .kind = w->ops[i].kind,
                                               .start_us = start[i],
                                               .end_us = end[i]};
        if (end[i] > r->step_us)
            r->step_us = end[i];
        if (tasks[i].stream == MRC__WL_COMPUTE)
            r->compute_us += tasks[i].duration_us;
    }
    r->total_us = r->step_us * r->steps;
    return exposed(r, &r->exposed_comm_us);
}

mrc_status_t mrc_sim_workload(const mrc_workload_t *w, const mrc_topo_t *t,
                              const mrc_embed_config_t *ec,
                              const mrc_sim_config_t *cfg,
                              mrc_workload_result_t **out)
{
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_sim_workload: out is "
                                               "NULL");
    *out = NULL;
    if (!w || !t || !ec || !cfg)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_sim_workload: a "
                                               "workload, topology, "
                                               "embedding and simulator "
                                               "config are needed");
    mrc_workload_result_t *r = calloc(1, sizeof *r);
    mrc__wl_task_t *tasks = tasks_of(w);
    double *times = malloc((size_t)w->num_ops * 2 * sizeof *times);
    mrc_status_t st = r && tasks && times
                          ? MRC_OK
                          : mrc__error(MRC_ERR_NO_MEMORY,
                                       "workload: out of memory");
    if (st == MRC_OK)
        st = time_collectives(w, t, ec, cfg, tasks, r);
    if (st == MRC_OK)
        st = mrc__wl_schedule(tasks, w->num_ops, times, times + w->num_ops);
    if (st == MRC_OK)
        st = fill_result(w, tasks, times, times + w->num_ops, r);
    if (st == MRC_OK)
        /* Links off while no collective runs; on, they draw power then. */
        r->energy_no_gating_j +=
            (r->step_us - r->comm_us) * 1e-6 * links_power_w(t, cfg);
    free(tasks);
    free(times);
    if (st != MRC_OK) {
        mrc_workload_result_destroy(r);
        return st;
    }
    *out = r;
    return MRC_OK;
}
