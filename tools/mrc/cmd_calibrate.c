/* mrc calibrate: measures this host's copy and reduction rates and a
 * transport's message and sync costs into a profile (mrc/profile.h) for
 * mrc explain, the selector and the simulator. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "calibrate.h"
#include "cli.h"

void help_calibrate(void)
{
    printf("usage: mrc calibrate [--transport threads|shm|mpi] [-n P]\n"
           "                     [-o PROFILE] [--quick] [--wait S] [--json]\n"
           "       mrc calibrate --check [--transport threads|shm]\n"
           "                     [--profile PROFILE] [-n P] [--runs K]\n"
           "                     [-c COLLECTIVE] [--calls K] [--quick]\n"
           "                     [--wait S] [--json]\n"
           "\n"
           "Measures what one node of this host costs beside its links, with\n"
           "short probes (each figure the median of several runs), and writes\n"
           "a profile (versioned JSON, docs/simulator.md, \"Profiles\") for\n"
           "'mrc explain --profile', 'mrc sim --profile' and MRC_PROFILE:\n"
           "\n"
           "  copy bandwidth of one node in cache and beyond, and where the\n"
           "    cache ends (a sweep of vector sizes);\n"
           "  the memory system's bandwidth when all P nodes copy at once;\n"
           "  the reduction kernel's rate for every dtype and op, in cache\n"
           "    and beyond;\n"
           "  a sync: a flag handed between two spinning threads (shm: two\n"
           "    processes), one way;\n"
           "  a message: a 2-element allreduce of the same shape every\n"
           "    call between two ranks of the transport, the message cost\n"
           "    fitted so that the simulator times that call as measured.\n"
           "\n"
           "--transport  threads (default): ranks as threads of this process;\n"
           "             shm: two processes over a shared segment, as 'mrc\n"
           "             launch' runs them; mpi: only under mpirun\n"
           "             (mpirun -n P mrc calibrate --transport mpi): MPI\n"
           "             between ranks 0 and 1 as between hosts (a sync\n"
           "             is a 0-byte round trip); rank 0 writes\n"
           "-n P         nodes that share the memory system (default 2;\n"
           "             mpi: the job's ranks)\n"
           "-o PROFILE   write the profile there (whole or not at all);\n"
           "             without it, only the summary is printed\n"
           "--quick      fewer and smaller probes (about 1 s instead of 12):\n"
           "             rougher figures, for tests; never waits (--wait 0)\n"
           "--wait S     a probe (or a --check row) timed while the host\n"
           "             ran at half its speed is timed again once it is\n"
           "             back, waiting at most S seconds in all (default\n"
           "             300; 0: never wait, keep it and warn)\n"
           "--json       print the profile instead of the summary\n"
           "--check      the validation sweep: every family's allreduce of\n"
           "             4 KiB to 64 MiB (--quick: to 256 KiB, shorter loops)\n"
           "             on P ranks (threads of this process; shm: P\n"
           "             processes started as 'mrc launch' starts them),\n"
           "             each row the median of K timed loops and their\n"
           "             spread (slowest / fastest) beside the simulator's\n"
           "             time for the program it ran with the profile\n"
           "             (--profile, of the same transport, else one\n"
           "             measured first) and their ratio; rows outside\n"
           "             0.8-1.25 (0.67-1.5 when ranks\n"
           "             outnumber cores) are marked '*', or '*~' when one\n"
           "             of their runs is within. The header says what\n"
           "             was measured: transport, P, profile, host, load,\n"
           "             and this host's copy rates now beside the\n"
           "             profile's (a warning when either is outside\n"
           "             0.8-1.25 of it: the profile describes the host\n"
           "             as it was then), and its speed: the canary\n"
           "             calibrate ran beside its probes (a 4 KiB\n"
           "             allreduce of two threads), waited for while\n"
           "             more than twice the profile's (--wait), and a\n"
           "             warning when outside half to twice it\n"
           "--runs K     timed loops a --check row is the median of\n"
           "             (default 5, at most 99)\n"
           "--calls K    predict each --check row as a call in a run of K\n"
           "             back to back (1-16; 'mrc help sim', --calls), as\n"
           "             its loop runs them; 1: a call alone (default 8\n"
           "             for reduce and broadcast on shm, else 1)\n"
           "-c, --collective C\n"
           "             what --check calls (default allreduce; reduce,\n"
           "             broadcast, reduce-scatter, allgather: float32\n"
           "             sum, root 0; a row's bytes are a node's vector)\n"
           "\n"
           "A progress bar goes to stderr when it is a terminal.\n");
}

/* The summary's lines on the kernel's copies and a send buffer's way. */
static void summary_kernel(const mrc_profile_t *p)
{
    if (p->kernel_gbps > 0)
        printf("kernel     %.2f GB/s through the kernel from another "
               "process\n",
               p->kernel_gbps);
    if (p->kernel_gbps_cache > 0)
        printf("           %.2f GB/s of a send buffer in cache (its lines "
               "clean)\n",
               p->kernel_gbps_cache);
    double copied = 0, by_ref = 0;
    cal_send_ref_us(&copied, &by_ref);
    if (copied > 0 && by_ref > 0)
        printf("           a send exposed by reference %s (an allgather of "
               "128 KiB a rank: %.2f us copied in, %.2f read there)\n",
               p->send_by_ref > 0 ? "is read there when it is the last call's"
                                  : "that fits its owner's area is copied in",
               copied, by_ref);
    else if (p->kernel_gbps > 0)
        printf("           %s\n",
               p->send_by_ref > 0
                   ? "so a send exposed by reference is read there when it "
                     "is the last call's (faster than its owner's copy into "
                     "its area and the reader's)"
                   : "so a send exposed by reference that fits its owner's "
                     "area is copied into it (the rates do not say the "
                     "kernel's read is the faster)");
}

/* ... on the calls written around the caches. */
static void summary_stream(const mrc_profile_t *p)
{
    if (p->stream_bytes > 0) {
        char from[32];
        printf("stream     writes around the caches from a receive buffer "
               "of %s (the rings timed both ways at 1-16 MiB)\n",
               mrc__format_bytes((uint64_t)p->stream_bytes, from, sizeof from));
    }
    if (p->stream_gbps > 0)
        printf("           %.2f GB/s moving a call's data written around "
               "them, in cache\n",
               p->stream_gbps);
    else if (p->stream_bytes > 0)
        printf("           no rate of their own for the calls written "
               "around them: its fit reached a bound (an unsteady host); "
               "timed as through them\n");
}

/* The progress bar: redrawn in place on a terminal (cli_progress), and
 * cleared once the work is done. */
static void bar(void *ctx, double done, const char *what)
{
    (void)ctx;
    char b[40];
    if (done >= 1)
        cli_progress(0, NULL);
    else
        cli_progress(0, "calibrate %s %3d%% %-12s",
                     cli_progress_bar(done, b, sizeof b),
                     (int)(done * 100 + 0.5), what);
}

static void summary(const mrc_profile_t *p, const char *path)
{
    char cache[32];
    printf("calibrate  %s, %d ranks on %d cores\n", p->transport, p->ranks,
           p->cores);
    printf("copy       %.2f GB/s in cache (a working set up to %s), "
           "%.2f GB/s beyond\n",
           p->copy_gbps_cache,
           mrc__format_bytes((uint64_t)p->cache_bytes, cache, sizeof cache),
           p->copy_gbps_memory);
    if (p->peer_gbps_cache > 0)
        printf("peer       %.2f GB/s taking what another node wrote, in "
               "cache\n",
               p->peer_gbps_cache);
    if (p->peer_contention > 0)
        printf("           each other node reading at once costs a "
               "reader %.0f%% more\n",
               100 * p->peer_contention);
    if (p->peer_ramp_bytes > 0)
        printf("           a read's first %.0f bytes at half the rate\n",
               p->peer_ramp_bytes);
    if (p->copy_gbps_shared > 0)
        printf("           %.2f GB/s once its own buffers have left its "
               "core's cache\n",
               p->copy_gbps_shared);
    else if (cal_own_level_at_bound())
        printf("           no rate of its own once its buffers have left its "
               "core's cache: its fit reached a bound (an unsteady host, or "
               "no such level)\n");
    summary_kernel(p);
    if (p->peer_gbps_shared > 0)
        printf("           %.2f GB/s once it has left the writer's core\n",
               p->peer_gbps_shared);
    if (p->window_gbps > 0)
        printf("window     %.2f GB/s taking a peer's window, just copied "
               "in, in cache\n",
               p->window_gbps);
    else if (cal_windows_at_bound())
        printf("window     taken at the peer rate: its fit reached a bound "
               "(an unsteady host, or no apart rate)\n");
    summary_stream(p);
    if (p->spin_share > 0)
        printf("spin       a waiting node takes %.2f of a core\n",
               p->spin_share);
    if (p->rendezvous_bytes > 0) {
        char rdv[32];
        printf(
            "slots      %.2f GB/s for a message below %s, "
            "rendezvous %.3f us from it\n",
            p->slot_gbps,
            mrc__format_bytes((uint64_t)p->rendezvous_bytes, rdv, sizeof rdv),
            p->rendezvous_us);
    }
    printf("shared     %.2f GB/s for all %d nodes beyond cache\n",
           p->memory_gbps_shared, p->nodes_per_memory);
    printf("reduce     float32 sum %.2f GB/s in cache, %.2f beyond; "
           "bfloat16 sum %.2f, %.2f\n",
           p->reduce_gbps_cache[MRC_FLOAT32][MRC_SUM],
           p->reduce_gbps_memory[MRC_FLOAT32][MRC_SUM],
           p->reduce_gbps_cache[MRC_BFLOAT16][MRC_SUM],
           p->reduce_gbps_memory[MRC_BFLOAT16][MRC_SUM]);
    printf("message    %.3f us on its receiver's core, %.3f us on its "
           "sender's, %.3f us on its way, beside a sync of %.3f us, a get "
           "%.3f us\n",
           p->message_us, p->send_us, p->latency_us, p->sync_us, p->get_us);
    if (p->turn_us > 0)
        printf("turn       %.3f us more a message (%.2f of it in a quiet "
               "step), %.3f a flag, %d nodes on %d cores\n",
               p->turn_us, p->quiet_turn_share, p->flag_turn_us,
               p->nodes_per_memory, p->cores);
    if (path)
        printf("profile    %s\n", path);
}

/* mpirun's launchers say so in the environment. */
static int under_mpirun(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") ||
           getenv("PMIX_RANK");
}

/* A measurement that could not start: MPI outside mpirun or without
 * MPI built in, an unknown transport, an output that is a directory. */
static int check_measure(const char *cmd, const char *transport,
                         const char *out)
{
    if (strcmp(transport, "mpi") == 0 && !under_mpirun())
        return cli_usage(cmd, "calibrate",
                         "--transport mpi measures MPI between the ranks "
                         "of a job: run it under mpirun");
#if !MRC_HAVE_MPI
    if (strcmp(transport, "mpi") == 0)
        return cli_usage(cmd, "calibrate",
                         "--transport mpi: this mrc was built without MPI");
#endif
    if (strcmp(transport, "threads") != 0 && strcmp(transport, "shm") != 0 &&
        strcmp(transport, "mpi") != 0)
        return cli_usage(cmd, "calibrate",
                         "--transport '%s' (threads, shm or mpi)", transport);
    /* A directory would be refused only after the probes' seconds. */
    struct stat info;
    if (out && stat(out, &info) == 0 && S_ISDIR(info.st_mode))
        return cli_usage(cmd, "calibrate", "-o %s is a directory", out);
    return CLI_OK;
}

/* How steady the host was while the probes ran: a line of the summary,
 * and where a probe kept ran in a slow spell, a warning (whatever the
 * output). */
static void tell_steady(const char *cmd, int summary_line)
{
    cal_guard_t s = cal_steady_report();
    if (s.measured == 0)
        return;
    if (summary_line)
        printf("host       %s: a 4 KiB call took %.2f-%.2f us beside the %d "
               "probes (%d timed again, %.0f s waited)\n",
               cal_guard_held(&s) ? "steady" : "unsteady", s.best_us,
               s.worst_us, s.measured, s.retried, s.waited_s);
    fflush(stdout);
    if (!cal_guard_held(&s))
        fprintf(stderr,
                "%s: warning: the host ran at less than half its speed "
                "during %d of %d probes (a 4 KiB call: %.2f us at best, "
                "%.2f beside a probe kept); the profile may not describe "
                "it: calibrate again when the host is quiet\n",
                cmd, s.unsteady, s.measured, s.best_us, s.worst_us);
}

/* A rate left at its fit's lower bound: no rate in range explained its
 * probe, and what uses it is predicted far off. Named, whatever the
 * output, beside the profile written. */
static void tell_floor(const char *cmd, const mrc_profile_t *p)
{
    const char *names[8];
    int n = cal_rates_at_floor(p, names, 8);
    for (int i = 0; i < n && i < 8; i++)
        fprintf(stderr,
                "%s: warning: %s came out at its fit's lower bound, 0.01 "
                "GB/s: no rate in range explained its probe (a host that "
                "changed speed, or a probe that did not depend on it); "
                "predictions that use it will be far off: calibrate again "
                "when the host is quiet\n",
                cmd, names[i]);
}

/* cal_measure, and the copy rates measured again after it: a host whose
 * memory changed speed while it was measured (on the build machine a
 * calibration measured copies in cache at 65 GB/s where the host copied
 * at 130 before and after) is measured once more; a profile whose rates
 * still do not hold is kept with a warning. --quick: once, no look. */
static mrc_status_t measure_held(const char *cmd, const cal_plan_t *plan,
                                 int quick, mrc_profile_t *prof)
{
    cal_rates_t r = {.as_calibrated = 1};
    mrc_status_t st = MRC_OK;
    for (int attempt = 0; attempt < 2 && st == MRC_OK; attempt++) {
        if (attempt > 0)
            fprintf(stderr,
                    "%s: the host copies at %.2f (in cache) and %.2f "
                    "(beyond) times the rates just measured: measuring "
                    "again\n",
                    cmd, r.cache_ratio, r.mem_ratio);
        st = cal_measure(plan, prof);
        if (st != MRC_OK || quick)
            return st;
        cal_rates_beside(prof, &r);
        if (r.as_calibrated)
            return MRC_OK;
    }
    if (st == MRC_OK)
        fprintf(stderr,
                "%s: warning: the host copies at %.2f (in cache) and %.2f "
                "(beyond) times the rates the profile measured: it may not "
                "describe the host: calibrate again when it is quiet\n",
                cmd, r.cache_ratio, r.mem_ratio);
    return st;
}

/* The probes, then the profile: written (-o), checked (--check), printed
 * as JSON or summed up. */
static int measure(const char *cmd, cal_check_t *co, int quick, const char *out,
                   int check)
{
    const char *transport = co->transport;
    int rc = CLI_OK;
    cal_plan_t plan = {.transport = transport,
                       .ranks = co->nranks,
                       .all_ops_beyond = !quick,
                       .trips = quick ? 2000 : 20000,
                       .steady_wait_s = co->wait_s,
                       .progress = isatty(2) ? bar : NULL};
    cal_plan_sizes(&plan, quick);
    mrc_profile_t prof;
    mrc_status_t st = MRC_OK;
#if MRC_HAVE_MPI
    if (strcmp(transport, "mpi") == 0) {
        int rank0 = 0;
        rc = cal_mpi(cmd, &plan, &prof, &rank0);
        /* Rank 0 alone writes and prints. */
        if (rc != CLI_OK || !rank0)
            return rc;
    } else
#endif
        st = measure_held(cmd, &plan, quick, &prof);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    char *text = NULL;
    if ((st = mrc_profile_to_json(&prof, &text)) != MRC_OK)
        return cli_fail(cmd, st);
    if (out && (rc = cli_write_file(cmd, out, text, strlen(text))) != CLI_OK)
        goto done;
    tell_floor(cmd, &prof);
    if (check) {
        tell_steady(cmd, 0);
        co->profile = out; /* the header names it, if it was written */
        rc = cal_check(cmd, &prof, co);
    } else if (co->json) {
        tell_steady(cmd, 0);
        fputs(text, stdout);
    } else {
        summary(&prof, out);
        tell_steady(cmd, 1);
    }
done:
    mrc_free(text);
    return rc;
}

/* A number option of --check's (v NULL: *out stays): refused without
 * --check, or outside min..max, said to be no `what`. A CLI status. */
static int check_number(const char *cmd, int check, const char *opt,
                        const char *v, long min, long max, const char *what,
                        long *out)
{
    if (!v)
        return CLI_OK;
    if (!check)
        return cli_usage(cmd, "calibrate", "%s goes with --check", opt);
    if (mrc__parse_long(v, min, max, out))
        return cli_usage(cmd, "calibrate", "%s '%s' is not %s (%ld..%ld)", opt,
                         v, what, min, max);
    return CLI_OK;
}

/* --check's run of calls a row is predicted as, without --calls: on shm
 * a loop of rooted calls is held by how soon the root sends the next (a
 * call in a run: with the sender's cost, 72 of 122 rows of one sweep
 * within against 70 alone); an allreduce's calls wait on one another,
 * and a run of them is timed as one alone. threads has no sender's cost
 * in the model, and its rooted rows came out better alone (27 of 61
 * against 24 in runs). */
static int default_calls(mrc_collective_t collective, const char *transport)
{
    int rooted = collective == MRC_BROADCAST || collective == MRC_REDUCE;
    return rooted && strcmp(transport, "shm") == 0 ? CAL_RUN_CALLS : 1;
}

int cmd_calibrate(int argc, char **argv)
{
    const char *cmd = "mrc calibrate";
    const char *transport = "threads", *ranks = NULL, *out = NULL,
               *given = NULL, *runs = NULL, *coll = NULL, *wait = NULL,
               *calls = NULL;
    int quick = 0, json = 0, check = 0, npos = 0, as_rank = 0;
    const cli_opt_t opts[] = {{"transport", 't', &transport, NULL},
                              {"ranks", 'n', &ranks, NULL},
                              {"output", 'o', &out, NULL},
                              {"quick", 0, NULL, &quick},
                              {"json", 0, NULL, &json},
                              {"check", 0, NULL, &check},
                              {"profile", 0, &given, NULL},
                              {"runs", 0, &runs, NULL},
                              {"collective", 'c', &coll, NULL},
                              {"wait", 0, &wait, NULL},
                              {"calls", 0, &calls, NULL},
                              /* the ranks of an shm --check */
                              {"check-rank", 0, NULL, &as_rank},
                              {0}};
    int rc = cli_parse(cmd, "calibrate", argc, argv, opts, NULL, 0, 0, &npos);
    if (rc != CLI_OK)
        return rc;
    long p = 2;
    if (ranks && mrc__parse_long(ranks, 2, 256, &p))
        return cli_usage(cmd, "calibrate",
                         "-n '%s' is not a node count (2..256)", ranks);
    if (given && !check)
        return cli_usage(cmd, "calibrate", "--profile goes with --check");
    long k = 5, run_of = 0;
    if ((rc = check_number(cmd, check, "--runs", runs, 1, CAL_CHECK_MAX_RUNS,
                           "a number of runs", &k)) != CLI_OK ||
        (rc = check_number(cmd, check, "--calls", calls, 1, MRC_SIM_MAX_CALLS,
                           "a run of calls", &run_of)) != CLI_OK)
        return rc;
    long wait_s = quick ? 0 : CAL_GUARD_WAIT_S;
    if (wait && mrc__parse_long(wait, 0, 86400, &wait_s))
        return cli_usage(cmd, "calibrate",
                         "--wait '%s' is not a number of seconds (0..86400)",
                         wait);
    mrc_collective_t collective = MRC_ALLREDUCE;
    if (coll && !check)
        return cli_usage(cmd, "calibrate", "--collective goes with --check");
    if (coll && mrc_collective_parse(coll, &collective) != MRC_OK)
        return cli_usage(cmd, "calibrate", "--collective: %s",
                         mrc_last_error());
    if (check && strcmp(transport, "threads") != 0 &&
        strcmp(transport, "shm") != 0)
        return cli_usage(cmd, "calibrate",
                         "--check sweeps the threads or "
                         "shm transport, not '%s'",
                         transport);
    cal_check_t co = {.transport = transport,
                      .profile = given,
                      .nranks = (int)p,
                      .runs = (int)k,
                      .quick = quick,
                      .json = json,
                      .wait_s = (double)wait_s,
                      .collective = collective,
                      .calls = run_of ? (int)run_of
                                      : default_calls(collective, transport)};
    if (as_rank)
        return cal_check_rank(cmd, &co);
    if (check && given) {
        mrc_profile_t prof;
        mrc_status_t ps = mrc_profile_load(given, &prof);
        if (ps != MRC_OK)
            return cli_fail(cmd, ps);
        return cal_check(cmd, &prof, &co);
    }
    if ((rc = check_measure(cmd, transport, out)) != CLI_OK)
        return rc;
    return measure(cmd, &co, quick, out, check);
}
