/* Groups of nodes that run their own collectives at the same time. */
#include <stdlib.h>
#include <string.h>

#include "embed_internal.h"

/* "4+2+2": blocks of consecutive nodes that must cover the topology. */
static mrc_status_t groups_from_sizes(const mrc_topo_t *topo, const char *spec,
                                      mrc__embed_builder_t *b)
{
    int n = mrc_topo_num_nodes(topo);
    int *nodes = malloc((size_t)n * sizeof *nodes);
    if (!nodes)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < n; i++)
        nodes[i] = i;
    int next = 0;
    const char *p = spec;
    mrc_status_t st = MRC_OK;
    while (st == MRC_OK) {
        char tok[32];
        size_t len = strcspn(p, "+");
        long size = 0;
        if (len == 0 || len >= sizeof tok) {
            st = mrc__error(MRC_ERR_INVALID_ARG,
                            "groups '%s': expected sizes joined by '+', such "
                            "as 4+2+2",
                            spec);
            break;
        }
        memcpy(tok, p, len);
        tok[len] = '\0';
        if (mrc__parse_long(tok, 1, n, &size) != 0) {
            st = mrc__error(MRC_ERR_INVALID_ARG,
                            "groups '%s': '%s' is not a group size from 1 to "
                            "%d",
                            spec, tok, n);
            break;
        }
        if (next + size > n) {
            st = mrc__error(MRC_ERR_INVALID_ARG,
                            "groups '%s' need more than the topology's %d "
                            "nodes",
                            spec, n);
            break;
        }
        if (mrc__embed_builder_add_group(b, nodes + next, (int)size) < 0)
            st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        next += (int)size;
        p += len;
        if (*p == '\0')
            break;
        p++;
    }
    if (st == MRC_OK && next != n)
        st = mrc__error(MRC_ERR_INVALID_ARG,
                        "groups '%s' cover %d of the topology's %d nodes "
                        "(they must cover every node)",
                        spec, next, n);
    free(nodes);
    return st;
}

/* The node named by the entry p[0..len) of group g in `spec`: a node
 * of the topology in no group yet. */
static mrc_status_t list_node(const mrc_topo_t *topo, const char *spec,
                              const char *p, size_t len, int g,
                              const int *owner, long *u)
{
    int n = mrc_topo_num_nodes(topo);
    char tok[32];
    if (len == 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "groups '%s': group %d has an empty entry "
                          "(node lists are nodes joined by ',', groups "
                          "joined by '+', such as 0,4+1,5)",
                          spec, g);
    if (len < sizeof tok) {
        memcpy(tok, p, len);
        tok[len] = '\0';
    }
    if (len >= sizeof tok || mrc__parse_long(tok, 0, n - 1, u) != 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "groups '%s': '%.*s' in group %d is not a node "
                          "of %s (0 to %d)",
                          spec, len > 24 ? 24 : (int)len, p, g,
                          mrc_topo_name(topo), n - 1);
    if (owner[*u] == g)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "groups '%s': node %ld is twice in group %d", spec,
                          *u, g);
    if (owner[*u] >= 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "groups '%s': node %ld is in group %d and in "
                          "group %d (groups must be disjoint)",
                          spec, *u, owner[*u], g);
    return MRC_OK;
}

/* "0,4+1,5+2,6+3,7": explicit node lists, '+' between groups and ','
 * within one. A group's order is its rank order (rank i is the i-th node
 * listed, as with MPI_Group_incl); the ring strategy also takes it as its
 * ring order. The groups must be disjoint, name only nodes of the
 * topology and cover every node: a node that sits out is a group of one.
 * The first fault found is named: the group (by index), the token and
 * the node. */
static mrc_status_t groups_from_lists(const mrc_topo_t *topo, const char *spec,
                                      mrc__embed_builder_t *b)
{
    int n = mrc_topo_num_nodes(topo);
    int *owner = malloc((size_t)n * sizeof *owner);
    int *nodes = malloc((size_t)n * sizeof *nodes);
    if (!owner || !nodes) {
        free(owner);
        free(nodes);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    for (int i = 0; i < n; i++)
        owner[i] = -1;
    mrc_status_t st = MRC_OK;
    int g = 0, size = 0, covered = 0;
    const char *p = spec;
    while (st == MRC_OK) {
        size_t len = strcspn(p, ",+");
        long u = -1;
        st = list_node(topo, spec, p, len, g, owner, &u);
        if (st != MRC_OK)
            break;
        owner[u] = g;
        nodes[size++] = (int)u;
        covered++;
        p += len;
        if (*p == ',') {
            p++;
            continue;
        }
        if (mrc__embed_builder_add_group(b, nodes, size) < 0) {
            st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
            break;
        }
        g++;
        size = 0;
        if (*p == '\0')
            break;
        p++; /* '+' */
    }
    if (st == MRC_OK && covered != n) {
        int first = 0;
        while (owner[first] >= 0)
            first++;
        st = mrc__error(MRC_ERR_INVALID_ARG,
                        "groups '%s' leave %d of the %d nodes of %s in no "
                        "group, node %d first (every node must be in one; "
                        "a node that sits out is a group of its own)",
                        spec, n - covered, n, mrc_topo_name(topo), first);
    }
    free(owner);
    free(nodes);
    return st;
}

/* GCL replicas: replica k holds nodes k*r .. k*r+r-1; cross-replica group
 * p holds the nodes at position p of every replica. */
static mrc_status_t groups_from_replicas(const mrc_topo_t *topo, int r,
                                         mrc__embed_builder_t *b)
{
    int n = mrc_topo_num_nodes(topo);
    if (r < 1 || n % r != 0)
        return mrc__error(MRC_ERR_NOT_APPLICABLE,
                          "replica size %d does not divide the %d nodes of "
                          "%s",
                          r, n, mrc_topo_name(topo));
    int m = n / r;
    int *nodes = malloc((size_t)m * sizeof *nodes);
    if (!nodes)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    mrc_status_t st = MRC_OK;
    for (int p = 0; p < r && st == MRC_OK; p++) {
        for (int k = 0; k < m; k++)
            nodes[k] = k * r + p;
        if (mrc__embed_builder_add_group(b, nodes, m) < 0)
            st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    free(nodes);
    return st;
}

mrc_status_t mrc__embed_groups(const mrc_topo_t *topo,
                               const mrc_embed_config_t *cfg,
                               mrc__embed_builder_t *b)
{
    int has_groups = cfg && cfg->groups && cfg->groups[0];
    int r = cfg ? cfg->replica_size : 0;
    if (has_groups && r > 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "give groups or a replica size, not both");
    if (r < 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "replica size %d must be positive", r);
    if (has_groups && strchr(cfg->groups, ','))
        return groups_from_lists(topo, cfg->groups, b);
    if (has_groups)
        return groups_from_sizes(topo, cfg->groups, b);
    return groups_from_replicas(topo, r > 0 ? r : 1, b);
}
