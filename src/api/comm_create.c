/*
 * Communicators made and freed. mrc_comm_init_all builds the topology,
 * the rings and the threads transport's hub once, shared by every rank;
 * mrc_comm_init_rank / _env join a job of processes over shared memory;
 * another transport's set-up (MPI) attaches ranks to a shared part.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/comm_state.h"
#include "program/plan.h"
#include "sim/select.h"
#include "transport/transport.h"

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
    free(s->choices);
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

/* $name, a number above 0 (seconds), or dflt when it is unset or empty;
 * one that is not a number above 0 is an error naming it, not the
 * default: a user who sets it expects it to hold. */
static mrc_status_t env_double(const char *name, double dflt, double *out)
{
    const char *v = getenv(name);
    *out = dflt;
    if (!v || !*v)
        return MRC_OK;
    if (mrc__parse_double(v, out) != 0 || !(*out > 0))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "$%s '%s' is not a number of seconds above 0", name,
                          v);
    return MRC_OK;
}

/* The same for a size in bytes (K, M, G suffixes). */
static mrc_status_t env_size(const char *name, size_t dflt, size_t *out)
{
    const char *v = getenv(name);
    uint64_t b = dflt;
    if (v && *v && (mrc__parse_size(v, &b) != 0 || b == 0 || b > SIZE_MAX))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "$%s '%s' is not a size in bytes above 0 (e.g. 1M, "
                          "8388608)",
                          name, v);
    *out = (size_t)b;
    return MRC_OK;
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
        mrc__error_prefix("%s", cfg->algo ? "mrc_config_t.algo" : "$MRC_ALGO");
    return st;
}

/* When a rank's reduce or broadcast returns: cfg->completion, else
 * $MRC_COMPLETION, else group. A name that is none is an error. */
static mrc_status_t completion_config(const mrc_config_t *cfg,
                                      mrc_completion_t *out)
{
    *out = MRC_COMPLETION_GROUP;
    const char *v =
        cfg->completion ? cfg->completion : getenv("MRC_COMPLETION");
    if (!v || (!*v && !cfg->completion))
        return MRC_OK;
    mrc_status_t st = mrc_completion_parse(v, out);
    if (st != MRC_OK)
        mrc__error_prefix("%s", cfg->completion ? "mrc_config_t.completion"
                                                : "$MRC_COMPLETION");
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

/* Where a rank's writes go around the caches (mrc_config_t.stream_bytes):
 * the caller's size, else $MRC_STREAM_BYTES (a size that cannot be read
 * is an error, not the default: a user who sets it is timing it), else
 * the profile's (calibrate's), else the built-in 8 MiB. */
static mrc_status_t stream_config(const mrc_config_t *cfg,
                                  const mrc_profile_t *prof, uint64_t *out)
{
    size_t from = mrc_profile_stream_bytes(prof);
    if (cfg && cfg->stream_bytes)
        from = cfg->stream_bytes;
    mrc_status_t st = cfg && cfg->stream_bytes
                          ? MRC_OK
                          : env_size("MRC_STREAM_BYTES", from, &from);
    *out = from;
    return st;
}

/* A profile measured on another transport than the communicator's
 * (`name`, or the one it runs as, `also`: MPI ranks of one host run the
 * shared-memory endpoint, and a shm profile describes them). */
static mrc_status_t profile_refused(const shared_t *s, const char *name,
                                    const char *also)
{
    if (!s->profile || strcmp(s->profile->transport, name) == 0 ||
        (also && strcmp(s->profile->transport, also) == 0))
        return MRC_OK;
    return mrc__error(MRC_ERR_INVALID_ARG,
                      "$MRC_PROFILE=%s was measured on the %s transport, "
                      "and this communicator runs over %s (measure it "
                      "with 'mrc calibrate --transport %s')",
                      getenv("MRC_PROFILE"), s->profile->transport, name,
                      also ? also : name);
}

/* Replaces *topo by a copy without the failed links. */
static mrc_status_t without_failed_links(mrc_topo_t **topo, const char *failed)
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
    s->chunk_bytes = cfg->chunk_bytes;
    *timeout = cfg->timeout_s;
    mrc_status_t st = cfg->chunk_bytes
                          ? MRC_OK
                          : env_size("MRC_CHUNK_BYTES", MRC_DEFAULT_CHUNK_BYTES,
                                     &s->chunk_bytes);
    if (st == MRC_OK && !(cfg->timeout_s > 0))
        st = env_double("MRC_TIMEOUT", 60, timeout);
    if (st == MRC_OK)
        st = mrc__check_memory_env();
    if (st == MRC_OK)
        st = algo_config(cfg, &s->algo);
    if (st == MRC_OK)
        st = completion_config(cfg, &s->completion);
    s->shared_buffers = cfg->shared_buffers != 0;
    if (st == MRC_OK)
        st = profile_config(s);
    if (st == MRC_OK)
        st = stream_config(cfg, s->profile, &s->stream_bytes);
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
        return mrc__error(
            MRC_ERR_INVALID_ARG, "%s '%s' is not a count of hosts",
            cfg->hosts < 0 ? "mrc_config_t.hosts" : "$MRC_HOSTS", hv);
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

int mrc__comm_shared_sends_by_ref(const shared_t *s)
{
    /* Without a profile: read, as Open MPI's single copy through the
     * kernel does; a host whose copy into the area measures faster says
     * so in its profile (docs/performance.md, "A send buffer read where
     * it is, when it is the last call's"). */
    return s && (!s->profile || s->profile->send_by_ref > 0);
}

void mrc__comm_set_send_by_ref(mrc_comm_t *c, int on)
{
    if (c && c->shared->shm)
        mrc__shm_set_send_by_ref(c->shared->shm, on);
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
    mrc__sb_printf(&sb, "rings %s: %d", mrc_embed_strategy(s->embedding), nr);
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
    mrc_status_t st = profile_refused(s, t.ops->name, t.ops->profiled_as);
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
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc__comm_init_program: NULL");
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
    s->completion = p->cfg.completion;
    s->hosts = mrc__program_hosts(p);
    s->topo = topo;
    s->loaded = p;
    double timeout = timeout_s;
    if (!(timeout_s > 0))
        st = env_double("MRC_TIMEOUT", 60, &timeout);
    /* The profile for its threshold (and, as for any communicator, one
     * of another transport is refused). */
    if (st == MRC_OK)
        st = profile_config(s);
    if (st == MRC_OK)
        st = stream_config(NULL, s->profile, &s->stream_bytes);
    if (st == MRC_OK)
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
    st = profile_refused(s, "shm", NULL);
    if (st == MRC_OK)
        st = mrc__shm_attach(nranks, rank, job, token, timeout, &s->shm);
    if (st == MRC_OK)
        mrc__shm_set_send_by_ref(s->shm, mrc__comm_shared_sends_by_ref(s));
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
            mrc__comm_put_program(c->shared, c->plans[i].program);
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
