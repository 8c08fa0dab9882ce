"""Every collective, dtype and op of an mrc.Comm against numpy's
sequential reduction, in place and not: shared by the threads test
(test_comm.py) and the ranks under `mrc launch` (comm_rank.py).

Inputs are small integers (|x| <= 3, products of 3 ranks fit int8), so
that any order of reduction gives the same floats; expected results are
compared byte for byte."""

import numpy as np

import mrc

BF16 = "bfloat16"
DTYPES = [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64,
          np.float16, np.float32, np.float64, BF16]
COUNTS = [0, 1, 7, 1000]


def values(rank, n, dtype, seed):
    """Rank `rank`'s input: in [-3, 3] (signed, floats) or [0, 5]."""
    i = np.arange(n, dtype=np.int64)
    if dtype == BF16:
        v = (i * 7 + rank * 3 + seed) % 7 - 3
        return mrc.to_bfloat16(v.astype(np.float32))
    if np.dtype(dtype).kind == "u":
        return ((i * 5 + rank * 3 + seed) % 6).astype(dtype)
    return ((i * 7 + rank * 3 + seed) % 7 - 3).astype(dtype)


def expected(inputs, op, dtype):
    """The sequential reduction of the ranks' inputs, in the dtype."""
    nranks = len(inputs)
    if dtype == BF16:
        x = np.stack([mrc.from_bfloat16(a) for a in inputs])
        x = x.astype(np.float64)
    else:
        x = np.stack(inputs).astype(np.float64 if np.dtype(dtype).kind == "f"
                                    else np.int64)
    if op in ("sum", "avg"):
        r = x.sum(axis=0)
    elif op == "prod":
        r = x.prod(axis=0)
    elif op == "min":
        r = x.min(axis=0)
    else:
        r = x.max(axis=0)
    if dtype == BF16:
        r = r.astype(np.float32)
        if op == "avg":
            r = r / np.float32(nranks)
        return mrc.to_bfloat16(r)
    if op == "avg" and np.dtype(dtype).kind != "f":
        # the exact mean, rounded toward zero as C divides
        r = np.where(r >= 0, r // nranks, -((-r) // nranks))
        return r.astype(dtype)
    r = r.astype(dtype)
    if op == "avg":
        r = r / np.array(nranks, dtype=dtype)
    return r.astype(dtype)


def _same(got, want):
    return (got is not None and got.dtype == want.dtype and
            got.shape == want.shape and got.tobytes() == want.tobytes())


def run_cases(comm, seed=0):
    """Runs every case on `comm` (every rank of the group calls this with
    the same seed); returns (cases, wrong, failures)."""
    r, n = comm.rank, comm.size
    cases = wrong = 0
    failures = []

    def check(what, got, want):
        nonlocal cases, wrong
        cases += 1
        if not _same(got, want):
            wrong += 1
            if len(failures) < 5:
                failures.append("%s: got %r want %r" % (what, got, want))

    for di, dt in enumerate(DTYPES):
        kw = {"dtype": BF16} if dt == BF16 else {}
        name = dt if dt == BF16 else np.dtype(dt).name
        for count in COUNTS:
            s = seed + di + count
            ins = [values(q, count, dt, s) for q in range(n)]
            blocks = [values(q, count * n, dt, s) for q in range(n)]
            for op in ("sum", "prod", "min", "max", "avg"):
                what = "%s %s count %d" % (name, op, count)
                want = expected(ins, op, dt)
                x = ins[r].copy()
                check("allreduce " + what,
                      comm.allreduce(x, op=op, **kw), want)
                check("allreduce leaves its input " + what, x, ins[r])
                check("allreduce in place " + what,
                      comm.allreduce(x, x, op=op, **kw), want)
                check("allreduce in place " + what, x, want)
                wantb = expected(blocks, op, dt)[r * count:(r + 1) * count]
                x = blocks[r].copy()
                check("reduce_scatter " + what,
                      comm.reduce_scatter(x, op=op, **kw), wantb)
                mine = x[r * count:(r + 1) * count]
                check("reduce_scatter in place " + what,
                      comm.reduce_scatter(x, mine, op=op, **kw), wantb)
                root = (count + len(op)) % n
                x = ins[r].copy()
                got = comm.reduce(x, op=op, root=root, **kw)
                check("reduce " + what, got if r == root else want, want)
                got = comm.reduce(x, x, op=op, root=root, **kw)
                check("reduce in place " + what, got if r == root else want,
                      want)
            what = "%s count %d" % (name, count)
            want = np.concatenate(ins) if count else ins[0][:0]
            check("allgather " + what, comm.allgather(ins[r], **kw), want)
            buf = np.zeros(count * n, dtype=ins[0].dtype)
            buf[r * count:(r + 1) * count] = ins[r]
            check("allgather in place " + what,
                  comm.allgather(buf[r * count:(r + 1) * count], buf, **kw),
                  want)
            root = count % n
            x = ins[r].copy()
            check("broadcast in place " + what,
                  comm.broadcast(x, root=root, **kw), ins[root])
            check("broadcast " + what,
                  comm.broadcast(ins[r], root=root,
                                 recv=np.zeros_like(ins[r]), **kw), ins[root])
    return cases, wrong, failures
