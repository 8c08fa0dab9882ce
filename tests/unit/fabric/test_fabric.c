/* The tile fabric: geometry, hand-checked schedules and toggles, schedules
 * broken on purpose and caught by the simulator, bounds, gating, and bad
 * input (with a fuzzed JSON reader). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/fabric_internal.h"
#include "mrc/mrc.h"

static mrc_fabric_t *fabric(int tiles, int columns)
{
    mrc_fabric_config_t cfg = {tiles, columns, 4};
    mrc_fabric_t *f = NULL;
    if (mrc_fabric_create(&cfg, &f) != MRC_OK)
        fail_msg("%s", mrc_last_error());
    return f;
}

static void add(mrc_exchange_t *x, int src, int dest, uint64_t bytes)
{
    if (mrc_exchange_add(x, src, &dest, 1, bytes) != MRC_OK)
        fail_msg("%s", mrc_last_error());
}

static mrc_fabric_schedule_t *schedule(const mrc_fabric_t *f,
                                       const mrc_exchange_t *x)
{
    mrc_fabric_schedule_t *s = NULL;
    if (mrc_fabric_schedule(f, x, &s) != MRC_OK)
        fail_msg("%s", mrc_last_error());
    return s;
}

static mrc_fabric_stats_t simulate(const mrc_fabric_t *f,
                                   const mrc_fabric_schedule_t *s)
{
    mrc_fabric_stats_t st;
    if (mrc_fabric_simulate(f, s, &st) != MRC_OK)
        fail_msg("%s", mrc_last_error());
    return st;
}

static void assert_clean(const mrc_fabric_stats_t *st)
{
    assert_int_equal(st->delivered, st->deliveries);
    assert_int_equal(st->misdelivered, 0);
    assert_int_equal(st->late, 0);
    assert_int_equal(st->missed, 0);
    assert_int_equal(st->slipped, 0);
    assert_true(st->toggles <= st->toggles_ungated);
}

static void test_geometry(void **state)
{
    (void)state;
    mrc_fabric_t *f = fabric(8, 2); /* 2 columns of 4 */
    assert_int_equal(mrc_fabric_rows(f), 4);
    assert_int_equal(mrc_fabric_column_of(f, 5), 1);
    assert_int_equal(mrc_fabric_row_of(f, 5), 1);
    /* ns(0) = 1, one column, ns(4) = 1 */
    assert_int_equal(mrc_fabric_delay(f, 0, 4), 3);
    /* ns(3) = 4, one column, ns(7) = 4 */
    assert_int_equal(mrc_fabric_delay(f, 3, 7), 9);
    /* same column: no East-West stage */
    assert_int_equal(mrc_fabric_delay(f, 0, 3), 5);
    mrc_fabric_destroy(f);
    /* 10 tiles in 4 columns: 3 rows, the last column holds one tile. */
    f = fabric(10, 4);
    assert_int_equal(mrc_fabric_rows(f), 3);
    assert_int_equal(mrc_fabric_columns(f), 4);
    assert_int_equal(mrc_fabric_column_of(f, 9), 3);
    mrc_fabric_destroy(f);
    /* 9 in 4: 3 rows fill 3 columns; no empty fourth. */
    f = fabric(9, 4);
    assert_int_equal(mrc_fabric_columns(f), 3);
    mrc_fabric_destroy(f);
    f = fabric(0, 0); /* the defaults */
    assert_int_equal(mrc_fabric_tiles(f), 1472);
    assert_int_equal(mrc_fabric_columns(f), 16);
    assert_int_equal(mrc_fabric_rows(f), 92);
    mrc_fabric_destroy(f);
}

/* One packet, checked by hand: 8 tiles in 4 columns of 2; tile 2 (column
 * 1, row 0) to tile 6 (column 3, row 0). */
static void test_one_packet(void **state)
{
    (void)state;
    mrc_fabric_t *f = fabric(8, 4);
    mrc_exchange_t *x = NULL;
    assert_int_equal(mrc_exchange_create(&x), MRC_OK);
    add(x, 2, 6, 4);
    mrc_fabric_schedule_t *s = schedule(f, x);
    mrc_fabric_schedule_info_t info;
    mrc_fabric_schedule_info(s, &info);
    assert_int_equal(info.packets, 1);
    assert_int_equal(mrc_fabric_packet_send_cycle(s, 0), 0);
    assert_int_equal(mrc_fabric_packet_flags(s, 0), MRC_FABRIC_EAST);
    /* On the exchange at cycle 1 (ns = 1), at column 3 two stages later:
     * tile 6's multiplexer takes tile 2's wires in cycle 3; it arrives in
     * cycle 4, so the exchange lasts cycles 0..4. */
    assert_int_equal(mrc_fabric_mux_select(s, 6, 3), 2);
    for (int c = 0; c < 8; c++)
        if (c != 3)
            assert_int_equal(mrc_fabric_mux_select(s, 6, c), -1);
    assert_int_equal(info.cycles, 5);
    assert_int_equal(info.lower_bound_cycles, 5);
    mrc_fabric_stats_t st = simulate(f, s);
    assert_clean(&st);
    assert_int_equal(st.delivered, 1);
    assert_int_equal(st.cycles, 5);
    /* Gated: the entry latch (column 1), then columns 2 and 3. Ungated:
     * column 0 too. */
    assert_int_equal(st.toggles, 3);
    assert_int_equal(st.toggles_ungated, 4);
    mrc_fabric_schedule_destroy(s);
    mrc_exchange_destroy(x);
    mrc_fabric_destroy(f);
}

/* A multicast both ways costs what no gating costs; a packet to its own
 * column toggles only its entry latch. */
static void test_multicast_and_local(void **state)
{
    (void)state;
    mrc_fabric_t *f = fabric(8, 4);
    mrc_exchange_t *x = NULL;
    assert_int_equal(mrc_exchange_create(&x), MRC_OK);
    int both[] = {6, 0};
    assert_int_equal(mrc_exchange_add(x, 2, both, 2, 4), MRC_OK);
    add(x, 4, 5, 4); /* column 2, row 0 -> row 1 */
    mrc_fabric_schedule_t *s = schedule(f, x);
    assert_int_equal(mrc_fabric_packet_flags(s, 0),
                     MRC_FABRIC_EAST | MRC_FABRIC_WEST);
    assert_int_equal(mrc_fabric_packet_flags(s, 1), 0);
    assert_int_equal(mrc_fabric_mux_select(s, 0, 2), 2); /* one stage West */
    assert_int_equal(mrc_fabric_mux_select(s, 6, 3), 2); /* two East */
    assert_int_equal(mrc_fabric_mux_select(s, 5, 1), 4); /* its own column */
    mrc_fabric_stats_t st = simulate(f, s);
    assert_clean(&st);
    assert_int_equal(st.delivered, 3);
    assert_int_equal(st.toggles, 4 + 1);
    assert_int_equal(st.toggles_ungated, 4 + 4);
    mrc_fabric_schedule_destroy(s);
    mrc_exchange_destroy(x);
    mrc_fabric_destroy(f);
}

/* Two senders whose packets would meet at one multiplexer in one cycle;
 * and one sender with two packets. */
static void test_conflicts_avoided(void **state)
{
    (void)state;
    mrc_fabric_t *f = fabric(8, 4);
    mrc_exchange_t *x = NULL;
    assert_int_equal(mrc_exchange_create(&x), MRC_OK);
    add(x, 0, 2, 4); /* column 0 -> 1: mux cycle t + 2 */
    add(x, 4, 2, 4); /* column 2 -> 1: mux cycle t + 2 too */
    add(x, 6, 7, 8); /* two packets */
    mrc_fabric_schedule_t *s = schedule(f, x);
    assert_int_equal(mrc_fabric_packet_send_cycle(s, 0), 0);
    assert_int_equal(mrc_fabric_packet_send_cycle(s, 1), 1);
    assert_int_equal(mrc_fabric_mux_select(s, 2, 2), 0);
    assert_int_equal(mrc_fabric_mux_select(s, 2, 3), 4);
    assert_int_equal(mrc_fabric_packet_send_cycle(s, 2), 0);
    assert_int_equal(mrc_fabric_packet_send_cycle(s, 3), 1);
    mrc_fabric_schedule_info_t info;
    mrc_fabric_schedule_info(s, &info);
    /* Tile 2 receives two packets of trip 3: arrivals 3 and 4. Tile 7
     * two of trip 1 + 0 + 2 = 3: the same. */
    assert_int_equal(info.lower_bound_cycles, 5);
    assert_int_equal(info.cycles, 5);
    mrc_fabric_stats_t st = simulate(f, s);
    assert_clean(&st);
    assert_int_equal(st.delivered, 4);
    mrc_fabric_schedule_destroy(s);
    mrc_exchange_destroy(x);
    mrc_fabric_destroy(f);
}

/* Schedules broken on purpose: the simulator must catch each. Tile 2
 * sends packet 0 to tile 6 and packet 1 to tile 7 (both column 3). */
static void broken_setup(mrc_fabric_t **f, mrc_exchange_t **x,
                         mrc_fabric_schedule_t **s)
{
    *f = fabric(8, 4);
    assert_int_equal(mrc_exchange_create(x), MRC_OK);
    add(*x, 2, 6, 4);
    add(*x, 2, 7, 4);
    *s = schedule(*f, *x);
    assert_int_equal((*s)->send[0], 0);
    assert_int_equal((*s)->send[1], 1);
    assert_int_equal((*s)->mux[6][3], 2);
    assert_int_equal((*s)->mux[7][4], 2);
    mrc_fabric_stats_t st = simulate(*f, *s);
    assert_clean(&st);
}

static void broken_teardown(mrc_fabric_t *f, mrc_exchange_t *x,
                            mrc_fabric_schedule_t *s)
{
    mrc_fabric_schedule_destroy(s);
    mrc_exchange_destroy(x);
    mrc_fabric_destroy(f);
}

static void test_broken_schedules(void **state)
{
    (void)state;
    mrc_fabric_t *f;
    mrc_exchange_t *x;
    mrc_fabric_schedule_t *s;
    mrc_fabric_stats_t st;

    /* A sender with two packets in one cycle: the second leaves a cycle
     * late and arrives after its program expects it. */
    broken_setup(&f, &x, &s);
    s->send[1] = 0;
    st = simulate(f, s);
    assert_int_equal(st.slipped, 1);
    assert_int_equal(st.late, 1);
    assert_int_equal(st.delivered, 1);
    broken_teardown(f, x, s);

    /* A multiplexer one cycle early: it takes nothing, the packet is
     * missed. */
    broken_setup(&f, &x, &s);
    s->mux[6][3] = -1;
    s->mux[6][2] = 2;
    st = simulate(f, s);
    assert_int_equal(st.missed, 1);
    assert_int_equal(st.delivered, 1);
    broken_teardown(f, x, s);

    /* Tile 6's multiplexer at tile 7's cycle: it takes tile 7's packet. */
    broken_setup(&f, &x, &s);
    s->mux[6][3] = -1;
    s->mux[6][4] = 2;
    st = simulate(f, s);
    assert_int_equal(st.misdelivered, 1);
    assert_int_equal(st.missed, 1);
    assert_int_equal(st.delivered, 1);
    broken_teardown(f, x, s);

    /* The wrong sender selected. */
    broken_setup(&f, &x, &s);
    s->mux[6][3] = 3;
    st = simulate(f, s);
    assert_int_equal(st.missed, 1);
    broken_teardown(f, x, s);

    /* The wrong direction: gated latches stop it before column 3. */
    broken_setup(&f, &x, &s);
    s->flags[0] = MRC_FABRIC_WEST;
    st = simulate(f, s);
    assert_int_equal(st.missed, 1);
    assert_int_equal(st.delivered, 1);
    broken_teardown(f, x, s);

    /* A send cycle outside the schedule is refused, not run. */
    broken_setup(&f, &x, &s);
    s->send[0] = (int32_t)s->horizon;
    assert_int_equal(mrc_fabric_simulate(f, s, &st), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "packet 0"));
    broken_teardown(f, x, s);
}

/* Random exchanges: every schedule checks clean, is no shorter than the
 * bound, and gating never costs more. */
static void test_random_exchanges(void **state)
{
    (void)state;
    uint64_t seed = 12345;
    for (int trial = 0; trial < 200; trial++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int tiles = 2 + (int)((seed >> 33) % 40);
        int columns = 1 + (int)((seed >> 20) % (uint64_t)tiles);
        mrc_fabric_t *f = fabric(tiles, columns);
        mrc_exchange_t *x = NULL;
        assert_int_equal(mrc_exchange_create(&x), MRC_OK);
        int entries = 1 + (int)((seed >> 40) % 60);
        for (int e = 0; e < entries; e++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            int src = (int)((seed >> 33) % (uint64_t)tiles);
            int dests[8], n = 0;
            int want = 1 + (int)((seed >> 13) % 4);
            for (int k = 0; k < want; k++) {
                int d = (int)((seed >> (k * 5 + 3)) % (uint64_t)tiles);
                int dup = d == src;
                for (int j = 0; j < n; j++)
                    dup |= dests[j] == d;
                if (!dup)
                    dests[n++] = d;
            }
            if (n > 0)
                assert_int_equal(
                    mrc_exchange_add(x, src, dests, n, 1 + (seed >> 50) % 13),
                    MRC_OK);
        }
        mrc_fabric_schedule_t *s = schedule(f, x);
        mrc_fabric_schedule_info_t info;
        mrc_fabric_schedule_info(s, &info);
        assert_true(info.cycles >= info.lower_bound_cycles);
        /* The bound is at least each of its parts: the longest trip, and
         * every tile's packets sent or received one a cycle. */
        int64_t sends[64] = {0}, gets[64] = {0}, trip = 0; /* tiles <= 41 */
        for (uint64_t p = 0; p < info.packets; p++) {
            size_t e = (size_t)s->entry[p];
            sends[x->source[e]]++;
            for (size_t k = x->first[e]; k < x->first[e + 1]; k++) {
                int d = mrc_fabric_delay(f, x->source[e], x->dests[k]);
                trip = d > trip ? d : trip;
                gets[x->dests[k]]++;
            }
        }
        assert_true(info.lower_bound_cycles >= trip + 1);
        for (int t = 0; t < tiles; t++) {
            assert_true(info.lower_bound_cycles >= sends[t]);
            assert_true(info.lower_bound_cycles >= gets[t]);
        }
        mrc_fabric_stats_t st = simulate(f, s);
        assert_clean(&st);
        assert_true(st.cycles <= info.cycles);
        mrc_fabric_schedule_destroy(s);
        mrc_exchange_destroy(x);
        mrc_fabric_destroy(f);
    }
}

static double saving(const mrc_fabric_t *f, const mrc_exchange_t *x,
                     mrc_fabric_stats_t *out)
{
    mrc_fabric_schedule_t *s = schedule(f, x);
    *out = simulate(f, s);
    assert_clean(out);
    mrc_fabric_schedule_destroy(s);
    return 1.0 - (double)out->toggles / (double)out->toggles_ungated;
}

/* Gating saves most when traffic goes one way: every tile East of column
 * 0 sends West to column 0, against the same tiles sending to both ends. */
static void test_gating(void **state)
{
    (void)state;
    mrc_fabric_t *f = fabric(64, 8); /* 8 columns of 8 */
    mrc_exchange_t *one = NULL, *two = NULL;
    assert_int_equal(mrc_exchange_create(&one), MRC_OK);
    assert_int_equal(mrc_exchange_create(&two), MRC_OK);
    for (int t = 8; t < 56; t++) {
        int west = t % 8, both[] = {t % 8, 56 + t % 8};
        add(one, t, west, 4);
        assert_int_equal(mrc_exchange_add(two, t, both, 2, 4), MRC_OK);
    }
    mrc_fabric_stats_t a, b;
    double sa = saving(f, one, &a), sb = saving(f, two, &b);
    assert_int_equal(a.toggles_ungated, b.toggles_ungated);
    assert_int_equal(b.toggles, b.toggles_ungated); /* both ways: no saving */
    /* One way from columns 1..6: 2..7 latches of 8 toggle, 4.5 on average */
    assert_int_equal(a.toggles, 8 * (2 + 3 + 4 + 5 + 6 + 7));
    assert_true(sa > 0.4 && sb == 0.0);
    mrc_exchange_destroy(one);
    mrc_exchange_destroy(two);

    /* The named patterns on 16 columns: neighbour (one way, but for the
     * last column) saves the most; random and all-to-all go either way
     * (a third); broadcast from tile 0, the West end, nothing. */
    mrc_fabric_destroy(f);
    f = fabric(320, 16);
    const char *names[] = {"neighbour", "random", "all-to-all", "broadcast"};
    double s[4];
    for (int i = 0; i < 4; i++) {
        mrc_exchange_t *x = NULL;
        assert_int_equal(mrc_exchange_pattern(names[i], 320, 16, 7, 4, &x),
                         MRC_OK);
        mrc_fabric_stats_t st;
        s[i] = saving(f, x, &st);
        mrc_exchange_destroy(x);
    }
    assert_true(s[0] > s[1] + 0.05 && s[0] > s[2] + 0.05);
    assert_true(s[1] > 0.25 && s[2] > 0.25);
    assert_true(s[3] == 0.0);
    mrc_fabric_destroy(f);
}

static void test_patterns(void **state)
{
    (void)state;
    mrc_exchange_t *x = NULL;
    assert_int_equal(mrc_exchange_pattern("all-to-all", 10, 3, 0, 4, &x),
                     MRC_OK);
    assert_int_equal(mrc_exchange_entries(x), 90);
    mrc_exchange_destroy(x);
    assert_int_equal(mrc_exchange_pattern("random", 10, 3, 5, 4, &x), MRC_OK);
    assert_int_equal(mrc_exchange_entries(x), 80);
    mrc_exchange_destroy(x);
    assert_int_equal(mrc_exchange_pattern("neighbour", 10, 3, 0, 4, &x),
                     MRC_OK);
    assert_int_equal(mrc_exchange_entries(x), 10);
    mrc_exchange_destroy(x);
    assert_int_equal(mrc_exchange_pattern("everything", 10, 3, 0, 4, &x),
                     MRC_ERR_INVALID_ARG);
    assert_null(x);
    assert_non_null(strstr(mrc_last_error(), "unknown pattern"));
}

static void test_bad_input(void **state)
{
    (void)state;
    mrc_fabric_t *f = NULL;
    mrc_fabric_config_t cfg = {8, 9, 4};
    assert_int_equal(mrc_fabric_create(&cfg, &f), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "9 columns for 8 tiles"));
    cfg = (mrc_fabric_config_t){-1, 0, 0};
    assert_int_equal(mrc_fabric_create(&cfg, &f), MRC_ERR_INVALID_ARG);

    mrc_exchange_t *x = NULL;
    assert_int_equal(mrc_exchange_create(&x), MRC_OK);
    int d[] = {3, 5, 3};
    assert_int_equal(mrc_exchange_add(x, 1, d, 3, 4), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "destination 3 appears twice"));
    assert_int_equal(mrc_exchange_add(x, 5, d + 1, 1, 4), MRC_ERR_INVALID_ARG);
    assert_non_null(strstr(mrc_last_error(), "tile 5 sends to itself"));
    assert_int_equal(mrc_exchange_add(x, 1, d, 0, 4), MRC_ERR_INVALID_ARG);
    assert_int_equal(mrc_exchange_add(x, 1, d, 1, 0), MRC_ERR_INVALID_ARG);
    assert_int_equal(mrc_exchange_entries(x), 0);
    add(x, 1, 3, 4);
    add(x, 2, 9, 4);
    f = fabric(8, 2);
    mrc_fabric_schedule_t *s = NULL;
    assert_int_equal(mrc_fabric_schedule(f, x, &s), MRC_ERR_INVALID_ARG);
    assert_null(s);
    assert_non_null(strstr(mrc_last_error(),
                           "entry 1: destination 9 is not a tile (the "
                           "fabric has 8)"));
    mrc_exchange_destroy(x);
    mrc_fabric_destroy(f);
}

static mrc_status_t parse(const char *text, mrc_exchange_t **x, int *t, int *c)
{
    return mrc_exchange_parse_json(text, strlen(text), "ex.json", x, t, c);
}

static void test_json(void **state)
{
    (void)state;
    mrc_exchange_t *x = NULL;
    int t = -1, c = -1;
    assert_int_equal(parse("{\"tiles\": 8, \"columns\": 4, \"exchange\": ["
                           "{\"source\": 2, \"destinations\": [6, 0], "
                           "\"bytes\": 8}, {\"source\": 1, "
                           "\"destinations\": [0]}]}",
                           &x, &t, &c),
                     MRC_OK);
    assert_int_equal(t, 8);
    assert_int_equal(c, 4);
    assert_int_equal(mrc_exchange_entries(x), 2);
    assert_int_equal(x->bytes[0], 8);
    assert_int_equal(x->bytes[1], 4); /* one packet by default */
    mrc_exchange_destroy(x);

    const struct {
        const char *text, *error;
    } bad[] = {
        {"{\"exchange\": [}", "ex.json:1:15: JSON syntax error"},
        {"[]", "top level is not an object"},
        {"{}", "\"exchange\" is missing"},
        {"{\"exchange\": 3}", "\"exchange\" is not an array"},
        {"{\"exchange\": [3]}", "exchange[0] is not an object"},
        {"{\"exchange\": [{\"destinations\": [1]}]}",
         "exchange[0].source is missing"},
        {"{\"exchange\": [{\"source\": -1, \"destinations\": [1]}]}",
         "exchange[0].source is -1"},
        {"{\"exchange\": [{\"source\": 0, \"destinations\": []}]}",
         "exchange[0].destinations is empty"},
        {"{\"exchange\": [{\"source\": 0, \"destinations\": [1, \"2\"]}]}",
         "exchange[0].destinations[1] is of the wrong type"},
        {"{\"exchange\": [{\"source\": 0, \"destinations\": [0]}]}",
         "tile 0 sends to itself"},
        {"{\"exchange\": [{\"source\": 0, \"destinations\": [1], "
         "\"bytes\": 0}]}",
         "exchange[0].bytes is 0"},
        {"{\"tiles\": 0, \"exchange\": []}", "tiles is 0"},
        {"{\"exchange\": [], \"exchange\": []}", "duplicate"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        x = NULL;
        assert_int_not_equal(parse(bad[i].text, &x, &t, &c), MRC_OK);
        assert_null(x);
        if (!strstr(mrc_last_error(), bad[i].error) ||
            !strstr(mrc_last_error(), "ex.json"))
            fail_msg("%s: got '%s', want '%s'", bad[i].text, mrc_last_error(),
                     bad[i].error);
    }
    assert_int_equal(mrc_exchange_read("/nonexistent/ex.json", &x, &t, &c),
                     MRC_ERR_IO);
    assert_non_null(strstr(mrc_last_error(), "/nonexistent/ex.json"));
}

/* Mutated exchanges: the reader accepts or refuses, never crashes; what
 * it accepts schedules and checks clean (or is refused for its tiles). */
static void test_json_fuzz(void **state)
{
    (void)state;
    const char *seed_text =
        "{\"tiles\": 12, \"columns\": 3, \"exchange\": [{\"source\": 2, "
        "\"destinations\": [6, 0, 11], \"bytes\": 9}, {\"source\": 7, "
        "\"destinations\": [1]}, {\"source\": 11, \"destinations\": [10, 4], "
        "\"bytes\": 4}]}";
    size_t n = strlen(seed_text);
    char *buf = malloc(n + 1);
    uint64_t r = 99;
    const char alphabet[] = "{}[]\",:0123456789-e. abtx";
    int accepted = 0;
    for (int trial = 0; trial < 3000; trial++) {
        memcpy(buf, seed_text, n + 1);
        int edits = 1 + trial % 4;
        for (int k = 0; k < edits; k++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            buf[(r >> 33) % n] = alphabet[(r >> 20) % (sizeof alphabet - 1)];
        }
        mrc_exchange_t *x = NULL;
        int t = 0, c = 0;
        if (mrc_exchange_parse_json(buf, n, "fuzz", &x, &t, &c) != MRC_OK) {
            assert_null(x);
            continue;
        }
        accepted++;
        mrc_fabric_config_t cfg = {t, c, 4};
        mrc_fabric_t *f = NULL;
        mrc_fabric_schedule_t *s = NULL;
        if (mrc_fabric_create(&cfg, &f) == MRC_OK &&
            mrc_fabric_schedule(f, x, &s) == MRC_OK) {
            mrc_fabric_stats_t st = simulate(f, s);
            assert_clean(&st);
        }
        mrc_fabric_schedule_destroy(s);
        mrc_fabric_destroy(f);
        mrc_exchange_destroy(x);
    }
    assert_true(accepted > 0);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_geometry),
        cmocka_unit_test(test_one_packet),
        cmocka_unit_test(test_multicast_and_local),
        cmocka_unit_test(test_conflicts_avoided),
        cmocka_unit_test(test_broken_schedules),
        cmocka_unit_test(test_random_exchanges),
        cmocka_unit_test(test_gating),
        cmocka_unit_test(test_patterns),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_json_fuzz),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
