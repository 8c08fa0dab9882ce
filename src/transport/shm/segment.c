/* The shared-memory transport's segment: its size and layout, created
 * by rank 0 and checked by the others before they trust it, the probe of
 * cross-memory attach, attaching and detaching. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "reduce/reduce.h"
#include "shm_internal.h"

static volatile uint64_t probe_word = 0x70726f6265; /* "probe" */

static void set_layout(mrc__shm_endpoint_t *e)
{
    size_t n = (size_t)e->n;
    e->win_max = window_max(e->n);
    e->windows = e->base + HEADER_BYTES + tokens_bytes(e->n);
    e->posts = e->windows + windows_bytes(e->n);
    e->regions = e->posts + n * sizeof(rank_post_t);
    e->channels = e->regions + n * sizeof(region_table_t);
    assert(e->channels == e->base + channels_at(e->n));
}

static size_t segment_bytes(int n, size_t slot_bytes)
{
    return channels_at(n) +
           (size_t)n * (size_t)n * SLOTS * (SLOT_HEADER + slot_bytes);
}

static size_t pick_slot_bytes(int n)
{
    size_t pairs = (size_t)n * (size_t)(n > 1 ? n - 1 : 1);
    size_t s = CHANNEL_BUDGET / pairs / SLOTS;
    s = s > SLOT_MAX ? SLOT_MAX : s < SLOT_MIN ? SLOT_MIN : s;
    return s & ~(size_t)63;
}

size_t mrc__shm_rendezvous_bytes(int nranks)
{
    return SLOTS * pick_slot_bytes(nranks);
}

size_t mrc__shm_slot_bytes(int nranks)
{
    return pick_slot_bytes(nranks);
}

/* ---- attaching -------------------------------------------------------- */

/* Whether the segment open on fd can be this job's: a regular object of
 * this user's, mode 0600 exactly (as rank 0 creates it; another user's,
 * or one anybody may write, was not made by this job), of the size the
 * job needs. MRC_INPROGRESS while rank 0 has not sized it yet. */
static mrc_status_t check_segment(const mrc__shm_endpoint_t *e, int fd,
                                  size_t bytes)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: cannot stat shared memory %s: %s", e->rank,
                          e->name, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: shared memory %s is not a regular "
                          "object: refused",
                          e->rank, e->name);
    if (sb.st_uid != geteuid())
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: shared memory %s belongs to uid %ld, not "
                          "to this user (uid %ld): another user made it "
                          "first; refused",
                          e->rank, e->name, (long)sb.st_uid, (long)geteuid());
    /* Rank 0 sets the mode before the size: until it has a size, the
     * mode may still be the umask's. */
    if (sb.st_size == 0)
        return MRC_INPROGRESS;
    if ((sb.st_mode & 07777) != 0600)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: shared memory %s has mode %04o, not "
                          "0600: not made by this job; refused",
                          e->rank, e->name, (unsigned)(sb.st_mode & 07777));
    if ((uint64_t)sb.st_size != bytes)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: shared memory %s is %lld bytes, not the "
                          "%zu of a job of %d ranks: not this job's; refused",
                          e->rank, e->name, (long long)sb.st_size, bytes, e->n);
    return MRC_OK;
}

/* The header rank 0 wrote: MRC_INPROGRESS until it has. */
static mrc_status_t check_header(const mrc__shm_endpoint_t *e)
{
    const header_t *h = e->hdr;
    uint64_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
    if (magic == 0)
        return MRC_INPROGRESS;
    if (magic != SHM_MAGIC || h->version != SHM_VERSION)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: shared memory %s has no mrc header of "
                          "version %d (magic %#llx, version %u): not this "
                          "job's; refused",
                          e->rank, e->name, SHM_VERSION,
                          (unsigned long long)magic, h->version);
    if (memcmp(h->token, e->token, TOKEN_BYTES) != 0)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: shared memory %s carries another job's "
                          "token (one left by an earlier job of the same "
                          "id?); refused",
                          e->rank, e->name);
    if (h->n != e->n || h->slot_bytes != e->slot_bytes)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "rank %d: the job has %d ranks, this rank was "
                          "told %d",
                          e->rank, h->n, e->n);
    return MRC_OK;
}

/* Whether the file system of POSIX shared memory (glibc's /dev/shm) has
 * room for the whole segment. Its pages are taken only as they are
 * touched, and a touch past the file system's room is a SIGBUS in the
 * middle of a call (4 ranks' allgather of 8 MiB blocks on a 48 MiB
 * /dev/shm, a container's default size of 64 MiB less Open MPI's own):
 * refused here, before any rank maps it: by rank 0, and by every other
 * rank that finds no segment yet (else it would wait for rank 0's until
 * its timeout; one it finds, rank 0 has checked, and the pages rank 0
 * has touched since would make it refuse near the limit). No figure
 * (statvfs failed) or no limit (a file system of 0 blocks: tmpfs of
 * size=0, ramfs): not refused. */
static mrc_status_t check_room(const mrc__shm_endpoint_t *e, size_t bytes)
{
    struct statvfs v;
    if (statvfs("/dev/shm", &v) != 0 || v.f_blocks == 0)
        return MRC_OK;
    uint64_t room = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
    if ((uint64_t)bytes <= room)
        return MRC_OK;
    char need[32], has[32];
    return mrc__error(MRC_ERR_NO_MEMORY,
                      "rank %d: the job's shared memory needs %s for %d "
                      "ranks, and /dev/shm has %s free: give it more room "
                      "(a container's --shm-size) or run fewer ranks on "
                      "this host",
                      e->rank, mrc__format_bytes(bytes, need, sizeof need),
                      e->n, mrc__format_bytes(room, has, sizeof has));
}

static mrc_status_t open_segment(mrc__shm_endpoint_t *e, double timeout_s)
{
    size_t bytes = segment_bytes(e->n, e->slot_bytes);
    int fd;
    if (e->rank == 0) {
        mrc_status_t room = check_room(e, bytes);
        if (room != MRC_OK)
            return room;
        fd = shm_open(e->name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
        if (fd < 0 && errno == EEXIST)
            return mrc__error(MRC_ERR_TRANSPORT,
                              "rank 0: shared memory %s already exists "
                              "(another user's, or left by an earlier job "
                              "of the same id); refused",
                              e->name);
        if (fd < 0)
            return mrc__error(MRC_ERR_TRANSPORT,
                              "rank 0: cannot create shared memory %s: %s",
                              e->name, strerror(errno));
        /* The umask may have taken bits away; the peers want 0600. */
        if (fchmod(fd, 0600) != 0) {
            int err = errno;
            close(fd);
            shm_unlink(e->name);
            return mrc__error(MRC_ERR_TRANSPORT,
                              "rank 0: cannot set the mode of shared memory "
                              "%s: %s",
                              e->name, strerror(err));
        }
        if (ftruncate(fd, (off_t)bytes) != 0) {
            int err = errno;
            close(fd);
            shm_unlink(e->name);
            return mrc__error(MRC_ERR_TRANSPORT,
                              "rank 0: cannot size shared memory %s to %zu "
                              "bytes: %s",
                              e->name, bytes, strerror(err));
        }
    } else {
        double start = mrc__shm_now();
        for (int looked = 0;; looked = 1) {
            fd = shm_open(e->name, O_RDWR | O_NOFOLLOW, 0);
            int err = fd < 0 ? errno : 0;
            mrc_status_t st = fd >= 0 ? check_segment(e, fd, bytes)
                              : err == ENOENT && !looked ? check_room(e, bytes)
                                                         : MRC_OK;
            if (fd >= 0 && st == MRC_OK)
                break;
            if (fd >= 0)
                close(fd);
            if (st != MRC_OK && st != MRC_INPROGRESS)
                return st;
            else if (fd < 0 && err != ENOENT)
                return mrc__error(MRC_ERR_TRANSPORT,
                                  "rank %d: cannot open shared memory %s: %s",
                                  e->rank, e->name, strerror(err));
            if (mrc__shm_now() - start > timeout_s)
                return mrc__error(MRC_ERR_TIMEOUT,
                                  "rank %d: rank 0 did not create the job's "
                                  "shared memory within %g s",
                                  e->rank, timeout_s);
            usleep(1000);
        }
    }
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = errno;
    close(fd);
    if (m == MAP_FAILED)
        return mrc__error(MRC_ERR_TRANSPORT,
                          "rank %d: cannot map %zu bytes of shared memory: %s",
                          e->rank, bytes, strerror(err));
    e->base = m;
    e->bytes = bytes;
    e->hdr = m;
    set_layout(e);
    return MRC_OK;
}

/* Reads `bytes` at `addr` in rank p's memory. */
mrc_status_t mrc__shm_read_peer(mrc__shm_endpoint_t *e, int p, void *dst,
                                uint64_t addr, size_t bytes)
{
    while (bytes > 0) {
        struct iovec l = {dst, bytes}, r = {(void *)(uintptr_t)addr, bytes};
        ssize_t got = process_vm_readv(e->info[p].pid, &l, 1, &r, 1, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0 && (errno == ESRCH || !mrc__shm_peer_alive(e, p)))
            return mrc__shm_job_lost(e, p);
        if (got <= 0 && __atomic_load_n(&e->hdr->lost, __ATOMIC_ACQUIRE))
            return mrc__shm_job_lost(e, 0); /* names the rank first seen gone */
        if (got <= 0)
            return mrc__error(MRC_ERR_TRANSPORT,
                              "rank %d: cannot read %zu bytes of rank %d: %s",
                              e->rank, bytes, p,
                              got < 0 ? strerror(errno) : "nothing read");
        dst = (char *)dst + got;
        addr += (uint64_t)got;
        bytes -= (size_t)got;
    }
    return MRC_OK;
}

/* Can this rank read every peer's memory (process_vm_readv: the kernel
 * may forbid it, as Yama does)? Each rank says so in the header; senders
 * use rendezvous only towards ranks that can. Then waits for all.
 * MRC_NO_CMA=1: this rank says it cannot, as on such a host (the paths
 * without the kernel's copy, run where it is allowed). */
static mrc_status_t probe_peers(mrc__shm_endpoint_t *e, double timeout_s)
{
    const char *no_cma = getenv("MRC_NO_CMA");
    int ok = !(no_cma && no_cma[0] && strcmp(no_cma, "0") != 0);
    for (int p = 0; p < e->n && ok; p++) {
        uint64_t v = 0;
        struct iovec l = {&v, sizeof v},
                     r = {(void *)(uintptr_t)e->info[p].probe, sizeof v};
        ok = process_vm_readv(e->info[p].pid, &l, 1, &r, 1, 0) ==
                 (ssize_t)sizeof v &&
             v == probe_word;
    }
    e->bounce = ok ? malloc(BOUNCE) : NULL;
    e->free_tokens = malloc(TOKENS * sizeof *e->free_tokens);
    if (!e->free_tokens)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    for (int t = 0; t < TOKENS - 1; t++) /* not TAKE_COUNT */
        e->free_tokens[e->num_free++] = (uint32_t)(TOKENS - 1 - t);
    __atomic_store_n(&e->info[e->rank].can_read, ok && e->bounce != NULL,
                     __ATOMIC_RELEASE);
    /* The ring of records faulted in now (written here, mapped by every
     * peer below), not by a job's first 64 small calls: with 10 calls of
     * warm-up, a 4-byte reduce at 2 ranks timed 0.5 us a call over the
     * next 1000, 0.12 once they were in. */
    memset(ring_record_at(e, e->rank, 0), 0, (size_t)RECORDS * DEEP_ENTRY);
    memset(wide_window_at(e, e->rank, 0), 0,
           (size_t)WIDE_RECORDS * WIDE_WINDOW);
    /* and the log of deep calls, whose page faulted at the first deep
     * call that reached it (a 4-byte broadcast after 16 MiB allgathers:
     * 30-100 us at its 17th or 22nd call) */
    memset(post_at(e, e->rank)->log, 0, sizeof post_at(e, e->rank)->log);
    __atomic_add_fetch(&e->hdr->ready, 1, __ATOMIC_ACQ_REL);
    double start = mrc__shm_now();
    while (__atomic_load_n(&e->hdr->ready, __ATOMIC_ACQUIRE) < e->n) {
        for (int r = 0; r < e->n; r++)
            if (!mrc__shm_peer_alive(e, r))
                return mrc__error(MRC_ERR_PEER_LOST,
                                  "rank %d: rank %d died while the job "
                                  "started",
                                  e->rank, r);
        if (mrc__shm_now() - start > timeout_s)
            return mrc__error(MRC_ERR_TIMEOUT,
                              "rank %d: the ranks did not all start within "
                              "%g s",
                              e->rank, timeout_s);
        usleep(200);
    }
    e->all_read = 1;
    for (int r = 0; r < e->n; r++)
        e->all_read &= __atomic_load_n(&e->info[r].can_read, __ATOMIC_ACQUIRE);
    for (int r = 0; r < e->n; r++) {
        for (size_t at = 0; at < (size_t)RECORDS * DEEP_ENTRY; at += 4096)
            (void)*(volatile const char *)(ring_record_at(e, r, 0) + at);
        for (size_t at = 0; at < (size_t)WIDE_RECORDS * WIDE_WINDOW; at += 4096)
            (void)*(volatile const char *)(wide_window_at(e, r, 0) + at);
        const char *log = (const char *)post_at(e, r)->log;
        for (size_t at = 0; at < sizeof post_at(e, r)->log; at += 64)
            (void)*(volatile const char *)(log + at);
    }
    return MRC_OK;
}

/* Rank 0 writes the header (the magic last); the others wait for it and
 * check it. */
static mrc_status_t meet_header(mrc__shm_endpoint_t *e, double timeout_s)
{
    header_t *h = e->hdr;
    if (e->rank == 0) {
        h->n = e->n;
        h->slot_bytes = e->slot_bytes;
        h->version = SHM_VERSION;
        memcpy(h->token, e->token, TOKEN_BYTES);
        __atomic_store_n(&h->magic, (uint64_t)SHM_MAGIC, __ATOMIC_RELEASE);
        return MRC_OK;
    }
    double start = mrc__shm_now();
    mrc_status_t st;
    while ((st = check_header(e)) == MRC_INPROGRESS) {
        if (mrc__shm_now() - start > timeout_s)
            return mrc__error(MRC_ERR_TIMEOUT,
                              "rank %d: the job's shared memory was not set "
                              "up within %g s",
                              e->rank, timeout_s);
        usleep(1000);
    }
    return st;
}

/* This rank joins (its pid in the header), then waits for every rank;
 * once all are in, the name goes (nobody else can open it from now on). */
static mrc_status_t meet_ranks(mrc__shm_endpoint_t *e, double timeout_s)
{
    header_t *h = e->hdr;
    int rank = e->rank, nranks = e->n;
    e->info[rank].probe = (uint64_t)(uintptr_t)&probe_word;
    __atomic_store_n(&e->info[rank].pid, (int32_t)getpid(), __ATOMIC_RELEASE);
    e->joined = 1;
    __atomic_add_fetch(&h->attached, 1, __ATOMIC_ACQ_REL);
    double start = mrc__shm_now();
    mrc_status_t st = MRC_OK;
    while (__atomic_load_n(&h->attached, __ATOMIC_ACQUIRE) < nranks) {
        for (int r = 0; r < nranks && st == MRC_OK; r++)
            if (!mrc__shm_peer_alive(e, r))
                st = mrc__error(MRC_ERR_PEER_LOST,
                                "rank %d: rank %d died while the job started",
                                rank, r);
        if (st == MRC_OK && mrc__shm_now() - start > timeout_s)
            st = mrc__error(MRC_ERR_TIMEOUT,
                            "rank %d: %d of %d ranks attached within %g s",
                            rank, h->attached, nranks, timeout_s);
        if (st != MRC_OK)
            break;
        usleep(200);
    }
    if (rank == 0)
        shm_unlink(e->name);
    return st;
}

mrc_status_t mrc__shm_attach(int nranks, int rank, const char *job,
                             const char *token, double timeout_s,
                             mrc__shm_endpoint_t **out)
{
    *out = NULL;
    if ((size_t)nranks * sizeof(rank_info_t) + sizeof(header_t) > HEADER_BYTES)
        return mrc__error(
            MRC_ERR_INVALID_ARG,
            "shared memory takes at most %zu ranks, not %d",
            (HEADER_BYTES - sizeof(header_t)) / sizeof(rank_info_t), nranks);
    mrc__shm_endpoint_t *e = calloc(1, sizeof *e);
    if (!e)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    e->n = nranks;
    e->rank = rank;
    e->slot_bytes = pick_slot_bytes(nranks);
    e->rendezvous_bytes = mrc__shm_rendezvous_bytes(nranks);
    snprintf(e->name, sizeof e->name, "/mrc-%s-seg", job);
    if (token)
        memcpy(e->token, token, strnlen(token, sizeof e->token));
    e->send_slot = calloc((size_t)nranks, sizeof *e->send_slot);
    e->recv_slot = calloc((size_t)nranks, sizeof *e->recv_slot);
    e->held = calloc((size_t)nranks, sizeof *e->held);
    e->sends_to = calloc((size_t)nranks, sizeof *e->sends_to);
    e->early_newest = calloc((size_t)nranks, sizeof *e->early_newest);
    e->ended = calloc((size_t)nranks, sizeof *e->ended);
    e->prefetch_w = mrc__shm_prefetches_for_write();
    mrc_status_t st = e->send_slot && e->recv_slot && e->ended && e->held &&
                              e->sends_to && e->early_newest
                          ? open_segment(e, timeout_s)
                          : mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    if (st == MRC_OK) {
        e->info = (rank_info_t *)(e->base + sizeof(header_t));
        e->tokens = (int32_t *)(e->base + HEADER_BYTES);
        st = meet_header(e, timeout_s);
    }
    if (st == MRC_OK)
        st = meet_ranks(e, timeout_s);
    if (st == MRC_OK)
        st = probe_peers(e, timeout_s);
    if (st == MRC_OK)
        st = mrc__shm_views_init(e);
    if (st != MRC_OK) {
        mrc__shm_detach(e);
        return st;
    }
    *out = e;
    return MRC_OK;
}

void mrc__shm_detach(mrc__shm_endpoint_t *e)
{
    if (!e)
        return;
    if (e->joined) { /* never write to a segment that was refused */
        int32_t pid = e->info[e->rank].pid;
        if (pid > 0)
            __atomic_store_n(&e->info[e->rank].pid, -pid, __ATOMIC_RELEASE);
    }
    if (e->base) {
        munmap(e->base, e->bytes);
    }
    mrc__shm_early_free(e->early);
    mrc__shm_early_free(e->spare);
    mrc__shm_views_free(e);
    free(e->send_slot);
    free(e->recv_slot);
    free(e->ended);
    free(e->free_tokens);
    free(e->bounce);
    free(e->held);
    free(e->sends_to);
    free(e->early_newest);
    free(e->sends);
    free(e->rdvs);
    free(e->recvs);
    free(e);
}
