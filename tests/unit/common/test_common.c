/* Status codes, the per-thread last error, and the shared parsers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
#define CHECK_(name, value, msg)                                               \
    if ((value) != 0 && (value) != 1)                                          \
        assert_true((value) < 0);                                              \
    assert_string_equal(mrc_status_string(MRC_##name), msg);                   \
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
    const double values[] = {
        0,       32,     -7,         0.1, 1.0 / 3,
        6.02e23, 1e-300, 123456.789, 2.5, 9007199254740993.0};
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
    assert_int_equal(mrc__parse_long("99999999999999999999", 0, 100, &v), -1);
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

static void test_checked_arithmetic(void **state)
{
    (void)state;
    size_t z = 7;
    uint64_t u = 7;
    assert_int_equal(mrc__mul_size(3, 5, &z), 0);
    assert_true(z == 15);
    assert_int_equal(mrc__mul_size(SIZE_MAX / 2 + 1, 2, &z), -1);
    assert_true(z == 15); /* untouched on overflow */
    /* The run that crashed: 2^62 elements of 4 bytes. */
    assert_int_equal(mrc__mul_size((size_t)1 << 62, 4, &z), -1);
    assert_int_equal(mrc__mul_size(0, SIZE_MAX, &z), 0);
    assert_true(z == 0);
    assert_int_equal(mrc__add_size(SIZE_MAX - 1, 1, &z), 0);
    assert_true(z == SIZE_MAX);
    assert_int_equal(mrc__add_size(SIZE_MAX, 1, &z), -1);
    assert_int_equal(mrc__mul_u64(UINT64_C(1) << 32, UINT64_C(1) << 31, &u), 0);
    assert_true(u == UINT64_C(1) << 63);
    assert_int_equal(mrc__mul_u64(UINT64_C(1) << 32, UINT64_C(1) << 32, &u),
                     -1);
    assert_true(mrc__sat_mul_add(3, 4, 5) == 17);
    assert_true(mrc__sat_mul_add(UINT64_MAX, 2, 0) == UINT64_MAX);
    assert_true(mrc__sat_mul_add(UINT64_MAX, 1, 1) == UINT64_MAX);
}

static void test_format_bytes(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(mrc__format_bytes(512, b, sizeof b), "512 bytes");
    assert_string_equal(mrc__format_bytes(1536, b, sizeof b), "1.5 KiB");
    assert_string_equal(mrc__format_bytes(64ull << 20, b, sizeof b), "64 MiB");
    assert_string_equal(mrc__format_bytes(10240ull << 30, b, sizeof b),
                        "10240 GiB");
    assert_string_equal(mrc__format_bytes(UINT64_MAX, b, sizeof b),
                        "17179869184 GiB");
}

static void test_memory_limit(void **state)
{
    (void)state;
    unsetenv("MRC_MAX_MEMORY");
    mrc__set_memory_limit(0);
    assert_false(mrc__memory_limit_is_set());
    assert_true(mrc__memory_limit() > 0);
    assert_true(mrc__file_limit() == (size_t)64 << 20);
    mrc__set_memory_limit(1ull << 30);
    assert_true(mrc__memory_limit_is_set());
    assert_true(mrc__memory_limit() == 1ull << 30);
    assert_true(mrc__file_limit() == (size_t)32 << 20);
    assert_int_equal(mrc__check_memory(1ull << 30, "tables"), MRC_OK);
    assert_int_equal(mrc__check_memory((1ull << 30) + 1, "tables"),
                     MRC_ERR_INVALID_ARG);
    assert_int_equal(mrc__check_memory(10240ull << 30, "schedule tables"),
                     MRC_ERR_INVALID_ARG);
    assert_string_equal(mrc_last_error(),
                        "needs 10240 GiB of schedule tables; the limit is "
                        "1.0 GiB (raise it with --max-memory or "
                        "MRC_MAX_MEMORY)");
    mrc__set_memory_limit(0);
    setenv("MRC_MAX_MEMORY", "2G", 1);
    assert_true(mrc__memory_limit() == 2ull << 30);
    setenv("MRC_MAX_MEMORY", "lots", 1); /* a typo does not lift it */
    assert_false(mrc__memory_limit_is_set());
    /* and the request it would have bounded is refused, naming it */
    assert_int_equal(mrc__check_memory(1, "tables"), MRC_ERR_INVALID_ARG);
    assert_string_equal(mrc_last_error(),
                        "$MRC_MAX_MEMORY 'lots' is not a size in bytes above "
                        "0 (e.g. 64G)");
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(mrc__read_file("/dev/null", 0, &text, &len),
                     MRC_ERR_INVALID_ARG);
    assert_null(text);
    mrc__set_memory_limit(1ull << 30); /* the caller's limit comes first */
    assert_int_equal(mrc__check_memory(1, "tables"), MRC_OK);
    mrc__set_memory_limit(0);
    setenv("MRC_MAX_MEMORY", "", 1); /* empty is unset */
    assert_int_equal(mrc__check_memory(1, "tables"), MRC_OK);
    unsetenv("MRC_MAX_MEMORY");
}

/* Files that are not regular are refused without waiting on them, and a
 * file over the cap before it is read. */
static void test_read_file_refuses(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    char dir[512], path[600];
    char *data = NULL;
    size_t len = 0;
    snprintf(dir, sizeof dir, "%s/mrc-test-XXXXXX", tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(mrc__read_file(path, 0, &data, &len), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "fifo is not a regular file"));
    unlink(path);
    assert_int_equal(mrc__read_file(dir, 0, &data, &len), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "is not a regular file"));
    assert_int_equal(mrc__read_file("/dev/zero", 0, &data, &len),
                     MRC_ERR_INVALID_ARG);
    assert_string_equal(mrc_last_error(), "/dev/zero is not a regular file");
    snprintf(path, sizeof path, "%s/big", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("0123456789", f);
    fclose(f);
    assert_int_equal(mrc__read_file(path, 9, &data, &len), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "big is 10 bytes, larger than "
                                             "the 9 bytes limit"));
    assert_null(data);
    assert_int_equal(mrc__read_file(path, 10, &data, &len), MRC_OK);
    assert_true(len == 10);
    assert_string_equal(data, "0123456789");
    free(data);
    unlink(path);
    rmdir(dir);
}

static void test_version(void **state)
{
    (void)state;
    assert_string_equal(mrc_version(), MRC_VERSION_STRING);
}

/* The sizes a binding checks its mirrors against: each the struct's, by
 * the name its header spells; 0 for another name or none. */
static void test_struct_size(void **state)
{
    (void)state;
    assert_int_equal(mrc_struct_size("mrc_profile_t"), sizeof(mrc_profile_t));
    assert_int_equal(mrc_struct_size("mrc_config_t"), sizeof(mrc_config_t));
    assert_int_equal(mrc_struct_size("mrc_sim_config_t"),
                     sizeof(mrc_sim_config_t));
    assert_int_equal(mrc_struct_size("mrc_link_t"), sizeof(mrc_link_t));
    assert_int_equal(mrc_struct_size("mrc_profile"), 0);
    assert_int_equal(mrc_struct_size(""), 0);
    assert_int_equal(mrc_struct_size(NULL), 0);
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
        cmocka_unit_test(test_checked_arithmetic),
        cmocka_unit_test(test_format_bytes),
        cmocka_unit_test(test_memory_limit),
        cmocka_unit_test(test_read_file_refuses),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_struct_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
