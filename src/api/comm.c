/*
 * Communicators and the collective entry points. mrc_comm_init_all builds
 * the topology, the rings and the threads transport's hub once, shared by
 * every rank; each call then finds (or compiles, once for all ranks) the
 * program for its collective, count, type, operator and root, expands its
 * node's part (cached per communicator), and runs it.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/comm_internal.h"
#include "exec/exec.h"
#include "reduce/reduce.h"
#include "mrc/mrc.h"
#include "program/plan.h"
#include "sim/select.h"
#include "transport/transport.h"

/* Each rank keeps the plans of its last PLAN_CACHE shapes of call; the
 * shared programs stay while any plan holds them, and up to PROGRAM_KEEP
 * unused ones are kept for later calls. */
enum { PROGRAM_KEEP = 32, PLAN_CACHE = 8 };

typedef struct program_key {
    mrc_collective_t collective;
    size_t count;
    mrc_dtype_t dtype;
    mrc_op_t op;
    int root;
    int group;
    mrc_algo_t algo; /* asked for: a family, or auto */
    int unused;      /* no padding: keys are compared with memcmp */
} program_key_t;

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
    mrc__threads_hub_t *hub;       /* threads: every rank here */
    mrc__shm_endpoint_t *shm;      /* shm: this process's rank */
    void *owner;                   /* another transport's endpoint */
    void (*owner_free)(void *);
    size_t chunk_bytes;
    mrc_algo_t algo; /* cfg->algo, else $MRC_ALGO, else auto */
    /* The ranks' hosts, in equal blocks (hier): MPI's, or $MRC_HOSTS for
     * tests of the other transports; 1: one host. */
    int hosts;
    cached_program_t *programs;
    int num_programs, cap_programs;
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
    /* The last call's shape and the plan it ran (set by the lookup that
     * found or built it, which is the only place plans change): a call of
     * the same shape, as a loop makes, runs it without taking the shared
     * lock twice to look up a program whose plan it already holds. */
    program_key_t last_key;
    int last_in_place;
    cached_plan_t *last_plan; /* NULL: none */
    size_t last_xbytes;
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

static void put_program(shared_t *s, const mrc_program_t *p);

static void shared_release(shared_t *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    int last = --s->refs == 0;
    pthread_mutex_unlock(&s->lock);
    if (!last)
        return;
    for (int i = 0; i < s->num_programs; i++)
        mrc_program_destroy(s->programs[i].program);
    free(s->programs);
    mrc_program_destroy(s->loaded);
    mrc__threads_hub_destroy(s->hub);
    mrc__shm_detach(s->shm);
    if (s->owner)
        s->owner_free(s->owner);
    mrc_embed_destroy(s->embedding);
    mrc_topo_destroy(s->topo);
    free(s->profile);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static double env_double(const char *name, double dflt)
{
    const char *v = getenv(name);
    double d;
    return v && mrc__parse_double(v, &d) == 0 && d > 0 ? d : dflt;
}

static size_t env_size(const char *name, size_t dflt)
{
    const char *v = getenv(name);
    uint64_t s;
    return v && mrc__parse_size(v, &s) == 0 && s > 0 ? (size_t)s : dflt;
}

/* Whether a hop of some group runs through a node of another group (GCL's
 * rung rings on a ladder: every hop of a column passes the other
 * column's nodes). Such a node must relay the hop while its own group
 * calls, so the groups are compiled as one program and must make the
 * same calls in the same order, as GCL's replicas do; a group that calls
 * something else is caught by the ranks' agreement like any other. */
static int coupled(const mrc_embedding_t *e)
{
    for (int g = 0; g < mrc_embed_num_groups(e); g++)
        for (int r = 0; r < mrc_embed_num_rings(e, g); r++) {
            const mrc_ring_t *ring = mrc_embed_ring(e, g, r);
            for (int h = 0; h < ring->size; h++)
                for (int i = 1; i < ring->hops[h].route_len - 1; i++)
                    if (mrc_embed_node_group(e, ring->hops[h].route[i]) != g)
                        return 1;
        }
    return 0;
}

/* The family asked for: cfg->algo, else $MRC_ALGO, else the rings when
 * the caller named a ring strategy (seed 002's ring-on-line, seed 000's
 * prism-faces: a user who names one asks for its rings), else auto. A
 * name that is no family is an error at creation, not a silent
 * default. */
static mrc_status_t algo_config(const mrc_config_t *cfg, mrc_algo_t *out)
{
    *out = MRC_ALGO_AUTO;
    const char *v = cfg->algo ? cfg->algo : getenv("MRC_ALGO");
    if ((!v || !*v) && cfg->strategy && strcmp(cfg->strategy, "auto") != 0)
        *out = MRC_ALGO_RINGS;
    /* $MRC_NO_DIRECT (set, any value): the rings, to compare with the
     * direct programs the selector would take. */
    if ((!v || !*v) && getenv("MRC_NO_DIRECT"))
        *out = MRC_ALGO_RINGS;
    if (!v || !*v)
        return MRC_OK;
    mrc_status_t st = mrc_algo_parse(v, out);
    if (st != MRC_OK)
        mrc__error_prefix("%s", cfg->algo ? "mrc_config_t.algo"
                                          : "$MRC_ALGO");
    return st;
}

/* $MRC_PROFILE=FILE: a host profile (mrc calibrate) whose figures the
 * selector uses instead of its built-in constants. A file that cannot be
 * read, is no profile or is of another version fails the communicator's
 * creation: a user who names a profile expects it to be used, not a
 * silent fallback to the built-in model. */
static mrc_status_t profile_config(shared_t *s)
{
    const char *path = getenv("MRC_PROFILE");
    if (!path || !*path)
        return MRC_OK;
    s->profile = malloc(sizeof *s->profile);
    if (!s->profile)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    mrc_status_t st = mrc_profile_load(path, s->profile);
    if (st != MRC_OK) {
        free(s->profile);
        s->profile = NULL;
        mrc__error_prefix("$MRC_PROFILE");
    }
    return st;
}

/* A profile measured on another transport than the communicator's. */
static mrc_status_t profile_refused(const shared_t *s, const char *name)
{
    if (!s->profile || strcmp(s->profile->transport, name) == 0)
        return MRC_OK;
    return mrc__error(MRC_ERR_INVALID_ARG,
                      "$MRC_PROFILE=%s was measured on the %s transport, "
                      "and this communicator runs over %s (measure it "
                      "with 'mrc calibrate --transport %s')",
                      getenv("MRC_PROFILE"), s->profile->transport, name,
                      name);
}

/* The profile for the selector's model x: the communicator's own, which
 * was measured on its transport, under the model's name (MPI ranks of
 * one host are modelled as shm). */
static const mrc_profile_t *profile_for(const shared_t *s, mrc__xport_t x,
                                        mrc_profile_t *copy)
{
    if (!s->profile)
        return NULL;
    *copy = *s->profile;
    snprintf(copy->transport, sizeof copy->transport, "%s",
             mrc__xport_name(x));
    return copy;
}

/* Replaces *topo by a copy without the failed links. */
static mrc_status_t without_failed_links(mrc_topo_t **topo,
                                         const char *failed)
{
    mrc_topo_t *t = NULL;
    mrc_status_t st = mrc_topo_fail_links(*topo, failed, &t);
    if (st != MRC_OK)
        return st;
    mrc_topo_destroy(*topo);
    *topo = t;
    return MRC_OK;
}

/* What every rank of a job shares: topology, rings, programs. A NULL cfg
 * takes every default. */
static mrc_status_t shared_create(int nranks, const mrc_config_t *cfg,
                                  shared_t **out, double *timeout)
{
    *out = NULL;
    static const mrc_config_t defaults = {0};
    if (!cfg)
        cfg = &defaults;
    shared_t *s = calloc(1, sizeof *s);
    if (!s)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    pthread_mutex_init(&s->lock, NULL);
    s->refs = 1;
    s->nranks = nranks;
    s->chunk_bytes = cfg->chunk_bytes
                         ? cfg->chunk_bytes
                         : env_size("MRC_CHUNK_BYTES",
                                    MRC_DEFAULT_CHUNK_BYTES);
    *timeout = cfg->timeout_s > 0 ? cfg->timeout_s
                                  : env_double("MRC_TIMEOUT", 60);
    mrc_status_t st = algo_config(cfg, &s->algo);
    if (st == MRC_OK)
        st = profile_config(s);
    if (st != MRC_OK) {
        shared_release(s);
        return st;
    }
    /* $MRC_HOSTS=H (for tests): threads and shm ranks taken to be on H
     * hosts in blocks, so that hier runs on one machine; a value that
     * does not split the ranks is an error when hier is compiled. */
    long hosts = cfg->hosts > 0 ? cfg->hosts : 1;
    const char *hv = cfg->hosts > 0 ? NULL : getenv("MRC_HOSTS");
    if (cfg->hosts < 0)
        hv = "a negative count";
    if (hv && *hv && mrc__parse_long(hv, 1, MRC_TOPO_MAX_NODES, &hosts) != 0) {
        shared_release(s);
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s '%s' is not a count of hosts",
                          cfg->hosts < 0 ? "mrc_config_t.hosts" : "$MRC_HOSTS",
                          hv);
    }
    s->hosts = (int)hosts;
    char spec[32];
    snprintf(spec, sizeof spec, nranks == 1 ? "line:1" : "ring:%d", nranks);
    st = mrc_topo_create(cfg->topology ? cfg->topology : spec, &s->topo);
    if (st == MRC_OK && mrc_topo_num_nodes(s->topo) != nranks)
        st = mrc__error(MRC_ERR_INVALID_ARG,
                        "topology %s has %d nodes but there are %d ranks",
                        mrc_topo_name(s->topo), mrc_topo_num_nodes(s->topo),
                        nranks);
    if (st == MRC_OK && cfg->failed_links && cfg->failed_links[0])
        st = without_failed_links(&s->topo, cfg->failed_links);
    mrc_embed_config_t ec = {.strategy = cfg->strategy,
                             .groups = cfg->groups,
                             .replica_size = cfg->replica_size,
                             .max_rings = cfg->max_rings};
    if (st == MRC_OK)
        st = mrc_embed_create(s->topo, &ec, &s->embedding);
    if (st != MRC_OK) {
        shared_release(s);
        return st;
    }
    s->coupled = coupled(s->embedding);
    *out = s;
    return MRC_OK;
}

void mrc__comm_shared_hosts(shared_t *s, int hosts)
{
    s->hosts = hosts > 1 ? hosts : 1;
}

/* MRC_DEBUG=INFO at creation: the topology, the transport and the rings
 * of this rank's group, one line each. */
static void log_comm(const mrc_comm_t *c)
{
    if (mrc__log_level() < MRC__LOG_INFO)
        return;
    const shared_t *s = c->shared;
    mrc__log(MRC__LOG_INFO, c->rank, "topology %s: %d nodes, %d links",
             mrc_topo_name(s->topo), mrc_topo_num_nodes(s->topo),
             mrc_topo_num_links(s->topo));
    mrc__log(MRC__LOG_INFO, c->rank,
             "transport %s: node %d, group %d of %d ranks, family %s",
             c->transport.ops->name, c->node, c->group, c->size,
             mrc_algo_name(s->algo));
    if (!s->embedding) /* a loaded program: its rings are in its tables */
        return;
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    int nr = mrc_embed_num_rings(s->embedding, c->group);
    mrc__sb_printf(&sb, "rings %s: %d", mrc_embed_strategy(s->embedding),
                   nr);
    for (int r = 0; r < nr; r++) {
        const mrc_ring_t *ring = mrc_embed_ring(s->embedding, c->group, r);
        mrc__sb_puts(&sb, r ? "; " : ": ");
        /* Past 16 nodes a ring is its first ones and its length. */
        for (int i = 0; i < ring->size && i < 16; i++)
            mrc__sb_printf(&sb, i ? " %d" : "%d", ring->nodes[i]);
        if (ring->size > 16)
            mrc__sb_printf(&sb, " ... (%d nodes)", ring->size);
        if (ring->bidirectional)
            mrc__sb_puts(&sb, " (both ways)");
    }
    if (!sb.failed)
        mrc__log(MRC__LOG_INFO, c->rank, "%s", sb.data);
    mrc__sb_free(&sb);
}

/* A loaded program's group, rank and group size of c->node (its node
 * table: mrc__comm_init_program checked that every node is in a group). */
static void loaded_rank(const mrc_program_t *p, mrc_comm_t *c)
{
    const mrc__node_t *nd = &p->nodes[c->node];
    c->group = nd->group;
    c->rank = nd->rank;
    c->size = p->groups[nd->group].size;
}

/* The communicator of node r; it holds a reference on s. */
static mrc_status_t comm_create(shared_t *s, int r, mrc__transport_t t,
                                double timeout, mrc_comm_t **out);

/* The nranks communicators of a threads job over s (all or none). */
static mrc_status_t threads_comms(shared_t *s, int nranks, double timeout,
                                  mrc_comm_t **comms)
{
    mrc_status_t st = mrc__threads_hub_create(nranks, &s->hub);
    for (int r = 0; r < nranks && st == MRC_OK; r++)
        st = comm_create(s, r, mrc__threads_transport(s->hub, r), timeout,
                         &comms[r]);
    if (st != MRC_OK)
        for (int r = 0; r < nranks; r++) {
            mrc_comm_destroy(comms[r]);
            comms[r] = NULL;
        }
    return st;
}

static mrc_status_t comm_create(shared_t *s, int r, mrc__transport_t t,
                                double timeout, mrc_comm_t **out)
{
    mrc_status_t st = profile_refused(s, t.ops->name);
    if (st != MRC_OK)
        return st;
    mrc_comm_t *c = calloc(1, sizeof *c);
    if (!c)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    pthread_mutex_lock(&s->lock);
    s->refs++;
    pthread_mutex_unlock(&s->lock);
    c->shared = s;
    c->node = r;
    if (s->loaded) {
        loaded_rank(s->loaded, c);
    } else {
        c->group = mrc_embed_node_group(s->embedding, r);
        const int *nodes;
        c->size = mrc_embed_group_nodes(s->embedding, c->group, &nodes);
        for (int i = 0; i < c->size; i++)
            if (nodes[i] == r)
                c->rank = i;
    }
    c->transport = t;
    c->timeout_s = timeout;
    log_comm(c);
    *out = c;
    return MRC_OK;
}

mrc_status_t mrc__comm_shared(int nranks, const mrc_config_t *cfg,
                              shared_t **out, double *timeout)
{
    return shared_create(nranks, cfg, out, timeout);
}

mrc_status_t mrc__comm_attach(shared_t *s, int rank, mrc__transport_t t,
                              void *owner, void (*owner_free)(void *),
                              double timeout, mrc_comm_t **out)
{
    s->owner = owner;
    s->owner_free = owner_free;
    mrc_status_t st = comm_create(s, rank, t, timeout, out);
    shared_release(s);
    return st;
}

void mrc__comm_shared_release(shared_t *s)
{
    shared_release(s);
}

mrc_status_t mrc_comm_init_all(mrc_comm_t **comms, int nranks,
                               const mrc_config_t *cfg)
{
    if (!comms)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_comm_init_all: comms is NULL");
    if (nranks < 1 || nranks > MRC_TOPO_MAX_NODES)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_comm_init_all: nranks %d (must be 1..%d)",
                          nranks, MRC_TOPO_MAX_NODES);
    for (int r = 0; r < nranks; r++)
        comms[r] = NULL;
    shared_t *s;
    double timeout;
    mrc_status_t st = shared_create(nranks, cfg, &s, &timeout);
    if (st != MRC_OK)
        return st;
    st = threads_comms(s, nranks, timeout, comms);
    shared_release(s); /* the comms hold their own references */
    return st;
}

/* A job id names shared memory: letters, digits, '-' and '_' only. */
mrc_status_t mrc__comm_init_program(mrc_comm_t **comms, int nranks,
                                    mrc_topo_t *topo, mrc_program_t *p,
                                    double timeout_s)
{
    if (!comms || !topo || !p) {
        mrc_topo_destroy(topo);
        mrc_program_destroy(p);
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc__comm_init_program: NULL");
    }
    for (int r = 0; r < nranks; r++)
        comms[r] = NULL;
    mrc_status_t st = MRC_OK;
    if (nranks != p->num_nodes || mrc_topo_num_nodes(topo) != nranks)
        st = mrc__error(MRC_ERR_INVALID_ARG,
                        "the program has %d nodes and its topology %d, but "
                        "there are %d ranks",
                        p->num_nodes, mrc_topo_num_nodes(topo), nranks);
    for (int u = 0; u < p->num_nodes && st == MRC_OK; u++)
        if (p->nodes[u].group < 0)
            st = mrc__error(MRC_ERR_INVALID_ARG,
                            "node %d is in no group of the program (it was "
                            "compiled for one group only): its rank would "
                            "have nothing to run",
                            u);
    shared_t *s = st == MRC_OK ? calloc(1, sizeof *s) : NULL;
    if (st == MRC_OK && !s)
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    if (st != MRC_OK) {
        mrc_topo_destroy(topo);
        mrc_program_destroy(p);
        return st;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->refs = 1;
    s->nranks = nranks;
    s->chunk_bytes = p->cfg.chunk_bytes;
    s->algo = p->cfg.algo;
    s->hosts = mrc__program_hosts(p);
    s->topo = topo;
    s->loaded = p;
    double timeout = timeout_s > 0 ? timeout_s
                                   : env_double("MRC_TIMEOUT", 60);
    st = threads_comms(s, nranks, timeout, comms);
    shared_release(s);
    return st;
}

static int valid_job(const char *job)
{
    size_t n = strlen(job);
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = job[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
              (ch >= 'A' && ch <= 'Z') || ch == '-' || ch == '_'))
            return 0;
    }
    return 1;
}

/* The job's token from the launcher ($MRC_JOB_TOKEN): up to 32 letters
 * and digits, or none. */
static mrc_status_t env_token(const char **out)
{
    const char *v = getenv("MRC_JOB_TOKEN");
    *out = v && *v ? v : NULL;
    if (!*out)
        return MRC_OK;
    if (strlen(v) > 32 || !valid_job(v))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_comm_init_env: $MRC_JOB_TOKEN is not a job "
                          "token (1 to 32 letters or digits)");
    return MRC_OK;
}

static mrc_status_t init_rank(mrc_comm_t **comm, int nranks, int rank,
                              const char *job, const char *token,
                              const mrc_config_t *cfg)
{
    if (!comm)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_comm_init_rank: comm is NULL");
    *comm = NULL;
    if (nranks < 1 || nranks > MRC_TOPO_MAX_NODES)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_comm_init_rank: nranks %d (must be 1..%d)",
                          nranks, MRC_TOPO_MAX_NODES);
    if (rank < 0 || rank >= nranks)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_comm_init_rank: rank %d (must be 0..%d)", rank,
                          nranks - 1);
    if (!job || !valid_job(job))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_comm_init_rank: job id '%s' (1 to 64 letters, "
                          "digits, '-' or '_')",
                          job ? job : "(null)");
    shared_t *s;
    double timeout;
    mrc_status_t st = shared_create(nranks, cfg, &s, &timeout);
    if (st != MRC_OK)
        return st;
    /* Before attaching: every rank refuses alone, none waits for it. */
    st = profile_refused(s, "shm");
    if (st == MRC_OK)
        st = mrc__shm_attach(nranks, rank, job, token, timeout, &s->shm);
    if (st == MRC_OK)
        st = comm_create(s, rank, mrc__shm_transport(s->shm), timeout, comm);
    shared_release(s);
    return st;
}

mrc_status_t mrc_comm_init_rank(mrc_comm_t **comm, int nranks, int rank,
                                const char *job, const mrc_config_t *cfg)
{
    return init_rank(comm, nranks, rank, job, NULL, cfg);
}

static mrc_status_t env_int(const char *name, int *out)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_comm_init_env: $%s is not set (start the "
                          "program with 'mrc launch -n N -- PROGRAM')",
                          name);
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > MRC_TOPO_MAX_NODES)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_comm_init_env: $%s is '%s', not a rank count "
                          "or rank",
                          name, v);
    *out = (int)x;
    return MRC_OK;
}

mrc_status_t mrc_comm_init_env(mrc_comm_t **comm, const mrc_config_t *cfg)
{
    if (!comm)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_comm_init_env: comm is NULL");
    *comm = NULL;
    int n = 0, r = 0;
    mrc_status_t st = env_int("MRC_NRANKS", &n);
    if (st == MRC_OK)
        st = env_int("MRC_RANK", &r);
    if (st != MRC_OK)
        return st;
    const char *job = getenv("MRC_JOB");
    if (!job)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_comm_init_env: $MRC_JOB is not set (start "
                          "the program with 'mrc launch -n N -- PROGRAM')");
    const char *token;
    st = env_token(&token);
    if (st != MRC_OK)
        return st;
    return init_rank(comm, n, r, job, token, cfg);
}

mrc_status_t mrc_comm_destroy(mrc_comm_t *c)
{
    if (!c)
        return MRC_OK;
    for (int i = 0; i < PLAN_CACHE; i++)
        if (c->plans[i].program) {
            mrc__exec_release(&c->plans[i].exec);
            put_program(c->shared, c->plans[i].program);
        }
    free(c->scratch);
    shared_release(c->shared);
    free(c);
    return MRC_OK;
}

int mrc_comm_rank(const mrc_comm_t *c)
{
    return c ? c->rank : -1;
}

int mrc_comm_size(const mrc_comm_t *c)
{
    return c ? c->size : -1;
}

/* What this communicator's executor can run over its transport: the
 * memory-semantic families (direct1, direct2) need publish, get, signal
 * and wait. NULL when it can. */
static const char *memory_refused(const mrc_comm_t *c)
{
    const mrc__transport_ops_t *ops = c->transport.ops;
    if (ops->publish && ops->get && ops->signal && ops->wait)
        return NULL;
    return "needs memory semantics (expose/get), which this transport "
           "does not offer yet";
}

/* The program for a call's shape: the family forced (cfg->algo or
 * $MRC_ALGO), or the one the selector predicts fastest on this
 * transport's model. Called once per shape, under the shared lock. */
static mrc_status_t select_program(const mrc_comm_t *c,
                                   const program_key_t *key,
                                   mrc_program_t **out)
{
    const shared_t *s = c->shared;
    const char *refused = memory_refused(c);
    int is_mpi = strcmp(c->transport.ops->name, "mpi") == 0;
    /* MPI between hosts: memory semantics only within a host (hier). */
    int between = is_mpi && s->hosts > 1;
    mrc__select_input_t in = {
        .embedding = s->embedding,
        .topo = s->topo,
        .cc = {key->collective, key->count, key->dtype, key->op, key->root,
               s->chunk_bytes, MRC_ALGO_RINGS, s->hosts},
        .group = key->group,
        /* MPI ranks all on one host run over its shared-memory endpoint
         * (and have its memory semantics): modelled as shm. */
        .transport = refused == NULL && is_mpi && !between
                         ? MRC__XPORT_SHM
                         : mrc__xport_of(c->transport.ops->name),
        .memory_ok = refused == NULL && !between,
        .host_memory_ok = refused == NULL,
        .no_memory_why = between ? NULL : refused,
        .ref_ok = !c->transport.ops->reads_buffers ||
                  c->transport.ops->reads_buffers(c->transport.ctx),
        .want_times = mrc__log_level() >= MRC__LOG_INFO};
    mrc_profile_t profile;
    in.profile = profile_for(s, in.transport, &profile);
    mrc__selection_t sel;
    mrc_status_t st = mrc__select(&in, key->algo, &sel, out);
    if (st != MRC_OK)
        return st;
    if (mrc__log_level() >= MRC__LOG_INFO) {
        const mrc__candidate_t *w = &sel.cand[sel.chosen];
        mrc__log(MRC__LOG_INFO, c->rank,
                 "program %s for %s count %zu %s %s group %d: %d "
                 "instructions, predicted %.3f us on %s (%s)",
                 mrc_algo_name(sel.chosen),
                 mrc_collective_name(key->collective), key->count,
                 mrc_dtype_name(key->dtype), mrc_op_name(key->op),
                 key->group, w->code_instructions, w->time_us,
                 c->transport.ops->name, sel.reason);
    }
    return MRC_OK;
}

/* A loaded program for a call: itself when the call is the one it was
 * compiled for, else the reason it is not (it is the only program these
 * communicators have). */
static mrc_status_t loaded_program(const mrc_comm_t *c,
                                   const program_key_t *key,
                                   const mrc_program_t **out)
{
    const mrc_compile_config_t *pc = &c->shared->loaded->cfg;
    int reducing = key->collective != MRC_ALLGATHER &&
                   key->collective != MRC_BROADCAST;
    int rooted = key->collective == MRC_REDUCE ||
                 key->collective == MRC_BROADCAST;
    if (key->collective != pc->collective || key->count != pc->count ||
        key->dtype != pc->dtype || (reducing && key->op != pc->op) ||
        (rooted && key->root != pc->root))
        return mrc__error(MRC_ERR_UNSUPPORTED,
                          "this communicator runs one loaded program, %s of "
                          "%zu %s (%s, root %d); the call is %s of %zu %s "
                          "(%s, root %d)",
                          mrc_collective_name(pc->collective), pc->count,
                          mrc_dtype_name(pc->dtype), mrc_op_name(pc->op),
                          pc->root, mrc_collective_name(key->collective),
                          key->count, mrc_dtype_name(key->dtype),
                          mrc_op_name(key->op), key->root);
    *out = c->shared->loaded;
    return MRC_OK;
}

/* The program for a call, compiled once for all ranks of the group, and
 * held (refs) until the caller's plan lets go of it. */
static mrc_status_t get_program(const mrc_comm_t *c,
                                const program_key_t *key,
                                const mrc_program_t **out)
{
    shared_t *s = c->shared;
    mrc_status_t st = MRC_OK;
    if (s->loaded) /* (never freed before the communicators) */
        return loaded_program(c, key, out);
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->num_programs; i++)
        if (memcmp(&s->programs[i].key, key, sizeof *key) == 0) {
            s->programs[i].refs++;
            s->programs[i].used = ++s->clock;
            *out = s->programs[i].program;
            pthread_mutex_unlock(&s->lock);
            return MRC_OK;
        }
    /* Drop the oldest unused programs beyond the ones kept. */
    for (int unused = PROGRAM_KEEP + 1; unused > PROGRAM_KEEP;) {
        int victim = -1;
        unused = 0;
        for (int i = 0; i < s->num_programs; i++)
            if (s->programs[i].refs == 0) {
                unused++;
                if (victim < 0 || s->programs[i].used < s->programs[victim].used)
                    victim = i;
            }
        if (unused > PROGRAM_KEEP) {
            mrc_program_destroy(s->programs[victim].program);
            s->programs[victim] = s->programs[--s->num_programs];
        }
    }
    if (s->num_programs == s->cap_programs) {
        int cap = s->cap_programs ? 2 * s->cap_programs : 16;
        cached_program_t *q = realloc(s->programs, (size_t)cap * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&s->lock);
            return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
        }
        s->programs = q;
        s->cap_programs = cap;
    }
    mrc_program_t *p = NULL;
    st = select_program(c, key, &p);
    if (st == MRC_OK) {
        cached_program_t *e = &s->programs[s->num_programs++];
        e->key = *key;
        e->program = p;
        e->refs = 1;
        e->used = ++s->clock;
        *out = p;
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

static void put_program(shared_t *s, const mrc_program_t *p)
{
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->num_programs; i++)
        if (s->programs[i].program == p)
            s->programs[i].refs--;
    pthread_mutex_unlock(&s->lock);
}

/* The plan of this rank for a program; takes over the caller's reference
 * on the program (or drops it when the plan was cached already). */
static mrc_status_t get_plan(mrc_comm_t *c, const mrc_program_t *p,
                             int in_place, mrc__exec_t **out)
{
    int victim = 0;
    for (int i = 0; i < PLAN_CACHE; i++) {
        cached_plan_t *cp = &c->plans[i];
        if (cp->program == p && cp->in_place == in_place) {
            cp->used = ++c->clock;
            *out = &cp->exec;
            put_program(c->shared, p);
            return MRC_OK;
        }
        if (cp->used < c->plans[victim].used)
            victim = i;
    }
    cached_plan_t *cp = &c->plans[victim];
    if (cp->program) {
        mrc__exec_release(&cp->exec);
        put_program(c->shared, cp->program);
    }
    cp->program = NULL;
    cp->used = 0;
    /* Over threads every rank's plan is in this process. */
    int here = c->shared->hub ? c->shared->nranks : 1;
    mrc_status_t st = mrc__exec_prepare(&cp->exec, p, c->node, in_place,
                                        here);
    if (st != MRC_OK) {
        put_program(c->shared, p);
        return st;
    }
    cp->program = p;
    cp->in_place = in_place;
    cp->used = ++c->clock;
    *out = &cp->exec;
    return MRC_OK;
}

/* The plan of the last call, when this call has its shape: MRC_OK with
 * the program, its plan and the scratch it needs, else MRC_INPROGRESS
 * (look it up). */
static mrc_status_t last_plan(mrc_comm_t *c, const program_key_t *key,
                              int in_place, const mrc_program_t **p,
                              mrc__exec_t **x, size_t *xbytes)
{
    cached_plan_t *cp = c->last_plan;
    if (!cp || c->last_in_place != in_place ||
        memcmp(&c->last_key, key, sizeof *key) != 0)
        return MRC_INPROGRESS;
    cp->used = ++c->clock;
    *p = cp->program;
    *x = &cp->exec;
    *xbytes = c->last_xbytes;
    return MRC_OK;
}

/* The program and plan for a call of this shape (compiled and expanded
 * on first use, then cached), and the bytes of scratch they need;
 * remembered as the last call's. */
static mrc_status_t find_plan(const char *fn, mrc_comm_t *c,
                              const program_key_t *key, int in_place,
                              const mrc_program_t **p, mrc__exec_t **x,
                              size_t *xbytes)
{
    c->last_plan = NULL; /* get_plan may take its slot */
    mrc_status_t st = get_program(c, key, p);
    if (st == MRC_OK)
        st = get_plan(c, *p, in_place, x);
    if (st != MRC_OK) {
        mrc__error_prefix("%s (rank %d)", fn, c->rank);
        return st;
    }
    uint64_t se, re, xe;
    mrc__buffer_elems(*p, c->node, &se, &re, &xe);
    if (mrc__mul_size((size_t)xe, mrc_dtype_size(key->dtype), xbytes) != 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: %llu elements of scratch overflow a size", fn,
                          (unsigned long long)xe);
    for (int i = 0; i < PLAN_CACHE; i++)
        if (&c->plans[i].exec == *x)
            c->last_plan = &c->plans[i];
    c->last_key = *key;
    c->last_in_place = in_place;
    c->last_xbytes = *xbytes;
    return MRC_OK;
}

mrc_status_t mrc__comm_predict(const mrc_comm_t *c,
                               const mrc_sim_config_t *cfg,
                               mrc_sim_result_t **out)
{
    *out = NULL;
    if (!c || !c->last_plan)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "no call has run on this communicator yet: "
                          "nothing to predict");
    /* (the plan holds a reference on its program) */
    return mrc__select_sim(c->last_plan->program, c->shared->topo, cfg, out);
}

static int overlap(const void *a, size_t an, const void *b, size_t bn)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return an && bn && x < y + bn && y < x + an;
}

static mrc_status_t avg_widened(const char *fn, mrc_collective_t coll,
                                const void *sendbuf, void *recvbuf,
                                size_t count, mrc_dtype_t dtype, int root,
                                int need_recv, mrc_comm_t *c);

/* MRC_DEBUG=TRACE: every call names the program it runs. */
static void log_call(const mrc_comm_t *c, const char *fn,
                     const mrc_program_t *p, size_t count, mrc_dtype_t dtype,
                     mrc_op_t op, int in_place)
{
    if (mrc__log_level() < MRC__LOG_TRACE)
        return;
    mrc_program_info_t info;
    if (mrc_program_info(p, &info) != MRC_OK)
        return;
    mrc__log(MRC__LOG_TRACE, c->rank,
             "%s call %llu count %zu %s %s%s: program %s (%s, %d "
             "instructions)",
             fn, (unsigned long long)c->seq, count, mrc_dtype_name(dtype),
             mrc_op_name(op), in_place ? " in place" : "",
             mrc_algo_name(info.config.algo),
             mrc_collective_name(info.config.collective),
             info.code_instructions);
}

/* Runs plan x (of program p) for a call that passed the checks. */
static mrc_status_t run_plan(const char *fn, const mrc__call_t *as,
                             mrc_comm_t *c, const mrc_program_t *p,
                             mrc__exec_t *x, const void *sendbuf,
                             void *recvbuf, size_t count, mrc_dtype_t dtype,
                             mrc_op_t op, int in_place)
{
    log_call(c, fn, p, count, dtype, op, in_place);
    mrc_status_t st = mrc__exec_run(x, &c->transport, as, c->seq++, sendbuf,
                                    recvbuf, c->scratch, c->timeout_s);
    /* Whatever failed once the run began (a peer's data may be half
     * taken, its sends unanswered): the ranks are out of step. */
    if (st != MRC_OK) {
        c->poisoned = st;
        mrc__error_prefix("%s (rank %d)", fn, c->rank);
    }
    return st;
}

/* Whether a call has the arguments of the last one run (c->memo). */
static int same_call(const mrc_comm_t *c, mrc_collective_t coll,
                     const void *sendbuf, const void *recvbuf, size_t count,
                     mrc_dtype_t dtype, mrc_op_t op, int root)
{
    return c->memo.valid && c->memo.sendbuf == sendbuf &&
           c->memo.recvbuf == recvbuf && c->memo.count == count &&
           c->memo.coll == coll && c->memo.dtype == dtype &&
           c->memo.op == op && c->memo.root == root;
}

/* The checks and the run shared by every collective. The ranks compare
 * `as` (NULL: this call) before any touches a peer's buffers. */
static mrc_status_t collective_as(const char *fn, const mrc__call_t *as,
                                  mrc_collective_t coll, const void *sendbuf,
                                  void *recvbuf, size_t count,
                                  mrc_dtype_t dtype, mrc_op_t op, int root,
                                  mrc_comm_t *c)
{
    if (!c)
        return mrc__error(MRC_ERR_INVALID_ARG, "%s: comm is NULL", fn);
    if (c->poisoned != MRC_OK)
        return mrc__error(c->poisoned,
                          "%s (rank %d): an earlier call failed (%s); the "
                          "communicator cannot be used",
                          fn, c->rank, mrc_status_name(c->poisoned));
    if (same_call(c, coll, sendbuf, recvbuf, count, dtype, op, root))
        return run_plan(fn, as, c, c->last_plan->program,
                        &c->last_plan->exec, sendbuf, recvbuf, count, dtype,
                        op, c->memo.in_place);
    c->memo.valid = 0;
    size_t esize = mrc_dtype_size(dtype);
    if (esize == 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: dtype %d is not a data type (rank %d)", fn,
                          (int)dtype, c->rank);
    if ((unsigned)op >= MRC_NUM_OPS)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: op %d is not an operator (rank %d)", fn,
                          (int)op, c->rank);
    int rooted = coll == MRC_REDUCE || coll == MRC_BROADCAST;
    if (rooted && (root < 0 || root >= c->size))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: root %d out of range (the group has %d ranks; "
                          "rank %d)",
                          fn, root, c->size, c->rank);
    if (count == 0)
        return MRC_OK;
    if (count > SIZE_MAX / esize / (size_t)c->size)
        return mrc__error(MRC_ERR_INVALID_ARG, "%s: count %zu is too large",
                          fn, count);
    /* Buffer sizes in bytes, as the C API defines them. */
    size_t n = (size_t)c->size, sbytes = count * esize, rbytes = sbytes;
    if (coll == MRC_REDUCE_SCATTER)
        sbytes *= n;
    if (coll == MRC_ALLGATHER)
        rbytes *= n;
    int need_send = !(coll == MRC_BROADCAST && c->rank != root);
    int need_recv = !(coll == MRC_REDUCE && c->rank != root);
    if (need_send && !sendbuf)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: sendbuf is NULL with count %zu (rank %d)", fn,
                          count, c->rank);
    if (need_recv && !recvbuf)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: recvbuf is NULL with count %zu (rank %d)", fn,
                          count, c->rank);
    int in_place = 0;
    if (need_send && need_recv) {
        const char *s = sendbuf;
        char *r = recvbuf;
        if (coll == MRC_REDUCE_SCATTER)
            in_place = r == s + (size_t)c->rank * count * esize;
        else if (coll == MRC_ALLGATHER)
            in_place = s == r + (size_t)c->rank * count * esize;
        else
            in_place = s == r;
        if (!in_place && overlap(sendbuf, sbytes, recvbuf, rbytes))
            return mrc__error(MRC_ERR_INVALID_ARG,
                              "%s: sendbuf and recvbuf overlap but are not "
                              "the in-place form (rank %d)",
                              fn, c->rank);
    }
    /* avg on integers sums wider words so that no partial sum wraps. */
    if (op == MRC_AVG && (coll == MRC_ALLREDUCE ||
                          coll == MRC_REDUCE_SCATTER || coll == MRC_REDUCE) &&
        mrc__avg_words(dtype) != 0)
        return avg_widened(fn, coll, sendbuf, recvbuf, count, dtype, root,
                           need_recv, c);
    program_key_t key;
    memset(&key, 0, sizeof key); /* compared with memcmp, padding too */
    key.collective = coll;
    key.count = count;
    key.dtype = dtype;
    key.op = op;
    key.root = rooted ? root : 0;
    key.group = c->shared->coupled ? -1 : c->group;
    key.algo = c->shared->algo;
    if (coll == MRC_ALLGATHER || coll == MRC_BROADCAST)
        key.op = MRC_SUM;
    const mrc_program_t *p = NULL;
    mrc__exec_t *x = NULL;
    size_t xbytes = 0;
    mrc_status_t st = last_plan(c, &key, in_place, &p, &x, &xbytes);
    if (st == MRC_INPROGRESS)
        st = find_plan(fn, c, &key, in_place, &p, &x, &xbytes);
    if (st != MRC_OK)
        return st;
    if (xbytes > c->scratch_bytes) {
        int here = c->shared->hub ? c->shared->nranks : 1;
        st = mrc__check_memory(mrc__sat_mul_add(xbytes, (uint64_t)here, 0),
                               here > 1 ? "scratch (every rank of this "
                                          "process)"
                                        : "scratch");
        if (st != MRC_OK) {
            mrc__error_prefix("%s (rank %d)", fn, c->rank);
            return st;
        }
        void *q = realloc(c->scratch, xbytes);
        if (!q)
            return mrc__error(MRC_ERR_NO_MEMORY,
                              "%s: out of memory for %zu bytes of scratch",
                              fn, xbytes);
        c->scratch = q;
        c->scratch_bytes = xbytes;
    }
    if (c->last_plan && &c->last_plan->exec == x) {
        c->memo.valid = 1;
        c->memo.in_place = in_place;
        c->memo.coll = coll;
        c->memo.dtype = dtype;
        c->memo.op = op;
        c->memo.root = root;
        c->memo.sendbuf = sendbuf;
        c->memo.recvbuf = recvbuf;
        c->memo.count = count;
    }
    return run_plan(fn, as, c, p, x, sendbuf, recvbuf, count, dtype, op,
                    in_place);
}

/* avg on integers (see mrc__avg_words): this rank's input widened to
 * 64-bit words, summed by the same collective, divided and narrowed into
 * recvbuf (which may be sendbuf: the input is read before anything is
 * written). The wide buffers live for the call only: integer avg is rare
 * and its words are 8 or 16 bytes a value however small the type. */
static mrc_status_t avg_widened(const char *fn, mrc_collective_t coll,
                                const void *sendbuf, void *recvbuf,
                                size_t count, mrc_dtype_t dtype, int root,
                                int need_recv, mrc_comm_t *c)
{
    int words = mrc__avg_words(dtype);
    if (words < 0)
        return mrc__error(MRC_ERR_UNSUPPORTED,
                          "%s: avg of %s needs 128-bit integers to be exact "
                          "and this build has none (rank %d); sum and divide "
                          "instead",
                          fn, mrc_dtype_name(dtype), c->rank);
    size_t in = coll == MRC_REDUCE_SCATTER ? count * (size_t)c->size : count;
    size_t per = (size_t)words * sizeof(uint64_t);
    if (in > SIZE_MAX / per)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: count %zu is too large for avg of %s (rank "
                          "%d)",
                          fn, count, mrc_dtype_name(dtype), c->rank);
    mrc_status_t st = mrc__check_memory(
        mrc__sat_mul_add(in + (need_recv ? count : 0), per, 0),
        "avg words");
    if (st != MRC_OK)
        return st;
    void *wide_send = malloc(in * per);
    void *wide_recv = need_recv ? malloc(count * per) : NULL;
    if (!wide_send || (need_recv && !wide_recv)) {
        st = mrc__error(MRC_ERR_NO_MEMORY,
                        "%s: out of memory for %zu bytes of avg words (rank "
                        "%d)",
                        fn, (in + count) * per, c->rank);
        goto done;
    }
    mrc__avg_widen(wide_send, sendbuf, in, dtype);
    /* The peers compare the call asked for, not the sum it runs as (which
     * avg of int8 and of int32, or a sum of int64, would share). */
    mrc__call_t as = mrc__call_make(coll, count, dtype, MRC_AVG,
                                    coll == MRC_REDUCE ? root : 0);
    st = collective_as(fn, &as, coll, wide_send, wide_recv,
                       count * (size_t)words, mrc__avg_wide_dtype(dtype),
                       MRC_SUM, root, c);
    if (st == MRC_OK && need_recv)
        mrc__avg_narrow(recvbuf, wide_recv, count, dtype, c->size);
done:
    free(wide_send);
    free(wide_recv);
    return st;
}

static mrc_status_t collective(const char *fn, mrc_collective_t coll,
                               const void *sendbuf, void *recvbuf,
                               size_t count, mrc_dtype_t dtype, mrc_op_t op,
                               int root, mrc_comm_t *c)
{
    return collective_as(fn, NULL, coll, sendbuf, recvbuf, count, dtype, op,
                         root, c);
}

mrc_status_t mrc_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                           mrc_dtype_t dtype, mrc_op_t op, mrc_comm_t *comm)
{
    return collective("mrc_allreduce", MRC_ALLREDUCE, sendbuf, recvbuf,
                      count, dtype, op, 0, comm);
}

mrc_status_t mrc_reduce_scatter(const void *sendbuf, void *recvbuf,
                                size_t recvcount, mrc_dtype_t dtype,
                                mrc_op_t op, mrc_comm_t *comm)
{
    return collective("mrc_reduce_scatter", MRC_REDUCE_SCATTER, sendbuf,
                      recvbuf, recvcount, dtype, op, 0, comm);
}

mrc_status_t mrc_allgather(const void *sendbuf, void *recvbuf,
                           size_t sendcount, mrc_dtype_t dtype,
                           mrc_comm_t *comm)
{
    return collective("mrc_allgather", MRC_ALLGATHER, sendbuf, recvbuf,
                      sendcount, dtype, MRC_SUM, 0, comm);
}

mrc_status_t mrc_reduce(const void *sendbuf, void *recvbuf, size_t count,
                        mrc_dtype_t dtype, mrc_op_t op, int root,
                        mrc_comm_t *comm)
{
    return collective("mrc_reduce", MRC_REDUCE, sendbuf, recvbuf, count,
                      dtype, op, root, comm);
}

mrc_status_t mrc_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                           mrc_dtype_t dtype, int root, mrc_comm_t *comm)
{
    return collective("mrc_broadcast", MRC_BROADCAST, sendbuf, recvbuf,
                      count, dtype, MRC_SUM, root, comm);
}
