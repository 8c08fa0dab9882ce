/*
 * mrc sim --sweep: the sizes from MIN to MAX in powers of two for each
 * strategy that applies, simulated one by one with a progress line on a
 * terminal, written as CSV and JSON, and drawn (busbw against size) with
 * gnuplot when it is installed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_sim.h"

/* Sizes in a sweep: powers of two from 1 byte to 1 TiB. */
enum { SWEEP_MAX_SIZES = 41 };

/* What a sweep has written so far, and how far it got. */
typedef struct sweep {
    const char *cmd;
    const sim_args_t *a;
    const mrc_topo_t *t;
    uint64_t lo;
    int nsizes;
    mrc__strbuf_t csv, js;
    char *strategies[16]; /* those with a row, for the picture */
    int nstrat, rows;
    int total, done; /* the progress line */
} sweep_t;

/* MIN:MAX into the first size and the number of sizes; the prefix must
 * leave room for its extensions. CLI status. */
static int sweep_range(const char *cmd, const char *range, const char *prefix,
                       size_t room, sweep_t *sw)
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
    /* A prefix cut short would write somewhere else than asked. */
    if (strlen(prefix) + sizeof ".json" > room)
        return cli_usage(cmd, "sim", "-o PREFIX is longer than %zu bytes",
                         room - sizeof ".json");
    /* Powers of two from MIN while <= MAX, without wrapping past 2^63;
     * at most SWEEP_MAX_SIZES of them (1 byte to 1 TiB). */
    int nsizes = 1;
    for (uint64_t s = lo; s <= hi / 2 && s * 2 <= hi; s *= 2)
        nsizes++;
    if (nsizes > SWEEP_MAX_SIZES)
        return cli_usage(cmd, "sim",
                         "--sweep '%s' has %d sizes; at most %d "
                         "(such as 1:1T)",
                         range, nsizes, SWEEP_MAX_SIZES);
    sw->lo = lo;
    sw->nsizes = nsizes;
    return CLI_OK;
}

/* One size's row, in the CSV and in the JSON. */
static void sweep_row(sweep_t *sw, const char *name, uint64_t size,
                      const mrc_sim_result_t *r)
{
    mrc__sb_printf(&sw->csv,
                   "%s,%llu,%.6f,%.6f,%.6f,%.6f,%.6f,%.9g,"
                   "%.9g\n",
                   name, (unsigned long long)size, r->time_us, r->algbw_gbps,
                   r->busbw_gbps, r->bound_gbps, r->efficiency, r->energy_j,
                   r->energy_no_gating_j);
    mrc__sb_printf(&sw->js,
                   "%s\n  {\"strategy\": \"%s\", \"bytes\": "
                   "%llu, \"time_us\": %.6f, \"busbw_gbps\": "
                   "%.6f, \"efficiency\": %.6f, \"energy_j\": "
                   "%.9g, \"energy_no_gating_j\": %.9g}",
                   sw->rows++ ? "," : "", name, (unsigned long long)size,
                   r->time_us, r->busbw_gbps, r->efficiency, r->energy_j,
                   r->energy_no_gating_j);
}

/* Every size for one strategy (none where it does not apply). */
static mrc_status_t sweep_strategy(sweep_t *sw, const char *name)
{
    int any = 0;
    uint64_t size = sw->lo;
    for (int k = 0; k < sw->nsizes; k++, size *= 2, sw->done++) {
        char b[40];
        cli_progress(
            0, "%s %d/%d %s %llu B",
            cli_progress_bar(sw->total ? (double)(sw->done + 1) / sw->total : 1,
                             b, sizeof b),
            sw->done + 1, sw->total, name, (unsigned long long)size);
        mrc_sim_result_t *r = NULL;
        int rings = 0;
        mrc_status_t st = sim_simulate(sw->a, sw->t, name, size, &r, &rings);
        if (st == MRC_ERR_NOT_APPLICABLE)
            continue;
        if (st != MRC_OK)
            return st;
        any = 1;
        sweep_row(sw, name, size, r);
        mrc_sim_result_destroy(r);
    }
    if (any && sw->nstrat < 16)
        sw->strategies[sw->nstrat++] = (char *)name;
    return MRC_OK;
}

/* The strategies asked for (all of them by default), each at every
 * size. */
static mrc_status_t sweep_all(sweep_t *sw)
{
    const char *const *names = mrc_embed_strategies();
    const char *only = sw->a->strategy;
    for (int i = 0; names[i]; i++)
        sw->total += !only || strcmp(only, names[i]) == 0;
    sw->total *= sw->nsizes;
    mrc_status_t st = MRC_OK;
    for (int i = 0; names[i] && st == MRC_OK; i++)
        if (!only || strcmp(only, names[i]) == 0)
            st = sweep_strategy(sw, names[i]);
    cli_progress(0, NULL);
    return st;
}

/* The picture: busbw against size, one line per strategy. No file name
 * is in the script (the data is inline, the SVG comes back on gnuplot's
 * standard output into an outfile), and names reach it only as escaped
 * strings, with enhanced text off so that they show as they are. */
static void sweep_plot(const sweep_t *sw, const char *csv_data, size_t csv_len,
                       const char *path)
{
    mrc__strbuf_t gp, title;
    mrc__sb_init(&gp);
    mrc__sb_init(&title);
    mrc__sb_printf(&title, "%s on %s (simulated)",
                   mrc_collective_name(sw->a->coll), mrc_topo_name(sw->t));
    mrc__sb_puts(&gp, "set terminal svg size 800,500 dynamic noenhanced "
                      "font 'Helvetica,11'\n$data << EOD\n");
    mrc__sb_append(&gp, csv_data, csv_len);
    mrc__sb_puts(&gp, "EOD\nset datafile separator ','\nset logscale x 2\n"
                      "set format x '%.0s%cB'\nset xlabel 'size per node'\n"
                      "set ylabel 'busbw (GB/s)'\nset key left top\n"
                      "set grid\nset title ");
    mrc__sb_gnuplot_string(&gp, title.failed ? "" : title.data);
    mrc__sb_puts(&gp, "\nplot ");
    for (int i = 0; i < sw->nstrat; i++) {
        mrc__sb_puts(&gp, i ? ", $data using (strcol(1) eq "
                            : "$data using (strcol(1) eq ");
        mrc__sb_gnuplot_string(&gp, sw->strategies[i]);
        mrc__sb_puts(&gp, " ? $2 : 1/0):5 with linespoints title ");
        mrc__sb_gnuplot_string(&gp, sw->strategies[i]);
    }
    mrc__sb_puts(&gp, "\n");
    char *const gnuplot[] = {"gnuplot", NULL};
    if (!gp.failed && sw->nstrat > 0 &&
        cli_filter_to_file(sw->cmd, gnuplot, gp.data, path, 1) == CLI_OK)
        printf("wrote %s\n", path);
    mrc__sb_free(&title);
    mrc__sb_free(&gp);
}

/* PREFIX.csv and PREFIX.json, then the picture; takes the buffers. */
static int sweep_write(sweep_t *sw, const char *prefix, char *path, size_t room)
{
    const char *cmd = sw->cmd;
    int rc = CLI_OK;
    snprintf(path, room, "%s.csv", prefix);
    if (!sw->csv.failed)
        rc = cli_write_file(cmd, path, sw->csv.data, sw->csv.len);
    snprintf(path, room, "%s.json", prefix);
    if (rc == CLI_OK && !sw->js.failed)
        rc = cli_write_file(cmd, path, sw->js.data, sw->js.len);
    size_t csv_len = sw->csv.len;
    char *csv_data = mrc__sb_take(&sw->csv);
    mrc__sb_free(&sw->js);
    if (rc == CLI_OK && !csv_data) {
        fprintf(stderr, "%s: out of memory\n", cmd);
        rc = CLI_FAIL;
    }
    if (rc != CLI_OK) {
        free(csv_data);
        return rc;
    }
    printf("wrote %s.csv and %s.json (%d rows)\n", prefix, prefix, sw->rows);
    snprintf(path, room, "%s.svg", prefix);
    sweep_plot(sw, csv_data, csv_len, path);
    free(csv_data);
    return CLI_OK;
}

int sim_sweep(const char *cmd, const sim_args_t *a, const mrc_topo_t *t,
              const char *range, const char *prefix)
{
    char path[512];
    sweep_t sw;
    memset(&sw, 0, sizeof sw);
    sw.cmd = cmd;
    sw.a = a;
    sw.t = t;
    int rc = sweep_range(cmd, range, prefix, sizeof path, &sw);
    if (rc != CLI_OK)
        return rc;
    mrc__sb_init(&sw.csv);
    mrc__sb_init(&sw.js);
    mrc__sb_puts(&sw.csv, "strategy,bytes,time_us,algbw_gbps,busbw_gbps,"
                          "bound_gbps,efficiency,energy_j,"
                          "energy_no_gating_j\n");
    mrc__sb_puts(&sw.js, "{\"topology\": ");
    mrc__sb_json_string(&sw.js, mrc_topo_name(t));
    mrc__sb_printf(&sw.js, ", \"collective\": \"%s\", \"results\": [",
                   mrc_collective_name(a->coll));
    mrc_status_t st = sweep_all(&sw);
    if (st != MRC_OK) {
        mrc__sb_free(&sw.csv);
        mrc__sb_free(&sw.js);
        return cli_fail(cmd, st);
    }
    mrc__sb_puts(&sw.js, "\n]}\n");
    return sweep_write(&sw, prefix, path, sizeof path);
}
