/*
 * Internal helpers shared by every module: error reporting, a growable
 * string buffer, number parsing. Not installed.
 */
#ifndef MRC_COMMON_H
#define MRC_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "mrc/status.h"

#if defined(__GNUC__)
#define MRC_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define MRC_PRINTF(fmt, args)
#endif

/* Records a formatted message as this thread's last error and returns
 * `status`, so that a failure reads `return mrc__error(MRC_ERR_..., ...)`. */
mrc_status_t mrc__error(mrc_status_t status, const char *fmt, ...)
    MRC_PRINTF(2, 3);

/* Prefixes this thread's last error with "prefix: " (to add where an error
 * happened once the caller knows more, such as the file name). */
void mrc__error_prefix(const char *fmt, ...) MRC_PRINTF(1, 2);

/* A growable NUL-terminated string. All appends are no-ops once an
 * allocation has failed; `failed` then stays set. */
typedef struct mrc__strbuf {
    char *data;
    size_t len;
    size_t cap;
    int failed;
} mrc__strbuf_t;

void mrc__sb_init(mrc__strbuf_t *sb);
void mrc__sb_free(mrc__strbuf_t *sb);
void mrc__sb_append(mrc__strbuf_t *sb, const char *s, size_t n);
void mrc__sb_puts(mrc__strbuf_t *sb, const char *s);
void mrc__sb_printf(mrc__strbuf_t *sb, const char *fmt, ...) MRC_PRINTF(2, 3);
/* Appends the shortest decimal form of `v` that reads back to exactly `v`
 * (integral values without a fraction: 32, not 32.0). */
void mrc__sb_double(mrc__strbuf_t *sb, double v);

/* Escapers (escape.c), one per language a name may reach. Each takes any
 * bytes: a byte that is not part of valid UTF-8 becomes U+FFFD. */

/* `s` as a JSON string literal, quotes included: " and \ escaped, control
 * characters as \u00XX. */
void mrc__sb_json_string(mrc__strbuf_t *sb, const char *s);
/* `s` as a double-quoted Graphviz DOT string, quotes included: " and \
 * escaped (so no label escape such as \N comes from input), & as &amp;
 * (Graphviz decodes entities in strings), a newline as a label line break,
 * other control characters as U+FFFD. */
void mrc__sb_dot_string(mrc__strbuf_t *sb, const char *s);
/* `s` as XML character data or attribute text, no quotes added: & < > " '
 * as references, control characters that XML 1.0 cannot hold as U+FFFD. */
void mrc__sb_xml_text(mrc__strbuf_t *sb, const char *s);
/* `s` as a single-quoted gnuplot string, quotes included: ' doubled, every
 * control character (newline included) as a space. */
void mrc__sb_gnuplot_string(mrc__strbuf_t *sb, const char *s);
/* `s` as a malloc'd JSON string literal (free()); NULL if out of memory. */
char *mrc__json_quote(const char *s);
/* 1 if `s` is valid UTF-8 (RFC 3629), 0 otherwise. */
int mrc__utf8_valid(const char *s);
/* 1 if `s` holds an ASCII control character (below 0x20, or DEL). */
int mrc__has_control(const char *s);

/* Hands the buffer's string to the caller (who frees it with free());
 * returns NULL and frees everything if an allocation failed. */
char *mrc__sb_take(mrc__strbuf_t *sb);

/* Parses a whole decimal integer in [min, max]; 0 on success, -1 otherwise.
 * No sign-less wrap, no trailing characters, no empty string. */
int mrc__parse_long(const char *s, long min, long max, long *out);

/* Parses a whole finite decimal number; 0 on success, -1 otherwise. */
int mrc__parse_double(const char *s, double *out);

/* Parses a size with an optional binary suffix K, M, G or T (also KiB, MiB,
 * ...; "64M" = 64 * 2^20); 0 on success, -1 on bad text or overflow. */
int mrc__parse_size(const char *s, uint64_t *out);

/* Reads a whole regular file into a NUL-terminated malloc'd buffer, of at
 * most `max_bytes` (0: mrc__file_limit()). A FIFO, a device or a directory
 * is refused without waiting on it, and a file over the cap before any of
 * it is read. Reports the file name and the system error on failure. */
mrc_status_t mrc__read_file(const char *path, size_t max_bytes, char **out,
                            size_t *len);

/* An output file written whole or not at all (outfile.c): a regular
 * target is replaced by rename from a temporary with a random name made
 * beside it with O_EXCL; a symbolic link is replaced, never followed
 * (/dev/stdout, /dev/stderr and /dev/fd/N are written through their
 * descriptor); a character device or FIFO is written through; a directory
 * or block device is refused. Errors name the path. */
typedef struct mrc__outfile {
    int fd;     /* where to write: the temporary, or the target itself */
    char *tmp;  /* the temporary's name; NULL when writing through */
    char *path; /* the target, as given */
} mrc__outfile_t;

mrc_status_t mrc__outfile_open(mrc__outfile_t *of, const char *path);
mrc_status_t mrc__outfile_write(mrc__outfile_t *of, const void *data,
                                size_t len);
/* Closes and renames the temporary into place; on failure (and always, for
 * mrc__outfile_abort) removes the temporary and leaves the target as it
 * was. Either way `of` is released. */
mrc_status_t mrc__outfile_commit(mrc__outfile_t *of);
void mrc__outfile_abort(mrc__outfile_t *of);
/* Writes `len` bytes to `path` through an outfile. */
mrc_status_t mrc__write_file(const char *path, const void *data, size_t len);
/* Checked size arithmetic: 0 and the result in *out, or -1 (and *out
 * untouched) when it does not fit. Every product of a count, a chunk, an
 * element size or a tile count goes through these. */
static inline int mrc__mul_size(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return -1;
    *out = r;
    return 0;
}

static inline int mrc__add_size(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_add_overflow(a, b, &r))
        return -1;
    *out = r;
    return 0;
}

static inline int mrc__mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return -1;
    *out = r;
    return 0;
}

/* A 64-bit mixer (splitmix64's finaliser): hashing, the checker's
 * per-rank signatures, the fabric's generator, shm's chain of calls. */
static inline uint64_t mrc__mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* a * b + c, saturated at UINT64_MAX: for memory estimates, where a sum
 * past 2^64 only has to compare as "too much". */
static inline uint64_t mrc__sat_mul_add(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r) || __builtin_add_overflow(r, c, &r))
        return UINT64_MAX;
    return r;
}

/* The cores online on this host (the whole host's, not this process's
 * affinity: mpirun binds each rank to one core); -1 if the system does
 * not say. */
int mrc__online_cores(void);

/* The memory a single request (a schedule, a simulation, a run's buffers)
 * may take: set by mrc__set_memory_limit (the CLI's --max-memory), else
 * by MRC_MAX_MEMORY (a size, such as 64G), else half of physical memory. */
uint64_t mrc__memory_limit(void);
/* 0 restores the default. */
void mrc__set_memory_limit(uint64_t bytes);
/* 1 if the limit was set (by the caller or MRC_MAX_MEMORY), 0 if it is
 * the default. */
int mrc__memory_limit_is_set(void);

/* An error naming MRC_MAX_MEMORY where it is set (not empty) but not a
 * size above 0 and the caller set no limit of its own (the user who set
 * it expects it to hold); MRC_OK otherwise. mrc__check_memory and
 * mrc__read_file check it first; the CLI and a communicator's creation
 * up front. */
mrc_status_t mrc__check_memory_env(void);

/* MRC_OK if `need` bytes of `what` fit in the limit; otherwise
 * MRC_ERR_INVALID_ARG with "needs 10240 GiB of schedule tables; the limit
 * is 19 GiB (--max-memory or MRC_MAX_MEMORY)". */
mrc_status_t mrc__check_memory(uint64_t need, const char *what);

/* The largest input file a parser reads: 64 MiB by default (a JSON tree
 * takes about 20 times its text), or 1/32 of a limit set explicitly. */
size_t mrc__file_limit(void);

/* A parsed JSON tree takes up to this many bytes per byte of its text
 * (jansson: about 20 measured on topology files; the rest is margin). */
#define MRC_JSON_BYTES_PER_TEXT_BYTE 32

/* MRC_OK if the tree of `len` bytes of JSON text fits in the memory
 * limit; otherwise an error naming `where` and the figure. */
mrc_status_t mrc__check_json_text(size_t len, const char *where);

/* The first key of a JSON object (jansson's json_t) that is not in
 * `known` (NULL-terminated), or NULL if it has none. */
struct json_t;
const char *mrc__json_unknown_key(struct json_t *obj, const char *const *known);
/* MRC_OK, or MRC_ERR_PARSE naming the entry, the first unknown key (as
 * `noun`: "key", "field") and the known ones. */
mrc_status_t mrc__json_known_keys(struct json_t *obj, const char *const *known,
                                  const char *entry, const char *noun);
/* The names of a NULL-terminated list as "a, b, c" in buf (cut to
 * size); returns buf. */
const char *mrc__names_joined(const char *const *names, char *buf, size_t size);

/* Writes `bytes` for people: "512 B", "64 MiB", "10240 GiB", "1.5 TiB"
 * (one decimal below 10 units); returns `buf`. */
const char *mrc__format_bytes(uint64_t bytes, char *buf, size_t size);

/* Makes room for at least `need` elements of `size` bytes in *array,
 * doubling its capacity *cap (from 16); 0 on success, -1 (array
 * untouched) when out of memory. */
int mrc__grow(void **array, int *cap, int need, size_t size);

/* Duplicates a string; NULL on allocation failure (or NULL input). */
char *mrc__strdup(const char *s);

/* Writes 128 random bits as 32 hex digits and a NUL (size >= 33); 0 on
 * success, -1 (errno set) if the kernel gave no random bytes. */
int mrc__random_job_id(char *out, size_t size);

/* Whether [a, a + an) and [b, b + bn) share a byte (none for a NULL or
 * empty range). */
static inline int mrc__overlap(const void *a, size_t an, const void *b,
                               size_t bn)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return a && b && an && bn && x < y + bn && y < x + an;
}

/* A node's share of a group of n's copies: per_node bytes times n up to
 * cap, and no more than 32 MiB over the group; whole pages. */
static inline size_t mrc__stage_bytes(int n, size_t per_node, size_t cap)
{
    size_t nn = n > 0 ? (size_t)n : 1;
    size_t m = ((size_t)32 << 20) / nn;
    size_t most = per_node > cap / nn ? cap : nn * per_node;
    m = m > most ? most : m;
    return m & ~(size_t)4095;
}

/* The most bytes a node of a group of n exposes by copy (the direct
 * families' window; the shared-memory transport sizes its segment by it):
 * 4 MiB a node up to 8 MiB, less past 4 nodes (1 MiB at 32). A send
 * buffer that fits goes into its owner's area too (shm). Past 1 MiB the
 * copies go in pieces below glibc's switch to a vector loop (mrc__copy):
 * with that, the window of 8 MiB took direct1's allgather, broadcast and
 * reduce-scatter of 2-8 MiB under Open MPI and the rings where the 2 MiB
 * window had sent them by reference (docs/performance.md, "The window to
 * 8 MiB"). */
static inline size_t mrc__stage_max(int n)
{
    return mrc__stage_bytes(n, (size_t)4 << 20, (size_t)8 << 20);
}

/* The most bytes a node of a group of n exposes by copy for a reduction
 * to all or one (allreduce, reduce; direct1 and direct2; and every
 * collective of hier, whose leaders reduce): 512 KiB
 * a node up to 2 MiB (1 MiB for 2 nodes), less past 16 nodes. Past it
 * the rings, through the slots, beat direct2's copies into a window
 * beyond the core's cache (allreduce of 2 and 4 MiB at 2 ranks: 226 and
 * 463 us against 293 and 572), and the selector's weights, which price
 * both at the same bytes, could not tell them apart. */
static inline size_t mrc__stage_reduce_max(int n)
{
    return mrc__stage_bytes(n, (size_t)512 << 10, (size_t)2 << 20);
}

/* MRC_DEBUG (NCCL_DEBUG's habit): WARN, INFO or TRACE; unset or NONE is
 * silent, any other word is WARN. Read once, on first use, from any
 * thread. */
typedef enum mrc__log_level {
    MRC__LOG_NONE,
    MRC__LOG_WARN,
    MRC__LOG_INFO, /* communicator creation, the first call of a shape */
    MRC__LOG_TRACE /* every call */
} mrc__log_level_t;

/* The level, read on first use. Looked at on every call of every
 * collective (TRACE names its program): once it is known, one load in
 * the caller (mrc__log_known: the level + 1; 0 while not yet read). */
extern int mrc__log_known;
mrc__log_level_t mrc__log_level_read(void);
static inline mrc__log_level_t mrc__log_level(void)
{
    int v = __atomic_load_n(&mrc__log_known, __ATOMIC_ACQUIRE);
    return v ? (mrc__log_level_t)(v - 1) : mrc__log_level_read();
}
/* The level a value of MRC_DEBUG names (for tests). */
mrc__log_level_t mrc__log_parse_level(const char *value);
/* Writes "mrc: rank R: <message>\n" to stderr in one write call (rank < 0:
 * "mrc: <message>") if `level` is enabled. */
void mrc__log(mrc__log_level_t level, int rank, const char *fmt, ...)
    MRC_PRINTF(3, 4);
/* mrc__log at TRACE; callers test mrc__log_level() first, so that a run
 * without MRC_DEBUG formats nothing. */
void mrc__trace(int rank, const char *fmt, ...) MRC_PRINTF(2, 3);

#endif /* MRC_COMMON_H */
