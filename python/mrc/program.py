"""Compiled programs and the simulator (include/mrc/program.h,
include/mrc/sim.h, include/mrc/profile.h)."""

import ctypes
import os
from ctypes import POINTER, byref, c_size_t, c_void_p

import numpy as np

from . import _lib
from ._lib import Owned, arg, check, lib, parse_enum, take_string, text
from .topology import Embedding, Topology

__all__ = ["Program", "SimResult", "compile", "simulate", "load_profile",
           "simulate_workload"]

_MODES = {"bsp": 0, "pipelined": 1}


class Program(Owned):
    """One program for every node: a collective compiled on an embedding
    and checked (docs/program-format.md). Made by :func:`compile` or
    :meth:`load`. Keeps its embedding (and so its topology) alive."""

    _destroy = "mrc_program_destroy"

    def __init__(self, handle, embedding=None, topology=None):
        self.embedding = embedding
        self.topology = topology if topology is not None else (
            embedding.topology if embedding is not None else None)
        super().__init__(handle, borrows=(embedding, self.topology))

    @classmethod
    def load(cls, image, topology=None):
        """A program from its binary image (bytes from :meth:`save`),
        checked again. Give ``topology`` (the one it was compiled for) to
        simulate it."""
        image = bytes(image)
        out = c_void_p()
        check(lib.mrc_program_load(image, len(image), byref(out)))
        return cls(out.value, topology=topology)

    def save(self):
        """The versioned binary image, as bytes."""
        ptr, n = c_void_p(), c_size_t()
        check(lib.mrc_program_save(self.handle, byref(ptr), byref(n)))
        try:
            return ctypes.string_at(ptr.value, n.value)
        finally:
            lib.mrc_free(ptr)

    def listing(self):
        """The shared code and the index tables in readable form."""
        out = c_void_p()
        check(lib.mrc_program_listing(self.handle, byref(out)))
        return take_string(out)

    def check(self):
        """The abstract run again; Error naming node, stream and step if
        it fails."""
        check(lib.mrc_program_check(self.handle))

    @property
    def info(self):
        """A dict: collective, count, dtype, op, root, chunk_bytes, algo,
        hosts (the compile config, by name), num_nodes, num_groups,
        num_streams, code_instructions, table_bytes, image_bytes."""
        i = _lib.ProgramInfo()
        check(lib.mrc_program_info(self.handle, byref(i)))
        c = i.config
        return {"collective": text(lib.mrc_collective_name(c.collective)),
                "count": c.count, "dtype": text(lib.mrc_dtype_name(c.dtype)),
                "op": text(lib.mrc_op_name(c.op)), "root": c.root,
                "chunk_bytes": c.chunk_bytes,
                "algo": text(lib.mrc_algo_name(c.algo)), "hosts": c.hosts,
                "completion": text(lib.mrc_completion_name(c.completion)),
                "num_nodes": i.num_nodes, "num_groups": i.num_groups,
                "num_streams": i.num_streams,
                "code_instructions": i.code_instructions,
                "table_bytes": i.table_bytes, "image_bytes": i.image_bytes}

    def simulate(self, **kwargs):
        """See :func:`simulate`."""
        return simulate(self, **kwargs)

    def __repr__(self):
        if self.closed:
            return "<mrc.Program (closed)>"
        i = self.info
        return "<mrc.Program %s %s of %d %s on %d nodes: %d instructions>" % (
            i["algo"], i["collective"], i["count"], i["dtype"],
            i["num_nodes"], i["code_instructions"])


def compile(embedding, collective, count, dtype="float32", op="sum", root=0,
            chunk_bytes=0, algo="rings", hosts=0):
    """Compiles ``collective`` ("allreduce", "reduce_scatter",
    "allgather", "reduce", "broadcast") of ``count`` elements (of each
    node's vector; of each block for reduce-scatter and allgather) for
    every group of ``embedding`` (an :class:`Embedding`, or a topology or
    spec, embedded with the auto strategy), and checks it. ``algo``: rings,
    direct1, direct2, tree or hier (not auto: the selector lives in
    communicators and `mrc explain`)."""
    if not isinstance(embedding, Embedding):
        embedding = Embedding(embedding)
    if isinstance(collective, str):
        collective = collective.replace("_", "-")
    if int(count) < 0:
        raise _lib.error_arg("count %d: must be 0 or more" % count)
    cfg = _lib.CompileConfig(parse_enum("collective", collective), int(count),
                             parse_enum("dtype", dtype), parse_enum("op", op),
                             int(root), int(chunk_bytes),
                             parse_enum("algo", algo), int(hosts))
    out = c_void_p()
    check(lib.mrc_program_compile(embedding.handle, byref(cfg), byref(out)))
    return Program(out.value, embedding)


class Profile:
    """A host profile from `mrc calibrate` (docs/simulator.md,
    "Profiles"), for the simulator's node model."""

    def __init__(self, path=None, json_text=None):
        self._struct = _lib.Profile()
        if json_text is not None:
            data = (json_text.encode("utf-8") if isinstance(json_text, str)
                    else json_text)
            check(lib.mrc_profile_parse(data, len(data), byref(self._struct)))
        else:
            check(lib.mrc_profile_load(arg(os.fspath(path)),
                                       byref(self._struct)))

    @property
    def transport(self):
        return self._struct.transport.decode()

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        v = getattr(self._struct, name)
        if isinstance(v, ctypes.Array):
            return np.array([list(row) for row in v])
        return v


def load_profile(path):
    """A :class:`Profile` read from a file."""
    return Profile(path)


def _sim_config(mode, pj_per_bit, link_power_w, wake_us, chunks, profile):
    if mode not in _MODES:
        raise _lib.error_arg("mode %r: bsp or pipelined" % (mode,))
    if profile is not None and not isinstance(profile, Profile):
        profile = Profile(profile)
    cfg = _lib.SimConfig(_MODES[mode], float(pj_per_bit), float(link_power_w),
                         float(wake_us), int(chunks),
                         ctypes.pointer(profile._struct) if profile else None)
    return cfg, profile


class SimResult:
    """What :func:`simulate` found. Attributes: time_us, algbw_gbps,
    busbw_gbps, bound_gbps, efficiency, energy_j, energy_no_gating_j,
    bytes_moved, steps, num_links; ``link_bytes`` and ``link_utilisation``
    are numpy arrays of shape (num_links, 2) ([i, 0]: link entry i from a
    to b, [i, 1] from b to a); ``idle_link_directions`` counts the
    directions that carried nothing."""

    _SCALARS = ("time_us", "algbw_gbps", "busbw_gbps", "bound_gbps",
                "efficiency", "energy_j", "energy_no_gating_j",
                "bytes_moved", "steps", "num_links")

    def __init__(self, r):
        for f in self._SCALARS:
            setattr(self, f, getattr(r, f))
        n = 2 * r.num_links
        self.link_bytes = np.ctypeslib.as_array(
            r.link_bytes, shape=(n,)).reshape(-1, 2).copy() if n else \
            np.zeros((0, 2))
        self.link_utilisation = np.ctypeslib.as_array(
            r.link_utilisation, shape=(n,)).reshape(-1, 2).copy() if n else \
            np.zeros((0, 2))
        self.idle_link_directions = int((self.link_bytes == 0).sum())

    def as_dict(self):
        """The figures as a dict (the arrays as lists)."""
        d = {f: getattr(self, f) for f in self._SCALARS}
        d["idle_link_directions"] = self.idle_link_directions
        d["link_bytes"] = self.link_bytes.tolist()
        d["link_utilisation"] = self.link_utilisation.tolist()
        return d

    def __repr__(self):
        return ("<mrc.SimResult %.3f us, algbw %.3f GB/s, busbw %.3f GB/s, "
                "efficiency %.4f>" % (self.time_us, self.algbw_gbps,
                                      self.busbw_gbps, self.efficiency))


def simulate(program, mode="bsp", pj_per_bit=0.0, link_power_w=0.0,
             wake_us=0.0, chunks=0, profile=None, topology=None):
    """Plays ``program`` on the links of its topology (docs/simulator.md):
    ``mode`` "bsp" (a barrier after every step) or "pipelined";
    ``pj_per_bit``, ``link_power_w``, ``wake_us`` (0: the defaults 5 pJ,
    0.5 W, 1 us); ``chunks`` per fragment (0: the program's); ``profile``
    a host profile (a path or :class:`Profile`) for the node model.
    Returns a :class:`SimResult`."""
    if topology is not None:
        topo = topology.handle
    elif program.topology is not None:
        # the program's own reference: alive even if the Topology object
        # was closed
        topo = program._borrowed[-1].ptr
    else:
        raise _lib.error_arg("simulate: a loaded program needs the topology "
                             "it was compiled for (topology=...)")
    cfg, keep = _sim_config(mode, pj_per_bit, link_power_w, wake_us, chunks,
                            profile)
    out = POINTER(_lib.SimResult)()
    check(lib.mrc_sim_run(program.handle, topo, byref(cfg),
                          byref(out)))
    try:
        return SimResult(out.contents)
    finally:
        lib.mrc_sim_result_destroy(out)
        del keep


def simulate_workload(workload, topology, strategy=None, groups=None,
                      mode="bsp", pj_per_bit=0.0, link_power_w=0.0,
                      wake_us=0.0, chunks=0, profile=None):
    """One step of a workload (docs/simulator.md, "Workloads"): a path to
    a JSON file or its text (str starting with '{'), on ``topology`` (a
    :class:`Topology` or spec). Returns a dict: steps, step_us, total_us,
    compute_us, comm_us, exposed_comm_us, energy_j, energy_no_gating_j,
    distinct_collectives, and ops (dicts: id, kind, start_us, end_us)."""
    if not isinstance(topology, Topology):
        topology = Topology(topology)
    if isinstance(workload, str) and workload.lstrip().startswith("{"):
        data, origin = workload.encode("utf-8"), None
    else:
        origin = os.fspath(workload)
        with open(origin, "rb") as f:
            data = f.read()
    w = c_void_p()
    check(lib.mrc_workload_parse(data, len(data), arg(origin), byref(w)))
    try:
        ec = _lib.EmbedConfig(arg(strategy), arg(groups), 0, 0)
        cfg, keep = _sim_config(mode, pj_per_bit, link_power_w, wake_us,
                                chunks, profile)
        out = POINTER(_lib.WorkloadResult)()
        check(lib.mrc_sim_workload(w, topology.handle, byref(ec), byref(cfg),
                                   byref(out)))
        r = out.contents
        try:
            d = {f: getattr(r, f) for f, _ in _lib.WorkloadResult._fields_
                 if f not in ("ops", "num_ops")}
            d["ops"] = [{"id": text(o.id),
                         "kind": ("compute", "collective")[o.kind],
                         "start_us": o.start_us, "end_us": o.end_us}
                        for o in (r.ops[i] for i in range(r.num_ops))]
            return d
        finally:
            lib.mrc_workload_result_destroy(out)
            del keep
    finally:
        lib.mrc_workload_destroy(w)
