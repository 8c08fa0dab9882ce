/*
 * mrc launch: N processes of one program on this host, as one job.
 *
 * Each rank gets MRC_RANK, MRC_NRANKS, MRC_JOB (128 random bits in hex:
 * the prefix of the job's shared-memory names, so no other job can guess
 * them) and MRC_JOB_TOKEN (128 more, which rank 0 writes in the job's
 * segment and the others check, so that no segment but this job's own is
 * used). The launcher forwards SIGINT, SIGTERM, SIGHUP and SIGQUIT to every
 * rank, reports each rank that fails (exit status or signal), gives the
 * survivors time to report the lost peer themselves, and when the job is
 * over removes every shared-memory object the job left behind, even after
 * a crash. Each rank runs in its own process group (so a signal reaches
 * what it started too) and dies with the launcher (PR_SET_PDEATHSIG). A
 * watchdog process outlives the launcher to remove the job's shared
 * memory if the launcher itself is killed (SIGKILL: no handler runs)
 * while the ranks start, before they have unlinked it themselves.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common/common.h"
#include "clock.h"

#define CMD "mrc launch"

enum { LAUNCH_MAX_RANKS = 4096 };

void help_launch(void)
{
    printf("usage: mrc launch -n N [--timeout S] [--grace S] -- PROGRAM "
           "ARGS...\n"
           "\n"
           "Starts N processes of PROGRAM on this host as one job, each with\n"
           "MRC_RANK (0..N-1), MRC_NRANKS (N) and MRC_JOB (a random job id;\n"
           "mrc_comm_init_env reads them). Signals (INT, TERM, HUP, QUIT) are\n"
           "passed to every rank. A rank that fails is reported by rank and\n"
           "cause; the others get --grace seconds to finish (to report the\n"
           "lost peer), then are stopped. Shared memory the job left behind\n"
           "is removed when it ends.\n"
           "\n"
           "-n N        number of ranks (1..%d)\n"
           "--timeout S stop the job after S seconds (default: none)\n"
           "--grace S   time the survivors of a failed rank get (default:\n"
           "            twice $MRC_TIMEOUT, else 120 s)\n"
           "\n"
           "Exit status: 0 when every rank exits 0; 1 when a rank fails, the\n"
           "job times out or is stopped by a signal; 2 bad usage.\n",
           LAUNCH_MAX_RANKS);
}

typedef struct rank_proc {
    pid_t pid;
    int running;
    int status; /* from waitpid, once it has ended */
} rank_proc_t;

/* Removes the job's shared-memory objects ("/mrc-JOB-..."): the transport
 * unlinks its own once every rank has attached, so this finds only what a
 * crash left. Returns how many it removed. */
static int remove_job_shm(const char *job)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "mrc-%s-", job);
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char name[320];
        snprintf(name, sizeof name, "/%s", e->d_name);
        if (shm_unlink(name) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

/* Whether process pid has ended (gone, or a zombie not yet reaped). */
static int ended(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = '\0';
    const char *paren = strrchr(buf, ')'); /* the name may hold spaces */
    return !paren || paren[1] != ' ' || paren[2] == 'Z' || paren[2] == 'X';
}

/* The watchdog: reads the ranks' pids from fd until the launcher closes
 * it, by exiting or by dying; then waits (up to 2 s) for the ranks to end
 * (they die with the launcher) and removes what they left in /dev/shm. It
 * ignores the signals a terminal sends to the launcher's group. */
static void watchdog(int fd, const char *job)
{
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
        close(devnull);
    }
    pid_t *pids = NULL;
    size_t n = 0, cap = 0;
    pid_t pid;
    for (;;) {
        ssize_t got = read(fd, &pid, sizeof pid);
        if (got < 0 && errno == EINTR)
            continue;
        if (got != (ssize_t)sizeof pid)
            break;
        if (n == cap) {
            size_t c = cap ? 2 * cap : 64;
            pid_t *q = realloc(pids, c * sizeof *q);
            if (!q)
                continue; /* then the 2 s bound below does */
            pids = q;
            cap = c;
        }
        pids[n++] = pid;
    }
    for (int tries = 0; tries < 100; tries++) {
        size_t left = 0;
        for (size_t i = 0; i < n; i++)
            left += !ended(pids[i]);
        if (left == 0)
            break;
        usleep(20 * 1000);
    }
    remove_job_shm(job);
    free(pids);
    _exit(0);
}

static pid_t start_rank(int rank, int n, const char *job, char **argv,
                        const sigset_t *old_mask, pid_t launcher)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* The child: its own process group, gone with the launcher. */
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher)
        _exit(127); /* the launcher died before the line above */
    sigprocmask(SIG_SETMASK, old_mask, NULL);
    char v[32];
    snprintf(v, sizeof v, "%d", rank);
    setenv("MRC_RANK", v, 1);
    snprintf(v, sizeof v, "%d", n);
    setenv("MRC_NRANKS", v, 1);
    setenv("MRC_JOB", job, 1);
    setenv("MRC_JOB_TOKEN", job + 40, 1); /* see cmd_launch */
    execvp(argv[0], argv);
    fprintf(stderr, CMD ": rank %d: cannot run '%s': %s\n", rank, argv[0],
            strerror(errno));
    _exit(127);
}

static void signal_ranks(rank_proc_t *ranks, int n, int sig)
{
    for (int r = 0; r < n; r++)
        if (ranks[r].running)
            kill(-ranks[r].pid, sig);
}

/* Reaps every rank that has ended; reports the failures (unless the
 * launcher is stopping the job). Returns how many ended now and failed. */
static int reap(rank_proc_t *ranks, int n, int *alive, int *first_failed,
                int stopping)
{
    int failed = 0;
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0)
            break;
        for (int r = 0; r < n; r++) {
            if (ranks[r].pid != pid || !ranks[r].running)
                continue;
            ranks[r].running = 0;
            ranks[r].status = status;
            (*alive)--;
            if ((WIFEXITED(status) && WEXITSTATUS(status) == 0) || stopping)
                break;
            failed++;
            if (*first_failed < 0)
                *first_failed = r;
            if (WIFSIGNALED(status))
                fprintf(stderr,
                        CMD ": rank %d (pid %ld) was killed by signal %d "
                            "(%s)\n",
                        r, (long)pid, WTERMSIG(status),
                        strsignal(WTERMSIG(status)));
            else
                fprintf(stderr,
                        CMD ": rank %d (pid %ld) exited with status %d\n", r,
                        (long)pid, WEXITSTATUS(status));
            break;
        }
    }
    return failed;
}

static int parse_seconds(const char *opt, const char *v, double *out)
{
    if (!v || mrc__parse_double(v, out) != 0 || !(*out > 0) || *out > 1e7)
        return cli_usage(CMD, "launch",
                         "%s wants a number of seconds > 0, not '%s'", opt,
                         v ? v : "");
    return CLI_OK;
}

int cmd_launch(int argc, char **argv)
{
    int n = 0, i = 0;
    double timeout = 0, grace = 0;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help_launch();
            return CLI_OK;
        }
        if (strcmp(a, "-n") == 0 || strcmp(a, "--np") == 0) {
            long long x = 0;
            char *end = NULL;
            if (v)
                x = strtoll(v, &end, 10);
            if (!v || !*v || *end || x < 1 || x > LAUNCH_MAX_RANKS)
                return cli_usage(CMD, "launch",
                                 "-n wants a number of ranks 1..%d, not "
                                 "'%s'",
                                 LAUNCH_MAX_RANKS, v ? v : "");
            n = (int)x;
        } else if (strcmp(a, "--timeout") == 0) {
            if (parse_seconds(a, v, &timeout) != CLI_OK)
                return CLI_USAGE;
        } else if (strcmp(a, "--grace") == 0) {
            if (parse_seconds(a, v, &grace) != CLI_OK)
                return CLI_USAGE;
        } else {
            return cli_usage(CMD, "launch", "unknown option '%s'", a);
        }
        i++; /* the value */
    }
    if (n == 0)
        return cli_usage(CMD, "launch", "-n N is required");
    if (i + 1 >= argc)
        return cli_usage(CMD, "launch",
                         "no program: mrc launch -n N -- "
                         "PROGRAM ARGS...");
    return cli_launch(n, argv + i + 1, timeout, grace);
}

/* A job while it runs: its ranks, the watchdog, the signals taken, and
 * the clock of its timeout and of the grace after a failure. */
typedef struct launch_job {
    int n;
    rank_proc_t *ranks;
    char id[80]; /* the job id, then its token at id + 40 */
    sigset_t set, old;
    int dog; /* the watchdog's pipe, or -1 */
    pid_t dog_pid;
    int alive, first_failed, failures, got_signal;
    double timeout, grace, start, fail_at, stop_at;
    int timed_out, stopping;
} launch_job_t;

/* The watchdog, in its own process group, told each rank's pid. */
static void start_watchdog(launch_job_t *j)
{
    int dog[2] = {-1, -1};
    j->dog = -1;
    j->dog_pid = -1;
    if (pipe2(dog, O_CLOEXEC) != 0)
        return;
    j->dog_pid = fork();
    if (j->dog_pid == 0) {
        close(dog[1]);
        setpgid(0, 0);
        watchdog(dog[0], j->id);
    }
    close(dog[0]);
    if (j->dog_pid < 0)
        close(dog[1]);
    else
        j->dog = dog[1];
}

/* Every rank, in its own process group; stops at the first that cannot
 * be started. */
static void start_ranks(launch_job_t *j, char **prog)
{
    pid_t self = getpid();
    for (int r = 0; r < j->n; r++) {
        rank_proc_t *rp = &j->ranks[r];
        rp->pid = start_rank(r, j->n, j->id, prog, &j->old, self);
        if (rp->pid < 0) {
            fprintf(stderr, CMD ": cannot start rank %d: %s\n", r,
                    strerror(errno));
            j->failures++;
            j->first_failed = r;
            break;
        }
        rp->running = 1;
        setpgid(rp->pid, rp->pid); /* as the child does: no race */
        j->alive++;
        if (j->dog >= 0 && write(j->dog, &rp->pid, sizeof rp->pid) !=
                               (ssize_t)sizeof rp->pid) {
            close(j->dog); /* the watchdog is gone: nobody to tell */
            j->dog = -1;
        }
    }
}

/* At time t: the timeout, or the grace after a failure, run out stops
 * the ranks (SIGTERM, then SIGKILL 2 s later). */
static void check_clock(launch_job_t *j, double t)
{
    if (j->failures && j->fail_at == 0)
        j->fail_at = t;
    int stop = 0;
    if (j->timeout > 0 && t - j->start >= j->timeout && !j->timed_out) {
        j->timed_out = 1;
        fprintf(stderr,
                CMD ": timed out after %g s; stopping %d "
                    "rank(s)\n",
                j->timeout, j->alive);
        stop = 1;
    }
    if (j->fail_at > 0 && t - j->fail_at >= j->grace && !j->stopping) {
        fprintf(stderr,
                CMD ": %d rank(s) still running %g s after "
                    "rank %d failed; stopping them\n",
                j->alive, j->grace, j->first_failed);
        stop = 1;
    }
    if (stop && !j->stopping) {
        j->stopping = 1;
        j->stop_at = t;
        signal_ranks(j->ranks, j->n, SIGTERM);
    }
    if (j->stopping && t - j->stop_at >= 2)
        signal_ranks(j->ranks, j->n, SIGKILL);
}

/* Waits up to 100 ms for a signal; one to forward goes to every rank,
 * and a second one, or 2 s, is SIGKILL. */
static void take_signal(launch_job_t *j)
{
    struct timespec ts = {0, 100 * 1000 * 1000};
    siginfo_t info;
    int sig = sigtimedwait(&j->set, &info, &ts);
    if (sig <= 0 || sig == SIGCHLD)
        return;
    if (!j->got_signal)
        fprintf(stderr,
                CMD ": got signal %d (%s); passing it to "
                    "the ranks\n",
                sig, strsignal(sig));
    j->got_signal = sig;
    signal_ranks(j->ranks, j->n, sig);
    if (!j->stopping) {
        j->stopping = 1;
        j->stop_at = mrc__ref_now_s();
    } else {
        signal_ranks(j->ranks, j->n, SIGKILL);
    }
}

/* Until every rank has ended. */
static void supervise(launch_job_t *j)
{
    j->start = mrc__ref_now_s();
    if (j->failures)
        j->fail_at = j->start;
    while (j->alive > 0) {
        j->failures +=
            reap(j->ranks, j->n, &j->alive, &j->first_failed, j->stopping);
        if (j->alive == 0)
            break;
        check_clock(j, mrc__ref_now_s());
        take_signal(j);
    }
}

/* The job is over: its shared memory removed, the watchdog ended, the
 * signal mask restored; the exit status. */
static int finish(launch_job_t *j)
{
    int removed = remove_job_shm(j->id);
    /* The job is over: the watchdog has nothing left to do. */
    if (j->dog >= 0)
        close(j->dog);
    if (j->dog_pid > 0)
        waitpid(j->dog_pid, NULL, 0);
    sigprocmask(SIG_SETMASK, &j->old, NULL);
    if (removed > 0)
        fprintf(stderr,
                CMD ": removed %d shared-memory object(s) the job "
                    "left behind\n",
                removed);
    int rc = CLI_OK;
    if (j->failures) {
        fprintf(stderr,
                CMD ": %d of %d rank(s) failed; the first was rank "
                    "%d\n",
                j->failures, j->n, j->first_failed);
        rc = CLI_FAIL;
    }
    if (j->timed_out || j->got_signal)
        rc = CLI_FAIL;
    return rc;
}

int cli_launch(int n, char **prog, double timeout, double grace)
{
    if (grace == 0) {
        const char *t = getenv("MRC_TIMEOUT");
        double d;
        grace = t && mrc__parse_double(t, &d) == 0 && d > 0 ? 2 * d : 120;
    }
    launch_job_t j;
    memset(&j, 0, sizeof j);
    j.n = n;
    j.timeout = timeout;
    j.grace = grace;
    j.first_failed = -1;
    if (mrc__random_job_id(j.id, 40) != 0 ||
        mrc__random_job_id(j.id + 40, 40) != 0) {
        fprintf(stderr, CMD ": no random bytes for the job id: %s\n",
                strerror(errno));
        return CLI_FAIL;
    }
    j.ranks = calloc((size_t)n, sizeof *j.ranks);
    if (!j.ranks) {
        fprintf(stderr, CMD ": out of memory\n");
        return CLI_FAIL;
    }
    /* Signals are taken synchronously (sigtimedwait) from here on. */
    sigemptyset(&j.set);
    int fwd[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t k = 0; k < sizeof fwd / sizeof *fwd; k++)
        sigaddset(&j.set, fwd[k]);
    sigaddset(&j.set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &j.set, &j.old);
    start_watchdog(&j);
    start_ranks(&j, prog);
    supervise(&j);
    int rc = finish(&j);
    free(j.ranks);
    return rc;
}
