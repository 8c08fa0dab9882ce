/*
 * The fit of a message's costs (tools/mrc/calibrate_messages.c): times
 * made by the simulator with known figures are given to the fit as if
 * measured, and the fit must find those figures again. So the probes
 * tell the three costs apart: the receiver's (message_us), the way's
 * (latency_us), and on shm the sender's (send_us).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "calibrate.h"

/* A host of two cores whose sends go through slots (shm's form). */
static mrc_profile_t shm_profile(void)
{
    mrc_profile_t f = {.version = MRC_PROFILE_VERSION,
                       .ranks = 2,
                       .cores = 2,
                       .nodes_per_memory = 2,
                       .cache_bytes = 32 << 20,
                       .copy_gbps_cache = 40,
                       .copy_gbps_memory = 12,
                       .memory_gbps_shared = 18,
                       .peer_gbps_cache = 12,
                       .private_cache_bytes = 2 << 20,
                       .rendezvous_bytes = 1 << 20,
                       .slot_gbps = 20,
                       .kernel_gbps = 15,
                       .sync_us = 0.06};
    snprintf(f.transport, sizeof f.transport, "shm");
    f.reduce_gbps_cache[MRC_FLOAT32][MRC_SUM] = 30;
    f.reduce_gbps_memory[MRC_FLOAT32][MRC_SUM] = 8;
    return f;
}

/* The probes' times under `truth`, then the fit from no costs at all. */
static mrc_profile_t fit_from(const mrc_profile_t *truth)
{
    cal_plan_t plan = {
        .transport = truth->transport, .ranks = 2, .reps = 1, .trips = 2000};
    cal_probe_t call = {.count = cal_probe_count(2)};
    cal_probe_t chain = {.count = CAL_FLAG_PROBE_BYTES / sizeof(float),
                         .algo = MRC_ALGO_TREE};
    cal_probe_t loops[2];
    cal_broadcast_loops(&plan, loops);
    double call_us = 0, chain_us = 0, loops_us[2] = {0, 0};
    assert_int_equal(cal_sim_probe(truth, 2, &call, &call_us), MRC_OK);
    assert_int_equal(cal_sim_probe(truth, 2, &chain, &chain_us), MRC_OK);
    for (int i = 0; i < 2; i++)
        assert_int_equal(cal_sim_probe(truth, 2, &loops[i], &loops_us[i]),
                         MRC_OK);
    mrc_profile_t p = *truth;
    p.message_us = p.latency_us = p.send_us = 0;
    assert_int_equal(cal_fit_messages(&plan, &p, 2, truth->sync_us, call_us,
                                      &chain, chain_us, loops, loops_us),
                     MRC_OK);
    return p;
}

static void expect_near(double got, double want, const char *what)
{
    if (fabs(got - want) > 0.02)
        fail_msg("%s: fitted %.4f us, made with %.4f", what, got, want);
}

/* Hosts with slots (shm's form), each made with its own costs, and the
 * fit must find them all: the sender's cost beside the latency, none on
 * the receiver's core; no sender's cost (the fit at its lower bound
 * writes none), the receiver's cost instead. */
static void test_costs_found(void **state)
{
    (void)state;
    static const struct {
        double latency_us, message_us, send_us;
    } hosts[] = {{0.6, 0, 0.45}, {0.5, 0.3, 0}};
    for (size_t h = 0; h < sizeof hosts / sizeof *hosts; h++) {
        mrc_profile_t truth = shm_profile();
        truth.latency_us = hosts[h].latency_us;
        truth.message_us = hosts[h].message_us;
        truth.send_us = hosts[h].send_us;
        mrc_profile_t p = fit_from(&truth);
        expect_near(p.send_us, truth.send_us, "send_us");
        expect_near(p.latency_us, truth.latency_us, "latency_us");
        expect_near(p.message_us, truth.message_us, "message_us");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_costs_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
