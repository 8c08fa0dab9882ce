/*
 * The topology file format (docs/topology-format.md): read with jansson,
 * written by hand so that the output is stable, one node or link per line,
 * and every number reads back to exactly the same value.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

#define TOPO_FORMAT  "mrc-topology"
#define TOPO_VERSION 1
enum { MAX_NAME = 256 };

/* Refuses keys outside `known` (NULL-terminated), to catch misspellings
 * such as "bandwith_gbps" instead of silently using a default. */
static mrc_status_t check_keys(json_t *obj, const char *const *known,
                               const char *entry)
{
    return mrc__json_known_keys(obj, known, entry, "key");
}

static mrc_status_t get_int(json_t *obj, const char *key, const char *entry,
                            int required, long long dflt, long long *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            return mrc__error(MRC_ERR_PARSE, "%s: missing \"%s\"", entry, key);
        *out = dflt;
        return MRC_OK;
    }
    if (!json_is_integer(v))
        return mrc__error(MRC_ERR_PARSE, "%s: \"%s\" must be an integer", entry,
                          key);
    *out = json_integer_value(v);
    return MRC_OK;
}

static mrc_status_t get_number(json_t *obj, const char *key, const char *entry,
                               double dflt, double *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        *out = dflt;
        return MRC_OK;
    }
    if (!json_is_number(v))
        return mrc__error(MRC_ERR_PARSE, "%s: \"%s\" must be a number", entry,
                          key);
    *out = json_number_value(v);
    return MRC_OK;
}

static mrc_status_t read_header(json_t *root)
{
    static const char *const known[] = {"format", "version", "name",
                                        "nodes",  "links",   NULL};
    if (!json_is_object(root))
        return mrc__error(MRC_ERR_PARSE,
                          "the top level must be a JSON object with "
                          "\"format\": \"" TOPO_FORMAT "\"");
    json_t *fmt = json_object_get(root, "format");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), TOPO_FORMAT))
        return mrc__error(MRC_ERR_PARSE,
                          "\"format\" must be \"" TOPO_FORMAT
                          "\" (this is not an mrc topology file)");
    long long version = 0;
    mrc_status_t st = get_int(root, "version", "top level", 1, 0, &version);
    if (st != MRC_OK)
        return st;
    if (version != TOPO_VERSION)
        return mrc__error(MRC_ERR_PARSE,
                          "\"version\" %lld is not supported (this mrc reads "
                          "version %d)",
                          version, TOPO_VERSION);
    st = check_keys(root, known, "top level");
    if (st != MRC_OK)
        return st;
    json_t *name = json_object_get(root, "name");
    if (name &&
        (!json_is_string(name) || strlen(json_string_value(name)) >= MAX_NAME))
        return mrc__error(MRC_ERR_PARSE,
                          "\"name\" must be a string of fewer than %d bytes",
                          MAX_NAME);
    /* Names are shown on terminals and written into other languages:
     * control characters have no business there (the writers escape them
     * anyway, for names that come through the C API). */
    if (name && mrc__has_control(json_string_value(name)))
        return mrc__error(MRC_ERR_PARSE, "\"name\" must not hold control "
                                         "characters (such as newline)");
    if (!json_is_array(json_object_get(root, "nodes")))
        return mrc__error(MRC_ERR_PARSE,
                          "missing \"nodes\" (an array of {\"id\": ...})");
    if (!json_is_array(json_object_get(root, "links")))
        return mrc__error(MRC_ERR_PARSE,
                          "missing \"links\" (an array of {\"a\": ..., "
                          "\"b\": ...})");
    return MRC_OK;
}

/* Fills the builder's nodes: ids must be 0..N-1, each once, in any order. */
static mrc_status_t read_nodes(json_t *nodes, mrc__topo_builder_t *tb)
{
    static const char *const known[] = {"id", "name", "x", "y", NULL};
    size_t n = json_array_size(nodes);
    unsigned char *seen = calloc(n ? n : 1, 1);
    mrc_status_t st = MRC_OK;
    if (!seen)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < n && st == MRC_OK; i++) {
        char entry[48];
        snprintf(entry, sizeof entry, "nodes[%zu]", i);
        json_t *node = json_array_get(nodes, i);
        long long id = 0;
        if (!json_is_object(node)) {
            st = mrc__error(MRC_ERR_PARSE,
                            "%s: must be an object with an "
                            "\"id\"",
                            entry);
            break;
        }
        st = check_keys(node, known, entry);
        if (st == MRC_OK)
            st = get_int(node, "id", entry, 1, 0, &id);
        if (st != MRC_OK)
            break;
        if (id < 0 || (size_t)id >= n) {
            st = mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                            "%s: id %lld out of range (ids are 0..%zu, one "
                            "per node)",
                            entry, id, n - 1);
            break;
        }
        if (seen[id]) {
            st = mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                            "%s: duplicate node id %lld", entry, id);
            break;
        }
        seen[id] = 1;
        json_t *name = json_object_get(node, "name");
        if (name) {
            if (!json_is_string(name) ||
                strlen(json_string_value(name)) >= MAX_NAME) {
                st = mrc__error(MRC_ERR_PARSE,
                                "%s: \"name\" must be a string of fewer than "
                                "%d bytes",
                                entry, MAX_NAME);
                break;
            }
            if (mrc__has_control(json_string_value(name))) {
                st = mrc__error(MRC_ERR_PARSE,
                                "%s: \"name\" must not hold "
                                "control characters (such as newline)",
                                entry);
                break;
            }
            tb->nodes[id].name = mrc__strdup(json_string_value(name));
            if (!tb->nodes[id].name)
                st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        }
        json_t *x = json_object_get(node, "x"), *y = json_object_get(node, "y");
        if (st == MRC_OK && (x || y)) {
            if (!json_is_number(x) || !json_is_number(y))
                st = mrc__error(MRC_ERR_PARSE,
                                "%s: \"x\" and \"y\" must both be numbers",
                                entry);
            else
                mrc__topo_builder_set_pos(tb, (int)id, json_number_value(x),
                                          json_number_value(y));
        }
    }
    free(seen);
    return st;
}

static mrc_status_t read_links(json_t *links, mrc__topo_builder_t *tb)
{
    static const char *const known[] = {
        "a", "b", "count", "bandwidth_gbps", "latency_ns", NULL};
    size_t n = json_array_size(links);
    if (n > MRC_TOPO_MAX_LINKS)
        return mrc__error(MRC_ERR_INVALID_TOPOLOGY, "%zu links (at most %d)", n,
                          MRC_TOPO_MAX_LINKS);
    for (size_t i = 0; i < n; i++) {
        char entry[48];
        snprintf(entry, sizeof entry, "links[%zu]", i);
        json_t *link = json_array_get(links, i);
        if (!json_is_object(link))
            return mrc__error(MRC_ERR_PARSE,
                              "%s: must be an object with "
                              "\"a\" and \"b\"",
                              entry);
        long long a = 0, b = 0, count = 1;
        double bw = 0, lat = 0;
        mrc_status_t st = check_keys(link, known, entry);
        if (st == MRC_OK)
            st = get_int(link, "a", entry, 1, 0, &a);
        if (st == MRC_OK)
            st = get_int(link, "b", entry, 1, 0, &b);
        if (st == MRC_OK)
            st = get_int(link, "count", entry, 0, 1, &count);
        if (st == MRC_OK)
            st = get_number(link, "bandwidth_gbps", entry,
                            MRC_TOPO_DEFAULT_BANDWIDTH_GBPS, &bw);
        if (st == MRC_OK)
            st = get_number(link, "latency_ns", entry,
                            MRC_TOPO_DEFAULT_LATENCY_NS, &lat);
        if (st != MRC_OK)
            return st;
        long long ends[2] = {a, b};
        for (int e = 0; e < 2; e++)
            if (ends[e] < 0 || ends[e] >= tb->num_nodes)
                return mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                                  "%s: unknown node %lld (nodes are 0..%d)",
                                  entry, ends[e], tb->num_nodes - 1);
        if (count < 1 || count > MRC_TOPO_MAX_LINK_COUNT)
            return mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                              "%s: count %lld (must be 1..%d)", entry, count,
                              MRC_TOPO_MAX_LINK_COUNT);
        mrc__topo_builder_add_link(tb, (long)a, (long)b, (long)count, bw, lat);
    }
    return MRC_OK;
}

mrc_status_t mrc_topo_parse_json(const char *text, size_t len,
                                 const char *origin, mrc_topo_t **out)
{
    const char *where = origin ? origin : "<json>";
    json_error_t jerr;
    mrc__topo_builder_t tb;
    mrc_status_t st;

    memset(&tb, 0, sizeof tb);
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_topo_parse_json: out is NULL");
    *out = NULL;
    if (!text)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_topo_parse_json: text is NULL");
    st = mrc__check_json_text(len, where);
    if (st != MRC_OK)
        return st;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return mrc__error(MRC_ERR_PARSE, "%s:%d:%d: JSON syntax error: %s",
                          where, jerr.line, jerr.column, jerr.text);

    st = read_header(root);
    if (st != MRC_OK)
        goto fail;
    json_t *nodes = json_object_get(root, "nodes");
    size_t num_nodes = json_array_size(nodes);
    if (num_nodes == 0) {
        st = mrc__error(MRC_ERR_INVALID_TOPOLOGY,
                        "\"nodes\" is empty (a topology has at least one "
                        "node)");
        goto fail;
    }
    json_t *name = json_object_get(root, "name");
    st = mrc__topo_builder_init(&tb,
                                num_nodes > (size_t)MRC_TOPO_MAX_NODES
                                    ? (long)MRC_TOPO_MAX_NODES + 1
                                    : (long)num_nodes,
                                name ? json_string_value(name) : NULL);
    if (st != MRC_OK)
        goto fail;
    st = read_nodes(nodes, &tb);
    if (st == MRC_OK)
        st = read_links(json_object_get(root, "links"), &tb);
    if (st != MRC_OK)
        goto fail;
    json_decref(root);
    return mrc__topo_builder_build(&tb, where, out);

fail:
    mrc__error_prefix("%s", where);
    mrc__topo_builder_free(&tb);
    json_decref(root);
    return st;
}

mrc_status_t mrc_topo_load(const char *path, mrc_topo_t **out)
{
    char *text = NULL;
    size_t len = 0;
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_topo_load: out is NULL");
    *out = NULL;
    if (!path)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_topo_load: path is NULL");
    mrc_status_t st = mrc__read_file(path, 0, &text, &len);
    if (st != MRC_OK)
        return st;
    st = mrc_topo_parse_json(text, len, path, out);
    free(text);
    return st;
}

mrc_status_t mrc_topo_to_json(const mrc_topo_t *t, char **json)
{
    mrc__strbuf_t sb;
    if (!t || !json)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_topo_to_json: NULL argument");
    *json = NULL;
    mrc__sb_init(&sb);
    mrc__sb_puts(&sb, "{\n  \"format\": \"" TOPO_FORMAT "\",\n");
    mrc__sb_printf(&sb, "  \"version\": %d,\n", TOPO_VERSION);
    if (t->name) {
        mrc__sb_puts(&sb, "  \"name\": ");
        mrc__sb_json_string(&sb, t->name);
        mrc__sb_puts(&sb, ",\n");
    }
    mrc__sb_puts(&sb, "  \"nodes\": [\n");
    for (int i = 0; i < t->num_nodes && !sb.failed; i++) {
        const mrc__topo_node_t *nd = &t->nodes[i];
        mrc__sb_printf(&sb, "    {\"id\": %d", i);
        if (nd->name) {
            mrc__sb_puts(&sb, ", \"name\": ");
            mrc__sb_json_string(&sb, nd->name);
        }
        if (nd->has_pos) {
            mrc__sb_puts(&sb, ", \"x\": ");
            mrc__sb_double(&sb, nd->x);
            mrc__sb_puts(&sb, ", \"y\": ");
            mrc__sb_double(&sb, nd->y);
        }
        mrc__sb_puts(&sb, i + 1 < t->num_nodes ? "},\n" : "}\n");
    }
    mrc__sb_puts(&sb, "  ],\n  \"links\": [\n");
    for (int i = 0; i < t->num_links && !sb.failed; i++) {
        const mrc_link_t *l = &t->links[i];
        mrc__sb_printf(&sb,
                       "    {\"a\": %d, \"b\": %d, \"count\": %d, "
                       "\"bandwidth_gbps\": ",
                       l->a, l->b, l->count);
        mrc__sb_double(&sb, l->bandwidth_gbps);
        mrc__sb_puts(&sb, ", \"latency_ns\": ");
        mrc__sb_double(&sb, l->latency_ns);
        mrc__sb_puts(&sb, i + 1 < t->num_links ? "},\n" : "}\n");
    }
    mrc__sb_puts(&sb, "  ]\n}\n");
    *json = mrc__sb_take(&sb);
    if (!*json)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory writing JSON");
    return MRC_OK;
}

mrc_status_t mrc_topo_save(const mrc_topo_t *t, const char *path)
{
    char *json = NULL;
    if (!path)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_topo_save: path is NULL");
    mrc_status_t st = mrc_topo_to_json(t, &json);
    if (st != MRC_OK)
        return st;
    /* Written whole or not at all, never through a planted link. */
    st = mrc__write_file(path, json, strlen(json));
    free(json);
    return st;
}
