/*
 * Writing the binary image (see image_format.h): the configuration, the
 * shared code, the tables, the port mask and the origin, then the header
 * patched with the payload's length and checksum.
 */
#include <stdlib.h>
#include <string.h>

#include "image_format.h"
#include "program_internal.h"

uint64_t mrc__fnv1a(const uint8_t *d, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= d[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* ---- writing ----------------------------------------------------------- */

static void put(mrc__strbuf_t *sb, uint64_t v, int bytes)
{
    char b[8];
    for (int i = 0; i < bytes; i++)
        b[i] = (char)(v >> (8 * i));
    mrc__sb_append(sb, b, (size_t)bytes);
}

static void put_i32s(mrc__strbuf_t *sb, const int32_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put(sb, (uint32_t)v[i], 4);
}

/* A string of the origin: its length (u32, 0 for none) and its bytes. */
static void put_text(mrc__strbuf_t *sb, const char *text)
{
    size_t n = text ? strlen(text) : 0;
    put(sb, (uint32_t)n, 4);
    if (n)
        mrc__sb_append(sb, text, n);
}

static void put_origin(mrc__strbuf_t *sb, const mrc__image_origin_t *o)
{
    put_text(sb, o ? o->topology : NULL);
    put_text(sb, o ? o->strategy : NULL);
    put_text(sb, o ? o->source : NULL);
    double eff = o ? o->efficiency : -1;
    uint64_t bits;
    memcpy(&bits, &eff, sizeof bits);
    put(sb, bits, 8);
}

mrc_status_t mrc_program_save(const mrc_program_t *p, void **image, size_t *len)
{
    return mrc__program_save_origin(p, NULL, image, len);
}

/* The configuration, the addressing and the table sizes. */
static void put_config(mrc__strbuf_t *sb, const mrc_program_t *p)
{
    const mrc_compile_config_t *c = &p->cfg;
    put(sb, (uint32_t)c->collective, 4);
    put(sb, c->count, 8);
    put(sb, (uint32_t)c->dtype, 4);
    put(sb, (uint32_t)c->op, 4);
    put(sb, (uint32_t)c->root, 4);
    put(sb, c->chunk_bytes, 8);
    put(sb, (uint32_t)c->algo, 4);
    put(sb, (uint32_t)c->hosts, 4);
    put(sb, (uint32_t)c->completion, 1);
    put(sb, p->addressing, 1);
    int32_t counts[] = {p->num_nodes,  p->num_groups,    p->num_streams,
                        p->code_len,   p->num_members,   p->num_entries,
                        p->num_routes, p->route_pool_len};
    put_i32s(sb, counts, 8);
}

/* Each instruction in MRC__IMAGE_INSN_BYTES bytes. */
static void put_code(mrc__strbuf_t *sb, const mrc_program_t *p)
{
    for (int i = 0; i < p->code_len; i++) {
        const mrc__insn_t *in = &p->code[i];
        put(sb, in->op, 1);
        put(sb, in->pred, 1);
        put(sb, (uint16_t)in->pred_lo, 2);
        put(sb, (uint16_t)in->pred_hi, 2);
        put(sb, (uint8_t)in->frag_pos, 1);
        put(sb, (uint8_t)in->frag_step, 1);
        put(sb, (uint16_t)in->frag_const, 2);
        put(sb, in->buf_a, 1);
        put(sb, in->buf_b, 1);
        put(sb, in->local, 1);
        put(sb, in->flags, 1);
        put(sb, in->step_rel, 1);
        put(sb, (uint16_t)in->step_const, 2);
        put(sb, (uint8_t)in->peer_pos, 1);
        put(sb, (uint8_t)in->peer_step, 1);
        put(sb, (uint16_t)in->peer_const, 2);
        put(sb, in->flag, 1);
        put(sb, (uint8_t)in->loop_extra, 1);
        put(sb, in->view, 1);
    }
}

/* The groups, members, streams, ring orders, nodes, node entries and
 * routes, in that order. */
static void put_tables(mrc__strbuf_t *sb, const mrc_program_t *p)
{
    for (int i = 0; i < p->num_groups; i++) {
        const mrc__group_t *g = &p->groups[i];
        int32_t v[] = {g->size, g->first_stream, g->num_streams,
                       g->first_member};
        put_i32s(sb, v, 4);
    }
    put_i32s(sb, p->members, (size_t)p->num_members);
    for (int i = 0; i < p->num_streams; i++) {
        const mrc__stream_t *s = &p->streams[i];
        int32_t v[] = {s->group, s->ring, s->reversed, s->root_pos};
        put_i32s(sb, v, 4);
        put(sb, s->slice_off, 8);
        put(sb, s->slice_len, 8);
    }
    put_i32s(sb, p->ring_first, (size_t)p->num_streams);
    put_i32s(sb, p->ring_order, (size_t)p->num_entries);
    for (int i = 0; i < p->num_nodes; i++) {
        const mrc__node_t *nd = &p->nodes[i];
        int32_t v[] = {nd->group, nd->rank, nd->num_ports, nd->first_entry};
        put_i32s(sb, v, 4);
    }
    for (int i = 0; i < p->num_entries; i++) {
        const mrc__node_stream_t *e = &p->node_streams[i];
        int32_t v[] = {e->pos,      e->next,    e->prev,
                       e->out_port, e->in_port, e->route};
        put_i32s(sb, v, 6);
    }
    put_i32s(sb, p->route_off, (size_t)p->num_routes + 1);
    put_i32s(sb, p->route_nodes, (size_t)p->route_pool_len);
    put_i32s(sb, p->route_ports, (size_t)p->route_pool_len);
    put_i32s(sb, p->route_in_ports, (size_t)p->route_pool_len);
}

/* The port mask: its two counts, each phase (first step, steps, first
 * use), each use (node, port), all int32. */
static mrc_status_t put_mask(mrc__strbuf_t *sb, const mrc_program_t *p)
{
    mrc_status_t st = mrc__port_mask_ready(p);
    if (st != MRC_OK)
        return st;
    int32_t mask_counts[] = {p->num_port_phases, p->num_port_uses};
    put_i32s(sb, mask_counts, 2);
    for (int i = 0; i < p->num_port_phases; i++) {
        const mrc__port_phase_t *ph = &p->port_phases[i];
        int32_t v[] = {ph->first_step, ph->num_steps, ph->first_use};
        put_i32s(sb, v, 3);
    }
    for (int i = 0; i < p->num_port_uses; i++) {
        int32_t v[] = {p->port_uses[i].node, p->port_uses[i].port};
        put_i32s(sb, v, 2);
    }
    return MRC_OK;
}

/* The header's payload length and checksum, over what was written. */
static void seal(mrc__strbuf_t *sb)
{
    uint8_t *d = (uint8_t *)sb->data;
    uint64_t payload = sb->len - MRC__IMAGE_HEADER_BYTES;
    uint64_t sum = mrc__fnv1a(d + MRC__IMAGE_HEADER_BYTES, payload);
    for (int i = 0; i < 8; i++) {
        d[16 + i] = (uint8_t)(payload >> (8 * i));
        d[24 + i] = (uint8_t)(sum >> (8 * i));
    }
}

mrc_status_t mrc__program_save_origin(const mrc_program_t *p,
                                      const mrc__image_origin_t *origin,
                                      void **image, size_t *len)
{
    if (!p || !image || !len)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_program_save: NULL");
    if (origin &&
        ((origin->topology && strlen(origin->topology) > UINT32_MAX) ||
         (origin->source && strlen(origin->source) > UINT32_MAX)))
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_program_save: an origin "
                                               "text longer than 4 GiB");
    *image = NULL;
    *len = 0;
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    mrc__sb_append(&sb, MRC__IMAGE_MAGIC, 8);
    put(&sb, MRC__IMAGE_VERSION, 4);
    put(&sb, MRC__IMAGE_HEADER_BYTES, 4);
    put(&sb, 0, 8); /* payload length, patched by seal */
    put(&sb, 0, 8); /* checksum, patched by seal */
    put_config(&sb, p);
    put_code(&sb, p);
    put_tables(&sb, p);
    mrc_status_t st = put_mask(&sb, p);
    if (st != MRC_OK) {
        mrc__sb_free(&sb);
        return st;
    }
    put_origin(&sb, origin);
    if (sb.failed) {
        mrc__sb_free(&sb);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory saving");
    }
    seal(&sb);
    *len = sb.len;
    *image = mrc__sb_take(&sb);
    return MRC_OK;
}
