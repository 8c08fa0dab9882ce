/*
 * An embedding's JSON form: written from a finished embedding, and read
 * back into the builder (so that a file is verified like a strategy).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed_internal.h"

static void ints(mrc__strbuf_t *sb, const int *v, int n)
{
    mrc__sb_puts(sb, "[");
    for (int i = 0; i < n; i++)
        mrc__sb_printf(sb, i ? ", %d" : "%d", v[i]);
    mrc__sb_puts(sb, "]");
}

static void figures(mrc__strbuf_t *sb, const mrc_embed_figures_t *f)
{
    mrc__sb_puts(sb, "\"bound_gbps\": ");
    mrc__sb_double(sb, f->bound_gbps);
    mrc__sb_puts(sb, ", \"algbw_gbps\": ");
    mrc__sb_double(sb, f->algbw_gbps);
    mrc__sb_puts(sb, ", \"efficiency\": ");
    mrc__sb_double(sb, f->efficiency);
}

/* Busy share of a link direction: its load over capacity, relative to the
 * most loaded direction (which sets the collective's time). */
static double max_ratio(const mrc_embedding_t *e)
{
    double worst = 0;
    for (int i = 0; i < mrc_topo_num_links(e->topo); i++) {
        const mrc_link_t *l = mrc_topo_link(e->topo, i);
        for (int d = 0; d < 2; d++) {
            double x = e->load[2 * i + d] / (l->count * l->bandwidth_gbps);
            worst = x > worst ? x : worst;
        }
    }
    return worst;
}

/* A group: its nodes, figures and rings with their hops. */
static void write_group(mrc__strbuf_t *sb, const mrc__embed_group_t *gr,
                        int last)
{
    mrc__sb_puts(sb, "  {\"nodes\": ");
    ints(sb, gr->nodes, gr->size);
    mrc__sb_puts(sb, ", ");
    figures(sb, &gr->figures);
    mrc__sb_puts(sb, ",\n   \"rings\": [\n");
    for (int r = 0; r < gr->num_rings; r++) {
        const mrc_ring_t *ring = &gr->rings[r];
        mrc__sb_puts(sb, "    {\"nodes\": ");
        ints(sb, ring->nodes, ring->size);
        mrc__sb_printf(sb, ", \"bidirectional\": %s, \"share\": ",
                       ring->bidirectional ? "true" : "false");
        mrc__sb_double(sb, ring->share);
        mrc__sb_puts(sb, ",\n     \"hops\": [\n");
        for (int i = 0; i < ring->size; i++) {
            const mrc_hop_t *h = &ring->hops[i];
            mrc__sb_printf(sb,
                           "       {\"from\": %d, \"to\": %d, "
                           "\"route\": ",
                           h->from, h->to);
            ints(sb, h->route, h->route_len);
            mrc__sb_puts(sb, ", \"links\": ");
            ints(sb, h->links, h->route_len - 1);
            mrc__sb_puts(sb, ", \"ports\": ");
            ints(sb, h->ports, h->route_len - 1);
            mrc__sb_puts(sb, i + 1 < ring->size ? "},\n" : "}\n");
        }
        mrc__sb_puts(sb, r + 1 < gr->num_rings ? "     ]},\n" : "     ]}\n");
    }
    mrc__sb_puts(sb, last ? "  ]}\n" : "  ]},\n");
}

/* Each link entry's load per direction, and its utilisation relative to
 * the most loaded direction. */
static void write_link_loads(mrc__strbuf_t *sb, const mrc_embedding_t *e)
{
    double worst = max_ratio(e);
    int nl = mrc_topo_num_links(e->topo);
    for (int i = 0; i < nl; i++) {
        const mrc_link_t *l = mrc_topo_link(e->topo, i);
        double cap = l->count * l->bandwidth_gbps;
        mrc__sb_printf(sb,
                       "  {\"link\": %d, \"a\": %d, \"b\": %d, "
                       "\"load\": [",
                       i, l->a, l->b);
        mrc__sb_double(sb, e->load[2 * i]);
        mrc__sb_puts(sb, ", ");
        mrc__sb_double(sb, e->load[2 * i + 1]);
        mrc__sb_puts(sb, "], \"utilisation\": [");
        mrc__sb_double(sb, worst > 0 ? e->load[2 * i] / cap / worst : 0);
        mrc__sb_puts(sb, ", ");
        mrc__sb_double(sb, worst > 0 ? e->load[2 * i + 1] / cap / worst : 0);
        mrc__sb_puts(sb, i + 1 < nl ? "]},\n" : "]}\n");
    }
}

mrc_status_t mrc_embed_to_json(const mrc_embedding_t *e, char **json)
{
    if (!e || !json)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_embed_to_json: NULL");
    *json = NULL;
    char *topo = NULL;
    mrc_status_t st = mrc_topo_to_json(e->topo, &topo);
    if (st != MRC_OK)
        return st;
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    mrc__sb_puts(&sb, "{\n\"topology\": ");
    mrc__sb_puts(&sb, topo);
    mrc_free(topo);
    mrc__sb_puts(&sb, ",\n\"strategy\": ");
    mrc__sb_json_string(&sb, e->strategy);
    if (e->method) {
        mrc__sb_puts(&sb, ",\n\"method\": ");
        mrc__sb_json_string(&sb, e->method);
    }
    mrc__sb_puts(&sb, ",\n\"groups\": [\n");
    for (int g = 0; g < e->num_groups; g++)
        write_group(&sb, &e->groups[g], g + 1 == e->num_groups);
    mrc__sb_puts(&sb, "],\n\"link_loads\": [\n");
    write_link_loads(&sb, e);
    mrc__sb_printf(&sb, "],\n\"idle_link_directions\": %d,\n", e->num_idle);
    mrc__sb_printf(&sb,
                   "\"physical_links\": %d,\n\"idle_physical_links\": "
                   "%d,\n\"idle_ports\": ",
                   mrc_topo_num_physical_links(e->topo), e->num_idle_physical);
    ints(&sb, e->idle_ports, mrc_topo_num_nodes(e->topo));
    mrc__sb_puts(&sb, ",\n");
    figures(&sb, &e->worst);
    mrc__sb_puts(&sb, "\n}\n");
    *json = mrc__sb_take(&sb);
    if (!*json)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory writing JSON");
    return MRC_OK;
}

/* ---- JSON in ----------------------------------------------------------- */

static mrc_status_t int_array(json_t *a, const char *what, int **out, int *n)
{
    if (!json_is_array(a))
        return mrc__error(MRC_ERR_PARSE, "%s must be an array of node ids",
                          what);
    size_t len = json_array_size(a);
    if (len > (size_t)MRC_TOPO_MAX_NODES)
        return mrc__error(MRC_ERR_PARSE, "%s is too long", what);
    *out = malloc((len ? len : 1) * sizeof **out);
    if (!*out)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < len; i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_integer(v) || json_integer_value(v) < -1 ||
            json_integer_value(v) > MRC_TOPO_MAX_NODES) {
            free(*out);
            *out = NULL;
            return mrc__error(MRC_ERR_PARSE, "%s[%zu] must be a node id", what,
                              i);
        }
        (*out)[i] = (int)json_integer_value(v);
    }
    *n = (int)len;
    return MRC_OK;
}

static mrc_status_t read_hops(mrc__embed_builder_t *b, int r, json_t *hops,
                              const char *where, const int *order, int n)
{
    if (!json_is_array(hops) || json_array_size(hops) != (size_t)n)
        return mrc__error(MRC_ERR_PARSE,
                          "%s: \"hops\" must be an array of %d hops, one "
                          "per node",
                          where, n);
    for (int i = 0; i < n; i++) {
        char what[160];
        json_t *h = json_array_get(hops, (size_t)i);
        snprintf(what, sizeof what, "%s, hop %d", where, i);
        if (!json_is_object(h))
            return mrc__error(MRC_ERR_PARSE, "%s: must be an object", what);
        json_t *from = json_object_get(h, "from"),
               *to = json_object_get(h, "to");
        if ((from && (!json_is_integer(from) ||
                      json_integer_value(from) != order[i])) ||
            (to && (!json_is_integer(to) ||
                    json_integer_value(to) != order[(i + 1) % n])))
            return mrc__error(MRC_ERR_INVALID_EMBEDDING,
                              "%s: must go from node %d to node %d, the next "
                              "node of the ring",
                              what, order[i], order[(i + 1) % n]);
        json_t *route = json_object_get(h, "route");
        if (!route)
            continue;
        int *nodes = NULL, *links = NULL, len = 0, nlinks = 0;
        char rw[200];
        snprintf(rw, sizeof rw, "%s: \"route\"", what);
        mrc_status_t st = int_array(route, rw, &nodes, &len);
        if (st == MRC_OK && len < 2)
            st = mrc__error(MRC_ERR_INVALID_EMBEDDING,
                            "%s: a route has at least two nodes", what);
        json_t *jl = json_object_get(h, "links");
        if (st == MRC_OK && jl) {
            snprintf(rw, sizeof rw, "%s: \"links\"", what);
            st = int_array(jl, rw, &links, &nlinks);
            if (st == MRC_OK && nlinks != len - 1)
                st = mrc__error(MRC_ERR_INVALID_EMBEDDING,
                                "%s: \"links\" needs one entry per step (%d)",
                                what, len - 1);
        }
        if (st == MRC_OK)
            mrc__embed_builder_set_route(b, r, i, nodes, len, links);
        free(nodes);
        free(links);
        if (st != MRC_OK)
            return st;
    }
    return MRC_OK;
}

static mrc_status_t read_groups(mrc__embed_builder_t *b, json_t *groups)
{
    if (!json_is_array(groups) || json_array_size(groups) == 0)
        return mrc__error(MRC_ERR_PARSE,
                          "\"groups\" must be a non-empty array");
    for (size_t g = 0; g < json_array_size(groups); g++) {
        json_t *jg = json_array_get(groups, g);
        char where[64];
        snprintf(where, sizeof where, "group %zu", g);
        if (!json_is_object(jg))
            return mrc__error(MRC_ERR_PARSE, "%s: must be an object", where);
        int *nodes = NULL, n = 0;
        char what[128];
        snprintf(what, sizeof what, "%s: \"nodes\"", where);
        mrc_status_t st =
            int_array(json_object_get(jg, "nodes"), what, &nodes, &n);
        if (st != MRC_OK)
            return st;
        int gi = mrc__embed_builder_add_group(b, nodes, n);
        free(nodes);
        if (gi < 0)
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        json_t *rings = json_object_get(jg, "rings");
        if (!rings)
            continue;
        if (!json_is_array(rings))
            return mrc__error(MRC_ERR_PARSE, "%s: \"rings\" must be an array",
                              where);
        for (size_t r = 0; r < json_array_size(rings); r++) {
            json_t *jr = json_array_get(rings, r);
            char rw[80];
            snprintf(rw, sizeof rw, "group %zu, ring %zu", g, r);
            if (!json_is_object(jr))
                return mrc__error(MRC_ERR_PARSE, "%s: must be an object", rw);
            snprintf(what, sizeof what, "%s: \"nodes\"", rw);
            st = int_array(json_object_get(jr, "nodes"), what, &nodes, &n);
            if (st != MRC_OK)
                return st;
            json_t *bd = json_object_get(jr, "bidirectional");
            json_t *sh = json_object_get(jr, "share");
            if ((bd && !json_is_boolean(bd)) || (sh && !json_is_number(sh))) {
                free(nodes);
                return mrc__error(MRC_ERR_PARSE,
                                  "%s: \"bidirectional\" must be true or "
                                  "false and \"share\" a number",
                                  rw);
            }
            int ri = mrc__embed_builder_add_ring(
                b, gi, nodes, n, bd ? json_is_true(bd) : 1,
                sh ? json_number_value(sh) : 1.0);
            if (ri < 0) {
                free(nodes);
                return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
            }
            json_t *hops = json_object_get(jr, "hops");
            st = hops ? read_hops(b, ri, hops, rw, nodes, n) : MRC_OK;
            free(nodes);
            if (st != MRC_OK)
                return st;
        }
    }
    return MRC_OK;
}

mrc_status_t mrc_embed_parse_json(const mrc_topo_t *topo, const char *text,
                                  size_t len, const char *origin,
                                  mrc_embedding_t **out)
{
    const char *where = origin ? origin : "<json>";
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_embed_parse_json: out "
                                               "is NULL");
    *out = NULL;
    if (!topo || !text)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_embed_parse_json: NULL argument");
    mrc_status_t cst = mrc__check_json_text(len, where);
    if (cst != MRC_OK)
        return cst;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return mrc__error(MRC_ERR_PARSE, "%s:%d:%d: JSON syntax error: %s",
                          where, jerr.line, jerr.column, jerr.text);
    mrc__embed_builder_t b;
    mrc__embed_builder_init(&b, topo);
    mrc_status_t st =
        json_is_object(root)
            ? read_groups(&b, json_object_get(root, "groups"))
            : mrc__error(MRC_ERR_PARSE, "the top level must be an object with "
                                        "\"groups\"");
    json_decref(root);
    if (st == MRC_OK)
        st = mrc__embed_builder_finish(&b, "file", out);
    else
        mrc__embed_builder_free(&b);
    if (st != MRC_OK)
        mrc__error_prefix("%s", where);
    return st;
}
