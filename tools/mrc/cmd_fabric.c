/* mrc fabric: schedule an exchange on a chip's tile fabric and check it
 * cycle by cycle, with and without direction gating. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"

void help_fabric(void)
{
    printf(
        "usage: mrc fabric --pattern P [--tiles T] [--columns C]\n"
        "                  [--seed S] [--bytes B] [--packet-bytes N] "
        "[--json]\n"
        "                  [--max-memory SIZE]\n"
        "\n"
        "Direction-gated tile exchange inside a chip: T tiles in C\n"
        "North-South columns along an East-West exchange; each tile's\n"
        "output wires pass one latch per column; a packet carries no\n"
        "destination, only East/West flags, and arrives after a delay fixed\n"
        "by distance, where the recipient's multiplexer selects it.\n"
        "Schedules the exchange at compile time (send cycles, flags,\n"
        "multiplexer selections), reports its length beside a lower bound,\n"
        "then simulates it cycle by cycle: packets delivered at their cycle,\n"
        "misdelivered, late or missed, and latch toggles with the flags\n"
        "gating the latches and without.\n"
        "\n"
        "--pattern       neighbour   every tile to its row's tile one column\n"
        "                            East (the last column's: West)\n"
        "                broadcast   tile 0 to all others, one multicast\n"
        "                random      every tile to 8 random tiles (--seed)\n"
        "                all-to-all  every tile to every other tile\n"
        "                FILE.json   {\"tiles\": T, \"columns\": C,\n"
        "                             \"exchange\": [{\"source\": 0,\n"
        "                             \"destinations\": [1, 2], \"bytes\": "
        "8}]}\n"
        "                            (tiles, columns optional: the options\n"
        "                            win over the file; bytes default 4)\n"
        "--tiles         tiles on the chip (default 1472)\n"
        "--columns       columns (default 16)\n"
        "--seed          seed of the random pattern (default 1)\n"
        "--bytes         bytes per transfer of a named pattern (default: one\n"
        "                packet)\n"
        "--packet-bytes  bytes a packet carries (default 4)\n"
        "--json          one JSON object instead of the table\n"
        "\n"
        "Exit status: 0 when every packet is delivered at its cycle, 1 when\n"
        "the simulation finds a fault (or memory runs out), 2 on bad usage\n"
        "or input (such as an exchange whose tables would pass 4 GiB).\n");
}

typedef struct report {
    const char *pattern;
    const mrc_fabric_t *f;
    mrc_fabric_schedule_info_t info;
    mrc_fabric_stats_t sim;
    double schedule_s, simulate_s;
} report_t;

static double saved(const report_t *r)
{
    return r->sim.toggles_ungated
               ? 1.0 - (double)r->sim.toggles / (double)r->sim.toggles_ungated
               : 0.0;
}

static void print_json(const report_t *r)
{
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    mrc__sb_puts(&sb, "{\"pattern\": ");
    mrc__sb_json_string(&sb, r->pattern);
    mrc__sb_printf(
        &sb,
        ", \"tiles\": %d, \"columns\": %d, \"rows\": %d, "
        "\"packet_bytes\": %d, \"packets\": %llu, "
        "\"deliveries\": %llu, \"delivered\": %llu, "
        "\"misdelivered\": %llu, \"late\": %llu, "
        "\"missed\": %llu, \"slipped\": %llu, \"cycles\": %lld, "
        "\"simulated_cycles\": %lld, "
        "\"lower_bound_cycles\": %lld, \"toggles\": %llu, "
        "\"toggles_ungated\": %llu, \"saved\": ",
        mrc_fabric_tiles(r->f), mrc_fabric_columns(r->f), mrc_fabric_rows(r->f),
        mrc_fabric_packet_bytes(r->f), (unsigned long long)r->info.packets,
        (unsigned long long)r->info.deliveries,
        (unsigned long long)r->sim.delivered,
        (unsigned long long)r->sim.misdelivered,
        (unsigned long long)r->sim.late, (unsigned long long)r->sim.missed,
        (unsigned long long)r->sim.slipped, (long long)r->info.cycles,
        (long long)r->sim.cycles, (long long)r->info.lower_bound_cycles,
        (unsigned long long)r->sim.toggles,
        (unsigned long long)r->sim.toggles_ungated);
    mrc__sb_double(&sb, saved(r));
    mrc__sb_puts(&sb, ", \"schedule_seconds\": ");
    mrc__sb_double(&sb, r->schedule_s);
    mrc__sb_puts(&sb, ", \"simulate_seconds\": ");
    mrc__sb_double(&sb, r->simulate_s);
    mrc__sb_puts(&sb, "}\n");
    if (!sb.failed)
        fputs(sb.data, stdout);
    mrc__sb_free(&sb);
}

static void print_table(const report_t *r)
{
    const mrc_fabric_t *f = r->f;
    printf("fabric    %d tiles in %d columns of %d, %d-byte packets\n",
           mrc_fabric_tiles(f), mrc_fabric_columns(f), mrc_fabric_rows(f),
           mrc_fabric_packet_bytes(f));
    printf("exchange  %s: %llu packets, %llu deliveries\n", r->pattern,
           (unsigned long long)r->info.packets,
           (unsigned long long)r->info.deliveries);
    printf("schedule  %lld cycles, lower bound %lld (%.3fx), in %.2f s\n",
           (long long)r->info.cycles, (long long)r->info.lower_bound_cycles,
           r->info.lower_bound_cycles
               ? (double)r->info.cycles / (double)r->info.lower_bound_cycles
               : 1.0,
           r->schedule_s);
    printf("check     %llu delivered, %llu misdelivered, %llu late, %llu "
           "missed (simulated %lld cycles in %.2f s)\n",
           (unsigned long long)r->sim.delivered,
           (unsigned long long)r->sim.misdelivered,
           (unsigned long long)r->sim.late, (unsigned long long)r->sim.missed,
           (long long)r->sim.cycles, r->simulate_s);
    printf("toggles   %llu with direction flags, %llu without: %.1f%% "
           "saved\n",
           (unsigned long long)r->sim.toggles,
           (unsigned long long)r->sim.toggles_ungated, 100.0 * saved(r));
}

/* The options of mrc fabric, as given and as read. */
typedef struct fabric_args {
    const char *tiles_s, *columns_s, *pattern, *seed_s, *bytes_s, *packet_s;
    long tiles, columns, packet; /* 0: the fabric's default */
    uint64_t seed, bytes;
} fabric_args_t;

/* The numbers of the options; CLI_USAGE naming the first bad one. */
static int read_numbers(const char *cmd, fabric_args_t *a)
{
    a->seed = 1;
    if (a->tiles_s && mrc__parse_long(a->tiles_s, 1, 1 << 20, &a->tiles))
        return cli_usage(cmd, "fabric", "--tiles '%s' is not 1 to %d",
                         a->tiles_s, 1 << 20);
    if (a->columns_s && mrc__parse_long(a->columns_s, 1, 1 << 20, &a->columns))
        return cli_usage(cmd, "fabric", "--columns '%s' is not 1 to %d",
                         a->columns_s, 1 << 20);
    if (a->packet_s && mrc__parse_long(a->packet_s, 1, 1 << 20, &a->packet))
        return cli_usage(cmd, "fabric", "--packet-bytes '%s' is not 1 to %d",
                         a->packet_s, 1 << 20);
    long sd = 0;
    if (a->seed_s) {
        if (mrc__parse_long(a->seed_s, 0, 0x7fffffffL, &sd))
            return cli_usage(cmd, "fabric", "--seed '%s' is not a number",
                             a->seed_s);
        a->seed = (uint64_t)sd;
    }
    if (a->bytes_s && (mrc__parse_size(a->bytes_s, &a->bytes) || a->bytes == 0))
        return cli_usage(cmd, "fabric", "--bytes '%s' is not a size",
                         a->bytes_s);
    return CLI_OK;
}

/* The exchange: a named pattern made for the fabric's size, or a file
 * (whose tiles and columns are the defaults). CLI status. */
static int make_exchange(const char *cmd, fabric_args_t *a, mrc_exchange_t **x)
{
    mrc_status_t st = MRC_OK;
    if (mrc_exchange_is_pattern(a->pattern)) {
        /* The fabric's defaults, so the pattern is made for it. */
        mrc_fabric_config_t probe = {(int)a->tiles, (int)a->columns,
                                     (int)a->packet};
        mrc_fabric_t *f = NULL;
        st = mrc_fabric_create(&probe, &f);
        if (st == MRC_OK)
            st = mrc_exchange_pattern(
                a->pattern, mrc_fabric_tiles(f), mrc_fabric_columns(f), a->seed,
                a->bytes ? a->bytes : (uint64_t)mrc_fabric_packet_bytes(f), x);
        mrc_fabric_destroy(f);
    } else {
        int ft = 0, fc = 0;
        if (access(a->pattern, F_OK) != 0 && !cli_has_ext(a->pattern, ".json"))
            return cli_usage(cmd, "fabric",
                             "unknown pattern '%s' (neighbour, broadcast, "
                             "random, all-to-all, or a JSON file)",
                             a->pattern);
        if (a->bytes_s || a->seed_s)
            return cli_usage(cmd, "fabric",
                             "--bytes and --seed are for the "
                             "named patterns, not a file");
        st = mrc_exchange_read(a->pattern, x, &ft, &fc);
        if (st == MRC_OK && !a->tiles)
            a->tiles = ft;
        if (st == MRC_OK && !a->columns)
            a->columns = fc;
    }
    return st == MRC_OK ? CLI_OK : cli_fail(cmd, st);
}

/* Schedules x on the fabric, checks the schedule cycle by cycle, and
 * reports; CLI_FAIL if a delivery missed its cycle. */
static int schedule_and_check(const char *cmd, const fabric_args_t *a,
                              const mrc_exchange_t *x, int json)
{
    report_t r = {a->pattern, NULL, {0}, {0}, 0, 0};
    mrc_fabric_config_t cfg = {(int)a->tiles, (int)a->columns, (int)a->packet};
    mrc_fabric_t *f = NULL;
    mrc_fabric_schedule_t *s = NULL;
    mrc_status_t st = mrc_fabric_create(&cfg, &f);
    int rc;
    r.f = f;
    double t0 = mrc__ref_now_s();
    if (st == MRC_OK) {
        cli_progress(0, "mrc fabric: scheduling %zu transfers",
                     mrc_exchange_entries(x));
        st = mrc_fabric_schedule(f, x, &s);
    }
    double t1 = mrc__ref_now_s();
    if (st == MRC_OK) {
        mrc_fabric_schedule_info(s, &r.info);
        cli_progress(0, "mrc fabric: simulating %llu packets",
                     (unsigned long long)r.info.packets);
        st = mrc_fabric_simulate(f, s, &r.sim);
    }
    cli_progress(0, NULL);
    r.schedule_s = t1 - t0;
    r.simulate_s = mrc__ref_now_s() - t1;
    if (st != MRC_OK) {
        rc = cli_fail(cmd, st);
    } else {
        if (json)
            print_json(&r);
        else
            print_table(&r);
        int faults = r.sim.delivered != r.info.deliveries ||
                     r.sim.misdelivered || r.sim.late || r.sim.missed;
        if (faults)
            fprintf(stderr,
                    "%s: the schedule failed its check: %llu of %llu "
                    "deliveries at their cycle\n",
                    cmd, (unsigned long long)r.sim.delivered,
                    (unsigned long long)r.info.deliveries);
        rc = faults ? CLI_FAIL : CLI_OK;
    }
    mrc_fabric_schedule_destroy(s);
    mrc_fabric_destroy(f);
    return rc;
}

int cmd_fabric(int argc, char **argv)
{
    const char *cmd = "mrc fabric";
    const char *max_memory = NULL;
    fabric_args_t a;
    memset(&a, 0, sizeof a);
    int json = 0, npos = 0;
    const cli_opt_t opts[] = {{"tiles", 't', &a.tiles_s, NULL},
                              {"columns", 'c', &a.columns_s, NULL},
                              {"pattern", 'p', &a.pattern, NULL},
                              {"seed", 's', &a.seed_s, NULL},
                              {"bytes", 'b', &a.bytes_s, NULL},
                              {"packet-bytes", 0, &a.packet_s, NULL},
                              {"max-memory", 0, &max_memory, NULL},
                              {"json", 0, NULL, &json},
                              {0}};
    int rc = cli_parse(cmd, "fabric", argc, argv, opts, NULL, 0, 0, &npos);
    if (rc == CLI_OK)
        rc = cli_max_memory(cmd, "fabric", max_memory);
    if (rc != CLI_OK)
        return rc;
    if (!a.pattern)
        return cli_usage(cmd, "fabric", "--pattern is required");
    mrc_exchange_t *x = NULL;
    if ((rc = read_numbers(cmd, &a)) != CLI_OK ||
        (rc = make_exchange(cmd, &a, &x)) != CLI_OK)
        return rc;
    rc = schedule_and_check(cmd, &a, x, json);
    mrc_exchange_destroy(x);
    return rc;
}
