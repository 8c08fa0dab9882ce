/*
 * mrc calibrate --check --transport shm: the validation sweep with the
 * ranks as processes. cal_check_shm prints the header and starts P
 * processes of this program as one job, the way `mrc launch` does
 * (cli_launch), each `mrc calibrate --check --transport shm --check-rank`
 * with the same options. Every rank runs each row's timed loops
 * (cal_check_loops, each loop started by a 1-element allreduce); rank 0
 * then predicts the program the row ran, the ranks agree on each loop's
 * slowest time with an allreduce (max) over the communicator itself, and
 * rank 0 prints the row.
 *
 * Accepts: an shm profile, P >= 2. Limits: one communicator per family,
 * each on a segment of its own: the job's id with the family's name
 * appended, so the launcher still removes what a dead rank leaves under
 * the job's prefix.
 */
#define _GNU_SOURCE
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/comm_internal.h"
#include "calibrate.h"
#include "cli.h"

/* Starts a loop with the other ranks: a 1-element allreduce (the next
 * calls wait for no one's previous loop). */
static mrc_status_t allreduce_sync(void *ctx, mrc_status_t st)
{
    double zero = 0;
    if (st != MRC_OK)
        return st;
    return mrc_allreduce(&zero, &zero, 1, MRC_FLOAT64, MRC_SUM, ctx);
}

/* One row on this rank; on rank 0, *us measured and *pred predicted.
 * MRC_ERR_UNSUPPORTED on every rank alike when the family does not take
 * the size (it fails the first call, before any message). */
static mrc_status_t time_size(mrc_comm_t *c, mrc_comm_t *canary,
                              const cal_check_t *o, size_t bytes,
                              const mrc_profile_t *prof, cal_guard_t *g,
                              cal_meas_t *us, double *pred)
{
    double t[CAL_CHECK_MAX_RUNS + 1] = {0}, canaries[2] = {0, 0};
    mrc_status_t st;
    int attempt = 0;
    /* Every rank has the same canaries: all decide alike. */
    do
        st = cal_check_loops(c, canary, o->collective, bytes / sizeof(float),
                             cal_check_iters(bytes, o->quick), o->runs,
                             allreduce_sync, c, t, canaries);
    while (st == MRC_OK && cal_guard_again(g, canaries, ++attempt));
    if (st != MRC_OK)
        return st;
    /* Before the gather: it runs a program of its own. */
    mrc_status_t pst = MRC_OK;
    char why[512] = "";
    if (mrc_comm_rank(c) == 0 &&
        (pst = cal_check_predict(c, prof, o->calls, pred)) != MRC_OK)
        snprintf(why, sizeof why, "%s", mrc_last_error());
    t[o->runs] = pst != MRC_OK; /* so that every rank stops */
    st = mrc_allreduce(t, t, (size_t)o->runs + 1, MRC_FLOAT64, MRC_MAX, c);
    if (st != MRC_OK)
        return st;
    if (pst != MRC_OK)
        return mrc__error(pst, "%s", why);
    if (t[o->runs] != 0)
        return mrc__error(MRC_ERR_INTERNAL,
                          "rank 0 could not predict the "
                          "row of %zu bytes",
                          bytes);
    *us = cal_check_meas(t, o->runs);
    return MRC_OK;
}

/* This rank's communicator `what` of the job (its segment named by the
 * job's id and `what`), running the family `algo` on ring:P. */
static mrc_status_t open_comm(const char *job, const char *what,
                              const char *algo, int nranks,
                              const mrc_profile_t *prof, mrc_comm_t **c)
{
    char topo[32], name[128];
    snprintf(topo, sizeof topo, "ring:%d", nranks);
    snprintf(name, sizeof name, "%s-%s", job, what);
    /* mrc_comm_init_env takes the job's token with the name. */
    if (setenv("MRC_JOB", name, 1) != 0)
        return mrc__error(MRC_ERR_NO_MEMORY, "cannot set MRC_JOB");
    /* Writing around the caches where the profile's runs do, and
     * reading send buffers by reference where they do (send_by_ref),
     * whatever a $MRC_PROFILE of the caller's says. */
    mrc_config_t cfg = {.topology = topo,
                        .algo = algo,
                        .stream_bytes = mrc_profile_stream_bytes(prof)};
    mrc_status_t st = mrc_comm_init_env(c, &cfg);
    if (st == MRC_OK)
        mrc__comm_set_send_by_ref(*c, prof->send_by_ref > 0);
    return st;
}

/* One family's rows on this rank, on a communicator of its own. */
static mrc_status_t sweep_family(cal_table_t *tab, const cal_check_t *o,
                                 const mrc_profile_t *prof, mrc_algo_t f,
                                 const char *job, mrc_comm_t *canary,
                                 cal_guard_t *g)
{
    mrc_comm_t *c = NULL;
    mrc_status_t st =
        open_comm(job, mrc_algo_name(f), mrc_algo_name(f), o->nranks, prof, &c);
    for (size_t b = 4096; st == MRC_OK && b <= cal_check_last_bytes(o->quick);
         b *= 4) {
        cal_meas_t us = {0, 0, 0};
        double pred = 0;
        st = time_size(c, canary, o, b, prof, g, &us, &pred);
        if (st == MRC_ERR_UNSUPPORTED) {
            st = MRC_OK; /* the family does not take this size */
            continue;
        }
        if (st == MRC_OK && mrc_comm_rank(c) == 0)
            cal_table_row(tab, f, b, us, pred);
    }
    mrc_comm_destroy(c);
    return st;
}

int cal_check_rank(const char *cmd, const cal_check_t *o)
{
    const char *env = getenv("MRC_JOB"), *rank = getenv("MRC_RANK");
    if (!env || !rank || !o->profile || strcmp(o->transport, "shm") != 0)
        return cli_usage(cmd, "calibrate",
                         "--check-rank is for the ranks that 'mrc calibrate "
                         "--check --transport shm --profile F' starts");
    char job[80];
    snprintf(job, sizeof job, "%s", env);
    cal_pin_self(atoi(rank), o->nranks);
    mrc_profile_t prof;
    mrc_status_t st = mrc_profile_load(o->profile, &prof);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    cal_table_t tab;
    cal_table_init(&tab, o, &prof);
    cal_guard_t g = cal_guard_new(o->nranks, o->wait_s);
    /* The rows' canary: one rings communicator for the sweep (its own
     * segment, as a family's). */
    mrc_comm_t *canary = NULL;
    st = open_comm(job, "canary", "rings", o->nranks, &prof, &canary);
    for (size_t f = 0; f < 4 && st == MRC_OK; f++)
        st = sweep_family(&tab, o, &prof, cal_check_families[f], job, canary,
                          &g);
    mrc_comm_destroy(canary);
    if (st != MRC_OK) {
        fprintf(stderr, "%s: --check, rank %s: %s\n", cmd, rank,
                mrc_last_error());
        return CLI_FAIL;
    }
    if (strcmp(rank, "0") == 0)
        cal_table_end(&tab, &g);
    return CLI_OK;
}

/* A profile measured just now goes to the ranks in a file of their own,
 * which the caller removes; CLI status. */
static int profile_file(const char *cmd, const mrc_profile_t *prof, char *path,
                        size_t n)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, n, "%s/mrc-check-XXXXXX", dir && *dir ? dir : P_tmpdir);
    char *text = NULL;
    mrc_status_t st = mrc_profile_to_json(prof, &text);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    int fd = mkstemp(path), rc = CLI_OK;
    size_t len = strlen(text);
    if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
        fprintf(stderr,
                "%s: --check: cannot write the profile for the "
                "ranks to %s\n",
                cmd, path);
        rc = CLI_FAIL;
    }
    if (fd >= 0)
        close(fd);
    if (fd >= 0 && rc != CLI_OK)
        unlink(path);
    if (fd < 0)
        path[0] = '\0';
    mrc_free(text);
    return rc;
}

int cal_check_shm(const char *cmd, const mrc_profile_t *prof,
                  const cal_check_t *o)
{
    char self[4096], tmp[4096] = "", np[16], runs[16], coll[32], wait[32],
                     calls[16];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr,
                "%s: --check: cannot find this program to start "
                "the ranks\n",
                cmd);
        return CLI_FAIL;
    }
    self[len] = '\0';
    if (!o->profile && profile_file(cmd, prof, tmp, sizeof tmp) != CLI_OK)
        return CLI_FAIL;
    snprintf(np, sizeof np, "%d", o->nranks);
    snprintf(runs, sizeof runs, "%d", o->runs);
    char *argv[24];
    int k = 0;
    argv[k++] = self;
    argv[k++] = "calibrate";
    argv[k++] = "--check";
    argv[k++] = "--check-rank";
    argv[k++] = "--transport";
    argv[k++] = "shm";
    argv[k++] = "--profile";
    argv[k++] = o->profile ? (char *)o->profile : tmp;
    argv[k++] = "-n";
    argv[k++] = np;
    argv[k++] = "--runs";
    argv[k++] = runs;
    snprintf(coll, sizeof coll, "%s", mrc_collective_name(o->collective));
    argv[k++] = "--collective";
    argv[k++] = coll;
    snprintf(wait, sizeof wait, "%.0f", o->wait_s);
    argv[k++] = "--wait";
    argv[k++] = wait;
    /* (always: a rank's own default depends on the collective) */
    snprintf(calls, sizeof calls, "%d", o->calls > 1 ? o->calls : 1);
    argv[k++] = "--calls";
    argv[k++] = calls;
    if (o->quick)
        argv[k++] = "--quick";
    if (o->json)
        argv[k++] = "--json";
    assert(k < (int)(sizeof argv / sizeof argv[0]));
    argv[k] = NULL;
    cal_table_t tab;
    cal_table_init(&tab, o, prof);
    cal_table_head(cmd, &tab, o, prof);
    int rc = cli_launch(o->nranks, argv, 0, 0);
    if (tmp[0])
        unlink(tmp);
    if (rc != CLI_OK)
        fprintf(stderr, "%s: --check: the sweep's ranks failed\n", cmd);
    return rc == CLI_OK ? CLI_OK : CLI_FAIL;
}
