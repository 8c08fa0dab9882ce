/*
 * Chakra execution traces as workloads (docs/simulator.md, "Chakra
 * execution traces").
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "sim/workload.h"

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
                                mrc__workload_op_t *op)
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
                return mrc__error(MRC_ERR_PARSE,
                                  "%s: a dependency is not "
                                  "a node id",
                                  entry);
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

static mrc_status_t chakra_comm(json_t *node, const char *entry,
                                mrc__workload_op_t *op)
{
    uint64_t type, size;
    if (pb_attr(node, "comm_type", &type) || chakra_collective(type) < 0)
        return mrc__error(MRC_ERR_PARSE,
                          "%s: attribute comm_type must be "
                          "ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST or "
                          "REDUCE_SCATTER (0, 1, 2, 5, 7)",
                          entry);
    if (pb_attr(node, "comm_size", &size) || size == 0 || size > WL_MAX_SIZE)
        return mrc__error(MRC_ERR_PARSE,
                          "%s: attribute comm_size must be "
                          "1 byte to 1 TiB",
                          entry);
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
                                     mrc__workload_op_t *op)
{
    char entry[64];
    uint64_t id, dur = 0;
    snprintf(entry, sizeof entry, "node %zu of the trace", index);
    if (!json_is_object(node) || pb_uint(json_object_get(node, "id"), &id))
        return mrc__error(MRC_ERR_PARSE,
                          "%s: must be an object with an "
                          "\"id\"",
                          entry);
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
        return mrc__error(MRC_ERR_PARSE,
                          "%s: point-to-point nodes (send, "
                          "recv) are not simulated",
                          entry);
    json_t *d = pb_get(node, "durationMicros", "duration_micros");
    if (d && pb_uint(d, &dur))
        return mrc__error(MRC_ERR_PARSE,
                          "%s: durationMicros must be a "
                          "non-negative integer",
                          entry);
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
        json_t *v =
            json_loadb(text + pos, len - pos,
                       JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &jerr);
        if (!v)
            return mrc__error(MRC_ERR_PARSE,
                              "JSON syntax error at byte "
                              "%zu: %s",
                              pos + (size_t)jerr.position, jerr.text);
        int ok = json_is_array(v) || json_is_object(v);
        if (json_is_array(v))
            json_array_extend(nodes, v);
        else if (json_object_get(v, "id"))
            json_array_append(nodes, v);
        json_decref(v);
        if (!ok)
            return mrc__error(MRC_ERR_PARSE,
                              "a Chakra trace holds objects "
                              "(its metadata and nodes), not other values");
        /* With JSON_DISABLE_EOF_CHECK, position is how far it read. */
        pos += (size_t)jerr.position;
        while (pos < len && strchr(" \t\r\n", text[pos]))
            pos++;
    }
    return MRC_OK;
}

mrc_status_t mrc__workload_read_chakra(const char *text, size_t len,
                                       mrc_workload_t *w)
{
    json_t *nodes = json_array();
    mrc_status_t st = nodes ? chakra_nodes(text, len, nodes)
                            : mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    size_t n = json_array_size(nodes);
    if (st == MRC_OK && (n == 0 || n > WL_MAX_OPS))
        st = n ? mrc__error(MRC_ERR_PARSE,
                            "a Chakra trace with %zu nodes: "
                            "at most %d are read",
                            n, WL_MAX_OPS)
               : mrc__error(MRC_ERR_PARSE,
                            "neither an mrc workload "
                            "(\"format\": \"" WL_FORMAT "\") nor a Chakra "
                            "trace (no node with an \"id\")");
    w->steps = 1;
    if (st == MRC_OK)
        st = mrc__workload_alloc_ops(w, n);
    for (size_t i = 0; st == MRC_OK && i < n; i++) {
        w->num_ops = (int)i + 1;
        st = read_chakra_node(json_array_get(nodes, i), i, &w->ops[i]);
    }
    json_decref(nodes);
    return st;
}
