/*
 * The topology object once built: its destruction and the read-only
 * queries. The builder (builder.c) makes it; the spec dispatcher
 * (spec.c), the generators (gen.c), the JSON reader (json.c) and the
 * failed-links copy (fail.c) all go through the builder.
 */
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

void mrc__topo_free_nodes(mrc__topo_node_t *nodes, int n)
{
    if (!nodes)
        return;
    for (int i = 0; i < n; i++)
        free(nodes[i].name);
    free(nodes);
}

void mrc_topo_destroy(mrc_topo_t *t)
{
    if (!t)
        return;
    mrc__topo_free_nodes(t->nodes, t->num_nodes);
    free(t->links);
    free(t->node_link_off);
    free(t->node_links);
    free(t->port_off);
    free(t->port_link);
    free(t->name);
    free(t->origin);
    free(t->failed);
    mrc_topo_destroy(t->intact);
    free(t);
}

/* ---- queries ----------------------------------------------------------- */

const char *mrc_topo_name(const mrc_topo_t *t)
{
    return t->name ? t->name : t->origin;
}

int mrc_topo_num_nodes(const mrc_topo_t *t)
{
    return t->num_nodes;
}

int mrc_topo_num_links(const mrc_topo_t *t)
{
    return t->num_links;
}

int mrc_topo_num_physical_links(const mrc_topo_t *t)
{
    return t->num_physical;
}

const mrc_link_t *mrc_topo_link(const mrc_topo_t *t, int i)
{
    if (i < 0 || i >= t->num_links)
        return NULL;
    return &t->links[i];
}

int mrc_topo_num_ports(const mrc_topo_t *t, int node)
{
    if (node < 0 || node >= t->num_nodes)
        return -1;
    return t->port_off[node + 1] - t->port_off[node];
}

int mrc_topo_node_links(const mrc_topo_t *t, int node, const int **links)
{
    if (node < 0 || node >= t->num_nodes)
        return -1;
    if (links)
        *links = &t->node_links[t->node_link_off[node]];
    return t->node_link_off[node + 1] - t->node_link_off[node];
}

mrc_status_t mrc_topo_port(const mrc_topo_t *t, int node, int port, int *link,
                           int *peer, int *peer_port)
{
    int nports = mrc_topo_num_ports(t, node);
    if (nports < 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: no node %d (nodes are "
                          "0..%d)",
                          mrc_topo_name(t), node, t->num_nodes - 1);
    if (port < 0 || port >= nports)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: node %d has no port %d (ports are 0..%d)",
                          mrc_topo_name(t), node, port, nports - 1);
    int li = t->port_link[t->port_off[node] + port];
    const mrc_link_t *l = &t->links[li];
    int at_a = l->a == node;
    int offset = port - (at_a ? l->port_a : l->port_b);
    if (link)
        *link = li;
    if (peer)
        *peer = at_a ? l->b : l->a;
    if (peer_port)
        *peer_port = (at_a ? l->port_b : l->port_a) + offset;
    return MRC_OK;
}

const char *mrc_topo_node_name(const mrc_topo_t *t, int node)
{
    if (node < 0 || node >= t->num_nodes)
        return NULL;
    return t->nodes[node].name;
}

int mrc_topo_node_position(const mrc_topo_t *t, int node, double *x, double *y)
{
    if (node < 0 || node >= t->num_nodes || !t->nodes[node].has_pos)
        return 0;
    if (x)
        *x = t->nodes[node].x;
    if (y)
        *y = t->nodes[node].y;
    return 1;
}

double mrc_topo_node_bandwidth_gbps(const mrc_topo_t *t, int node)
{
    const int *links;
    int n = mrc_topo_node_links(t, node, &links);
    double sum = 0;
    for (int k = 0; k < n; k++)
        sum += t->links[links[k]].count * t->links[links[k]].bandwidth_gbps;
    return sum;
}

double mrc_topo_total_bandwidth_gbps(const mrc_topo_t *t)
{
    double sum = 0;
    for (int i = 0; i < t->num_links; i++)
        sum += t->links[i].count * t->links[i].bandwidth_gbps;
    return sum;
}
