/* A growable string buffer and the number/size parsers used by the readers
 * of specs, files and command lines. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

void mrc__sb_init(mrc__strbuf_t *sb)
{
    memset(sb, 0, sizeof *sb);
}

void mrc__sb_free(mrc__strbuf_t *sb)
{
    free(sb->data);
    mrc__sb_init(sb);
}

static int sb_reserve(mrc__strbuf_t *sb, size_t extra)
{
    if (sb->failed)
        return -1;
    if (sb->len + extra + 1 <= sb->cap)
        return 0;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            sb->failed = 1;
            return -1;
        }
        cap *= 2;
    }
    char *p = realloc(sb->data, cap);
    if (!p) {
        sb->failed = 1;
        return -1;
    }
    sb->data = p;
    sb->cap = cap;
    return 0;
}

void mrc__sb_append(mrc__strbuf_t *sb, const char *s, size_t n)
{
    if (sb_reserve(sb, n) != 0)
        return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void mrc__sb_puts(mrc__strbuf_t *sb, const char *s)
{
    mrc__sb_append(sb, s, strlen(s));
}

void mrc__sb_printf(mrc__strbuf_t *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || sb_reserve(sb, (size_t)n) != 0) {
        sb->failed = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

void mrc__sb_double(mrc__strbuf_t *sb, double v)
{
    char buf[40];
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(buf, sizeof buf, "%.0f", v);
        if (strcmp(buf, "-0") == 0)
            strcpy(buf, "0");
    } else {
        /* The shortest %g form that reads back to the same double. */
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, v);
            if (strtod(buf, NULL) == v)
                break;
        }
    }
    mrc__sb_puts(sb, buf);
}

char *mrc__sb_take(mrc__strbuf_t *sb)
{
    if (sb_reserve(sb, 0) != 0) {
        mrc__sb_free(sb);
        return NULL;
    }
    char *s = sb->data;
    s[sb->len] = '\0';
    mrc__sb_init(sb);
    return s;
}

int mrc__parse_long(const char *s, long min, long max, long *out)
{
    if (!s || !*s)
        return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int mrc__parse_double(const char *s, double *out)
{
    if (!s || !*s)
        return -1;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int mrc__parse_size(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    case 't':
    case 'T':
        shift = 40;
        end++;
        break;
    default: return -1;
    }
    if (shift && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0))
        end += strlen(end);
    if (*end != '\0')
        return -1;
    if (shift && v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

int mrc__grow(void **array, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return 0;
    long c = *cap > 0 ? *cap : 16;
    while (c < need)
        c *= 2;
    if ((size_t)c > SIZE_MAX / size || c > INT32_MAX)
        return -1;
    void *p = realloc(*array, (size_t)c * size);
    if (!p)
        return -1;
    *array = p;
    *cap = (int)c;
    return 0;
}

char *mrc__strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}
