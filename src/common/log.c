/*
 * The debug log: MRC_DEBUG=TRACE writes one line per event to stderr,
 * "mrc: rank R: ...", as NCCL_DEBUG does. The level is read once per
 * process; a line is written with one call so that the lines of ranks
 * (threads or processes) sharing stderr do not interleave.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common.h"

static int level_of(const char *s)
{
    if (!s || !*s)
        return MRC__LOG_NONE;
    if (strcasecmp(s, "TRACE") == 0)
        return MRC__LOG_TRACE;
    if (strcasecmp(s, "INFO") == 0)
        return MRC__LOG_INFO;
    return MRC__LOG_NONE;
}

int mrc__log_level(void)
{
    static int level = -1; /* racy only in the benign sense: same value */
    int l = __atomic_load_n(&level, __ATOMIC_RELAXED);
    if (l < 0) {
        l = level_of(getenv("MRC_DEBUG"));
        __atomic_store_n(&level, l, __ATOMIC_RELAXED);
    }
    return l;
}

void mrc__trace(int rank, const char *fmt, ...)
{
    char line[512];
    int n = snprintf(line, sizeof line, "mrc: rank %d: ", rank);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = strlen(line);
    line[len] = '\n';
    fwrite(line, 1, len + 1, stderr);
}
