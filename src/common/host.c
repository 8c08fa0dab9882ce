/* What this host offers the ranks that run on it. */
#include <stdatomic.h>
#include <unistd.h>

#include "common.h"

int mrc__online_cores(void)
{
    /* Read once: glibc's answer reads /sys at every call. */
    static _Atomic int cores;
    int c = atomic_load_explicit(&cores, memory_order_relaxed);
    if (c == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        c = n > 0 && n < (1L << 30) ? (int)n : -1;
        atomic_store_explicit(&cores, c, memory_order_relaxed);
    }
    return c;
}
