/*
 * The shortest-path search every module shares, over a directed graph
 * that the caller lays out (the topology's link directions, in the
 * embedding module): the fewest arcs breadth first, or the least total
 * length with Dijkstra's search on the shared heap.
 */
#ifndef MRC_COMMON_PATHS_H
#define MRC_COMMON_PATHS_H

/* A directed graph in compressed rows: node u's arcs are k = first[u] ..
 * first[u + 1] - 1, in the order the search tries them; arc k leads to
 * head[k] and is the caller's arc id[k] (0 .. num_ids - 1), which names
 * it in lengths and routes. The caller owns the arrays. */
typedef struct mrc__graph {
    int num_nodes;
    int num_ids;
    int *first; /* [num_nodes + 1] */
    int *head;  /* [first[num_nodes]] */
    int *id;    /* [first[num_nodes]] */
} mrc__graph_t;

typedef struct mrc__paths_hent {
    double dist;
    int node;
} mrc__paths_hent_t;

/* What one search found, from its source: dist[v] (INFINITY where not
 * reached), and the arc id (via) and node (prev) that reached v (-1 at
 * the source and where not reached). Only the nodes a search reached are
 * reset by the next, so that many short searches over a large graph do
 * not each pay for every node. */
typedef struct mrc__paths {
    const mrc__graph_t *graph;
    double *dist; /* [nodes] */
    int *via;     /* [nodes] */
    int *prev;    /* [nodes] */
    int *reached; /* [nodes]: in the order reached (breadth first: the
                     queue) */
    int num_reached;
    mrc__paths_hent_t *heap; /* [arcs + 1] */
    int heap_n;
} mrc__paths_t;

/* 0, or -1 out of memory (mrc__paths_free either way). */
int mrc__paths_init(mrc__paths_t *p, const mrc__graph_t *g);
void mrc__paths_free(mrc__paths_t *p);

/* Searches from src. With len NULL: the fewest arcs, breadth first, so
 * that of equal routes the one found first is kept; it stops once dst is
 * reached (dst < 0: never). With len (one per arc id, not negative): the
 * least total length to every node (Dijkstra; a node's route changes
 * only for a strictly shorter one); dst is not used. */
void mrc__paths_search(mrc__paths_t *p, int src, int dst, const double *len);

/* The route to v that the last search found: its nodes from the source
 * to v into nodes[] and its arc ids into arcs[] (either may be NULL; room
 * for the node count and one fewer). Returns the node count, 0 if v was
 * not reached. */
int mrc__paths_route(const mrc__paths_t *p, int v, int *nodes, int *arcs);

#endif /* MRC_COMMON_PATHS_H */
