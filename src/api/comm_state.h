/*
 * Inside the communicators (comm.c's family of files): a communicator's
 * state and the caches of programs and plans, shared by
 *   comm_create.c  the shared part and the communicators, made and freed
 *   comm_plans.c   the program and plan for a call's shape, cached
 *   comm.c         the collectives: a call's checks and its run
 */
#ifndef MRC_COMM_STATE_H
#define MRC_COMM_STATE_H

#include <pthread.h>
#include <stdint.h>

#include "api/comm_internal.h"
#include "exec/exec.h"
#include "mrc/mrc.h"

/* Each rank keeps the plans of its last PLAN_CACHE shapes of call; the
 * shared programs stay while any plan holds them, and up to PROGRAM_KEEP
 * unused ones are kept for later calls. */
enum { PROGRAM_KEEP = 128, PLAN_CACHE = 32 };

typedef struct program_key {
    size_t count;
    mrc_collective_t collective;
    mrc_dtype_t dtype;
    mrc_op_t op;
    int root;
    int group;
    mrc_algo_t algo; /* asked for: a family, or auto */
} program_key_t;
/* Keys are compared with memcmp: no padding, whose bytes a copy need not
 * keep. */
_Static_assert(sizeof(program_key_t) == sizeof(size_t) + 6 * sizeof(int),
               "a call shape has no padding");

/* The family the selector chose for a class of call shapes (the key's
 * count is the class's: comm_plans.c, class_count). */
typedef struct cached_choice {
    program_key_t key;
    mrc_algo_t chosen;
    uint64_t used;
} cached_choice_t;
enum { CHOICE_KEEP = 512 };

typedef struct cached_program {
    program_key_t key;
    mrc_program_t *program;
    int refs;      /* plans (of any rank) built on it */
    uint64_t used; /* for evicting the least recently used */
} cached_program_t;

/* What all ranks of one mrc_comm_init_all share. */
struct mrc__shared {
    pthread_mutex_t lock;
    int refs;
    int nranks;
    mrc_topo_t *topo;
    mrc_embedding_t *embedding;
    mrc__threads_hub_t *hub;  /* threads: every rank here */
    mrc__shm_endpoint_t *shm; /* shm: this process's rank */
    void *owner;              /* another transport's endpoint */
    void (*owner_free)(void *);
    size_t chunk_bytes;
    /* Receive buffers from this size on are written around the caches:
     * cfg->stream_bytes, else $MRC_STREAM_BYTES, else the profile's,
     * else MRC__NONTEMPORAL_BYTES (stream_config). */
    uint64_t stream_bytes;
    mrc_algo_t algo; /* cfg->algo, else $MRC_ALGO, else auto */
    /* cfg->completion, else $MRC_COMPLETION, else group */
    mrc_completion_t completion;
    int shared_buffers; /* cfg->shared_buffers */
    /* The ranks' hosts, in equal blocks (hier): MPI's, or $MRC_HOSTS for
     * tests of the other transports; 1: one host. */
    int hosts;
    cached_program_t *programs;
    int num_programs, cap_programs;
    cached_choice_t *choices; /* [CHOICE_KEEP], allocated at first use */
    int num_choices;
    uint64_t clock;
    /* Some group's hop is routed through another group's node, which
     * relays it: the groups run one program together (see coupled). */
    int coupled;
    /* A program given whole (a loaded image: mrc__comm_init_program):
     * every call runs it, and a call of another shape is refused; the
     * groups and ranks are the program's, and there is no embedding. */
    mrc_program_t *loaded;
    /* $MRC_PROFILE's figures for the selector; NULL: its built-in ones. */
    mrc_profile_t *profile;
};

typedef struct cached_plan {
    const mrc_program_t *program;
    int in_place;
    mrc__exec_t exec;
    uint64_t used;
    /* The call shape that last found this plan through the programs'
     * cache, and the scratch it needs (keyed: 1 once one has): a call of
     * that shape finds the plan here again, without the shared lock. */
    program_key_t key;
    int keyed;
    size_t xbytes;
} cached_plan_t;

struct mrc_comm {
    shared_t *shared;
    int node, group, rank, size;
    mrc__transport_t transport;
    uint64_t seq;
    double timeout_s;
    cached_plan_t plans[PLAN_CACHE];
    uint64_t clock;
    void *scratch;
    size_t scratch_bytes;
    /* The plan the last call ran (set by the lookups, which are the only
     * places plans change): a call of the same shape, as a loop makes,
     * runs it without taking the shared lock twice to look up a program
     * whose plan it already holds, and one of another shape this rank
     * has run looks at its plans (as a benchmark's loop, that calls
     * another shape between its timed loops, makes). */
    cached_plan_t *last_plan; /* NULL: none */
    /* The arguments of the last call that ran last_plan, once checked
     * (valid: 0 while none): a call with the same ones, as a loop over
     * one buffer makes, has the same checks' outcome, shape and plan, and
     * goes straight to the run. */
    struct {
        int valid, in_place;
        mrc_collective_t coll;
        mrc_dtype_t dtype;
        mrc_op_t op;
        int root;
        const void *sendbuf;
        void *recvbuf;
        size_t count;
    } memo;
    /* A call that failed once it had started to talk to the peers (timed
     * out, lost a peer, disagreed with them, or any other error, INTERNAL
     * included) leaves the ranks out of step: later calls fail at once
     * with this status. */
    mrc_status_t poisoned;
};

/* ---- comm_plans.c ------------------------------------------------------- */

/* Drops a plan's reference on shared program p (kept for later calls
 * while few are unused). */
void mrc__comm_put_program(shared_t *s, const mrc_program_t *p);
/* The program and plan of the last call, or of an earlier one this rank
 * ran, if key and in_place are its (MRC_INPROGRESS: no plan of the
 * communicator has run this shape; look it up). */
mrc_status_t mrc__comm_last_plan(mrc_comm_t *c, const program_key_t *key,
                                 int in_place, const mrc_program_t **p,
                                 mrc__exec_t **x, size_t *xbytes);
/* The program and plan for a call of this shape (compiled and expanded
 * on first use, then cached), and the bytes of scratch they need;
 * remembered as the last call's. */
mrc_status_t mrc__comm_find_plan(const char *fn, mrc_comm_t *c,
                                 const program_key_t *key, int in_place,
                                 const mrc_program_t **p, mrc__exec_t **x,
                                 size_t *xbytes);

#endif /* MRC_COMM_STATE_H */
