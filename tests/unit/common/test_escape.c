/* The escapers (JSON, DOT, XML, gnuplot) and output files that never
 * clobber anything but their target. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "mrc/mrc.h"

typedef void (*escaper_t)(mrc__strbuf_t *, const char *);

static void expect_escaped(escaper_t esc, const char *in, const char *want)
{
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    esc(&sb, in);
    char *got = mrc__sb_take(&sb);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

#define FFFD "\xEF\xBF\xBD"

static void test_json(void **state)
{
    (void)state;
    expect_escaped(mrc__sb_json_string, "", "\"\"");
    expect_escaped(mrc__sb_json_string, "x' ; system('id') ; '",
                   "\"x' ; system('id') ; '\"");
    expect_escaped(mrc__sb_json_string, "\"}\\\n\t\r\x01\x1f\x7f",
                   "\"\\\"}\\\\\\u000a\\u0009\\u000d\\u0001\\u001f"
                   "\\u007f\"");
    /* Valid UTF-8 is kept; each invalid byte becomes U+FFFD. */
    expect_escaped(mrc__sb_json_string,
                   "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80",
                   "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"");
    expect_escaped(mrc__sb_json_string, "a\xFFz", "\"a" FFFD "z\"");
    expect_escaped(mrc__sb_json_string, "\xC0\xAF", "\"" FFFD FFFD "\"");
    expect_escaped(mrc__sb_json_string, "\xED\xA0\x80", /* a surrogate */
                   "\"" FFFD FFFD FFFD "\"");
    expect_escaped(mrc__sb_json_string, "\xF4\x90\x80\x80", /* > U+10FFFF */
                   "\"" FFFD FFFD FFFD FFFD "\"");
    expect_escaped(mrc__sb_json_string, "cut \xE2\x82", /* cut short */
                   "\"cut " FFFD FFFD "\"");
    char *q = mrc__json_quote("a\"b");
    assert_string_equal(q, "\"a\\\"b\"");
    free(q);
}

static void test_dot(void **state)
{
    (void)state;
    expect_escaped(mrc__sb_dot_string, "plain", "\"plain\"");
    expect_escaped(mrc__sb_dot_string, "a\"];\nb", "\"a\\\"];\\nb\"");
    expect_escaped(mrc__sb_dot_string, "\\N \\G", "\"\\\\N \\\\G\"");
    expect_escaped(mrc__sb_dot_string, "<b>&amp;", "\"<b>&amp;amp;\"");
    expect_escaped(mrc__sb_dot_string, "\x01\t\xFF", "\"" FFFD FFFD FFFD "\"");
}

static void test_xml(void **state)
{
    (void)state;
    expect_escaped(mrc__sb_xml_text, "<a href=\"x\">'&'</a>",
                   "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    expect_escaped(mrc__sb_xml_text, "tab\tnl\ncr\r", "tab\tnl\ncr\r");
    expect_escaped(mrc__sb_xml_text, "\x01\x1b\x7f\x80", FFFD FFFD FFFD FFFD);
}

static void test_gnuplot(void **state)
{
    (void)state;
    expect_escaped(mrc__sb_gnuplot_string, "x' ; system('touch m') ; '",
                   "'x'' ; system(''touch m'') ; '''");
    expect_escaped(mrc__sb_gnuplot_string, "a\nsystem('id')\r\x01",
                   "'a system(''id'')  '");
    expect_escaped(mrc__sb_gnuplot_string, "`id` $(id) \"\\",
                   "'`id` $(id) \"\\'");
}

static void test_utf8_and_control(void **state)
{
    (void)state;
    assert_true(mrc__utf8_valid(""));
    assert_true(mrc__utf8_valid("caf\xC3\xA9"));
    assert_false(mrc__utf8_valid("\xC3"));
    assert_false(mrc__utf8_valid("\xE0\x80\x80")); /* overlong */
    assert_false(mrc__has_control("a b"));
    assert_true(mrc__has_control("a\nb"));
    assert_true(mrc__has_control("\x7f"));
}

/* ---- output files ------------------------------------------------------ */

static char dir[400];

static int make_dir(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/mrc-outfile-XXXXXX",
             base && *base ? base : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *in_dir(const char *name)
{
    static char path[4][512];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof path[0], "%s/%s", dir, name);
    return p;
}

static char *slurp(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void test_outfile_new_and_replace(void **state)
{
    (void)state;
    const char *out = in_dir("out");
    assert_int_equal(mrc__write_file(out, "one", 3), MRC_OK);
    assert_string_equal(slurp(out), "one");
    assert_int_equal(mrc__write_file(out, "two!", 4), MRC_OK);
    assert_string_equal(slurp(out), "two!");
    assert_int_equal(entries(), 1); /* no temporary left */
    /* The mode is 0666 less the umask, as for any created file. */
    mode_t mask = umask(022);
    umask(mask);
    struct stat st;
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0666 & ~mask);
}

static void test_outfile_symlink_replaced(void **state)
{
    (void)state;
    const char *victim = in_dir("victim"), *link = in_dir("link");
    spit(victim, "precious");
    assert_int_equal(symlink(victim, link), 0);
    assert_int_equal(mrc__write_file(link, "new", 3), MRC_OK);
    assert_string_equal(slurp(victim), "precious");
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_string_equal(slurp(link), "new");
}

static void test_outfile_directory_refused(void **state)
{
    (void)state;
    assert_int_equal(mrc__write_file(dir, "x", 1), MRC_ERR_IO);
    assert_non_null(strstr(mrc_last_error(), dir));
    assert_non_null(strstr(mrc_last_error(), "is a directory"));
    assert_int_equal(entries(), 0);
}

static void test_outfile_missing_dir(void **state)
{
    (void)state;
    const char *out = in_dir("nowhere/out");
    assert_int_equal(mrc__write_file(out, "x", 1), MRC_ERR_IO);
    assert_non_null(strstr(mrc_last_error(), out));
    /* A parent that is a file, not a folder. */
    spit(in_dir("file"), "keep");
    assert_int_equal(mrc__write_file(in_dir("file/out"), "x", 1), MRC_ERR_IO);
    assert_string_equal(slurp(in_dir("file")), "keep");
    assert_int_equal(entries(), 1);
}

static void test_outfile_abort_leaves_target(void **state)
{
    (void)state;
    const char *out = in_dir("out");
    spit(out, "old");
    mrc__outfile_t of;
    assert_int_equal(mrc__outfile_open(&of, out), MRC_OK);
    assert_non_null(of.tmp);
    assert_int_equal(mrc__outfile_write(&of, "partial", 7), MRC_OK);
    assert_int_equal(entries(), 2); /* the target and the temporary */
    mrc__outfile_abort(&of);
    assert_string_equal(slurp(out), "old");
    assert_int_equal(entries(), 1);
}

static void test_outfile_fifo_written_through(void **state)
{
    (void)state;
    const char *fifo = in_dir("fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    /* A reader first, so that opening the FIFO for writing cannot block. */
    int rd = open(fifo, O_RDONLY | O_NONBLOCK);
    assert_true(rd >= 0);
    assert_int_equal(mrc__write_file(fifo, "through", 7), MRC_OK);
    char buf[16] = {0};
    assert_int_equal(read(rd, buf, sizeof buf), 7);
    assert_string_equal(buf, "through");
    close(rd);
    struct stat st;
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(entries(), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_dot),
        cmocka_unit_test(test_xml),
        cmocka_unit_test(test_gnuplot),
        cmocka_unit_test(test_utf8_and_control),
        cmocka_unit_test_setup_teardown(test_outfile_new_and_replace, make_dir,
                                        remove_dir),
        cmocka_unit_test_setup_teardown(test_outfile_symlink_replaced, make_dir,
                                        remove_dir),
        cmocka_unit_test_setup_teardown(test_outfile_directory_refused,
                                        make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_outfile_missing_dir, make_dir,
                                        remove_dir),
        cmocka_unit_test_setup_teardown(test_outfile_abort_leaves_target,
                                        make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_outfile_fifo_written_through,
                                        make_dir, remove_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
