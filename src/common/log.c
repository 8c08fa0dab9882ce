/* MRC_DEBUG logging (NCCL_DEBUG's habit): one line per event, on stderr,
 * written whole so that the lines of concurrent ranks never interleave. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common.h"

static pthread_once_t level_once = PTHREAD_ONCE_INIT;
static mrc__log_level_t level = MRC__LOG_NONE;

mrc__log_level_t mrc__log_parse_level(const char *v)
{
    static const struct {
        const char *name;
        mrc__log_level_t level;
    } names[] = {{"NONE", MRC__LOG_NONE},
                 {"VERSION", MRC__LOG_WARN},
                 {"WARN", MRC__LOG_WARN},
                 {"INFO", MRC__LOG_INFO},
                 {"TRACE", MRC__LOG_TRACE}};
    if (!v)
        return MRC__LOG_NONE;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(v, names[i].name) == 0)
            return names[i].level;
    /* An unknown word is still a wish for some output: NCCL takes it as
     * WARN, and so does mrc, rather than staying silent. */
    return *v ? MRC__LOG_WARN : MRC__LOG_NONE;
}

static void read_level(void)
{
    level = mrc__log_parse_level(getenv("MRC_DEBUG"));
}

int mrc__log_known;

mrc__log_level_t mrc__log_level_read(void)
{
    pthread_once(&level_once, read_level);
    __atomic_store_n(&mrc__log_known, (int)level + 1, __ATOMIC_RELEASE);
    return level;
}

static void vlog(mrc__log_level_t lvl, int rank, const char *fmt, va_list ap)
{
    if (lvl == MRC__LOG_NONE || lvl > mrc__log_level())
        return;
    /* Long enough for a program line; longer ones are cut, never split. */
    char line[1024];
    int n = rank >= 0 ? snprintf(line, sizeof line, "mrc: rank %d: ", rank)
                      : snprintf(line, sizeof line, "mrc: ");
    if (n < 0)
        return;
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    if (m < 0)
        return;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    /* One write: stderr's stdio buffer could split the line in two. */
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void mrc__log(mrc__log_level_t lvl, int rank, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(lvl, rank, fmt, ap);
    va_end(ap);
}

void mrc__trace(int rank, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(MRC__LOG_TRACE, rank, fmt, ap);
    va_end(ap);
}
