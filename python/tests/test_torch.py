"""backend="mrc" for torch.distributed: results against torch's own
reduction, async work, refusals, a dead peer, and DDP against gloo."""

import os
import re
import subprocess
import sys
import tempfile
import threading

import pytest

import torch  # noqa: E402  (CTest runs this only where torch imports)
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_workers  # noqa: E402

SOURCE = os.environ.get(
    "MRC_SOURCE_DIR",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def run_ranks(target, n, *args, wait=120):
    """Starts n ranks of target(rank, n, path, *args, queue); returns what
    each put in the queue, by rank."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "store")
        procs = [ctx.Process(target=target, args=(r, n, path) + args +
                             (queue,)) for r in range(n)]
        for p in procs:
            p.start()
            # Reaped as soon as it exits, as mp.spawn and torchrun do: mrc
            # knows a peer is gone once it is no process, and a zombie
            # still is one (until then a call fails by the timeout).
            threading.Thread(target=p.join, daemon=True).start()
        got = {}
        try:
            for _ in range(n):
                item = queue.get(timeout=wait)
                got[item[0]] = item[1:]
        finally:
            for p in procs:
                p.join(timeout=30)
                if p.is_alive():
                    p.kill()
    return got


def test_registered():
    import torch.distributed as dist
    import mrc.torch  # noqa: F401
    assert "MRC" in dist.Backend._plugins
    import mrc.torch  # a second import does not register twice
    assert dist.Backend("mrc") == "mrc"


@pytest.mark.parametrize("n", [2, 3])
def test_every_collective_dtype_and_op(n):
    got = run_ranks(torch_workers.sweep, n)
    assert sorted(got) == list(range(n))
    problems = [p for r in range(n) for p in got[r][0]]
    assert problems == []


@pytest.mark.parametrize("n", [2, 3])
def test_shared_memory_tensors(n):
    got = run_ranks(torch_workers.shared_memory, n)
    assert sorted(got) == list(range(n))
    problems = [p for r in range(n) for p in got[r][0]]
    assert problems == []


def test_shared_memory_raw_allocations():
    # torch's own code allocates through raw_allocate and frees through
    # the allocator's raw deleter: a region and ordinary memory alike
    # (in a process of its own: a wrong free aborts it).
    code = ("import mrc.torch, mrc._torch_ext as x\n"
            "mrc.torch.use_shared_memory(min_bytes=4096)\n"
            "x._raw_roundtrip(1 << 20)\n"   # a region
            "x._raw_roundtrip(100)\n"       # the allocator before's
            "mrc.torch.use_shared_memory(False)\n"
            "x._raw_roundtrip(1 << 20)\n"
            "print('ok')\n")
    p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout


def test_shared_memory_bad_size():
    import mrc.torch
    with pytest.raises(ValueError, match="min_bytes is -1, not a size"):
        mrc.torch.use_shared_memory(min_bytes=-1)


def test_refusals_name_what():
    n = 2
    got = run_ranks(torch_workers.refusals, n)
    for r in range(n):
        found = got[r][0]
        assert "exception" not in found, found.get("exception")
        assert "Bool" in found["bool"] and "int8" in found["bool"]
        assert "Short" in found["int16"]
        assert "Sparse" in found["sparse"]
        assert "ReduceOp.BAND" in found["BAND"]
        assert "ReduceOp.BXOR" in found["BXOR"]
        assert "reduce_scatter" in found["BXOR"]
        assert "meta" in found["meta"] and "CPU" in found["meta"]
        assert "does not support gather" in found["gather"]
        assert "all_gather" in found["all_gather sizes"]
        assert "_all_gather_base" in found["_all_gather_base size"]
        assert "root rank" in found["broadcast root"]
        assert found["after"] == [2.0] * 4


@pytest.mark.parametrize("n,how", [(3, "exit"), (2, "absent")])
def test_dead_peer_raises_within_timeout(n, how):
    timeout_s = 2
    got = run_ranks(torch_workers.dead_peer, n, timeout_s, how, wait=60)
    survivors = range(n - 1)
    assert sorted(got) == list(range(n))
    for r in survivors:
        message, elapsed = got[r]
        assert message is not None, "rank %d's call did not fail" % r
        if how == "exit":
            assert "MRC_ERR_PEER_LOST" in message
            assert "rank %d" % (n - 1) in message
        else:
            assert "MRC_ERR_TIMEOUT" in message
        assert "on rank %d" % r in message
        # Within the timeout, with room for a loaded machine's scheduling.
        assert elapsed < timeout_s + 2, (r, elapsed, message)


def ddp_losses(backend, n):
    out = subprocess.run(
        [sys.executable, os.path.join(SOURCE, "examples", "ddp_digits.py"),
         "--backend", backend, "-n", str(n), "--epochs", "2",
         "--steps", "4"],
        capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    losses = [float(x) for x in
              re.findall(r"^epoch \d+ loss ([0-9.eE+-]+)", out.stdout, re.M)]
    assert len(losses) == 2, out.stdout
    return losses


def test_ddp_matches_gloo():
    mrc_losses = ddp_losses("mrc", 2)
    gloo_losses = ddp_losses("gloo", 2)
    assert mrc_losses == pytest.approx(gloo_losses, rel=1e-5, abs=1e-6)
    assert mrc_losses[1] < mrc_losses[0]  # it trains


def test_ddp_peer_killed_mid_training():
    n, timeout_s = 3, 2
    got = run_ranks(torch_workers.ddp_dead_peer, n, timeout_s, wait=60)
    assert sorted(got) == list(range(n))
    for r in range(n - 1):
        message, elapsed = got[r]
        assert message is not None, "rank %d trained on" % r
        assert "rank %d" % (n - 1) in message, message
        assert elapsed < timeout_s + 2, (r, elapsed, message)


def test_bench_runs_and_checks():
    out = subprocess.run(
        [sys.executable, os.path.join(SOURCE, "bench", "torch_allreduce.py"),
         "-n", "2", "-b", "8", "-e", "4K", "-f", "8", "-r", "1"],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = [l.split() for l in out.stdout.splitlines()
            if l and not l.startswith("#")]
    assert [int(r[0]) for r in rows] == [8, 64, 512, 4096]
    for r in rows:
        assert r[7] == "0" and r[11] == "0", r  # #wrong, mrc and gloo
        assert float(r[12]) > 0


@pytest.mark.parametrize("script,args", [
    ("bench/torch_allreduce.py", ["-b", "1X"]),
    ("bench/torch_allreduce.py", ["-n", "1"]),
    ("examples/ddp_digits.py", ["--backend", "nccl"]),
    ("examples/ddp_digits.py", ["-n", "0"]),
])
def test_bad_arguments_exit_2(script, args):
    out = subprocess.run([sys.executable, os.path.join(SOURCE, script)] +
                         args, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "error:" in out.stderr


def store_with(tmp, **keys):
    import torch.distributed as dist
    store = dist.FileStore(os.path.join(tmp, "store"), 2)
    for k, v in keys.items():
        store.set(k, v)
    return store


def test_rank_on_another_host_is_refused():
    import datetime
    import mrc.torch
    with tempfile.TemporaryDirectory() as tmp:
        store = store_with(tmp, mrc_job="torch-x", mrc_token="y",
                           mrc_host="another-host")
        with pytest.raises(RuntimeError, match="joins the ranks of one host"):
            mrc.torch.create_process_group(
                store, 1, 2, datetime.timedelta(seconds=2))


def test_missing_peers_time_out_at_init():
    import datetime
    import time
    import mrc.torch
    with tempfile.TemporaryDirectory() as tmp:
        store = store_with(tmp)
        start = time.monotonic()
        with pytest.raises(RuntimeError) as e:
            mrc.torch.create_process_group(
                store, 0, 2, datetime.timedelta(seconds=1))
        assert "init_process_group failed on rank 0" in str(e.value)
        assert "MRC_ERR_TIMEOUT" in str(e.value)
        assert time.monotonic() - start < 5
