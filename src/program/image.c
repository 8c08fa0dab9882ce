/*
 * The binary image: a fixed header (magic, version, payload length, FNV-1a
 * checksum of the payload) and the payload, every field little-endian.
 * Loading checks the length and checksum, then every index against the
 * sizes it reads, then runs the checker: a truncated, corrupted or
 * inconsistent image is refused with what is wrong, never half-loaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program_internal.h"

#define IMAGE_MAGIC "MRCPROG"
/* Version 2: the family, the memory operands of each instruction, and
 * the port mask after the route pool (see mask_fields). Version 3: the
 * hosts of a hier program after the family, and each instruction's
 * view. Version 4: the origin after the port mask (the topology, the
 * strategy, the spec and the embedding's efficiency), so that the image
 * can be run and simulated as it is. Version 3 is still read (with no
 * origin: it can be listed, not run); older ones are refused. */
enum { IMAGE_VERSION = 4, IMAGE_OLDEST = 3,
       HEADER_BYTES = 8 + 4 + 4 + 8 + 8, INSN_BYTES = 24 };

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

mrc_status_t mrc_program_save(const mrc_program_t *p, void **image,
                              size_t *len)
{
    return mrc__program_save_origin(p, NULL, image, len);
}

mrc_status_t mrc__program_save_origin(const mrc_program_t *p,
                                      const mrc__image_origin_t *origin,
                                      void **image, size_t *len)
{
    if (!p || !image || !len)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_program_save: NULL");
    if (origin && ((origin->topology &&
                    strlen(origin->topology) > UINT32_MAX) ||
                   (origin->source && strlen(origin->source) > UINT32_MAX)))
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_program_save: an origin "
                          "text longer than 4 GiB");
    *image = NULL;
    *len = 0;
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    mrc__sb_append(&sb, IMAGE_MAGIC, 8);
    put(&sb, IMAGE_VERSION, 4);
    put(&sb, HEADER_BYTES, 4);
    put(&sb, 0, 8); /* payload length, patched below */
    put(&sb, 0, 8); /* checksum, patched below */
    const mrc_compile_config_t *c = &p->cfg;
    put(&sb, (uint32_t)c->collective, 4);
    put(&sb, c->count, 8);
    put(&sb, (uint32_t)c->dtype, 4);
    put(&sb, (uint32_t)c->op, 4);
    put(&sb, (uint32_t)c->root, 4);
    put(&sb, c->chunk_bytes, 8);
    put(&sb, (uint32_t)c->algo, 4);
    put(&sb, (uint32_t)c->hosts, 4);
    put(&sb, p->addressing, 1);
    int32_t counts[] = {p->num_nodes,   p->num_groups,  p->num_streams,
                        p->code_len,    p->num_members, p->num_entries,
                        p->num_routes,  p->route_pool_len};
    put_i32s(&sb, counts, 8);
    for (int i = 0; i < p->code_len; i++) {
        const mrc__insn_t *in = &p->code[i];
        put(&sb, in->op, 1);
        put(&sb, in->pred, 1);
        put(&sb, (uint16_t)in->pred_lo, 2);
        put(&sb, (uint16_t)in->pred_hi, 2);
        put(&sb, (uint8_t)in->frag_pos, 1);
        put(&sb, (uint8_t)in->frag_step, 1);
        put(&sb, (uint16_t)in->frag_const, 2);
        put(&sb, in->buf_a, 1);
        put(&sb, in->buf_b, 1);
        put(&sb, in->local, 1);
        put(&sb, in->flags, 1);
        put(&sb, in->step_rel, 1);
        put(&sb, (uint16_t)in->step_const, 2);
        put(&sb, (uint8_t)in->peer_pos, 1);
        put(&sb, (uint8_t)in->peer_step, 1);
        put(&sb, (uint16_t)in->peer_const, 2);
        put(&sb, in->flag, 1);
        put(&sb, (uint8_t)in->loop_extra, 1);
        put(&sb, in->view, 1);
    }
    for (int i = 0; i < p->num_groups; i++) {
        const mrc__group_t *g = &p->groups[i];
        int32_t v[] = {g->size, g->first_stream, g->num_streams,
                       g->first_member};
        put_i32s(&sb, v, 4);
    }
    put_i32s(&sb, p->members, (size_t)p->num_members);
    for (int i = 0; i < p->num_streams; i++) {
        const mrc__stream_t *s = &p->streams[i];
        int32_t v[] = {s->group, s->ring, s->reversed, s->root_pos};
        put_i32s(&sb, v, 4);
        put(&sb, s->slice_off, 8);
        put(&sb, s->slice_len, 8);
    }
    put_i32s(&sb, p->ring_first, (size_t)p->num_streams);
    put_i32s(&sb, p->ring_order, (size_t)p->num_entries);
    for (int i = 0; i < p->num_nodes; i++) {
        const mrc__node_t *nd = &p->nodes[i];
        int32_t v[] = {nd->group, nd->rank, nd->num_ports, nd->first_entry};
        put_i32s(&sb, v, 4);
    }
    for (int i = 0; i < p->num_entries; i++) {
        const mrc__node_stream_t *e = &p->node_streams[i];
        int32_t v[] = {e->pos, e->next, e->prev, e->out_port, e->in_port,
                       e->route};
        put_i32s(&sb, v, 6);
    }
    put_i32s(&sb, p->route_off, (size_t)p->num_routes + 1);
    put_i32s(&sb, p->route_nodes, (size_t)p->route_pool_len);
    put_i32s(&sb, p->route_ports, (size_t)p->route_pool_len);
    put_i32s(&sb, p->route_in_ports, (size_t)p->route_pool_len);
    /* The port mask: its two counts, each phase (first step, steps,
     * first use), each use (node, port), all int32. */
    mrc_status_t st = mrc__port_mask_ready(p);
    if (st != MRC_OK) {
        mrc__sb_free(&sb);
        return st;
    }
    int32_t mask_counts[] = {p->num_port_phases, p->num_port_uses};
    put_i32s(&sb, mask_counts, 2);
    for (int i = 0; i < p->num_port_phases; i++) {
        const mrc__port_phase_t *ph = &p->port_phases[i];
        int32_t v[] = {ph->first_step, ph->num_steps, ph->first_use};
        put_i32s(&sb, v, 3);
    }
    for (int i = 0; i < p->num_port_uses; i++) {
        int32_t v[] = {p->port_uses[i].node, p->port_uses[i].port};
        put_i32s(&sb, v, 2);
    }
    put_origin(&sb, origin);
    if (sb.failed) {
        mrc__sb_free(&sb);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory saving");
    }
    size_t total = sb.len;
    uint8_t *d = (uint8_t *)sb.data;
    uint64_t payload = total - HEADER_BYTES;
    uint64_t sum = mrc__fnv1a(d + HEADER_BYTES, payload);
    for (int i = 0; i < 8; i++) {
        d[16 + i] = (uint8_t)(payload >> (8 * i));
        d[24 + i] = (uint8_t)(sum >> (8 * i));
    }
    *image = mrc__sb_take(&sb);
    *len = total;
    return MRC_OK;
}

/* ---- reading ----------------------------------------------------------- */

typedef struct reader {
    const uint8_t *d;
    size_t len, at;
    int short_read;
} reader_t;

static uint64_t get(reader_t *r, int bytes)
{
    if (r->len - r->at < (size_t)bytes) {
        r->short_read = 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)r->d[r->at + (size_t)i] << (8 * i);
    r->at += (size_t)bytes;
    return v;
}

static int32_t get_i32(reader_t *r)
{
    return (int32_t)(uint32_t)get(r, 4);
}

/* Allocates n items of `size` bytes, refusing counts that the remaining
 * payload cannot hold (so a corrupted count cannot ask for gigabytes). */
static void *take(reader_t *r, int64_t n, size_t size, size_t bytes_each)
{
    if (n < 0 || (uint64_t)n > (r->len - r->at) / bytes_each + 1)
        return NULL;
    return calloc((size_t)n + 1, size);
}

static int in_range(int64_t v, int64_t lo, int64_t hi) /* lo <= v < hi */
{
    return v >= lo && v < hi;
}

/* Every index points inside its table. */
static const char *validate(const mrc_program_t *p)
{
    const mrc_compile_config_t *c = &p->cfg;
    if ((unsigned)c->collective >= MRC_NUM_COLLECTIVES ||
        mrc_dtype_size(c->dtype) == 0 || (unsigned)c->op >= MRC_NUM_OPS ||
        c->chunk_bytes == 0 || p->addressing > MRC__ADDR_CELLS ||
        (unsigned)c->algo > MRC_ALGO_HIER)
        return "unknown collective, type, operator, addressing or family";
    int hier = c->algo == MRC_ALGO_HIER;
    if (c->hosts < 0 || c->hosts > MRC_TOPO_MAX_NODES || (!hier && c->hosts))
        return "hosts out of range, or hosts for a family other than hier";
    if (!hier && p->addressing == MRC__ADDR_CELLS)
        return "fragments by places in a family other than hier";
    if (p->num_nodes < 1 || p->num_nodes > MRC_TOPO_MAX_NODES ||
        p->num_groups < 0 || p->num_streams < 0 || p->code_len < 0)
        return "impossible table sizes";
    int depth = 0;
    for (int i = 0; i < p->code_len; i++) {
        const mrc__insn_t *in = &p->code[i];
        if (in->op < MRC__OP_LOOP || in->op >= MRC__NUM_OPCODES ||
            in->pred > MRC__PRED_TREE_PARENT || in->buf_a > MRC__BUF_WINDOW ||
            in->buf_b > MRC__BUF_WINDOW || in->local > MRC__BUF_SCRATCH ||
            in->step_rel > 1 || in->flag >= 16 || in->loop_extra < 0 ||
            in->loop_extra > 1 || in->view > MRC__VIEW_PLACE)
            return "an instruction with an unknown opcode or operand";
        /* Views only in hier; there, fragments only between the leaders
         * (the host's view has whole slices: its fragments would be
         * cut in L parts, the program's in H). */
        if (in->view != MRC__VIEW_GROUP &&
            (!hier || (in->view == MRC__VIEW_HOST &&
                       p->addressing != MRC__ADDR_CELLS &&
                       !(in->flags & (MRC__INSN_WHOLE | MRC__INSN_ALL)) &&
                       in->op != MRC__OP_LOOP && in->op != MRC__OP_END &&
                       in->op != MRC__OP_SIGNAL && in->op != MRC__OP_WAIT &&
                       in->op != MRC__OP_BARRIER)))
            return "an instruction view its family does not have";
        /* Memory instructions only in a direct family, and one family's
         * code only: the checker of memory programs orders flags, not
         * messages. */
        if (!hier && (in->op >= MRC__OP_EXPOSE) !=
            (c->algo == MRC_ALGO_DIRECT1 || c->algo == MRC_ALGO_DIRECT2) &&
            in->op != MRC__OP_COPY && in->op != MRC__OP_SCALE &&
            in->op != MRC__OP_LOOP && in->op != MRC__OP_END &&
            in->op != MRC__OP_PORTS)
            return "an instruction its family does not have";
        depth += in->op == MRC__OP_LOOP;
        depth -= in->op == MRC__OP_END;
        if (depth < 0 || depth > 1)
            return "unbalanced or nested loops";
    }
    if (depth != 0)
        return "a loop without its end";
    for (int g = 0; g < p->num_groups; g++) {
        const mrc__group_t *gr = &p->groups[g];
        if (gr->size < 1 || gr->num_streams < 1 ||
            !in_range(gr->first_stream, 0, p->num_streams) ||
            gr->first_stream + (int64_t)gr->num_streams > p->num_streams ||
            !in_range(gr->first_member, 0, p->num_members) ||
            gr->first_member + (int64_t)gr->size > p->num_members)
            return "a group outside the tables";
        if (hier && gr->size % mrc__program_hosts(p) != 0)
            return "a hier group that does not split over its hosts";
        for (int i = 0; i < gr->size; i++) {
            int u = p->members[gr->first_member + i];
            if (!in_range(u, 0, p->num_nodes) || p->nodes[u].group != g ||
                p->nodes[u].rank != i)
                return "a group member that is not that rank of the group";
        }
    }
    for (int k = 0; k < p->num_streams; k++) {
        const mrc__stream_t *s = &p->streams[k];
        if (!in_range(s->group, 0, p->num_groups))
            return "a stream of no group";
        int n = p->groups[s->group].size;
        if (!in_range(s->root_pos, 0, n) ||
            !in_range(p->ring_first[k], 0, p->num_entries) ||
            p->ring_first[k] + (int64_t)n > p->num_entries ||
            s->slice_off > c->count || s->slice_len > c->count - s->slice_off)
            return "a stream outside the tables";
        for (int i = 0; i < n; i++)
            if (!in_range(p->ring_order[p->ring_first[k] + i], 0,
                          p->num_nodes) ||
                p->nodes[p->ring_order[p->ring_first[k] + i]].group !=
                    s->group)
                return "a ring through a node outside its group";
    }
    for (int u = 0; u < p->num_nodes; u++) {
        const mrc__node_t *nd = &p->nodes[u];
        /* The port count sizes the tables that the listing and the
         * executor build: no more than a topology node may have. */
        if (!in_range(nd->num_ports, 0, MRC_TOPO_MAX_PORTS + 1))
            return "a node with more ports than a topology allows (4096)";
        if (nd->group < 0)
            continue;
        if (nd->group >= p->num_groups)
            return "a node of no group";
        const mrc__group_t *g = &p->groups[nd->group];
        if (!in_range(nd->rank, 0, g->size) ||
            !in_range(nd->first_entry, 0, p->num_entries) ||
            nd->first_entry + (int64_t)(g->num_streams - 1) * g->size >=
                p->num_entries)
            return "a node entry outside the tables";
        for (int j = 0; j < g->num_streams; j++) {
            const mrc__node_stream_t *e =
                &p->node_streams[nd->first_entry + j * g->size];
            if (!in_range(e->pos, 0, g->size) ||
                !in_range(e->next, 0, p->num_nodes) ||
                !in_range(e->prev, 0, p->num_nodes) ||
                !in_range(e->out_port, -1, nd->num_ports) ||
                !in_range(e->in_port, -1, nd->num_ports) ||
                !in_range(e->route, -1, p->num_routes))
                return "a ring position, neighbour, port or route out of "
                       "range";
        }
    }
    for (int r = 0; r < p->num_routes; r++)
        if (p->route_off[r] < 0 || p->route_off[r] > p->route_off[r + 1] ||
            p->route_off[r + 1] > p->route_pool_len)
            return "a route outside the route pool";
    for (int i = 0; i < p->route_pool_len; i++)
        if (!in_range(p->route_nodes[i], 0, p->num_nodes))
            return "a route through an unknown node";
    for (int r = 0; r < p->num_routes; r++)
        for (int j = p->route_off[r]; j < p->route_off[r + 1]; j++) {
            int ports = p->nodes[p->route_nodes[j]].num_ports;
            if ((j + 1 < p->route_off[r + 1] &&
                 !in_range(p->route_ports[j], 0, ports)) ||
                (j > p->route_off[r] &&
                 !in_range(p->route_in_ports[j], 0, ports)))
                return "a route through a port its node does not have";
        }
    return NULL;
}

/* Reads the port mask; NULL, or what is wrong with it. */
static const char *read_mask(reader_t *r, mrc_program_t *p)
{
    p->num_port_phases = get_i32(r);
    p->num_port_uses = get_i32(r);
    if (p->num_port_phases < 0 || p->num_port_uses < 0)
        return "impossible table sizes";
    if (p->num_port_phases == 0 && p->num_port_uses == 0)
        return NULL;
    p->port_phases = take(r, (int64_t)p->num_port_phases + 1,
                          sizeof *p->port_phases, 12);
    p->port_uses = take(r, p->num_port_uses, sizeof *p->port_uses, 8);
    if (!p->port_phases || !p->port_uses)
        return "table sizes larger than the image";
    for (int i = 0; i < p->num_port_phases; i++) {
        p->port_phases[i].first_step = get_i32(r);
        p->port_phases[i].num_steps = get_i32(r);
        p->port_phases[i].first_use = get_i32(r);
    }
    p->port_phases[p->num_port_phases].first_use = p->num_port_uses;
    for (int i = 0; i < p->num_port_uses; i++) {
        p->port_uses[i].node = get_i32(r);
        p->port_uses[i].port = get_i32(r);
    }
    return NULL;
}

/* The mask is the program's own (what its messages use): recomputed and
 * compared, so that an image cannot switch off a port its program needs. */
static mrc_status_t same_mask(const mrc_program_t *p)
{
    mrc_program_t q = *p;
    q.port_phases = NULL;
    q.port_uses = NULL;
    mrc_status_t st = mrc__port_mask_build(&q);
    if (st != MRC_OK)
        return st;
    int same = q.num_port_phases == p->num_port_phases &&
               q.num_port_uses == p->num_port_uses &&
               (q.num_port_phases == 0 ||
                memcmp(q.port_phases, p->port_phases,
                       (size_t)q.num_port_phases *
                           sizeof *q.port_phases) == 0) &&
               (q.num_port_uses == 0 ||
                memcmp(q.port_uses, p->port_uses,
                       (size_t)q.num_port_uses * sizeof *q.port_uses) == 0);
    free(q.port_phases);
    free(q.port_uses);
    if (!same)
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "its port mask is not the one its messages use "
                          "(%d phases, %d ports in use)",
                          p->num_port_phases, p->num_port_uses);
    return MRC_OK;
}

/* A string of the origin (NULL for none); what is wrong, or NULL. A
 * text is one line of printable bytes or JSON: no NUL, so that it reads
 * back as the C string it was. */
static const char *read_text(reader_t *r, char **out)
{
    uint32_t n = (uint32_t)get(r, 4);
    *out = NULL;
    if (r->short_read || n > r->len - r->at)
        return "an origin text longer than the image";
    if (n == 0)
        return NULL;
    if (memchr(r->d + r->at, 0, n))
        return "an origin text with a NUL byte";
    *out = malloc((size_t)n + 1);
    if (!*out)
        return "out of memory for the origin";
    memcpy(*out, r->d + r->at, n);
    (*out)[n] = '\0';
    r->at += n;
    return NULL;
}

static const char *read_origin(reader_t *r, mrc__image_origin_t *o)
{
    const char *why = read_text(r, &o->topology);
    if (!why)
        why = read_text(r, &o->strategy);
    if (!why)
        why = read_text(r, &o->source);
    uint64_t bits = get(r, 8);
    memcpy(&o->efficiency, &bits, sizeof bits);
    if (!why && !(o->efficiency == -1 ||
                  (o->efficiency >= 0 && o->efficiency <= 1)))
        why = "an origin efficiency outside 0..1";
    return why;
}

void mrc__image_origin_free(mrc__image_origin_t *o)
{
    if (!o)
        return;
    free(o->topology);
    free(o->strategy);
    free(o->source);
    o->topology = o->strategy = o->source = NULL;
    o->efficiency = -1;
}

mrc_status_t mrc_program_load(const void *image, size_t len,
                              mrc_program_t **out)
{
    return mrc__program_load_origin(image, len, out, NULL);
}

mrc_status_t mrc__program_load_origin(const void *image, size_t len,
                                      mrc_program_t **out,
                                      mrc__image_origin_t *origin)
{
    mrc__image_origin_t o = {.efficiency = -1};
    if (origin)
        *origin = o;
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_program_load: out is "
                                               "NULL");
    *out = NULL;
    if (!image)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_program_load: NULL "
                                               "image");
    const uint8_t *d = image;
    if (len < HEADER_BYTES || memcmp(d, IMAGE_MAGIC, 8) != 0)
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "not an mrc program image (%zu bytes, no '" IMAGE_MAGIC
                          "' header)",
                          len);
    reader_t r = {d, len, 8, 0};
    uint32_t version = (uint32_t)get(&r, 4);
    uint32_t header = (uint32_t)get(&r, 4);
    uint64_t payload = get(&r, 8), sum = get(&r, 8);
    if (version < IMAGE_OLDEST || version > IMAGE_VERSION ||
        header != HEADER_BYTES)
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "program image version %u is not supported (this "
                          "mrc reads versions %d to %d); recompile with this "
                          "mrc",
                          version, IMAGE_OLDEST, IMAGE_VERSION);
    if (payload != len - HEADER_BYTES)
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "program image is truncated or padded: %zu payload "
                          "bytes, the header says %llu",
                          len - HEADER_BYTES, (unsigned long long)payload);
    if (mrc__fnv1a(d + HEADER_BYTES, (size_t)payload) != sum)
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "program image is corrupted (checksum mismatch)");

    mrc_program_t *p = calloc(1, sizeof *p);
    if (!p)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    mrc_compile_config_t *c = &p->cfg;
    c->collective = (mrc_collective_t)get(&r, 4);
    c->count = (size_t)get(&r, 8);
    c->dtype = (mrc_dtype_t)get(&r, 4);
    c->op = (mrc_op_t)get(&r, 4);
    c->root = get_i32(&r);
    c->chunk_bytes = (size_t)get(&r, 8);
    c->algo = (mrc_algo_t)get_i32(&r);
    c->hosts = get_i32(&r);
    p->addressing = (uint8_t)get(&r, 1);
    p->num_nodes = get_i32(&r);
    p->num_groups = get_i32(&r);
    p->num_streams = get_i32(&r);
    p->code_len = get_i32(&r);
    p->num_members = get_i32(&r);
    p->num_entries = get_i32(&r);
    p->num_routes = get_i32(&r);
    p->route_pool_len = get_i32(&r);
    const char *why = NULL;
    p->code = take(&r, p->code_len, sizeof *p->code, INSN_BYTES);
    p->groups = take(&r, p->num_groups, sizeof *p->groups, 16);
    p->members = take(&r, p->num_members, sizeof *p->members, 4);
    p->streams = take(&r, p->num_streams, sizeof *p->streams, 32);
    p->ring_first = take(&r, p->num_streams, sizeof *p->ring_first, 4);
    p->ring_order = take(&r, p->num_entries, sizeof *p->ring_order, 4);
    p->nodes = take(&r, p->num_nodes, sizeof *p->nodes, 16);
    p->node_streams = take(&r, p->num_entries, sizeof *p->node_streams, 24);
    p->route_off = take(&r, (int64_t)p->num_routes + 1, sizeof *p->route_off,
                        4);
    p->route_nodes = take(&r, p->route_pool_len, sizeof *p->route_nodes, 4);
    p->route_ports = take(&r, p->route_pool_len, sizeof *p->route_ports, 4);
    p->route_in_ports = take(&r, p->route_pool_len,
                             sizeof *p->route_in_ports, 4);
    if (r.short_read || !p->code || !p->groups || !p->members ||
        !p->streams || !p->ring_first || !p->ring_order || !p->nodes ||
        !p->node_streams || !p->route_off || !p->route_nodes ||
        !p->route_ports || !p->route_in_ports) {
        why = "table sizes larger than the image";
        goto bad;
    }
    for (int i = 0; i < p->code_len; i++) {
        mrc__insn_t *in = &p->code[i];
        in->op = (uint8_t)get(&r, 1);
        in->pred = (uint8_t)get(&r, 1);
        in->pred_lo = (int16_t)(uint16_t)get(&r, 2);
        in->pred_hi = (int16_t)(uint16_t)get(&r, 2);
        in->frag_pos = (int8_t)(uint8_t)get(&r, 1);
        in->frag_step = (int8_t)(uint8_t)get(&r, 1);
        in->frag_const = (int16_t)(uint16_t)get(&r, 2);
        in->buf_a = (uint8_t)get(&r, 1);
        in->buf_b = (uint8_t)get(&r, 1);
        in->local = (uint8_t)get(&r, 1);
        in->flags = (uint8_t)get(&r, 1);
        in->step_rel = (uint8_t)get(&r, 1);
        in->step_const = (int16_t)(uint16_t)get(&r, 2);
        in->peer_pos = (int8_t)(uint8_t)get(&r, 1);
        in->peer_step = (int8_t)(uint8_t)get(&r, 1);
        in->peer_const = (int16_t)(uint16_t)get(&r, 2);
        in->flag = (uint8_t)get(&r, 1);
        in->loop_extra = (int8_t)(uint8_t)get(&r, 1);
        in->view = (uint8_t)get(&r, 1);
    }
    for (int i = 0; i < p->num_groups; i++) {
        mrc__group_t *g = &p->groups[i];
        g->size = get_i32(&r);
        g->first_stream = get_i32(&r);
        g->num_streams = get_i32(&r);
        g->first_member = get_i32(&r);
    }
    for (int i = 0; i < p->num_members; i++)
        p->members[i] = get_i32(&r);
    for (int i = 0; i < p->num_streams; i++) {
        mrc__stream_t *s = &p->streams[i];
        s->group = get_i32(&r);
        s->ring = get_i32(&r);
        s->reversed = get_i32(&r);
        s->root_pos = get_i32(&r);
        s->slice_off = get(&r, 8);
        s->slice_len = get(&r, 8);
    }
    for (int i = 0; i < p->num_streams; i++)
        p->ring_first[i] = get_i32(&r);
    for (int i = 0; i < p->num_entries; i++)
        p->ring_order[i] = get_i32(&r);
    for (int i = 0; i < p->num_nodes; i++) {
        mrc__node_t *nd = &p->nodes[i];
        nd->group = get_i32(&r);
        nd->rank = get_i32(&r);
        nd->num_ports = get_i32(&r);
        nd->first_entry = get_i32(&r);
    }
    for (int i = 0; i < p->num_entries; i++) {
        mrc__node_stream_t *e = &p->node_streams[i];
        e->pos = get_i32(&r);
        e->next = get_i32(&r);
        e->prev = get_i32(&r);
        e->out_port = get_i32(&r);
        e->in_port = get_i32(&r);
        e->route = get_i32(&r);
    }
    for (int i = 0; i <= p->num_routes; i++)
        p->route_off[i] = get_i32(&r);
    for (int i = 0; i < p->route_pool_len; i++)
        p->route_nodes[i] = get_i32(&r);
    for (int i = 0; i < p->route_pool_len; i++)
        p->route_ports[i] = get_i32(&r);
    for (int i = 0; i < p->route_pool_len; i++)
        p->route_in_ports[i] = get_i32(&r);
    if (!r.short_read && (why = read_mask(&r, p)) != NULL)
        goto bad;
    if (!r.short_read && version >= 4 && (why = read_origin(&r, &o)) != NULL)
        goto bad;
    if (r.short_read || r.at != r.len) {
        why = r.short_read ? "the tables run past the end"
                           : "bytes left after the tables";
        goto bad;
    }
    for (int u = 0; u < p->num_nodes && !why; u++) /* groups check these */
        if (p->nodes[u].group >= p->num_groups)
            why = "a node of no group";
    if (!why)
        why = validate(p);
    if (why)
        goto bad;
    mrc_status_t st = mrc_program_check(p);
    if (st == MRC_OK)
        st = same_mask(p);
    if (st == MRC_OK)
        p->port_mask_ready = 1;
    if (st != MRC_OK) {
        mrc__error_prefix("program image");
        mrc_program_destroy(p);
        mrc__image_origin_free(&o);
        return st;
    }
    *out = p;
    if (origin)
        *origin = o;
    else
        mrc__image_origin_free(&o);
    return MRC_OK;
bad:
    mrc_program_destroy(p);
    mrc__image_origin_free(&o);
    return mrc__error(MRC_ERR_INVALID_PROGRAM, "program image refused: %s",
                      why);
}

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
            snprintf(buf, cap, "node %d has %d ports in the topology, %d in "
                     "the program", u, mrc_topo_num_ports(t, u),
                     p->nodes[u].num_ports);
            return buf;
        }
    for (int r = 0; r < p->num_routes; r++)
        for (int j = p->route_off[r]; j + 1 < p->route_off[r + 1]; j++) {
            int peer = -1, peer_port = -1;
            if (mrc_topo_port(t, p->route_nodes[j], p->route_ports[j], NULL,
                              &peer, &peer_port) != MRC_OK ||
                peer != p->route_nodes[j + 1] ||
                peer_port != p->route_in_ports[j + 1]) {
                snprintf(buf, cap, "route %d leaves node %d by port %d, "
                         "which does not lead to node %d", r,
                         p->route_nodes[j], p->route_ports[j],
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
            if (mrc_topo_port(t, u, e->out_port, NULL, &peer, NULL) !=
                    MRC_OK ||
                peer != e->next) {
                snprintf(buf, cap, "node %d sends to node %d by port %d, "
                         "which does not lead there", u, e->next,
                         e->out_port);
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
    if (name && name[0] != '{' &&
        mrc_topo_generate(name, &again) == MRC_OK && same_links(t, again)) {
        mrc_topo_destroy(again);
        *text = mrc__strdup(name);
        return *text ? MRC_OK
                     : mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
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
                                 const mrc__image_origin_t *o,
                                 mrc_topo_t **out)
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
        return mrc__error(MRC_ERR_INVALID_PROGRAM, "program image refused: "
                          "its topology is not its program's: %s", why);
    }
    *out = t;
    return MRC_OK;
}
