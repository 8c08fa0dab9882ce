/*
 * Inside the topology module: the object layout (topo.c) and the builder
 * (builder.c) through which every source (generators, files, link lists)
 * creates a topology, so that all of them pass the same validation.
 */
#ifndef MRC_TOPO_INTERNAL_H
#define MRC_TOPO_INTERNAL_H

#include "common/common.h"
#include "mrc/topo.h"

typedef struct mrc__topo_node {
    char *name; /* NULL when unnamed */
    int has_pos;
    double x, y;
} mrc__topo_node_t;

struct mrc_topo {
    char *name;   /* the spec or the file's "name"; may be NULL */
    char *origin; /* where it came from, for messages */
    int num_nodes;
    int num_links;
    int num_physical;
    mrc__topo_node_t *nodes;
    mrc_link_t *links;
    int *node_link_off; /* [num_nodes + 1] into node_links */
    int *node_links;    /* link entries of each node, in port order */
    int *port_off;      /* [num_nodes + 1] into port_link */
    int *port_link;     /* link entry behind each port */
    /* After mrc_topo_fail_links: the topology before any link was taken
     * out (owned), and the links taken out, "0-4:1,2-6" (owned); both
     * NULL otherwise. */
    mrc_topo_t *intact;
    char *failed;
};

/* Frees `n` nodes and their names (NULL: nothing). */
void mrc__topo_free_nodes(mrc__topo_node_t *nodes, int n);

/* Collects nodes and links; mrc__topo_builder_build() validates and freezes
 * them. */
typedef struct mrc__topo_builder {
    char *name;
    int num_nodes;
    mrc__topo_node_t *nodes; /* [num_nodes], zeroed */
    mrc_link_t *links;
    int num_links;
    int cap_links;
    int failed; /* an allocation failed */
} mrc__topo_builder_t;

/* Starts a builder of `num_nodes` nodes (checked against the limits). */
mrc_status_t mrc__topo_builder_init(mrc__topo_builder_t *tb, long num_nodes,
                                    const char *name);
/* Appends a link entry; checked later, in mrc__topo_builder_build(). */
void mrc__topo_builder_add_link(mrc__topo_builder_t *tb, long a, long b,
                                long count, double bandwidth_gbps,
                                double latency_ns);
/* Sets a node's drawing position. */
void mrc__topo_builder_set_pos(mrc__topo_builder_t *tb, int node, double x,
                               double y);
/* Validates everything and creates the topology; always consumes `tb`.
 * Errors name the entry ("links[3]") and are prefixed with `origin`. */
mrc_status_t mrc__topo_builder_build(mrc__topo_builder_t *tb,
                                     const char *origin, mrc_topo_t **out);
/* Frees a builder that will not be built. */
void mrc__topo_builder_free(mrc__topo_builder_t *tb);

/* The generators (gen.c), which mrc_topo_generate (spec.c) picks by name
 * and hands the parameters read from the spec string. */
enum { MRC__TOPO_GEN_MAX_ARGS = 4, MRC__TOPO_GEN_MAX_KEYS = 3 };

typedef struct mrc__topo_gen_params {
    long arg[MRC__TOPO_GEN_MAX_ARGS];
    int nargs;
    long cnt[MRC__TOPO_GEN_MAX_KEYS]; /* physical links per class, by key */
    double bw;                        /* GB/s per direction per physical link */
    double lat;                       /* ns */
} mrc__topo_gen_params_t;

typedef struct mrc__topo_generator {
    const char *name;
    int nargs;
    const char *usage; /* what the arguments must be */
    mrc_status_t (*build)(const mrc__topo_gen_params_t *p, const char *spec,
                          mrc__topo_builder_t *tb);
    /* The family's link classes, named as options (rung=2): how many
     * physical links join two nodes of that class; NULL-ended. */
    const char *keys[MRC__TOPO_GEN_MAX_KEYS + 1];
    long dflt[MRC__TOPO_GEN_MAX_KEYS];
} mrc__topo_generator_t;

extern const mrc__topo_generator_t mrc__topo_generators[];
extern const int mrc__topo_num_generators;

#endif /* MRC_TOPO_INTERNAL_H */
