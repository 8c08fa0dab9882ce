/*
 * `mrc calibrate`'s message costs (calibrate.h): a message's cost on its
 * receiver's core, its latency and its sender's cost, each fitted
 * through the simulator to small calls of the transport.
 */
#include <math.h>
#include <string.h>

#include "calibrate.h"

static mrc_status_t sim_allreduce(const mrc_profile_t *p, int ranks,
                                  size_t count, double *us)
{
    return cal_sim_probe(p, ranks, &(cal_probe_t){.count = count}, us);
}

mrc_status_t cal_set_costs(mrc_profile_t *p, int ranks, double sync_us,
                           double call_us)
{
    /* message_us is fitted through the simulator, so that the model
     * times the probe's own call as measured: the program's time with a
     * message cost of 0 and of 1 us gives how many messages follow one
     * another in it, and the rest of the call is theirs. */
    p->sync_us = sync_us;
    double t0 = 0, t1 = 0;
    p->message_us = 0;
    mrc_status_t st = sim_allreduce(p, ranks, cal_probe_count(ranks), &t0);
    p->message_us = 1;
    if (st == MRC_OK)
        st = sim_allreduce(p, ranks, cal_probe_count(ranks), &t1);
    if (st != MRC_OK)
        return st;
    double chain = t1 - t0;
    p->message_us = chain > 0 && call_us > t0 ? (call_us - t0) / chain : 0;
    /* The time is linear in the cost only while the same messages follow
     * one another: where the figure misses the call (another node's
     * messages took the lead, or a sender's cost hid some), a bisection
     * between none and four times it (at the lower bound: none; at the
     * upper, the linear figure stands). With a sender's cost of 0.08 us
     * the linear figure had a rings call of 2.91 us at 2.58. */
    double t = 0, linear = p->message_us;
    if (linear > 0 &&
        (st = sim_allreduce(p, ranks, cal_probe_count(ranks), &t)) == MRC_OK &&
        fabs(t - call_us) > 1e-3 * call_us) {
        int clamped = 0;
        double lo = 1e-4, hi = fmax(4 * linear, 2 * lo);
        st = cal_fit_rings(p, KNOB(message_us), lo, hi, ranks,
                           cal_probe_count(ranks), call_us, &clamped);
        if (st == MRC_OK && clamped)
            p->message_us = p->message_us < 2 * lo ? 0 : linear;
    }
    return st;
}

/* The broadcast loops cal_fit_messages times: the rings' and the tree's,
 * 4 KiB from rank 0. */
void cal_broadcast_loops(const cal_plan_t *plan, cal_probe_t loops[2])
{
    for (int i = 0; i < 2; i++)
        loops[i] = (cal_probe_t){.count = CAL_FLAG_PROBE_BYTES / sizeof(float),
                                 .iters = 2 * (plan->trips / 30 + 1),
                                 .reps = 3 * plan->reps,
                                 .algo = i ? MRC_ALGO_TREE : MRC_ALGO_RINGS,
                                 .broadcast = 1};
}

/* A message's latency (latency_us) and its cost on the receiver's core
 * (message_us), from two small calls on the same ranks: the rings',
 * whose messages of a step overlap their latencies while their costs add
 * on each receiver, and the tree's, whose messages follow one another
 * (call_us and chain_us). With the cost alone the rings' fit left the
 * tree's small calls on shm at half their time (0.49 at 4 KiB, P = 2).
 * Each fit moves the other (the error halves a round), so eight rounds.
 * A latency at either bound is none: at the lower, the tree is no slower
 * than the rings' fit says; at the upper, nothing in range explains the
 * call, and the model without a latency stands. */
static mrc_status_t fit_latency(mrc_profile_t *p, int ranks, double sync_us,
                                double call_us, const cal_probe_t *chain,
                                double chain_us)
{
    mrc_status_t st = MRC_OK;
    int clamped = 0;
    for (int round = 0; round < 8 && st == MRC_OK; round++) {
        st = cal_fit_family(p, KNOB(latency_us), 1e-3, 100, ranks, chain,
                            chain_us, &clamped);
        if (st == MRC_OK && clamped)
            p->latency_us = 0;
        if (st == MRC_OK)
            st = cal_set_costs(p, ranks, sync_us, call_us);
    }
    return st;
}

/* A send's own cost on its sender's core (send_us), from loops of small
 * broadcasts from one root: the rings' (two messages a call) and the
 * tree's (one), each timed as a call in a run, their misses balanced.
 * The root's period is what holds such a loop: on shm at P = 2 the
 * rings' loop took 0.46 us a call more than the tree's at 4 KiB (0.17 at
 * 8 B on another host), where the two allreduces took the same time, a
 * cost the sender pays and its receiver does not. A loop's root pays a
 * message's cost on the receiver's core too (its slot copy carries it),
 * so the loops give the two costs' sum and the rings' allreduce, which
 * the receiver's cost slows and the sender's mostly does not, their
 * split: the latency's and message's fit again after each, until the
 * three settle (eight rounds). (Fitted to the gap between the two loops
 * alone, the rings' over the tree's, the sender's cost came out at
 * 1.17 us and the latency at 0.05 on the Xeon host, and 67 of 122 rows
 * of a sweep were within, 82 with the two loops' level.) Only where a
 * send is its sender's copy into slots (shm). A fit at either bound is
 * none. */
mrc_status_t cal_fit_messages(const cal_plan_t *plan, mrc_profile_t *p,
                              int ranks, double sync_us, double call_us,
                              const cal_probe_t *chain, double chain_us,
                              const cal_probe_t loops[2],
                              const double loops_us[2])
{
    mrc_status_t st = fit_latency(p, ranks, sync_us, call_us, chain, chain_us);
    if (strcmp(plan->transport, "shm") != 0 || !(loops_us[0] > 0) ||
        !(loops_us[1] > 0))
        return st;
    for (int round = 0; round < 8 && st == MRC_OK; round++) {
        int clamped = 0;
        st = cal_fit_probes(p, KNOB(send_us), 1e-3, 100, ranks, loops, loops_us,
                            2, &clamped);
        if (st == MRC_OK && clamped)
            p->send_us = 0;
        if (st == MRC_OK)
            st = fit_latency(p, ranks, sync_us, call_us, chain, chain_us);
    }
    return st;
}
