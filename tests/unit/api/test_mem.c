/*
 * mrc_mem_alloc and mrc_mem_free: shared regions as a process sees them
 * (the peers' side is tests/integration/test_shm.sh, sweep-shared).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mrc/mrc.h"

/* Page-aligned, writable, of the size asked for (and more regions than
 * the table publishes: the later ones are memory too). */
static void test_alloc_write_free(void **state)
{
    (void)state;
    enum { N = 40 };
    void *p[N];
    long page = sysconf(_SC_PAGESIZE);
    for (int i = 0; i < N; i++) {
        size_t bytes = 1 + (size_t)i * 1000;
        assert_int_equal(mrc_mem_alloc(bytes, &p[i]), MRC_OK);
        assert_non_null(p[i]);
        assert_int_equal((uintptr_t)p[i] % (uintptr_t)page, 0);
        memset(p[i], i, bytes);
    }
    for (int i = 0; i < N; i++) {
        size_t bytes = 1 + (size_t)i * 1000;
        assert_int_equal(((unsigned char *)p[i])[bytes - 1], i);
        assert_int_equal(mrc_mem_free(p[i]), MRC_OK);
    }
    /* A freed slot is taken again. */
    void *q = NULL;
    assert_int_equal(mrc_mem_alloc(100, &q), MRC_OK);
    assert_int_equal(mrc_mem_free(q), MRC_OK);
}

static void test_bad_calls(void **state)
{
    (void)state;
    void *p = (void *)1;
    assert_int_equal(mrc_mem_alloc(0, &p), MRC_ERR_INVALID_ARG);
    assert_null(p);
    assert_non_null(strstr(mrc_last_error(), "0 bytes is not a size"));
    assert_int_equal(mrc_mem_alloc(16, NULL), MRC_ERR_INVALID_ARG);
    assert_int_equal(mrc_mem_alloc(SIZE_MAX, &p), MRC_ERR_INVALID_ARG);
    assert_int_equal(mrc_mem_free(NULL), MRC_OK);
    /* Not its memory, or freed twice: refused, named. */
    char *m = malloc(64);
    assert_int_equal(mrc_mem_free(m), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "is not memory mrc_mem_alloc"));
    free(m);
    assert_int_equal(mrc_mem_alloc(4096, &p), MRC_OK);
    assert_int_equal(mrc_mem_free((char *)p + 8), MRC_ERR_INVALID_ARG);
    assert_int_equal(mrc_mem_free(p), MRC_OK);
    assert_int_equal(mrc_mem_free(p), MRC_ERR_INVALID_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_write_free),
        cmocka_unit_test(test_bad_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
