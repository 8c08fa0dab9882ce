#!/usr/bin/env python3
"""dist.all_reduce through mrc and through gloo, in the same run.

The same P processes hold two process groups, one of each backend
(dist.new_group), and time them in alternation: for each size, each round
times a few calls through mrc and then as many through gloo, so that both
see the same machine. The figures are medians over the rounds of the
slowest rank's time per call, in nccl-tests' columns (algbw = bytes / time;
busbw = algbw * 2(P-1)/P for allreduce), for both, and mrc's busbw over
gloo's. The result of one call per size and backend is checked (#wrong).

    PYTHONPATH=build/python python3 bench/torch_allreduce.py -n 2
    PYTHONPATH=build/python python3 bench/torch_allreduce.py -n 4 \\
        -b 1M -e 64M -f 4 [--shared-memory] [--mrc-only]

A benchmark, not a test: nothing here passes or fails on a time.
"""

import argparse
import datetime
import os
import statistics
import sys
import tempfile
import time

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size_arg(text):
    t = text.strip().upper().rstrip("B")
    unit = t[-1:] if t[-1:] in UNITS else ""
    try:
        v = int(t[:len(t) - len(unit)]) * UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a size (e.g. 8, 4K, "
                                         "64M)" % text)
    if v < 4:
        raise argparse.ArgumentTypeError("size '%s' is less than one "
                                         "float32" % text)
    return v


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", "--nprocs", type=int, default=2,
                   help="processes (default 2)")
    p.add_argument("-b", "--min-bytes", type=size_arg, default=8,
                   help="smallest size (default 8)")
    p.add_argument("-e", "--max-bytes", type=size_arg, default=64 << 20,
                   help="largest size (default 64M)")
    p.add_argument("-f", "--factor", type=int, default=4,
                   help="size multiplier between lines (default 4)")
    p.add_argument("-r", "--rounds", type=int, default=5,
                   help="alternations per size; the median is kept "
                        "(default 5)")
    p.add_argument("--bytes-per-round", type=size_arg, default=128 << 20,
                   help="calls per round: this over the size, 2 to 100 "
                        "(default 128M)")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--mrc-only", action="store_true",
                   help="time mrc alone (no gloo group, no alternation): "
                        "what mrc takes without gloo's calls between")
    p.add_argument("--shared-memory", action="store_true",
                   help="tensors of 1 MiB or more from mrc's shared memory "
                        "(mrc.torch.use_shared_memory; both backends run "
                        "on the same tensors)")
    a = p.parse_args(argv)
    if a.nprocs < 2:
        p.error("-n must be at least 2")
    if a.factor < 2:
        p.error("-f must be at least 2")
    if a.rounds < 1:
        p.error("-r must be at least 1")
    if a.min_bytes > a.max_bytes:
        p.error("-b is larger than -e")
    return a


def sizes(a):
    s, out = a.min_bytes, []
    while s <= a.max_bytes:
        out.append(s)
        s *= a.factor
    return out


def time_calls(dist, t, group, calls):
    """Seconds per call of this rank, from a barrier on."""
    dist.barrier(group=group)
    t0 = time.perf_counter()
    for _ in range(calls):
        dist.all_reduce(t, group=group)
    return (time.perf_counter() - t0) / calls


def wrong(dist, torch, count, group, p):
    """Elements of one all_reduce that differ from the exact sum."""
    rank = dist.get_rank()
    t = torch.full((count,), float(rank + 1))
    dist.all_reduce(t, group=group)
    return int((t != p * (p + 1) / 2).sum().item())


def rank_main(rank, a, store_path):
    import torch
    import torch.distributed as dist
    import mrc.torch  # noqa: F401  (registers the backend)

    torch.set_num_threads(1)  # the ranks share the host's cores
    if a.shared_memory:
        mrc.torch.use_shared_memory()
    timeout = datetime.timedelta(seconds=a.timeout)
    dist.init_process_group("gloo", init_method="file://" + store_path,
                            rank=rank, world_size=a.nprocs, timeout=timeout)
    groups = {"mrc": dist.new_group(backend="mrc", timeout=timeout)}
    if not a.mrc_only:
        groups["gloo"] = dist.new_group(backend="gloo", timeout=timeout)
    p = a.nprocs
    if rank == 0:
        print("# torch %s, dist.all_reduce float32 sum, %d processes, "
              "medians of %d rounds%s" % (torch.__version__, p, a.rounds,
                                          ", tensors in shared memory"
                                          if a.shared_memory else ""))
        print("#%46s   %-30s   %-30s" % ("", "mrc", "gloo"))
        cols = "%8s %8s %6s" % ("time", "algbw", "busbw")
        print("#%12s %12s %6s %6s   %s %6s   %s %6s   %7s"
              % ("size", "count", "type", "redop", cols, "#wrong", cols,
                 "#wrong", "busbw"))
        print("#%12s %12s %6s %6s   %8s %8s %6s %6s   %8s %8s %6s %6s   %7s"
              % ("(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)",
                 "", "(us)", "(GB/s)", "(GB/s)", "", "mrc/gloo"))
    for size in sizes(a):
        count = size // 4
        calls = max(2, min(100, a.bytes_per_round // size))
        t = torch.zeros(count)
        times = {name: [] for name in groups}
        for name in times:  # warm-up: connections, plans, pages
            time_calls(dist, t, groups[name], 2)
        for _ in range(a.rounds):
            for name in times:
                mine = torch.tensor([time_calls(dist, t, groups[name],
                                                calls)], dtype=torch.float64)
                dist.all_reduce(mine, op=dist.ReduceOp.MAX)
                times[name].append(mine.item())
        bad = {name: wrong(dist, torch, count, groups[name], p)
               for name in times}
        if rank == 0:
            line, busbw = [], {}
            for name in times:
                sec = statistics.median(times[name])
                algbw = count * 4 / sec / 1e9
                busbw[name] = algbw * 2 * (p - 1) / p
                line.append("%8.1f %8.3f %6.3f %6d" % (sec * 1e6, algbw,
                                                       busbw[name],
                                                       bad[name]))
            if a.mrc_only:
                line.append("%8s %8s %6s %6s" % ("-", "-", "-", "-"))
            ratio = ("%7.2f" % (busbw["mrc"] / busbw["gloo"])
                     if "gloo" in busbw else "%7s" % "-")
            print(" %12d %12d %6s %6s   %s   %s   %s"
                  % (count * 4, count, "float", "sum", line[0], line[1],
                     ratio), flush=True)
    dist.destroy_process_group()


def main(argv):
    a = parse_args(argv)
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(rank_main, args=(a, os.path.join(tmp, "store")),
                 nprocs=a.nprocs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
