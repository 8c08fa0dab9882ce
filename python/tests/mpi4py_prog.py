"""An ordinary mpi4py program (no mrc in it): Allreduce,
Reduce_scatter_block, Allgather, Reduce and Bcast on numpy arrays, in
place and not, for MPI's predefined integer and float types and SUM,
PROD, MIN, MAX. Each rank checks every result against numpy's sequential
reduction and prints "rank R of N: C cases, W wrong"; rank 0 also prints
one digest of every result ("digest ..."), which must be the same whether
or not libmrc_mpi.so is preloaded. Inputs are small integers, so any
order of reduction gives the same floats."""

import hashlib
import os
import sys

import numpy as np
from mpi4py import MPI

DTYPES = [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64,
          np.float32, np.float64]
OPS = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}
COUNTS = [1, 1000, 100003]


def values(rank, n, dtype, seed):
    i = np.arange(n, dtype=np.int64)
    if np.dtype(dtype).kind == "u":
        return ((i * 5 + rank * 3 + seed) % 6).astype(dtype)
    return ((i * 7 + rank * 3 + seed) % 7 - 3).astype(dtype)


def reduced(inputs, op, dtype):
    x = np.stack(inputs).astype(np.float64 if np.dtype(dtype).kind == "f"
                                else np.int64)
    r = {"sum": x.sum, "prod": x.prod, "min": x.min, "max": x.max}[op](0)
    return r.astype(dtype)


def main():
    comm = MPI.COMM_WORLD
    r, n = comm.Get_rank(), comm.Get_size()
    digest = hashlib.sha256()
    cases = wrong = 0

    def check(what, got, want):
        nonlocal cases, wrong
        cases += 1
        digest.update(got.tobytes())
        if got.tobytes() != want.tobytes():
            wrong += 1
            os.write(2, ("rank %d: %s wrong\n" % (r, what)).encode())

    for di, dt in enumerate(DTYPES):
        for count in COUNTS:
            s = di + count
            ins = [values(q, count, dt, s) for q in range(n)]
            blocks = [values(q, count * n, dt, s) for q in range(n)]
            for name, op in OPS.items():
                what = "%s %s %d" % (np.dtype(dt).name, name, count)
                want = reduced(ins, name, dt)
                out = np.empty_like(ins[r])
                comm.Allreduce(ins[r], out, op=op)
                check("Allreduce " + what, out, want)
                x = ins[r].copy()
                comm.Allreduce(MPI.IN_PLACE, x, op=op)
                check("Allreduce in place " + what, x, want)
                wantb = reduced(blocks, name, dt)[r * count:(r + 1) * count]
                out = np.empty(count, dtype=dt)
                comm.Reduce_scatter_block(blocks[r], out, op=op)
                check("Reduce_scatter_block " + what, out, wantb)
                out = np.empty(count, dtype=dt)
                comm.Reduce_scatter(blocks[r], out, [count] * n, op=op)
                check("Reduce_scatter " + what, out, wantb)
                root = (count + di) % n
                out = np.empty_like(ins[r]) if r == root else None
                comm.Reduce(ins[r], out, op=op, root=root)
                if r == root:
                    check("Reduce " + what, out, want)
            what = "%s %d" % (np.dtype(dt).name, count)
            out = np.empty(count * n, dtype=dt)
            comm.Allgather(ins[r], out)
            check("Allgather " + what, out, np.concatenate(ins))
            root = count % n
            x = ins[r].copy()
            comm.Bcast(x, root=root)
            check("Bcast " + what, x, ins[root])
    # mpi4py's pickled objects: a user-defined op, which MPI itself does
    total = comm.allreduce({"rank": r}["rank"], op=MPI.SUM)
    check("allreduce of objects", np.array([total]),
          np.array([n * (n - 1) // 2]))
    # one write a line, so that the ranks' lines do not interleave
    line = "rank %d of %d: %d cases, %d wrong\n" % (r, n, cases, wrong)
    if r == 0:
        line = "digest %s\n" % digest.hexdigest() + line
    os.write(1, line.encode())
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
