"""mpi4py through the drop-in library: an unchanged mpi4py program
(mpi4py_prog.py) under mpirun, as it is and with libmrc_mpi.so preloaded;
every rank checks its results against numpy, the digest of all results
is MPI's own, and MRC_MPI_VERBOSE shows each call going through mrc.
And mrc.Comm.from_mpi on mpi4py's communicators (mpi_rank.py)."""

import os
import re
import subprocess
import sys

import pytest

MPIRUN = os.environ["MRC_MPIRUN"]
LIBRARY = os.environ["MRC_MPI_LIBRARY"]
PROG = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "mpi4py_prog.py")
# Root may run MPI jobs here (CI runs as root); more ranks than cores;
# loopback only.
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1",
           OMPI_MCA_btl_tcp_if_include="lo",
           OMPI_MCA_oob_tcp_if_include="lo")


def mpirun(n, *extra):
    p = subprocess.run([MPIRUN, "-np", str(n), *extra, sys.executable, PROG],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=ENV, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    ranks = re.findall(r"rank (\d+) of %d: (\d+) cases, 0 wrong" % n,
                       p.stdout)
    assert sorted(int(r) for r, _ in ranks) == list(range(n)), p.stdout
    digest = re.findall(r"^digest ([0-9a-f]{64})$", p.stdout, re.M)
    assert len(digest) == 1, p.stdout
    return digest[0], p.stderr


@pytest.mark.parametrize("n", [2, 3])
def test_mpi4py_through_libmrc_mpi(n):
    plain, plain_err = mpirun(n, "-x", "MRC_MPI_VERBOSE=1")
    assert "mrc_mpi:" not in plain_err  # MPI alone: nothing of mrc
    preloaded, err = mpirun(n, "-x", "LD_PRELOAD=" + LIBRARY,
                            "-x", "MRC_MPI_VERBOSE=1")
    assert preloaded == plain
    # each call of mpi4py's buffer interface took mrc's path, on every rank
    for r in range(n):
        for call, kind in (("MPI_Allreduce", "float32"),
                           ("MPI_Allreduce", "int8"),
                           ("MPI_Reduce_scatter_block", "uint64"),
                           ("MPI_Reduce_scatter", "float64"),
                           ("MPI_Reduce", "int32"),
                           ("MPI_Allgather", "bytes"),
                           ("MPI_Bcast", "bytes")):
            line = (r"mrc_mpi: rank %d: %s from .*mpi4py/MPI\.[^ ]*\.so"
                    r"\+0x[0-9a-f]+: mrc \(%s\)" % (r, call, kind))
            assert re.search(line, err), (line, err)


RANK = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "mpi_rank.py")


@pytest.mark.parametrize("n,hosts", [(2, None), (3, 3)])
def test_comm_from_mpi(n, hosts):
    """mrc.Comm.from_mpi on mpi4py's communicators: every case against
    numpy, through shared memory and (hosts = ranks) through MPI."""
    extra = ["-x", "MRC_MPI_HOSTS=%d" % hosts] if hosts else []
    p = subprocess.run([MPIRUN, "-np", str(n), *extra, sys.executable, RANK],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, env=ENV, timeout=240)
    assert p.returncode == 0, p.stdout
    found = re.findall(r"rank (\d+) of %d: (\d+) cases, 0 wrong" % n,
                       p.stdout)
    assert sorted(int(r) for r, _ in found) == list(range(n)), p.stdout
    assert all(int(c) > 1000 for _, c in found)
