"""Every failure raises mrc.Error (a RuntimeError) carrying the status's
name and mrc's own message, which says what and where; objects close."""

import os
import threading

import numpy as np
import pytest

import mrc


def raises(name, pattern, fn, *args, **kwargs):
    with pytest.raises(mrc.Error, match=pattern) as info:
        fn(*args, **kwargs)
    err = info.value
    assert isinstance(err, RuntimeError)
    assert err.name == name
    assert str(err) == "%s: %s" % (name, err.message)
    assert err.status < 0
    return err


def test_library_errors_carry_mrc_message(tmp_path):
    raises("MRC_ERR_INVALID_ARG", "topology spec 'nosuch:3': unknown "
           "generator", mrc.Topology, "nosuch:3")
    bad = tmp_path / "bad.json"
    bad.write_text('{"nodes": [\n{"id": 0}, ]}')
    raises("MRC_ERR_PARSE", r"bad.json:2:\d+: JSON syntax error",
           mrc.Topology, str(bad))
    raises("MRC_ERR_PARSE", "t.json:", mrc.Topology.from_json, "{", "t.json")
    raises("MRC_ERR_INVALID_TOPOLOGY", "self-loop on node 0",
           mrc.Topology.from_links, 3, [(0, 0)])
    raises("MRC_ERR_INVALID_ARG", r"link 1: \(0,\) is not \(a, b",
           mrc.Topology.from_links, 3, [(0, 1), (0,)])
    raises("MRC_ERR_INVALID_ARG", "link 0: unknown key bw",
           mrc.Topology.from_links, 2, [{"a": 0, "b": 1, "bw": 5}])
    raises("MRC_ERR_INVALID_ARG", "'9' is not a node of hcm8",
           mrc.Topology("hcm8").fail_links, "0-9")
    raises("MRC_ERR_NOT_APPLICABLE", "hcm8 does not apply to torus2d:4,4",
           mrc.Embedding, "torus2d:4,4", strategy="hcm8")
    raises("MRC_ERR_INVALID_ARG", "unknown data type 'int16'",
           mrc.compile, "hcm8", "allreduce", 10, dtype="int16")
    raises("MRC_ERR_INVALID_ARG", "unknown operator 'xor'",
           mrc.compile, "hcm8", "allreduce", 10, op="xor")
    raises("MRC_ERR_INVALID_PROGRAM", "not an mrc program image",
           mrc.Program.load, b"garbage")
    image = mrc.compile("hcm8", "allreduce", 10).save()
    raises("MRC_ERR_INVALID_PROGRAM", "", mrc.Program.load,
           image[:-1] + bytes([image[-1] ^ 1]))
    raises("MRC_ERR_INVALID_ARG", "a fabric has 1 to", mrc.Fabric, tiles=-1)
    raises("MRC_ERR_INVALID_ARG", "entry 0: tile 0 sends to itself",
           mrc.Exchange().add, 0, [0])
    raises("MRC_ERR_PARSE", "<workload>: neither an mrc workload",
           mrc.simulate_workload, '{"version": 1}', "hcm8")
    raises("MRC_ERR_IO", "nonexistent.json: cannot open",
           mrc.load_profile, str(tmp_path / "nonexistent.json"))


def test_from_env_outside_mrc_launch():
    env = {k: os.environ.pop(k) for k in ("MRC_RANK", "MRC_NRANKS",
                                          "MRC_JOB") if k in os.environ}
    try:
        assert not mrc.launched()
        raises("MRC_ERR_INVALID_ARG", r"\$MRC_NRANKS is not set",
               mrc.Comm.from_env)
    finally:
        os.environ.update(env)


def test_bad_arrays_are_refused_before_any_call():
    with mrc.Comm.init_all(1)[0] as c:
        for bad in (np.zeros(3, np.complex64), np.zeros(3, np.int16),
                    np.zeros(3, np.bool_), np.zeros(3, ">i4")):
            raises("MRC_ERR_INVALID_ARG", "is not one mrc reduces",
                   c.allreduce, bad)
        raises("MRC_ERR_INVALID_ARG", "not C-contiguous", c.allreduce,
               np.zeros((3, 4), np.int32)[:, 1])
        raises("MRC_ERR_INVALID_ARG", "recv holds 4 elements, needs 3",
               c.allreduce, np.zeros(3, np.int32), np.zeros(4, np.int32))
        raises("MRC_ERR_INVALID_ARG", "recv is float32, the send array "
               "int32", c.allreduce, np.zeros(3, np.int32),
               np.zeros(3, np.float32))
        ro = np.zeros(3, np.int32)
        ro.flags.writeable = False
        raises("MRC_ERR_INVALID_ARG", "recv is read-only", c.allreduce,
               np.zeros(3, np.int32), ro)
        raises("MRC_ERR_INVALID_ARG", "buf is read-only", c.broadcast, ro)
        raises("MRC_ERR_INVALID_ARG", "expected a numpy array, got list",
               c.allreduce, [1, 2])
        raises("MRC_ERR_INVALID_ARG", "bfloat16 is 2 bytes an element",
               c.allreduce, np.zeros(3, np.float32), dtype="bfloat16")
        raises("MRC_ERR_INVALID_ARG", "unknown operator 'xor'", c.allreduce,
               np.zeros(3, np.int32), op="xor")
        # a read-only send array is fine: mrc only reads it
        assert c.allreduce(ro).tolist() == [0, 0, 0]
    raises("MRC_ERR_INVALID_ARG", "Comm is closed", lambda: c.rank)
    c.close()  # again: a no-op


def test_ranks_that_disagree_both_raise():
    comms = mrc.Comm.init_all(2, timeout_s=10)
    out = [None, None]

    def body(r):
        x = np.zeros(8, np.int32 if r == 0 else np.float32)
        try:
            comms[r].allreduce(x)
        except mrc.Error as e:
            out[r] = e

    threads = [threading.Thread(target=body, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for r in (0, 1):
        assert isinstance(out[r], mrc.Error), out
        assert out[r].name == "MRC_ERR_INVALID_ARG"
        assert "int32" in out[r].message and "float32" in out[r].message
    for c in comms:
        c.close()


def test_a_rank_that_never_calls_times_out():
    comms = mrc.Comm.init_all(2, timeout_s=0.5)
    err = raises("MRC_ERR_TIMEOUT", "", comms[0].allreduce,
                 np.zeros(4, np.float32))
    assert "rank 0" in err.message or "node 0" in err.message
    # the communicator refuses every later call, saying so
    with pytest.raises(mrc.Error):
        comms[0].allreduce(np.zeros(4, np.float32))
    for c in comms:
        c.close()


def test_closing_in_any_order():
    """An object keeps what it borrows alive: closing a topology before
    its embedding and program leaves them working."""
    t = mrc.Topology("hcm8")
    e = mrc.Embedding(t)
    p = mrc.compile(e, "allreduce", 1 << 16)
    want = mrc.simulate(p).time_us
    loads = e.link_loads
    t.close()
    e.close()
    assert t.closed and e.closed
    raises("MRC_ERR_INVALID_ARG", "Topology is closed", lambda: t.name)
    raises("MRC_ERR_INVALID_ARG", "Embedding is closed", lambda: e.strategy)
    assert mrc.simulate(p).time_us == want
    t = e = None  # the last references to the objects
    assert mrc.simulate(p).time_us == want
    e2 = mrc.Embedding(mrc.Topology("hcm8"))  # its topology only it holds
    assert e2.link_loads.tolist() == loads.tolist()
    p.close()
    p.close()  # again: a no-op
    with mrc.Fabric(8, 2) as f:
        s = f.schedule(mrc.Exchange.pattern("all-to-all", 8, 2))
    assert f.closed
    assert s.simulate()["delivered"] == 56
    raises("MRC_ERR_INVALID_ARG", "Fabric is closed", lambda: f.tiles)


def test_a_binding_of_another_layout_is_refused_at_import(tmp_path):
    # Every mirrored struct is as large as the library's, and a copy of
    # the package whose profile lacks a field the library has fails to
    # import, naming it, rather than letting the library write past it.
    import ctypes
    import re
    import shutil
    import subprocess
    import sys
    from mrc import _lib
    for cls, name in _lib.STRUCTS.items():
        assert _lib.lib.mrc_struct_size(name.encode()) == ctypes.sizeof(cls)
    assert _lib.lib.mrc_struct_size(b"no_such_t") == 0
    pkg = os.path.dirname(_lib.__file__)
    shutil.copytree(pkg, tmp_path / "mrc")
    src = (tmp_path / "mrc" / "_lib.py").read_text()
    field = '("window_gbps", c_double)'
    assert field in src
    (tmp_path / "mrc" / "_lib.py").write_text(
        re.sub(r",\s*" + re.escape(field), "", src))
    env = dict(os.environ, MRC_LIBRARY=_lib.LIBRARY_PATH,
               PYTHONPATH=os.pathsep.join(
                   [str(tmp_path)] + [p for p in os.environ.get(
                       "PYTHONPATH", "").split(os.pathsep) if p]))
    r = subprocess.run([sys.executable, "-c", "import mrc"], env=env,
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode != 0
    assert "the binding's Profile is" in r.stderr, r.stderr
    assert "mrc_profile_t" in r.stderr, r.stderr
