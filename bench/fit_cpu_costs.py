#!/usr/bin/env python3
"""Fits the selector's shared-memory constants to measured families.

    usage: bench/fit_cpu_costs.py [--rounds N] BUILD DIR [DIR...]

DIR holds bench/family_sweep.sh's outputs (every family timed under the
drop-in library). A coordinate search over the figures of the shm entry
of src/sim/cpu_model.c: each figure in turn is scaled by 1/4 to 4, the
mrc program is rebuilt (BUILD is the build directory) and
bench/selector_regret.py scores the selector's picks on every DIR; a
change is kept when more cells pick a family within 5% of the fastest,
or as many with a smaller geometric mean of the regret. Rounds go on
until one changes nothing (at most --rounds, default 3).

Prints each kept change and every round's figures, writes the best
figures as the C initializer to stdout at the end, and leaves
src/sim/cpu_model.c as it found it (rebuilt): copy the figures in by
hand, with the sweep they were fitted to in the comment. Exit: 0 once
searched, 2 for bad usage.
"""
import json
import math
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src", "sim", "cpu_model.c")
REGRET = os.path.join(ROOT, "bench", "selector_regret.py")
SCALARS = ("sync_us", "flag_sync_us", "op_us", "kernel_gbps",
           "oversub_recv_us", "oversub_recv_gbps")
TIERED = ("copy_gbps", "reduce_gbps")
FACTORS = (0.25, 0.5, 0.7, 1.4, 2, 4)


def shm_block(text):
    """(start, end) of the shm entry's initializer in cpu_model.c."""
    start = text.index("[MRC__SIM_TRANSPORT_SHM] = {")
    depth, at = 0, text.index("{", start)
    while True:
        depth += {"{": 1, "}": -1}.get(text[at], 0)
        if depth == 0:
            return start, at
        at += 1


def parse(block):
    c = {k: float(re.search(r"\.%s = ([0-9.e+-]+)" % k, block).group(1))
         for k in SCALARS}
    for k in TIERED:
        inner = re.search(r"\.%s = \{([^}]*)\}" % k, block).group(1)
        c[k] = [float(v) for v in inner.split(",")]
    return c


def render(block, c):
    for k in SCALARS:
        block = re.sub(r"\.%s = [0-9.e+-]+" % k, ".%s = %.4g" % (k, c[k]),
                       block)
    for k in TIERED:
        block = re.sub(r"\.%s = \{[^}]*\}" % k,
                       ".%s = {%s}" % (k, ", ".join("%.4g" % v for v in c[k])),
                       block)
    return block


def score(build, dirs):
    """(cells within 5%, geometric mean regret) over every DIR."""
    within = cells = 0
    logsum = 0.0
    for d in dirs:
        out = subprocess.run([sys.executable, REGRET, build, d],
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            x = [t.strip() for t in line.split("|")]
            m = re.match(r"(\d+) of (\d+)$", x[3]) if len(x) == 7 else None
            if m and x[1] == "all":
                n = int(m.group(2))
                within += int(m.group(1))
                cells += n
                logsum += math.log(float(x[4])) * n
    return within, math.exp(logsum / cells) if cells else math.inf


def main(argv):
    rounds = 3
    if len(argv) >= 2 and argv[0] == "--rounds":
        rounds, argv = int(argv[1]), argv[2:]
    if len(argv) < 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    build, dirs = argv[0], argv[1:]
    text = open(SRC).read()
    start, end = shm_block(text)

    def evaluate(c):
        with open(SRC, "w") as f:
            f.write(text[:start] + render(text[start:end], c) + text[end:])
        subprocess.run(["make", "-C", build, "mrc_cli"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return score(build, dirs)

    cur = parse(text[start:end])
    try:
        best = evaluate(cur)
        print("start", best, json.dumps(cur), flush=True)
        keys = [(k, None) for k in SCALARS] + [(k, t) for k in TIERED
                                               for t in range(3)]
        for r in range(rounds):
            moved = False
            for k, t in keys:
                for f in FACTORS:
                    c = json.loads(json.dumps(cur))
                    if t is None:
                        c[k] *= f
                    else:
                        c[k][t] *= f
                    s = evaluate(c)
                    if s[0] > best[0] or (s[0] == best[0] and
                                          s[1] < best[1] - 1e-4):
                        best, cur, moved = s, c, True
                        print("kept", k, t, f, best, flush=True)
            print("round", r, best, json.dumps(cur), flush=True)
            if not moved:
                break
    finally:
        with open(SRC, "w") as f:
            f.write(text)
        subprocess.run(["make", "-C", build, "mrc_cli"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(render(text[start:end], cur))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
