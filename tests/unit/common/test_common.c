/* Status codes, the per-thread last error, and the shared parsers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "mrc/mrc.h"

static void test_status_strings(void **state)
{
    (void)state;
    assert_int_equal(MRC_OK, 0);
    assert_string_equal(mrc_status_string(MRC_OK), "success");
    assert_string_equal(mrc_status_name(MRC_ERR_INVALID_TOPOLOGY),
                        "MRC_ERR_INVALID_TOPOLOGY");
    assert_string_equal(mrc_status_string(MRC_ERR_TIMEOUT), "timed out");
    assert_string_equal(mrc_status_string((mrc_status_t)-999),
                        "unknown status");
    assert_string_equal(mrc_status_name((mrc_status_t)42), "MRC_UNKNOWN");
    /* Every error is negative and has its own string. */
#define CHECK_(name, value, msg)                                             \
    if ((value) != 0 && (value) != 1)                                        \
        assert_true((value) < 0);                                            \
    assert_string_equal(mrc_status_string(MRC_##name), msg);                 \
    assert_string_equal(mrc_status_name(MRC_##name), "MRC_" #name);
    MRC_STATUS_MAP(CHECK_)
#undef CHECK_
}

static void *other_thread(void *arg)
{
    const char **seen = arg;
    *seen = mrc__strdup(mrc_last_error());
    mrc__error(MRC_ERR_IO, "from the other thread");
    return NULL;
}

static void test_last_error_is_per_thread(void **state)
{
    (void)state;
    assert_int_equal(mrc__error(MRC_ERR_PARSE, "line %d: bad", 7),
                     MRC_ERR_PARSE);
    assert_string_equal(mrc_last_error(), "line 7: bad");
    const char *seen = NULL;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, other_thread, &seen), 0);
    pthread_join(t, NULL);
    assert_string_equal(seen, "");
    free((void *)seen);
    assert_string_equal(mrc_last_error(), "line 7: bad");
    mrc__error_prefix("%s", "topo.json");
    assert_string_equal(mrc_last_error(), "topo.json: line 7: bad");
}

static void test_error_prefix_truncates(void **state)
{
    (void)state;
    char longmsg[3000];
    memset(longmsg, 'x', sizeof longmsg - 1);
    longmsg[sizeof longmsg - 1] = '\0';
    mrc__error(MRC_ERR_PARSE, "%s", longmsg);
    mrc__error_prefix("%s", longmsg);
    assert_true(strlen(mrc_last_error()) < 1024);
}

static void test_strbuf_double_round_trips(void **state)
{
    (void)state;
    const double values[] = {0, 32, -7, 0.1, 1.0 / 3, 6.02e23, 1e-300,
                             123456.789, 2.5, 9007199254740993.0};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        mrc__strbuf_t sb;
        mrc__sb_init(&sb);
        mrc__sb_double(&sb, values[i]);
        char *s = mrc__sb_take(&sb);
        assert_non_null(s);
        assert_true(strtod(s, NULL) == values[i]);
        free(s);
    }
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    mrc__sb_double(&sb, 32);
    mrc__sb_puts(&sb, " ");
    mrc__sb_double(&sb, 0.1);
    mrc__sb_puts(&sb, " ");
    mrc__sb_double(&sb, -0.0);
    char *s = mrc__sb_take(&sb);
    assert_string_equal(s, "32 0.1 0");
    free(s);
}

static void test_strbuf_json_string(void **state)
{
    (void)state;
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    mrc__sb_json_string(&sb, "a\"b\\c\n\x01");
    char *s = mrc__sb_take(&sb);
    assert_string_equal(s, "\"a\\\"b\\\\c\\u000a\\u0001\"");
    free(s);
    mrc__sb_init(&sb);
    s = mrc__sb_take(&sb); /* an empty buffer gives "" */
    assert_string_equal(s, "");
    free(s);
}

static void test_parse_long(void **state)
{
    (void)state;
    long v = 0;
    assert_int_equal(mrc__parse_long("42", 0, 100, &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(mrc__parse_long("-3", -5, 5, &v), 0);
    assert_int_equal(v, -3);
    assert_int_equal(mrc__parse_long("", 0, 100, &v), -1);
    assert_int_equal(mrc__parse_long("4x", 0, 100, &v), -1);
    assert_int_equal(mrc__parse_long("101", 0, 100, &v), -1);
    assert_int_equal(mrc__parse_long("99999999999999999999", 0, 100, &v),
                     -1);
    assert_int_equal(mrc__parse_long(NULL, 0, 100, &v), -1);
}

static void test_parse_size(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_int_equal(mrc__parse_size("64M", &v), 0);
    assert_true(v == 64ull << 20);
    assert_int_equal(mrc__parse_size("1K", &v), 0);
    assert_true(v == 1024);
    assert_int_equal(mrc__parse_size("2GiB", &v), 0);
    assert_true(v == 2ull << 30);
    assert_int_equal(mrc__parse_size("17", &v), 0);
    assert_true(v == 17);
    assert_int_equal(mrc__parse_size("0", &v), 0);
    assert_true(v == 0);
    assert_int_equal(mrc__parse_size("-1", &v), -1);
    assert_int_equal(mrc__parse_size("5Q", &v), -1);
    assert_int_equal(mrc__parse_size("M", &v), -1);
    assert_int_equal(mrc__parse_size("99999999999T", &v), -1);
    assert_int_equal(mrc__parse_size("4Mx", &v), -1);
}

static void test_parse_double(void **state)
{
    (void)state;
    double v = 0;
    assert_int_equal(mrc__parse_double("2.5", &v), 0);
    assert_true(v == 2.5);
    assert_int_equal(mrc__parse_double("nan", &v), -1);
    assert_int_equal(mrc__parse_double("inf", &v), -1);
    assert_int_equal(mrc__parse_double("1e999", &v), -1);
    assert_int_equal(mrc__parse_double("3GB", &v), -1);
}

static void test_version(void **state)
{
    (void)state;
    assert_string_equal(mrc_version(), MRC_VERSION_STRING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_strings),
        cmocka_unit_test(test_last_error_is_per_thread),
        cmocka_unit_test(test_error_prefix_truncates),
        cmocka_unit_test(test_strbuf_double_round_trips),
        cmocka_unit_test(test_strbuf_json_string),
        cmocka_unit_test(test_parse_long),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_parse_double),
        cmocka_unit_test(test_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
