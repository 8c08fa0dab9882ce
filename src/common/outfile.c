/*
 * Output files written whole or not at all, without clobbering anything
 * but the target (docs/security.md):
 *
 *   target                      what happens
 *   missing or a regular file   a new temporary beside it (O_CREAT|O_EXCL,
 *                               random name, so never a planted link) is
 *                               written and renamed over the target
 *   a symbolic link             the link itself is replaced, as above; the
 *                               file it pointed to is untouched
 *   /dev/stdout, /dev/stderr,   written through that descriptor (sharing
 *   /dev/fd/N, /proc/self/fd/N  its offset, as a redirection does)
 *   another link in /dev, /proc refused: never replaced, never followed
 *   a character device, FIFO    written through (opened O_WRONLY|O_NOFOLLOW,
 *                               nothing created, truncated or replaced)
 *   a FIFO of another user in   refused, as the kernel's protected_fifos
 *   a sticky shared directory   does (someone else's trap in /tmp)
 *   a directory, block device   refused
 *
 * No link is ever followed to a device: a link planted in /tmp that points
 * to /dev/mem or a disk is replaced like any other link.
 *
 * A write that fails removes the temporary and leaves the target as it was;
 * what went through to a device or FIFO cannot be taken back.
 *
 * The temporary is created with mode 0666 so that the kernel applies the
 * umask (and any default ACL) exactly as for a plain open(): no umask()
 * call, which would race with other threads of a program using the
 * library.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

/* The descriptor that names such as /dev/stdout and /dev/fd/3 stand for,
 * or -1. Opening them anew would start a second file offset at 0 (over
 * what the process already wrote there when it is a file); writing through
 * a duplicate shares the offset, as a shell redirection does. */
static int named_descriptor(const char *path)
{
    if (strcmp(path, "/dev/stdin") == 0)
        return -1;
    if (strcmp(path, "/dev/stdout") == 0)
        return STDOUT_FILENO;
    if (strcmp(path, "/dev/stderr") == 0)
        return STDERR_FILENO;
    const char *n = strncmp(path, "/dev/fd/", 8) == 0          ? path + 8
                    : strncmp(path, "/proc/self/fd/", 14) == 0 ? path + 14
                                                               : NULL;
    long fd = -1;
    if (!n || mrc__parse_long(n, 0, 1 << 20, &fd) != 0)
        return -1;
    return (int)fd;
}

/* Writes through a descriptor named by the path (/dev/stdout), which may
 * well be a regular file the shell opened. */
static mrc_status_t dup_through(mrc__outfile_t *of, const char *path, int named)
{
    if (named == STDOUT_FILENO)
        fflush(stdout); /* what was printed before comes first */
    int fd = fcntl(named, F_DUPFD_CLOEXEC, 3);
    if (fd < 0)
        return mrc__error(MRC_ERR_IO, "cannot write %s: %s", path,
                          strerror(errno));
    of->fd = fd;
    return MRC_OK;
}

/* 1 if `st`, a FIFO at `path`, belongs to someone else in a sticky
 * world-writable directory (such as /tmp) that is not theirs either: the
 * case the kernel's protected_fifos refuses for O_CREAT. */
static int foreign_fifo(const char *path, const struct stat *st)
{
    if (st->st_uid == geteuid())
        return 0;
    size_t n = strlen(path);
    char *dir = malloc(n + 3);
    if (!dir)
        return 1;
    const char *slash = strrchr(path, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == path)
        strcpy(dir, "/");
    else
        snprintf(dir, n + 3, "%.*s", (int)(slash - path), path);
    struct stat ds;
    int shared = stat(dir, &ds) != 0 ||
                 ((ds.st_mode & S_ISVTX) && (ds.st_mode & S_IWOTH) &&
                  ds.st_uid != st->st_uid);
    free(dir);
    return shared;
}

/* Writes through a character device or FIFO seen by lstat. */
static mrc_status_t open_through(mrc__outfile_t *of, const char *path)
{
    int fd = open(path, O_WRONLY | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return mrc__error(MRC_ERR_IO, "cannot write %s: %s", path,
                          strerror(errno));
    struct stat st;
    /* Only what was seen when deciding may be written through: a regular
     * file or a disk swapped in meanwhile would be overwritten in place. */
    if (fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        close(fd);
        return mrc__error(
            MRC_ERR_IO, "cannot write %s: it changed while being opened", path);
    }
    of->fd = fd;
    return MRC_OK;
}

/* A new file beside `path` with a random name, so the final rename stays
 * on one file system and no one can plant a link at the name first. */
static mrc_status_t open_temp(mrc__outfile_t *of, const char *path)
{
    size_t n = strlen(path) + 24;
    char *tmp = malloc(n);
    if (!tmp)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int tries = 0; tries < 100; tries++) {
        char rnd[33];
        if (mrc__random_job_id(rnd, sizeof rnd) != 0) {
            free(tmp);
            return mrc__error(MRC_ERR_IO,
                              "cannot write %s: no random "
                              "bytes for a temporary name: %s",
                              path, strerror(errno));
        }
        snprintf(tmp, n, "%s.tmp.%.12s", path, rnd);
        int fd = open(tmp,
                      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY |
                          O_CLOEXEC,
                      0666);
        if (fd >= 0) {
            of->fd = fd;
            of->tmp = tmp;
            return MRC_OK;
        }
        if (errno != EEXIST)
            break;
    }
    mrc_status_t st = mrc__error(MRC_ERR_IO,
                                 "cannot create %s (a temporary "
                                 "beside it): %s",
                                 path, strerror(errno));
    free(tmp);
    return st;
}

mrc_status_t mrc__outfile_open(mrc__outfile_t *of, const char *path)
{
    struct stat st;
    of->fd = -1;
    of->tmp = NULL;
    of->path = NULL;
    if (!path || !*path)
        return mrc__error(MRC_ERR_INVALID_ARG, "no output file name");
    mrc_status_t rc = MRC_OK;
    if (lstat(path, &st) != 0) {
        if (errno != ENOENT)
            return mrc__error(MRC_ERR_IO, "cannot write %s: %s", path,
                              strerror(errno));
        rc = open_temp(of, path);
    } else if (S_ISDIR(st.st_mode)) {
        return mrc__error(MRC_ERR_IO, "cannot write %s: it is a directory",
                          path);
    } else if (S_ISBLK(st.st_mode)) {
        return mrc__error(MRC_ERR_IO,
                          "cannot write %s: it is a block "
                          "device",
                          path);
    } else if (S_ISREG(st.st_mode)) {
        rc = open_temp(of, path);
    } else if (S_ISLNK(st.st_mode)) {
        int named = named_descriptor(path);
        if (named >= 0)
            rc = dup_through(of, path, named);
        else if (strncmp(path, "/dev/", 5) == 0 ||
                 strncmp(path, "/proc/", 6) == 0)
            return mrc__error(MRC_ERR_IO,
                              "cannot write %s: a system link, neither "
                              "replaced nor followed",
                              path);
        else
            rc = open_temp(of, path);
    } else if (S_ISFIFO(st.st_mode) && foreign_fifo(path, &st)) {
        return mrc__error(MRC_ERR_IO,
                          "cannot write %s: a FIFO of another user in a "
                          "shared directory",
                          path);
    } else { /* character device, FIFO, socket */
        rc = open_through(of, path);
    }
    if (rc != MRC_OK)
        return rc;
    of->path = mrc__strdup(path);
    if (!of->path) {
        mrc__outfile_abort(of);
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    }
    return MRC_OK;
}

mrc_status_t mrc__outfile_write(mrc__outfile_t *of, const void *data,
                                size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(of->fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return mrc__error(MRC_ERR_IO, "cannot write %s: %s", of->path,
                              w < 0 ? strerror(errno) : "no progress");
        p += w;
        len -= (size_t)w;
    }
    return MRC_OK;
}

void mrc__outfile_abort(mrc__outfile_t *of)
{
    if (of->fd >= 0)
        close(of->fd);
    if (of->tmp)
        unlink(of->tmp);
    free(of->tmp);
    free(of->path);
    of->fd = -1;
    of->tmp = NULL;
    of->path = NULL;
}

mrc_status_t mrc__outfile_commit(mrc__outfile_t *of)
{
    mrc_status_t st = MRC_OK;
    /* close() reports the errors of file systems that write late (NFS). */
    int bad = close(of->fd) != 0;
    of->fd = -1;
    if (bad || (of->tmp && rename(of->tmp, of->path) != 0))
        st = mrc__error(MRC_ERR_IO, "cannot write %s: %s", of->path,
                        strerror(errno));
    if (st == MRC_OK) {
        free(of->tmp); /* renamed: nothing to remove */
        of->tmp = NULL;
    }
    mrc__outfile_abort(of);
    return st;
}

mrc_status_t mrc__write_file(const char *path, const void *data, size_t len)
{
    mrc__outfile_t of;
    mrc_status_t st = mrc__outfile_open(&of, path);
    if (st != MRC_OK)
        return st;
    st = mrc__outfile_write(&of, data, len);
    if (st != MRC_OK) {
        mrc__outfile_abort(&of);
        return st;
    }
    return mrc__outfile_commit(&of);
}
