"""One rank under mpirun: mrc.Comm.from_mpi on mpi4py's world and on a
split of it, every collective, dtype and op against numpy
(collectives.py); prints "rank R of N: C cases, W wrong"."""

import os
import sys

from mpi4py import MPI

import mrc
from collectives import run_cases


def main():
    world = MPI.COMM_WORLD
    cases = wrong = 0
    with mrc.Comm.from_mpi(world, timeout_s=60) as comm:
        assert (comm.rank, comm.size) == (world.rank, world.size)
        c, w, failures = run_cases(comm)
        cases, wrong = cases + c, wrong + w
    # a split, left open: closed at exit, before MPI_Finalize
    half = world.Split(world.rank % 2, world.rank)
    if half.size > 1:
        comm = mrc.Comm.from_mpi(half)
        c, w, more = run_cases(comm, seed=1)
        cases, wrong, failures = cases + c, wrong + w, failures + more
    for f in failures:
        os.write(2, ("rank %d: %s\n" % (world.rank, f)).encode())
    os.write(1, ("rank %d of %d: %d cases, %d wrong\n"
                 % (world.rank, world.size, cases, wrong)).encode())
    return 1 if wrong or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
