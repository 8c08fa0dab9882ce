"""The ranks of test_torch.py: functions that torch.multiprocessing runs in
each process, reporting what they found through a queue (a rank cannot
assert for pytest; the test asserts on what every rank reported)."""

import datetime
import os
import time
import traceback

import torch
import torch.distributed as dist

import mrc.torch  # noqa: F401  (registers the backend)

DTYPES = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64]
OPS = {"SUM": dist.ReduceOp.SUM, "PRODUCT": dist.ReduceOp.PRODUCT,
       "MIN": dist.ReduceOp.MIN, "MAX": dist.ReduceOp.MAX,
       "AVG": dist.ReduceOp.AVG}
# Counts: none, one, fewer than the ranks, not divisible by them, and one
# that spans several of mrc's 256 KiB chunks.
COUNTS = [0, 1, 2, 7, 1000]
BIG = 100003


def init(rank, n, path, timeout_s=20):
    dist.init_process_group("mrc", init_method="file://" + path, rank=rank,
                            world_size=n,
                            timeout=datetime.timedelta(seconds=timeout_s))


def data(rank, count, dtype, salt=0):
    """Rank r's input: small integers (products of 3 ranks stay within
    int8, sums are exact in every float type), negative ones only in
    signed types."""
    i = torch.arange(count, dtype=torch.int64)
    v = (i * 7 + rank * 3 + salt) % 5
    if dtype != torch.uint8:
        v = v - 2
    return v.to(dtype)


def reduce_ref(inputs, op, n):
    """torch's own sequential reduction over the ranks' inputs, in the
    dtype (what mrc's kernels compute for these inputs)."""
    acc = inputs[0].clone()
    for x in inputs[1:]:
        if op == "SUM" or op == "AVG":
            acc = acc + x
        elif op == "PRODUCT":
            acc = acc * x
        elif op == "MIN":
            acc = torch.minimum(acc, x)
        else:
            acc = torch.maximum(acc, x)
    if op == "AVG":
        if acc.is_floating_point():
            acc = acc / n
        else:  # mrc: the exact mean, rounded toward zero
            acc = torch.div(acc.to(torch.int64), n,
                            rounding_mode="trunc").to(acc.dtype)
    return acc.to(inputs[0].dtype)


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


def checker(rank, bad):
    """check(what, got, want): notes in bad where got is not want."""
    def check(what, got, want):
        if not same(got, want):
            bad.append("rank %d: %s: got %s, want %s"
                       % (rank, what, got[:8].tolist(), want[:8].tolist()))
    return check


def sweep(rank, n, path, queue):
    """Every collective, dtype, op and count, against reduce_ref."""
    bad = []
    try:
        init(rank, n, path)
        root = n - 1
        check = checker(rank, bad)

        for dtype in DTYPES:
            for op in OPS:
                for count in COUNTS:
                    tag = "%s %s count %d" % (dtype, op, count)
                    ins = [data(r, count, dtype) for r in range(n)]
                    want = reduce_ref(ins, op, n)

                    t = ins[rank].clone()
                    dist.all_reduce(t, op=OPS[op])
                    check("all_reduce " + tag, t, want)

                    t = ins[rank].clone()
                    dist.reduce(t, dst=root, op=OPS[op])
                    check("reduce " + tag, t,
                          want if rank == root else ins[rank])

                    # reduce_scatter: rank r's block b is data(r, salt b).
                    blocks = [[data(r, count, dtype, salt=b)
                               for b in range(n)] for r in range(n)]
                    mine = reduce_ref([blocks[r][rank] for r in range(n)],
                                      op, n)
                    out = torch.full((count,), 9, dtype=dtype)
                    dist.reduce_scatter(out, blocks[rank], op=OPS[op])
                    check("reduce_scatter " + tag, out, mine)

                    out = torch.full((count,), 9, dtype=dtype)
                    dist._reduce_scatter_base(out, torch.cat(blocks[rank]),
                                              op=OPS[op])
                    check("_reduce_scatter_base " + tag, out, mine)

            for count in COUNTS:
                tag = "%s count %d" % (dtype, count)
                ins = [data(r, count, dtype) for r in range(n)]
                t = ins[rank].clone() if rank == 1 else torch.zeros(
                    count, dtype=dtype)
                dist.broadcast(t, src=1)
                check("broadcast " + tag, t, ins[1])

                outs = [torch.full((count,), 9, dtype=dtype)
                        for _ in range(n)]
                dist.all_gather(outs, ins[rank])
                for r in range(n):
                    check("all_gather block %d %s" % (r, tag), outs[r],
                          ins[r])

                out = torch.full((n * count,), 9, dtype=dtype)
                dist._all_gather_base(out, ins[rank])
                check("_all_gather_base " + tag, out, torch.cat(ins))

        # Past one pipelining chunk.
        ins = [data(r, BIG, torch.float32) for r in range(n)]
        t = ins[rank].clone()
        dist.all_reduce(t)
        check("all_reduce float32 count %d" % BIG, t,
              reduce_ref(ins, "SUM", n))

        # Non-contiguous tensors: copied in and the result copied back.
        base = [torch.arange(24, dtype=torch.int32).reshape(4, 6) + r
                for r in range(n)]
        t = base[rank].clone().t()
        dist.all_reduce(t)
        check("all_reduce transposed", t, reduce_ref(base, "SUM", n).t())
        whole = base[rank].clone()
        dist.all_reduce(whole[:, ::2], op=dist.ReduceOp.MAX)
        want = base[rank].clone()
        want[:, ::2] = reduce_ref([b[:, ::2] for b in base], "MAX", n)
        check("all_reduce strided slice", whole.reshape(-1),
              want.reshape(-1))

        # Async: several calls in flight, completed in order.
        ts = [data(rank, 50, torch.int64, salt=k) for k in range(4)]
        works = [dist.all_reduce(t, async_op=True) for t in ts]
        for w in works:
            w.wait()
            if not w.is_completed():
                bad.append("rank %d: work not completed after wait()" % rank)
        for k in range(4):
            check("async all_reduce %d" % k, ts[k],
                  reduce_ref([data(r, 50, torch.int64, salt=k)
                              for r in range(n)], "SUM", n))
        fut = dist.all_reduce(torch.ones(3), async_op=True).get_future()
        got = fut.wait()[0]
        check("future", got, torch.full((3,), float(n)))

        # Objects (pickled into uint8 tensors, sizes in int64 ones).
        objs = [None] * n
        dist.all_gather_object(objs, {"rank": rank, "s": "x" * rank})
        if objs != [{"rank": r, "s": "x" * r} for r in range(n)]:
            bad.append("rank %d: all_gather_object gave %s" % (rank, objs))

        # A subgroup of the first and the last rank: its own communicator,
        # ranks renumbered within it.
        sub = dist.new_group([0, n - 1], backend="mrc")
        if rank in (0, n - 1):
            t = torch.tensor([rank], dtype=torch.int64)
            dist.all_reduce(t, group=sub)
            check("subgroup all_reduce", t,
                  torch.tensor([n - 1], dtype=torch.int64))

        w = dist.barrier(async_op=True)
        w.wait()
        if not w.is_completed():
            bad.append("rank %d: barrier not completed" % rank)
        dist.destroy_process_group()
    except Exception:
        bad.append("rank %d: %s" % (rank, traceback.format_exc()))
    queue.put((rank, bad))


def shared_memory(rank, n, path, queue):
    """Tensors from mrc.torch.use_shared_memory (the peers map them): every
    collective past the rendezvous size, against reduce_ref; the tensors
    made after it are in shared memory, those before and the small ones
    not, and it can be turned off again."""
    bad = []
    try:
        before = torch.zeros(BIG)
        mrc.torch.use_shared_memory(min_bytes=4096)
        init(rank, n, path)
        root = n - 1
        check = checker(rank, bad)

        for dtype in [torch.int32, torch.bfloat16, torch.float32,
                      torch.float64]:
            for op in ["SUM", "MAX"]:
                tag = "%s %s count %d" % (dtype, op, BIG)
                ins = [data(r, BIG, dtype) for r in range(n)]
                want = reduce_ref(ins, op, n)
                t = ins[rank].clone()
                if not mrc.torch.in_shared_memory(t):
                    bad.append("rank %d: %s not in shared memory" % (rank,
                                                                     tag))
                dist.all_reduce(t, op=OPS[op])
                check("all_reduce " + tag, t, want)
                t = ins[rank].clone()
                dist.reduce(t, dst=root, op=OPS[op])
                check("reduce " + tag, t, want if rank == root else ins[rank])
                blocks = [torch.cat([data(r, BIG, dtype, salt=b)
                                     for b in range(n)]) for r in range(n)]
                mine = reduce_ref([blocks[r][rank * BIG:(rank + 1) * BIG]
                                   for r in range(n)], op, n)
                out = torch.full((BIG,), 9, dtype=dtype)
                dist._reduce_scatter_base(out, blocks[rank], op=OPS[op])
                check("_reduce_scatter_base " + tag, out, mine)
            out = torch.full((n * BIG,), 9, dtype=dtype)
            dist._all_gather_base(out, ins[rank])
            check("_all_gather_base %s" % dtype, out, torch.cat(ins))
            t = ins[rank].clone() if rank == 1 else torch.zeros(BIG,
                                                                dtype=dtype)
            dist.broadcast(t, src=1)
            check("broadcast %s" % dtype, t, ins[1])
        small = torch.ones(10)
        mrc.torch.use_shared_memory(False)
        after = torch.zeros(BIG)
        for name, t in [("made before", before), ("small", small),
                        ("made after turning it off", after)]:
            if mrc.torch.in_shared_memory(t):
                bad.append("rank %d: a tensor %s is in shared memory"
                           % (rank, name))
        dist.all_reduce(after)  # ordinary memory, read through the kernel
        check("all_reduce after", after, torch.zeros(BIG))
        dist.destroy_process_group()
    except Exception:
        bad.append("rank %d: %s" % (rank, traceback.format_exc()))
    queue.put((rank, bad))


def refusals(rank, n, path, queue):
    """What mrc does not do raises a RuntimeError naming it, on the
    caller, before any peer is touched (so the group stays usable)."""
    from mrc import _torch_ext
    found = {}
    try:
        init(rank, n, path)

        def refused(name, f):
            try:
                f()
                found[name] = None
            except (RuntimeError, ValueError) as e:
                found[name] = str(e)

        refused("bool", lambda: dist.all_reduce(
            torch.ones(3, dtype=torch.bool)))
        refused("int16", lambda: dist.all_reduce(
            torch.ones(3, dtype=torch.int16)))
        refused("sparse", lambda: dist.all_reduce(
            torch.eye(3).to_sparse()))
        refused("BAND", lambda: dist.all_reduce(
            torch.ones(3, dtype=torch.int32), op=dist.ReduceOp.BAND))
        refused("BXOR", lambda: dist.reduce_scatter(
            torch.ones(3, dtype=torch.int32),
            [torch.ones(3, dtype=torch.int32)] * n, op=dist.ReduceOp.BXOR))
        refused("meta", lambda: _torch_ext._check_tensor(
            torch.empty(3, device="meta")))
        refused("gather", lambda: dist.gather(
            torch.ones(3), [torch.ones(3)] * n if rank == 0 else None,
            dst=0))
        refused("all_gather sizes", lambda: dist.all_gather(
            [torch.ones(2)] * n, torch.ones(3)))
        refused("_all_gather_base size", lambda: dist._all_gather_base(
            torch.ones(3 * n + 1), torch.ones(3)))
        refused("broadcast root", lambda: dist.broadcast(
            torch.ones(3), src=n + 4))
        # The group still works after every refusal.
        t = torch.ones(4)
        dist.all_reduce(t)
        found["after"] = t.tolist()
        dist.destroy_process_group()
    except Exception:
        found["exception"] = traceback.format_exc()
    queue.put((rank, found))


def dead_peer(rank, n, path, timeout_s, how, queue):
    """Rank n-1 exits (how == "exit") or stays away (how == "absent")
    after joining; every other rank's next call must raise."""
    init(rank, n, path, timeout_s)
    t = torch.ones(1000)
    dist.all_reduce(t)
    if rank == n - 1:
        queue.put((rank, "left", 0.0))
        queue.close()
        queue.join_thread()
        if how == "absent":
            time.sleep(timeout_s + 3)  # past the others' timeout
        os._exit(0)
    start = time.monotonic()
    try:
        dist.all_reduce(t)
        queue.put((rank, None, time.monotonic() - start))
    except RuntimeError as e:
        queue.put((rank, str(e), time.monotonic() - start))
    queue.close()
    queue.join_thread()  # flushed before os._exit, which skips that
    os._exit(0)  # the group cannot be torn down in order any more


def ddp_dead_peer(rank, n, path, timeout_s, queue):
    """DDP training in which rank n-1 is killed (SIGKILL) at step 3; every
    survivor's training must raise."""
    import signal
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.set_num_threads(1)
    init(rank, n, path, timeout_s)
    torch.manual_seed(0)
    ddp = DDP(torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(),
                                  torch.nn.Linear(32, 10)))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    start = None
    try:
        for step in range(50):
            if step == 3:
                if rank == n - 1:
                    queue.put((rank, "killed", 0.0))
                    queue.close()
                    queue.join_thread()
                    os.kill(os.getpid(), signal.SIGKILL)
                start = time.monotonic()
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(
                ddp(torch.randn(16, 64)), torch.randint(0, 10, (16,)))
            loss.backward()
            opt.step()
        queue.put((rank, None, time.monotonic() - start))
    except RuntimeError as e:
        queue.put((rank, str(e), time.monotonic() - start))
    queue.close()
    queue.join_thread()
    os._exit(0)
