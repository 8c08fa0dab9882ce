/*
 * The guard of `mrc calibrate` and --check against a host that slows down
 * (tools/mrc/calibrate_steady.c): which canaries are slow, when a
 * measurement is timed again, what is counted; and the rates a
 * calibration left at a fit's bound (calibrate_floor.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "calibrate.h"

/* Twice the fastest canary is slow; with more ranks than cores three
 * times. */
static void test_factor(void **state)
{
    (void)state;
    cal_guard_t g = cal_guard_new(1, 0);
    cal_guard_saw(&g, 2);
    cal_guard_saw(&g, 1);
    cal_guard_saw(&g, 3);
    assert_true(g.best_us == 1);
    assert_false(cal_guard_slow(&g, 2));
    assert_true(cal_guard_slow(&g, 2.5));
    cal_guard_t crowded = cal_guard_new(1 << 20, 0);
    cal_guard_saw(&crowded, 1);
    assert_false(cal_guard_slow(&crowded, 2.5));
    assert_true(cal_guard_slow(&crowded, 3.5));
}

/* Steady canaries keep the measurement; a slow one times it again while
 * the tries and the pauses' budget last, then keeps it, counted. */
static void test_again(void **state)
{
    (void)state;
    cal_guard_t g = cal_guard_new(1, 1);
    const double steady[2] = {1, 1.5}, slow[2] = {1, 5};
    assert_int_equal(cal_guard_again(&g, steady, 1), 0);
    assert_int_equal(g.measured, 1);
    assert_int_equal(cal_guard_again(&g, slow, 1), 1); /* a pause */
    assert_int_equal(cal_guard_again(&g, slow, 2), 1); /* the budget's last */
    assert_int_equal(cal_guard_again(&g, slow, 3), 0); /* none left */
    assert_int_equal(g.retried, 2);
    assert_true(g.waited_s == 1);
    assert_int_equal(g.measured, 2);
    assert_int_equal(g.unsteady, 1);
    assert_true(g.worst_us == 5);
    assert_false(cal_guard_held(&g));
    /* Each try's pause four times the last, within the budget: 0.5 s,
     * then 2, then the 0.1 left. */
    cal_guard_t w = cal_guard_new(1, 2.6);
    cal_guard_saw(&w, 1);
    assert_int_equal(cal_guard_again(&w, slow, 1), 1);
    assert_true(w.waited_s == 0.5);
    assert_int_equal(cal_guard_again(&w, slow, 2), 1);
    assert_true(w.waited_s == 2.5);
    assert_int_equal(cal_guard_again(&w, slow, 3), 1);
    assert_true(fabs(w.waited_s - 2.6) < 1e-12);
    assert_int_equal(cal_guard_again(&w, slow, 4), 0);
    /* Out of tries before the budget: kept at the last. */
    cal_guard_t h = cal_guard_new(1, 100);
    assert_int_equal(cal_guard_again(&h, slow, CAL_GUARD_TRIES), 0);
    assert_int_equal(h.retried, 0);
    assert_int_equal(h.unsteady, 1);
    /* Nothing measured, or only steady: held. */
    cal_guard_t k = cal_guard_new(1, 0);
    assert_true(cal_guard_held(&k));
    assert_int_equal(cal_guard_again(&k, steady, 1), 0);
    assert_true(cal_guard_held(&k));
}

/* The rates left at their fits' lower bound, 0.01 GB/s (within 1.001 of
 * it, as the fits take a bound), named in order; none at 0 (none) or
 * just above, nor a rate that is none at a bound; the count whatever
 * room the caller gave. */
static void test_rates_at_floor(void **state)
{
    (void)state;
    mrc_profile_t p = {0};
    const char *names[8] = {0};
    assert_int_equal(cal_rates_at_floor(&p, names, 8), 0);
    p.slot_gbps = 0.01;
    p.kernel_gbps = 0.010005;
    p.peer_gbps_cache = 0.0102;
    p.memory_gbps_shared = 0.010000000000000148; /* as a fit left one */
    p.peer_gbps_shared = 12;
    assert_int_equal(cal_rates_at_floor(&p, names, 8), 3);
    assert_string_equal(names[0], "slot_gbps");
    assert_string_equal(names[1], "kernel_gbps");
    assert_string_equal(names[2], "memory_gbps_shared");
    p.copy_gbps_shared = 0.01; /* none at a bound: never left so */
    assert_int_equal(cal_rates_at_floor(&p, names, 8), 3);
    const char *one[1] = {0};
    assert_int_equal(cal_rates_at_floor(&p, one, 1), 3);
    assert_string_equal(one[0], "slot_gbps");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_factor),
        cmocka_unit_test(test_again),
        cmocka_unit_test(test_rates_at_floor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
