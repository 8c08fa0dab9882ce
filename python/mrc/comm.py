"""Communicators and collectives on numpy arrays (include/mrc/comm.h).

Arrays are passed to the C library by address, never copied: a receive
array must be C-contiguous and writeable, and a send array C-contiguous
(anything else is refused rather than silently copied). Every rank of a
group must make the same calls in the same order with the same counts,
dtypes, ops and roots, as in C. ctypes releases the GIL for the call, so
communicators of :meth:`Comm.init_all` work from Python threads.
"""

import atexit
import ctypes
import os
import weakref
from ctypes import byref, c_void_p

import numpy as np

from . import _lib
from ._lib import Owned, arg, check, lib, parse_enum

__all__ = ["Comm", "DTYPES", "OPS", "to_bfloat16", "from_bfloat16",
           "shared_array"]

# numpy dtype -> mrc dtype name. bfloat16 has no numpy type: pass a uint16
# array (the top 16 bits of each float32) with dtype="bfloat16".
DTYPES = {np.dtype(np.int8): "int8", np.dtype(np.uint8): "uint8",
          np.dtype(np.int32): "int32", np.dtype(np.uint32): "uint32",
          np.dtype(np.int64): "int64", np.dtype(np.uint64): "uint64",
          np.dtype(np.float16): "float16", np.dtype(np.float32): "float32",
          np.dtype(np.float64): "float64"}
OPS = ("sum", "prod", "min", "max", "avg")


def to_bfloat16(a):
    """bfloat16 bits (a uint16 array) of the values of ``a``, rounded to
    nearest even, as mrc rounds; pass them with ``dtype="bfloat16"``."""
    u = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bfloat16(bits):
    """The float32 values of bfloat16 bits (a uint16 array)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32)
            << 16).view(np.float32)


def shared_array(shape, dtype=np.float32):
    """A zeroed numpy array in memory from mrc_mem_alloc: the other ranks
    of a job on this host map it and read it with plain loads, where an
    ordinary array is read through the kernel (a copy more for a
    reduction). The memory is freed when the array and every view of it
    are gone."""
    dt = np.dtype(dtype)
    dims = (int(shape),) if np.ndim(shape) == 0 else tuple(map(int, shape))
    if any(d < 0 for d in dims):
        raise ValueError("shape %r has a negative size" % (shape,))
    count = int(np.prod(dims, dtype=np.int64))
    nbytes = max(count * dt.itemsize, 1)
    ptr = c_void_p()
    check(lib.mrc_mem_alloc(nbytes, byref(ptr)))
    raw = (ctypes.c_char * nbytes).from_address(ptr.value)
    weakref.finalize(raw, lib.mrc_mem_free, ptr.value)
    return np.frombuffer(raw, dtype=dt, count=count).reshape(dims)


def _dtype_of(a, dtype, where):
    """The mrc dtype of array a (or the one named, when it fits a)."""
    if dtype is None:
        name = DTYPES.get(a.dtype) if a.dtype.isnative else None
        if name is None:
            raise _lib.error_arg(
                "%s: numpy dtype %s is not one mrc reduces (int8, uint8, "
                "int32, uint32, int64, uint64, float16, float32, float64 in "
                "native byte order; bfloat16 as uint16 with "
                "dtype='bfloat16')" % (where, a.dtype))
        return parse_enum("dtype", name)
    code = parse_enum("dtype", dtype)
    if lib.mrc_dtype_size(code) != a.itemsize:
        raise _lib.error_arg(
            "%s: dtype %s is %d bytes an element, the array's %s is %d"
            % (where, dtype, lib.mrc_dtype_size(code), a.dtype, a.itemsize))
    return code


def _send(a, where):
    if not isinstance(a, np.ndarray):
        raise _lib.error_arg("%s: expected a numpy array, got %s"
                             % (where, type(a).__name__))
    if not a.flags.c_contiguous:
        raise _lib.error_arg("%s: the array is not C-contiguous (pass "
                             "np.ascontiguousarray(...))" % where)
    return a


def _recv(a, send, count, where, name="recv"):
    """Checks a receive array for `count` elements of send's dtype, or
    makes one."""
    if a is None:
        return np.empty(count, dtype=send.dtype)
    _send(a, where)
    if not a.flags.writeable:
        raise _lib.error_arg("%s: %s is read-only" % (where, name))
    if a.dtype != send.dtype:
        raise _lib.error_arg("%s: %s is %s, the send array %s"
                             % (where, name, a.dtype, send.dtype))
    if a.size != count:
        raise _lib.error_arg("%s: %s holds %d elements, needs %d"
                             % (where, name, a.size, count))
    return a


def _ptr(a):
    return c_void_p(a.ctypes.data) if a is not None else None


def _config(topology=None, strategy=None, groups=None, timeout_s=0.0,
            chunk_bytes=0, replica_size=0, max_rings=0, algo=None, hosts=0,
            failed_links=None, completion=None, shared_buffers=False,
            stream_bytes=0):
    return _lib.Config(arg(topology), arg(strategy), arg(groups),
                       float(timeout_s), int(chunk_bytes), int(replica_size),
                       int(max_rings), arg(algo), int(hosts),
                       arg(failed_links), arg(completion),
                       int(bool(shared_buffers)), int(stream_bytes))


class Comm(Owned):
    """A communicator: one rank of a group.

    Made by :meth:`from_env` (a process started by ``mrc launch -n N``),
    :meth:`init_rank` (processes of one host joined by a job name) or
    :meth:`init_all` (ranks as threads of this process). Keyword options
    for all three, as mrc_config_t: topology, strategy, groups, timeout_s,
    chunk_bytes, replica_size, max_rings, algo, hosts, failed_links,
    completion, shared_buffers (True when every rank's arrays come from
    :func:`shared_array`: the peers read them in place), stream_bytes
    (receive buffers from this size on are written around the caches; 0:
    ``$MRC_STREAM_BYTES``, else the profile's, else 8 MiB).

    Collectives take a send array and an optional receive array; with no
    receive array a new one is returned, and passing the send array itself
    (or, for reduce_scatter and allgather, the rank's block of it) works in
    place. ``dtype`` is taken from the array; pass ``dtype="bfloat16"``
    with uint16 arrays. ``op`` is one of "sum", "prod", "min", "max",
    "avg".
    """

    _destroy = "mrc_comm_destroy"

    def __init__(self, handle, config=None):
        self._config = config  # the C strings must outlive the communicator
        super().__init__(handle)

    @classmethod
    def from_env(cls, **options):
        """This process's rank in a job of ``mrc launch`` ($MRC_RANK,
        $MRC_NRANKS, $MRC_JOB)."""
        cfg = _config(**options)
        out = c_void_p()
        check(lib.mrc_comm_init_env(byref(out), byref(cfg)))
        return cls(out.value, cfg)

    @classmethod
    def init_rank(cls, nranks, rank, job, **options):
        """Rank ``rank`` of ``nranks`` processes on this host that pass the
        same ``job`` name."""
        cfg = _config(**options)
        out = c_void_p()
        check(lib.mrc_comm_init_rank(byref(out), int(nranks), int(rank),
                                     arg(job), byref(cfg)))
        return cls(out.value, cfg)

    @classmethod
    def from_mpi(cls, mpi_comm, **options):
        """The ranks of an mpi4py intra-communicator (collective: every
        rank calls it). Ranks of one host talk through shared memory,
        others through MPI. Needs libmrc built with MPI and the mpi4py of
        the same MPI. The communicator is closed at the latest when the
        interpreter exits, before mpi4py finalises MPI."""
        if not _lib.HAVE_MPI:
            raise _lib.error_arg("from_mpi: this libmrc was built without "
                                 "MPI")
        try:
            from mpi4py import MPI
        except ImportError:
            raise _lib.error_arg("from_mpi: mpi4py cannot be imported") \
                from None
        if not isinstance(mpi_comm, MPI.Intracomm):
            raise _lib.error_arg("from_mpi: expected an mpi4py "
                                 "intra-communicator, got %s"
                                 % type(mpi_comm).__name__)
        ctype = {4: ctypes.c_int, 8: ctypes.c_void_p}[MPI._sizeof(MPI.Comm)]
        cfg = _config(**options)
        out = c_void_p()
        check(lib.mrc_comm_init_mpi(ctype(MPI._handleof(mpi_comm)),
                                    byref(cfg), byref(out)))
        comm = cls(out.value, cfg)
        # atexit runs last-registered first: this runs before mpi4py's
        # MPI_Finalize, registered when mpi4py was imported.
        ref = weakref.ref(comm)
        atexit.register(lambda: ref() is not None and ref().close())
        return comm

    @classmethod
    def init_all(cls, nranks, **options):
        """``nranks`` communicators that talk through threads of this
        process: element r is rank r, to be used by one thread at a
        time."""
        nranks = int(nranks)
        if nranks < 1:
            raise _lib.error_arg("init_all: nranks %d: must be 1 or more"
                                 % nranks)
        cfg = _config(**options)
        arr = (c_void_p * nranks)()
        check(lib.mrc_comm_init_all(arr, nranks, byref(cfg)))
        return [cls(arr[r], cfg) for r in range(nranks)]

    def close(self):
        """Destroys the communicator (after every rank has finished its
        calls); again is a no-op."""
        h, self._h = getattr(self, "_h", None), None
        if h is not None and h.ptr:
            ptr, h.ptr = h.ptr, None
            check(lib.mrc_comm_destroy(ptr))

    @property
    def rank(self):
        return lib.mrc_comm_rank(self.handle)

    @property
    def size(self):
        return lib.mrc_comm_size(self.handle)

    def allreduce(self, send, recv=None, op="sum", dtype=None):
        """recv[i] = op over the group of send[i]; returns recv."""
        send = _send(send, "allreduce")
        dt = _dtype_of(send, dtype, "allreduce")
        recv = _recv(recv, send, send.size, "allreduce")
        check(lib.mrc_allreduce(_ptr(send), _ptr(recv), send.size, dt,
                                parse_enum("op", op), self.handle))
        return recv

    def reduce_scatter(self, send, recv=None, op="sum", dtype=None):
        """send holds size x n elements; this rank gets block ``rank`` of
        the reduction (n elements); returns recv. In place: recv is
        send[rank * n:(rank + 1) * n]."""
        send = _send(send, "reduce_scatter")
        dt = _dtype_of(send, dtype, "reduce_scatter")
        size = self.size
        if send.size % size:
            raise _lib.error_arg(
                "reduce_scatter: the send array's %d elements are not a "
                "multiple of the group's %d ranks" % (send.size, size))
        n = send.size // size
        recv = _recv(recv, send, n, "reduce_scatter")
        check(lib.mrc_reduce_scatter(_ptr(send), _ptr(recv), n, dt,
                                     parse_enum("op", op), self.handle))
        return recv

    def allgather(self, send, recv=None, dtype=None):
        """recv holds size x n elements, block r from rank r; returns recv.
        In place: send is recv[rank * n:(rank + 1) * n]."""
        send = _send(send, "allgather")
        dt = _dtype_of(send, dtype, "allgather")
        recv = _recv(recv, send, send.size * self.size, "allgather")
        check(lib.mrc_allgather(_ptr(send), _ptr(recv), send.size, dt,
                                self.handle))
        return recv

    def reduce(self, send, recv=None, op="sum", root=0, dtype=None):
        """The reduction lands in the root's recv (returned there; None on
        the other ranks, whose recv is not used)."""
        send = _send(send, "reduce")
        dt = _dtype_of(send, dtype, "reduce")
        is_root = self.rank == int(root)
        recv = _recv(recv, send, send.size, "reduce") if is_root else None
        check(lib.mrc_reduce(_ptr(send), _ptr(recv), send.size, dt,
                             parse_enum("op", op), int(root), self.handle))
        return recv

    def broadcast(self, buf, root=0, recv=None, dtype=None):
        """The root's ``buf`` lands in every rank's: in place in ``buf``
        (as MPI_Bcast and torch do) unless ``recv`` is given; returns the
        array that holds it."""
        buf = _send(buf, "broadcast")
        dt = _dtype_of(buf, dtype, "broadcast")
        if recv is None:
            if not buf.flags.writeable:
                raise _lib.error_arg("broadcast: buf is read-only (pass "
                                     "recv=...)")
            recv = buf
        recv = _recv(recv, buf, buf.size, "broadcast")
        check(lib.mrc_broadcast(_ptr(buf), _ptr(recv), buf.size, dt,
                                int(root), self.handle))
        return recv

    def __repr__(self):
        if self.closed:
            return "<mrc.Comm (closed)>"
        return "<mrc.Comm rank %d of %d>" % (self.rank, self.size)


def launched():
    """Whether this process was started by ``mrc launch``."""
    return all(os.environ.get(v) for v in ("MRC_RANK", "MRC_NRANKS",
                                            "MRC_JOB"))
