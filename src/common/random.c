/* Job ids: 128 bits from the kernel's random source, as 32 hex digits. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sys/random.h>

#include "common/common.h"

int mrc__random_job_id(char *out, size_t size)
{
    unsigned char b[16];
    size_t got = 0;
    if (size < 2 * sizeof b + 1)
        return -1;
    while (got < sizeof b) {
        ssize_t r = getrandom(b + got, sizeof b - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    for (size_t i = 0; i < sizeof b; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    return 0;
}
