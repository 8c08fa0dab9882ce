/*
 * Inside the embedding module: the object, the builder that every strategy
 * (and the JSON reader) fills, and the helpers strategies share.
 */
#ifndef MRC_EMBED_INTERNAL_H
#define MRC_EMBED_INTERNAL_H

#include "common/common.h"
#include "common/paths.h"
#include "topo/graph.h"
#include "mrc/embed.h"

typedef struct mrc__embed_group {
    int size;
    int *nodes;
    int num_rings;
    mrc_ring_t *rings; /* arrays inside are owned (cast away const) */
    mrc_embed_figures_t figures;
} mrc__embed_group_t;

struct mrc_embedding {
    const mrc_topo_t *topo;
    char *strategy;
    char *method; /* for auto: what found the rings ("search", "hcm8") */
    int num_groups;
    mrc__embed_group_t *groups;
    int *node_group; /* [num_nodes], -1 for none */
    double *load;    /* [2 * num_links]: entry i, dir d at 2i + d */
    int num_idle;
    int num_idle_physical; /* physical links no step is assigned to */
    int *idle_ports;       /* [num_nodes]: ports no step uses */
    mrc_embed_figures_t worst;
};

/* The builder: groups and rings as the strategy states them. Routes not
 * given are direct hops; link entries not given are chosen when the
 * embedding is finished. */
typedef struct mrc__draft_hop {
    int route_len; /* 0: direct hop */
    int *route;
    int *links; /* NULL: chosen on finish */
} mrc__draft_hop_t;

typedef struct mrc__draft_ring {
    int group;
    int size;
    int *nodes;
    int bidirectional;
    double share;
    mrc__draft_hop_t *hops; /* [size] */
} mrc__draft_ring_t;

typedef struct mrc__embed_builder {
    const mrc_topo_t *topo;
    int num_groups;
    int **group_nodes;
    int *group_size;
    int num_rings, cap_rings;
    mrc__draft_ring_t *rings;
    int failed;
} mrc__embed_builder_t;

void mrc__embed_builder_init(mrc__embed_builder_t *b, const mrc_topo_t *topo);
void mrc__embed_builder_free(mrc__embed_builder_t *b);
/* Adds a group; returns its index, or -1 if out of memory. */
int mrc__embed_builder_add_group(mrc__embed_builder_t *b, const int *nodes,
                                 int size);
/* Adds a ring of group g; returns its index, or -1 if out of memory. */
int mrc__embed_builder_add_ring(mrc__embed_builder_t *b, int g,
                                const int *order, int size, int bidirectional,
                                double share);
/* Sets the route (and optionally the link entries) of hop i of ring r. */
void mrc__embed_builder_set_route(mrc__embed_builder_t *b, int r, int hop,
                                  const int *route, int len, const int *links);
/* Verifies the draft, chooses link entries and ports, computes loads and
 * figures, and creates the embedding; always consumes the builder. */
mrc_status_t mrc__embed_builder_finish(mrc__embed_builder_t *b,
                                       const char *strategy,
                                       mrc_embedding_t **out);

/* Groups from a config: "A+B+..." block sizes, a replica size, or one
 * group of every node. */
mrc_status_t mrc__embed_groups(const mrc_topo_t *topo,
                               const mrc_embed_config_t *cfg,
                               mrc__embed_builder_t *b);

/* Physical links between u and v (all entries). */
int mrc__embed_links_between(const mrc_topo_t *topo, int u, int v);
/* Is link entry `li` a link between u and v? */
int mrc__embed_link_joins(const mrc_topo_t *topo, int li, int u, int v);

/* Loads per link direction and the figures of every group (loads.c);
 * links and ports must be assigned. */
mrc_status_t mrc__embed_compute_loads(mrc_embedding_t *e);

/* Is the topology GCL's ladder (mesh) or its torus? Rung k joins 2k and
 * 2k+1, columns join 2k to 2k+2 and 2k+1 to 2k+3; a torus also joins the
 * top rung back to rung 0. Extra links do not matter. */
enum mrc__ladder { MRC__NOT_LADDER, MRC__MESH, MRC__TORUS };
enum mrc__ladder mrc__embed_ladder_kind(const mrc_topo_t *topo);

/* GCL ring orders on a ladder of n nodes (m = n/2 rungs):
 * the peripheral ring turned to rungs k and k+1: up the left column from
 * rung k+1 round to rung k, across, down the right column back to rung
 * k+1 (k = m-1 is GCL's peripheral-ring, the other way round); and the
 * barley-twist ring of stream 0 or 1 (sideways, then up). */
void mrc__embed_peripheral_order(int n, int k, int *order);
void mrc__embed_barley_twist_order(int n, int stream, int *order);

/* What the strategies share (strategies.c): a refusal naming what the
 * topology lacks; a ring of group g in the given order, each hop without
 * a direct link routed along a shortest path; and the groups of a
 * strategy that fixes its replica size (--groups does not apply). */
mrc_status_t mrc__embed_not_applicable(const char *name, const mrc_topo_t *t,
                                       const char *needs);
mrc_status_t mrc__embed_add_routed_ring(mrc__embed_builder_t *b, int g,
                                        const int *order, int n, int bidir,
                                        double share);
mrc_status_t mrc__embed_use_replicas(const char *name,
                                     const mrc_embed_config_t *cfg, int want,
                                     mrc__embed_builder_t *b);

/* Strategies. Each fills the builder's rings for the groups it was given
 * (or sets its own groups), or refuses with MRC_ERR_NOT_APPLICABLE. */
typedef mrc_status_t (*mrc__strategy_fn)(const mrc_embed_config_t *cfg,
                                         mrc__embed_builder_t *b);

/* X(name, function): the named strategies, in the order
 * mrc_embed_strategies lists them (and auto tries them). The one list from
 * which the functions' declarations, the lookup table, the list of
 * names and what `mrc help rings` says of each are generated; a new strategy is
 * a line here and its function. auto is auto.c, ring and the seeds' prism-faces
 * and hcm8 strategies.c, GCL's ladder strategies gcl.c. */
#define MRC__STRATEGY_MAP(X)                                                   \
    X("auto", mrc__strategy_auto,                                              \
      "any topology, any groups: the best rings found by\n"                    \
      "an exact search (small groups), a construction or\n"                    \
      "any named strategy below (the default)")                                \
    X("ring", mrc__strategy_ring,                                              \
      "one bidirectional ring per group in its order\n"                        \
      "(hops without a link routed on shortest paths)")                        \
    X("peripheral-ring", mrc__strategy_peripheral_ring,                        \
      "GCL, replica size 1, ladder or torus: up one column,\n"                 \
      "down the other")                                                        \
    X("barley-twist", mrc__strategy_barley_twist,                              \
      "GCL, replica size 1, torus only: two rings that\n"                      \
      "zig-zag so that every link is used (repeated\n"                         \
      "over parallel links: gcl-torus:N)")                                     \
    X("ring-on-line", mrc__strategy_ring_on_line,                              \
      "GCL, replica size 2, ladder: a ring on each column\n"                   \
      "line, hops forwarded through the skipped node")                         \
    X("rung-ring-2", mrc__strategy_rung_ring_2,                                \
      "GCL, replica size 2, torus: rings straight up a\n"                      \
      "column, wrapping round")                                                \
    X("rung-ring-4", mrc__strategy_rung_ring_4,                                \
      "GCL, replica size 4: rings straight up a column\n"                      \
      "(wrapping round on a torus)")                                           \
    X("rung-ring-8", mrc__strategy_rung_ring_8,                                \
      "GCL, replica size 8: rings straight up a column\n"                      \
      "(wrapping round on a torus)")                                           \
    X("prism-faces", mrc__strategy_prism_faces,                                \
      "stacked prism, prism:3,L: one ring per face,\n"                         \
      "returning along the opposite edge")                                     \
    X("hcm8", mrc__strategy_hcm8,                                              \
      "hybrid mesh: --groups 8 (3 rings), 4+4 (2 rings each),\n"               \
      "2+2+2+2, 4+2+2, or pairs over any double link,\n"                       \
      "such as the counterparts 0,4+1,5+2,6+3,7")

#define MRC__STRATEGY_DECLARE_(name, fn, about)                                \
    mrc_status_t fn(const mrc_embed_config_t *cfg, mrc__embed_builder_t *b);
MRC__STRATEGY_MAP(MRC__STRATEGY_DECLARE_)
#undef MRC__STRATEGY_DECLARE_

/* Constructions that auto tries besides the search (not public names):
 * two link-disjoint Hamiltonian rings of a 2D torus. */
mrc_status_t mrc__strategy_torus(const mrc_embed_config_t *cfg,
                                 mrc__embed_builder_t *b);
/* GCL's torus with many rungs: the two barley-twist rings and a few
 * rotations of the peripheral ring, shared so that rungs and columns carry
 * nearly the same load. */
mrc_status_t mrc__strategy_torus_ladder(const mrc_embed_config_t *cfg,
                                        mrc__embed_builder_t *b);
/* hcm8 (seed 004) as one group of eight: its optimum, every link busy. */
mrc_status_t mrc__strategy_hcm8_optimum(const mrc_embed_config_t *cfg,
                                        mrc__embed_builder_t *b);
/* Two link-disjoint Hamiltonian rings of the X x Y torus (X, Y >= 3) as
 * node orders; 0 on success. */
int mrc__embed_torus_rings(int X, int Y, int *ring_a, int *ring_b);

/* Looks up a named strategy (auto included); NULL if unknown. */
mrc__strategy_fn mrc__strategy_find(const char *name);

#endif /* MRC_EMBED_INTERNAL_H */
