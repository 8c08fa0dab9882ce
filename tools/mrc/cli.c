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
#include <unistd.h>

#include "cli.h"

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
    case MRC_ERR_TIMEOUT:
        return CLI_FAIL;
    default:
        return CLI_USAGE;
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

int cli_parse(const char *cmd, const char *topic, int argc, char **argv,
              const cli_opt_t *opts, const char **pos, int min_pos,
              int max_pos, int *npos)
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
                return cli_usage(cmd, topic, "option '%s' needs a value",
                                 arg);
            inline_val = argv[++i];
        }
        *o->value = inline_val;
    }
    if (n < min_pos)
        return cli_usage(cmd, topic, "missing argument");
    *npos = n;
    return CLI_OK;
}

int cli_has_ext(const char *path, const char *ext)
{
    size_t n = strlen(path), m = strlen(ext);
    return n > m && strcmp(path + n - m, ext) == 0;
}

/* A temporary name beside `path`, so the final rename stays on one file
 * system. */
static char *temp_beside(const char *path)
{
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (tmp)
        snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    return tmp;
}

int cli_write_file(const char *cmd, const char *path, const char *data,
                   size_t len)
{
    char *tmp = temp_beside(path);
    if (!tmp) {
        fprintf(stderr, "%s: out of memory\n", cmd);
        return CLI_FAIL;
    }
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        fprintf(stderr, "%s: cannot create %s: %s\n", cmd, path,
                strerror(errno));
        free(tmp);
        return CLI_FAIL;
    }
    int bad = fwrite(data, 1, len, f) != len;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        fprintf(stderr, "%s: cannot write %s: %s\n", cmd, path,
                strerror(errno));
        unlink(tmp);
        free(tmp);
        return CLI_FAIL;
    }
    free(tmp);
    return CLI_OK;
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

int cli_render_svg(const char *cmd, const char *dot, const char *path)
{
    if (!on_path("neato")) {
        fprintf(stderr,
                "%s: Graphviz is not installed (no 'neato' on PATH); install "
                "the graphviz package, or write a .dot file instead\n",
                cmd);
        return CLI_FAIL;
    }
    char *tmp = temp_beside(path);
    int in[2];
    if (!tmp || pipe(in) != 0) {
        fprintf(stderr, "%s: cannot start Graphviz: %s\n", cmd,
                strerror(errno));
        free(tmp);
        return CLI_FAIL;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "%s: cannot start Graphviz: %s\n", cmd,
                strerror(errno));
        close(in[0]);
        close(in[1]);
        free(tmp);
        return CLI_FAIL;
    }
    if (pid == 0) {
        dup2(in[0], STDIN_FILENO);
        close(in[0]);
        close(in[1]);
        execlp("neato", "neato", "-Tsvg", "-o", tmp, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    /* neato may exit early on bad input; do not die of SIGPIPE. */
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    size_t len = strlen(dot), off = 0;
    while (off < len) {
        ssize_t w = write(in[1], dot + off, len - off);
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
    if (off < len || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        rename(tmp, path) != 0) {
        fprintf(stderr, "%s: Graphviz failed to write %s\n", cmd, path);
        unlink(tmp);
        free(tmp);
        return CLI_FAIL;
    }
    free(tmp);
    return CLI_OK;
}

int cli_max_memory(const char *cmd, const char *topic, const char *value)
{
    uint64_t v = 0;
    if (!value)
        return CLI_OK;
    if (mrc__parse_size(value, &v) != 0 || v == 0)
        return cli_usage(cmd, topic, "--max-memory '%s' is not a size (such "
                         "as 8G)", value);
    mrc__set_memory_limit(v);
    return CLI_OK;
}
