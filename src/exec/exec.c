/* The executor's call (see exec.h): begin, the run of a straight plan
 * or of the general loop, end; what the run loops do while nothing
 * moves, the port masks handed over, and the timeout's message. */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "exec_internal.h"

/* At an op of `step`: if it starts a later phase of the port mask than
 * the last handed over, hands the transport the ports this node leaves
 * idle in it (and traces them). Chains run ahead of each other, so the
 * phase is the latest any chain has reached. */
void mrc__exec_hand_ports(mrc__exec_t *x, const mrc__transport_t *t, int step)
{
    const mrc_program_t *p = x->program;
    if (step < x->ports_until)
        return;
    int trace = mrc__log_level() >= MRC__LOG_TRACE;
    /* Nobody to tell (the CPU transports, no trace): no mask needed. */
    if ((!t->ops->ports && !trace) || mrc__port_mask_ready(p) != MRC_OK) {
        x->ports_until = INT32_MAX;
        return;
    }
    int ph = mrc__port_phase_of(p, step);
    if (ph < 0) {
        x->ports_until = INT32_MAX;
        return;
    }
    const mrc__port_phase_t *f = &p->port_phases[ph];
    x->ports_until = f->first_step + f->num_steps;
    int u = x->plan.node, n = p->nodes[u].num_ports;
    mrc__port_idle(p, ph, u, x->idle_ports);
    if (t->ops->ports)
        t->ops->ports(t->ctx, x->idle_ports, n);
    if (trace) {
        char list[256];
        size_t at = 0;
        list[0] = 0;
        for (int q = 0; q < n && at + 16 < sizeof list; q++)
            if (x->idle_ports[q])
                at += (size_t)snprintf(list + at, sizeof list - at, "%s%d",
                                       at ? ", " : "", q);
        mrc__trace(u, "phase %d (steps %d-%d): idle ports {%s}", ph,
                   f->first_step, f->first_step + f->num_steps - 1, list);
    }
}

/* What the node waits for, for the timeout message. */
static mrc_status_t timed_out(const mrc__exec_t *x, double timeout_s)
{
    const mrc__plan_t *pl = &x->plan;
    for (int ch = 0; ch < pl->num_chains; ch++) {
        int i = pl->chain_off[ch] + x->cursor[ch];
        if (i < pl->chain_off[ch + 1]) {
            const mrc__op_t *op = &pl->ops[i];
            if (op->kind == MRC__FWD)
                return mrc__error(MRC_ERR_TIMEOUT,
                                  "node %d timed out after %g s at stream "
                                  "%d, step %d, relaying from node %d to "
                                  "node %d",
                                  pl->node, timeout_s, op->stream, op->step,
                                  op->from, op->peer);
            return mrc__error(MRC_ERR_TIMEOUT,
                              "node %d timed out after %g s at stream %d, "
                              "step %d, %s node %d",
                              pl->node, timeout_s, op->stream, op->step,
                              op->kind == MRC__SEND      ? "sending to"
                              : op->kind == MRC__WAIT    ? "waiting for a "
                                                           "flag of"
                              : op->kind == MRC__BARRIER ? "in a barrier "
                                                           "with"
                                                         : "waiting for",
                              op->peer);
        }
    }
    for (size_t k = 0; k < x->num_sends; k++) {
        const mrc__op_t *op = &pl->ops[x->send_list[k]];
        if (!x->xfers[x->send_list[k]].done)
            return mrc__error(MRC_ERR_TIMEOUT,
                              "node %d timed out after %g s: node %d has not "
                              "taken its data of stream %d, step %d",
                              pl->node, timeout_s, op->peer, op->stream,
                              op->step);
    }
    return mrc__error(MRC_ERR_TIMEOUT, "node %d timed out after %g s", pl->node,
                      timeout_s);
}

/* Nothing moved in this look: what the run loops do then. Lets the other
 * ranks run (and MPI progress, past the spin of `spin` looks: a probe
 * costs a microsecond, more than a small call's wait), and watches the
 * clock: MRC_ERR_TIMEOUT once timeout_s have passed without progress. */
mrc_status_t mrc__exec_stalled(mrc__exec_t *x, const mrc__transport_t *t,
                               size_t spin, size_t *idle, double *start,
                               double timeout_s)
{
    if (t->ops->idle && *idle >= spin && *idle % 16 == 15)
        t->ops->idle(t->ctx);
    if (++*idle % 64 == 0) {
        double now = mrc__exec_now();
        if (*start == 0)
            *start = now;
        else if (timeout_s > 0 && now - *start > timeout_s)
            return timed_out(x, timeout_s);
    }
    /* A peer a few hundred nanoseconds behind (a small call's flag) is
     * waited for on the spot; a system call per look would cost more
     * than the wait. */
    if (*idle < spin)
        mrc__exec_relax();
    else
        sched_yield();
    return MRC_OK;
}

mrc_status_t mrc__exec_agree(mrc__exec_t *x, const mrc__transport_t *t,
                             size_t spin, size_t *idle, double *start,
                             double timeout_s)
{
    mrc_status_t st = MRC_OK;
    if (!x->agree || !t->ops->agree)
        return MRC_OK;
    while ((st = t->ops->agree(t->ctx, x->members, x->group_size)) ==
           MRC_INPROGRESS) {
        st = mrc__exec_stalled(x, t, spin, idle, start, timeout_s);
        if (st != MRC_OK)
            return st;
    }
    return st;
}

/* A small call's buffers, their lines asked for before the call waits on
 * anyone, when they are not the last call's (those are in the caches,
 * and a peer may be reading them): the output's for writing (a new
 * line's read for ownership), the input's for reading. */
static void warm_buffers(mrc__exec_t *x, const void *sendbuf, void *recvbuf)
{
    if (recvbuf != x->warm_last[1])
        for (size_t at = 0; at < x->warm_recv; at += 64)
            __builtin_prefetch((char *)recvbuf + at, 1);
    if (sendbuf != x->warm_last[0])
        for (size_t at = 0; at < x->warm_send; at += 64)
            __builtin_prefetch((const char *)sendbuf + at, 0);
    x->warm_last[0] = sendbuf;
    x->warm_last[1] = recvbuf;
}

static mrc_status_t run(mrc__exec_t *x, const mrc__transport_t *t,
                        const mrc__call_t *as, uint64_t seq,
                        const void *sendbuf, void *recvbuf, void *scratch,
                        double timeout_s)
{
    const mrc__plan_t *pl = &x->plan;
    warm_buffers(x, sendbuf, recvbuf);
    x->cursor[0] = 0;
    /* Nobody to tell the ports (the CPU transports, no trace): no mask
     * is handed over in this call. */
    x->ports_until =
        t->ops->ports || mrc__log_level() >= MRC__LOG_TRACE ? 0 : INT32_MAX;
    if (!x->straight) { /* the chains' bookkeeping, which a straight run
                            has not (it clears its transfers itself) */
        memset(x->xfers, 0, (size_t)pl->num_ops * sizeof *x->xfers);
        if (x->num_fwds)
            memset(x->fwd_sends, 0, x->num_fwds * sizeof *x->fwd_sends);
        memset(x->cursor, 0, (size_t)pl->num_chains * sizeof *x->cursor);
        memset(x->complete, 0, (size_t)pl->num_chains);
        memset(x->first_open, 0,
               (size_t)x->num_stream_ids * sizeof *x->first_open);
        for (int i = 0; i < x->num_slots; i++)
            x->slot_user[i] = -1;
    }
    /* The family too: ranks that chose different programs for one call
     * ($MRC_ALGO on some ranks only) disagree, and fail as such. */
    mrc__call_t call = as ? mrc__call_with_family(*as, x->program->cfg.algo,
                                                  x->program->cfg.completion)
                          : x->call;
    mrc_status_t st = t->ops->begin(t->ctx, seq, &call, x->recvs, x->num_recvs);
    if (st != MRC_OK)
        return st;
    if (x->memory) {
        st = mrc__exec_publish(x, t, sendbuf, recvbuf, scratch, timeout_s);
        if (st != MRC_OK)
            return st;
    }
    if (x->straight)
        return mrc__exec_run_straight(x, t, sendbuf, recvbuf, scratch,
                                      timeout_s);
    return mrc__exec_run_chains(x, t, sendbuf, recvbuf, scratch, timeout_s);
}

mrc_status_t mrc__exec_run(mrc__exec_t *x, const mrc__transport_t *t,
                           const mrc__call_t *call, uint64_t seq,
                           const void *sendbuf, void *recvbuf, void *scratch,
                           double timeout_s)
{
    mrc_status_t st =
        run(x, t, call, seq, sendbuf, recvbuf, scratch, timeout_s);
    /* A peer may still be reading this rank's buffers, which the caller
     * is free to release once we return. */
    if (st != MRC_OK && t->ops->cancel)
        t->ops->cancel(t->ctx, st);
    return st;
}
