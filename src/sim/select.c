/*
 * The selector (select.h): every family compiled for the call, each timed
 * by the model of its transport, the fastest chosen.
 *
 * Accepts: any embedding, group and call; a family that does not compile
 * (MRC_ERR_UNSUPPORTED from the compiler: it does not apply to the
 * collective or the group, or is not built yet), that the transport
 * cannot run, or that the model cannot time is skipped with its reason.
 * Returns: the family, the reason, every candidate's figures.
 * Each candidate is built without the checker and timed; only the one
 * chosen is proven (the checker's abstract run is most of a compile, and
 * a communicator selects at the first call of every shape: with five
 * families checked, an MPI program whose every allreduce had a new count
 * took 41 us a call under the drop-in library, against Open MPI's 2). A
 * chosen program that the checker refuses (a compiler fault) is dropped
 * with its reason, and the next fastest is proven in its place.
 * With a host profile (mrc calibrate) most calls on one host are timed
 * by the simulator's node model, so the cut-offs between families are
 * the host's, not constants (SIM_SELECT_NODES says which).
 * Limits: without a profile the CPU model is a few constants fitted on
 * one machine (docs/families.md), not a calibration; on the links model
 * a family is only as well timed as the simulator times its
 * instructions. The CPU transports' model is in cpu_model.c.
 */
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "mrc/embed.h"
#include "mrc/sim.h"
#include "program/plan.h"
#include "sim/select.h"

static const char *const transport_names[MRC__SIM_NUM_TRANSPORTS] = {
    "links", "threads", "shm", "mpi"};

const char *mrc__sim_transport_name(mrc__sim_transport_t x)
{
    return (unsigned)x < MRC__SIM_NUM_TRANSPORTS ? transport_names[x] : "?";
}

mrc_status_t mrc__sim_transport_parse(const char *name,
                                      mrc__sim_transport_t *out)
{
    for (int i = 0; name && i < MRC__SIM_NUM_TRANSPORTS; i++)
        if (strcmp(name, transport_names[i]) == 0) {
            *out = (mrc__sim_transport_t)i;
            return MRC_OK;
        }
    return mrc__error(MRC_ERR_INVALID_ARG,
                      "unknown transport '%s' (links, threads, shm or mpi)",
                      name ? name : "(null)");
}

mrc__sim_transport_t mrc__sim_transport_of(const char *transport_name)
{
    mrc__sim_transport_t x = MRC__SIM_TRANSPORT_THREADS;
    if (transport_name &&
        mrc__sim_transport_parse(transport_name, &x) != MRC_OK)
        x = MRC__SIM_TRANSPORT_THREADS;
    return x;
}

double mrc__busbw_factor(mrc_collective_t c, int n)
{
    if (n < 1)
        return 1;
    switch (c) {
    case MRC_ALLREDUCE: return 2.0 * (n - 1) / n;
    case MRC_REDUCE_SCATTER:
    case MRC_ALLGATHER: return (double)(n - 1) / n;
    default: return 1;
    }
}

/* A call's data per node: the vector (allreduce, reduce, broadcast) or
 * every block (reduce-scatter, allgather), as the simulator reports it. */
static double call_bytes(const mrc_program_t *p)
{
    int n = p->num_groups ? p->groups[0].size : 1;
    double data = (double)p->cfg.count * (double)mrc_dtype_size(p->cfg.dtype);
    if (p->cfg.collective == MRC_REDUCE_SCATTER ||
        p->cfg.collective == MRC_ALLGATHER)
        data *= n;
    return data;
}

/* With a profile, a call on one host (threads, shm, and MPI ranks all on
 * one host, which the selector models as shm) is timed by the
 * simulator's node model when its group has up to SIM_SELECT_NODES
 * nodes, it moves SIM_SELECT_BYTES or more a node, and its pipelined walk
 * has at most SIM_SELECT_WORK node-chunks (the selector runs at a call's
 * first use of its shape, on every rank: direct2's walk, whose gets grow
 * as the square of the group, took 25-35 ms at 32 nodes and 140-580 ms
 * at 64, `mrc sim ring:N --collective allreduce --algo direct2 --mode
 * pipelined --profile F`, 1-32 MiB; at 16, 4-15 ms for every family up to
 * 128 MiB, compile and start included). That is the model `mrc
 * calibrate --check` holds to measured runs, over the sizes it checks
 * (allreduce from 4 KiB). Otherwise:
 * - calls below SIM_SELECT_BYTES take the CPU model's built-in
 *   constants, fitted to small calls under the drop-in library (the node
 *   model took the rings for a 4-byte allreduce on 4 ranks of 2 cores:
 *   0.71 us predicted, 11.8 measured, against 3.0 for the constants'
 *   choice; and the CPU model with the profile's figures chose worse
 *   than the constants below 4 KiB: docs/simulator.md);
 * - larger groups or walks, and MPI between hosts (whose network the
 *   profile does not describe, nor the check hold to runs), take the CPU
 *   model with the profile's figures;
 * - a reduce and a broadcast with local completion, whose nodes run
 *   calls ahead of each other (mrc__cpu_runs_ahead), take the CPU model
 *   with its built-in constants, timing a call in a run of them, each
 *   node alone: the profile's rates are those of calls timed alone, and
 *   chose worse (broadcast at 2 ranks, the drop-in library's suite: the
 *   walk chose the rings, 1.14-1.70 times Open MPI's time at 64 KiB-8
 *   MiB, and the CPU model with the profile's figures the tree, which
 *   took as long; the constants direct1, 0.93-1.02 at 512 KiB-8 MiB;
 *   docs/performance.md, "Runs of calls"). The transport still does
 *   what the profile says of it (send_by_ref), which these constants
 *   price as copies into the area. */
enum {
    SIM_SELECT_NODES = 16,
    SIM_SELECT_BYTES = 4096,
    SIM_SELECT_WORK = 8192,
    SIM_SELECT_CHUNK = 256 << 10 /* the compiler's default chunk */
};

/* The profile the CPU model times candidate p with: the input's, or
 * none (the built-in constants) for a call below SIM_SELECT_BYTES and
 * for one whose nodes run ahead. */
static const mrc_profile_t *cpu_profile(const mrc__select_input_t *in,
                                        const mrc_program_t *p)
{
    return call_bytes(p) >= SIM_SELECT_BYTES && !mrc__cpu_runs_ahead(p)
               ? in->profile
               : NULL;
}

/* Whether candidate p is timed by the simulator (see SIM_SELECT_NODES). */
static int timed_by_sim(const mrc__select_input_t *in, const mrc_program_t *p)
{
    if (in->transport == MRC__SIM_TRANSPORT_LINKS)
        return 1;
    if (!in->profile || !in->topo || in->transport == MRC__SIM_TRANSPORT_MPI ||
        p->num_nodes > SIM_SELECT_NODES || !cpu_profile(in, p))
        return 0;
    double chunk =
        (double)(in->cc.chunk_bytes ? in->cc.chunk_bytes : SIM_SELECT_CHUNK);
    double chunks = call_bytes(p) / chunk + 1;
    return chunks * p->num_nodes <= SIM_SELECT_WORK;
}

/* Data per node and the bound, as the simulator reports them. */
static void figures(const mrc_program_t *p, const mrc__select_input_t *in,
                    mrc__candidate_t *c)
{
    int n = p->num_groups ? p->groups[0].size : 1;
    double data = call_bytes(p);
    double algbw = c->time_us > 0 ? data / (c->time_us * 1e3) : 0;
    c->busbw_gbps = algbw * mrc__busbw_factor(p->cfg.collective, n);
    if (in->transport != MRC__SIM_TRANSPORT_LINKS) {
        /* The CPU's bound: the share of the data a node must move, at
         * the copy bandwidth. */
        double share = mrc__busbw_factor(p->cfg.collective, n);
        mrc__cpu_cost_t kp;
        const mrc__cpu_cost_t *k = mrc__cpu_cost(in->transport);
        const mrc_profile_t *pr = cpu_profile(in, p);
        if (pr && mrc__cpu_cost_of_profile(pr, in->transport, p->cfg.dtype,
                                           p->cfg.op, n, &kp) == MRC_OK)
            k = &kp;
        c->bound_gbps =
            n > 1 ? k->copy_gbps[mrc__cpu_cost_tier(k, (uint64_t)data)] / share
                  : 0;
    }
    c->efficiency = c->bound_gbps > 0 ? algbw / c->bound_gbps : 0;
}

static int needs_memory(mrc_algo_t a)
{
    return a == MRC_ALGO_DIRECT1 || a == MRC_ALGO_DIRECT2;
}

/* Why the transport cannot run family a; NULL if it can. */
static const char *transport_refuses(const mrc__select_input_t *in,
                                     mrc_algo_t a)
{
    if (a == MRC_ALGO_HIER && in->transport != MRC__SIM_TRANSPORT_LINKS &&
        !in->memory_ok && !in->host_memory_ok)
        return "needs memory semantics within each host (expose/get), "
               "which this transport does not offer there (one rank a "
               "host, or ranks not in equal blocks per host: use rings "
               "or tree)";
    if (!needs_memory(a))
        return NULL;
    if (!in->memory_ok && in->transport == MRC__SIM_TRANSPORT_MPI)
        return "needs memory semantics (expose/get), and the mpi "
               "transport between hosts is point-to-point";
    if (!in->memory_ok)
        return in->no_memory_why ? in->no_memory_why
                                 : "needs memory semantics (expose/get), "
                                   "which this transport does not offer";
    return NULL;
}

mrc_status_t mrc__select_sim(const mrc_program_t *p, const mrc_topo_t *t,
                             const mrc_sim_config_t *cfg,
                             mrc_sim_result_t **out)
{
    mrc_status_t st = mrc_sim_run(p, t, cfg, out);
    /* A simulator that skips memory operations would time such a program
     * as free: that is no figure. (With a profile the node model moves
     * them through memory, not over links.) */
    if (st == MRC_OK && (!cfg || !cfg->profile) && p->cfg.count > 0 &&
        (*out)->bytes_moved <= 0 && mrc__program_has_memory_ops(p)) {
        mrc_sim_result_destroy(*out);
        *out = NULL;
        st = mrc__error(MRC_ERR_UNSUPPORTED,
                        "the simulator does not time %s's operations yet",
                        mrc_algo_name(p->cfg.algo));
    }
    return st;
}

/* Compiles family a into c (status, why, code length); *keep gets the
 * program if it applies. */
static mrc_status_t compile_candidate(const mrc__select_input_t *in,
                                      mrc_algo_t a, int forced,
                                      mrc__candidate_t *c, mrc_program_t **keep)
{
    memset(c, 0, sizeof *c);
    c->algo = a;
    *keep = NULL;
    mrc_compile_config_t cc = in->cc;
    cc.algo = a;
    mrc_program_t *p = NULL;
    /* A family the transport cannot run is not compiled, unless it was
     * asked for: then the compiler first, since that it does not apply to
     * the collective is the more useful reason. */
    const char *refused = transport_refuses(in, a);
    mrc_status_t st = MRC_OK;
    if (!refused || forced)
        st = mrc__program_build(in->embedding, &cc, in->group, &p);
    if (st == MRC_ERR_NO_MEMORY)
        return st;
    if (st == MRC_OK && !refused && !in->ref_ok &&
        mrc__program_exposes_by_ref(p))
        refused = "reads the peers' buffers in place (by reference), which "
                  "this host does not allow (cross-memory attach)";
    if (st == MRC_OK && refused) {
        mrc_program_destroy(p);
        p = NULL;
        st =
            mrc__error(MRC_ERR_UNSUPPORTED, "%s %s", mrc_algo_name(a), refused);
    }
    c->status = st;
    if (st != MRC_OK) {
        snprintf(c->why, sizeof c->why, "%s", mrc_last_error());
        return MRC_OK;
    }
    c->code_instructions = p->code_len;
    *keep = p;
    return MRC_OK;
}

/* The fastest candidate still standing (ties to the earlier family:
 * rings, then direct1, ...), and the runner-up; MRC_ALGO_AUTO, -1 when
 * none. */
static void rank_candidates(mrc_program_t *const *progs,
                            const mrc__selection_t *out, int *first,
                            int *second)
{
    *first = MRC_ALGO_AUTO;
    *second = -1;
    for (int a = 0; a < MRC_NUM_ALGOS; a++) {
        if (!progs[a])
            continue;
        if (*first == MRC_ALGO_AUTO ||
            out->cand[a].time_us < out->cand[*first].time_us) {
            *second = *first;
            *first = a;
        } else if (*second < 0 ||
                   out->cand[a].time_us < out->cand[*second].time_us) {
            *second = a;
        }
    }
}

/* The checker's proof of the fastest candidate; one it refuses stops
 * applying, with the checker's reason, and the next is proven. */
static mrc_status_t prove_fastest(mrc_program_t **progs, mrc__selection_t *out,
                                  int *applies, int *second)
{
    for (;;) {
        int first;
        rank_candidates(progs, out, &first, second);
        out->chosen = (mrc_algo_t)first;
        if (first == MRC_ALGO_AUTO)
            return MRC_OK;
        mrc_status_t st = mrc_program_check(progs[first]);
        if (st == MRC_OK)
            return MRC_OK;
        if (st == MRC_ERR_NO_MEMORY)
            return st;
        mrc__candidate_t *c = &out->cand[first];
        c->status = st;
        snprintf(c->why, sizeof c->why, "refused by the checker: %s",
                 mrc_last_error());
        mrc_program_destroy(progs[first]);
        progs[first] = NULL;
        --*applies;
    }
}

const mrc_profile_t *mrc__profile_one_host(const mrc_profile_t *pr, int nodes,
                                           mrc_profile_t *copy)
{
    *copy = *pr;
    copy->nodes_per_memory = nodes;
    return copy;
}

/* The simulator's time for candidate p: the links' BSP walk, or with a
 * profile the node model's pipelined walk, as `--predict` times a run
 * (on buffers the peers map where the communicator says so), with every
 * node on one host. */
static mrc_status_t sim_time(const mrc__select_input_t *in,
                             const mrc_program_t *p, mrc__candidate_t *c)
{
    mrc_sim_config_t sc = {.mode = MRC_SIM_BSP};
    mrc_profile_t one_host;
    if (in->transport != MRC__SIM_TRANSPORT_LINKS) {
        sc.mode = MRC_SIM_PIPELINED;
        sc.peers_mapped = in->peers_mapped;
        sc.profile =
            mrc__profile_one_host(in->profile, p->num_nodes, &one_host);
    }
    mrc_sim_result_t *r = NULL;
    mrc_status_t st = mrc__select_sim(p, in->topo, &sc, &r);
    if (st == MRC_OK) {
        c->time_us = r->time_us;
        if (in->transport == MRC__SIM_TRANSPORT_LINKS)
            c->bound_gbps = r->bound_gbps;
    }
    mrc_sim_result_destroy(r);
    return st;
}

/* Times a compiled candidate; one the model cannot time stops applying
 * (its program destroyed, *p NULL). A CPU transport's candidate that the
 * simulator cannot walk is timed by the CPU model instead. */
static mrc_status_t time_candidate(const mrc__select_input_t *in,
                                   mrc_program_t **p, mrc__candidate_t *c)
{
    mrc_status_t st = MRC_ERR_UNSUPPORTED;
    int by_sim = timed_by_sim(in, *p);
    if (by_sim)
        st = sim_time(in, *p, c);
    if (!by_sim || (st != MRC_OK && st != MRC_ERR_NO_MEMORY &&
                    in->transport != MRC__SIM_TRANSPORT_LINKS))
        st = mrc__cpu_time_profile(*p, in->topo, in->transport,
                                   cpu_profile(in, *p), in->peers_mapped,
                                   &c->time_us);
    if (st == MRC_ERR_NO_MEMORY)
        return st;
    c->status = st;
    if (st != MRC_OK) {
        snprintf(c->why, sizeof c->why, "%s", mrc_last_error());
        mrc_program_destroy(*p);
        *p = NULL;
        return MRC_OK;
    }
    figures(*p, in, c);
    return MRC_OK;
}

/* The reason for out's choice (among `applies` families, `second` the
 * runner-up), or MRC_ERR_UNSUPPORTED with the reason none applies. */
static mrc_status_t say_why(const mrc__select_input_t *in, mrc_algo_t force,
                            int applies, int second, mrc__selection_t *out)
{
    if (out->chosen == MRC_ALGO_AUTO && force != MRC_ALGO_AUTO) {
        snprintf(out->reason, sizeof out->reason, "%s", out->cand[force].why);
        return mrc__error(MRC_ERR_UNSUPPORTED, "family %s asked for: %s",
                          mrc_algo_name(force), out->cand[force].why);
    }
    if (out->chosen == MRC_ALGO_AUTO) {
        snprintf(out->reason, sizeof out->reason,
                 "no family applies (rings: %s)",
                 out->cand[MRC_ALGO_RINGS].why);
        return mrc__error(MRC_ERR_UNSUPPORTED, "%s", out->reason);
    }
    const mrc__candidate_t *w = &out->cand[out->chosen];
    if (force != MRC_ALGO_AUTO)
        snprintf(out->reason, sizeof out->reason, "forced (%s)",
                 mrc_algo_name(force));
    else if (applies == 1)
        snprintf(out->reason, sizeof out->reason,
                 "the only family that applies on the %s model",
                 mrc__sim_transport_name(in->transport));
    else
        snprintf(out->reason, sizeof out->reason,
                 "fastest of %d on the %s model: %.3f us, next %s %.3f us",
                 applies, mrc__sim_transport_name(in->transport), w->time_us,
                 mrc_algo_name((mrc_algo_t)second), out->cand[second].time_us);
    return MRC_OK;
}

mrc_status_t mrc__select(const mrc__select_input_t *in, mrc_algo_t force,
                         mrc__selection_t *out, mrc_program_t **program)
{
    memset(out, 0, sizeof *out);
    out->chosen = MRC_ALGO_AUTO;
    if (program)
        *program = NULL;
    mrc_program_t *progs[MRC_NUM_ALGOS] = {0};
    int compiled = 0, applies = 0, second = -1;
    mrc_status_t st = MRC_OK;
    mrc__cpu_cost_t kp;
    /* A profile of another transport is the caller's mistake, not a
     * reason for every family to stop applying. */
    if (in->profile &&
        (st = mrc__cpu_cost_of_profile(in->profile, in->transport, in->cc.dtype,
                                       in->cc.op, 1, &kp)) != MRC_OK)
        return st;
    for (int a = 0; a < MRC_NUM_ALGOS; a++) {
        mrc__candidate_t *c = &out->cand[a];
        if (force != MRC_ALGO_AUTO && a != (int)force) {
            c->algo = (mrc_algo_t)a;
            c->status = MRC_ERR_UNSUPPORTED;
            snprintf(c->why, sizeof c->why, "not forced (%s is)",
                     mrc_algo_name(force));
            continue;
        }
        st = compile_candidate(in, (mrc_algo_t)a, force != MRC_ALGO_AUTO, c,
                               &progs[a]);
        if (st != MRC_OK)
            goto done;
        compiled += progs[a] != NULL;
    }
    /* One candidate needs no model, unless its figures are asked for. */
    int timed = compiled > 1 || in->want_times;
    for (int a = 0; a < MRC_NUM_ALGOS; a++) {
        if (!progs[a])
            continue;
        if (timed &&
            (st = time_candidate(in, &progs[a], &out->cand[a])) != MRC_OK)
            goto done;
        applies += progs[a] != NULL;
    }
    if ((st = prove_fastest(progs, out, &applies, &second)) != MRC_OK)
        goto done;
    if ((st = say_why(in, force, applies, second, out)) != MRC_OK)
        goto done;
    if (program) {
        *program = progs[out->chosen];
        progs[out->chosen] = NULL;
    }
done:
    for (int a = 0; a < MRC_NUM_ALGOS; a++)
        mrc_program_destroy(progs[a]);
    return st;
}
