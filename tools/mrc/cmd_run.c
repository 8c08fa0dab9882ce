/*
 * mrc run: collectives on real data in threads, checked element by element
 * against a sequential reduction, timed, and printed as nccl-tests rows.
 * With no arguments it is the main job: every collective on hcm8 for each
 * strategy that applies.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/comm_internal.h"
#include "cli.h"
#include "opts.h"
#include "reduce/reduce.h"
#include "reference.h"

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
        "  redop, root, time (us per call), algbw = size / time, busbw = algbw\n"
        "  x 2(n-1)/n for allreduce, (n-1)/n for reduce-scatter and allgather,\n"
        "  1 for reduce and broadcast, #wrong, and the embedding's efficiency.\n"
        "Defaults: --topology hcm8, every strategy that applies, every\n"
        "collective, --count 1M elements (per node; reduce-scatter and\n"
        "allgather blocks are count/n), float32, sum, 5 iterations after 1\n"
        "warm-up. Any wrong element or failed call makes the exit status 1;\n"
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

typedef struct run_cfg {
    mrc_collective_t coll;
    size_t count; /* API count: per node, or per block for RS/AG */
    mrc_dtype_t dtype;
    mrc_op_t op;
    int root, iters, warmup;
    const mrc_profile_t *predict; /* --predict: the node model's profile */
} run_cfg_t;

typedef struct shared_run {
    pthread_barrier_t barrier;
    const run_cfg_t *rc;
    double t0, t1;
} shared_run_t;

typedef struct worker {
    shared_run_t *sh;
    mrc_comm_t *comm;
    int node; /* the thread's: the clock is node 0's (rank 0 is each
                 group's) */
    mrc_status_t st;
    char error[512];
    size_t wrong;
} worker_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *work(void *arg)
{
    worker_t *w = arg;
    const run_cfg_t *rc = w->sh->rc;
    int n = mrc_comm_size(w->comm), rank = mrc_comm_rank(w->comm);
    size_t es = mrc_dtype_size(rc->dtype), big = 0, bytes = 0;
    char *send = NULL, *recv = NULL;
    /* cmd_run refused sizes that overflow; checked again all the same. */
    if (mrc__mul_size(rc->count, (size_t)n, &big) != 0 ||
        mrc__add_size(big, 1, &big) != 0 ||
        mrc__mul_size(big, es, &bytes) != 0)
        w->st = mrc__error(MRC_ERR_INVALID_ARG, "count %zu is too large",
                           rc->count);
    else if (!(send = malloc(bytes)) || !(recv = malloc(bytes)))
        w->st = mrc__error(MRC_ERR_NO_MEMORY, "out of memory for two "
                           "buffers of %zu bytes", bytes);
    else
        w->st = MRC_OK;
    if (w->st == MRC_OK) {
        mrc__ref_fill(send, rc->coll, rc->count, rank, n, rc->dtype, rc->op);
        memset(recv, 0, bytes); /* touch every page before timing */
    }
    for (int i = 0; i < rc->warmup && w->st == MRC_OK; i++)
        w->st = mrc__ref_call(rc->coll, send, recv, rc->count, rc->dtype,
                              rc->op, rc->root, w->comm);
    pthread_barrier_wait(&w->sh->barrier);
    if (w->node == 0)
        w->sh->t0 = now_s();
    for (int i = 0; i < rc->iters && w->st == MRC_OK; i++)
        w->st = mrc__ref_call(rc->coll, send, recv, rc->count, rc->dtype,
                              rc->op, rc->root, w->comm);
    pthread_barrier_wait(&w->sh->barrier);
    if (w->node == 0)
        w->sh->t1 = now_s();
    /* The checked run: fresh inputs, a cleared output, every element. */
    if (w->st == MRC_OK) {
        mrc__ref_fill(send, rc->coll, rc->count, rank, n, rc->dtype, rc->op);
        memset(recv, 0x5a, bytes);
        w->st = mrc__ref_call(rc->coll, send, recv, rc->count, rc->dtype,
                              rc->op, rc->root, w->comm);
    }
    if (w->st == MRC_OK)
        w->wrong = mrc__ref_check(recv, rc->coll, rc->count, rank, n,
                                  rc->root, rc->dtype, rc->op);
    else
        snprintf(w->error, sizeof w->error, "%s", mrc_last_error());
    free(send);
    free(recv);
    return NULL;
}

typedef struct row {
    const char *strategy;
    double efficiency;
    run_cfg_t rc;
    size_t bytes, elems;
    double time_us, algbw, busbw;
    size_t wrong;
    int failed;
    int unsupported; /* a call refused the family asked for (--algo) */
    double predicted_us; /* --predict: the simulator's time; 0: none */
} row_t;

/* --predict: the simulator's time for the program the row's calls ran
 * (pipelined, as the executor runs chunks), with the profile's node
 * model; -1 (and the error on stderr) if it cannot be had. */
static int predict_row(const char *cmd, const mrc_comm_t *c, row_t *row)
{
    row->predicted_us = 0;
    if (!row->rc.predict || row->failed)
        return 0;
    mrc_sim_config_t cfg = {.mode = MRC_SIM_PIPELINED,
                            .profile = row->rc.predict};
    mrc_sim_result_t *r = NULL;
    mrc_status_t st = mrc__comm_predict(c, &cfg, &r);
    if (st != MRC_OK) {
        fprintf(stderr, "%s: --predict: %s\n", cmd, mrc_last_error());
        return -1;
    }
    row->predicted_us = r->time_us;
    mrc_sim_result_destroy(r);
    return 0;
}

/* Runs one collective on all ranks; fills the row. */
static int run_one(mrc_comm_t **comms, int nranks, row_t *row, char *error,
                   size_t errlen)
{
    shared_run_t sh;
    memset(&sh, 0, sizeof sh);
    sh.rc = &row->rc;
    pthread_barrier_init(&sh.barrier, NULL, (unsigned)nranks);
    worker_t *w = calloc((size_t)nranks, sizeof *w);
    pthread_t *th = calloc((size_t)nranks, sizeof *th);
    if (!w || !th) {
        free(w);
        free(th);
        pthread_barrier_destroy(&sh.barrier);
        return -1;
    }
    for (int r = 0; r < nranks; r++) {
        w[r].sh = &sh;
        w[r].comm = comms[r];
        w[r].node = r;
        pthread_create(&th[r], NULL, work, &w[r]);
    }
    row->wrong = 0;
    row->failed = 0;
    for (int r = 0; r < nranks; r++) {
        pthread_join(th[r], NULL);
        row->wrong += w[r].wrong;
        if (w[r].st != MRC_OK && !row->failed) {
            row->failed = 1;
            row->unsupported = w[r].st == MRC_ERR_UNSUPPORTED;
            snprintf(error, errlen, "rank %d: %s", r, w[r].error);
        }
    }
    int n = mrc_comm_size(comms[0]);
    size_t es = mrc_dtype_size(row->rc.dtype);
    int block = row->rc.coll == MRC_REDUCE_SCATTER ||
                row->rc.coll == MRC_ALLGATHER;
    row->elems = row->rc.count * (block ? (size_t)n : 1);
    row->bytes = row->elems * es;
    double t = row->rc.iters > 0 ? (sh.t1 - sh.t0) / row->rc.iters : 0;
    row->time_us = t * 1e6;
    row->algbw = t > 0 ? (double)row->bytes / t / 1e9 : 0;
    double f = 1;
    if (row->rc.coll == MRC_ALLREDUCE)
        f = 2.0 * (n - 1) / n;
    else if (block)
        f = (double)(n - 1) / n;
    row->busbw = row->algbw * f;
    free(w);
    free(th);
    pthread_barrier_destroy(&sh.barrier);
    return 0;
}

static void print_header(int predict)
{
    printf("%12s %12s %8s %6s %5s %10s %8s %8s %7s  %-16s %s%s\n", "size",
           "count", "type", "redop", "root", "time(us)", "algbw", "busbw",
           "#wrong", "strategy", "efficiency",
           predict ? "  collective    pred(us) pred/meas" : "");
    printf("%12s %12s %8s %6s %5s %10s %8s %8s %7s\n", "(B)", "(elements)",
           "", "", "", "", "(GB/s)", "(GB/s)", "");
}

static void print_row(const row_t *r)
{
    int reducing = r->rc.coll != MRC_ALLGATHER &&
                   r->rc.coll != MRC_BROADCAST;
    int rooted = r->rc.coll == MRC_REDUCE || r->rc.coll == MRC_BROADCAST;
    char root[16], wrong[24];
    snprintf(root, sizeof root, "%d", r->rc.root);
    snprintf(wrong, sizeof wrong, "%zu", r->wrong);
    printf("%12zu %12zu %8s %6s %5s %10.1f %8.2f %8.2f %7s  %-16s %.4f  %s",
           r->bytes, r->elems, mrc_dtype_name(r->rc.dtype),
           reducing ? mrc_op_name(r->rc.op) : "none", rooted ? root : "-1",
           r->time_us, r->algbw, r->busbw,
           r->failed ? "FAIL" : wrong, r->strategy, r->efficiency,
           mrc_collective_name(r->rc.coll));
    if (r->rc.predict)
        printf("%*s %9.1f %9.3f", 12 - (int)strlen(mrc_collective_name(
                                           r->rc.coll)),
               "", r->predicted_us,
               r->time_us > 0 ? r->predicted_us / r->time_us : 0);
    printf("\n");
}

/* The rows as one JSON object. */
static void print_json(const char *topology, int nranks, const row_t *rows,
                       int nrows)
{
    char *topo = cli_json_quote(topology);
    printf("{\"topology\": %s, \"nodes\": %d, \"results\": [\n", topo,
           nranks);
    free(topo);
    for (int i = 0; i < nrows; i++) {
        const row_t *r = &rows[i];
        char *strat = cli_json_quote(r->strategy);
        printf("  {\"strategy\": %s, \"efficiency\": %.6f, "
               "\"collective\": \"%s\", \"bytes\": %zu, \"count\": %zu, "
               "\"dtype\": \"%s\", \"op\": \"%s\", \"root\": %d, "
               "\"time_us\": %.3f, \"algbw_gbps\": %.4f, \"busbw_gbps\": "
               "%.4f, \"wrong\": %zu, \"ok\": %s",
               strat, r->efficiency, mrc_collective_name(r->rc.coll),
               r->bytes, r->elems, mrc_dtype_name(r->rc.dtype),
               mrc_op_name(r->rc.op), r->rc.root, r->time_us, r->algbw,
               r->busbw, r->wrong, r->failed ? "false" : "true");
        if (r->rc.predict)
            printf(", \"predicted_us\": %.3f, \"predicted_over_measured\": "
                   "%.4f",
                   r->predicted_us,
                   r->time_us > 0 ? r->predicted_us / r->time_us : 0);
        printf("}%s\n", i + 1 < nrows ? "," : "");
        free(strat);
    }
    printf("]}\n");
}

/* Bytes the buffers of nranks ranks take (two of count x ranks elements
 * and one more each): refused with the figure rather than found out by
 * malloc or by the kernel. */
static mrc_status_t check_buffers(uint64_t count, int nranks, mrc_dtype_t dt)
{
    char what[64];
    snprintf(what, sizeof what, "buffers (%d ranks, two each)", nranks);
    uint64_t es = mrc_dtype_size(dt);
    uint64_t per_rank = mrc__sat_mul_add(
        mrc__sat_mul_add(count, (uint64_t)nranks, 1), 2 * es, 0);
    return mrc__check_memory(mrc__sat_mul_add(per_rank, (uint64_t)nranks, 0),
                             what);
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
    mrc_status_t st = MRC_OK;
    int nranks = p->num_nodes;
    if (st == MRC_OK && nranks > 256) {
        rc = cli_usage(cmd, "run", "%s has %d nodes: threads run at most "
                       "256", path, nranks);
        goto fail;
    }
    /* The C API runs avg on integers as a sum of wider words (see
     * mrc__avg_words), never as such a program. */
    if (st == MRC_OK && p->cfg.op == MRC_AVG &&
        p->cfg.collective != MRC_ALLGATHER &&
        p->cfg.collective != MRC_BROADCAST &&
        mrc__avg_words(p->cfg.dtype) != 0) {
        rc = cli_usage(cmd, "run", "%s is an avg of %s, which the "
                       "collectives run as a sum of 64-bit words, not as "
                       "this program; compile a sum (or a float type) to "
                       "run it", path, mrc_dtype_name(p->cfg.dtype));
        goto fail;
    }
    if (st == MRC_OK)
        st = check_buffers(p->cfg.count, nranks, p->cfg.dtype);
    if (st != MRC_OK) {
        rc = cli_fail(cmd, st);
        goto fail;
    }
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
    st = mrc__comm_init_program(comms, nranks, t, p, 0);
    t = NULL;
    p = NULL;
    if (st != MRC_OK) {
        free(comms);
        rc = cli_fail(cmd, st);
        goto fail;
    }
    char error[600] = "";
    if (run_one(comms, nranks, &row, error, sizeof error) != 0) {
        row.failed = 1;
        snprintf(error, sizeof error, "out of memory");
    }
    int unpredicted = predict_row(cmd, comms[0], &row) != 0;
    if (row.failed)
        fprintf(stderr, "%s: %s %s: %s\n", cmd, row.strategy,
                mrc_collective_name(row.rc.coll), error);
    else if (json)
        print_json(name, nranks, &row, 1);
    else {
        print_header(base.predict != NULL);
        print_row(&row);
    }
    for (int r = 0; r < nranks; r++)
        mrc_comm_destroy(comms[r]);
    free(comms);
    rc = row.failed ? (row.unsupported ? CLI_USAGE : CLI_FAIL)
                    : row.wrong > 0 || unpredicted ? CLI_FAIL : CLI_OK;
fail:
    mrc_topo_destroy(t);
    mrc_program_destroy(p);
    mrc__image_origin_free(&origin);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    const char *cmd = "mrc run";
    /* (the defaults of the options an image fixes are set after --load:
     * with it, any of them given is refused) */
    const char *topology = NULL, *iters = "5", *warmup = "1",
               *predict = NULL;
    const char *pos[1];
    int npos = 0;
    const cli_opt_t own[] = {{"topology", 't', &topology, NULL},
                             {"iters", 0, &iters, NULL},
                             {"warmup", 0, &warmup, NULL},
                             {"predict", 0, &predict, NULL},
                             {0}};
    cli_stage_t o;
    int rc = cli_stage_parse(cmd, "run", CLI_STAGE_COUNT | CLI_STAGE_OP |
                                             CLI_STAGE_CHUNK,
                             own, NULL, argc, argv, &o, pos, 0, 0, &npos);
    if (rc != CLI_OK)
        return rc;
    const char *strategy = o.strategy, *groups = o.groups, *algo = o.algo;
    run_cfg_t base = {0};
    mrc_profile_t profile;
    if (predict) {
        mrc_status_t ps = mrc_profile_load(predict, &profile);
        if (ps != MRC_OK)
            return cli_fail(cmd, ps);
        /* The row is measured on threads: another transport's profile
         * would predict another run. */
        if (strcmp(profile.transport, "threads") != 0)
            return cli_usage(cmd, "run", "--predict %s: a profile of the "
                             "%s transport; mrc run runs threads ('mrc "
                             "calibrate --transport threads')",
                             predict, profile.transport);
        base.predict = &profile;
    }
    uint64_t n64 = 0, cb = 0;
    long it = 0, wu = 0, rs = 0;
    if (o.load) {
        static const char *const fixed[] = {
            "topology", "strategy", "groups", "replica-size", "collective",
            "count", "dtype", "op", "chunk", "algo", "hosts", "fail-link",
            NULL};
        if ((rc = cli_stage_refuses(cmd, "run", &o, fixed)) != CLI_OK)
            return rc;
        if (mrc__parse_long(iters, 1, 1000000, &it) ||
            mrc__parse_long(warmup, 0, 1000000, &wu))
            return cli_usage(cmd, "run", "--iters and --warmup take counts");
        base.iters = (int)it;
        base.warmup = (int)wu;
        return run_loaded(cmd, o.load, base, o.json);
    }
    topology = topology ? topology : "hcm8";
    const char *coll = o.coll ? o.coll : "all";
    o.count = o.count ? o.count : "1M";
    mrc_status_t st = mrc_dtype_parse(o.dtype ? o.dtype : "float32",
                                      &base.dtype);
    if (st == MRC_OK)
        st = mrc_op_parse(o.op ? o.op : "sum", &base.op);
    int all = strcmp(coll, "all") == 0;
    mrc_collective_t only = MRC_ALLREDUCE;
    if (st == MRC_OK && !all)
        st = mrc_collective_parse(coll, &only);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    if ((rc = cli_stage_count(cmd, "run", &o, &n64)) != CLI_OK)
        return rc;
    int nh = 0; /* (0: $MRC_HOSTS, as the communicator takes it) */
    if ((rc = cli_hosts(cmd, "run", o.hosts, 0, &nh)) != CLI_OK)
        return rc;
    if (mrc__parse_long(iters, 1, 1000000, &it) ||
        mrc__parse_long(warmup, 0, 1000000, &wu))
        return cli_usage(cmd, "run", "--iters and --warmup take counts");
    if ((rc = cli_stage_chunk(cmd, "run", &o, &cb)) != CLI_OK ||
        (rc = cli_stage_replica(cmd, "run", &o, &rs)) != CLI_OK)
        return rc;
    base.iters = (int)it;
    base.warmup = (int)wu;
    int json = o.json;
    cli_values_t fails = o.fails;

    mrc_topo_t *t = NULL;
    st = mrc_topo_create(topology, &t);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    char failed[4096];
    if ((rc = cli_fail_links(cmd, &fails, &t, failed)) != CLI_OK) {
        mrc_topo_destroy(t);
        return rc;
    }
    int nranks = mrc_topo_num_nodes(t);
    if (nranks > 256) {
        mrc_topo_destroy(t);
        return cli_usage(cmd, "run", "%s has %d nodes: threads run at most "
                         "256", topology, nranks);
    }
    /* Every rank holds two buffers of count x ranks elements (the largest
     * layout of any collective) and one more. */
    st = check_buffers(n64, nranks, base.dtype);
    if (st != MRC_OK) {
        mrc_topo_destroy(t);
        return cli_fail(cmd, st);
    }
    mrc_comm_t **comms = calloc((size_t)nranks, sizeof *comms);
    row_t *rows = calloc(64 * MRC_NUM_COLLECTIVES, sizeof *rows);
    int nrows = 0, bad = 0, usage = 0;
    if (!comms || !rows) {
        free(comms);
        free(rows);
        mrc_topo_destroy(t);
        return cli_fail(cmd, mrc__error(MRC_ERR_NO_MEMORY, "out of memory"));
    }
    int header = json; /* printed with the first row */
    const char *const *names = mrc_embed_strategies();
    for (int si = 0; names[si] && !bad; si++) {
        const char *name = strategy ? strategy : names[si];
        if (strategy && si > 0)
            break;
        mrc_embed_config_t ec = {.strategy = name, .groups = groups,
                                 .replica_size = (int)rs};
        mrc_embedding_t *e = NULL;
        st = mrc_embed_create(t, &ec, &e);
        if (st == MRC_ERR_NOT_APPLICABLE && !strategy)
            continue; /* not for this topology: the others */
        if (st != MRC_OK) {
            rc = cli_fail(cmd, st);
            bad = 1;
            break;
        }
        mrc_embed_figures_t fig;
        mrc_embed_figures(e, &fig);
        cli_report_failed_links(stderr, t, &ec);
        mrc_embed_destroy(e);
        mrc_config_t cfg = {.topology = topology, .strategy = name,
                            .groups = groups, .replica_size = (int)rs,
                            .chunk_bytes = (size_t)cb,
                            .algo = algo,
                            .hosts = nh,
                            .failed_links = failed};
        st = mrc_comm_init_all(comms, nranks, &cfg);
        if (st != MRC_OK) {
            rc = cli_fail(cmd, st);
            bad = 1;
            break;
        }
        int n = mrc_comm_size(comms[0]);
        for (int c = 0; c < MRC_NUM_COLLECTIVES; c++) {
            if (!all && c != (int)only)
                continue;
            row_t *row = &rows[nrows++];
            row->strategy = name;
            row->efficiency = fig.efficiency;
            row->rc = base;
            row->rc.coll = (mrc_collective_t)c;
            int block = c == MRC_REDUCE_SCATTER || c == MRC_ALLGATHER;
            row->rc.count = block ? (size_t)n64 / (size_t)n : (size_t)n64;
            char error[600] = "";
            if (run_one(comms, nranks, row, error, sizeof error) != 0) {
                row->failed = 1;
                snprintf(error, sizeof error, "out of memory");
            }
            bad |= predict_row(cmd, comms[0], row) != 0;
            /* A failed call has no figures: its error, never a row. */
            if (!row->failed && !header) {
                print_header(base.predict != NULL);
                header = 1;
            }
            if (!row->failed && !json)
                print_row(row);
            if (row->failed)
                fprintf(stderr, "mrc run: %s %s: %s\n", name,
                        mrc_collective_name(row->rc.coll), error);
            bad |= row->failed || row->wrong > 0;
            usage |= row->unsupported;
        }
        for (int r = 0; r < nranks; r++)
            mrc_comm_destroy(comms[r]);
    }
    /* Failed calls have no figures, so no rows (stderr has their errors);
     * the exit status says that something failed. */
    int kept = 0;
    for (int i = 0; i < nrows; i++)
        if (!rows[i].failed)
            rows[kept++] = rows[i];
    nrows = kept;
    if (json)
        print_json(mrc_topo_name(t), nranks, rows, nrows);
    free(comms);
    free(rows);
    mrc_topo_destroy(t);
    if (rc != CLI_OK)
        return rc;
    /* --algo that does not apply to a call is bad input, not a failure. */
    return usage ? CLI_USAGE : bad ? CLI_FAIL : CLI_OK;
}
