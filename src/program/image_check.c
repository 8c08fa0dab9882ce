/*
 * The image's tables checked against the sizes they were read with:
 * every configuration value known, every instruction's opcode and
 * operands in range and allowed in its family, every index inside its
 * table, before the checker runs the program (image_load.c).
 */
#include "program_internal.h"

static int in_range(int64_t v, int64_t lo, int64_t hi) /* lo <= v < hi */
{
    return v >= lo && v < hi;
}

static const char *check_config(const mrc_program_t *p)
{
    const mrc_compile_config_t *c = &p->cfg;
    if ((unsigned)c->collective >= MRC_NUM_COLLECTIVES ||
        mrc_dtype_size(c->dtype) == 0 || (unsigned)c->op >= MRC_NUM_OPS ||
        c->chunk_bytes == 0 || p->addressing > MRC__ADDR_CELLS ||
        (unsigned)c->algo > MRC_ALGO_HIER ||
        (unsigned)c->completion >= MRC_NUM_COMPLETIONS)
        return "unknown collective, type, operator, addressing, family or "
               "completion";
    int hier = c->algo == MRC_ALGO_HIER;
    if (c->hosts < 0 || c->hosts > MRC_TOPO_MAX_NODES || (!hier && c->hosts))
        return "hosts out of range, or hosts for a family other than hier";
    if (!hier && p->addressing == MRC__ADDR_CELLS)
        return "fragments by places in a family other than hier";
    if (p->num_nodes < 1 || p->num_nodes > MRC_TOPO_MAX_NODES ||
        p->num_groups < 0 || p->num_streams < 0 || p->code_len < 0)
        return "impossible table sizes";
    return NULL;
}

/* One instruction: known opcode and operands, a view and memory
 * semantics only in the families that have them. */
static const char *check_insn(const mrc_program_t *p, const mrc__insn_t *in)
{
    const mrc_compile_config_t *c = &p->cfg;
    int hier = c->algo == MRC_ALGO_HIER;
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
        (!hier ||
         (in->view == MRC__VIEW_HOST && p->addressing != MRC__ADDR_CELLS &&
          !(in->flags & (MRC__INSN_WHOLE | MRC__INSN_ALL)) &&
          in->op != MRC__OP_LOOP && in->op != MRC__OP_END &&
          in->op != MRC__OP_SIGNAL && in->op != MRC__OP_WAIT &&
          in->op != MRC__OP_BARRIER)))
        return "an instruction view its family does not have";
    /* Every fragment but its own: an EXPOSE by copy of one fragment's
     * place, in a program that splits its slices. */
    if ((in->flags & MRC__INSN_OTHERS) &&
        (in->op != MRC__OP_EXPOSE ||
         (in->flags & (MRC__INSN_REF | MRC__INSN_ALL | MRC__INSN_WHOLE)) ||
         p->addressing != MRC__ADDR_SPLIT || in->view != MRC__VIEW_GROUP ||
         (c->collective != MRC_ALLREDUCE && c->collective != MRC_REDUCE)))
        return "an expose of every fragment but one that is not an expose "
               "by copy of one fragment of a whole vector";
    /* Memory instructions only in a direct family, and one family's
     * code only: the checker of memory programs orders flags, not
     * messages. */
    if (!hier &&
        (in->op >= MRC__OP_EXPOSE) !=
            (c->algo == MRC_ALGO_DIRECT1 || c->algo == MRC_ALGO_DIRECT2) &&
        in->op != MRC__OP_COPY && in->op != MRC__OP_SCALE &&
        in->op != MRC__OP_LOOP && in->op != MRC__OP_END &&
        in->op != MRC__OP_PORTS)
        return "an instruction its family does not have";
    return NULL;
}

static const char *check_code(const mrc_program_t *p)
{
    int depth = 0;
    for (int i = 0; i < p->code_len; i++) {
        const mrc__insn_t *in = &p->code[i];
        const char *why = check_insn(p, in);
        if (why)
            return why;
        depth += in->op == MRC__OP_LOOP;
        depth -= in->op == MRC__OP_END;
        if (depth < 0 || depth > 1)
            return "unbalanced or nested loops";
    }
    return depth != 0 ? "a loop without its end" : NULL;
}

static const char *check_groups(const mrc_program_t *p)
{
    int hier = p->cfg.algo == MRC_ALGO_HIER;
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
    return NULL;
}

static const char *check_streams(const mrc_program_t *p)
{
    const mrc_compile_config_t *c = &p->cfg;
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
                p->nodes[p->ring_order[p->ring_first[k] + i]].group != s->group)
                return "a ring through a node outside its group";
    }
    return NULL;
}

static const char *check_nodes(const mrc_program_t *p)
{
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
    return NULL;
}

static const char *check_routes(const mrc_program_t *p)
{
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

const char *mrc__image_validate(const mrc_program_t *p)
{
    const char *why = check_config(p);
    if (!why)
        why = check_code(p);
    if (!why)
        why = check_groups(p);
    if (!why)
        why = check_streams(p);
    if (!why)
        why = check_nodes(p);
    if (!why)
        why = check_routes(p);
    return why;
}
