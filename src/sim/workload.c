/*
 * Workloads (docs/simulator.md, "Workloads"): a step of compute and
 * collectives with dependencies, played on two streams. Each distinct
 * collective is compiled and simulated once; the step is then an event
 * schedule over the dependencies, where a collective takes its simulated
 * time and compute the time the file gives it.
 *
 *   compute  |fwd|bwd4|bwd3|bwd2|bwd1|
 *   network       |   |ar4 |ar3 |ar2 |ar1|   <- exposed: after bwd1
 *
 * The reader is in workload_read.c (and workload_chakra.c), the
 * scheduler in workload_sched.c.
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "mrc/sim.h"
#include "sim/select.h"
#include "sim/workload.h"

/* ---- simulating a step --------------------------------------------- */

void mrc_workload_result_destroy(mrc_workload_result_t *r)
{
    if (!r)
        return;
    free(r->ops);
    free(r);
}

static int same_collective(const mrc__workload_op_t *a,
                           const mrc__workload_op_t *b)
{
    return a->coll == b->coll && a->size == b->size && a->dtype == b->dtype &&
           a->op == b->op && a->root == b->root && a->replica == b->replica &&
           a->algo == b->algo &&
           (a->groups == b->groups ||
            (a->groups && b->groups && strcmp(a->groups, b->groups) == 0));
}

/* One collective as `mrc sim` runs it: embedding, the family (the
 * selector's on the links' model for auto), program, simulation. */
static mrc_status_t sim_collective(const mrc__workload_op_t *o,
                                   const mrc_topo_t *t,
                                   const mrc_embed_config_t *ec0,
                                   const mrc_sim_config_t *cfg,
                                   mrc_sim_result_t **out)
{
    mrc_embed_config_t ec = *ec0;
    if (o->groups || o->replica) {
        ec.groups = o->groups;
        ec.replica_size = o->replica;
    }
    mrc_embedding_t *e = NULL;
    mrc_program_t *p = NULL;
    mrc_compile_config_t cc = {.collective = o->coll,
                               .count =
                                   (size_t)(o->size / mrc_dtype_size(o->dtype)),
                               .dtype = o->dtype,
                               .op = o->op,
                               .root = o->root,
                               .algo = o->algo};
    mrc_status_t st = mrc_embed_create(t, &ec, &e);
    if (st == MRC_OK && cc.algo == MRC_ALGO_AUTO) {
        mrc__select_input_t in = {.embedding = e,
                                  .topo = t,
                                  .cc = cc,
                                  .group = -1,
                                  .memory_ok = 1,
                                  .ref_ok = 1};
        mrc__selection_t sel;
        st = mrc__select(&in, MRC_ALGO_AUTO, &sel, NULL);
        cc.algo = sel.chosen;
    }
    if (st == MRC_OK)
        st = mrc_program_compile(e, &cc, &p);
    if (st == MRC_OK)
        st = mrc__select_sim(p, t, cfg, out);
    mrc_program_destroy(p);
    mrc_embed_destroy(e);
    return st;
}

/* The time of every collective op, each distinct one simulated once;
 * energy summed over the ops. */
static mrc_status_t
time_collectives(const mrc_workload_t *w, const mrc_topo_t *t,
                 const mrc_embed_config_t *ec, const mrc_sim_config_t *cfg,
                 mrc__workload_task_t *tasks, mrc_workload_result_t *r)
{
    /* first[k]: the first op of the k-th distinct collective. */
    int *first = malloc((size_t)w->num_ops * sizeof *first);
    double *energy = calloc((size_t)w->num_ops * 2, sizeof *energy);
    mrc_status_t st = first && energy ? MRC_OK
                                      : mrc__error(MRC_ERR_NO_MEMORY,
                                                   "workload: out of memory");
    for (int i = 0; st == MRC_OK && i < w->num_ops; i++) {
        const mrc__workload_op_t *o = &w->ops[i];
        if (o->kind != MRC_WORKLOAD_COLLECTIVE)
            continue;
        int j = i;
        for (int k = 0; k < r->distinct_collectives && j == i; k++)
            if (same_collective(&w->ops[first[k]], o))
                j = first[k];
        if (j == i) {
            first[r->distinct_collectives] = i;
            mrc_sim_result_t *s = NULL;
            st = sim_collective(o, t, ec, cfg, &s);
            if (st != MRC_OK) {
                mrc__error_prefix("op \"%s\" (%s of %llu bytes)", o->id,
                                  mrc_collective_name(o->coll),
                                  (unsigned long long)o->size);
                break;
            }
            tasks[i].duration_us = s->time_us;
            energy[2 * i] = s->energy_j;
            energy[2 * i + 1] = s->energy_no_gating_j;
            r->distinct_collectives++;
            mrc_sim_result_destroy(s);
        }
        tasks[i].duration_us = tasks[j].duration_us;
        r->comm_us += tasks[i].duration_us;
        r->energy_j += energy[2 * j];
        r->energy_no_gating_j += energy[2 * j + 1];
    }
    free(first);
    free(energy);
    return st;
}

/* Power of every link on (W): the energy of the time no collective
 * runs, when idle links are not switched off. */
static double links_power_w(const mrc_topo_t *t, const mrc_sim_config_t *cfg)
{
    double per_link = cfg->link_power_w > 0 ? cfg->link_power_w : 0.5;
    double links = 0;
    for (int i = 0; i < mrc_topo_num_links(t); i++)
        links += mrc_topo_link(t, i)->count;
    return per_link * links;
}

static int cmp_start(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Exposed communication: collective time that no compute overlaps. Each
 * stream runs one op at a time, so its intervals sorted by start are
 * disjoint. */
static mrc_status_t exposed(const mrc_workload_result_t *r, double *out)
{
    size_t n = r->num_ops > 0 ? (size_t)r->num_ops : 1;
    /* (start, end) pairs: compute from the front, collectives from the
     * back. */
    double *v = malloc(n * 2 * sizeof *v), *c = v, *m = v;
    if (!v)
        return mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    int nc = 0, nm = 0;
    for (int i = 0; i < r->num_ops; i++) {
        const mrc_workload_op_result_t *o = &r->ops[i];
        double *p =
            o->kind == MRC_WORKLOAD_COMPUTE ? &c[2 * nc++] : &v[2 * (n - ++nm)];
        p[0] = o->start_us;
        p[1] = o->end_us;
    }
    m = v + 2 * (n - (size_t)nm);
    qsort(c, (size_t)nc, 2 * sizeof *v, cmp_start);
    qsort(m, (size_t)nm, 2 * sizeof *v, cmp_start);
    /* Split into the start and end lists the sweep takes. */
    double *t = malloc(n * 4 * sizeof *t);
    if (!t) {
        free(v);
        return mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    }
    for (int k = 0; k < nc; k++) {
        t[k] = c[2 * k];
        t[n + k] = c[2 * k + 1];
    }
    for (int k = 0; k < nm; k++) {
        t[2 * n + k] = m[2 * k];
        t[3 * n + k] = m[2 * k + 1];
    }
    *out = mrc__workload_uncovered(t, t + n, nc, t + 2 * n, t + 3 * n, nm);
    free(t);
    free(v);
    return MRC_OK;
}

static mrc_status_t fill_result(const mrc_workload_t *w,
                                const mrc__workload_task_t *tasks,
                                const double *start, const double *end,
                                mrc_workload_result_t *r)
{
    r->ops = calloc((size_t)w->num_ops, sizeof *r->ops);
    if (!r->ops)
        return mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    r->num_ops = w->num_ops;
    r->steps = w->steps;
    for (int i = 0; i < w->num_ops; i++) {
        r->ops[i] = (mrc_workload_op_result_t){.id = w->ops[i].id,
                                               .kind = w->ops[i].kind,
                                               .start_us = start[i],
                                               .end_us = end[i]};
        if (end[i] > r->step_us)
            r->step_us = end[i];
        if (tasks[i].stream == MRC__WL_COMPUTE)
            r->compute_us += tasks[i].duration_us;
    }
    r->total_us = r->step_us * r->steps;
    return exposed(r, &r->exposed_comm_us);
}

mrc_status_t mrc_sim_workload(const mrc_workload_t *w, const mrc_topo_t *t,
                              const mrc_embed_config_t *ec,
                              const mrc_sim_config_t *cfg,
                              mrc_workload_result_t **out)
{
    if (!out)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_sim_workload: out is "
                                               "NULL");
    *out = NULL;
    if (!w || !t || !ec || !cfg)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_sim_workload: a "
                                               "workload, topology, "
                                               "embedding and simulator "
                                               "config are needed");
    mrc_workload_result_t *r = calloc(1, sizeof *r);
    mrc__workload_task_t *tasks = mrc__workload_tasks(w);
    double *times = malloc((size_t)w->num_ops * 2 * sizeof *times);
    mrc_status_t st =
        r && tasks && times
            ? MRC_OK
            : mrc__error(MRC_ERR_NO_MEMORY, "workload: out of memory");
    if (st == MRC_OK)
        st = time_collectives(w, t, ec, cfg, tasks, r);
    if (st == MRC_OK)
        st = mrc__workload_schedule(tasks, w->num_ops, times,
                                    times + w->num_ops);
    if (st == MRC_OK)
        st = fill_result(w, tasks, times, times + w->num_ops, r);
    if (st == MRC_OK)
        /* Links off while no collective runs; on, they draw power then. */
        r->energy_no_gating_j +=
            (r->step_us - r->comm_us) * 1e-6 * links_power_w(t, cfg);
    free(tasks);
    free(times);
    if (st != MRC_OK) {
        mrc_workload_result_destroy(r);
        return st;
    }
    *out = r;
    return MRC_OK;
}
