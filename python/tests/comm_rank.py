"""One rank under `mrc launch -n N -- python3 comm_rank.py MODE`:
  cases  every collective, dtype and op against numpy (collectives.py);
         prints "rank R of N: C cases, W wrong" and exits 1 if W > 0
  dies   rank 1 exits before its call; the others report the error
         their allreduce raises."""

import os
import sys

import numpy as np

import mrc
from collectives import run_cases


def say(line):
    # one write a line, so that the ranks' lines do not interleave
    os.write(1, (line + "\n").encode())


def main(mode):
    with mrc.Comm.from_env(timeout_s=30) as comm:
        r, n = comm.rank, comm.size
        if mode == "cases":
            cases, wrong, failures = run_cases(comm)
            for f in failures:
                say("rank %d: %s" % (r, f))
            say("rank %d of %d: %d cases, %d wrong" % (r, n, cases, wrong))
            return 1 if wrong or not cases else 0
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
