"""One rank under `mrc launch -n N -- python3 comm_rank.py MODE`:
  cases  every collective, dtype and op against numpy (collectives.py);
         prints "rank R of N: C cases, W wrong" and exits 1 if W > 0
  dies   rank 1 exits before its call; the others report the error
         their allreduce raises
  shared every collective on arrays from mrc.shared_array (the peers map
         them), past the size that goes through the kernel; prints
         "rank R of N: shared, W wrong"
"""

import os
import sys

import numpy as np

import mrc
from collectives import run_cases


def say(line):
    # one write a line, so that the ranks' lines do not interleave
    os.write(1, (line + "\n").encode())


def shared(comm):
    """Wrong elements of the collectives on shared arrays of 256K floats
    (small integers: exact in any order)."""
    r, n, k = comm.rank, comm.size, 1 << 18
    ins = [(np.arange(k) % 5 + q).astype(np.float32) for q in range(n)]
    wrong = 0
    a = mrc.shared_array(k)
    a[:] = ins[r]
    comm.allreduce(a, a)  # in place
    wrong += int((a != sum(ins)).sum())
    out = mrc.shared_array(k)
    comm.allreduce(ins[r] * 0 + a, out, op="max")
    wrong += int((out != sum(ins)).sum())
    big = mrc.shared_array(n * k)
    comm.allgather(ins[r], big)
    wrong += int((big != np.concatenate(ins)).sum())
    blk = mrc.shared_array(k)
    comm.reduce_scatter(big, blk)
    want = sum(ins[q] for q in range(n)) * 0 + n * ins[r]
    wrong += int((blk != want).sum())
    # 4 MiB: past direct2's window, where only buffers the peers map
    # make it the selector's choice (test_comm.py reads the log)
    big4 = mrc.shared_array(4 * k)
    big4[:] = np.arange(4 * k) % 3 + r
    comm.allreduce(big4, big4)
    wrong += int((big4 != n * (np.arange(4 * k) % 3) + sum(range(n))).sum())
    b = mrc.shared_array(k)
    if r == 0:
        b[:] = ins[0]
    comm.broadcast(b, root=0)
    wrong += int((b != ins[0]).sum())
    return wrong


def main(mode):
    with mrc.Comm.from_env(timeout_s=30,
                           shared_buffers=mode == "shared") as comm:
        r, n = comm.rank, comm.size
        if mode == "cases":
            cases, wrong, failures = run_cases(comm)
            for f in failures:
                say("rank %d: %s" % (r, f))
            say("rank %d of %d: %d cases, %d wrong" % (r, n, cases, wrong))
            return 1 if wrong or not cases else 0
        if mode == "shared":
            wrong = shared(comm)
            say("rank %d of %d: shared, %d wrong" % (r, n, wrong))
            return 1 if wrong else 0
        if mode == "dies":
            if r == 1:
                os._exit(3)
            try:
                comm.allreduce(np.ones(1 << 16, dtype=np.float32))
            except mrc.Error as e:
                say("rank %d: raised %s" % (r, e))
                return 0
            say("rank %d: no error" % r)
            return 1
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
