/*
 * The binary min-heap every module shares (the search's least-cost
 * paths, the fluid step's fair shares, the pipelined walk's arrivals):
 * elements of `size` bytes in the caller's array, which the caller grows
 * (room for one more before a push). Functions in the header, as libuv's
 * heap-inl.h, so that each caller's order and element size are known
 * where it is compiled and the hot loops of the simulator stay direct.
 *
 * Ties: an element moves up past a parent only if it comes strictly
 * before it, and down past a child only if the child comes strictly
 * before it, the smaller child first and the left one of two equal
 * children. Results that depend on the order of equal elements depend on
 * these rules; keep them.
 */
#ifndef MRC_COMMON_HEAP_H
#define MRC_COMMON_HEAP_H

#include <stddef.h>
#include <string.h>

/* Does element a come strictly before element b? */
typedef int (*mrc__heap_before_fn)(const void *a, const void *b);

static inline char *mrc__heap_at(void *base, int i, size_t size)
{
    return (char *)base + (size_t)i * size;
}

/* Adds *e to the heap of *n elements at base. */
static inline void mrc__heap_push(void *base, int *n, size_t size,
                                  const void *e, mrc__heap_before_fn before)
{
    int i = (*n)++;
    while (i > 0 && before(e, mrc__heap_at(base, (i - 1) / 2, size))) {
        memcpy(mrc__heap_at(base, i, size),
               mrc__heap_at(base, (i - 1) / 2, size), size);
        i = (i - 1) / 2;
    }
    memcpy(mrc__heap_at(base, i, size), e, size);
}

/* Takes the first element into *top; the heap must not be empty. The
 * last element sinks from the root; it stays in its slot (now past the
 * end) until it lands, so no scratch copy is needed. */
static inline void mrc__heap_pop(void *base, int *n, size_t size, void *top,
                                 mrc__heap_before_fn before)
{
    memcpy(top, base, size);
    const char *last = mrc__heap_at(base, --(*n), size);
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && before(mrc__heap_at(base, c + 1, size),
                                 mrc__heap_at(base, c, size)))
            c++;
        if (!before(mrc__heap_at(base, c, size), last))
            break;
        memcpy(mrc__heap_at(base, i, size), mrc__heap_at(base, c, size), size);
        i = c;
    }
    if (mrc__heap_at(base, i, size) != last)
        memcpy(mrc__heap_at(base, i, size), last, size);
}

#endif /* MRC_COMMON_HEAP_H */
