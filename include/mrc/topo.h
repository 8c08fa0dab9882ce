/*
 * The physical topology: processors (nodes) joined by full-duplex links.
 *
 * A link joins nodes `a` and `b` with `count` physical links in parallel,
 * each carrying `bandwidth_gbps` (10^9 bytes/s) in each direction after a
 * `latency_ns`. Every physical link has a port (link identifier) at each
 * end: a node's ports are numbered 0, 1, 2, ... in the order its links are
 * listed, a link of count c taking c consecutive ports. These are the ids
 * that programs name when they send (seed 000, claim 14).
 *
 * A topology comes from a generator spec ("torus2d:4,4,bw=50"), from a JSON
 * file (docs/topology-format.md) or from a list of links. Whatever the
 * source, it is validated in full before it is returned: a topology object
 * is always connected, free of self-loops and within the documented limits.
 * It is immutable once created.
 */
#ifndef MRC_TOPO_H
#define MRC_TOPO_H

#include <stddef.h>

#include "mrc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mrc_topo mrc_topo_t;

typedef struct mrc_link {
    int a, b;              /* endpoint node indices, a != b */
    int count;             /* physical links in parallel, >= 1 */
    double bandwidth_gbps; /* per direction per physical link, > 0 */
    double latency_ns;     /* >= 0 */
    int port_a;            /* first port at a: ports port_a .. +count-1 */
    int port_b;            /* first port at b */
} mrc_link_t;

/* Defaults of generators and of links in files that omit the fields. */
#define MRC_TOPO_DEFAULT_BANDWIDTH_GBPS 32.0
#define MRC_TOPO_DEFAULT_LATENCY_NS     500.0

/* Limits beyond which an input is refused as absurd. */
#define MRC_TOPO_MAX_NODES          (1 << 20)
#define MRC_TOPO_MAX_LINKS          (1 << 24)
#define MRC_TOPO_MAX_LINK_COUNT     1024
#define MRC_TOPO_MAX_PORTS          4096 /* per node */
#define MRC_TOPO_MAX_BANDWIDTH_GBPS 1e6
#define MRC_TOPO_MAX_LATENCY_NS     1e12

/* ---- creation ---------------------------------------------------------- */

/* Creates a topology from a generator spec or, if `spec` names an existing
 * file or ends in ".json", from a topology file. */
MRC_EXTERN mrc_status_t mrc_topo_create(const char *spec, mrc_topo_t **out);

/* Creates a topology from a generator spec `NAME[:ARGS][,key=value...]`:
 *   ring:N  line:N  full:N  ladder:N  torus-ladder:N  gcl-torus:N
 *   torus2d:X,Y  prism:K,L  prism-torus:K,L  hcm8
 * with keys bw= (GB/s per direction per physical link, default 32) and
 * lat= (ns, default 500), and the physical links of each link class:
 * rung= and column= (the ladders), x= and y= (torus2d), end=, mid= and
 * inter= (prism), intra= and inter= (prism-torus). `mrc help topo`
 * describes each family. */
MRC_EXTERN mrc_status_t mrc_topo_generate(const char *spec, mrc_topo_t **out);

/* Reads a topology file (docs/topology-format.md). */
MRC_EXTERN mrc_status_t mrc_topo_load(const char *path, mrc_topo_t **out);

/* Reads a topology from JSON text of `len` bytes; `origin` names it in
 * error messages (a file name, or NULL for "<json>"). */
MRC_EXTERN mrc_status_t mrc_topo_parse_json(const char *text, size_t len,
                                            const char *origin,
                                            mrc_topo_t **out);

/* Creates a topology of `num_nodes` nodes from `num_links` links; the
 * port fields of the input are ignored and assigned afresh. */
MRC_EXTERN mrc_status_t mrc_topo_from_links(int num_nodes,
                                            const mrc_link_t *links,
                                            int num_links, mrc_topo_t **out);

/* A copy of `topo` without the links that `failed` names: items "A-B"
 * (every physical link between nodes A and B) or "A-B:K" (K of them),
 * joined by ','; items on the same pair add up. Refused (naming the item)
 * when a node is out of range, A == B, no link joins A and B, or K is
 * more than the links left between them; refused when what is left is
 * disconnected. The copy is named "NAME without ITEMS", keeps the intact
 * topology (mrc_topo_intact) and its own links' order; its ports are
 * numbered afresh. Failing links of a copy fails them of the same intact
 * topology. */
MRC_EXTERN mrc_status_t mrc_topo_fail_links(const mrc_topo_t *topo,
                                            const char *failed,
                                            mrc_topo_t **out);

/* The topology before mrc_topo_fail_links took links out of it; `topo`
 * itself if none were. */
MRC_EXTERN const mrc_topo_t *mrc_topo_intact(const mrc_topo_t *topo);

/* The links mrc_topo_fail_links took out ("0-4:1,2-6"), or NULL. */
MRC_EXTERN const char *mrc_topo_failed_links(const mrc_topo_t *topo);

/* Destroys a topology; NULL is a no-op. */
MRC_EXTERN void mrc_topo_destroy(mrc_topo_t *topo);

/* ---- queries ----------------------------------------------------------- */

/* The spec it was generated from, the file's "name", or the file name. */
MRC_EXTERN const char *mrc_topo_name(const mrc_topo_t *topo);
MRC_EXTERN int mrc_topo_num_nodes(const mrc_topo_t *topo);
/* Link entries (a link of count c is one entry). */
MRC_EXTERN int mrc_topo_num_links(const mrc_topo_t *topo);
/* Physical links: the sum of the counts. */
MRC_EXTERN int mrc_topo_num_physical_links(const mrc_topo_t *topo);
/* Link entry `i`, or NULL if out of range. */
MRC_EXTERN const mrc_link_t *mrc_topo_link(const mrc_topo_t *topo, int i);
/* Number of ports of `node` (its physical links); -1 if out of range. */
MRC_EXTERN int mrc_topo_num_ports(const mrc_topo_t *topo, int node);
/* The link entries at `node`, in port order; returns their number and sets
 * *links to an array owned by the topology. -1 if out of range. */
MRC_EXTERN int mrc_topo_node_links(const mrc_topo_t *topo, int node,
                                   const int **links);
/* What is behind `port` of `node`: the link entry, the node at the other
 * end and the port there. Any out pointer may be NULL. */
MRC_EXTERN mrc_status_t mrc_topo_port(const mrc_topo_t *topo, int node,
                                      int port, int *link, int *peer,
                                      int *peer_port);
/* The node's name, or NULL when it has none. */
MRC_EXTERN const char *mrc_topo_node_name(const mrc_topo_t *topo, int node);
/* 1 and the drawing coordinates if the node has them, else 0. */
MRC_EXTERN int mrc_topo_node_position(const mrc_topo_t *topo, int node,
                                      double *x, double *y);
/* Total outgoing bandwidth of `node` in GB/s (sum of count x bandwidth). */
MRC_EXTERN double mrc_topo_node_bandwidth_gbps(const mrc_topo_t *topo,
                                               int node);
/* Total bandwidth of all links in one direction, GB/s. */
MRC_EXTERN double mrc_topo_total_bandwidth_gbps(const mrc_topo_t *topo);

/* ---- output ------------------------------------------------------------ */

/* The topology in the file format; free *json with mrc_free(). Reading it
 * back gives an identical topology. */
MRC_EXTERN mrc_status_t mrc_topo_to_json(const mrc_topo_t *topo, char **json);

/* Writes the topology in the file format to `path`, whole or not at all:
 * through a new temporary beside it that is renamed into place, so a
 * failure leaves `path` as it was. A symbolic link at `path` is replaced,
 * not followed; a character device or FIFO is written through; a directory
 * is refused (MRC_ERR_IO). */
MRC_EXTERN mrc_status_t mrc_topo_save(const mrc_topo_t *topo, const char *path);

/* A Graphviz DOT graph of the topology (nodes at their coordinates when
 * they have them; parallel links drawn as one edge labelled with the
 * count); free *dot with mrc_free(). */
MRC_EXTERN mrc_status_t mrc_topo_to_dot(const mrc_topo_t *topo, char **dot);

#ifdef __cplusplus
}
#endif

#endif /* MRC_TOPO_H */
