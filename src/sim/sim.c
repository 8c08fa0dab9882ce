/*
 * mrc_sim_run: checks the program and the configuration, makes the
 * chains (one walker per node, stream and chunk), takes the walk the
 * mode and the program call for (bsp.c, pipelined.c) and the result's
 * figures from what it booked (figures.c). The model of links and routes
 * is model.c's; how a step shares them, fluid.c's. docs/simulator.md
 * describes the whole.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_internal.h"

/* The full pipelined walk follows every message, N^2 per ring: 4096
 * nodes take about 20 s, 65536 would take some 150 s. The symmetric walk
 * (pipelined_sym.c) is not bound by this. */
enum { PIPELINED_MAX_GROUP = 4096 };

int mrc__sim_chunks(const mrc_program_t *p, const mrc_sim_config_t *c, int k)
{
    const mrc__group_t *g = &p->groups[p->streams[k].group];
    uint64_t len = p->streams[k].slice_len, n = (uint64_t)g->size;
    uint64_t maxf = p->addressing == MRC__ADDR_SPLIT ? (len + n - 1) / n : len;
    uint64_t ce = c->chunks > 0
                      ? (maxf + (uint64_t)c->chunks - 1) / (uint64_t)c->chunks
                      : mrc__chunk_elems(p);
    return mrc__stream_chunks(p, k, ce ? ce : 1);
}

/* Memory a chain may take beside its own record (twice its size: the
 * array grows by doubling): in bsp, its flow of a step and the step's
 * index of it; pipelined, its message posted, queued or in flight, in
 * the map and in the event heap (the queue's pool reuses its slots, so
 * this no longer grows with the ring). Measured (peak RSS over chains):
 * bsp 220 bytes on hcm8; pipelined about 460 with the record (some 220
 * beside it) on ring:4, ring:64 and ring:1024 alike (it was 136 N + 160
 * before the pool reused its slots). */
enum { SIM_CHAIN_BSP_BYTES = 128, SIM_CHAIN_PIPELINED_BYTES = 512 };

/* Refuses `chains` chains of the mode that would not fit in the memory
 * limit, or more than the walks count. */
mrc_status_t mrc__sim_check_chains(uint64_t chains, mrc_sim_mode_t mode)
{
    uint64_t per = 2 * sizeof(mrc__sim_chain_t) +
                   (mode == MRC_SIM_PIPELINED ? SIM_CHAIN_PIPELINED_BYTES
                                              : SIM_CHAIN_BSP_BYTES);
    char what[96];
    snprintf(what, sizeof what,
             "simulation state (%llu chains of "
             "messages: use fewer --chunks or a smaller --size)",
             (unsigned long long)chains);
    mrc_status_t st = mrc__check_memory(mrc__sat_mul_add(chains, per, 0), what);
    if (st == MRC_OK && chains > INT32_MAX)
        st = mrc__error(MRC_ERR_INVALID_ARG,
                        "the simulation would walk %llu chains of messages, "
                        "more than %d",
                        (unsigned long long)chains, INT32_MAX);
    return st;
}

/* Refuses, before any chain is made, a simulation whose chains (one per
 * node, stream and chunk) would not fit in the memory limit. */
static mrc_status_t check_sim_memory(const mrc_program_t *p,
                                     const mrc_sim_config_t *c)
{
    uint64_t chains = 0;
    for (int u = 0; u < p->num_nodes; u++) {
        int g = p->nodes[u].group;
        for (int j = 0; g >= 0 && j < p->groups[g].num_streams; j++)
            chains +=
                (uint64_t)mrc__sim_chunks(p, c, p->groups[g].first_stream + j);
    }
    return mrc__sim_check_chains(chains * (c->calls > 1 ? c->calls : 1),
                                 c->mode);
}

/* The configuration's mode and the program's groups: what the walks
 * take. */
static mrc_status_t check_run(const mrc_program_t *p, const mrc_topo_t *t,
                              const mrc_sim_config_t *c)
{
    if (mrc_topo_num_nodes(t) != p->num_nodes)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "the program has %d nodes, %s has %d", p->num_nodes,
                          mrc_topo_name(t), mrc_topo_num_nodes(t));
    if (c->mode != MRC_SIM_BSP && c->mode != MRC_SIM_PIPELINED)
        return mrc__error(MRC_ERR_INVALID_ARG, "unknown simulation mode %d",
                          (int)c->mode);
    if (c->calls < 0 || c->calls > MRC_SIM_MAX_CALLS)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "a run of %d calls: the simulator times runs of 1 "
                          "to %d",
                          c->calls, MRC_SIM_MAX_CALLS);
    if (c->calls > 1 && c->mode != MRC_SIM_PIPELINED)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "a run of calls is timed in pipelined mode only");
    /* (a run's calls are told apart in a tag's bits 59-62) */
    if (c->calls > 1 && p->num_streams >= 1 << 15)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "a run of calls of a program of %d streams: the "
                          "simulator times runs of programs of fewer than "
                          "32768",
                          p->num_streams);
    return MRC_OK;
}

/* The full pipelined walk's bound, once the symmetric walk has said why
 * it does not apply. */
static mrc_status_t check_pipelined(const mrc_program_t *p, const char *why)
{
    for (int g = 0; g < p->num_groups; g++)
        if (p->groups[g].size > PIPELINED_MAX_GROUP)
            return mrc__error(MRC_ERR_INVALID_ARG,
                              "pipelined simulation walks every message of "
                              "this program (one node cannot stand for its "
                              "group: %s) and takes groups of at most %d "
                              "nodes; group %d has %d: use --mode bsp",
                              why, PIPELINED_MAX_GROUP, g, p->groups[g].size);
    return MRC_OK;
}

/* One chain per node, stream and chunk, walked in the order made; for a
 * run of calls, the whole set again for each call after the first. */
static mrc_status_t make_chains(const mrc_program_t *p,
                                const mrc_sim_config_t *c,
                                mrc__sim_chain_t **out, int *nout)
{
    mrc__sim_chain_t *chains = NULL;
    int nchains = 0, cap = 0;
    mrc_status_t st = check_sim_memory(p, c);
    for (int u = 0; u < p->num_nodes && st == MRC_OK; u++) {
        int g = p->nodes[u].group;
        for (int j = 0; g >= 0 && j < p->groups[g].num_streams; j++) {
            int k = p->groups[g].first_stream + j;
            int chunks = mrc__sim_chunks(p, c, k);
            for (int ch = 0; ch < chunks && st == MRC_OK; ch++) {
                if (mrc__grow((void **)&chains, &cap, nchains + 1,
                              sizeof *chains)) {
                    st = mrc__error(MRC_ERR_NO_MEMORY,
                                    "out of memory simulating");
                    break;
                }
                mrc__cursor_begin(&chains[nchains], p, u, k, ch, chunks, 0);
                nchains++;
            }
        }
    }
    /* (cursors at their chains' starts: each call's are copies) */
    int calls = c->calls > 1 ? c->calls : 1;
    if (st == MRC_OK && calls > 1 &&
        mrc__grow((void **)&chains, &cap, nchains * calls, sizeof *chains))
        st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    for (int k = 1; st == MRC_OK && nchains > 0 && k < calls; k++)
        memcpy(&chains[(size_t)k * nchains], chains,
               (size_t)nchains * sizeof *chains);
    *out = chains;
    *nout = st == MRC_OK ? nchains * calls : nchains;
    return st;
}

/* The result's arrays and the booking's, zeroed. */
static mrc_status_t make_acct(const mrc__sim_t *s, const mrc_sim_config_t *c,
                              mrc_sim_result_t *r, mrc__sim_acct_t *a)
{
    int nl = mrc_topo_num_links(s->t);
    r->num_links = nl;
    r->link_bytes = calloc((size_t)2 * nl + 1, sizeof *r->link_bytes);
    r->link_utilisation = calloc((size_t)2 * nl + 1, sizeof(double));
    *a = (mrc__sim_acct_t){
        .r = r,
        .phys_on = calloc((size_t)s->num_phys + 1, sizeof(double)),
        .phys_last = calloc((size_t)s->num_phys + 1, sizeof(double)),
        .used = calloc((size_t)s->num_phys + 1, 1),
        .pj = c->pj_per_bit > 0 ? c->pj_per_bit : 5,
        .wake_ns = (c->wake_us > 0 ? c->wake_us : 1) * 1e3,
    };
    if (!r->link_bytes || !r->link_utilisation || !a->phys_on ||
        !a->phys_last || !a->used)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    return MRC_OK;
}

/* Walks the program the way its mode and shape call for: one large
 * group of rings in BSP by one step per ring loop (no chains); several
 * groups in BSP each behind its own barrier; one group in lockstep; or
 * pipelined. (A run of calls of a symmetric group is walked as one call:
 * every node ends it at once and begins the next alike, so its period
 * is the call's time.) */
static mrc_status_t walk(mrc__sim_t *s, const mrc_sim_config_t *c,
                         mrc__sim_ws_t *w, mrc__sim_acct_t *a)
{
    const mrc_program_t *p = s->p;
    size_t esize = mrc_dtype_size(p->cfg.dtype);
    if (mrc__sim_fast_applies(p, c->mode, s->node.prof != NULL))
        return mrc__sim_fast_bsp(s, w, esize, a);
    mrc_status_t st = MRC_OK;
    const char *why = NULL;
    if (c->mode == MRC_SIM_PIPELINED &&
        (mrc__sim_sym_walk(s, c, w, a, &st, &why) ||
         (st = check_pipelined(p, why)) != MRC_OK))
        return st;
    mrc__sim_chain_t *chains = NULL;
    int n = 0;
    st = make_chains(p, c, &chains, &n);
    if (st == MRC_OK && c->mode == MRC_SIM_PIPELINED)
        st = mrc__sim_run_pipelined(s, chains, n, c->calls, esize, w, a);
    else if (st == MRC_OK && p->num_groups > 1)
        st = mrc__sim_run_bsp_groups(s, chains, n, esize, w, a);
    else if (st == MRC_OK)
        st = mrc__sim_run_lockstep(s, chains, n, esize, w, a);
    free(chains);
    return st;
}

mrc_status_t mrc_sim_run(const mrc_program_t *p, const mrc_topo_t *t,
                         const mrc_sim_config_t *cfg, mrc_sim_result_t **out)
{
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_sim_run: out is NULL");
    *out = NULL;
    if (!p || !t)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_sim_run: NULL argument");
    mrc_sim_config_t c = cfg ? *cfg : (mrc_sim_config_t){0};
    mrc_status_t st = check_run(p, t, &c);
    if (st != MRC_OK)
        return st;
    mrc__sim_t s;
    memset(&s, 0, sizeof s);
    s.p = p;
    s.t = t;
    s.want_paths = c.calls > 1;
    mrc__sim_ws_t w;
    mrc__sim_acct_t a = {0};
    mrc_sim_result_t *r = calloc(1, sizeof *r);
    if (!r)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating");
    if ((st = mrc__sim_build(&s)) == MRC_OK &&
        (st = mrc__sim_build_mask(&s)) == MRC_OK &&
        (st = mrc__sim_node_build(&s, c.profile, c.peers_mapped)) == MRC_OK &&
        (st = make_acct(&s, &c, r, &a)) == MRC_OK) {
        st = mrc__sim_ws_init(&w, s.num_chan)
                 ? mrc__error(MRC_ERR_NO_MEMORY, "out of memory simulating")
                 : walk(&s, &c, &w, &a);
        mrc__sim_ws_free(&w);
    }
    if (st == MRC_OK)
        mrc__sim_figures(&s, &a, c.link_power_w > 0 ? c.link_power_w : 0.5, r);
    free(a.phys_on);
    free(a.phys_last);
    free(a.used);
    mrc__sim_free(&s);
    if (st != MRC_OK) {
        mrc_sim_result_destroy(r);
        return st;
    }
    *out = r;
    return MRC_OK;
}
