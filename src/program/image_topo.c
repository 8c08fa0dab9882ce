/*
 * The topology an image carries in its origin: written as the generator
 * spec when that regenerates the very links, else as JSON; read back and
 * checked against the program's nodes, ports and routes before an image
 * is run or simulated on it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"

/* Whether the program's ports and routes are the topology's: the same
 * nodes, the same ports at each, every routed hop along links, and every
 * direct hop out of a port that leads to the next node. NULL, or what
 * differs (in buf). */
static const char *topo_differs(const mrc_program_t *p, const mrc_topo_t *t,
                                char *buf, size_t cap)
{
    if (mrc_topo_num_nodes(t) != p->num_nodes) {
        snprintf(buf, cap, "the topology has %d nodes, the program %d",
                 mrc_topo_num_nodes(t), p->num_nodes);
        return buf;
    }
    for (int u = 0; u < p->num_nodes; u++)
        if (mrc_topo_num_ports(t, u) != p->nodes[u].num_ports) {
            snprintf(buf, cap,
                     "node %d has %d ports in the topology, %d in "
                     "the program",
                     u, mrc_topo_num_ports(t, u), p->nodes[u].num_ports);
            return buf;
        }
    for (int r = 0; r < p->num_routes; r++)
        for (int j = p->route_off[r]; j + 1 < p->route_off[r + 1]; j++) {
            int peer = -1, peer_port = -1;
            if (mrc_topo_port(t, p->route_nodes[j], p->route_ports[j], NULL,
                              &peer, &peer_port) != MRC_OK ||
                peer != p->route_nodes[j + 1] ||
                peer_port != p->route_in_ports[j + 1]) {
                snprintf(buf, cap,
                         "route %d leaves node %d by port %d, "
                         "which does not lead to node %d",
                         r, p->route_nodes[j], p->route_ports[j],
                         p->route_nodes[j + 1]);
                return buf;
            }
        }
    for (int u = 0; u < p->num_nodes; u++) {
        const mrc__node_t *nd = &p->nodes[u];
        if (nd->group < 0)
            continue;
        const mrc__group_t *g = &p->groups[nd->group];
        for (int j = 0; j < g->num_streams; j++) {
            const mrc__node_stream_t *e =
                &p->node_streams[nd->first_entry + j * g->size];
            int peer = -1;
            if (e->route >= 0 || e->out_port < 0 || e->next == u)
                continue;
            if (mrc_topo_port(t, u, e->out_port, NULL, &peer, NULL) != MRC_OK ||
                peer != e->next) {
                snprintf(buf, cap,
                         "node %d sends to node %d by port %d, "
                         "which does not lead there",
                         u, e->next, e->out_port);
                return buf;
            }
        }
    }
    return NULL;
}

/* 1 if a and b have the same nodes and the same links, fields and ports
 * (what running and timing a program depend on). */
static int same_links(const mrc_topo_t *a, const mrc_topo_t *b)
{
    if (mrc_topo_num_nodes(a) != mrc_topo_num_nodes(b) ||
        mrc_topo_num_links(a) != mrc_topo_num_links(b))
        return 0;
    for (int i = 0; i < mrc_topo_num_links(a); i++) {
        const mrc_link_t *x = mrc_topo_link(a, i), *y = mrc_topo_link(b, i);
        if (x->a != y->a || x->b != y->b || x->count != y->count ||
            x->bandwidth_gbps != y->bandwidth_gbps ||
            x->latency_ns != y->latency_ns || x->port_a != y->port_a ||
            x->port_b != y->port_b)
            return 0;
    }
    return 1;
}

mrc_status_t mrc__image_topology_text(const mrc_topo_t *t, char **text)
{
    *text = NULL;
    mrc_topo_t *again = NULL;
    const char *name = mrc_topo_name(t);
    /* (a file's name is no generator spec: that fails, quietly) */
    if (name && name[0] != '{' && mrc_topo_generate(name, &again) == MRC_OK &&
        same_links(t, again)) {
        mrc_topo_destroy(again);
        *text = mrc__strdup(name);
        return *text ? MRC_OK : mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    mrc_topo_destroy(again);
    char *json = NULL;
    mrc_status_t st = mrc_topo_to_json(t, &json);
    if (st != MRC_OK)
        return st;
    *text = mrc__strdup(json);
    mrc_free(json);
    return *text ? MRC_OK : mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
}

mrc_status_t mrc__image_topology(const mrc_program_t *p,
                                 const mrc__image_origin_t *o, mrc_topo_t **out)
{
    *out = NULL;
    if (!o || !o->topology)
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "the image carries no topology (a version 3 image, "
                          "or one saved by mrc_program_save); recompile it "
                          "with 'mrc compile ... -o' of this mrc");
    mrc_topo_t *t = NULL;
    mrc_status_t st =
        o->topology[0] == '{'
            ? mrc_topo_parse_json(o->topology, strlen(o->topology),
                                  "the image's topology", &t)
            : mrc_topo_generate(o->topology, &t);
    if (st != MRC_OK) {
        mrc__error_prefix("the image's topology");
        return st;
    }
    char buf[160];
    const char *why = topo_differs(p, t, buf, sizeof buf);
    if (why) {
        mrc_topo_destroy(t);
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "program image refused: "
                          "its topology is not its program's: %s",
                          why);
    }
    *out = t;
    return MRC_OK;
}
