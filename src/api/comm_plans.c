/*
 * The program and plan for a call's shape: the program chosen (the
 * family asked for, or the selector's with the profile) and compiled
 * once for all ranks, kept in the shared part; each rank's plan of it
 * expanded once and kept per communicator; the last call's remembered.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/comm_state.h"
#include "program/plan.h"
#include "sim/select.h"

/* `from` with the threshold the communicator's runs take (its config's,
 * the environment's), and its endpoint's way with send buffers, which
 * may not be the profile's: what its model times is what it runs. */
static const mrc_profile_t *as_run(const shared_t *s, const mrc_profile_t *from,
                                   mrc_profile_t *copy)
{
    *copy = *from;
    copy->stream_bytes = (double)s->stream_bytes;
    copy->send_by_ref = s->shm ? mrc__shm_sends_by_ref(s->shm)
                               : mrc__comm_shared_sends_by_ref(s);
    return copy;
}

/* The profile for the selector's model x: the communicator's own, which
 * was measured on its transport, under the model's name (MPI ranks of
 * one host are modelled as shm), as run. */
static const mrc_profile_t *
profile_for(const shared_t *s, mrc__sim_transport_t x, mrc_profile_t *copy)
{
    if (!s->profile)
        return NULL;
    as_run(s, s->profile, copy);
    snprintf(copy->transport, sizeof copy->transport, "%s",
             mrc__sim_transport_name(x));
    return copy;
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

/* The selector's input for a call's shape on this communicator. */
static mrc__select_input_t select_input(const mrc_comm_t *c,
                                        const program_key_t *key,
                                        mrc_profile_t *profile)
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
               s->chunk_bytes, MRC_ALGO_RINGS, s->hosts, s->completion},
        .group = key->group,
        /* MPI ranks all on one host run over its shared-memory endpoint
         * (and have its memory semantics): modelled as shm. */
        .transport = refused == NULL && is_mpi && !between
                         ? MRC__SIM_TRANSPORT_SHM
                         : mrc__sim_transport_of(c->transport.ops->name),
        .memory_ok = refused == NULL && !between,
        .host_memory_ok = refused == NULL,
        .no_memory_why = between ? NULL : refused,
        .ref_ok = !c->transport.ops->reads_buffers ||
                  c->transport.ops->reads_buffers(c->transport.ctx),
        .want_times = mrc__log_level() >= MRC__LOG_INFO,
        .peers_mapped = s->shared_buffers};
    in.profile = profile_for(s, in.transport, profile);
    return in;
}

/* The count at which the selector chooses for a call of `count`
 * elements of `elem` bytes: vectors below 64 bytes as they are, larger
 * ones by class, four to an octave (2^j, 1.25, 1.5 and 1.75 x 2^j bytes,
 * each class timed at its smallest vector): a vector of a power of two
 * bytes is its class's own, so the classes change no choice the
 * benchmarks see, and a program whose every call has a new count
 * selects once per class, not at every call. */
static size_t class_count(size_t count, size_t elem)
{
    uint64_t bytes = (uint64_t)count * elem;
    if (elem == 0 || bytes < 64)
        return count;
    int j = 63 - __builtin_clzll(bytes);
    uint64_t quarter = (uint64_t)1 << (j - 2);
    uint64_t lo = bytes / quarter * quarter; /* 2^j + i x 2^(j-2) */
    return (size_t)((lo + elem - 1) / elem);
}

/* The family chosen for key's class, or MRC_ALGO_AUTO when none is
 * remembered. */
static mrc_algo_t remembered(shared_t *s, const program_key_t *cls)
{
    for (int i = 0; i < s->num_choices; i++)
        if (memcmp(&s->choices[i].key, cls, sizeof *cls) == 0) {
            s->choices[i].used = ++s->clock;
            return s->choices[i].chosen;
        }
    return MRC_ALGO_AUTO;
}

static void remember(shared_t *s, const program_key_t *cls, mrc_algo_t a)
{
    if (!s->choices && !(s->choices = calloc(CHOICE_KEEP, sizeof *s->choices)))
        return; /* no memory: the next call of the class selects again */
    int at = s->num_choices;
    if (at == CHOICE_KEEP) { /* the least recently used */
        for (int i = at = 0; i < CHOICE_KEEP; i++)
            if (s->choices[i].used < s->choices[at].used)
                at = i;
    } else {
        s->num_choices++;
    }
    s->choices[at] = (cached_choice_t){*cls, a, ++s->clock};
}

/* MRC_DEBUG=INFO: the program chosen for a shape, and why. */
static void log_choice(const mrc_comm_t *c, const program_key_t *key,
                       const mrc__selection_t *sel)
{
    if (mrc__log_level() < MRC__LOG_INFO)
        return;
    const mrc__candidate_t *w = &sel->cand[sel->chosen];
    mrc__log(MRC__LOG_INFO, c->rank,
             "program %s for %s count %zu %s %s group %d: %d "
             "instructions, predicted %.3f us on %s (%s)",
             mrc_algo_name(sel->chosen), mrc_collective_name(key->collective),
             key->count, mrc_dtype_name(key->dtype), mrc_op_name(key->op),
             key->group, w->code_instructions, w->time_us,
             c->transport.ops->name, sel->reason);
}

/* The program for a call's shape: the family forced (cfg->algo or
 * $MRC_ALGO), or the one the selector predicts fastest on this
 * transport's model for the shape's class (chosen once per class, then
 * only that family compiled for each shape of it). Called once per
 * shape, under the shared lock. */
static mrc_status_t select_program(const mrc_comm_t *c,
                                   const program_key_t *key,
                                   mrc_program_t **out)
{
    shared_t *s = c->shared;
    mrc_profile_t profile;
    mrc__select_input_t in = select_input(c, key, &profile);
    program_key_t cls = *key;
    cls.count = class_count(key->count, mrc_dtype_size(key->dtype));
    mrc_algo_t force = key->algo;
    mrc__selection_t sel;
    mrc_status_t st;
    if (force == MRC_ALGO_AUTO &&
        (force = remembered(s, &cls)) == MRC_ALGO_AUTO) {
        /* The class's choice, at its own count. */
        mrc__select_input_t at = in;
        at.cc.count = cls.count;
        mrc_program_t *p = NULL;
        st = mrc__select(&at, MRC_ALGO_AUTO, &sel, &p);
        if (st == MRC_ERR_NO_MEMORY ||
            (st != MRC_OK && cls.count == key->count))
            return st;
        if (st == MRC_OK)
            remember(s, &cls, sel.chosen);
        if (st == MRC_OK && cls.count == key->count) {
            *out = p;
            log_choice(c, key, &sel);
            return MRC_OK;
        }
        mrc_program_destroy(p);
        /* Nothing for the class's vector: this shape's own choice. */
        force = st == MRC_OK ? sel.chosen : MRC_ALGO_AUTO;
    }
    st = mrc__select(&in, force, &sel, out);
    /* The class's family cannot take this count (direct1 past its
     * window): every family for this shape itself. */
    if (st == MRC_ERR_UNSUPPORTED && key->algo == MRC_ALGO_AUTO)
        st = mrc__select(&in, MRC_ALGO_AUTO, &sel, out);
    if (st != MRC_OK)
        return st;
    if (key->algo == MRC_ALGO_AUTO && sel.chosen == force)
        snprintf(sel.reason, sizeof sel.reason,
                 "the choice for its class, count %zu", cls.count);
    log_choice(c, key, &sel);
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
    int reducing =
        key->collective != MRC_ALLGATHER && key->collective != MRC_BROADCAST;
    int rooted =
        key->collective == MRC_REDUCE || key->collective == MRC_BROADCAST;
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
static mrc_status_t get_program(const mrc_comm_t *c, const program_key_t *key,
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
                if (victim < 0 ||
                    s->programs[i].used < s->programs[victim].used)
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

void mrc__comm_put_program(shared_t *s, const mrc_program_t *p)
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
            mrc__comm_put_program(c->shared, p);
            return MRC_OK;
        }
        if (cp->used < c->plans[victim].used)
            victim = i;
    }
    cached_plan_t *cp = &c->plans[victim];
    if (cp->program) {
        mrc__exec_release(&cp->exec);
        mrc__comm_put_program(c->shared, cp->program);
    }
    cp->program = NULL;
    cp->used = 0;
    cp->keyed = 0;
    /* Over threads every rank's plan is in this process. */
    int here = c->shared->hub ? c->shared->nranks : 1;
    mrc_status_t st = mrc__exec_prepare(&cp->exec, p, c->node, in_place, here,
                                        c->shared->stream_bytes);
    if (st != MRC_OK) {
        mrc__comm_put_program(c->shared, p);
        return st;
    }
    cp->program = p;
    cp->in_place = in_place;
    cp->used = ++c->clock;
    *out = &cp->exec;
    if (cp->exec.nontemporal && mrc__log_level() >= MRC__LOG_INFO)
        mrc__log(MRC__LOG_INFO, c->rank,
                 "%s count %llu %s: writes around the caches (its receive "
                 "buffer is at least %llu bytes)",
                 mrc_collective_name(p->cfg.collective),
                 (unsigned long long)p->cfg.count, mrc_dtype_name(p->cfg.dtype),
                 (unsigned long long)c->shared->stream_bytes);
    return MRC_OK;
}

/* Whether plan cp ran a call of this shape. */
static int plan_fits(const cached_plan_t *cp, const program_key_t *key,
                     int in_place)
{
    return cp->program && cp->keyed && cp->in_place == in_place &&
           memcmp(&cp->key, key, sizeof *key) == 0;
}

/* The plan of the last call, or of an earlier one, when this call has
 * its shape: MRC_OK with the program, its plan and the scratch it needs,
 * else MRC_INPROGRESS (look it up). */
mrc_status_t mrc__comm_last_plan(mrc_comm_t *c, const program_key_t *key,
                                 int in_place, const mrc_program_t **p,
                                 mrc__exec_t **x, size_t *xbytes)
{
    cached_plan_t *cp = c->last_plan;
    if (!cp || !plan_fits(cp, key, in_place)) {
        cp = NULL;
        for (int i = 0; i < PLAN_CACHE && !cp; i++)
            if (plan_fits(&c->plans[i], key, in_place))
                cp = &c->plans[i];
        if (!cp)
            return MRC_INPROGRESS;
        c->last_plan = cp;
    }
    cp->used = ++c->clock;
    *p = cp->program;
    *x = &cp->exec;
    *xbytes = cp->xbytes;
    return MRC_OK;
}

/* The program and plan for a call of this shape (compiled and expanded
 * on first use, then cached), and the bytes of scratch they need;
 * remembered as the last call's. */
mrc_status_t mrc__comm_find_plan(const char *fn, mrc_comm_t *c,
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
        if (&c->plans[i].exec == *x) {
            /* (no plan had this shape: mrc__comm_last_plan looked) */
            cached_plan_t *cp = &c->plans[i];
            cp->key = *key;
            cp->keyed = 1;
            cp->xbytes = *xbytes;
            c->last_plan = cp;
        }
    return MRC_OK;
}

mrc_status_t mrc__comm_predict(const mrc_comm_t *c, const mrc_sim_config_t *cfg,
                               mrc_sim_result_t **out)
{
    *out = NULL;
    if (!c || !c->last_plan)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "no call has run on this communicator yet: "
                          "nothing to predict");
    /* A call on buffers its peers map (mrc_mem_alloc) reads them with
     * plain loads: no kernel copy, no separate reduction pass. Told by
     * this rank's buffers (every rank allocates alike, as mrc-bench's and
     * torch's do). */
    mrc_sim_config_t mine = *cfg;
    /* Ranks of one host (all but MPI's between hosts, or hier's pretend
     * hosts) share its memory, however many ran the calibration. */
    mrc_profile_t one_host;
    if (cfg->profile && c->shared->hosts <= 1)
        mine.profile = mrc__profile_one_host(
            cfg->profile, c->last_plan->program->num_nodes, &one_host);
    mrc_profile_t ran;
    if (mine.profile)
        mine.profile = as_run(c->shared, mine.profile, &ran);
    if (cfg->profile && c->memo.valid && c->memo.sendbuf &&
        mrc__shm_region_holds(c->memo.sendbuf, 1) &&
        (!c->memo.recvbuf || c->memo.recvbuf == c->memo.sendbuf ||
         mrc__shm_region_holds(c->memo.recvbuf, 1)))
        mine.peers_mapped = 1;
    /* (the plan holds a reference on its program) */
    return mrc__select_sim(c->last_plan->program, c->shared->topo, &mine, out);
}
