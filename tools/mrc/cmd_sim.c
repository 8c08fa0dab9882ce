/* mrc sim: the compiled program played on the topology's links. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opts.h"
#include "sim/select.h"

void help_sim(void)
{
    printf(
        "usage: mrc sim SPEC [--strategy S] [--groups G | --replica-size R]\n"
        "               --collective C --size BYTES [--dtype T]\n"
        "               [--mode bsp|pipelined]\n"
        "               [--chunks K] [--pj-per-bit E] [--link-power W]\n"
        "               [--wake-us U] [--max-memory SIZE] [--algo A] [--hosts H]\n"
        "               [--fail-link A-B[:K]]... [--profile FILE] [--json]\n"
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

typedef struct sim_args {
    const char *spec, *strategy, *groups;
    int replica;
    mrc_collective_t coll;
    mrc_dtype_t dtype;
    mrc_algo_t algo;
    int hosts; /* hier */
    uint64_t size;
    mrc_sim_config_t cfg;
} sim_args_t;

/* One simulation: topology, rings, program, run. *rings gets the rings
 * of the first group. */
static mrc_status_t simulate(const sim_args_t *a, const mrc_topo_t *t,
                             const char *strategy, uint64_t size,
                             mrc_sim_result_t **out, int *rings)
{
    mrc_embed_config_t ec = {.strategy = strategy, .groups = a->groups,
                             .replica_size = a->replica};
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
        mrc__select_input_t in = {.embedding = e, .topo = t, .cc = cc,
                                  .group = -1, .memory_ok = 1, .ref_ok = 1};
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
                      const char *strategy, const mrc_sim_result_t *r,
                      int json)
{
    int idle = 0;
    double busiest = 0;
    for (int i = 0; i < 2 * r->num_links; i++) {
        idle += r->link_bytes[i] == 0;
        busiest = r->link_utilisation[i] > busiest ? r->link_utilisation[i]
                                                   : busiest;
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
        mrc_status_t st = simulate(a, t, names[i], a->size, &r, &rings);
        if (st == MRC_ERR_NOT_APPLICABLE)
            continue;
        if (st != MRC_OK)
            return cli_fail(cmd, st);
        if (json)
            printf("%s\n  {\"strategy\": \"%s\", \"rings\": %d, \"time_us\": "
                   "%.6f, \"algbw_gbps\": %.6f, \"busbw_gbps\": %.6f, "
                   "\"bound_gbps\": %.6f, \"efficiency\": %.6f, "
                   "\"energy_j\": %.9g, \"energy_no_gating_j\": %.9g}",
                   rows ? "," : "", names[i], rings, r->time_us,
                   r->algbw_gbps, r->busbw_gbps, r->bound_gbps,
                   r->efficiency, r->energy_j, r->energy_no_gating_j);
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
        mrc_status_t st = simulate(&b, t, "auto", a->size, &r, &rings);
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
                   r->algbw_gbps, r->busbw_gbps, r->bound_gbps,
                   r->efficiency, r->energy_j, r->energy_no_gating_j);
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

/* Sizes in a sweep: powers of two from 1 byte to 1 TiB. */
enum { SWEEP_MAX_SIZES = 41 };

static int sweep(const char *cmd, const sim_args_t *a, const mrc_topo_t *t,
                 const char *range, const char *prefix)
{
    uint64_t lo = 0, hi = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", range);
    char *colon = strchr(buf, ':');
    if (!colon)
        return cli_usage(cmd, "sim", "--sweep takes MIN:MAX, such as 1K:1G");
    *colon = '\0';
    if (mrc__parse_size(buf, &lo) || mrc__parse_size(colon + 1, &hi) ||
        lo == 0 || hi < lo)
        return cli_usage(cmd, "sim", "--sweep '%s': sizes MIN <= MAX, > 0",
                         range);
    char path[512];
    /* A prefix cut short would write somewhere else than asked. */
    if (strlen(prefix) + sizeof ".json" > sizeof path)
        return cli_usage(cmd, "sim", "-o PREFIX is longer than %zu bytes",
                         sizeof path - sizeof ".json");
    /* Powers of two from MIN while <= MAX, without wrapping past 2^63;
     * at most SWEEP_MAX_SIZES of them (1 byte to 1 TiB). */
    int nsizes = 1;
    for (uint64_t s = lo; s <= hi / 2 && s * 2 <= hi; s *= 2)
        nsizes++;
    if (nsizes > SWEEP_MAX_SIZES)
        return cli_usage(cmd, "sim", "--sweep '%s' has %d sizes; at most %d "
                         "(such as 1:1T)", range, nsizes, SWEEP_MAX_SIZES);
    const char *const *names = mrc_embed_strategies();
    mrc__strbuf_t csv, js;
    mrc__sb_init(&csv);
    mrc__sb_init(&js);
    mrc__sb_puts(&csv, "strategy,bytes,time_us,algbw_gbps,busbw_gbps,"
                       "bound_gbps,efficiency,energy_j,energy_no_gating_j\n");
    mrc__sb_puts(&js, "{\"topology\": ");
    mrc__sb_json_string(&js, mrc_topo_name(t));
    mrc__sb_printf(&js, ", \"collective\": \"%s\", \"results\": [",
                   mrc_collective_name(a->coll));
    int tty = isatty(STDERR_FILENO), total = 0, done = 0, rows = 0;
    for (int i = 0; names[i]; i++)
        total += !a->strategy || strcmp(a->strategy, names[i]) == 0;
    total *= nsizes;
    char *strategies[16];
    int nstrat = 0;
    for (int i = 0; names[i]; i++) {
        if (a->strategy && strcmp(a->strategy, names[i]) != 0)
            continue;
        int any = 0;
        uint64_t size = lo;
        for (int k = 0; k < nsizes; k++, size *= 2, done++) {
            if (tty) {
                int w = total ? 40 * (done + 1) / total : 40;
                fprintf(stderr, "\r[%-40.*s] %d/%d %s %llu B   ", w,
                        "########################################",
                        done + 1, total, names[i], (unsigned long long)size);
            }
            mrc_sim_result_t *r = NULL;
            int rings = 0;
            mrc_status_t st = simulate(a, t, names[i], size, &r, &rings);
            if (st == MRC_ERR_NOT_APPLICABLE)
                continue;
            if (st != MRC_OK) {
                if (tty)
                    fprintf(stderr, "\n");
                mrc__sb_free(&csv);
                mrc__sb_free(&js);
                return cli_fail(cmd, st);
            }
            any = 1;
            mrc__sb_printf(&csv, "%s,%llu,%.6f,%.6f,%.6f,%.6f,%.6f,%.9g,"
                                 "%.9g\n",
                           names[i], (unsigned long long)size, r->time_us,
                           r->algbw_gbps, r->busbw_gbps, r->bound_gbps,
                           r->efficiency, r->energy_j, r->energy_no_gating_j);
            mrc__sb_printf(&js, "%s\n  {\"strategy\": \"%s\", \"bytes\": "
                                "%llu, \"time_us\": %.6f, \"busbw_gbps\": "
                                "%.6f, \"efficiency\": %.6f, \"energy_j\": "
                                "%.9g, \"energy_no_gating_j\": %.9g}",
                           rows++ ? "," : "", names[i],
                           (unsigned long long)size, r->time_us,
                           r->busbw_gbps, r->efficiency, r->energy_j,
                           r->energy_no_gating_j);
            mrc_sim_result_destroy(r);
        }
        if (any && nstrat < 16)
            strategies[nstrat++] = (char *)names[i];
    }
    if (tty)
        fprintf(stderr, "\n");
    mrc__sb_puts(&js, "\n]}\n");
    int rc = CLI_OK;
    snprintf(path, sizeof path, "%s.csv", prefix);
    if (!csv.failed)
        rc = cli_write_file(cmd, path, csv.data, csv.len);
    snprintf(path, sizeof path, "%s.json", prefix);
    if (rc == CLI_OK && !js.failed)
        rc = cli_write_file(cmd, path, js.data, js.len);
    size_t csv_len = csv.len;
    char *csv_data = mrc__sb_take(&csv);
    mrc__sb_free(&js);
    if (rc == CLI_OK && !csv_data) {
        fprintf(stderr, "%s: out of memory\n", cmd);
        rc = CLI_FAIL;
    }
    if (rc != CLI_OK) {
        free(csv_data);
        return rc;
    }
    printf("wrote %s.csv and %s.json (%d rows)\n", prefix, prefix, rows);
    /* The picture: busbw against size, one line per strategy. No file
     * name is in the script (the data is inline, the SVG comes back on
     * gnuplot's standard output into an outfile), and names reach it only
     * as escaped strings, with enhanced text off so that they show as
     * they are. */
    mrc__strbuf_t gp, title;
    mrc__sb_init(&gp);
    mrc__sb_init(&title);
    mrc__sb_printf(&title, "%s on %s (simulated)", mrc_collective_name(a->coll),
                   mrc_topo_name(t));
    mrc__sb_puts(&gp, "set terminal svg size 800,500 dynamic noenhanced "
                      "font 'Helvetica,11'\n$data << EOD\n");
    mrc__sb_append(&gp, csv_data, csv_len);
    mrc__sb_puts(&gp, "EOD\nset datafile separator ','\nset logscale x 2\n"
                      "set format x '%.0s%cB'\nset xlabel 'size per node'\n"
                      "set ylabel 'busbw (GB/s)'\nset key left top\n"
                      "set grid\nset title ");
    mrc__sb_gnuplot_string(&gp, title.failed ? "" : title.data);
    mrc__sb_puts(&gp, "\nplot ");
    for (int i = 0; i < nstrat; i++) {
        mrc__sb_puts(&gp, i ? ", $data using (strcol(1) eq "
                            : "$data using (strcol(1) eq ");
        mrc__sb_gnuplot_string(&gp, strategies[i]);
        mrc__sb_puts(&gp, " ? $2 : 1/0):5 with linespoints title ");
        mrc__sb_gnuplot_string(&gp, strategies[i]);
    }
    mrc__sb_puts(&gp, "\n");
    snprintf(path, sizeof path, "%s.svg", prefix);
    char *const gnuplot[] = {"gnuplot", NULL};
    if (!gp.failed && nstrat > 0 &&
        cli_filter_to_file(cmd, gnuplot, gp.data, path, 1) == CLI_OK)
        printf("wrote %s\n", path);
    free(csv_data);
    mrc__sb_free(&title);
    mrc__sb_free(&gp);
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
        print_one(a, t, origin.strategy ? origin.strategy : "(image)", r,
                  json);
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
                    const mrc_embed_config_t *ec,
                    const mrc_sim_config_t *cfg, int json)
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
               r->exposed_comm_us, r->energy_j, r->energy_no_gating_j,
               ncoll, r->distinct_collectives);
        free(topo);
        free(file);
        for (int i = 0; i < r->num_ops; i++) {
            char *id = cli_json_quote(r->ops[i].id);
            printf("  {\"id\": %s, \"kind\": \"%s\", \"start_us\": %.6f, "
                   "\"end_us\": %.6f}%s\n", id,
                   r->ops[i].kind == MRC_WORKLOAD_COMPUTE ? "compute"
                                                          : "collective",
                   r->ops[i].start_us, r->ops[i].end_us,
                   i + 1 < r->num_ops ? "," : "");
            free(id);
        }
        printf(" ]}\n");
    } else {
        printf("workload %s on %s: %d ops: %d compute, %d collective (%d "
               "distinct simulated), %s\n", path, mrc_topo_name(t),
               r->num_ops, r->num_ops - ncoll, ncoll, r->distinct_collectives,
               cfg->mode == MRC_SIM_BSP ? "bsp" : "pipelined");
        printf("step     %.3f us (x %d steps: %.3f us)\n", r->step_us,
               r->steps, r->total_us);
        printf("compute  %.3f us   communication %.3f us\n", r->compute_us,
               r->comm_us);
        printf("exposed  %.3f us of communication not hidden behind "
               "compute (%.1f%% of the step)\n", r->exposed_comm_us,
               r->step_us > 0 ? 100 * r->exposed_comm_us / r->step_us : 0);
        printf("energy   %.6g J a step with idle links off, %.6g J with "
               "every link on\n", r->energy_j, r->energy_no_gating_j);
        printf("%-24s %-10s %14s %14s\n", "op", "kind", "start(us)",
               "end(us)");
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

int cmd_sim(int argc, char **argv)
{
    const char *cmd = "mrc sim";
    const char *pos[1], *mode = "bsp", *chunks = NULL, *pj = NULL,
                        *power = NULL, *wake = NULL, *sweep_range = NULL,
                        *prefix = NULL, *profile = NULL, *wl = NULL;
    int cmp = 0, npos = 0;
    const cli_opt_t own[] = {{"mode", 0, &mode, NULL},
                             {"chunks", 0, &chunks, NULL},
                             {"pj-per-bit", 0, &pj, NULL},
                             {"link-power", 0, &power, NULL},
                             {"wake-us", 0, &wake, NULL},
                             {"sweep", 0, &sweep_range, NULL},
                             {"output", 'o', &prefix, NULL},
                             {"profile", 0, &profile, NULL},
                             {"workload", 0, &wl, NULL},
                             {"compare", 0, NULL, &cmp},
                             {0}};
    pos[0] = NULL;
    cli_stage_t o;
    int rc = cli_stage_parse(cmd, "sim", CLI_STAGE_SIZE, own, "rings", argc,
                             argv, &o, pos, 0, 1, &npos);
    if (rc != CLI_OK)
        return rc;
    const char *strategy = o.strategy, *groups = o.groups, *replica = o.replica,
               *coll = o.coll, *size = o.size, *dtype = o.dtype,
               *hosts = o.hosts, *load = o.load;
    int json = o.json;
    sim_args_t a = {.spec = pos[0], .strategy = strategy, .groups = groups,
                    .algo = o.algo_family};
    long rs = 0, ck = 0;
    double e = 0, w = 0, u = 0;
    if (load) {
        static const char *const fixed[] = {
            "strategy", "groups", "replica-size", "collective", "size",
            "dtype", "algo", "hosts", "sweep", "compare", "output",
            "fail-link", "workload", NULL};
        if (npos)
            return cli_usage(cmd, "sim", "--load takes no SPEC (the image "
                             "carries its topology)");
        if ((rc = cli_stage_refuses(cmd, "sim", &o, fixed)) != CLI_OK)
            return rc;
    } else if (npos == 0) {
        return cli_usage(cmd, "sim", "missing SPEC");
    }
    dtype = dtype ? dtype : "float32";
    prefix = prefix ? prefix : "sweep";
    if (wl && (coll || size || sweep_range || cmp))
        return cli_usage(cmd, "sim", "--workload takes its collectives and "
                                     "sizes from the file: no --collective, "
                                     "--size, --sweep or --compare");
    if (!load && !wl && (!coll || (!size && !sweep_range)))
        return cli_usage(cmd, "sim", "--collective and --size (or --sweep) "
                                     "are required");
    mrc_status_t st = load || !coll ? MRC_OK
                                    : mrc_collective_parse(coll, &a.coll);
    if (st == MRC_OK)
        st = mrc_dtype_parse(dtype, &a.dtype);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    if (size && (mrc__parse_size(size, &a.size) || a.size == 0))
        return cli_usage(cmd, "sim", "--size '%s' is not a size", size);
    if ((rc = cli_hosts(cmd, "sim", hosts, 1, &a.hosts)) != CLI_OK)
        return rc;
    int pipelined = strcmp(mode, "pipelined") == 0;
    if (!pipelined && strcmp(mode, "bsp") != 0)
        return cli_usage(cmd, "sim", "--mode '%s': bsp or pipelined", mode);
    if ((replica && mrc__parse_long(replica, 1, MRC_TOPO_MAX_NODES, &rs)) ||
        (chunks && mrc__parse_long(chunks, 1, 1 << 20, &ck)) ||
        (pj && (mrc__parse_double(pj, &e) || e <= 0)) ||
        (power && (mrc__parse_double(power, &w) || w <= 0)) ||
        (wake && (mrc__parse_double(wake, &u) || u <= 0)))
        return cli_usage(cmd, "sim", "a numeric option is not a positive "
                                     "number");
    a.replica = (int)rs;
    a.cfg = (mrc_sim_config_t){
        .mode = pipelined ? MRC_SIM_PIPELINED : MRC_SIM_BSP,
        .pj_per_bit = e, .link_power_w = w, .wake_us = u, .chunks = (int)ck};
    mrc_profile_t prof;
    if (profile) {
        mrc_status_t ps = mrc_profile_load(profile, &prof);
        if (ps != MRC_OK)
            return cli_fail(cmd, ps);
        a.cfg.profile = &prof;
    }
    if (load)
        return sim_loaded(cmd, load, &a, json);
    mrc_topo_t *t = NULL;
    st = mrc_topo_create(pos[0], &t);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    if ((rc = cli_fail_links(cmd, &o.fails, &t, NULL)) != CLI_OK) {
        mrc_topo_destroy(t);
        return rc;
    }
    mrc_embed_config_t ec = {.strategy = strategy, .groups = groups,
                             .replica_size = a.replica};
    if (!sweep_range && !cmp && !wl)
        cli_report_failed_links(json ? stderr : stdout, t, &ec);
    if (wl) {
        rc = workload(cmd, wl, t, &ec, &a.cfg, json);
    } else if (sweep_range) {
        rc = sweep(cmd, &a, t, sweep_range, prefix);
    } else if (cmp) {
        rc = compare(cmd, &a, t, json);
    } else {
        mrc_sim_result_t *r = NULL;
        int rings = 0;
        st = simulate(&a, t, strategy ? strategy : "auto", a.size, &r,
                      &rings);
        if (st != MRC_OK)
            rc = cli_fail(cmd, st);
        else
            print_one(&a, t, strategy ? strategy : "auto", r, json);
        mrc_sim_result_destroy(r);
    }
    mrc_topo_destroy(t);
    return rc;
}
