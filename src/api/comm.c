/*
 * The collective entry points: each call is checked (its arguments, the
 * communicator's state), finds the program and plan for its shape
 * (comm_plans.c), and runs it; a call with the last one's arguments goes
 * straight to its plan.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/comm_state.h"
#include "reduce/reduce.h"
#include "transport/transport.h"

static int overlap(const void *a, size_t an, const void *b, size_t bn)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return an && bn && x < y + bn && y < x + an;
}

static mrc_status_t avg_widened(const char *fn, mrc_collective_t coll,
                                const void *sendbuf, void *recvbuf,
                                size_t count, mrc_dtype_t dtype, int root,
                                int need_recv, mrc_comm_t *c);

/* MRC_DEBUG=TRACE: every call names the program it runs. */
static void log_call(const mrc_comm_t *c, const char *fn,
                     const mrc_program_t *p, size_t count, mrc_dtype_t dtype,
                     mrc_op_t op, int in_place)
{
    if (mrc__log_level() < MRC__LOG_TRACE)
        return;
    mrc_program_info_t info;
    if (mrc_program_info(p, &info) != MRC_OK)
        return;
    mrc__log(MRC__LOG_TRACE, c->rank,
             "%s call %llu count %zu %s %s%s: program %s (%s, %d "
             "instructions)",
             fn, (unsigned long long)c->seq, count, mrc_dtype_name(dtype),
             mrc_op_name(op), in_place ? " in place" : "",
             mrc_algo_name(info.config.algo),
             mrc_collective_name(info.config.collective),
             info.code_instructions);
}

/* Runs plan x (of program p) for a call that passed the checks. */
static mrc_status_t run_plan(const char *fn, const mrc__call_t *as,
                             mrc_comm_t *c, const mrc_program_t *p,
                             mrc__exec_t *x, const void *sendbuf, void *recvbuf,
                             size_t count, mrc_dtype_t dtype, mrc_op_t op,
                             int in_place)
{
    log_call(c, fn, p, count, dtype, op, in_place);
    mrc_status_t st = mrc__exec_run(x, &c->transport, as, c->seq++, sendbuf,
                                    recvbuf, c->scratch, c->timeout_s);
    /* Whatever failed once the run began (a peer's data may be half
     * taken, its sends unanswered): the ranks are out of step. */
    if (st != MRC_OK) {
        c->poisoned = st;
        mrc__error_prefix("%s (rank %d)", fn, c->rank);
    }
    return st;
}

/* Whether a call has the last one's shape (all but its buffers). */
static int same_shape(const mrc_comm_t *c, mrc_collective_t coll, size_t count,
                      mrc_dtype_t dtype, mrc_op_t op, int root)
{
    return c->memo.valid && c->memo.count == count && c->memo.coll == coll &&
           c->memo.dtype == dtype && c->memo.op == op && c->memo.root == root;
}

/* Whether a call has the arguments of the last one run (c->memo). */
static int same_call(const mrc_comm_t *c, mrc_collective_t coll,
                     const void *sendbuf, const void *recvbuf, size_t count,
                     mrc_dtype_t dtype, mrc_op_t op, int root)
{
    return same_shape(c, coll, count, dtype, op, root) &&
           c->memo.sendbuf == sendbuf && c->memo.recvbuf == recvbuf;
}

/* The shape of a call, as the caches know programs. */
static program_key_t key_of(const mrc_comm_t *c, mrc_collective_t coll,
                            size_t count, mrc_dtype_t dtype, mrc_op_t op,
                            int root)
{
    program_key_t key;
    memset(&key, 0, sizeof key); /* compared with memcmp, padding too */
    key.collective = coll;
    key.count = count;
    key.dtype = dtype;
    key.op = coll == MRC_ALLGATHER || coll == MRC_BROADCAST ? MRC_SUM : op;
    key.root = coll == MRC_REDUCE || coll == MRC_BROADCAST ? root : 0;
    key.group = c->shared->coupled ? -1 : c->group;
    key.algo = c->shared->algo;
    return key;
}

/* The communicator's scratch, grown to xbytes (the memory refused up
 * front if it would not fit). */
static mrc_status_t grow_scratch(const char *fn, mrc_comm_t *c, size_t xbytes)
{
    if (xbytes <= c->scratch_bytes)
        return MRC_OK;
    int here = c->shared->hub ? c->shared->nranks : 1;
    mrc_status_t st = mrc__check_memory(
        mrc__sat_mul_add(xbytes, (uint64_t)here, 0),
        here > 1 ? "scratch (every rank of this process)" : "scratch");
    if (st != MRC_OK) {
        mrc__error_prefix("%s (rank %d)", fn, c->rank);
        return st;
    }
    void *q = realloc(c->scratch, xbytes);
    if (!q)
        return mrc__error(MRC_ERR_NO_MEMORY,
                          "%s: out of memory for %zu bytes of scratch", fn,
                          xbytes);
    c->scratch = q;
    c->scratch_bytes = xbytes;
    return MRC_OK;
}

/* The buffers of a call checked against its collective (NULL where one
 * is needed, overlapping without being the in-place form): *in_place set,
 * and *need_recv. */
static mrc_status_t check_buffers(const char *fn, const mrc_comm_t *c,
                                  mrc_collective_t coll, const void *sendbuf,
                                  void *recvbuf, size_t count, size_t esize,
                                  int root, int *in_place, int *need_recv)
{
    /* Buffer sizes in bytes, as the C API defines them. */
    size_t n = (size_t)c->size, sbytes = count * esize, rbytes = sbytes;
    if (coll == MRC_REDUCE_SCATTER)
        sbytes *= n;
    if (coll == MRC_ALLGATHER)
        rbytes *= n;
    int need_send = !(coll == MRC_BROADCAST && c->rank != root);
    *need_recv = !(coll == MRC_REDUCE && c->rank != root);
    if (need_send && !sendbuf)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: sendbuf is NULL with count %zu (rank %d)", fn,
                          count, c->rank);
    if (*need_recv && !recvbuf)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: recvbuf is NULL with count %zu (rank %d)", fn,
                          count, c->rank);
    *in_place = 0;
    if (!need_send || !*need_recv)
        return MRC_OK;
    const char *s = sendbuf;
    char *r = recvbuf;
    if (coll == MRC_REDUCE_SCATTER)
        *in_place = r == s + (size_t)c->rank * count * esize;
    else if (coll == MRC_ALLGATHER)
        *in_place = s == r + (size_t)c->rank * count * esize;
    else
        *in_place = s == r;
    if (!*in_place && overlap(sendbuf, sbytes, recvbuf, rbytes))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: sendbuf and recvbuf overlap but are not the "
                          "in-place form (rank %d)",
                          fn, c->rank);
    return MRC_OK;
}

/* The checks of a call whose arguments are not the last one's, and the
 * plan it runs: *x NULL when there is nothing to run (count 0) or the
 * call was run another way (integer avg). */
static mrc_status_t plan_for(const char *fn, mrc_collective_t coll,
                             const void *sendbuf, void *recvbuf, size_t count,
                             mrc_dtype_t dtype, mrc_op_t op, int root,
                             mrc_comm_t *c, const mrc_program_t **p,
                             mrc__exec_t **x, int *in_place)
{
    *x = NULL;
    *in_place = 0;
    c->memo.valid = 0;
    size_t esize = mrc_dtype_size(dtype);
    if (esize == 0)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: dtype %d is not a data type (rank %d)", fn,
                          (int)dtype, c->rank);
    if ((unsigned)op >= MRC_NUM_OPS)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: op %d is not an operator (rank %d)", fn, (int)op,
                          c->rank);
    int rooted = coll == MRC_REDUCE || coll == MRC_BROADCAST;
    if (rooted && (root < 0 || root >= c->size))
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: root %d out of range (the group has %d ranks; "
                          "rank %d)",
                          fn, root, c->size, c->rank);
    if (count == 0)
        return MRC_OK;
    if (count > SIZE_MAX / esize / (size_t)c->size)
        return mrc__error(MRC_ERR_INVALID_ARG, "%s: count %zu is too large", fn,
                          count);
    int need_recv;
    mrc_status_t st = check_buffers(fn, c, coll, sendbuf, recvbuf, count, esize,
                                    root, in_place, &need_recv);
    if (st != MRC_OK)
        return st;
    /* avg on integers sums wider words so that no partial sum wraps. */
    if (op == MRC_AVG &&
        (coll == MRC_ALLREDUCE || coll == MRC_REDUCE_SCATTER ||
         coll == MRC_REDUCE) &&
        mrc__avg_words(dtype) != 0)
        return avg_widened(fn, coll, sendbuf, recvbuf, count, dtype, root,
                           need_recv, c);
    program_key_t key = key_of(c, coll, count, dtype, op, root);
    size_t xbytes = 0;
    mrc__exec_t *found = NULL;
    st = mrc__comm_last_plan(c, &key, *in_place, p, &found, &xbytes);
    if (st == MRC_INPROGRESS)
        st = mrc__comm_find_plan(fn, c, &key, *in_place, p, &found, &xbytes);
    if (st != MRC_OK)
        return st;
    if ((st = grow_scratch(fn, c, xbytes)) != MRC_OK)
        return st;
    if (c->last_plan && &c->last_plan->exec == found) {
        c->memo.valid = 1;
        c->memo.in_place = *in_place;
        c->memo.coll = coll;
        c->memo.dtype = dtype;
        c->memo.op = op;
        c->memo.root = root;
        c->memo.sendbuf = sendbuf;
        c->memo.recvbuf = recvbuf;
        c->memo.count = count;
    }
    *x = found;
    return MRC_OK;
}

/* The checks and the run shared by every collective. The ranks compare
 * `as` (NULL: this call) before any touches a peer's buffers. A call
 * with the last one's arguments, as a loop makes, goes straight to its
 * plan. */
static mrc_status_t collective_as(const char *fn, const mrc__call_t *as,
                                  mrc_collective_t coll, const void *sendbuf,
                                  void *recvbuf, size_t count,
                                  mrc_dtype_t dtype, mrc_op_t op, int root,
                                  mrc_comm_t *c)
{
    if (!c)
        return mrc__error(MRC_ERR_INVALID_ARG, "%s: comm is NULL", fn);
    if (c->poisoned != MRC_OK)
        return mrc__error(c->poisoned,
                          "%s (rank %d): an earlier call failed (%s); the "
                          "communicator cannot be used",
                          fn, c->rank, mrc_status_name(c->poisoned));
    const mrc_program_t *p;
    mrc__exec_t *x;
    int in_place = 0;
    int need_recv = 0;
    if (same_call(c, coll, sendbuf, recvbuf, count, dtype, op, root)) {
        p = c->last_plan->program;
        x = &c->last_plan->exec;
        in_place = c->memo.in_place;
    } else if (same_shape(c, coll, count, dtype, op, root) &&
               check_buffers(fn, c, coll, sendbuf, recvbuf, count,
                             mrc_dtype_size(dtype), root, &in_place,
                             &need_recv) == MRC_OK &&
               in_place == c->memo.in_place) {
        /* The last call's shape on other buffers (a loop over buffers):
         * its plan, once the buffers pass the checks (the root of a 128 B
         * reduce at 2 ranks over cold buffers: 1936 instructions a call
         * against 2056 looking the shape up again, callgrind). */
        p = c->last_plan->program;
        x = &c->last_plan->exec;
        c->memo.sendbuf = sendbuf;
        c->memo.recvbuf = recvbuf;
    } else {
        mrc_status_t st = plan_for(fn, coll, sendbuf, recvbuf, count, dtype, op,
                                   root, c, &p, &x, &in_place);
        if (st != MRC_OK || !x)
            return st;
    }
    return run_plan(fn, as, c, p, x, sendbuf, recvbuf, count, dtype, op,
                    in_place);
}

/* avg on integers (see mrc__avg_words): this rank's input widened to
 * 64-bit words, summed by the same collective, divided and narrowed into
 * recvbuf (which may be sendbuf: the input is read before anything is
 * written). The wide buffers live for the call only: integer avg is rare
 * and its words are 8 or 16 bytes a value however small the type. */
static mrc_status_t avg_widened(const char *fn, mrc_collective_t coll,
                                const void *sendbuf, void *recvbuf,
                                size_t count, mrc_dtype_t dtype, int root,
                                int need_recv, mrc_comm_t *c)
{
    int words = mrc__avg_words(dtype);
    if (words < 0)
        return mrc__error(MRC_ERR_UNSUPPORTED,
                          "%s: avg of %s needs 128-bit integers to be exact "
                          "and this build has none (rank %d); sum and divide "
                          "instead",
                          fn, mrc_dtype_name(dtype), c->rank);
    size_t in = coll == MRC_REDUCE_SCATTER ? count * (size_t)c->size : count;
    size_t per = (size_t)words * sizeof(uint64_t);
    if (in > SIZE_MAX / per)
        return mrc__error(MRC_ERR_INVALID_ARG,
                          "%s: count %zu is too large for avg of %s (rank "
                          "%d)",
                          fn, count, mrc_dtype_name(dtype), c->rank);
    mrc_status_t st = mrc__check_memory(
        mrc__sat_mul_add(in + (need_recv ? count : 0), per, 0), "avg words");
    if (st != MRC_OK)
        return st;
    void *wide_send = malloc(in * per);
    void *wide_recv = need_recv ? malloc(count * per) : NULL;
    if (!wide_send || (need_recv && !wide_recv)) {
        st = mrc__error(MRC_ERR_NO_MEMORY,
                        "%s: out of memory for %zu bytes of avg words (rank "
                        "%d)",
                        fn, (in + count) * per, c->rank);
        goto done;
    }
    mrc__avg_widen(wide_send, sendbuf, in, dtype);
    /* The peers compare the call asked for, not the sum it runs as (which
     * avg of int8 and of int32, or a sum of int64, would share). */
    mrc__call_t as = mrc__call_make(coll, count, dtype, MRC_AVG,
                                    coll == MRC_REDUCE ? root : 0);
    st = collective_as(fn, &as, coll, wide_send, wide_recv,
                       count * (size_t)words, mrc__avg_wide_dtype(dtype),
                       MRC_SUM, root, c);
    if (st == MRC_OK && need_recv)
        mrc__avg_narrow(recvbuf, wide_recv, count, dtype, c->size);
done:
    free(wide_send);
    free(wide_recv);
    return st;
}

static mrc_status_t collective(const char *fn, mrc_collective_t coll,
                               const void *sendbuf, void *recvbuf, size_t count,
                               mrc_dtype_t dtype, mrc_op_t op, int root,
                               mrc_comm_t *c)
{
    return collective_as(fn, NULL, coll, sendbuf, recvbuf, count, dtype, op,
                         root, c);
}

mrc_status_t mrc_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                           mrc_dtype_t dtype, mrc_op_t op, mrc_comm_t *comm)
{
    return collective("mrc_allreduce", MRC_ALLREDUCE, sendbuf, recvbuf, count,
                      dtype, op, 0, comm);
}

mrc_status_t mrc_reduce_scatter(const void *sendbuf, void *recvbuf,
                                size_t recvcount, mrc_dtype_t dtype,
                                mrc_op_t op, mrc_comm_t *comm)
{
    return collective("mrc_reduce_scatter", MRC_REDUCE_SCATTER, sendbuf,
                      recvbuf, recvcount, dtype, op, 0, comm);
}

mrc_status_t mrc_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                           mrc_dtype_t dtype, mrc_comm_t *comm)
{
    return collective("mrc_allgather", MRC_ALLGATHER, sendbuf, recvbuf,
                      sendcount, dtype, MRC_SUM, 0, comm);
}

mrc_status_t mrc_reduce(const void *sendbuf, void *recvbuf, size_t count,
                        mrc_dtype_t dtype, mrc_op_t op, int root,
                        mrc_comm_t *comm)
{
    return collective("mrc_reduce", MRC_REDUCE, sendbuf, recvbuf, count, dtype,
                      op, root, comm);
}

mrc_status_t mrc_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                           mrc_dtype_t dtype, int root, mrc_comm_t *comm)
{
    return collective("mrc_broadcast", MRC_BROADCAST, sendbuf, recvbuf, count,
                      dtype, MRC_SUM, root, comm);
}
