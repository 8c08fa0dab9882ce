/* mrc sim: the compiled program played on the topology's links. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_sim.h"
#include "opts.h"
#include "sim/select.h"

void help_sim(void)
{
    printf(
        "usage: mrc sim SPEC [--strategy S] [--groups G | --replica-size R]\n"
        "               --collective C --size BYTES [--dtype T]\n"
        "               [--mode bsp|pipelined]\n"
        "               [--chunks K] [--pj-per-bit E] [--link-power W]\n"
        "               [--wake-us U] [--max-memory SIZE] [--algo A] [--hosts "
        "H]\n"
        "               [--fail-link A-B[:K]]... [--profile FILE] [--calls K]\n"
        "               [--json]\n"
        "       mrc sim SPEC --compare ...     every strategy that applies\n"
        "       mrc sim SPEC --sweep MIN:MAX [-o PREFIX] ...\n"
        "       mrc sim --load IMAGE [--mode M] [--chunks K] [--pj-per-bit E]\n"
        "               [--link-power W] [--wake-us U] [--profile FILE]\n"
        "               [--json]\n"
        "       mrc sim SPEC --workload FILE [--strategy S] [--groups G]\n"
        "               [--mode M] [--json] ...  a step of compute and\n"
        "               collectives (docs/simulator.md, \"Workloads\")\n"
        "\n"
        "Compiles the collective (see 'mrc help compile') and simulates the\n"
        "program on the topology: every link direction is a channel of\n"
        "count x bandwidth with its latency; messages that share a channel\n"
        "share it fairly; in bsp mode every step ends with a barrier, in\n"
        "pipelined mode each chunk moves as soon as its data is ready.\n"
        "Reports time, algbw and busbw (nccl-tests factors), the bound and\n"
        "efficiency, link utilisation, and energy with idle links switched\n"
        "off in the phases that leave them idle, and with every link on.\n"
        "\n"
        "--size       bytes per node (per block for reduce-scatter and\n"
        "             allgather); K/M/G suffixes\n"
        "--chunks     chunks per fragment (default: the program's 256 KiB)\n"
        "--pj-per-bit energy per bit moved over one link (default 5 pJ)\n"
        "--link-power power of one physical link while on (default 0.5 W)\n"
        "--wake-us    wake-up time of a switched-off link (default 1 us)\n"
        "--compare    one row per strategy (the rings), then one per other\n"
        "             family (direct1, direct2, tree), side by side with\n"
        "             the bound\n"
        "--sweep      sizes MIN..MAX in powers of two, for each strategy;\n"
        "             writes PREFIX.csv and PREFIX.json (default prefix\n"
        "             'sweep'), and PREFIX.svg (busbw against size) with\n"
        "             gnuplot when it is installed; at most 41 sizes\n"
        "--hosts      hier: the ranks on this many hosts in equal blocks\n"
        "--algo       the family: rings (default), direct1, direct2, tree,\n"
        "             hier, or auto (the selector's choice, as 'mrc\n"
        "             explain' shows); one that does not apply: exit 2\n"
        "--load       simulates a saved image ('mrc compile ... -o IMAGE')\n"
        "             on the topology it carries, after checking it; the\n"
        "             options that shape the program (SPEC, --strategy,\n"
        "             --groups, --collective, --size, --dtype, --algo, ...)\n"
        "             are the image's and refused with it (exit 2)\n"
        "--profile    a host profile ('mrc calibrate -o FILE'): the nodes'\n"
        "             memory, reductions and message costs join the links'\n"
        "             (docs/simulator.md, 'Node model'); without one, local\n"
        "             work is free, as on an accelerator interconnect\n"
        "--calls      pipelined: the time of a call in a run of K calls\n"
        "             back to back (2-16), each node beginning its next\n"
        "             call when it has ended this one, as a benchmark's\n"
        "             loop runs: (end of the last - end of the second) /\n"
        "             (K - 2); the other figures are a call's share\n"
        "--max-memory what a simulation may take (default half of physical\n"
        "             memory, or MRC_MAX_MEMORY); larger ones are refused\n"
        "             up front with the figure\n"
        "--groups, --fail-link  node lists such as 0,4+1,5 and failed links\n"
        "             as in 'mrc help rings'\n"
        "--workload   a JSON file of compute and collective ops with their\n"
        "             dependencies (or a Chakra trace as JSON): reports\n"
        "             the step time, compute, communication, the exposed\n"
        "             communication (not hidden behind compute), energy,\n"
        "             and each op's start and end; each op names its own\n"
        "             collective, size, dtype, op, groups and algo\n");
}

/* One simulation: topology, rings, program, run. *rings gets the rings
 * of the first group. */
mrc_status_t sim_simulate(const sim_args_t *a, const mrc_topo_t *t,
                          const char *strategy, uint64_t size,
                          mrc_sim_result_t **out, int *rings)
{
    mrc_embed_config_t ec = {
        .strategy = strategy, .groups = a->groups, .replica_size = a->replica};
    mrc_embedding_t *e = NULL;
    mrc_program_t *p = NULL;
    mrc_status_t st = mrc_embed_create(t, &ec, &e);
    size_t es = mrc_dtype_size(a->dtype);
    mrc_compile_config_t cc = {.collective = a->coll,
                               .count = (size_t)(size / es),
                               .dtype = a->dtype,
                               .algo = a->algo,
                               .hosts = a->hosts};
    if (st == MRC_OK && cc.algo == MRC_ALGO_AUTO) {
        /* As `mrc explain` chooses on the links' model. */
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
    if (st == MRC_OK) {
        *rings = mrc_embed_num_rings(e, 0);
        st = mrc_program_compile(e, &cc, &p);
    }
    if (st == MRC_OK)
        st = mrc__select_sim(p, t, &a->cfg, out);
    mrc_program_destroy(p);
    mrc_embed_destroy(e);
    return st;
}

static void print_one(const sim_args_t *a, const mrc_topo_t *t,
                      const char *strategy, const mrc_sim_result_t *r, int json)
{
    int idle = 0;
    double busiest = 0;
    for (int i = 0; i < 2 * r->num_links; i++) {
        idle += r->link_bytes[i] == 0;
        busiest =
            r->link_utilisation[i] > busiest ? r->link_utilisation[i] : busiest;
    }
    if (json) {
        char *topo = cli_json_quote(mrc_topo_name(t));
        char *strat = cli_json_quote(strategy);
        printf("{\"topology\": %s, \"strategy\": %s, \"collective\": "
               "\"%s\", \"bytes\": %llu, \"dtype\": \"%s\", \"mode\": "
               "\"%s\", \"steps\": %d, \"time_us\": %.6f, \"algbw_gbps\": "
               "%.6f, \"busbw_gbps\": %.6f, \"bound_gbps\": %.6f, "
               "\"efficiency\": %.6f, \"energy_j\": %.9g, "
               "\"energy_no_gating_j\": %.9g, \"bytes_moved\": %.0f, "
               "\"idle_link_directions\": %d,\n \"links\": [\n",
               topo, strat, mrc_collective_name(a->coll),
               (unsigned long long)a->size, mrc_dtype_name(a->dtype),
               a->cfg.mode == MRC_SIM_BSP ? "bsp" : "pipelined", r->steps,
               r->time_us, r->algbw_gbps, r->busbw_gbps, r->bound_gbps,
               r->efficiency, r->energy_j, r->energy_no_gating_j,
               r->bytes_moved, idle);
        free(topo);
        free(strat);
        for (int i = 0; i < r->num_links; i++) {
            const mrc_link_t *l = mrc_topo_link(t, i);
            printf("  {\"link\": %d, \"a\": %d, \"b\": %d, \"bytes\": [%.0f, "
                   "%.0f], \"utilisation\": [%.6f, %.6f]}%s\n",
                   i, l->a, l->b, r->link_bytes[2 * i],
                   r->link_bytes[2 * i + 1], r->link_utilisation[2 * i],
                   r->link_utilisation[2 * i + 1],
                   i + 1 < r->num_links ? "," : "");
        }
        printf(" ]}\n");
        return;
    }
    printf("sim      %s of %llu bytes (%s) on %s, strategy %s, %s\n",
           mrc_collective_name(a->coll), (unsigned long long)a->size,
           mrc_dtype_name(a->dtype), mrc_topo_name(t), strategy,
           a->cfg.mode == MRC_SIM_BSP ? "bsp" : "pipelined");
    if (a->cfg.mode == MRC_SIM_BSP)
        printf("time     %.3f us in %d steps\n", r->time_us, r->steps);
    else
        printf("time     %.3f us\n", r->time_us);
    printf("algbw    %.3f GB/s   busbw %.3f GB/s\n", r->algbw_gbps,
           r->busbw_gbps);
    printf("bound    %.3f GB/s   efficiency %.4f\n", r->bound_gbps,
           r->efficiency);
    printf("energy   %.6g J with idle links off, %.6g J with every link on "
           "(%.1f%% saved)\n",
           r->energy_j, r->energy_no_gating_j,
           r->energy_no_gating_j > 0
               ? 100 * (1 - r->energy_j / r->energy_no_gating_j)
               : 0);
    printf("links    busiest direction %.0f%% busy; %d of %d directions "
           "idle\n",
           100 * busiest, idle, 2 * r->num_links);
}

static int compare(const char *cmd, const sim_args_t *a, const mrc_topo_t *t,
                   int json)
{
    const char *const *names = mrc_embed_strategies();
    int rows = 0;
    if (!json)
        printf("%-16s %5s %12s %10s %10s %10s %8s %12s %12s\n", "strategy",
               "rings", "time(us)", "algbw", "busbw", "bound", "eff",
               "energy(J)", "no-gating(J)");
    else {
        char *topo = cli_json_quote(mrc_topo_name(t));
        printf("{\"topology\": %s, \"results\": [", topo);
        free(topo);
    }
    for (int i = 0; names[i]; i++) {
        mrc_sim_result_t *r = NULL;
        int rings = 0;
        mrc_status_t st = sim_simulate(a, t, names[i], a->size, &r, &rings);
        if (st == MRC_ERR_NOT_APPLICABLE)
            continue;
        if (st != MRC_OK)
            return cli_fail(cmd, st);
        if (json)
            printf("%s\n  {\"strategy\": \"%s\", \"rings\": %d, \"time_us\": "
                   "%.6f, \"algbw_gbps\": %.6f, \"busbw_gbps\": %.6f, "
                   "\"bound_gbps\": %.6f, \"efficiency\": %.6f, "
                   "\"energy_j\": %.9g, \"energy_no_gating_j\": %.9g}",
                   rows ? "," : "", names[i], rings, r->time_us, r->algbw_gbps,
                   r->busbw_gbps, r->bound_gbps, r->efficiency, r->energy_j,
                   r->energy_no_gating_j);
        else
            printf("%-16s %5d %12.3f %10.3f %10.3f %10.3f %8.4f %12.6g "
                   "%12.6g\n",
                   names[i], rings, r->time_us, r->algbw_gbps, r->busbw_gbps,
                   r->bound_gbps, r->efficiency, r->energy_j,
                   r->energy_no_gating_j);
        rows++;
        mrc_sim_result_destroy(r);
    }
    /* Then the other families (on the automatic embedding: they do not
     * use its rings), so that the strategies and the families rank side
     * by side; one that does not apply says why. */
    for (int f = MRC_ALGO_DIRECT1; f < MRC_NUM_ALGOS; f++) {
        sim_args_t b = *a;
        b.algo = (mrc_algo_t)f;
        mrc_sim_result_t *r = NULL;
        int rings = 0;
        mrc_status_t st = sim_simulate(&b, t, "auto", a->size, &r, &rings);
        if (st == MRC_ERR_UNSUPPORTED) {
            if (!json)
                printf("%-16s %s\n", mrc_algo_name(b.algo), mrc_last_error());
            continue;
        }
        if (st != MRC_OK)
            return cli_fail(cmd, st);
        if (json)
            printf("%s\n  {\"strategy\": \"auto\", \"family\": \"%s\", "
                   "\"time_us\": %.6f, \"algbw_gbps\": %.6f, "
                   "\"busbw_gbps\": %.6f, \"bound_gbps\": %.6f, "
                   "\"efficiency\": %.6f, \"energy_j\": %.9g, "
                   "\"energy_no_gating_j\": %.9g}",
                   rows ? "," : "", mrc_algo_name(b.algo), r->time_us,
                   r->algbw_gbps, r->busbw_gbps, r->bound_gbps, r->efficiency,
                   r->energy_j, r->energy_no_gating_j);
        else
            printf("%-16s %5s %12.3f %10.3f %10.3f %10.3f %8.4f %12.6g "
                   "%12.6g\n",
                   mrc_algo_name(b.algo), "-", r->time_us, r->algbw_gbps,
                   r->busbw_gbps, r->bound_gbps, r->efficiency, r->energy_j,
                   r->energy_no_gating_j);
        rows++;
        mrc_sim_result_destroy(r);
    }
    if (json)
        printf("\n]}\n");
    return CLI_OK;
}

/* --load IMAGE: the image's program itself, on the topology it carries
 * (the simulator's links: counts, bandwidths, latencies). */
static int sim_loaded(const char *cmd, const char *path, sim_args_t *a,
                      int json)
{
    mrc_program_t *p = NULL;
    mrc__image_origin_t origin;
    mrc_topo_t *t = NULL;
    mrc_sim_result_t *r = NULL;
    int rc = cli_load_image_topology(cmd, path, &p, &origin, &t);
    if (rc != CLI_OK)
        return rc;
    mrc_status_t st = mrc__select_sim(p, t, &a->cfg, &r);
    if (st != MRC_OK) {
        rc = cli_fail(cmd, st);
    } else {
        a->coll = p->cfg.collective;
        a->dtype = p->cfg.dtype;
        a->size = (uint64_t)p->cfg.count * mrc_dtype_size(p->cfg.dtype);
        print_one(a, t, origin.strategy ? origin.strategy : "(image)", r, json);
    }
    mrc_sim_result_destroy(r);
    mrc_topo_destroy(t);
    mrc_program_destroy(p);
    mrc__image_origin_free(&origin);
    return rc;
}

/* --workload: a step of compute and collectives; nothing is printed
 * until the whole step is simulated. */
static int workload(const char *cmd, const char *path, const mrc_topo_t *t,
                    const mrc_embed_config_t *ec, const mrc_sim_config_t *cfg,
                    int json)
{
    mrc_workload_t *w = NULL;
    mrc_workload_result_t *r = NULL;
    mrc_status_t st = mrc_workload_load(path, &w);
    if (st == MRC_OK && (st = mrc_sim_workload(w, t, ec, cfg, &r)) != MRC_OK)
        mrc__error_prefix("%s", path);
    if (st != MRC_OK) {
        mrc_workload_destroy(w);
        return cli_fail(cmd, st);
    }
    int ncoll = 0;
    for (int i = 0; i < r->num_ops; i++)
        ncoll += r->ops[i].kind == MRC_WORKLOAD_COLLECTIVE;
    if (json) {
        char *topo = cli_json_quote(mrc_topo_name(t));
        char *file = cli_json_quote(path);
        printf("{\"topology\": %s, \"workload\": %s, \"mode\": \"%s\", "
               "\"steps\": %d, \"step_us\": %.6f, \"total_us\": %.6f, "
               "\"compute_us\": %.6f, \"comm_us\": %.6f, "
               "\"exposed_comm_us\": %.6f, \"energy_j\": %.9g, "
               "\"energy_no_gating_j\": %.9g, \"collectives\": %d, "
               "\"distinct_collectives\": %d,\n \"ops\": [\n",
               topo, file, cfg->mode == MRC_SIM_BSP ? "bsp" : "pipelined",
               r->steps, r->step_us, r->total_us, r->compute_us, r->comm_us,
               r->exposed_comm_us, r->energy_j, r->energy_no_gating_j, ncoll,
               r->distinct_collectives);
        free(topo);
        free(file);
        for (int i = 0; i < r->num_ops; i++) {
            char *id = cli_json_quote(r->ops[i].id);
            printf("  {\"id\": %s, \"kind\": \"%s\", \"start_us\": %.6f, "
                   "\"end_us\": %.6f}%s\n",
                   id,
                   r->ops[i].kind == MRC_WORKLOAD_COMPUTE ? "compute"
                                                          : "collective",
                   r->ops[i].start_us, r->ops[i].end_us,
                   i + 1 < r->num_ops ? "," : "");
            free(id);
        }
        printf(" ]}\n");
    } else {
        printf("workload %s on %s: %d ops: %d compute, %d collective (%d "
               "distinct simulated), %s\n",
               path, mrc_topo_name(t), r->num_ops, r->num_ops - ncoll, ncoll,
               r->distinct_collectives,
               cfg->mode == MRC_SIM_BSP ? "bsp" : "pipelined");
        printf("step     %.3f us (x %d steps: %.3f us)\n", r->step_us, r->steps,
               r->total_us);
        printf("compute  %.3f us   communication %.3f us\n", r->compute_us,
               r->comm_us);
        printf("exposed  %.3f us of communication not hidden behind "
               "compute (%.1f%% of the step)\n",
               r->exposed_comm_us,
               r->step_us > 0 ? 100 * r->exposed_comm_us / r->step_us : 0);
        printf("energy   %.6g J a step with idle links off, %.6g J with "
               "every link on\n",
               r->energy_j, r->energy_no_gating_j);
        printf("%-24s %-10s %14s %14s\n", "op", "kind", "start(us)", "end(us)");
        for (int i = 0; i < r->num_ops; i++)
            printf("%-24s %-10s %14.3f %14.3f\n", r->ops[i].id,
                   r->ops[i].kind == MRC_WORKLOAD_COMPUTE ? "compute"
                                                          : "collective",
                   r->ops[i].start_us, r->ops[i].end_us);
    }
    mrc_workload_result_destroy(r);
    mrc_workload_destroy(w);
    return CLI_OK;
}

/* mrc sim's own options, beside the group's. */
typedef struct sim_opts {
    cli_stage_t o;
    const char *mode, *chunks, *pj, *power, *wake, *sweep, *prefix, *profile,
        *workload, *calls;
    int compare;
    mrc_profile_t prof; /* --profile's (a->cfg.profile points here) */
} sim_opts_t;

/* With --load, the options that shape the program are the image's;
 * without it, a SPEC and what to simulate on it. */
static int check_presence(const char *cmd, const sim_opts_t *so, int npos)
{
    const cli_stage_t *o = &so->o;
    int rc = CLI_OK;
    if (o->load) {
        static const char *const fixed[] = {
            "strategy", "groups",    "replica-size", "collective", "size",
            "dtype",    "algo",      "hosts",        "sweep",      "compare",
            "output",   "fail-link", "workload",     NULL};
        if (npos)
            return cli_usage(cmd, "sim",
                             "--load takes no SPEC (the image "
                             "carries its topology)");
        if ((rc = cli_stage_refuses(cmd, "sim", o, fixed)) != CLI_OK)
            return rc;
    } else if (npos == 0) {
        return cli_usage(cmd, "sim", "missing SPEC");
    }
    if (so->workload && (o->coll || o->size || so->sweep || so->compare))
        return cli_usage(cmd, "sim",
                         "--workload takes its collectives and "
                         "sizes from the file: no --collective, "
                         "--size, --sweep or --compare");
    if (!o->load && !so->workload && (!o->coll || (!o->size && !so->sweep)))
        return cli_usage(cmd, "sim",
                         "--collective and --size (or --sweep) "
                         "are required");
    return CLI_OK;
}

/* The simulator's configuration: --mode, the positive numbers (with
 * --replica-size) and --profile. */
static int read_sim_config(const char *cmd, sim_opts_t *so, sim_args_t *a)
{
    long rs = 0, ck = 0, calls = 0;
    double e = 0, w = 0, u = 0;
    int pipelined = strcmp(so->mode, "pipelined") == 0;
    if (!pipelined && strcmp(so->mode, "bsp") != 0)
        return cli_usage(cmd, "sim", "--mode '%s': bsp or pipelined", so->mode);
    const char *replica = so->o.replica;
    if ((replica && mrc__parse_long(replica, 1, MRC_TOPO_MAX_NODES, &rs)) ||
        (so->chunks && mrc__parse_long(so->chunks, 1, 1 << 20, &ck)) ||
        (so->pj && (mrc__parse_double(so->pj, &e) || e <= 0)) ||
        (so->power && (mrc__parse_double(so->power, &w) || w <= 0)) ||
        (so->wake && (mrc__parse_double(so->wake, &u) || u <= 0)))
        return cli_usage(cmd, "sim",
                         "a numeric option is not a positive "
                         "number");
    if (so->calls && mrc__parse_long(so->calls, 2, MRC_SIM_MAX_CALLS, &calls))
        return cli_usage(cmd, "sim", "--calls '%s': a run of 2 to %d calls",
                         so->calls, MRC_SIM_MAX_CALLS);
    if (calls && !pipelined)
        return cli_usage(cmd, "sim",
                         "--calls times a run of calls in pipelined mode "
                         "(--mode pipelined)");
    a->replica = (int)rs;
    a->cfg =
        (mrc_sim_config_t){.mode = pipelined ? MRC_SIM_PIPELINED : MRC_SIM_BSP,
                           .pj_per_bit = e,
                           .link_power_w = w,
                           .wake_us = u,
                           .chunks = (int)ck,
                           .calls = (int)calls};
    if (so->profile) {
        mrc_status_t ps = mrc_profile_load(so->profile, &so->prof);
        if (ps != MRC_OK)
            return cli_fail(cmd, ps);
        a->cfg.profile = &so->prof;
    }
    return CLI_OK;
}

/* What to simulate: collective, dtype, size, hosts, and the simulator's
 * configuration. */
static int read_sim_args(const char *cmd, sim_opts_t *so, sim_args_t *a)
{
    const cli_stage_t *o = &so->o;
    const char *dtype = o->dtype ? o->dtype : "float32";
    mrc_status_t st =
        o->load || !o->coll ? MRC_OK : mrc_collective_parse(o->coll, &a->coll);
    if (st == MRC_OK)
        st = mrc_dtype_parse(dtype, &a->dtype);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    if (o->size && (mrc__parse_size(o->size, &a->size) || a->size == 0))
        return cli_usage(cmd, "sim", "--size '%s' is not a size", o->size);
    int rc = cli_hosts(cmd, "sim", o->hosts, 1, &a->hosts);
    if (rc != CLI_OK)
        return rc;
    return read_sim_config(cmd, so, a);
}

/* SPEC (with its failed links): a workload, a sweep, the comparison, or
 * one simulation. */
static int sim_spec(const char *cmd, const sim_opts_t *so, const sim_args_t *a)
{
    const cli_stage_t *o = &so->o;
    mrc_topo_t *t = NULL;
    mrc_status_t st = mrc_topo_create(a->spec, &t);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    int rc = cli_fail_links(cmd, &o->fails, &t, NULL);
    if (rc != CLI_OK) {
        mrc_topo_destroy(t);
        return rc;
    }
    mrc_embed_config_t ec = {.strategy = o->strategy,
                             .groups = o->groups,
                             .replica_size = a->replica};
    if (!so->sweep && !so->compare && !so->workload)
        cli_report_failed_links(o->json ? stderr : stdout, t, &ec);
    if (so->workload) {
        rc = workload(cmd, so->workload, t, &ec, &a->cfg, o->json);
    } else if (so->sweep) {
        rc = sim_sweep(cmd, a, t, so->sweep, so->prefix ? so->prefix : "sweep");
    } else if (so->compare) {
        rc = compare(cmd, a, t, o->json);
    } else {
        const char *strategy = o->strategy ? o->strategy : "auto";
        mrc_sim_result_t *r = NULL;
        int rings = 0;
        st = sim_simulate(a, t, strategy, a->size, &r, &rings);
        if (st != MRC_OK)
            rc = cli_fail(cmd, st);
        else
            print_one(a, t, strategy, r, o->json);
        mrc_sim_result_destroy(r);
    }
    mrc_topo_destroy(t);
    return rc;
}

int cmd_sim(int argc, char **argv)
{
    const char *cmd = "mrc sim";
    const char *pos[1] = {NULL};
    int npos = 0;
    sim_opts_t so;
    memset(&so, 0, sizeof so);
    so.mode = "bsp";
    const cli_opt_t own[] = {
        {"mode", 0, &so.mode, NULL},         {"chunks", 0, &so.chunks, NULL},
        {"pj-per-bit", 0, &so.pj, NULL},     {"link-power", 0, &so.power, NULL},
        {"wake-us", 0, &so.wake, NULL},      {"sweep", 0, &so.sweep, NULL},
        {"output", 'o', &so.prefix, NULL},   {"profile", 0, &so.profile, NULL},
        {"workload", 0, &so.workload, NULL}, {"calls", 0, &so.calls, NULL},
        {"compare", 0, NULL, &so.compare},   {0}};
    int rc = cli_stage_parse(cmd, "sim", CLI_STAGE_SIZE, own, "rings", argc,
                             argv, &so.o, pos, 0, 1, &npos);
    if (rc == CLI_OK)
        rc = check_presence(cmd, &so, npos);
    sim_args_t a = {.spec = pos[0],
                    .strategy = so.o.strategy,
                    .groups = so.o.groups,
                    .algo = so.o.algo_family};
    if (rc == CLI_OK)
        rc = read_sim_args(cmd, &so, &a);
    if (rc != CLI_OK)
        return rc;
    if (so.o.load)
        return sim_loaded(cmd, so.o.load, &a, so.o.json);
    return sim_spec(cmd, &so, &a);
}
