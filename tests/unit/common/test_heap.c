/* The shared binary heap (common/heap.h): order, its rules for equal
 * elements, elements of any size, and reuse after it empties. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "common/heap.h"

typedef struct item {
    double key;
    int id;
} item_t;

static int item_before(const void *a, const void *b)
{
    return ((const item_t *)a)->key < ((const item_t *)b)->key;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Pushed in a random order, popped in ascending order. */
static void test_sorts(void **state)
{
    (void)state;
    enum { N = 1000 };
    item_t *heap = malloc(N * sizeof *heap);
    double *want = malloc(N * sizeof *want);
    assert_non_null(heap);
    assert_non_null(want);
    uint64_t seed = 12345;
    int n = 0;
    for (int i = 0; i < N; i++) {
        item_t e = {(double)(next_random(&seed) % 500), i};
        want[i] = e.key;
        mrc__heap_push(heap, &n, sizeof e, &e, item_before);
    }
    assert_int_equal(n, N);
    qsort(want, N, sizeof *want, cmp_double);
    for (int i = 0; i < N; i++) {
        item_t top;
        mrc__heap_pop(heap, &n, sizeof top, &top, item_before);
        assert_true(top.key == want[i]);
    }
    assert_int_equal(n, 0);
    free(heap);
    free(want);
}

/* Equal elements: a new one stays below an equal parent, and the last
 * element sinks only past a child strictly before it. Three equal keys
 * pushed as a, b, c come out a, c, b: callers' results (the search's
 * routes, the simulator's event order) rest on these rules. */
static void test_equal_keys(void **state)
{
    (void)state;
    item_t heap[4], top;
    int n = 0;
    for (int id = 0; id < 3; id++) {
        item_t e = {1.0, id};
        mrc__heap_push(heap, &n, sizeof e, &e, item_before);
    }
    int order[3];
    for (int i = 0; i < 3; i++) {
        mrc__heap_pop(heap, &n, sizeof top, &top, item_before);
        order[i] = top.id;
    }
    assert_int_equal(order[0], 0);
    assert_int_equal(order[1], 2);
    assert_int_equal(order[2], 1);
}

/* A larger element ordered by two fields (as the simulator's arrivals:
 * time, then order), pushes and pops interleaved, checked against the
 * smallest of what is left found by a scan. */
typedef struct event {
    double time;
    int32_t src, dst;
    uint64_t order;
    uint64_t tag;
} event_t;

static int event_before(const void *x, const void *y)
{
    const event_t *a = x, *b = y;
    return a->time < b->time || (a->time == b->time && a->order < b->order);
}

static void test_interleaved(void **state)
{
    (void)state;
    enum { N = 600 };
    event_t heap[N], left[N];
    int n = 0, nleft = 0;
    uint64_t seed = 99;
    for (int round = 0; round < 3 * N; round++) {
        int push = nleft == 0 || (nleft < N && next_random(&seed) % 3 != 0);
        if (push) {
            event_t e = {(double)(next_random(&seed) % 40), round, -round,
                         next_random(&seed) % 7, (uint64_t)round};
            mrc__heap_push(heap, &n, sizeof e, &e, event_before);
            left[nleft++] = e;
            continue;
        }
        event_t top;
        mrc__heap_pop(heap, &n, sizeof top, &top, event_before);
        int best = 0;
        for (int i = 1; i < nleft; i++)
            if (event_before(&left[i], &left[best]))
                best = i;
        assert_false(event_before(&left[best], &top));
        assert_false(event_before(&top, &left[best]));
        int found = -1;
        for (int i = 0; i < nleft; i++)
            if (left[i].tag == top.tag)
                found = i;
        assert_true(found >= 0);
        left[found] = left[--nleft];
        assert_int_equal(n, nleft);
    }
}

/* One element in and out, then the heap serves again. */
static void test_single_and_reuse(void **state)
{
    (void)state;
    item_t heap[2], top;
    int n = 0;
    for (int k = 0; k < 3; k++) {
        item_t e = {-(double)k, k};
        mrc__heap_push(heap, &n, sizeof e, &e, item_before);
        mrc__heap_pop(heap, &n, sizeof top, &top, item_before);
        assert_int_equal(n, 0);
        assert_int_equal(top.id, k);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sorts),
        cmocka_unit_test(test_equal_keys),
        cmocka_unit_test(test_interleaved),
        cmocka_unit_test(test_single_and_reuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
