#!/usr/bin/env python3
"""Scores the selector's picks against measured times of every family.

    usage: bench/selector_regret.py [--all] [--profile FILE] BUILD|MRC DIR...

BUILD is a build directory (or MRC the mrc program itself); DIR holds
bench/family_sweep.sh's outputs (P.COLLECTIVE.FAMILY.ROUND.txt).
For each number of ranks, collective and size where two families or more
ran, the family the model puts first (BUILD/tools/mrc/mrc explain ring:P
--transport shm, as the runtime selector on one host, among the families
measured) is timed by its own median over the rounds and compared with
the fastest: regret = its time / the fastest's. Prints the cells whose
pick is more than 5% behind (--all: every cell), then per ranks and
collective the cells within 5% and the geometric mean of the regret and
of the pick's time over Open MPI's, and the same over all cells.
--profile: the model is the simulator's with that host profile (as the
drop-in library's selector with MRC_PROFILE set), not the CPU model's
constants.

Sizes are mpi-collectives': a rank's vector (allreduce, reduce,
broadcast), the whole vector (reduce-scatter: explain's block is a P-th
of it), what each rank gives (allgather). Exit: 0 once scored, 2 for bad
usage or no measurements.
"""
import glob
import math
import os
import statistics
import subprocess
import sys

FAMILIES = ("direct1", "direct2", "rings", "tree")
EXPLAIN_NAME = {"bcast": "broadcast"}
BEHIND = 1.05


def load(dirs):
    """{(P, collective, bytes): {family: median us}} from the sweep files."""
    runs = {}
    for d in dirs:
        for path in glob.glob(os.path.join(d, "*.*.*.*.txt")):
            parts = os.path.basename(path).split(".")
            if len(parts) != 5 or not parts[0].isdigit():
                continue
            p, coll, fam = int(parts[0]), parts[1], parts[2]
            with open(path, errors="replace") as f:
                for line in f:
                    x = line.split()
                    if len(x) == 4 and x[1].isdigit() and x[3] == "ok":
                        key = (p, coll, int(x[1]))
                        runs.setdefault(key, {}).setdefault(fam, []).append(
                            float(x[2]))
    return {k: {f: statistics.median(v) for f, v in fams.items()}
            for k, fams in runs.items()}


def predicted(mrc, p, coll, size, profile=None):
    """{family: us} from mrc explain, or {} for a size it cannot take."""
    per = size // p if coll == "reduce_scatter" else size
    if per < 4:
        return {}
    out = subprocess.run(
        [mrc, "explain", "ring:%d" % p, "--transport", "shm", "--collective",
         EXPLAIN_NAME.get(coll, coll), "--size", str(per),
         # the sweep ran under the drop-in library: MPI's completion
         "--completion", "local"] + (["--profile", profile] if profile else []),
        capture_output=True, text=True).stdout
    times = {}
    for line in out.splitlines():
        x = line.split()
        if len(x) >= 2 and x[0] in FAMILIES:
            try:
                times[x[0]] = float(x[1])
            except ValueError:
                pass
    return times


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


def main(argv):
    show_all = "--all" in argv
    args = [a for a in argv if a != "--all"]
    profile = None
    if "--profile" in args:
        at = args.index("--profile")
        if at + 1 >= len(args):
            print("selector_regret.py: --profile needs a file", file=sys.stderr)
            return 2
        profile = args[at + 1]
        del args[at:at + 2]
    if len(args) < 2:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    mrc = args[0]
    if os.path.isdir(mrc):
        mrc = os.path.join(mrc, "tools", "mrc", "mrc")
    if not os.access(mrc, os.X_OK):
        print("selector_regret.py: no %s (build it first)" % mrc,
              file=sys.stderr)
        return 2
    meas = load(args[1:])
    groups = {}
    print("| ranks | collective | bytes | picked | us | fastest | us | "
          "regret |")
    print("| ---: | --- | ---: | --- | ---: | --- | ---: | ---: |")
    for (p, coll, size), times in sorted(meas.items()):
        fams = {f: t for f, t in times.items() if f in FAMILIES}
        if len(fams) < 2:
            continue
        model = {f: t for f, t in predicted(mrc, p, coll, size,
                                            profile).items()
                 if f in fams}
        if not model:
            continue
        pick = min(model, key=model.get)
        best = min(fams, key=fams.get)
        regret = fams[pick] / fams[best]
        g = groups.setdefault((p, coll), {"regret": [], "ompi": []})
        g["regret"].append(regret)
        if "ompi" in times and times["ompi"] > 0:
            g["ompi"].append(fams[pick] / times["ompi"])
        if show_all or regret > BEHIND:
            print("| %d | %s | %d | %s | %.2f | %s | %.2f | %.2f |"
                  % (p, coll, size, pick, fams[pick], best, fams[best],
                     regret))
    if not groups:
        print("selector_regret.py: no cell with two families measured",
              file=sys.stderr)
        return 2
    print()
    print("| ranks | collective | within %.2fx | regret (geomean) | "
          "picked / Open MPI (geomean) |" % BEHIND)
    print("| ---: | --- | ---: | ---: | ---: |")
    every, every_ompi = [], []
    for (p, coll), g in sorted(groups.items()):
        ok = sum(r <= BEHIND for r in g["regret"])
        print("| %d | %s | %d of %d | %.3f | %.3f |"
              % (p, coll, ok, len(g["regret"]), geomean(g["regret"]),
                 geomean(g["ompi"])))
        every += g["regret"]
        every_ompi += g["ompi"]
    ok = sum(r <= BEHIND for r in every)
    print("| all | | %d of %d | %.3f | %.3f |"
          % (ok, len(every), geomean(every), geomean(every_ompi)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
