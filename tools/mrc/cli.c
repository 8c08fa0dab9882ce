/* Option parsing, errors and output files for the mrc command line. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "sim/select.h"

int cli_usage(const char *cmd, const char *topic, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'mrc help %s')\n", topic);
    return CLI_USAGE;
}

int cli_fail(const char *cmd, mrc_status_t st)
{
    const char *msg = mrc_last_error();
    fprintf(stderr, "%s: %s\n", cmd, *msg ? msg : mrc_status_string(st));
    switch (st) {
    case MRC_ERR_NO_MEMORY:
    case MRC_ERR_INTERNAL:
    case MRC_ERR_TRANSPORT:
    case MRC_ERR_TIMEOUT: return CLI_FAIL;
    default: return CLI_USAGE;
    }
}

static const cli_opt_t *find_long(const cli_opt_t *opts, const char *name,
                                  size_t len)
{
    for (; opts->name; opts++)
        if (strlen(opts->name) == len && strncmp(opts->name, name, len) == 0)
            return opts;
    return NULL;
}

static const cli_opt_t *find_short(const cli_opt_t *opts, char c)
{
    for (; opts->name; opts++)
        if (opts->short_name && opts->short_name == c)
            return opts;
    return NULL;
}

void cli_progress(int only_if_piped, const char *fmt, ...)
{
    if (!isatty(2) || (only_if_piped && isatty(1)))
        return;
    fputs("\r\033[K", stderr); /* back to the start, line cleared */
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fflush(stderr);
}

const char *cli_progress_bar(double done, char *out, size_t size)
{
    enum { WIDTH = 30 };
    int fill = (int)((done < 0 ? 0 : done > 1 ? 1 : done) * WIDTH + 0.5);
    snprintf(out, size, "[%.*s%*s]", fill, "##############################",
             WIDTH - fill, "");
    return out;
}

int cli_parse(const char *cmd, const char *topic, int argc, char **argv,
              const cli_opt_t *opts, const char **pos, int min_pos, int max_pos,
              int *npos)
{
    int n = 0, only_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const cli_opt_t *o = NULL;
        const char *inline_val = NULL;
        if (!only_pos && strcmp(arg, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (!only_pos && arg[0] == '-' && arg[1] == '-') {
            const char *eq = strchr(arg + 2, '=');
            size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
            o = find_long(opts, arg + 2, len);
            inline_val = eq ? eq + 1 : NULL;
        } else if (!only_pos && arg[0] == '-' && arg[1] && !arg[2]) {
            o = find_short(opts, arg[1]);
        } else {
            if (n >= max_pos)
                return cli_usage(cmd, topic, "unexpected argument '%s'", arg);
            pos[n++] = arg;
            continue;
        }
        if (!o)
            return cli_usage(cmd, topic, "unknown option '%s'", arg);
        if (o->flag) {
            if (inline_val)
                return cli_usage(cmd, topic, "option '--%s' takes no value",
                                 o->name);
            *o->flag = 1;
            continue;
        }
        if (!inline_val) {
            if (i + 1 >= argc)
                return cli_usage(cmd, topic, "option '%s' needs a value", arg);
            inline_val = argv[++i];
        }
        *o->value = inline_val;
    }
    if (n < min_pos)
        return cli_usage(cmd, topic, "missing argument");
    *npos = n;
    return CLI_OK;
}

int cli_take_values(const char *cmd, const char *topic, const char *name,
                    int *argc, char **argv, cli_values_t *values)
{
    size_t len = strlen(name);
    int kept = 0, i = 0;
    values->n = 0;
    for (; i < *argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0)
            break;
        const char *val = NULL;
        if (strncmp(arg, "--", 2) != 0 || strncmp(arg + 2, name, len) != 0 ||
            (arg[2 + len] != '\0' && arg[2 + len] != '=')) {
            argv[kept++] = argv[i];
            continue;
        }
        if (arg[2 + len] == '=')
            val = arg + 3 + len;
        else if (i + 1 < *argc)
            val = argv[++i];
        else
            return cli_usage(cmd, topic, "option '%s' needs a value", arg);
        if (values->n >= CLI_MAX_VALUES)
            return cli_usage(cmd, topic,
                             "option '--%s' given more than %d "
                             "times",
                             name, CLI_MAX_VALUES);
        values->v[values->n++] = val;
    }
    for (; i < *argc; i++)
        argv[kept++] = argv[i];
    *argc = kept;
    return CLI_OK;
}

int cli_has_ext(const char *path, const char *ext)
{
    size_t n = strlen(path), m = strlen(ext);
    return n > m && strcmp(path + n - m, ext) == 0;
}

char *cli_json_quote(const char *s)
{
    char *q = mrc__json_quote(s);
    if (!q) {
        fprintf(stderr, "mrc: out of memory\n");
        exit(CLI_FAIL);
    }
    return q;
}

/* An output that could not be written is a failure of the environment
 * (exit 1), whatever the status says. */
static int write_fail(const char *cmd)
{
    fprintf(stderr, "%s: %s\n", cmd, mrc_last_error());
    return CLI_FAIL;
}

int cli_write_file(const char *cmd, const char *path, const char *data,
                   size_t len)
{
    return mrc__write_file(path, data, len) == MRC_OK ? CLI_OK
                                                      : write_fail(cmd);
}

/* Finds `prog` on PATH; 1 if it is there and executable. */
static int on_path(const char *prog)
{
    const char *path = getenv("PATH");
    if (!path)
        return 0;
    char buf[4096];
    while (*path) {
        size_t len = strcspn(path, ":");
        if (len > 0 && len + strlen(prog) + 2 < sizeof buf) {
            snprintf(buf, sizeof buf, "%.*s/%s", (int)len, path, prog);
            if (access(buf, X_OK) == 0)
                return 1;
        }
        path += len;
        if (*path == ':')
            path++;
    }
    return 0;
}

int cli_filter_to_file(const char *cmd, char *const argv[], const char *input,
                       const char *path, int quiet)
{
    mrc__outfile_t of;
    mrc_status_t st = mrc__outfile_open(&of, path);
    if (st != MRC_OK)
        return write_fail(cmd);
    int in[2];
    pid_t pid = -1;
    if (pipe(in) == 0) {
        /* Only the copies made on 0 and 1 below outlive the exec: an open
         * write end of the pipe in the child would keep it from EOF. */
        fcntl(in[0], F_SETFD, FD_CLOEXEC);
        fcntl(in[1], F_SETFD, FD_CLOEXEC);
        pid = fork();
        if (pid < 0) {
            close(in[0]);
            close(in[1]);
        }
    }
    if (pid < 0) {
        fprintf(stderr, "%s: cannot start %s: %s\n", cmd, argv[0],
                strerror(errno));
        mrc__outfile_abort(&of);
        return CLI_FAIL;
    }
    if (pid == 0) {
        /* The program writes to our file descriptor: it never opens the
         * output by name. Both ends are first moved above 2, so that a
         * closed standard stream (a pipe end on 0 or 1) cannot clobber the
         * other. */
        int rd = fcntl(in[0], F_DUPFD_CLOEXEC, 3);
        int wr = fcntl(of.fd, F_DUPFD_CLOEXEC, 3);
        if (rd < 0 || wr < 0 || dup2(rd, STDIN_FILENO) < 0 ||
            dup2(wr, STDOUT_FILENO) < 0)
            _exit(127);
        if (quiet) {
            int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
            if (null >= 0)
                dup2(null, STDERR_FILENO);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    close(in[0]);
    /* The program may exit early on bad input; do not die of SIGPIPE. */
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    size_t len = strlen(input), off = 0;
    while (off < len) {
        ssize_t w = write(in[1], input + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(in[1]);
    signal(SIGPIPE, old);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (off < len || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s: %s failed to write %s\n", cmd, argv[0], path);
        mrc__outfile_abort(&of);
        return CLI_FAIL;
    }
    return mrc__outfile_commit(&of) == MRC_OK ? CLI_OK : write_fail(cmd);
}

int cli_render_svg(const char *cmd, const char *dot, const char *path)
{
    if (!on_path("neato")) {
        fprintf(stderr,
                "%s: Graphviz is not installed (no 'neato' on PATH); install "
                "the graphviz package, or write a .dot file instead\n",
                cmd);
        return CLI_FAIL;
    }
    char *const argv[] = {"neato", "-Tsvg", NULL};
    return cli_filter_to_file(cmd, argv, dot, path, 0);
}

int cli_max_memory(const char *cmd, const char *topic, const char *value)
{
    uint64_t v = 0;
    if (!value)
        return CLI_OK;
    if (mrc__parse_size(value, &v) != 0 || v == 0)
        return cli_usage(cmd, topic,
                         "--max-memory '%s' is not a size (such "
                         "as 8G)",
                         value);
    mrc__set_memory_limit(v);
    return CLI_OK;
}

int cli_hosts(const char *cmd, const char *topic, const char *value, int dflt,
              int *out)
{
    long v = dflt;
    if (value && mrc__parse_long(value, 1, MRC_TOPO_MAX_NODES, &v) != 0)
        return cli_usage(cmd, topic,
                         "--hosts '%s' is not a positive "
                         "integer",
                         value);
    *out = (int)v;
    return CLI_OK;
}

int cli_algo(const char *cmd, const char *topic, const char *value,
             mrc_algo_t *out)
{
    *out = MRC_ALGO_AUTO;
    if (!value)
        return CLI_OK;
    if (mrc_algo_parse(value, out) != MRC_OK)
        return cli_usage(cmd, topic, "--algo: %s", mrc_last_error());
    return CLI_OK;
}

int cli_resolve_algo(const char *cmd, const mrc_embedding_t *e,
                     const mrc_topo_t *t, mrc_compile_config_t *cc)
{
    if (cc->algo != MRC_ALGO_AUTO)
        return CLI_OK;
    mrc__select_input_t in = {.embedding = e,
                              .topo = t,
                              .cc = *cc,
                              .group = -1,
                              .transport = MRC__SIM_TRANSPORT_LINKS,
                              .memory_ok = 1,
                              .ref_ok = 1};
    mrc__selection_t sel;
    mrc_status_t st = mrc__select(&in, MRC_ALGO_AUTO, &sel, NULL);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    cc->algo = sel.chosen;
    return CLI_OK;
}

int cli_fail_links(const char *cmd, const cli_values_t *values,
                   mrc_topo_t **topo, char *joined)
{
    enum { ROOM = 4096 };
    char buf[ROOM];
    size_t len = 0;
    if (joined)
        joined[0] = '\0';
    if (values->n == 0)
        return CLI_OK;
    for (int i = 0; i < values->n; i++) {
        size_t n = strlen(values->v[i]);
        /* An empty value or one with ',' would read as other items. */
        if (n == 0 || strchr(values->v[i], ',') || len + n + 2 > ROOM) {
            fprintf(stderr,
                    "%s: --fail-link '%s': give one link A-B or "
                    "A-B:K per --fail-link (see 'mrc help rings')\n",
                    cmd, values->v[i]);
            return CLI_USAGE;
        }
        if (i > 0)
            buf[len++] = ',';
        memcpy(buf + len, values->v[i], n + 1);
        len += n;
    }
    mrc_topo_t *t = NULL;
    mrc_status_t st = mrc_topo_fail_links(*topo, buf, &t);
    if (st != MRC_OK) {
        fprintf(stderr, "%s: --fail-link: %s\n", cmd, mrc_last_error());
        return st == MRC_ERR_NO_MEMORY ? CLI_FAIL : CLI_USAGE;
    }
    mrc_topo_destroy(*topo);
    *topo = t;
    if (joined)
        memcpy(joined, buf, len + 1);
    return CLI_OK;
}

void cli_report_failed_links(FILE *out, const mrc_topo_t *t,
                             const mrc_embed_config_t *ec)
{
    const char *failed = mrc_topo_failed_links(t);
    if (!failed)
        return;
    mrc_embedding_t *before = NULL, *after = NULL;
    mrc_embed_figures_t fb = {0}, fa = {0};
    int ok_b = mrc_embed_create(mrc_topo_intact(t), ec, &before) == MRC_OK;
    int ok_a = mrc_embed_create(t, ec, &after) == MRC_OK;
    /* No rings after: the command's own error says which link failed. */
    if (!ok_a) {
        mrc_embed_destroy(before);
        return;
    }
    if (ok_b)
        mrc_embed_figures(before, &fb);
    mrc_embed_figures(after, &fa);
    fprintf(out,
            "failed links %s (%d of %d physical links left); "
            "strategy %s: ",
            failed, mrc_topo_num_physical_links(t),
            mrc_topo_num_physical_links(mrc_topo_intact(t)),
            ec->strategy ? ec->strategy : "auto");
    if (ok_b)
        fprintf(out, "algbw %.2f GB/s, efficiency %.4f before; ", fb.algbw_gbps,
                fb.efficiency);
    fprintf(out,
            "algbw %.2f GB/s, efficiency %.4f after (of the bound "
            "without them, %.2f GB/s)\n",
            fa.algbw_gbps, fa.efficiency, fa.bound_gbps);
    mrc_embed_destroy(before);
    mrc_embed_destroy(after);
}

int cli_load_image(const char *cmd, const char *path, mrc_program_t **p,
                   mrc__image_origin_t *origin, double *load_ms, size_t *bytes)
{
    char *data = NULL;
    size_t len = 0;
    *p = NULL;
    mrc_status_t st = mrc__read_file(path, 0, &data, &len);
    if (st != MRC_OK)
        return cli_fail(cmd, st);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    st = mrc__program_load_origin(data, len, p, origin);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (bytes)
        *bytes = len;
    free(data);
    if (load_ms)
        *load_ms = 1e3 * (double)(t1.tv_sec - t0.tv_sec) +
                   1e-6 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (st != MRC_OK) {
        mrc__error_prefix("%s", path);
        return cli_fail(cmd, st);
    }
    return CLI_OK;
}

int cli_load_image_topology(const char *cmd, const char *path,
                            mrc_program_t **p, mrc__image_origin_t *origin,
                            mrc_topo_t **t)
{
    *t = NULL;
    int rc = cli_load_image(cmd, path, p, origin, NULL, NULL);
    if (rc != CLI_OK)
        return rc;
    mrc_status_t st = mrc__image_topology(*p, origin, t);
    if (st == MRC_OK)
        return CLI_OK;
    mrc__error_prefix("%s", path);
    rc = cli_fail(cmd, st);
    mrc_program_destroy(*p);
    *p = NULL;
    mrc__image_origin_free(origin);
    return rc;
}
