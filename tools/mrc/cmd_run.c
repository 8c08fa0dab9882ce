/*
 * mrc run: collectives on real data in threads, checked element by element
 * against a sequential reduction, timed, and printed as nccl-tests rows.
 * With no arguments it is the main job: every collective on hcm8 for each
 * strategy that applies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/comm_internal.h"
#include "cli.h"
#include "opts.h"
#include "reduce/reduce.h"
#include "run.h"

void help_run(void)
{
    printf(
        "usage: mrc run [--topology SPEC] [--strategy S] [--groups G | "
        "--replica-size R]\n"
        "               [--collective C|all] [--count N] [--dtype T] [--op "
        "O]\n"
        "               [--iters K] [--warmup W] [--chunk BYTES] [--json]\n"
        "               [--max-memory SIZE] [--algo A] [--hosts H]\n"
        "               [--predict PROFILE]\n"
        "               [--fail-link A-B[:K]]...\n"
        "       mrc run --load IMAGE [--iters K] [--warmup W] [--json]\n"
        "               [--max-memory SIZE] [--predict PROFILE]\n"
        "\n"
        "Runs collectives on real data with one thread per node, checks every\n"
        "element exactly against a sequential reduction, and prints a row per\n"
        "strategy and collective, as nccl-tests does:\n"
        "  size (bytes of the largest buffer), count (its elements), type,\n"
        "  redop, root, time (us per call), algbw = size / time, busbw = "
        "algbw\n"
        "  x 2(n-1)/n for allreduce, (n-1)/n for reduce-scatter and "
        "allgather,\n"
        "  1 for reduce and broadcast, #wrong, and the embedding's "
        "efficiency.\n"
        "Defaults: --topology hcm8, every strategy that applies, every\n"
        "collective, --count 1M elements (per node; reduce-scatter and\n"
        "allgather blocks are count/n), float32, sum, 5 iterations after 1\n"
        "warm-up call (--warmup W: W calls, then 20 ms more of them,\n"
        "since idle cores run their first calls cold; 0: none).\n"
        "Any wrong element or failed call makes the exit status 1;\n"
        "a failed call prints its error and no row.\n"
        "--algo: the family (rings, direct1, direct2, tree, hier or auto;\n"
        "default $MRC_ALGO, else auto: the selector's choice per call); a\n"
        "call it does not apply to prints why and makes the status 2.\n"
        "--hosts: the nodes taken to be on H hosts in equal blocks (for\n"
        "hier; default $MRC_HOSTS, else 1).\n"
        "--load: runs a saved image ('mrc compile ... -o IMAGE') itself,\n"
        "checked when loaded, on the topology it carries: one row, its\n"
        "collective, count, type, operator and root; the options that shape\n"
        "the program (--topology, --strategy, --groups, --collective,\n"
        "--count, --dtype, --op, --chunk, --algo, --hosts) are the image's\n"
        "and refused with it (exit 2).\n"
        "--predict PROFILE: beside each row, the simulator's time for the\n"
        "very program the row ran (pipelined, with the host profile's node\n"
        "model; 'mrc calibrate -o PROFILE') and predicted / measured\n"
        "--max-memory: what the buffers and plans of all ranks may take\n"
        "(default half of physical memory, or MRC_MAX_MEMORY); more is\n"
        "refused up front with the figure.\n"
        "--groups: sizes (4+2+2) or node lists (0,4+1,5+2,6+3,7; a list's\n"
        "order is the ranks' order in the group). --fail-link: links taken\n"
        "out first; algbw and efficiency before and after go to stderr.\n"
        "Both as in 'mrc help rings'.\n");
}

/* Runs the row on all ranks and predicts it (--predict): 1 if the
 * prediction could not be had. A failed run leaves its error in error[]. */
static int measure(const char *cmd, mrc_comm_t **comms, int nranks, row_t *row,
                   char *error, size_t errlen)
{
    if (run_row(comms, nranks, row, error, errlen) != 0) {
        row->failed = 1;
        snprintf(error, errlen, "out of memory");
    }
    return run_predict(cmd, comms[0], row) != 0;
}

/* --iters and --warmup into base. */
static int read_iters(const char *cmd, const char *iters, const char *warmup,
                      run_cfg_t *base)
{
    long it = 0, wu = 0;
    if (mrc__parse_long(iters, 1, 1000000, &it) ||
        mrc__parse_long(warmup, 0, 1000000, &wu))
        return cli_usage(cmd, "run", "--iters and --warmup take counts");
    base->iters = (int)it;
    base->warmup = (int)wu;
    return CLI_OK;
}

/* What refuses to run the image in threads: too many nodes, an avg the
 * C API runs otherwise, buffers beyond the memory limit. */
static int loaded_refusal(const char *cmd, const char *path,
                          const mrc_program_t *p)
{
    int nranks = p->num_nodes;
    if (nranks > 256)
        return cli_usage(cmd, "run",
                         "%s has %d nodes: threads run at most "
                         "256",
                         path, nranks);
    /* The C API runs avg on integers as a sum of wider words (see
     * mrc__avg_words), never as such a program. */
    if (p->cfg.op == MRC_AVG && p->cfg.collective != MRC_ALLGATHER &&
        p->cfg.collective != MRC_BROADCAST && mrc__avg_words(p->cfg.dtype) != 0)
        return cli_usage(cmd, "run",
                         "%s is an avg of %s, which the "
                         "collectives run as a sum of 64-bit words, not as "
                         "this program; compile a sum (or a float type) to "
                         "run it",
                         path, mrc_dtype_name(p->cfg.dtype));
    mrc_status_t st = run_check_buffers(p->cfg.count, nranks, p->cfg.dtype);
    return st == MRC_OK ? CLI_OK : cli_fail(cmd, st);
}

/* The image's row: run, checked, printed; the communicators are left to
 * the caller. */
static int loaded_row(const char *cmd, mrc_comm_t **comms, int nranks,
                      row_t *row, const char *name, int json)
{
    char error[600] = "";
    int unpredicted = measure(cmd, comms, nranks, row, error, sizeof error);
    if (row->failed)
        fprintf(stderr, "%s: %s %s: %s\n", cmd, row->strategy,
                mrc_collective_name(row->rc.coll), error);
    else if (json)
        run_print_json(name, nranks, row, 1);
    else {
        run_print_header(row->rc.predict != NULL);
        run_print_row(row);
    }
    return row->failed ? (row->unsupported ? CLI_USAGE : CLI_FAIL)
           : row->wrong > 0 || unpredicted ? CLI_FAIL
                                           : CLI_OK;
}

/* --load IMAGE: the image's program itself, on the topology it carries,
 * one thread per node; one row, checked as every other run. */
static int run_loaded(const char *cmd, const char *path, run_cfg_t base,
                      int json)
{
    mrc_program_t *p = NULL;
    mrc__image_origin_t origin;
    mrc_topo_t *t = NULL;
    char name[256]; /* the topology's (a spec, or a file's name) */
    int rc = cli_load_image_topology(cmd, path, &p, &origin, &t);
    if (rc != CLI_OK)
        return rc;
    int nranks = p->num_nodes;
    if ((rc = loaded_refusal(cmd, path, p)) != CLI_OK)
        goto fail;
    row_t row;
    memset(&row, 0, sizeof row);
    row.strategy = origin.strategy ? origin.strategy : "(image)";
    row.efficiency = origin.efficiency;
    row.rc = base;
    row.rc.coll = p->cfg.collective;
    row.rc.count = p->cfg.count;
    row.rc.dtype = p->cfg.dtype;
    row.rc.op = p->cfg.op;
    row.rc.root = p->cfg.root;
    mrc_comm_t **comms = calloc((size_t)nranks, sizeof *comms);
    if (!comms) {
        rc = cli_fail(cmd, mrc__error(MRC_ERR_NO_MEMORY, "out of memory"));
        goto fail;
    }
    /* (the communicators take over the program and the topology) */
    snprintf(name, sizeof name, "%s", mrc_topo_name(t));
    mrc_status_t st = mrc__comm_init_program(comms, nranks, t, p, 0);
    t = NULL;
    p = NULL;
    if (st != MRC_OK) {
        free(comms);
        rc = cli_fail(cmd, st);
        goto fail;
    }
    rc = loaded_row(cmd, comms, nranks, &row, name, json);
    for (int r = 0; r < nranks; r++)
        mrc_comm_destroy(comms[r]);
    free(comms);
fail:
    mrc_topo_destroy(t);
    mrc_program_destroy(p);
    mrc__image_origin_free(&origin);
    return rc;
}

/* The options of mrc run, read. */
typedef struct run_opts {
    cli_stage_t o;
    const char *topology;
    run_cfg_t base;
    mrc_profile_t profile; /* --predict's (base.predict points here) */
    int all;               /* --collective all (the default) */
    mrc_collective_t only; /* else the one collective */
    uint64_t count, chunk;
    long replica;
    int hosts; /* 0: $MRC_HOSTS, as the communicator takes it */
} run_opts_t;

/* --predict PROFILE: a profile of the threads transport, loaded. */
static int read_predict(const char *cmd, const char *predict, run_opts_t *r)
{
    if (!predict)
        return CLI_OK;
    mrc_status_t ps = mrc_profile_load(predict, &r->profile);
    if (ps != MRC_OK)
        return cli_fail(cmd, ps);
    /* The row is measured on threads: another transport's profile
     * would predict another run. */
    if (strcmp(r->profile.transport, "threads") != 0)
        return cli_usage(cmd, "run",
                         "--predict %s: a profile of the "
                         "%s transport; mrc run runs threads ('mrc "
                         "calibrate --transport threads')",
                         predict, r->profile.transport);
    r->base.predict = &r->profile;
    return CLI_OK;
}

/* Without --load: what to run, with the defaults of the main job. */
static int read_shape(const char *cmd, const char *iters, const char *warmup,
                      run_opts_t *r)
{
    cli_stage_t *o = &r->o;
    const char *coll = o->coll ? o->coll : "all";
    o->count = o->count ? o->count : "1M";
    r->topology = r->topology ? r->topology : "hcm8";
    mrc_status_t st =
        mrc_dtype_parse(o->dtype ? o->dtype : "float32", &r->base.dtype);
    if (st == MRC_OK)
        st = mrc_op_parse(o->op ? o->op : "sum", &r->base.op);
    r->all = strcmp(coll, "all") == 0;
    r->only = MRC_ALLREDUCE;
    if (st == MRC_OK && !r->all)
        st = mrc_collective_parse(coll, &r->only);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    int rc = cli_stage_count(cmd, "run", o, &r->count);
    if (rc == CLI_OK)
        rc = cli_hosts(cmd, "run", o->hosts, 0, &r->hosts);
    if (rc == CLI_OK)
        rc = read_iters(cmd, iters, warmup, &r->base);
    if (rc == CLI_OK)
        rc = cli_stage_chunk(cmd, "run", o, &r->chunk);
    if (rc == CLI_OK)
        rc = cli_stage_replica(cmd, "run", o, &r->replica);
    return rc;
}

/* The run across strategies: the communicators of the strategy in turn,
 * the rows so far, and what went wrong. */
typedef struct run_job {
    const char *cmd;
    const run_opts_t *r;
    const mrc_topo_t *t;
    const char *failed; /* the failed links, joined */
    int nranks;
    mrc_comm_t **comms;
    row_t *rows;
    int nrows, header, bad, usage;
} run_job_t;

/* Each collective asked for on the communicators of strategy `name`: a
 * row each, printed as it comes (JSON waits for all of them). */
static void run_collectives(run_job_t *j, const char *name, double eff)
{
    const run_opts_t *r = j->r;
    int n = mrc_comm_size(j->comms[0]), json = r->o.json;
    for (int c = 0; c < MRC_NUM_COLLECTIVES; c++) {
        if (!r->all && c != (int)r->only)
            continue;
        row_t *row = &j->rows[j->nrows++];
        row->strategy = name;
        row->efficiency = eff;
        row->rc = r->base;
        row->rc.coll = (mrc_collective_t)c;
        int block = c == MRC_REDUCE_SCATTER || c == MRC_ALLGATHER;
        row->rc.count = block ? (size_t)r->count / (size_t)n : (size_t)r->count;
        char error[600] = "";
        j->bad |=
            measure(j->cmd, j->comms, j->nranks, row, error, sizeof error);
        /* A failed call has no figures: its error, never a row. */
        if (!row->failed && !j->header) {
            run_print_header(r->base.predict != NULL);
            j->header = 1;
        }
        if (!row->failed && !json)
            run_print_row(row);
        if (row->failed)
            fprintf(stderr, "mrc run: %s %s: %s\n", name,
                    mrc_collective_name(row->rc.coll), error);
        j->bad |= row->failed || row->wrong > 0;
        j->usage |= row->unsupported;
    }
}

/* One strategy: its embedding's figures, its communicators, its rows.
 * 1: not for this topology (skipped); else the CLI status. */
static int run_strategy(run_job_t *j, const char *name)
{
    const run_opts_t *r = j->r;
    const cli_stage_t *o = &r->o;
    mrc_embed_config_t ec = {
        .strategy = name, .groups = o->groups, .replica_size = (int)r->replica};
    mrc_embedding_t *e = NULL;
    mrc_status_t st = mrc_embed_create(j->t, &ec, &e);
    if (st == MRC_ERR_NOT_APPLICABLE && !o->strategy)
        return 1; /* not for this topology: the others */
    if (st != MRC_OK)
        return cli_fail(j->cmd, st);
    mrc_embed_figures_t fig;
    mrc_embed_figures(e, &fig);
    cli_report_failed_links(stderr, j->t, &ec);
    mrc_embed_destroy(e);
    mrc_config_t cfg = {.topology = r->topology,
                        .strategy = name,
                        .groups = o->groups,
                        .replica_size = (int)r->replica,
                        .chunk_bytes = (size_t)r->chunk,
                        .algo = o->algo,
                        .hosts = r->hosts,
                        .failed_links = j->failed};
    st = mrc_comm_init_all(j->comms, j->nranks, &cfg);
    if (st != MRC_OK)
        return cli_fail(j->cmd, st);
    run_collectives(j, name, fig.efficiency);
    for (int k = 0; k < j->nranks; k++)
        mrc_comm_destroy(j->comms[k]);
    return CLI_OK;
}

/* Every strategy asked for (all that apply by default), in the order of
 * mrc_embed_strategies(); stops at the first that went wrong. */
static int run_strategies(run_job_t *j)
{
    const char *strategy = j->r->o.strategy;
    const char *const *names = mrc_embed_strategies();
    int n = 0;
    while (names[n])
        n++;
    for (int si = 0; names[si] && !j->bad; si++) {
        if (strategy && si > 0)
            break;
        if (!strategy) /* the table goes elsewhere: say how far it is */
            cli_progress(1, "mrc run: strategy %d of %d, %s", si + 1, n,
                         names[si]);
        int rc = run_strategy(j, strategy ? strategy : names[si]);
        if (rc != CLI_OK && rc != 1) {
            j->bad = 1;
            cli_progress(1, NULL);
            return rc;
        }
    }
    cli_progress(1, NULL);
    return CLI_OK;
}

/* The topology with its failed links, for threads and the buffers. */
static int open_topology(const char *cmd, const run_opts_t *r, mrc_topo_t **t,
                         char *failed)
{
    mrc_status_t st = mrc_topo_create(r->topology, t);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    int rc = cli_fail_links(cmd, &r->o.fails, t, failed);
    if (rc != CLI_OK)
        return rc;
    int nranks = mrc_topo_num_nodes(*t);
    if (nranks > 256)
        return cli_usage(cmd, "run",
                         "%s has %d nodes: threads run at most "
                         "256",
                         r->topology, nranks);
    /* Every rank holds two buffers of count x ranks elements (the largest
     * layout of any collective) and one more. */
    st = run_check_buffers(r->count, nranks, r->base.dtype);
    return st == MRC_OK ? CLI_OK : cli_fail(cmd, st);
}

/* Without --load: every strategy and collective asked for. */
static int run_job(const char *cmd, const run_opts_t *r)
{
    mrc_topo_t *t = NULL;
    char failed[4096];
    int rc = open_topology(cmd, r, &t, failed);
    if (rc != CLI_OK) {
        mrc_topo_destroy(t);
        return rc;
    }
    run_job_t j = {.cmd = cmd,
                   .r = r,
                   .t = t,
                   .failed = failed,
                   .nranks = mrc_topo_num_nodes(t),
                   .header = r->o.json}; /* printed with the first row */
    j.comms = calloc((size_t)j.nranks, sizeof *j.comms);
    j.rows = calloc(64 * MRC_NUM_COLLECTIVES, sizeof *j.rows);
    if (!j.comms || !j.rows) {
        free(j.comms);
        free(j.rows);
        mrc_topo_destroy(t);
        return cli_fail(cmd, mrc__error(MRC_ERR_NO_MEMORY, "out of memory"));
    }
    rc = run_strategies(&j);
    /* Failed calls have no figures, so no rows (stderr has their errors);
     * the exit status says that something failed. */
    int kept = 0;
    for (int i = 0; i < j.nrows; i++)
        if (!j.rows[i].failed)
            j.rows[kept++] = j.rows[i];
    if (r->o.json)
        run_print_json(mrc_topo_name(t), j.nranks, j.rows, kept);
    free(j.comms);
    free(j.rows);
    mrc_topo_destroy(t);
    if (rc != CLI_OK)
        return rc;
    /* --algo that does not apply to a call is bad input, not a failure. */
    return j.usage ? CLI_USAGE : j.bad ? CLI_FAIL : CLI_OK;
}

int cmd_run(int argc, char **argv)
{
    const char *cmd = "mrc run";
    /* (the defaults of the options an image fixes are set after --load:
     * with it, any of them given is refused) */
    const char *iters = "5", *warmup = "1", *predict = NULL;
    const char *pos[1];
    int npos = 0;
    run_opts_t r;
    memset(&r, 0, sizeof r);
    const cli_opt_t own[] = {{"topology", 't', &r.topology, NULL},
                             {"iters", 0, &iters, NULL},
                             {"warmup", 0, &warmup, NULL},
                             {"predict", 0, &predict, NULL},
                             {0}};
    int rc = cli_stage_parse(cmd, "run",
                             CLI_STAGE_COUNT | CLI_STAGE_OP | CLI_STAGE_CHUNK,
                             own, NULL, argc, argv, &r.o, pos, 0, 0, &npos);
    if (rc == CLI_OK)
        rc = read_predict(cmd, predict, &r);
    if (rc != CLI_OK)
        return rc;
    if (r.o.load) {
        static const char *const fixed[] = {
            "topology", "strategy",  "groups", "replica-size", "collective",
            "count",    "dtype",     "op",     "chunk",        "algo",
            "hosts",    "fail-link", NULL};
        if ((rc = cli_stage_refuses(cmd, "run", &r.o, fixed)) != CLI_OK ||
            (rc = read_iters(cmd, iters, warmup, &r.base)) != CLI_OK)
            return rc;
        return run_loaded(cmd, r.o.load, r.base, r.o.json);
    }
    if ((rc = read_shape(cmd, iters, warmup, &r)) != CLI_OK)
        return rc;
    return run_job(cmd, &r);
}
