/*
 * Shared regions: memory a process allocates with mrc_mem_alloc, which
 * the ranks of a shared-memory job on its host map and read with plain
 * loads instead of reading it through the kernel (process_vm_readv).
 *
 * Accepts: any number of regions; those in the first REGIONS (64) slots
 * of the process's table are published (the others are ordinary memory,
 * read through the kernel).
 * Limits: Linux (memfd_create, pidfd_getfd: 5.6 and later); a peer takes
 * a region's file with pidfd_getfd, which the kernel allows where it
 * allows cross-memory attach (the same ptrace check). Where it does not,
 * or a peer's table names something that is not a sealed region of the
 * size it says, reads of that peer go through the kernel as before.
 *
 * Why: a reduction of a peer's buffer through the kernel costs the
 * kernel's copy into a bounce buffer and then the user's pass; through a
 * mapping it is the pass alone. The kernel's copy ran at 5.8-6.1 GB/s
 * for 64 MiB here, a copy from a mapping at 7.0-7.7 (a private copy:
 * 7.4-8.1).
 *
 * The owner keeps the process's regions in one table (a lock: allocation
 * is rare) and copies it into its table in each job's segment at the
 * start of a call when it has changed: a slot's id is cleared before its
 * other fields are rewritten and set after, so that a reader that sees
 * the same id before and after reading them has them whole. A reader
 * maps a region once, on first use, and keeps the mapping while the
 * owner's slot holds the same id (ids are never reused).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shm_internal.h"

typedef struct region {
    uint64_t id; /* 0: free */
    char *base;
    size_t len;
    int fd;
} region_t;

/* The process's regions; a slot below REGIONS is published, a later one
 * is ordinary memory to the peers. Freed slots are taken again. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static region_t *regions;
static size_t num_regions, cap_regions;
static uint64_t last_id;
static uint64_t generation; /* atomic: bumped at every change */

/* ---- the owner ----------------------------------------------------------- */

static mrc_status_t new_file(size_t len, int *fd)
{
    *fd = (int)syscall(SYS_memfd_create, "mrc-mem",
                       MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (*fd < 0)
        return mrc__error(MRC_ERR_NO_MEMORY,
                          "mrc_mem_alloc: cannot create a memory file: %s",
                          strerror(errno));
    /* Sealed at its size: a reader's mapping can never run past the end
     * of the file (a fault, not an error, if it did). */
    if (ftruncate(*fd, (off_t)len) != 0 ||
        fcntl(*fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
        int err = errno;
        close(*fd);
        return mrc__error(MRC_ERR_NO_MEMORY,
                          "mrc_mem_alloc: cannot size %zu bytes: %s", len,
                          strerror(err));
    }
    return MRC_OK;
}

/* A slot for r (under the lock): a free one, or a new one at the end. */
static int keep(region_t r)
{
    size_t at = 0;
    while (at < num_regions && regions[at].id)
        at++;
    if (at == num_regions) {
        if (num_regions == cap_regions) {
            size_t cap = cap_regions ? 2 * cap_regions : REGIONS;
            region_t *m = realloc(regions, cap * sizeof *m);
            if (!m)
                return 0;
            regions = m;
            cap_regions = cap;
        }
        /* (atomic: mrc__shm_region_holds looks without the lock first) */
        __atomic_store_n(&num_regions, num_regions + 1, __ATOMIC_RELEASE);
    }
    regions[at] = r;
    if (at < REGIONS)
        __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
    return 1;
}

mrc_status_t mrc__shm_region_alloc(size_t bytes, void **ptr)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t pg = page > 0 ? (size_t)page : 4096;
    if (!ptr)
        return mrc__error(MRC_ERR_INVALID_ARG, "mrc_mem_alloc: ptr is NULL");
    *ptr = NULL;
    if (bytes == 0 || bytes > SIZE_MAX / 2)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_mem_alloc: %zu bytes is not a size it "
                          "allocates (1 to %zu)",
                          bytes, SIZE_MAX / 2);
    size_t len = (bytes + pg - 1) / pg * pg;
    int fd;
    mrc_status_t st = new_file(len, &fd);
    if (st != MRC_OK)
        return st;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = errno;
    if (m == MAP_FAILED) {
        close(fd);
        return mrc__error(MRC_ERR_NO_MEMORY,
                          "mrc_mem_alloc: cannot map %zu bytes: %s", len,
                          strerror(err));
    }
    pthread_mutex_lock(&lock);
    int kept = keep((region_t){++last_id, m, len, fd});
    pthread_mutex_unlock(&lock);
    if (!kept) {
        munmap(m, len);
        close(fd);
        return mrc__error(MRC_ERR_NO_MEMORY, "mrc_mem_alloc: out of memory");
    }
    *ptr = m;
    return MRC_OK;
}

mrc_status_t mrc__shm_region_free(void *ptr)
{
    if (!ptr)
        return MRC_OK;
    pthread_mutex_lock(&lock);
    size_t at = 0;
    while (at < num_regions && !(regions[at].id && regions[at].base == ptr))
        at++;
    region_t r = at < num_regions ? regions[at] : (region_t){0, NULL, 0, -1};
    if (at < num_regions) {
        regions[at].id = 0;
        if (at < REGIONS)
            __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lock);
    if (!r.id)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "mrc_mem_free: %p is not memory mrc_mem_alloc "
                          "returned (or it was freed)",
                          ptr);
    munmap(r.base, r.len);
    close(r.fd);
    return MRC_OK;
}

int mrc__shm_region_holds(const void *ptr, size_t bytes)
{
    const char *p = ptr;
    int held = 0;
    /* A process that never made one (most) asks every large send. */
    if (__atomic_load_n(&num_regions, __ATOMIC_ACQUIRE) == 0)
        return 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < num_regions && i < REGIONS && !held; i++)
        held = regions[i].id && p >= regions[i].base &&
               (size_t)(p - regions[i].base) <= regions[i].len &&
               bytes <= regions[i].len - (size_t)(p - regions[i].base);
    pthread_mutex_unlock(&lock);
    return held;
}

void mrc__shm_regions_publish(mrc__shm_endpoint_t *e)
{
    uint64_t gen = __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
    if (gen == e->regions_gen)
        return;
    region_table_t *t = region_table_at(e, e->rank);
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < REGIONS; i++) {
        region_t r = i < num_regions ? regions[i] : (region_t){0, NULL, 0, -1};
        region_slot_t *s = &t->slot[i];
        if (__atomic_load_n(&s->id, __ATOMIC_RELAXED) == r.id)
            continue;
        __atomic_store_n(&s->id, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&s->base, (uint64_t)(uintptr_t)r.base,
                         __ATOMIC_RELAXED);
        __atomic_store_n(&s->len, (uint64_t)r.len, __ATOMIC_RELAXED);
        __atomic_store_n(&s->fd, (int32_t)r.fd, __ATOMIC_RELAXED);
        __atomic_store_n(&s->id, r.id, __ATOMIC_RELEASE);
    }
    size_t used = num_regions < REGIONS ? num_regions : REGIONS;
    while (used > 0 && !regions[used - 1].id)
        used--;
    __atomic_store_n(&t->used, (uint64_t)used, __ATOMIC_RELEASE);
    e->regions_gen = __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&lock);
    __atomic_add_fetch(&t->gen, 1, __ATOMIC_RELEASE);
}

/* ---- the readers --------------------------------------------------------- */

/* Peer p's slot i whole, or 0 when it changed while read (or is free). */
static uint64_t read_slot(const mrc__shm_endpoint_t *e, int p, int i,
                          uint64_t *base, uint64_t *len, int32_t *fd)
{
    region_slot_t *s = &region_table_at(e, p)->slot[i];
    uint64_t id = __atomic_load_n(&s->id, __ATOMIC_ACQUIRE);
    *base = __atomic_load_n(&s->base, __ATOMIC_RELAXED);
    *len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
    *fd = __atomic_load_n(&s->fd, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&s->id, __ATOMIC_RELAXED) == id ? id : 0;
}

static void unmap_view(region_view_t *v)
{
    if (v->ptr)
        munmap(v->ptr, v->len);
    *v = (region_view_t){0};
}

/* Peer p's region file fd, mapped for reading; NULL when the kernel
 * refuses or the file is not a region sealed at len bytes or more, with
 * *why saying which. */
static char *map_peer(const mrc__shm_endpoint_t *e, int p, int32_t fd,
                      uint64_t len, const char **why)
{
    int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)e->info[p].pid, 0);
    int mine = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
    *why = strerror(errno);
    if (pidfd >= 0)
        close(pidfd);
    if (mine < 0)
        return NULL;
    /* The seals first: once it cannot shrink, its size stands. */
    int seals = fcntl(mine, F_GET_SEALS);
    struct stat sb;
    char *m = NULL;
    *why = "its table names a file that is not a sealed region of the "
           "size it says";
    if (seals >= 0 && (seals & F_SEAL_SHRINK) && fstat(mine, &sb) == 0 &&
        S_ISREG(sb.st_mode) && (uint64_t)sb.st_size >= len && len > 0) {
        m = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED | MAP_POPULATE, mine,
                 0);
        if (m == MAP_FAILED) {
            *why = strerror(errno);
            m = NULL;
        }
    }
    close(mine);
    return m;
}

/* Drops the mappings of peer p's regions that its table no longer holds
 * (freed: their memory would stay alive while mapped here). */
static void forget_freed(mrc__shm_endpoint_t *e, int p)
{
    region_view_t *v = e->views + (size_t)p * REGIONS;
    for (int i = 0; i < REGIONS; i++) {
        uint64_t base, len;
        int32_t fd;
        if (v[i].id && read_slot(e, p, i, &base, &len, &fd) != v[i].id)
            unmap_view(&v[i]);
    }
}

void mrc__shm_regions_look(mrc__shm_endpoint_t *e)
{
    if (!e->viewed)
        return;
    for (int p = 0; p < e->n; p++) {
        uint64_t gen =
            __atomic_load_n(&region_table_at(e, p)->gen, __ATOMIC_ACQUIRE);
        if (gen != e->views_gen[p]) {
            e->views_gen[p] = gen;
            forget_freed(e, p);
        }
    }
}

const char *mrc__shm_peer_view(mrc__shm_endpoint_t *e, int p, uint64_t addr,
                               size_t bytes)
{
    if (!e->views || e->no_views[p] || p == e->rank)
        return NULL;
    region_view_t *v = e->views + (size_t)p * REGIONS;
    /* Most memory is in no region: a look at the count first. */
    uint64_t used =
        __atomic_load_n(&region_table_at(e, p)->used, __ATOMIC_ACQUIRE);
    for (int i = 0; i < (int)used && i < REGIONS; i++) {
        uint64_t base, len;
        int32_t fd;
        uint64_t id = read_slot(e, p, i, &base, &len, &fd);
        if (!id || addr < base || addr - base >= len ||
            bytes > len - (addr - base))
            continue;
        if (v[i].id != id) {
            unmap_view(&v[i]);
            const char *why;
            char *m = map_peer(e, p, fd, len, &why);
            if (!m) {
                e->no_views[p] = 1; /* through the kernel from now on */
                mrc__log(MRC__LOG_INFO, e->rank,
                         "reads rank %d's shared regions through the "
                         "kernel: it cannot map them (%s)",
                         p, why);
                return NULL;
            }
            mrc__log(MRC__LOG_TRACE, e->rank,
                     "maps rank %d's shared region %llu (%llu bytes)", p,
                     (unsigned long long)id, (unsigned long long)len);
            v[i] = (region_view_t){id, base, (size_t)len, m};
            e->viewed = 1;
        }
        return v[i].ptr + (addr - base);
    }
    return NULL;
}

mrc_status_t mrc__shm_views_init(mrc__shm_endpoint_t *e)
{
    e->views = calloc((size_t)e->n * REGIONS, sizeof *e->views);
    e->views_gen = calloc((size_t)e->n, sizeof *e->views_gen);
    e->no_views = calloc((size_t)e->n, 1);
    if (!e->views || !e->views_gen || !e->no_views)
        return mrc__error(MRC_ERR_NO_MEMORY, "out of memory");
    /* MRC_NO_MAP: every peer's regions through the kernel, as other
     * memory (a comparison, or a way round a kernel that maps wrongly). */
    const char *off = getenv("MRC_NO_MAP");
    if (off && *off && strcmp(off, "0") != 0)
        memset(e->no_views, 1, (size_t)e->n);
    return MRC_OK;
}

void mrc__shm_views_free(mrc__shm_endpoint_t *e)
{
    for (size_t i = 0; e->views && i < (size_t)e->n * REGIONS; i++)
        unmap_view(&e->views[i]);
    free(e->views);
    free(e->views_gen);
    free(e->no_views);
    e->views = NULL;
}
