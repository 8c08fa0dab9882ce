/* mrc: the command line. One file per sub-command; this one dispatches. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mrc COMMAND [ARGS...]\n"
            "\n"
            "Multi-ring collective communication: describe a processor\n"
            "interconnect, embed link-disjoint rings in it, and run or\n"
            "simulate collectives on them.\n"
            "\n"
            "commands:\n"
            "  topo show SPEC [--json]       summarise a topology, or print "
            "it as a file\n"
            "  topo check FILE               validate a topology file\n"
            "  topo draw SPEC -o OUT         draw a topology (.svg or .dot)\n"
            "  rings SPEC [--strategy S]     embed rings, show loads and "
            "figures\n"
            "  compile SPEC --collective C   one program for every node\n"
            "  run                           collectives on real data in "
            "threads,\n"
            "                                checked and timed (the main "
            "job)\n"
            "  sim SPEC --collective C       simulate the program on the "
            "links:\n"
            "                                time, utilisation, energy\n"
            "  explain SPEC --collective C   every algorithm family's "
            "predicted\n"
            "                                time, and the one chosen\n"
            "  calibrate [-o PROFILE]        measure this host's copy, "
            "reduction and\n"
            "                                message costs into a profile\n"
            "  launch -n N -- PROGRAM ...    N processes of PROGRAM as one "
            "job\n"
            "  fabric --pattern P            schedule and check an exchange "
            "on a\n"
            "                                chip's direction-gated tile\n"
            "                                fabric\n"
            "  help [COMMAND]                show help for a command\n"
            "\n"
            "SPEC is a generator such as hcm8, ring:8, torus2d:4,4,bw=50 or a\n"
            "topology file (docs/topology-format.md); 'mrc help topo' lists\n"
            "them all.\n"
            "\n"
            "Output files (-o) are written whole or not at all: a new file\n"
            "beside the target, renamed over it; a symbolic link there is\n"
            "replaced, not followed; a device or FIFO (/dev/null,\n"
            "/dev/stdout) is written through; a directory is refused.\n"
            "\n"
            "options:\n"
            "  -h, --help     show this help\n"
            "  --version      print the version\n"
            "\n"
            "Exit status: 0 success, 1 failure, 2 bad usage or bad input.\n");
}

static int cmd_help(int argc, char **argv)
{
    if (argc == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (argc == 1 && strcmp(argv[0], "topo") == 0) {
        help_topo();
        return CLI_OK;
    }
    if (argc == 1 && strcmp(argv[0], "rings") == 0) {
        help_rings();
        return CLI_OK;
    }
    if (argc == 1 && strcmp(argv[0], "compile") == 0) {
        help_compile();
        return CLI_OK;
    }
    if (argc == 1 && strcmp(argv[0], "run") == 0) {
        help_run();
        return CLI_OK;
    }
    if (argc == 1 && strcmp(argv[0], "sim") == 0) {
        help_sim();
        return CLI_OK;
    }
    if (argc == 1 && strcmp(argv[0], "launch") == 0) {
        help_launch();
        return CLI_OK;
    }
    if (argc == 1 && strcmp(argv[0], "fabric") == 0) {
        help_fabric();
        return CLI_OK;
    }
    if (argc == 1 && strcmp(argv[0], "explain") == 0) {
        help_explain();
        return CLI_OK;
    }
    if (argc == 1 && strcmp(argv[0], "calibrate") == 0) {
        help_calibrate();
        return CLI_OK;
    }
    fprintf(stderr,
            "mrc help: no help on '%s' (topics: topo, rings, "
            "compile, run, sim, explain, calibrate, launch, fabric)\n",
            argv[0]);
    return CLI_USAGE;
}

/* Whether the command sets a limit of its own (--max-memory), which
 * comes before $MRC_MAX_MEMORY. */
static int max_memory_given(int argc, char **argv)
{
    for (int i = 2; i < argc; i++)
        if (strncmp(argv[i], "--max-memory", 12) == 0 &&
            (argv[i][12] == '\0' || argv[i][12] == '='))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("mrc %s\n", mrc_version());
        return CLI_OK;
    }
    if (strcmp(cmd, "help") == 0)
        return cmd_help(argc - 2, argv + 2);
    /* $MRC_MAX_MEMORY bounds what every command asks for: one that cannot
     * be read is refused before any command runs, not taken for the
     * default (unless the command sets its own limit). */
    if (!max_memory_given(argc, argv) && mrc__check_memory_env() != MRC_OK) {
        fprintf(stderr, "mrc: %s\n", mrc_last_error());
        return CLI_USAGE;
    }
    if (strcmp(cmd, "topo") == 0)
        return cmd_topo(argc - 2, argv + 2);
    if (strcmp(cmd, "rings") == 0)
        return cmd_rings(argc - 2, argv + 2);
    if (strcmp(cmd, "compile") == 0)
        return cmd_compile(argc - 2, argv + 2);
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 2, argv + 2);
    if (strcmp(cmd, "sim") == 0)
        return cmd_sim(argc - 2, argv + 2);
    if (strcmp(cmd, "launch") == 0)
        return cmd_launch(argc - 2, argv + 2);
    if (strcmp(cmd, "fabric") == 0)
        return cmd_fabric(argc - 2, argv + 2);
    if (strcmp(cmd, "explain") == 0)
        return cmd_explain(argc - 2, argv + 2);
    if (strcmp(cmd, "calibrate") == 0)
        return cmd_calibrate(argc - 2, argv + 2);
    fprintf(stderr, "mrc: unknown command '%s' (see 'mrc --help')\n", cmd);
    return CLI_USAGE;
}
