/*
 * The topology as the graph of the shared path search (common/paths.h),
 * for the stages after topo that route over it (the embedding's
 * forwarded hops and search, the simulator's paths for gets and waits).
 */
#ifndef MRC_TOPO_GRAPH_H
#define MRC_TOPO_GRAPH_H

#include "common/paths.h"
#include "mrc/topo.h"

/* The topology's link directions: node u's arcs in the order of its
 * links; link entry i from a to b is arc id 2i, back 2i + 1. 0, or -1
 * out of memory (mrc__topo_graph_free either way). */
int mrc__topo_graph_init(mrc__graph_t *g, const mrc_topo_t *t);
void mrc__topo_graph_free(mrc__graph_t *g);

#endif /* MRC_TOPO_GRAPH_H */
