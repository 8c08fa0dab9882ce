/*
 * An embedding's picture in Graphviz DOT: the topology's links in grey,
 * each ring's routes in its colour, a legend of the rings.
 */
#include <stdlib.h>

#include "embed_internal.h"

static const char *const palette[] = {
    "#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd",
    "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};

mrc_status_t mrc_embed_to_dot(const mrc_embedding_t *e, char **dot)
{
    if (!e || !dot)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_embed_to_dot: NULL");
    *dot = NULL;
    const mrc_topo_t *t = e->topo;
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    /* splines=curved: Graphviz 2.43 crashes routing true splines round
     * parallel directed edges. */
    mrc__sb_puts(&sb, "digraph rings {\n  graph [layout=neato, "
                      "overlap=false, splines=curved, fontname=\"Helvetica\", "
                      "labelloc=t, label=<");
    /* Title, then a legend: each ring in its colour (the first 12). The
     * names are text of the HTML-like label, escaped as XML: no markup
     * comes from input. */
    mrc__sb_xml_text(&sb, mrc_topo_name(t));
    mrc__sb_puts(&sb, ": ");
    mrc__sb_xml_text(&sb, e->method ? e->method : e->strategy);
    mrc__sb_printf(&sb, ", efficiency %.3f", e->worst.efficiency);
    int shown = 0;
    for (int g = 0; g < e->num_groups; g++)
        for (int r = 0; r < e->groups[g].num_rings; r++, shown++) {
            const mrc_ring_t *ring = &e->groups[g].rings[r];
            if (shown == 12) {
                mrc__sb_puts(&sb, "<BR/>...");
                continue;
            }
            if (shown > 12)
                continue;
            mrc__sb_printf(&sb,
                           "<BR/><FONT POINT-SIZE=\"10\" "
                           "COLOR=\"%s\">group %d ring %d: share %.3f, "
                           "%s</FONT>",
                           palette[shown % 10], g, r, ring->share,
                           ring->bidirectional ? "both ways" : "one way");
        }
    mrc__sb_puts(&sb, ">];\n  node [shape=circle, style=filled, "
                      "fillcolor=\"#eeeeee\", fontname=\"Helvetica\", "
                      "width=0.45, fixedsize=true];\n");
    for (int i = 0; i < mrc_topo_num_nodes(t); i++) {
        double x, y;
        mrc__sb_printf(&sb, "  n%d [label=\"%d\"", i, i);
        if (mrc_topo_node_position(t, i, &x, &y))
            mrc__sb_printf(&sb, ", pos=\"%.4f,%.4f!\"", x * 1.6, y * 1.6);
        mrc__sb_puts(&sb, "];\n");
    }
    for (int i = 0; i < mrc_topo_num_links(t); i++) {
        const mrc_link_t *l = mrc_topo_link(t, i);
        mrc__sb_printf(&sb,
                       "  n%d -> n%d [dir=none, color=\"#cccccc\", "
                       "penwidth=%d];\n",
                       l->a, l->b, 4 + 2 * l->count);
    }
    int colour = 0;
    for (int g = 0; g < e->num_groups; g++)
        for (int r = 0; r < e->groups[g].num_rings; r++, colour++) {
            const mrc_ring_t *ring = &e->groups[g].rings[r];
            const char *c = palette[colour % 10];
            for (int i = 0; i < ring->size; i++) {
                const mrc_hop_t *h = &ring->hops[i];
                for (int s = 0; s + 1 < h->route_len; s++)
                    mrc__sb_printf(&sb,
                                   "  n%d -> n%d [color=\"%s\", "
                                   "penwidth=1.6, arrowsize=0.6%s, "
                                   "tooltip=\"group %d ring %d\"];\n",
                                   h->route[s], h->route[s + 1], c,
                                   ring->bidirectional ? ", dir=both" : "", g,
                                   r);
            }
        }
    mrc__sb_puts(&sb, "}\n");
    *dot = mrc__sb_take(&sb);
    if (!*dot)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory writing DOT");
    return MRC_OK;
}
