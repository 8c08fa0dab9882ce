/* Status strings (generated from the one X-macro list) and the per-thread
 * last-error message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { MRC_ERROR_MAX = 1024 };

static _Thread_local char last_error[MRC_ERROR_MAX];

const char *mrc_status_string(mrc_status_t status)
{
    switch (status) {
#define MRC_STATUS_STRING_(name, value, msg)                                   \
    case MRC_##name: return msg;
        MRC_STATUS_MAP(MRC_STATUS_STRING_)
#undef MRC_STATUS_STRING_
    }
    return "unknown status";
}

const char *mrc_status_name(mrc_status_t status)
{
    switch (status) {
#define MRC_STATUS_NAME_(name, value, msg)                                     \
    case MRC_##name: return "MRC_" #name;
        MRC_STATUS_MAP(MRC_STATUS_NAME_)
#undef MRC_STATUS_NAME_
    }
    return "MRC_UNKNOWN";
}

const char *mrc_last_error(void)
{
    return last_error;
}

void mrc_free(void *ptr)
{
    free(ptr);
}

mrc_status_t mrc__error(mrc_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

void mrc__error_prefix(const char *fmt, ...)
{
    char old[MRC_ERROR_MAX];
    va_list ap;

    memcpy(old, last_error, sizeof old);
    va_start(ap, fmt);
    int n = vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    /* Append ": " and the old message, cut at the end of the buffer. */
    size_t used = n < 0 ? 0 : (size_t)n;
    if (used > sizeof last_error - 1)
        used = sizeof last_error - 1;
    const char *parts[2] = {": ", old};
    for (int i = 0; i < 2; i++) {
        size_t len = strlen(parts[i]);
        size_t room = sizeof last_error - 1 - used;
        len = len < room ? len : room;
        memcpy(last_error + used, parts[i], len);
        used += len;
    }
    last_error[used] = '\0';
}
