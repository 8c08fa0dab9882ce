/*
 * Failed links: a copy of a topology without some of its physical links,
 * so that the rings can be embedded (or refused) around them. The copy
 * remembers the intact topology, so that a named strategy still knows the
 * shape it was made for and can say which of its links is gone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

typedef struct failed_pair {
    int a, b;  /* a < b */
    int count; /* physical links taken out */
} failed_pair_t;

/* Physical links between u and v. */
static int links_joining(const mrc_topo_t *t, int u, int v)
{
    int n = 0;
    for (int i = t->node_link_off[u]; i < t->node_link_off[u + 1]; i++) {
        const mrc_link_t *l = &t->links[t->node_links[i]];
        if ((l->a == u && l->b == v) || (l->a == v && l->b == u))
            n += l->count;
    }
    return n;
}

/* Parses one item "A-B" or "A-B:K" (len bytes at s) against t; adds it to
 * pairs[] (merging with an earlier item on the same pair). */
static mrc_status_t parse_item(const mrc_topo_t *t, const char *s, size_t len,
                               failed_pair_t *pairs, int *num_pairs)
{
    char item[64];
    if (len == 0 || len >= sizeof item)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "failed link '%.*s': expected A-B or A-B:K, such "
                          "as 0-4 or 0-4:1",
                          len > 40 ? 40 : (int)len, s);
    memcpy(item, s, len);
    item[len] = '\0';
    char *dash = strchr(item, '-'), *colon = strchr(item, ':');
    if (!dash || dash == item || (colon && colon < dash))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "failed link '%s': expected A-B or A-B:K, such as "
                          "0-4 or 0-4:1",
                          item);
    *dash = '\0';
    if (colon)
        *colon = '\0';
    long a = -1, b = -1, k = 0;
    int n = t->num_nodes;
    if (mrc__parse_long(item, 0, n - 1, &a) != 0 ||
        mrc__parse_long(dash + 1, 0, n - 1, &b) != 0) {
        const char *bad =
            mrc__parse_long(item, 0, n - 1, &a) != 0 ? item : dash + 1;
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "failed link '%.*s': '%s' is not a node of %s (0 "
                          "to %d)",
                          (int)len, s, bad, t->name ? t->name : "the topology",
                          n - 1);
    }
    if (a == b)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "failed link '%.*s': a link joins two different "
                          "nodes",
                          (int)len, s);
    int have = links_joining(t, (int)a, (int)b);
    if (have == 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "failed link '%.*s': no link joins nodes %ld and "
                          "%ld",
                          (int)len, s, a, b);
    if (colon && mrc__parse_long(colon + 1, 1, have, &k) != 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "failed link '%.*s': '%s' is not a count of links "
                          "from 1 to the %d between nodes %ld and %ld",
                          (int)len, s, colon + 1, have, a, b);
    failed_pair_t key = {.a = a < b ? (int)a : (int)b,
                         .b = a < b ? (int)b : (int)a};
    int i = 0;
    while (i < *num_pairs && (pairs[i].a != key.a || pairs[i].b != key.b))
        i++;
    if (i == *num_pairs) {
        pairs[i] = key;
        (*num_pairs)++;
    }
    if (!colon) /* all of them, whatever failed before */
        k = have - pairs[i].count;
    if (k == 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "failed link '%.*s': all %d links between nodes "
                          "%ld and %ld failed already",
                          (int)len, s, have, a, b);
    if (pairs[i].count + k > have)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "failed link '%.*s': %ld more of the %d links "
                          "between nodes %ld and %ld, of which %d already "
                          "failed",
                          (int)len, s, k, have, a, b, pairs[i].count);
    pairs[i].count += (int)k;
    return MRC_OK;
}

/* A builder holding t's nodes (names and positions) and, of each link
 * entry, what the failed pairs leave of it. */
static mrc_status_t build_without(const mrc_topo_t *t,
                                  const failed_pair_t *pairs, int num_pairs,
                                  const char *name, mrc_topo_t **out)
{
    mrc__topo_builder_t tb;
    mrc_status_t st = mrc__topo_builder_init(&tb, t->num_nodes, name);
    if (st != MRC_OK)
        return st;
    int *left = malloc((size_t)(num_pairs > 0 ? num_pairs : 1) * sizeof *left);
    if (!left) {
        mrc__topo_builder_free(&tb);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    for (int i = 0; i < num_pairs; i++)
        left[i] = pairs[i].count;
    for (int u = 0; u < t->num_nodes && !tb.failed; u++) {
        const mrc__topo_node_t *nd = &t->nodes[u];
        if (nd->name && !(tb.nodes[u].name = mrc__strdup(nd->name)))
            tb.failed = 1;
        if (nd->has_pos)
            mrc__topo_builder_set_pos(&tb, u, nd->x, nd->y);
    }
    for (int i = 0; i < t->num_links; i++) {
        const mrc_link_t *l = &t->links[i];
        int lo = l->a < l->b ? l->a : l->b, hi = l->a < l->b ? l->b : l->a;
        int count = l->count;
        for (int p = 0; p < num_pairs; p++)
            if (pairs[p].a == lo && pairs[p].b == hi) {
                int take = left[p] < count ? left[p] : count;
                left[p] -= take;
                count -= take;
            }
        if (count > 0)
            mrc__topo_builder_add_link(&tb, l->a, l->b, count,
                                       l->bandwidth_gbps, l->latency_ns);
    }
    free(left);
    return mrc__topo_builder_build(&tb, name, out);
}

/* An intact copy of t (names, positions, links in their order). */
static mrc_status_t copy_topo(const mrc_topo_t *t, mrc_topo_t **out)
{
    return build_without(t, NULL, 0, t->name, out);
}

mrc_status_t mrc_topo_fail_links(const mrc_topo_t *topo, const char *failed,
                                 mrc_topo_t **out)
{
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_topo_fail_links: out is NULL");
    *out = NULL;
    if (!topo || !failed || !*failed)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_topo_fail_links: no topology or no links");
    /* Links failed of a copy are failed of its intact topology, all of
     * them at once. */
    const mrc_topo_t *t = mrc_topo_intact(topo);
    mrc__strbuf_t all, name;
    mrc__sb_init(&all);
    mrc__sb_init(&name);
    if (topo->failed) {
        mrc__sb_puts(&all, topo->failed);
        mrc__sb_puts(&all, ",");
    }
    mrc__sb_puts(&all, failed);
    failed_pair_t *pairs = NULL;
    mrc_topo_t *res = NULL;
    mrc_status_t st = MRC_OK;
    const char *spec = all.failed ? NULL : all.data;
    size_t items = 1;
    for (const char *c = spec; c && *c; c++)
        items += *c == ',';
    pairs = spec ? calloc(items, sizeof *pairs) : NULL;
    if (!pairs) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    int num_pairs = 0;
    for (const char *p = spec; st == MRC_OK;) {
        size_t len = strcspn(p, ",");
        st = parse_item(t, p, len, pairs, &num_pairs);
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    if (st != MRC_OK)
        goto done;
    mrc__sb_printf(&name, "%s without %s", t->name ? t->name : "topology",
                   spec);
    if (name.failed || !name.data) {
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    st = build_without(t, pairs, num_pairs, name.data, &res);
    if (st == MRC_OK)
        st = copy_topo(t, &res->intact);
    if (st == MRC_OK && !(res->failed = mrc__strdup(spec)))
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
done:
    if (st != MRC_OK) {
        mrc_topo_destroy(res);
        res = NULL;
    }
    free(pairs);
    mrc__sb_free(&all);
    mrc__sb_free(&name);
    *out = res;
    return st;
}

const mrc_topo_t *mrc_topo_intact(const mrc_topo_t *topo)
{
    return topo && topo->intact ? topo->intact : topo;
}

const char *mrc_topo_failed_links(const mrc_topo_t *topo)
{
    return topo ? topo->failed : NULL;
}
