/*
 * Reading the binary image (see image_format.h): the length and checksum
 * first, then every table with counts bounded by what the payload can
 * hold, every index against the sizes it read (image_check.c), the
 * checker, and the port mask against the one the program's messages
 * use. A truncated, corrupted or inconsistent image is refused with what
 * is wrong, never half-loaded.
 */
#include <stdlib.h>
#include <string.h>

#include "image_format.h"
#include "program_internal.h"

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
/* Reads the port mask; NULL, or what is wrong with it. */
static const char *read_mask(reader_t *r, mrc_program_t *p)
{
    p->num_port_phases = get_i32(r);
    p->num_port_uses = get_i32(r);
    if (p->num_port_phases < 0 || p->num_port_uses < 0)
        return "impossible table sizes";
    if (p->num_port_phases == 0 && p->num_port_uses == 0)
        return NULL;
    p->port_phases =
        take(r, (int64_t)p->num_port_phases + 1, sizeof *p->port_phases, 12);
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
    int same =
        q.num_port_phases == p->num_port_phases &&
        q.num_port_uses == p->num_port_uses &&
        (q.num_port_phases == 0 ||
         memcmp(q.port_phases, p->port_phases,
                (size_t)q.num_port_phases * sizeof *q.port_phases) == 0) &&
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
    if (!why &&
        !(o->efficiency == -1 || (o->efficiency >= 0 && o->efficiency <= 1)))
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
/* The configuration, the addressing and the table sizes. */
static void read_config(reader_t *r, uint32_t version, mrc_program_t *p)
{
    mrc_compile_config_t *c = &p->cfg;
    c->collective = (mrc_collective_t)get(r, 4);
    c->count = (size_t)get(r, 8);
    c->dtype = (mrc_dtype_t)get(r, 4);
    c->op = (mrc_op_t)get(r, 4);
    c->root = get_i32(r);
    c->chunk_bytes = (size_t)get(r, 8);
    c->algo = (mrc_algo_t)get_i32(r);
    c->hosts = get_i32(r);
    c->completion =
        version >= 5 ? (mrc_completion_t)get(r, 1) : MRC_COMPLETION_GROUP;
    p->addressing = (uint8_t)get(r, 1);
    p->num_nodes = get_i32(r);
    p->num_groups = get_i32(r);
    p->num_streams = get_i32(r);
    p->code_len = get_i32(r);
    p->num_members = get_i32(r);
    p->num_entries = get_i32(r);
    p->num_routes = get_i32(r);
    p->route_pool_len = get_i32(r);
}

/* The tables' memory, each no larger than the payload can hold; NULL,
 * or what is wrong. */
static const char *take_tables(reader_t *r, mrc_program_t *p)
{
    p->code = take(r, p->code_len, sizeof *p->code, MRC__IMAGE_INSN_BYTES);
    p->groups = take(r, p->num_groups, sizeof *p->groups, 16);
    p->members = take(r, p->num_members, sizeof *p->members, 4);
    p->streams = take(r, p->num_streams, sizeof *p->streams, 32);
    p->ring_first = take(r, p->num_streams, sizeof *p->ring_first, 4);
    p->ring_order = take(r, p->num_entries, sizeof *p->ring_order, 4);
    p->nodes = take(r, p->num_nodes, sizeof *p->nodes, 16);
    p->node_streams = take(r, p->num_entries, sizeof *p->node_streams, 24);
    p->route_off = take(r, (int64_t)p->num_routes + 1, sizeof *p->route_off, 4);
    p->route_nodes = take(r, p->route_pool_len, sizeof *p->route_nodes, 4);
    p->route_ports = take(r, p->route_pool_len, sizeof *p->route_ports, 4);
    p->route_in_ports =
        take(r, p->route_pool_len, sizeof *p->route_in_ports, 4);
    if (r->short_read || !p->code || !p->groups || !p->members || !p->streams ||
        !p->ring_first || !p->ring_order || !p->nodes || !p->node_streams ||
        !p->route_off || !p->route_nodes || !p->route_ports ||
        !p->route_in_ports)
        return "table sizes larger than the image";
    return NULL;
}

/* Each instruction (MRC__IMAGE_MRC__IMAGE_INSN_BYTES bytes). */
static void read_code(reader_t *r, mrc_program_t *p)
{
    for (int i = 0; i < p->code_len; i++) {
        mrc__insn_t *in = &p->code[i];
        in->op = (uint8_t)get(r, 1);
        in->pred = (uint8_t)get(r, 1);
        in->pred_lo = (int16_t)(uint16_t)get(r, 2);
        in->pred_hi = (int16_t)(uint16_t)get(r, 2);
        in->frag_pos = (int8_t)(uint8_t)get(r, 1);
        in->frag_step = (int8_t)(uint8_t)get(r, 1);
        in->frag_const = (int16_t)(uint16_t)get(r, 2);
        in->buf_a = (uint8_t)get(r, 1);
        in->buf_b = (uint8_t)get(r, 1);
        in->local = (uint8_t)get(r, 1);
        in->flags = (uint8_t)get(r, 1);
        in->step_rel = (uint8_t)get(r, 1);
        in->step_const = (int16_t)(uint16_t)get(r, 2);
        in->peer_pos = (int8_t)(uint8_t)get(r, 1);
        in->peer_step = (int8_t)(uint8_t)get(r, 1);
        in->peer_const = (int16_t)(uint16_t)get(r, 2);
        in->flag = (uint8_t)get(r, 1);
        in->loop_extra = (int8_t)(uint8_t)get(r, 1);
        in->view = (uint8_t)get(r, 1);
    }
}

/* The groups, members, streams, ring orders, nodes, node entries and
 * routes, in the order image_save.c writes them. */
static void read_tables(reader_t *r, mrc_program_t *p)
{
    for (int i = 0; i < p->num_groups; i++) {
        mrc__group_t *g = &p->groups[i];
        g->size = get_i32(r);
        g->first_stream = get_i32(r);
        g->num_streams = get_i32(r);
        g->first_member = get_i32(r);
    }
    for (int i = 0; i < p->num_members; i++)
        p->members[i] = get_i32(r);
    for (int i = 0; i < p->num_streams; i++) {
        mrc__stream_t *s = &p->streams[i];
        s->group = get_i32(r);
        s->ring = get_i32(r);
        s->reversed = get_i32(r);
        s->root_pos = get_i32(r);
        s->slice_off = get(r, 8);
        s->slice_len = get(r, 8);
    }
    for (int i = 0; i < p->num_streams; i++)
        p->ring_first[i] = get_i32(r);
    for (int i = 0; i < p->num_entries; i++)
        p->ring_order[i] = get_i32(r);
    for (int i = 0; i < p->num_nodes; i++) {
        mrc__node_t *nd = &p->nodes[i];
        nd->group = get_i32(r);
        nd->rank = get_i32(r);
        nd->num_ports = get_i32(r);
        nd->first_entry = get_i32(r);
    }
    for (int i = 0; i < p->num_entries; i++) {
        mrc__node_stream_t *e = &p->node_streams[i];
        e->pos = get_i32(r);
        e->next = get_i32(r);
        e->prev = get_i32(r);
        e->out_port = get_i32(r);
        e->in_port = get_i32(r);
        e->route = get_i32(r);
    }
    for (int i = 0; i <= p->num_routes; i++)
        p->route_off[i] = get_i32(r);
    for (int i = 0; i < p->route_pool_len; i++)
        p->route_nodes[i] = get_i32(r);
    for (int i = 0; i < p->route_pool_len; i++)
        p->route_ports[i] = get_i32(r);
    for (int i = 0; i < p->route_pool_len; i++)
        p->route_in_ports[i] = get_i32(r);
}

/* The header: magic, a version this mrc reads, the payload's length and
 * checksum; r is then at the payload. */
static mrc_status_t read_header(const uint8_t *d, size_t len, reader_t *r,
                                uint32_t *version)
{
    if (len < MRC__IMAGE_HEADER_BYTES || memcmp(d, MRC__IMAGE_MAGIC, 8) != 0)
        return mrc__error(
            MRC_ERR_INVALID_PROGRAM,
            "not an mrc program image (%zu bytes, no '" MRC__IMAGE_MAGIC
            "' header)",
            len);
    *r = (reader_t){d, len, 8, 0};
    *version = (uint32_t)get(r, 4);
    uint32_t header = (uint32_t)get(r, 4);
    uint64_t payload = get(r, 8), sum = get(r, 8);
    if (*version < MRC__IMAGE_OLDEST || *version > MRC__IMAGE_VERSION ||
        header != MRC__IMAGE_HEADER_BYTES)
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "program image version %u is not supported (this "
                          "mrc reads versions %d to %d); recompile with this "
                          "mrc",
                          *version, MRC__IMAGE_OLDEST, MRC__IMAGE_VERSION);
    if (payload != len - MRC__IMAGE_HEADER_BYTES)
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "program image is truncated or padded: %zu payload "
                          "bytes, the header says %llu",
                          len - MRC__IMAGE_HEADER_BYTES,
                          (unsigned long long)payload);
    if (mrc__fnv1a(d + MRC__IMAGE_HEADER_BYTES, (size_t)payload) != sum)
        return mrc__error(MRC_ERR_INVALID_PROGRAM,
                          "program image is corrupted (checksum mismatch)");
    return MRC_OK;
}

/* Everything after the header into p and o; NULL, or what is wrong. */
static const char *read_payload(reader_t *r, uint32_t version, mrc_program_t *p,
                                mrc__image_origin_t *o)
{
    read_config(r, version, p);
    const char *why = take_tables(r, p);
    if (why)
        return why;
    read_code(r, p);
    read_tables(r, p);
    if (!r->short_read && (why = read_mask(r, p)) != NULL)
        return why;
    if (!r->short_read && version >= 4 && (why = read_origin(r, o)) != NULL)
        return why;
    if (r->short_read || r->at != r->len)
        return r->short_read ? "the tables run past the end"
                             : "bytes left after the tables";
    for (int u = 0; u < p->num_nodes; u++) /* groups check these */
        if (p->nodes[u].group >= p->num_groups)
            return "a node of no group";
    return mrc__image_validate(p);
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
    reader_t r;
    uint32_t version = 0;
    mrc_status_t st = read_header(image, len, &r, &version);
    if (st != MRC_OK)
        return st;
    mrc_program_t *p = calloc(1, sizeof *p);
    if (!p)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    const char *why = read_payload(&r, version, p, &o);
    if (why) {
        mrc_program_destroy(p);
        mrc__image_origin_free(&o);
        return mrc__error(MRC_ERR_INVALID_PROGRAM, "program image refused: %s",
                          why);
    }
    st = mrc_program_check(p);
    if (st == MRC_OK)
        st = same_mask(p);
    if (st != MRC_OK) {
        mrc__error_prefix("program image");
        mrc_program_destroy(p);
        mrc__image_origin_free(&o);
        return st;
    }
    p->port_mask_ready = 1;
    *out = p;
    if (origin)
        *origin = o;
    else
        mrc__image_origin_free(&o);
    return MRC_OK;
}
