/*
 * Logical rings embedded in a physical topology (the seeds' central idea):
 * several rings, each a cyclic order of a group's nodes, so that a
 * collective drives many links at once.
 *
 * A group is a set of nodes that runs its own collective; several groups
 * (GCL replicas, seed 004 compute groups) run at the same time on shared
 * links. Each group has one or more rings. A ring carries a `share` of the
 * group's data; a bidirectional ring sends half of its share each way round
 * (seed 000, claims 10-12). Each hop of a ring (node to next node) has a
 * route: the nodes it passes, [u, v] for a direct link, longer where other
 * processors forward it; and for each step of the route the link entry and
 * the port it leaves by.
 *
 * Every embedding is verified when it is created: rings visit each node of
 * their group once, routes follow existing links, groups are disjoint and
 * shares sum to 1. The load of every link direction is then known.
 */
#ifndef MRC_EMBED_H
#define MRC_EMBED_H

#include <stddef.h>

#include "mrc/status.h"
#include "mrc/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mrc_embedding mrc_embedding_t;

/* One hop of a ring: from nodes[i] to nodes[i+1 mod size]. */
typedef struct mrc_hop {
    int from, to;
    int route_len;       /* nodes on the route, >= 2 */
    const int *route;    /* route[0] = from ... route[route_len-1] = to */
    const int *links;    /* [route_len-1]: the link entry of each step */
    const int *ports;    /* [route_len-1]: out-port at route[i] */
    const int *in_ports; /* [route_len-1]: port at route[i+1] it arrives on */
} mrc_hop_t;

typedef struct mrc_ring {
    int size;              /* nodes in the ring (= the group's size) */
    const int *nodes;      /* the cyclic order */
    int bidirectional;     /* half the share each way round */
    double share;          /* of the group's data; a group's shares sum to 1 */
    const mrc_hop_t *hops; /* [size] */
} mrc_ring_t;

typedef struct mrc_embed_config {
    /* A strategy name (`mrc help rings` lists them), or NULL for "auto". */
    const char *strategy;
    /* Groups as sizes of consecutive blocks of nodes, "4+2+2" = nodes
     * 0-3, 4-5, 6-7, or (when it has a ',') as node lists, "0,4+1,5+2,6+
     * 3,7" ('+' between groups, ',' within one; a lone node is a group of
     * one). A list's order is the group's rank order (and the ring
     * strategy's ring order). Groups must be disjoint and cover every
     * node. NULL or "" for one group of every node. */
    const char *groups;
    /* > 0: GCL replicas of this many consecutive nodes; the groups are then
     * the cross-replica groups (the nodes at the same position in every
     * replica). 0: not used. Exclusive with `groups`. */
    int replica_size;
    /* > 0: at most this many rings per group, counting a bidirectional
     * ring once (auto trades bandwidth for fewer rings; named strategies
     * with more are not used). 0: auto's own limit of 12. */
    int max_rings;
} mrc_embed_config_t;

/* Allreduce figures of a group (or, from mrc_embed_figures, of the worst
 * group):
 *   bound_gbps  = min over the group's nodes of its outgoing bandwidth
 *                 x N / (2(N-1))  (a node sends 2(N-1)/N of the data);
 *   algbw_gbps  = data size / time, the time set by the most loaded link
 *                 direction that the group uses, all groups running at once;
 *   efficiency  = algbw / bound.
 * A group of one node moves nothing: its figures are 0 and efficiency 1. */
typedef struct mrc_embed_figures {
    double bound_gbps;
    double algbw_gbps;
    double efficiency;
} mrc_embed_figures_t;

/* Embeds rings in `topo` with the configured strategy. A strategy that does
 * not apply returns MRC_ERR_NOT_APPLICABLE with a message that says what it
 * needs. The topology must outlive the embedding. */
MRC_EXTERN mrc_status_t mrc_embed_create(const mrc_topo_t *topo,
                                         const mrc_embed_config_t *config,
                                         mrc_embedding_t **out);

/* Reads an embedding in the JSON form that mrc_embed_to_json writes (the
 * "topology" key, if present, is not read: `topo` is used) and verifies it.
 * Hand-written rings are refused with the group, ring and hop at fault. */
MRC_EXTERN mrc_status_t mrc_embed_parse_json(const mrc_topo_t *topo,
                                             const char *text, size_t len,
                                             const char *origin,
                                             mrc_embedding_t **out);

MRC_EXTERN void mrc_embed_destroy(mrc_embedding_t *e);

MRC_EXTERN const mrc_topo_t *mrc_embed_topology(const mrc_embedding_t *e);
/* The strategy that made it ("auto", "hcm8", ..., or "file"). */
MRC_EXTERN const char *mrc_embed_strategy(const mrc_embedding_t *e);
MRC_EXTERN int mrc_embed_num_groups(const mrc_embedding_t *e);
/* The nodes of group g in rank order; returns their number. */
MRC_EXTERN int mrc_embed_group_nodes(const mrc_embedding_t *e, int g,
                                     const int **nodes);
/* The group of `node`, or -1 if it belongs to none. */
MRC_EXTERN int mrc_embed_node_group(const mrc_embedding_t *e, int node);
MRC_EXTERN int mrc_embed_num_rings(const mrc_embedding_t *e, int g);
/* Ring r of group g, or NULL if out of range. */
MRC_EXTERN const mrc_ring_t *mrc_embed_ring(const mrc_embedding_t *e, int g,
                                            int r);

/* Load of link entry `link` in direction `dir` (0: a to b, 1: b to a), all
 * groups together, as bytes carried per byte of each group's allreduce
 * data. 0 means the direction is idle. */
MRC_EXTERN double mrc_embed_link_load(const mrc_embedding_t *e, int link,
                                      int dir);
/* Number of idle link directions. */
MRC_EXTERN int mrc_embed_num_idle(const mrc_embedding_t *e);
/* Number of physical links that no hop is assigned to. A link entry of
 * count c is c physical links and a hop takes one of them, so an entry
 * busy both ways may hold idle physical links. -1 if `e` is NULL. */
MRC_EXTERN int mrc_embed_num_idle_physical(const mrc_embedding_t *e);
/* Ports of `node` that no hop uses (the program may switch them off);
 * -1 if `node` is out of range. */
MRC_EXTERN int mrc_embed_idle_ports(const mrc_embedding_t *e, int node);

MRC_EXTERN mrc_status_t mrc_embed_group_figures(const mrc_embedding_t *e, int g,
                                                mrc_embed_figures_t *out);
MRC_EXTERN mrc_status_t mrc_embed_figures(const mrc_embedding_t *e,
                                          mrc_embed_figures_t *out);

/* Checks every invariant again (it held when the embedding was made). */
MRC_EXTERN mrc_status_t mrc_embed_verify(const mrc_embedding_t *e);

/* JSON: {"topology": ..., "strategy": ..., "groups": [...], "links": [...],
 * "bound_gbps": ..., "algbw_gbps": ..., "efficiency": ...}; free with
 * mrc_free(). docs/strategies.md describes it. */
MRC_EXTERN mrc_status_t mrc_embed_to_json(const mrc_embedding_t *e,
                                          char **json);

/* A DOT picture: the topology in grey, each ring in its own colour. */
MRC_EXTERN mrc_status_t mrc_embed_to_dot(const mrc_embedding_t *e, char **dot);

/* The names of the strategies, NULL-terminated. */
MRC_EXTERN const char *const *mrc_embed_strategies(void);

/* What strategy `name` does and where it applies, in a few lines apart
 * by '\n' (as `mrc help rings` prints it); NULL for an unknown name. */
MRC_EXTERN const char *mrc_embed_strategy_about(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* MRC_EMBED_H */
