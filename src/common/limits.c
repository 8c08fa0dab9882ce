/*
 * The memory limit: what one request (a schedule, a simulation, the
 * buffers of a run) may ask for before anything is allocated. Requests
 * are estimated up front and refused with the figure, so that a hostile
 * file or a typo in a size fails in a millisecond with a message instead
 * of swapping the machine for minutes before malloc gives up (Linux
 * overcommits: malloc rarely says no in time). Input files are read
 * here too, under the cap that the limit sets for them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

/* 0: not set by the caller; the environment or the default decide. */
static _Atomic uint64_t explicit_limit;

void mrc__set_memory_limit(uint64_t bytes)
{
    atomic_store(&explicit_limit, bytes);
}

/* MRC_MAX_MEMORY as a size; 0 when unset or not a positive size (the
 * default then applies: a typo must not lift the limit, and the request
 * that would have been measured against it is refused,
 * mrc__check_memory_env). */
static uint64_t env_limit(void)
{
    const char *env = getenv("MRC_MAX_MEMORY");
    uint64_t v = 0;
    if (!env || mrc__parse_size(env, &v) != 0)
        return 0;
    return v;
}

mrc_status_t mrc__check_memory_env(void)
{
    const char *env = getenv("MRC_MAX_MEMORY");
    if (atomic_load(&explicit_limit) != 0 || !env || !*env || env_limit())
        return MRC_OK;
    return mrc__error(MRC_ERR_INVALID_ARG,
                      "$MRC_MAX_MEMORY '%s' is not a size in bytes above 0 "
                      "(e.g. 64G)",
                      env);
}

/* Half of physical memory: room for the rest of the machine and for a
 * second request at once (ranks of one job, two users). 3/4 let a 70-byte
 * fabric file take 16 GB of a shared 24 GiB machine, and the kernel's
 * OOM killer, not a message, ended it. Without a figure from the system,
 * 4 GiB. */
static uint64_t default_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return (uint64_t)4 << 30;
    return mrc__sat_mul_add((uint64_t)pages, (uint64_t)page, 0) / 2;
}

uint64_t mrc__memory_limit(void)
{
    uint64_t v = atomic_load(&explicit_limit);
    if (v == 0)
        v = env_limit();
    return v ? v : default_limit();
}

int mrc__memory_limit_is_set(void)
{
    return atomic_load(&explicit_limit) != 0 || env_limit() != 0;
}

const char *mrc__format_bytes(uint64_t bytes, char *buf, size_t size)
{
    static const char *const units[] = {"KiB", "MiB", "GiB"};
    if (bytes < 1024) {
        snprintf(buf, size, "%llu bytes", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes / 1024;
    int u = 0;
    while (u < 2 && v >= 1024) {
        v /= 1024;
        u++;
    }
    if (v < 10)
        snprintf(buf, size, "%.1f %s", v, units[u]);
    else
        snprintf(buf, size, "%.0f %s", v, units[u]);
    return buf;
}

mrc_status_t mrc__check_memory(uint64_t need, const char *what)
{
    mrc_status_t st = mrc__check_memory_env();
    if (st != MRC_OK)
        return st;
    uint64_t limit = mrc__memory_limit();
    if (need <= limit)
        return MRC_OK;
    char a[32], b[32];
    return mrc__error(MRC_ERR_INVALID_ARG,
                      "needs %s of %s; the limit is %s (raise it with "
                      "--max-memory or MRC_MAX_MEMORY)",
                      mrc__format_bytes(need, a, sizeof a), what,
                      mrc__format_bytes(limit, b, sizeof b));
}

mrc_status_t mrc__check_json_text(size_t len, const char *where)
{
    char what[300];
    snprintf(what, sizeof what, "JSON tree for %zu bytes of %s", len, where);
    return mrc__check_memory(
        mrc__sat_mul_add(len, MRC_JSON_BYTES_PER_TEXT_BYTE, 0), what);
}

size_t mrc__file_limit(void)
{
    uint64_t cap = (uint64_t)64 << 20;
    if (mrc__memory_limit_is_set())
        cap = mrc__memory_limit() / MRC_JSON_BYTES_PER_TEXT_BYTE;
    if (cap < 4096)
        cap = 4096;
    return cap > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)cap;
}

mrc_status_t mrc__read_file(const char *path, size_t max_bytes, char **out,
                            size_t *len)
{
    *out = NULL;
    mrc_status_t st = mrc__check_memory_env();
    if (st != MRC_OK)
        return st;
    if (max_bytes == 0)
        max_bytes = mrc__file_limit();
    /* Non-blocking, so that opening a FIFO with no writer does not wait
     * forever: it is refused below like any file that is not regular. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return mrc__error(MRC_ERR_IO, "%s: cannot open: %s", path,
                          strerror(errno));
    struct stat info;
    char a[32], b[32];
    if (fstat(fd, &info) != 0) {
        int e = errno;
        close(fd);
        return mrc__error(MRC_ERR_IO, "%s: cannot open: %s", path, strerror(e));
    }
    if (!S_ISREG(info.st_mode)) {
        close(fd);
        return mrc__error(MRC_ERR_INVALID_ARG, "%s is not a regular file",
                          path);
    }
    if ((uint64_t)info.st_size > max_bytes) {
        close(fd);
        return mrc__error(
            MRC_ERR_INVALID_ARG,
            "%s is %s, larger than the %s limit for input "
            "files (raise it with --max-memory or "
            "MRC_MAX_MEMORY: the limit is 1/32 of it)",
            path, mrc__format_bytes((uint64_t)info.st_size, a, sizeof a),
            mrc__format_bytes(max_bytes, b, sizeof b));
    }
    int flags = fcntl(fd, F_GETFL);
    FILE *f = flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0
                  ? NULL
                  : fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        return mrc__error(MRC_ERR_IO, "%s: cannot open: %s", path, strerror(e));
    }
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    char chunk[65536];
    size_t n;
    /* The size can change under us (a growing file): the cap holds on
     * what is read too. */
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (sb.len + n > max_bytes) {
            st = mrc__error(MRC_ERR_INVALID_ARG,
                            "%s is larger than the %s limit for input files",
                            path, mrc__format_bytes(max_bytes, b, sizeof b));
            break;
        }
        mrc__sb_append(&sb, chunk, n);
    }
    if (st == MRC_OK && ferror(f))
        st =
            mrc__error(MRC_ERR_IO, "%s: read error: %s", path, strerror(errno));
    fclose(f);
    if (st != MRC_OK) {
        mrc__sb_free(&sb);
        return st;
    }
    size_t got = sb.len;
    char *data = mrc__sb_take(&sb);
    if (!data)
        return mrc__error(MRC_ERR_NO_MEMORY, "%s: out of memory reading", path);
    *out = data;
    if (len)
        *len = got;
    return MRC_OK;
}
