/*
 * One program for every node (seed 003): a collective compiled once into a
 * single instruction stream that all nodes run, told apart only by their
 * index, plus small tables indexed by node (its group, its position in each
 * ring, the ports of its hops).
 *
 * Instructions name fragments by expressions in the node's ring position
 * and the step ("fragment (pos - s) mod N"), so the code has the same
 * length whatever the number of nodes. Every send names the port it leaves
 * by (seed 000, claim 14), and every phase records the ports a node leaves
 * idle, to be switched off (claim 7).
 *
 * A program is checked before it is accepted, after compiling or loading:
 * an abstract run without data proves that every send meets its receive,
 * that no node waits forever, and that every output element gets exactly
 * one contribution from each node of its group. docs/program-format.md
 * describes the instructions, the tables and the binary image.
 */
#ifndef MRC_PROGRAM_H
#define MRC_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "mrc/embed.h"
#include "mrc/status.h"
#include "mrc/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mrc_program mrc_program_t;

typedef struct mrc_compile_config {
    mrc_collective_t collective;
    /* Elements: of each node's vector (allreduce, reduce, broadcast), of
     * each node's block (reduce-scatter: recvcount; allgather:
     * sendcount). Any count, 0 included. */
    size_t count;
    mrc_dtype_t dtype;
    mrc_op_t op;        /* ignored by allgather and broadcast */
    int root;           /* reduce, broadcast: the root's rank in its group */
    size_t chunk_bytes; /* pipelining unit; 0 for the default (256 KiB) */
    /* The family (0: rings). MRC_ALGO_AUTO is refused here: the selector
     * of the communicator and of `mrc explain` resolves it first. */
    mrc_algo_t algo;
    /* hier: each group's nodes are on this many hosts, in equal blocks
     * of consecutive ranks (rank r of a group of n on host r * hosts /
     * n). 0 or 1: one host. Other families ignore it. */
    int hosts;
    /* When a rank's reduce or broadcast returns (mrc_completion_t): with
     * local completion, direct1's leaves of a reduce and root of a
     * broadcast wait on no peer. Other programs are the same either way
     * (the communicator's agreement round is what differs). */
    mrc_completion_t completion;
} mrc_compile_config_t;

#define MRC_DEFAULT_CHUNK_BYTES ((size_t)256 << 10)

/* Compiles a collective for every group of the embedding and checks it.
 * The embedding's topology must outlive the program. */
MRC_EXTERN mrc_status_t mrc_program_compile(const mrc_embedding_t *e,
                                            const mrc_compile_config_t *cfg,
                                            mrc_program_t **out);

MRC_EXTERN void mrc_program_destroy(mrc_program_t *p);

/* The abstract run (done by compile and load; public for tools and
 * tests). A fault is reported with the node, stream and step. */
MRC_EXTERN mrc_status_t mrc_program_check(const mrc_program_t *p);

/* The versioned binary image (with a checksum); free with mrc_free(). */
MRC_EXTERN mrc_status_t mrc_program_save(const mrc_program_t *p, void **image,
                                         size_t *len);
/* Reads and checks an image; a truncated or corrupted one is refused. */
MRC_EXTERN mrc_status_t mrc_program_load(const void *image, size_t len,
                                         mrc_program_t **out);

/* The shared code and the index tables in readable form; mrc_free(). */
MRC_EXTERN mrc_status_t mrc_program_listing(const mrc_program_t *p,
                                            char **text);

typedef struct mrc_program_info {
    mrc_compile_config_t config;
    int num_nodes;
    int num_groups;
    int num_streams;       /* rings x directions, over all groups */
    int code_instructions; /* length of the shared stream */
    size_t table_bytes;    /* the per-node, per-stream and route tables */
    size_t image_bytes;
} mrc_program_info_t;

MRC_EXTERN mrc_status_t mrc_program_info(const mrc_program_t *p,
                                         mrc_program_info_t *info);

#ifdef __cplusplus
}
#endif

#endif /* MRC_PROGRAM_H */
