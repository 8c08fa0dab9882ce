/* mrc rings: embed logical rings in a topology and show what they load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Each strategy and what it does, from the library's one list. */
static void print_strategies(void)
{
    for (const char *const *n = mrc_embed_strategies(); *n; n++) {
        const char *about = mrc_embed_strategy_about(*n);
        printf("  %-16s ", *n);
        for (const char *c = about; *c; c++) {
            putchar(*c);
            if (*c == '\n')
                printf("  %-16s ", "");
        }
        putchar('\n');
    }
}

void help_rings(void)
{
    printf(
        "usage: mrc rings SPEC [--strategy NAME] [--replica-size R | "
        "--groups A+B+...]\n"
        "                 [--max-rings K] [--fail-link A-B[:K]]... [--json]\n"
        "                 [-o FILE.svg|FILE.dot]\n"
        "\n"
        "Embeds logical rings in the topology SPEC (see 'mrc help topo'),\n"
        "verifies them, and prints each group's rings, the load on every\n"
        "link direction, the idle ones (link directions, physical links\n"
        "and ports per node) and the allreduce figures:\n"
        "  bound_gbps  min over the group's nodes of their outgoing\n"
        "              bandwidth x N / (2(N-1))\n"
        "  algbw_gbps  data size / time, set by the most loaded link\n"
        "              direction with every group running at once\n"
        "  efficiency  algbw / bound\n"
        "\n"
        "strategies:\n");
    print_strategies();
    printf(
        "\n"
        "--groups A+B+...  groups of consecutive nodes (4+2+2: 0-3, 4-5, "
        "6-7),\n"
        "                  or node lists (0,4+1,5+2,6+3,7: '+' between\n"
        "                  groups, ',' within one; a lone node is a group of\n"
        "                  one). A list's order is the group's rank order\n"
        "                  (and ring's ring order). Groups are disjoint and\n"
        "                  cover every node.\n"
        "--replica-size R  GCL replicas of R consecutive nodes; each group is\n"
        "                  the nodes at the same position in every replica\n"
        "--max-rings K     at most K rings per group (auto trades bandwidth\n"
        "                  for fewer rings; a bidirectional ring counts once)\n"
        "--fail-link A-B[:K]  take K (default all) of the links between\n"
        "                  nodes A and B out before embedding; repeatable.\n"
        "                  Named strategies keep their rings while the links\n"
        "                  they use survive and are refused naming one they\n"
        "                  need; auto re-embeds. A first line gives algbw\n"
        "                  and efficiency before and after (on stderr with\n"
        "                  --json). Also on compile, run and sim.\n"
        "-o FILE           draw the rings, each in its own colour\n"
        "\n"
        "A strategy that does not apply exits with status 2 and says what it\n"
        "needs. Examples:\n"
        "  mrc rings hcm8 --strategy hcm8\n"
        "  mrc rings torus-ladder:16 --strategy barley-twist -o bt.svg\n"
        "  mrc rings gcl-torus:8 --strategy barley-twist\n"
        "  mrc rings ladder:16 --strategy rung-ring-4\n"
        "  mrc rings hcm8 --strategy hcm8 --groups 0,4+1,5+2,6+3,7\n"
        "  mrc rings hcm8 --strategy hcm8 --fail-link 0-1:1\n");
}

static void print_ring(const mrc_ring_t *ring, int r)
{
    printf("  ring %d  share %.4f  %s  ", r, ring->share,
           ring->bidirectional ? "both ways" : "one way  ");
    enum { SHOWN = 24 };
    for (int i = 0; i < ring->size && i < SHOWN; i++) {
        const mrc_hop_t *h = &ring->hops[i];
        printf("%d", h->from);
        if (h->route_len > 2) {
            printf(" -(");
            for (int s = 1; s + 1 < h->route_len; s++)
                printf(s > 1 ? ",%d" : "%d", h->route[s]);
            printf(")-> ");
        } else {
            printf(" ");
        }
    }
    if (ring->size > SHOWN)
        printf("... (%d nodes)", ring->size);
    printf("\n");
}

/* Idle directions count link entries; a link of count 3 carrying one hop
 * each way is busy though two of its physical links are not. Say the
 * physical links and the ports (what a program switches off) as well. */
static void print_idle_physical(const mrc_embedding_t *e)
{
    const mrc_topo_t *t = mrc_embed_topology(e);
    int n = mrc_topo_num_nodes(t);
    long ports = 2L * mrc_topo_num_physical_links(t), idle = 0;
    for (int u = 0; u < n; u++)
        idle += mrc_embed_idle_ports(e, u);
    printf("idle physical links: %d of %d\n", mrc_embed_num_idle_physical(e),
           mrc_topo_num_physical_links(t));
    printf("idle ports: %ld of %ld", idle, ports);
    enum { SHOWN = 32 };
    int shown = 0, with_idle = 0;
    for (int u = 0; u < n; u++) {
        int k = mrc_embed_idle_ports(e, u);
        if (k == 0)
            continue;
        if (with_idle++ < SHOWN)
            printf("%s%d:%d/%d", shown++ ? " " : "; per node (idle/ports) ", u,
                   k, mrc_topo_num_ports(t, u));
    }
    printf(with_idle > shown ? " ... (%d nodes; --json lists them all)\n"
                             : "\n",
           with_idle);
}

static void print_links(const mrc_embedding_t *e)
{
    const mrc_topo_t *t = mrc_embed_topology(e);
    int nl = mrc_topo_num_links(t);
    double worst = 0;
    for (int i = 0; i < nl; i++) {
        const mrc_link_t *l = mrc_topo_link(t, i);
        for (int d = 0; d < 2; d++) {
            double x =
                mrc_embed_link_load(e, i, d) / (l->count * l->bandwidth_gbps);
            worst = x > worst ? x : worst;
        }
    }
    enum { SHOWN = 48 };
    printf("\nlink loads (bytes per byte of data; busy = share of the "
           "collective's time)\n");
    printf("%6s %11s %5s  %9s %5s  %9s %5s\n", "link", "a-b", "count", "a->b",
           "busy", "b->a", "busy");
    for (int i = 0; i < nl && i < SHOWN; i++) {
        const mrc_link_t *l = mrc_topo_link(t, i);
        double cap = l->count * l->bandwidth_gbps;
        double ab = mrc_embed_link_load(e, i, 0),
               ba = mrc_embed_link_load(e, i, 1);
        char ends[32];
        snprintf(ends, sizeof ends, "%d-%d", l->a, l->b);
        printf("%6d %11s %5d  %9.4f %4.0f%%  %9.4f %4.0f%%\n", i, ends,
               l->count, ab, worst > 0 ? 100 * ab / cap / worst : 0, ba,
               worst > 0 ? 100 * ba / cap / worst : 0);
    }
    if (nl > SHOWN)
        printf("  ... %d more links (--json lists them all)\n", nl - SHOWN);
    int idle = mrc_embed_num_idle(e);
    printf("idle link directions: %d of %d", idle, 2 * nl);
    int shown = 0;
    for (int i = 0; i < nl && shown < 16; i++) {
        const mrc_link_t *l = mrc_topo_link(t, i);
        for (int d = 0; d < 2 && shown < 16; d++)
            if (mrc_embed_link_load(e, i, d) == 0) {
                printf("%s%d->%d", shown++ ? ", " : ": ", d ? l->b : l->a,
                       d ? l->a : l->b);
            }
    }
    printf(idle > shown ? ", ...\n" : "\n");
    print_idle_physical(e);
}

static void print_embedding(const mrc_embedding_t *e)
{
    const mrc_topo_t *t = mrc_embed_topology(e);
    int ng = mrc_embed_num_groups(e);
    printf("topology %s, %d nodes; strategy %s; %d group%s\n", mrc_topo_name(t),
           mrc_topo_num_nodes(t), mrc_embed_strategy(e), ng,
           ng == 1 ? "" : "s");
    for (int g = 0; g < ng; g++) {
        const int *nodes;
        int n = mrc_embed_group_nodes(e, g, &nodes);
        mrc_embed_figures_t f;
        mrc_embed_group_figures(e, g, &f);
        printf("\ngroup %d: %d node%s, %d ring%s; bound %.2f GB/s, algbw "
               "%.2f GB/s, efficiency %.4f\n",
               g, n, n == 1 ? "" : "s", mrc_embed_num_rings(e, g),
               mrc_embed_num_rings(e, g) == 1 ? "" : "s", f.bound_gbps,
               f.algbw_gbps, f.efficiency);
        for (int r = 0; r < mrc_embed_num_rings(e, g); r++)
            print_ring(mrc_embed_ring(e, g, r), r);
    }
    print_links(e);
    mrc_embed_figures_t f;
    mrc_embed_figures(e, &f);
    printf("\nbound_gbps %.4f  algbw_gbps %.4f  efficiency %.4f%s\n",
           f.bound_gbps, f.algbw_gbps, f.efficiency,
           ng > 1 ? "  (worst group)" : "");
}

/* The rings: drawn to OUT (.dot, or .svg with Graphviz) if asked, and
 * printed as text or JSON. */
static int write_rings(const char *cmd, const mrc_embedding_t *e,
                       const char *out, int json)
{
    int rc = CLI_OK;
    mrc_status_t st;
    if (out) {
        char *dot = NULL;
        st = mrc_embed_to_dot(e, &dot);
        if (st != MRC_OK)
            rc = cli_fail(cmd, st);
        else if (cli_has_ext(out, ".svg"))
            rc = cli_render_svg(cmd, dot, out);
        else
            rc = cli_write_file(cmd, out, dot, strlen(dot));
        mrc_free(dot);
    }
    if (rc == CLI_OK) {
        if (json) {
            char *text = NULL;
            st = mrc_embed_to_json(e, &text);
            if (st == MRC_OK)
                fputs(text, stdout);
            else
                rc = cli_fail(cmd, st);
            mrc_free(text);
        } else {
            print_embedding(e);
        }
        if (out && rc == CLI_OK)
            fprintf(stderr, "wrote %s\n", out);
    }
    return rc;
}

int cmd_rings(int argc, char **argv)
{
    const char *cmd = "mrc rings";
    const char *pos[1], *strategy = NULL, *groups = NULL, *replica = NULL,
                        *out = NULL, *max_rings = NULL;
    int json = 0, npos = 0;
    const cli_opt_t opts[] = {{"strategy", 's', &strategy, NULL},
                              {"groups", 'g', &groups, NULL},
                              {"replica-size", 'r', &replica, NULL},
                              {"json", 0, NULL, &json},
                              {"output", 'o', &out, NULL},
                              {"max-rings", 0, &max_rings, NULL},
                              {0}};
    cli_values_t fails;
    int rc = cli_take_values(cmd, "rings", "fail-link", &argc, argv, &fails);
    if (rc == CLI_OK)
        rc = cli_parse(cmd, "rings", argc, argv, opts, pos, 1, 1, &npos);
    if (rc != CLI_OK)
        return rc;
    long rsize = 0;
    if (replica && mrc__parse_long(replica, 1, MRC_TOPO_MAX_NODES, &rsize))
        return cli_usage(cmd, "rings",
                         "--replica-size '%s' is not a "
                         "positive integer",
                         replica);
    long rmax = 0;
    if (max_rings && mrc__parse_long(max_rings, 1, 1 << 20, &rmax))
        return cli_usage(cmd, "rings",
                         "--max-rings '%s' is not a positive "
                         "integer",
                         max_rings);
    if (out && !cli_has_ext(out, ".svg") && !cli_has_ext(out, ".dot"))
        return cli_usage(cmd, "rings",
                         "cannot tell the format of '%s': name it *.svg or "
                         "*.dot",
                         out);
    mrc_topo_t *t = NULL;
    mrc_embedding_t *e = NULL;
    mrc_status_t st = mrc_topo_create(pos[0], &t);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    if ((rc = cli_fail_links(cmd, &fails, &t, NULL)) != CLI_OK) {
        mrc_topo_destroy(t);
        return rc;
    }
    mrc_embed_config_t cfg = {.strategy = strategy,
                              .groups = groups,
                              .replica_size = (int)rsize,
                              .max_rings = (int)rmax};
    st = mrc_embed_create(t, &cfg, &e);
    if (st == MRC_OK)
        cli_report_failed_links(json ? stderr : stdout, t, &cfg);
    if (st != MRC_OK) {
        rc = cli_fail(cmd, st);
        mrc_topo_destroy(t);
        return rc;
    }
    rc = write_rings(cmd, e, out, json);
    mrc_embed_destroy(e);
    mrc_topo_destroy(t);
    return rc;
}
