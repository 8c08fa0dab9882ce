/* mrc topo show | check | draw: look at a physical topology. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void help_topo(void)
{
    printf(
        "usage: mrc topo show SPEC [--json] [--max-memory SIZE]\n"
        "       mrc topo check FILE [--max-memory SIZE]\n"
        "       mrc topo draw SPEC -o FILE.svg|FILE.dot\n"
        "\n"
        "show   prints a summary: nodes, links, ports per node, bandwidth.\n"
        "       With --json it prints the topology in the file format, to\n"
        "       save, edit and read back.\n"
        "check  validates a topology file (or spec) and says what is wrong,\n"
        "       with the line and column of a JSON syntax error or the\n"
        "       entry (nodes[i], links[i]) of a semantic one.\n"
        "       Files over 64 MiB, or over 1/32 of --max-memory (or\n"
        "       MRC_MAX_MEMORY) when it is given, are refused unread.\n"
        "draw   writes a Graphviz picture: .dot always, .svg through\n"
        "       Graphviz's neato when it is installed.\n"
        "\n"
        "SPEC is a file (*.json, see docs/topology-format.md) or a generator\n"
        "NAME[:ARGS][,bw=GB/s][,lat=ns]:\n"
        "  ring:N          N >= 2 nodes in a ring\n"
        "  line:N          N >= 1 nodes in a line\n"
        "  full:N          every pair of N nodes joined\n"
        "  ladder:N        GCL's mesh: two columns of N/2 (N even, >= 4);\n"
        "                  rungs join 2k and 2k+1, columns join "
        "consecutive rungs\n"
        "  torus-ladder:N  the ladder with both columns closed (GCL's "
        "torus)\n"
        "                  both: ,rung=R,column=C links per rung and per\n"
        "                  column segment (default 1 each)\n"
        "  gcl-torus:N     GCL's torus with all eight IPU-Links of each IPU:\n"
        "                  torus-ladder:N,rung=4,column=2\n"
        "  torus2d:X,Y     an X by Y torus; node (x, y) is y*X + x;\n"
        "                  ,x=A,y=B links per join in each dimension\n"
        "  prism:K,L       L >= 2 stacked layers of K >= 3 nodes:\n"
        "                  each layer a ring, neighbours joined by end=3\n"
        "                  links in the endmost layers and mid=2 in\n"
        "                  intermediate ones, inter=1 links between layers;\n"
        "                  node (l, k) is l*K + k\n"
        "  prism-torus:K,L the prism's layers in a ring of L >= 3 layers\n"
        "                  (a prism closed round): intra=2 links in a\n"
        "                  layer, inter=1 between layers, the last joined\n"
        "                  to the first\n"
        "  hcm8            8 processors in 2 subsets of 4 (hybrid mesh): 2 "
        "links\n"
        "                  to each nearest neighbour, 1 to the farthest, 2 "
        "to\n"
        "                  the counterpart i+4; 7 ports each\n"
        "Link counts are whole numbers from 1 to 1024 (docs/topologies.md).\n"
        "Each physical link carries bw GB/s per direction (default %g) after\n"
        "lat ns (default %g). A node's ports are numbered from 0 in the order\n"
        "of its links; a link of count c takes c consecutive ports.\n"
        "\n"
        "examples:\n"
        "  mrc topo show prism:3,4\n"
        "  mrc topo show torus-ladder:8,rung=2,column=3\n"
        "  mrc topo show torus2d:4,4,bw=50 --json > t.json && mrc topo check "
        "t.json\n"
        "  mrc topo draw hcm8 -o hcm8.svg\n",
        MRC_TOPO_DEFAULT_BANDWIDTH_GBPS, MRC_TOPO_DEFAULT_LATENCY_NS);
}

/* "3" or "3-4": the ports a link of `count` takes from `first`. */
static void port_range(char *buf, size_t n, int first, int count)
{
    if (count == 1)
        snprintf(buf, n, "%d", first);
    else
        snprintf(buf, n, "%d-%d", first, first + count - 1);
}

static void print_range(const char *what, double lo, double hi,
                        const char *unit)
{
    if (lo == hi)
        printf("%-10s %g %s\n", what, lo, unit);
    else
        printf("%-10s %g to %g %s\n", what, lo, hi, unit);
}

static void print_summary(const mrc_topo_t *t)
{
    int n = mrc_topo_num_nodes(t), nl = mrc_topo_num_links(t);
    long ports = 0;
    int pmin = 1 << 30, pmax = 0;
    double bwlo = 1e300, bwhi = 0, latlo = 1e300, lathi = 0;
    for (int u = 0; u < n; u++) {
        int p = mrc_topo_num_ports(t, u);
        ports += p;
        pmin = p < pmin ? p : pmin;
        pmax = p > pmax ? p : pmax;
    }
    for (int i = 0; i < nl; i++) {
        const mrc_link_t *l = mrc_topo_link(t, i);
        bwlo = l->bandwidth_gbps < bwlo ? l->bandwidth_gbps : bwlo;
        bwhi = l->bandwidth_gbps > bwhi ? l->bandwidth_gbps : bwhi;
        latlo = l->latency_ns < latlo ? l->latency_ns : latlo;
        lathi = l->latency_ns > lathi ? l->latency_ns : lathi;
    }
    printf("topology   %s\n", mrc_topo_name(t));
    printf("nodes      %d\n", n);
    printf("links      %d physical links in %d link entries, %ld ports\n",
           mrc_topo_num_physical_links(t), nl, ports);
    if (pmin == pmax)
        printf("ports      %d per node\n", pmin);
    else {
        printf("ports      %d to %d per node:", pmin, pmax);
        const char *sep = " ";
        for (int p = pmin; p <= pmax; p++) {
            int k = 0;
            for (int u = 0; u < n; u++)
                k += mrc_topo_num_ports(t, u) == p;
            if (k)
                printf("%s%d node%s with %d", sep, k, k == 1 ? "" : "s", p);
            if (k)
                sep = ", ";
        }
        printf("\n");
    }
    if (nl > 0) {
        print_range("bandwidth", bwlo, bwhi,
                    "GB/s per physical link per direction");
        print_range("latency", latlo, lathi, "ns");
    }
    printf("total      %g GB/s of link bandwidth in each direction\n",
           mrc_topo_total_bandwidth_gbps(t));

    enum { SHOWN = 32 };
    printf("\n%5s %5s %9s  %s\n", "node", "ports", "out GB/s",
           "links: ports -> peer:ports (xcount)");
    for (int u = 0; u < n && u < SHOWN; u++) {
        const int *links;
        int k = mrc_topo_node_links(t, u, &links);
        printf("%5d %5d %9g ", u, mrc_topo_num_ports(t, u),
               mrc_topo_node_bandwidth_gbps(t, u));
        for (int j = 0; j < k; j++) {
            const mrc_link_t *l = mrc_topo_link(t, links[j]);
            int at_a = l->a == u;
            char mine[24], theirs[24];
            port_range(mine, sizeof mine, at_a ? l->port_a : l->port_b,
                       l->count);
            port_range(theirs, sizeof theirs, at_a ? l->port_b : l->port_a,
                       l->count);
            printf(" %s->%d:%s", mine, at_a ? l->b : l->a, theirs);
            if (l->count > 1)
                printf("(x%d)", l->count);
        }
        const char *name = mrc_topo_node_name(t, u);
        if (name)
            printf("  \"%s\"", name);
        printf("\n");
    }
    if (n > SHOWN)
        printf("  ... %d more nodes (--json lists them all)\n", n - SHOWN);
}

static int topo_show(int argc, char **argv)
{
    const char *cmd = "mrc topo show";
    const char *pos[1], *max_memory = NULL;
    int json = 0, npos = 0;
    const cli_opt_t opts[] = {
        {"json", 0, NULL, &json}, {"max-memory", 0, &max_memory, NULL}, {0}};
    int rc = cli_parse(cmd, "topo", argc, argv, opts, pos, 1, 1, &npos);
    if (rc == CLI_OK)
        rc = cli_max_memory(cmd, "topo", max_memory);
    if (rc != CLI_OK)
        return rc;
    mrc_topo_t *t = NULL;
    mrc_status_t st = mrc_topo_create(pos[0], &t);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    if (json) {
        char *text = NULL;
        st = mrc_topo_to_json(t, &text);
        if (st == MRC_OK)
            fputs(text, stdout);
        mrc_free(text);
    } else {
        print_summary(t);
    }
    mrc_topo_destroy(t);
    return st == MRC_OK ? CLI_OK : cli_fail(cmd, st);
}

static int topo_check(int argc, char **argv)
{
    const char *cmd = "mrc topo check";
    const char *pos[1], *max_memory = NULL;
    int npos = 0;
    const cli_opt_t opts[] = {{"max-memory", 0, &max_memory, NULL}, {0}};
    int rc = cli_parse(cmd, "topo", argc, argv, opts, pos, 1, 1, &npos);
    if (rc == CLI_OK)
        rc = cli_max_memory(cmd, "topo", max_memory);
    if (rc != CLI_OK)
        return rc;
    mrc_topo_t *t = NULL;
    mrc_status_t st = mrc_topo_create(pos[0], &t);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    printf("%s: ok: %d nodes, %d physical links (%d entries)\n", pos[0],
           mrc_topo_num_nodes(t), mrc_topo_num_physical_links(t),
           mrc_topo_num_links(t));
    mrc_topo_destroy(t);
    return CLI_OK;
}

static int topo_draw(int argc, char **argv)
{
    const char *cmd = "mrc topo draw";
    const char *pos[1], *out = NULL;
    int npos = 0;
    const cli_opt_t opts[] = {{"output", 'o', &out, NULL}, {0}};
    int rc = cli_parse(cmd, "topo", argc, argv, opts, pos, 1, 1, &npos);
    if (rc != CLI_OK)
        return rc;
    if (!out)
        return cli_usage(cmd, "topo", "missing -o FILE.svg or -o FILE.dot");
    int svg = cli_has_ext(out, ".svg");
    if (!svg && !cli_has_ext(out, ".dot"))
        return cli_usage(cmd, "topo",
                         "cannot tell the format of '%s': name it *.svg or "
                         "*.dot",
                         out);
    mrc_topo_t *t = NULL;
    mrc_status_t st = mrc_topo_create(pos[0], &t);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    char *dot = NULL;
    st = mrc_topo_to_dot(t, &dot);
    mrc_topo_destroy(t);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    rc = svg ? cli_render_svg(cmd, dot, out)
             : cli_write_file(cmd, out, dot, strlen(dot));
    mrc_free(dot);
    if (rc == CLI_OK)
        fprintf(stderr, "wrote %s\n", out);
    return rc;
}

int cmd_topo(int argc, char **argv)
{
    if (argc < 1)
        return cli_usage("mrc topo", "topo",
                         "missing sub-command: show, check or draw");
    const char *sub = argv[0];
    if (strcmp(sub, "show") == 0)
        return topo_show(argc - 1, argv + 1);
    if (strcmp(sub, "check") == 0)
        return topo_check(argc - 1, argv + 1);
    if (strcmp(sub, "draw") == 0)
        return topo_draw(argc - 1, argv + 1);
    if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0) {
        help_topo();
        return CLI_OK;
    }
    return cli_usage("mrc topo", "topo",
                     "unknown sub-command '%s' (show, check, draw)", sub);
}
