"""Communicators from Python: every collective, dtype and op against
numpy's sequential reduction, in place and not, on ranks that are threads
(Comm.init_all) and processes (`mrc launch`, Comm.from_env); a lost peer
raises mrc.Error."""

import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import mrc
from collectives import run_cases

CLI = os.environ["MRC_CLI"]
RANK = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "comm_rank.py")


def on_threads(comms, fn):
    """fn(comm) on one thread a rank; returns the results in rank order
    (an exception raised on a rank is returned in its place)."""
    out = [None] * len(comms)

    def body(r):
        try:
            out[r] = fn(comms[r])
        except Exception as e:  # returned for the test to look at
            out[r] = e

    threads = [threading.Thread(target=body, args=(r,))
               for r in range(len(comms))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
        assert not t.is_alive(), "a rank did not return"
    return out


@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_every_case_on_threads(nranks):
    comms = mrc.Comm.init_all(nranks, timeout_s=60)
    try:
        assert [c.rank for c in comms] == list(range(nranks))
        assert {c.size for c in comms} == {nranks}
        for cases, wrong, failures in on_threads(comms, run_cases):
            assert cases > 1000
            assert wrong == 0, failures
    finally:
        for c in comms:
            c.close()


def test_groups_and_families_on_threads():
    """Two groups of two, each reducing its own ranks; every family."""
    for algo in ("rings", "direct1", "direct2", "tree"):
        comms = mrc.Comm.init_all(4, groups="2+2", algo=algo)

        def body(c):
            return c.allreduce(np.full(100, c.rank + 1, dtype=np.int32))

        got = on_threads(comms, body)
        for c in comms:
            c.close()
        # ranks are within each group: 1 + 2 in both
        for g in got:
            assert not isinstance(g, Exception), g
            assert g.tolist() == [3] * 100


@pytest.mark.parametrize("nranks", [2, 3])
def test_every_case_under_mrc_launch(nranks):
    p = subprocess.run([CLI, "launch", "-n", str(nranks), "--",
                        sys.executable, RANK, "cases"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=240)
    assert p.returncode == 0, p.stdout
    found = re.findall(r"rank (\d+) of %d: (\d+) cases, 0 wrong" % nranks,
                       p.stdout)
    assert sorted(int(r) for r, _ in found) == list(range(nranks)), p.stdout
    assert all(int(c) > 1000 for _, c in found)


@pytest.mark.parametrize("nranks", [2, 3])
def test_shared_arrays_under_mrc_launch(nranks):
    env = dict(os.environ, MRC_DEBUG="TRACE")
    p = subprocess.run([CLI, "launch", "-n", str(nranks), "--",
                        sys.executable, RANK, "shared"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stdout
    for r in range(nranks):
        assert "rank %d of %d: shared, 0 wrong" % (r, nranks) in p.stdout, \
            p.stdout
    # the peers read the arrays through their mappings
    assert re.search(r"rank 1: maps rank 0's shared region", p.stdout), \
        p.stdout
    # shared_buffers: the selector reads the peers in place (direct2 past
    # its window), where on ordinary memory it avoids the kernel's copy
    assert re.search(r"rank 0: program direct2 for allreduce count 1048576 ",
                     p.stdout), p.stdout


def test_shared_array_shapes():
    a = mrc.shared_array((3, 4), np.int32)
    assert a.shape == (3, 4) and a.dtype == np.int32 and not a.any()
    assert a.flags["C_CONTIGUOUS"] and a.flags["WRITEABLE"]
    a[:] = 7
    row = a[1]
    del a  # the view keeps the memory
    assert row.tolist() == [7] * 4
    assert mrc.shared_array(0).shape == (0,)
    with pytest.raises(ValueError, match="negative size"):
        mrc.shared_array(-1)
    with pytest.raises(ValueError, match="negative size"):
        mrc.shared_array((2, -1, -1))  # a positive product


def test_lost_peer_raises_under_mrc_launch():
    p = subprocess.run([CLI, "launch", "-n", "3", "--", sys.executable, RANK,
                        "dies"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    # the launcher reports rank 1; ranks 0 and 2 saw it go, by rank
    assert p.returncode == 1
    assert "rank 1 (pid" in p.stdout
    for r in (0, 2):
        assert re.search(r"rank %d: raised MRC_ERR_PEER_LOST: .*rank 1 "
                         r"\(pid \d+\) is gone" % r, p.stdout), p.stdout


def test_threads_run_at_once():
    """The GIL is released during a call: two ranks that must meet inside
    mrc can only finish if both calls run at the same time."""
    comms = mrc.Comm.init_all(2, timeout_s=20)
    got = on_threads(comms, lambda c: c.allreduce(
        np.ones(1 << 20, dtype=np.float64)))
    for c in comms:
        c.close()
    for g in got:
        assert not isinstance(g, Exception), g
        assert (g == 2).all()


def test_stream_bytes_reaches_the_library():
    """stream_bytes=1024: a 4 KiB allreduce writes around the caches (the
    communicator says so under MRC_DEBUG=INFO), exact; without it, not;
    the option comes before $MRC_STREAM_BYTES, which comes before the
    built-in 8 MiB."""
    code = r'''
import sys, threading
import numpy as np
import mrc
kw = {"stream_bytes": int(sys.argv[1])} if sys.argv[1] != "-" else {}
comms = mrc.Comm.init_all(2, timeout_s=20, **kw)
out = [None, None]
def body(r):
    out[r] = comms[r].allreduce(np.full(1024, r + 1, dtype=np.float32))
ts = [threading.Thread(target=body, args=(r,)) for r in range(2)]
for t in ts: t.start()
for t in ts: t.join()
for c in comms: c.close()
assert all((o == 3).all() for o in out), out
'''
    never = str(2 ** 64 - 1)
    cases = [("1024", None, "at least 1024 bytes"), ("-", None, None),
             ("-", "1", "at least 1 bytes"), (never, "1", None)]
    for option, env_value, says in cases:
        env = dict(os.environ, MRC_DEBUG="INFO")
        env.pop("MRC_STREAM_BYTES", None)
        env.pop("MRC_PROFILE", None)
        if env_value:
            env["MRC_STREAM_BYTES"] = env_value
        r = subprocess.run([sys.executable, "-c", code, option], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (option, env_value, r.stderr)
        if says:
            assert ("writes around the caches (its receive buffer is at "
                    "least") in r.stderr and says in r.stderr, r.stderr
        else:
            assert "writes around" not in r.stderr, (option, r.stderr)


def test_unreadable_memory_limit_is_refused():
    """$MRC_MAX_MEMORY that is not a size fails the communicator's creation
    naming it (it is not taken for the default limit); empty is unset."""
    code = r'''
import mrc
try:
    comms = mrc.Comm.init_all(2, timeout_s=20)
except mrc.Error as e:
    print("refused:", e)
else:
    for c in comms: c.close()
    print("created")
'''
    for value, says in (("lots", "refused: "), ("", "created")):
        env = dict(os.environ, MRC_MAX_MEMORY=value)
        r = subprocess.run([sys.executable, "-c", code], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (value, r.stderr)
        assert r.stdout.startswith(says), (value, r.stdout)
        if value:
            assert ("$MRC_MAX_MEMORY 'lots' is not a size in bytes above 0"
                    in r.stdout), r.stdout
