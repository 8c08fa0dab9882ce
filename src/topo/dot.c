/* Graphviz DOT export: nodes pinned at their coordinates (neato), one edge
 * per link entry, drawn thicker and labelled when it has parallel links. */
#include <stdlib.h>

#include "topo_internal.h"

mrc_status_t mrc_topo_to_dot(const mrc_topo_t *t, char **dot)
{
    mrc__strbuf_t sb;
    if (!t || !dot)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_topo_to_dot: NULL "
                                               "argument");
    *dot = NULL;
    mrc__sb_init(&sb);
    mrc__sb_puts(&sb, "graph topology {\n");
    mrc__sb_puts(&sb, "  graph [layout=neato, overlap=false, splines=true, "
                      "outputorder=edgesfirst, fontname=\"Helvetica\", "
                      "label=");
    mrc__sb_dot_string(&sb, mrc_topo_name(t));
    mrc__sb_puts(&sb, ", labelloc=t];\n");
    mrc__sb_puts(&sb, "  node [shape=circle, style=filled, "
                      "fillcolor=\"#dce9f5\", fontname=\"Helvetica\", "
                      "width=0.45, fixedsize=true];\n");
    mrc__sb_puts(&sb, "  edge [color=\"#4a4a4a\", fontname=\"Helvetica\", "
                      "fontsize=10];\n");
    for (int i = 0; i < t->num_nodes; i++) {
        const mrc__topo_node_t *nd = &t->nodes[i];
        mrc__sb_printf(&sb, "  n%d [label=\"%d\"", i, i);
        if (nd->name) {
            mrc__sb_puts(&sb, ", tooltip=");
            mrc__sb_dot_string(&sb, nd->name);
        }
        if (nd->has_pos) /* neato reads pos in inches; "!" pins it */
            mrc__sb_printf(&sb, ", pos=\"%.4f,%.4f!\"", nd->x * 1.3,
                           nd->y * 1.3);
        mrc__sb_puts(&sb, "];\n");
    }
    for (int i = 0; i < t->num_links && !sb.failed; i++) {
        const mrc_link_t *l = &t->links[i];
        mrc__sb_printf(&sb,
                       "  n%d -- n%d [penwidth=%d, tooltip=\"%d x %g "
                       "GB/s, %g ns\"",
                       l->a, l->b, 1 + l->count, l->count, l->bandwidth_gbps,
                       l->latency_ns);
        if (l->count > 1)
            mrc__sb_printf(&sb, ", label=\"%d\"", l->count);
        mrc__sb_puts(&sb, "];\n");
    }
    mrc__sb_puts(&sb, "}\n");
    *dot = mrc__sb_take(&sb);
    if (!*dot)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory writing DOT");
    return MRC_OK;
}
