/*
 * The program object: its arrays taken and freed, and the small queries
 * the module's files and its consumers share (streams, chunk size, the
 * summary of mrc_program_info). The compilers fill it (compile.c and the
 * families' files).
 */
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"

mrc_status_t mrc__program_alloc(mrc_program_t *p, int order, int routes)
{
    size_t ng = (size_t)p->num_groups, ns = (size_t)p->num_streams;
    size_t members = (size_t)p->num_members, pool = (size_t)p->route_pool_len;
    p->code = malloc(((size_t)p->code_len + 1) * sizeof *p->code);
    p->groups = calloc(ng + 1, sizeof *p->groups);
    p->members = malloc((members + 1) * sizeof *p->members);
    p->streams = calloc(ns + 1, sizeof *p->streams);
    p->ring_order = malloc(((size_t)order + 1) * sizeof *p->ring_order);
    p->ring_first = malloc((ns + 1) * sizeof *p->ring_first);
    p->nodes = calloc((size_t)p->num_nodes + 1, sizeof *p->nodes);
    p->node_streams =
        calloc((size_t)p->num_entries + 1, sizeof *p->node_streams);
    p->route_off = calloc((size_t)routes + 1, sizeof *p->route_off);
    p->route_nodes = malloc((pool + 1) * sizeof *p->route_nodes);
    p->route_ports = malloc((pool + 1) * sizeof *p->route_ports);
    p->route_in_ports = malloc((pool + 1) * sizeof *p->route_in_ports);
    if (!p->code || !p->groups || !p->members || !p->streams ||
        !p->ring_order || !p->ring_first || !p->nodes || !p->node_streams ||
        !p->route_off || !p->route_nodes || !p->route_ports ||
        !p->route_in_ports)
        return MRC_ERR_NO_MEMORY;
    return MRC_OK;
}

void mrc__program_free_arrays(mrc_program_t *p)
{
    free(p->code);
    free(p->groups);
    free(p->members);
    free(p->streams);
    free(p->ring_order);
    free(p->ring_first);
    free(p->nodes);
    free(p->node_streams);
    free(p->route_off);
    free(p->route_nodes);
    free(p->route_ports);
    free(p->route_in_ports);
    free(p->port_phases);
    free(p->port_uses);
}

void mrc_program_destroy(mrc_program_t *p)
{
    if (!p)
        return;
    mrc__program_free_arrays(p);
    free(p);
}

/* ---- small queries shared by the module ------------------------------- */

int mrc__stream_size(const mrc_program_t *p, int k)
{
    return p->groups[p->streams[k].group].size;
}

int mrc__stream_node(const mrc_program_t *p, int k, int pos)
{
    return p->ring_order[p->ring_first[k] + pos];
}

const mrc__node_stream_t *mrc__node_stream(const mrc_program_t *p, int u, int k)
{
    const mrc__group_t *g = &p->groups[p->streams[k].group];
    return &p->node_streams[p->nodes[u].first_entry +
                            (k - g->first_stream) * g->size];
}

uint64_t mrc__chunk_elems(const mrc_program_t *p)
{
    uint64_t e = p->cfg.chunk_bytes / mrc_dtype_size(p->cfg.dtype);
    return e ? e : 1;
}

mrc_status_t mrc_program_info(const mrc_program_t *p, mrc_program_info_t *info)
{
    if (!p || !info)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_program_info: NULL");
    memset(info, 0, sizeof *info);
    info->config = p->cfg;
    info->num_nodes = p->num_nodes;
    info->num_groups = p->num_groups;
    info->num_streams = p->num_streams;
    info->code_instructions = p->code_len;
    info->table_bytes =
        (size_t)p->num_groups * sizeof(mrc__group_t) +
        (size_t)p->num_members * sizeof(int32_t) +
        (size_t)p->num_streams * (sizeof(mrc__stream_t) + sizeof(int32_t)) +
        (size_t)p->num_entries *
            (sizeof(mrc__node_stream_t) + sizeof(int32_t)) +
        (size_t)p->num_nodes * sizeof(mrc__node_t) +
        (size_t)(p->num_routes + 1) * sizeof(int32_t) +
        (size_t)p->route_pool_len * 2 * sizeof(int32_t);
    void *img = NULL;
    size_t len = 0;
    if (mrc_program_save(p, &img, &len) == MRC_OK)
        info->image_bytes = len;
    mrc_free(img);
    return MRC_OK;
}
