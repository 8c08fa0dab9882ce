/*
 * Thousands of randomly mutated topology files and spec strings: each must
 * give either a clear error or a valid topology that round-trips, never a
 * crash (this suite also runs under ASan and UBSan). The generator is
 * seeded, so a failure reproduces; MRC_FUZZ_ITERS scales the run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrc/mrc.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t next_random(void)
{
    uint64_t x = rng_state; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1dull;
}

static size_t below(size_t n)
{
    return n ? (size_t)(next_random() % n) : 0;
}

static int iterations(int dflt)
{
    const char *env = getenv("MRC_FUZZ_ITERS");
    int n = env ? atoi(env) : 0;
    return n > 0 ? n : dflt;
}

typedef struct {
    char *data;
    size_t len, cap;
} buf_t;

static void buf_reserve(buf_t *b, size_t len)
{
    if (len + 1 > b->cap) {
        b->cap = 2 * (len + 1);
        b->data = realloc(b->data, b->cap);
        assert_non_null(b->data);
    }
}

static void buf_set(buf_t *b, const char *s, size_t n)
{
    buf_reserve(b, n);
    memcpy(b->data, s, n);
    b->len = n;
    b->data[n] = '\0';
}

static void buf_splice(buf_t *b, size_t at, size_t del, const char *ins,
                       size_t n)
{
    buf_reserve(b, b->len - del + n);
    memmove(b->data + at + n, b->data + at + del, b->len - at - del);
    memcpy(b->data + at, ins, n);
    b->len = b->len - del + n;
    b->data[b->len] = '\0';
}

static const char *const tokens[] = {
    "-1",   "0",       "1",     "4097",  "1e308",     "99999999999999999999",
    "0.5",  "1048577", "2",     "\"x\"", "null",      "[]",
    "{}",   "true",    "\"a\"", "\"b\"", "\"count\"", "\"id\"",
    "1024", "-0",      "7",     ",",     "}",         "]"};

static void mutate(buf_t *b)
{
    size_t pos = below(b->len + 1);
    switch (below(6)) {
    case 0: { /* overwrite a byte */
        if (b->len == 0)
            break;
        static const char pick[] = "{}[],:\"0123456789-.eE \n\\u";
        char c = below(4) ? pick[below(sizeof pick - 1)]
                          : (char)(next_random() & 0xff);
        b->data[below(b->len)] = c;
        break;
    }
    case 1: /* delete a range */
        buf_splice(b, pos, below(b->len - pos + 1) % 40, "", 0);
        break;
    case 2: { /* duplicate a range somewhere else */
        size_t from = below(b->len + 1), n = below(b->len - from + 1) % 80;
        char tmp[80];
        memcpy(tmp, b->data + from, n);
        buf_splice(b, pos, 0, tmp, n);
        break;
    }
    case 3: { /* replace a number with a troublesome token */
        size_t i = pos;
        while (i < b->len && !(b->data[i] >= '0' && b->data[i] <= '9'))
            i++;
        size_t j = i;
        while (j < b->len && ((b->data[j] >= '0' && b->data[j] <= '9') ||
                              b->data[j] == '.' || b->data[j] == 'e'))
            j++;
        const char *tok = tokens[below(sizeof tokens / sizeof tokens[0])];
        buf_splice(b, i, j - i, tok, strlen(tok));
        break;
    }
    case 4: /* truncate */
        b->len = pos;
        b->data[pos] = '\0';
        break;
    default: { /* insert a token */
        const char *tok = tokens[below(sizeof tokens / sizeof tokens[0])];
        buf_splice(b, pos, 0, tok, strlen(tok));
        break;
    }
    }
}

/* Whatever is accepted must be whole: ports consistent, and the same
 * topology after writing and reading it again. */
static void check_accepted(mrc_topo_t *t)
{
    long ports = 0;
    for (int u = 0; u < mrc_topo_num_nodes(t); u++)
        ports += mrc_topo_num_ports(t, u);
    assert_int_equal(ports, 2L * mrc_topo_num_physical_links(t));
    char *j1 = NULL, *j2 = NULL;
    mrc_topo_t *back = NULL;
    assert_int_equal(mrc_topo_to_json(t, &j1), MRC_OK);
    assert_int_equal(mrc_topo_parse_json(j1, strlen(j1), "again", &back),
                     MRC_OK);
    assert_int_equal(mrc_topo_to_json(back, &j2), MRC_OK);
    assert_string_equal(j1, j2);
    mrc_free(j1);
    mrc_free(j2);
    mrc_topo_destroy(back);
}

static void test_mutated_files(void **state)
{
    (void)state;
    const char *seeds[] = {"hcm8", "prism:3,3", "ladder:6", "ring:3,bw=1.5"};
    char *texts[5];
    for (int i = 0; i < 4; i++) {
        mrc_topo_t *t = NULL;
        assert_int_equal(mrc_topo_generate(seeds[i], &t), MRC_OK);
        assert_int_equal(mrc_topo_to_json(t, &texts[i]), MRC_OK);
        mrc_topo_destroy(t);
    }
    texts[4] = strdup("{\"format\": \"mrc-topology\", \"version\": 1, "
                      "\"nodes\": [{\"id\": 1, \"name\": \"b\", \"x\": 1, "
                      "\"y\": 2}, {\"id\": 0}], \"links\": [{\"a\": 0, "
                      "\"b\": 1, \"count\": 2, \"latency_ns\": 3}]}");
    int n = iterations(20000), accepted = 0, refused = 0;
    buf_t b = {0};
    for (int it = 0; it < n; it++) {
        const char *seed = texts[it % 5];
        buf_set(&b, seed, strlen(seed));
        int rounds = 1 + (int)below(4);
        for (int r = 0; r < rounds; r++)
            mutate(&b);
        mrc_topo_t *t = (mrc_topo_t *)(uintptr_t)1;
        mrc_status_t st = mrc_topo_parse_json(b.data, b.len, "fuzz", &t);
        if (st == MRC_OK) {
            assert_non_null(t);
            check_accepted(t);
            mrc_topo_destroy(t);
            accepted++;
        } else {
            assert_true(st < 0);
            assert_null(t);
            /* Every refusal says where: the origin opens the message. */
            assert_true(strncmp(mrc_last_error(), "fuzz", 4) == 0);
            refused++;
        }
    }
    /* Both outcomes must be exercised, or the mutator is broken. */
    assert_true(accepted > 0);
    assert_true(refused > 0);
    printf("mutated files: %d accepted, %d refused\n", accepted, refused);
    free(b.data);
    for (int i = 0; i < 5; i++)
        free(texts[i]);
}

static void test_random_specs(void **state)
{
    (void)state;
    const char *names[] = {"ring",    "line",  "full", "ladder", "torus-ladder",
                           "torus2d", "prism", "hcm8", "rung",   ""};
    const char *args[] = {"0",        "1",    "2",        "3",          "4",
                          "5",        "6",    "7",        "8",          "12",
                          "16",       "33",   "1048577",  "4294967296", "-1",
                          "",         "bw=2", "lat=0",    "bw=-1",      "bw=x",
                          "lat=1e99", "x=1",  "bw=1e-300"};
    int n = iterations(6000), accepted = 0, refused = 0;
    for (int it = 0; it < n; it++) {
        char spec[200];
        size_t len =
            (size_t)snprintf(spec, sizeof spec, "%s",
                             names[below(sizeof names / sizeof names[0])]);
        int nargs = (int)below(5);
        for (int k = 0; k < nargs && len < sizeof spec - 40; k++)
            len += (size_t)snprintf(spec + len, sizeof spec - len, "%s%s",
                                    k == 0 ? (below(8) ? ":" : ",")
                                           : (below(10) ? "," : ":"),
                                    args[below(sizeof args / sizeof args[0])]);
        mrc_topo_t *t = (mrc_topo_t *)(uintptr_t)1;
        mrc_status_t st = mrc_topo_generate(spec, &t);
        if (st == MRC_OK) {
            check_accepted(t);
            mrc_topo_destroy(t);
            accepted++;
        } else {
            assert_true(st < 0);
            assert_null(t);
            assert_true(strlen(mrc_last_error()) > 0);
            refused++;
        }
    }
    assert_true(accepted > 0);
    assert_true(refused > 0);
    printf("random specs: %d accepted, %d refused\n", accepted, refused);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutated_files),
        cmocka_unit_test(test_random_specs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
