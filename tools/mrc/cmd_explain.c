/* mrc explain: every algorithm family for a call, its predicted time,
 * busbw and share of the bound, and the one the selector picks, and why. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sim/select.h"

void help_explain(void)
{
    printf(
        "usage: mrc explain SPEC --collective C --size BYTES [--dtype T]\n"
        "                   [--op O] [--root R] [--strategy S]\n"
        "                   [--groups G | --replica-size R]\n"
        "                   [--transport links|threads|shm|mpi] [--hosts H]\n"
        "                   [--profile FILE] [--completion group|local]\n"
        "                   [--json]\n"
        "\n"
        "Compiles the collective in every algorithm family (rings, direct1,\n"
        "direct2, tree, hier), predicts each one's time with the cost model\n"
        "of the transport, and prints time, busbw (nccl-tests factors) and\n"
        "%%bound per family, the family the selector chooses and why, and\n"
        "why each family that does not apply does not (docs/families.md).\n"
        "\n"
        "--transport  links (default): the topology's links, timed by the\n"
        "             simulator (as 'mrc sim'); threads, shm: the CPU model\n"
        "             (a sync, a copy and a reduction rate); mpi: MPI\n"
        "             point-to-point, where only rings, tree and hier apply\n"
        "--hosts      the ranks are on this many hosts, in equal blocks of\n"
        "             consecutive ranks (hier; default 1)\n"
        "--profile    a host profile ('mrc calibrate -o FILE'): each\n"
        "             family is timed by the simulator's node model with\n"
        "             it, as 'mrc sim --profile' (below 4 KiB a node, and\n"
        "             a reduce or broadcast with local completion: the\n"
        "             CPU model's constants; groups past 16 nodes, and mpi:\n"
        "             the CPU model with its figures); the\n"
        "             transport defaults to the profile's, and another CPU\n"
        "             transport or links is refused (exit 2)\n"
        "--size       bytes per node (per block for reduce-scatter and\n"
        "             allgather); K/M/G suffixes\n"
        "--completion the programs of group (default) or local completion\n"
        "             (as the drop-in MPI library runs them: see 'mrc help\n"
        "             compile'); a reduce or broadcast with local\n"
        "             completion is timed as a call of a run of them,\n"
        "             whose nodes each run ahead (each node alone)\n"
        "--json       one JSON object\n");
}

static void print_text(const mrc__select_input_t *in, const char *strategy,
                       uint64_t size, const mrc__selection_t *sel,
                       const char *profile)
{
    const mrc_compile_config_t *cc = &in->cc;
    printf("explain  %s of %llu bytes (%s, %s) on %s, strategy %s, "
           "transport %s\n",
           mrc_collective_name(cc->collective), (unsigned long long)size,
           mrc_dtype_name(cc->dtype), mrc_op_name(cc->op),
           mrc_topo_name(in->topo), strategy,
           mrc__sim_transport_name(in->transport));
    if (in->profile)
        printf("profile  %s (%s, %d ranks on %d cores)\n", profile,
               in->profile->transport, in->profile->ranks, in->profile->cores);
    printf("%-8s %12s %12s %8s %6s\n", "family", "time(us)", "busbw(GB/s)",
           "%bound", "code");
    for (int a = 0; a < MRC_NUM_ALGOS; a++) {
        const mrc__candidate_t *c = &sel->cand[a];
        if (c->status != MRC_OK)
            continue;
        printf("%-8s %12.3f %12.3f %8.1f %6d%s\n", mrc_algo_name(c->algo),
               c->time_us, c->busbw_gbps, 100 * c->efficiency,
               c->code_instructions,
               a == (int)sel->chosen ? "  <- chosen" : "");
    }
    for (int a = 0; a < MRC_NUM_ALGOS; a++) {
        const mrc__candidate_t *c = &sel->cand[a];
        if (c->status != MRC_OK)
            printf("%-8s does not apply: %s\n", mrc_algo_name(c->algo), c->why);
    }
    printf("chosen   %s: %s\n", mrc_algo_name(sel->chosen), sel->reason);
}

static void print_json(const mrc__select_input_t *in, const char *strategy,
                       uint64_t size, const mrc__selection_t *sel,
                       const char *profile)
{
    const mrc_compile_config_t *cc = &in->cc;
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    mrc__sb_puts(&sb, "{\"topology\": ");
    mrc__sb_json_string(&sb, mrc_topo_name(in->topo));
    mrc__sb_puts(&sb, ", \"strategy\": ");
    mrc__sb_json_string(&sb, strategy);
    mrc__sb_printf(&sb,
                   ", \"collective\": \"%s\", \"bytes\": %llu, \"dtype\": "
                   "\"%s\", \"op\": \"%s\", \"transport\": \"%s\", "
                   "\"chosen\": \"%s\", \"reason\": ",
                   mrc_collective_name(cc->collective),
                   (unsigned long long)size, mrc_dtype_name(cc->dtype),
                   mrc_op_name(cc->op), mrc__sim_transport_name(in->transport),
                   mrc_algo_name(sel->chosen));
    mrc__sb_json_string(&sb, sel->reason);
    if (profile) {
        mrc__sb_puts(&sb, ", \"profile\": ");
        mrc__sb_json_string(&sb, profile);
    }
    mrc__sb_puts(&sb, ", \"candidates\": [");
    for (int a = 0; a < MRC_NUM_ALGOS; a++) {
        const mrc__candidate_t *c = &sel->cand[a];
        mrc__sb_printf(&sb, "%s\n  {\"family\": \"%s\", \"applies\": %s",
                       a ? "," : "", mrc_algo_name(c->algo),
                       c->status == MRC_OK ? "true" : "false");
        if (c->status == MRC_OK) {
            mrc__sb_puts(&sb, ", \"time_us\": ");
            mrc__sb_double(&sb, c->time_us);
            mrc__sb_puts(&sb, ", \"busbw_gbps\": ");
            mrc__sb_double(&sb, c->busbw_gbps);
            mrc__sb_puts(&sb, ", \"bound_gbps\": ");
            mrc__sb_double(&sb, c->bound_gbps);
            mrc__sb_puts(&sb, ", \"bound_pct\": ");
            mrc__sb_double(&sb, 100 * c->efficiency);
            mrc__sb_printf(&sb, ", \"code_instructions\": %d",
                           c->code_instructions);
        } else {
            mrc__sb_puts(&sb, ", \"why\": ");
            mrc__sb_json_string(&sb, c->why);
        }
        mrc__sb_puts(&sb, "}");
    }
    mrc__sb_puts(&sb, "\n]}\n");
    char *text = mrc__sb_take(&sb);
    if (!text) {
        fprintf(stderr, "mrc explain: out of memory\n");
        exit(CLI_FAIL);
    }
    fputs(text, stdout);
    free(text);
}

/* --transport and --profile FILE: the transport defaults to the
 * profile's (else links), and a profile of another one is refused
 * naming the file. */
static mrc_status_t transport_and_profile(const char *transport,
                                          const char *path, mrc_profile_t *prof,
                                          mrc__select_input_t *in)
{
    mrc_status_t st;
    if (path) {
        if ((st = mrc_profile_load(path, prof)) != MRC_OK)
            return st;
        in->profile = prof;
        transport = transport ? transport : prof->transport;
    }
    st = mrc__sim_transport_parse(transport ? transport : "links",
                                  &in->transport);
    mrc__cpu_cost_t k;
    if (st == MRC_OK && path &&
        (st = mrc__cpu_cost_of_profile(prof, in->transport, in->cc.dtype,
                                       in->cc.op, 1, &k)) != MRC_OK)
        mrc__error_prefix("%s", path);
    return st;
}

/* The options of mrc explain, as given. */
typedef struct explain_args {
    const char *strategy, *groups, *replica, *coll, *size, *dtype, *op, *root,
        *transport, *algo, *hosts, *profile, *completion;
    int json;
} explain_args_t;

/* The call to explain into `in` (its collective, type, operator, count,
 * root, hosts and transport), the family asked for into *force, the
 * size into *bytes and the replica size into *rs. CLI status. */
static int read_call(const char *cmd, const explain_args_t *x,
                     mrc_profile_t *prof, mrc__select_input_t *in,
                     mrc_algo_t *force, uint64_t *bytes, long *rs)
{
    mrc_status_t st = mrc_collective_parse(x->coll, &in->cc.collective);
    if (st == MRC_OK)
        st = mrc_dtype_parse(x->dtype, &in->cc.dtype);
    if (st == MRC_OK)
        st = mrc_op_parse(x->op, &in->cc.op);
    if (st == MRC_OK)
        st = transport_and_profile(x->transport, x->profile, prof, in);
    /* --transport mpi models MPI between hosts: point-to-point only (MPI
     * ranks of one host run over shared memory: --transport shm). */
    in->memory_ok = in->transport != MRC__SIM_TRANSPORT_MPI;
    if (st == MRC_OK && x->algo)
        st = mrc_algo_parse(x->algo, force);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    long rt = 0;
    size_t es = mrc_dtype_size(in->cc.dtype);
    if (mrc__parse_size(x->size, bytes) || *bytes == 0)
        return cli_usage(cmd, "explain", "--size '%s' is not a size", x->size);
    if (*bytes % es)
        return cli_usage(cmd, "explain",
                         "--size %llu is not a whole number "
                         "of %s elements (%zu bytes)",
                         (unsigned long long)*bytes, x->dtype, es);
    if ((x->replica &&
         mrc__parse_long(x->replica, 1, MRC_TOPO_MAX_NODES, rs)) ||
        (x->root && mrc__parse_long(x->root, 0, MRC_TOPO_MAX_NODES - 1, &rt)))
        return cli_usage(cmd, "explain",
                         "--replica-size and --root take a "
                         "whole number");
    int rc = cli_hosts(cmd, "explain", x->hosts, 1, &in->cc.hosts);
    if (rc != CLI_OK)
        return rc;
    if (x->completion &&
        mrc_completion_parse(x->completion, &in->cc.completion) != MRC_OK)
        return cli_usage(cmd, "explain", "--completion: %s", mrc_last_error());
    /* ... and the ranks of each host (--hosts) share memory: hier. */
    in->host_memory_ok = in->memory_ok || in->cc.hosts > 1;
    in->cc.count = (size_t)(*bytes / es);
    in->cc.root = (int)rt;
    return CLI_OK;
}

/* The selector's choice on SPEC, with each family's time or why it does
 * not apply. */
static int explain_spec(const char *cmd, const explain_args_t *x,
                        const char *spec, mrc__select_input_t *in,
                        mrc_algo_t force, uint64_t bytes, long rs)
{
    int rc = CLI_OK;
    mrc_topo_t *t = NULL;
    mrc_embedding_t *e = NULL;
    mrc_status_t st = mrc_topo_create(spec, &t);
    mrc_embed_config_t ec = {
        .strategy = x->strategy, .groups = x->groups, .replica_size = (int)rs};
    if (st == MRC_OK)
        st = mrc_embed_create(t, &ec, &e);
    if (st != MRC_OK) {
        rc = cli_fail(cmd, st);
        goto done;
    }
    in->topo = t;
    in->embedding = e;
    mrc__selection_t sel;
    st = mrc__select(in, force, &sel, NULL);
    if (st != MRC_OK) {
        rc = cli_fail(cmd, st);
        goto done;
    }
    if (x->json)
        print_json(in, mrc_embed_strategy(e), bytes, &sel, x->profile);
    else
        print_text(in, mrc_embed_strategy(e), bytes, &sel, x->profile);
done:
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
    return rc;
}

int cmd_explain(int argc, char **argv)
{
    const char *cmd = "mrc explain";
    const char *pos[1];
    explain_args_t x = {.dtype = "float32", .op = "sum"};
    int npos = 0;
    const cli_opt_t opts[] = {{"strategy", 's', &x.strategy, NULL},
                              {"groups", 'g', &x.groups, NULL},
                              {"replica-size", 'r', &x.replica, NULL},
                              {"collective", 'c', &x.coll, NULL},
                              {"size", 0, &x.size, NULL},
                              {"dtype", 'd', &x.dtype, NULL},
                              {"op", 0, &x.op, NULL},
                              {"root", 0, &x.root, NULL},
                              {"transport", 't', &x.transport, NULL},
                              {"algo", 'a', &x.algo, NULL},
                              {"hosts", 0, &x.hosts, NULL},
                              {"profile", 0, &x.profile, NULL},
                              {"completion", 0, &x.completion, NULL},
                              {"json", 0, NULL, &x.json},
                              {0}};
    int rc = cli_parse(cmd, "explain", argc, argv, opts, pos, 1, 1, &npos);
    if (rc != CLI_OK)
        return rc;
    if (!x.coll || !x.size)
        return cli_usage(cmd, "explain",
                         "--collective and --size are "
                         "required");
    mrc__select_input_t in = {
        .group = -1, .memory_ok = 1, .ref_ok = 1, .want_times = 1};
    mrc_algo_t force = MRC_ALGO_AUTO;
    mrc_profile_t prof;
    uint64_t bytes = 0;
    long rs = 0;
    rc = read_call(cmd, &x, &prof, &in, &force, &bytes, &rs);
    if (rc != CLI_OK)
        return rc;
    return explain_spec(cmd, &x, pos[0], &in, force, bytes, rs);
}
