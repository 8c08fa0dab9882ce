/* mrc compile: one program for every node; its listing, image and size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "opts.h"
#include "program/plan.h"

void help_compile(void)
{
    printf(
        "usage: mrc compile SPEC [--strategy S] [--groups G | --replica-size "
        "R]\n"
        "                   --collective C --count N --dtype T [--op O] "
        "[--root R]\n"
        "                   [--chunk BYTES] [--algo A] [--hosts H]\n"
        "                   [--completion group|local] [--fail-link "
        "A-B[:K]]...\n"
        "                   [--listing | --node K] [-o FILE] [--json]\n"
        "       mrc compile --load FILE [--listing | --node K] [--json]\n"
        "       [--max-memory SIZE]: the memory limit (input files: 1/32)\n"
        "\n"
        "Compiles a collective on the rings of SPEC (see 'mrc help rings')\n"
        "into one program that every node runs with its own index, checks it\n"
        "(matched sends and receives, no deadlock, one contribution from each\n"
        "node to every output element), and prints its size. --listing "
        "prints\n"
        "the shared code and the index tables; -o writes the binary image\n"
        "(with the topology, so that 'mrc run --load' and 'mrc sim --load'\n"
        "run it as it is); --load reads and checks an image, whose program\n"
        "is then fixed (the options that shape one are refused with it).\n"
        "\n"
        "collectives  allreduce reduce-scatter allgather reduce broadcast\n"
        "types        int8 uint8 int32 uint32 int64 uint64 float16 bfloat16\n"
        "             float32 float64 (or i8 u8 i32 u32 i64 u64 f16 bf16 f32 "
        "f64)\n"
        "ops          sum prod min max avg\n"
        "--count      elements per node (per block for reduce-scatter and\n"
        "             allgather); K/M/G suffixes\n"
        "--chunk      pipelining unit in bytes (default 256K)\n"
        "--algo       the family: rings (default), direct1, direct2, tree,\n"
        "             hier, or auto (the selector's choice on the links'\n"
        "             model, as 'mrc explain' shows); one that does not\n"
        "             apply is refused with the reason (exit 2)\n"
        "--hosts      hier: the group's ranks are on this many hosts, in\n"
        "             equal blocks of consecutive ranks (default 1)\n"
        "--completion when a rank's reduce or broadcast returns: group\n"
        "             (default: once every rank has begun it alike) or\n"
        "             local (once its own part is done, as MPI's: direct1's\n"
        "             nodes that only send wait on nobody, but the root of\n"
        "             its broadcast by reference, 2 nodes past 64 KiB,\n"
        "             which waits for its reader)\n"
        "--groups, --fail-link  node lists such as 0,4+1,5 and failed links\n"
        "             as in 'mrc help rings'\n"
        "--node K     node K's local program instead of the summary: the\n"
        "             shared code with K's table values (its position, rel,\n"
        "             N, neighbours and ports) substituted, per stream of\n"
        "             its group, and its first operations; implies\n"
        "             --listing (with --json: one JSON object)\n");
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* image_bytes: the image file's size when there is one (written or
 * loaded: the program and its origin), else 0 for the program's own. */
static int report(const char *cmd, const mrc_program_t *p, const char *what,
                  double compile_ms, double check_ms, int json, int listing,
                  size_t image_bytes)
{
    mrc_program_info_t info;
    mrc_status_t st = mrc_program_info(p, &info);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    if (image_bytes)
        info.image_bytes = image_bytes;
    const mrc_compile_config_t *c = &info.config;
    if (listing) {
        char *text = NULL;
        st = mrc_program_listing(p, &text);
        if (st != MRC_OK)
            return cli_fail(cmd, st);
        fputs(text, stdout);
        mrc_free(text);
        if (!json)
            return CLI_OK;
        printf("\n");
    }
    if (json) {
        char *source = cli_json_quote(what);
        printf("{\"source\": %s, \"collective\": \"%s\", \"count\": %zu, "
               "\"dtype\": \"%s\", \"op\": \"%s\", \"root\": %d, "
               "\"chunk_bytes\": %zu, \"num_nodes\": %d, \"num_groups\": %d, "
               "\"num_streams\": %d, \"code_instructions\": %d, "
               "\"table_bytes\": %zu, \"image_bytes\": %zu, \"compile_ms\": "
               "%.4f, \"check_ms\": %.4f}\n",
               source, mrc_collective_name(c->collective), c->count,
               mrc_dtype_name(c->dtype), mrc_op_name(c->op), c->root,
               c->chunk_bytes, info.num_nodes, info.num_groups,
               info.num_streams, info.code_instructions, info.table_bytes,
               info.image_bytes, compile_ms, check_ms);
        free(source);
        return CLI_OK;
    }
    printf("program  %s of %zu %s (%s) from %s\n",
           mrc_collective_name(c->collective), c->count,
           mrc_dtype_name(c->dtype), mrc_op_name(c->op), what);
    printf("  shared code   %d instructions (the same for every node)\n",
           info.code_instructions);
    printf("  tables        %zu bytes: %d nodes, %d groups, %d streams\n",
           info.table_bytes, info.num_nodes, info.num_groups, info.num_streams);
    printf("  image         %zu bytes\n", info.image_bytes);
    if (compile_ms >= 0)
        printf("  compile       %.3f ms, check %.3f ms\n", compile_ms,
               check_ms);
    else
        printf("  check         %.3f ms\n", check_ms);
    return CLI_OK;
}

/* --node K: node K's local program (text, or JSON). */
static int node_listing(const char *cmd, const mrc_program_t *p, int node,
                        int json)
{
    char *text = NULL;
    mrc_status_t st = mrc__program_node_listing(p, node, json, &text);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    fputs(text, stdout);
    mrc_free(text);
    return CLI_OK;
}

/* --node VALUE: a node number below `nodes` (of `what`). */
static int parse_node(const char *cmd, const char *value, int nodes,
                      const char *what, int *out)
{
    long k = 0;
    if (mrc__parse_long(value, 0, MRC_TOPO_MAX_NODES, &k) != 0)
        return cli_usage(cmd, "compile", "--node '%s' is not a node number",
                         value);
    if (k >= nodes)
        return cli_usage(cmd, "compile", "--node %ld: %s has nodes 0 to %d", k,
                         what, nodes - 1);
    *out = (int)k;
    return CLI_OK;
}

static void print_origin(const mrc__image_origin_t *o)
{
    if (!o->topology) {
        printf("  origin        none (no topology: it lists, but does not "
               "run or simulate)\n");
        return;
    }
    printf("  origin        %s, strategy %s", o->source ? o->source : "?",
           o->strategy ? o->strategy : "?");
    if (o->efficiency >= 0)
        printf(", efficiency %.4f", o->efficiency);
    printf("; topology %s\n",
           o->topology[0] == '{' ? "carried whole" : o->topology);
}

static int load_image(const char *cmd, const char *path, int json, int listing,
                      const char *node)
{
    mrc_program_t *p = NULL;
    mrc__image_origin_t origin;
    double ms = 0;
    size_t bytes = 0;
    int rc = cli_load_image(cmd, path, &p, &origin, &ms, &bytes);
    if (rc != CLI_OK)
        return rc;
    int k = -1;
    if (node)
        rc = parse_node(cmd, node, p->num_nodes, path, &k);
    if (rc == CLI_OK)
        rc = node ? node_listing(cmd, p, k, json)
                  : report(cmd, p, path, -1, ms, json, listing, bytes);
    /* Where it came from (what run --load and sim --load use). */
    if (rc == CLI_OK && !node && !json)
        print_origin(&origin);
    mrc_program_destroy(p);
    mrc__image_origin_free(&origin);
    return rc;
}

/* The image of p with where it came from (the topology, so that it can
 * be run and simulated as it is). */
static mrc_status_t save_image(const mrc_program_t *p, const mrc_embedding_t *e,
                               const char *spec, void **img, size_t *len)
{
    char *topo = NULL;
    mrc_status_t st = mrc__image_topology_text(mrc_embed_topology(e), &topo);
    if (st != MRC_OK)
        return st;
    mrc_embed_figures_t fig;
    double eff = -1;
    if (mrc_embed_figures(e, &fig) == MRC_OK && fig.efficiency >= 0 &&
        fig.efficiency <= 1)
        eff = fig.efficiency;
    mrc__image_origin_t o = {topo, (char *)mrc_embed_strategy(e), (char *)spec,
                             eff};
    st = mrc__program_save_origin(p, &o, img, len);
    free(topo);
    return st;
}

/* Compiles SPEC (with its failed links) as cc says, checks the program,
 * writes its image (-o) and reports. */
static int compile_spec(const char *cmd, const cli_stage_t *o,
                        mrc_compile_config_t *cc, int replica, const char *spec,
                        const char *out, const char *node, int listing)
{
    int rc = CLI_OK, json = o->json;
    mrc_topo_t *t = NULL;
    mrc_embedding_t *e = NULL;
    mrc_program_t *p = NULL;
    int k = -1;
    mrc_status_t st = mrc_topo_create(spec, &t);
    /* (a node out of range is bad usage, found before compiling) */
    if (st == MRC_OK && node &&
        (rc = parse_node(cmd, node, mrc_topo_num_nodes(t), spec, &k)) != CLI_OK)
        goto done;
    mrc_embed_config_t ec = {
        .strategy = o->strategy, .groups = o->groups, .replica_size = replica};
    if (st == MRC_OK && (rc = cli_fail_links(cmd, &o->fails, &t, NULL)) != 0)
        goto done;
    if (st == MRC_OK)
        st = mrc_embed_create(t, &ec, &e);
    if (st == MRC_OK)
        cli_report_failed_links(json ? stderr : stdout, t, &ec);
    if (st == MRC_OK && (rc = cli_resolve_algo(cmd, e, t, cc)) != CLI_OK)
        goto done;
    double t0 = now_ms(), t1 = t0, t2 = t0;
    if (st == MRC_OK) {
        st = mrc__program_build(e, cc, -1, &p);
        t1 = now_ms();
    }
    if (st == MRC_OK) {
        st = mrc_program_check(p);
        t2 = now_ms();
    }
    size_t len = 0;
    if (st == MRC_OK && out) {
        void *img = NULL;
        st = save_image(p, e, spec, &img, &len);
        if (st == MRC_OK) {
            rc = cli_write_file(cmd, out, img, len);
            if (rc == CLI_OK)
                fprintf(stderr, "wrote %s (%zu bytes)\n", out, len);
        }
        mrc_free(img);
    }
    if (st == MRC_OK && rc == CLI_OK)
        rc = node ? node_listing(cmd, p, k, json)
                  : report(cmd, p, spec, t1 - t0, t2 - t1, json, listing, len);
    else if (st != MRC_OK)
        rc = cli_fail(cmd, st);
done:
    mrc_program_destroy(p);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
    return rc;
}

int cmd_compile(int argc, char **argv)
{
    const char *cmd = "mrc compile";
    const char *pos[1], *out = NULL, *node = NULL, *completion = NULL;
    int listing = 0, npos = 0;
    const cli_opt_t own[] = {{"output", 'o', &out, NULL},
                             {"completion", 0, &completion, NULL},
                             {"node", 0, &node, NULL},
                             {"listing", 0, NULL, &listing},
                             {0}};
    cli_stage_t o;
    int rc = cli_stage_parse(cmd, "compile",
                             CLI_STAGE_COUNT | CLI_STAGE_OP | CLI_STAGE_ROOT |
                                 CLI_STAGE_CHUNK,
                             own, "rings", argc, argv, &o, pos, 0, 1, &npos);
    if (rc != CLI_OK)
        return rc;
    mrc_compile_config_t cc = {.algo = o.algo_family};
    int json = o.json;
    if (o.load) {
        static const char *const fixed[] = {
            "strategy", "groups", "replica-size", "collective", "count",
            "dtype",    "op",     "root",         "chunk",      "algo",
            "hosts",    "output", "fail-link",    "completion", NULL};
        if (npos)
            return cli_usage(cmd, "compile", "--load takes no SPEC");
        if ((rc = cli_stage_refuses(cmd, "compile", &o, fixed)) != CLI_OK)
            return rc;
        return load_image(cmd, o.load, json, listing, node);
    }
    if (npos == 0)
        return cli_usage(cmd, "compile", "missing SPEC");
    if (!o.coll || !o.count || !o.dtype)
        return cli_usage(cmd, "compile",
                         "--collective, --count and --dtype are required");
    uint64_t n = 0, cb = 0;
    long rs = 0, rt = 0;
    mrc_status_t st = mrc_collective_parse(o.coll, &cc.collective);
    if (st == MRC_OK)
        st = mrc_dtype_parse(o.dtype, &cc.dtype);
    if (st == MRC_OK && o.op)
        st = mrc_op_parse(o.op, &cc.op);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    if (completion &&
        mrc_completion_parse(completion, &cc.completion) != MRC_OK)
        return cli_usage(cmd, "compile", "--completion: %s", mrc_last_error());
    if ((rc = cli_stage_count(cmd, "compile", &o, &n)) != CLI_OK ||
        (rc = cli_stage_chunk(cmd, "compile", &o, &cb)) != CLI_OK ||
        (rc = cli_stage_replica(cmd, "compile", &o, &rs)) != CLI_OK)
        return rc;
    if (o.root && mrc__parse_long(o.root, 0, MRC_TOPO_MAX_NODES, &rt))
        return cli_usage(cmd, "compile", "--root '%s' is not a rank", o.root);
    if ((rc = cli_hosts(cmd, "compile", o.hosts, 1, &cc.hosts)) != CLI_OK)
        return rc;
    cc.count = (size_t)n;
    cc.chunk_bytes = (size_t)cb;
    cc.root = (int)rt;
    return compile_spec(cmd, &o, &cc, (int)rs, pos[0], out, node, listing);
}
