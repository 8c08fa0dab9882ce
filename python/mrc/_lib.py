"""The C library behind the package: loading libmrc, the ctypes
declarations of its public API (include/mrc/*.h), and the one place where
a status code becomes an exception.

Everything here is private; the public classes live in the other modules.
"""

import ctypes
import ctypes.util
import os

from ctypes import (POINTER, Structure, c_char_p, c_double, c_int, c_int64,
                    c_size_t, c_uint, c_uint64, c_void_p)


class Error(RuntimeError):
    """An mrc call failed.

    ``status`` is the mrc_status_t value (negative), ``name`` its symbolic
    name ("MRC_ERR_PARSE") and ``message`` mrc's own message, which says
    what went wrong and where (file and line, node, rank, step).
    ``str(err)`` is "NAME: message".
    """

    def __init__(self, status, name, message):
        self.status = status
        self.name = name
        self.message = message
        super().__init__("%s: %s" % (name, message))


def _find_library():
    """The path of libmrc to load: $MRC_LIBRARY, else the one the package
    was staged or installed with (_paths.py), else the loader's search."""
    path = os.environ.get("MRC_LIBRARY")
    if path:
        return path
    try:
        from . import _paths
        here = os.path.dirname(os.path.abspath(_paths.__file__))
        path = os.path.normpath(os.path.join(here, _paths.LIBRARY))
        if os.path.exists(path):
            return path
    except ImportError:
        pass
    return ctypes.util.find_library("mrc") or "libmrc.so.0"


def _load():
    path = _find_library()
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            "mrc: cannot load the C library %s (%s); set MRC_LIBRARY to the "
            "path of libmrc.so" % (path, e)) from None


lib = _load()
LIBRARY_PATH = lib._name


# ---- structures (the public headers' layouts) -----------------------------

class Link(Structure):
    _fields_ = [("a", c_int), ("b", c_int), ("count", c_int),
                ("bandwidth_gbps", c_double), ("latency_ns", c_double),
                ("port_a", c_int), ("port_b", c_int)]


class Hop(Structure):
    _fields_ = [("from_", c_int), ("to", c_int), ("route_len", c_int),
                ("route", POINTER(c_int)), ("links", POINTER(c_int)),
                ("ports", POINTER(c_int)), ("in_ports", POINTER(c_int))]


class Ring(Structure):
    _fields_ = [("size", c_int), ("nodes", POINTER(c_int)),
                ("bidirectional", c_int), ("share", c_double),
                ("hops", POINTER(Hop))]


class EmbedConfig(Structure):
    _fields_ = [("strategy", c_char_p), ("groups", c_char_p),
                ("replica_size", c_int), ("max_rings", c_int)]


class EmbedFigures(Structure):
    _fields_ = [("bound_gbps", c_double), ("algbw_gbps", c_double),
                ("efficiency", c_double)]


class CompileConfig(Structure):
    _fields_ = [("collective", c_int), ("count", c_size_t),
                ("dtype", c_int), ("op", c_int), ("root", c_int),
                ("chunk_bytes", c_size_t), ("algo", c_int), ("hosts", c_int),
                ("completion", c_int)]


class ProgramInfo(Structure):
    _fields_ = [("config", CompileConfig), ("num_nodes", c_int),
                ("num_groups", c_int), ("num_streams", c_int),
                ("code_instructions", c_int), ("table_bytes", c_size_t),
                ("image_bytes", c_size_t)]


NUM_DTYPES = 10
NUM_OPS = 5


class Profile(Structure):
    _fields_ = [("version", c_int), ("transport", ctypes.c_char * 16),
                ("ranks", c_int), ("cores", c_int),
                ("nodes_per_memory", c_int), ("cache_bytes", c_double),
                ("copy_gbps_cache", c_double), ("copy_gbps_memory", c_double),
                ("memory_gbps_shared", c_double),
                ("peer_gbps_cache", c_double),
                ("private_cache_bytes", c_double),
                ("reduce_gbps_cache", c_double * NUM_OPS * NUM_DTYPES),
                ("reduce_gbps_memory", c_double * NUM_OPS * NUM_DTYPES),
                ("message_us", c_double), ("sync_us", c_double),
                ("peer_gbps_shared", c_double),
                ("rendezvous_bytes", c_double),
                ("rendezvous_us", c_double), ("slot_gbps", c_double),
                ("turn_us", c_double), ("flag_turn_us", c_double),
                ("get_us", c_double), ("kernel_gbps", c_double),
                ("spin_share", c_double),
                ("cache_falloff", c_double),
                ("peer_contention", c_double),
                ("copy_gbps_shared", c_double),
                ("latency_us", c_double),
                ("quiet_turn_share", c_double),
                ("canary_us", c_double),
                ("window_gbps", c_double), ("stream_bytes", c_double),
                ("stream_gbps", c_double),
                ("send_by_ref", c_double),
                ("kernel_gbps_cache", c_double), ("send_us", c_double),
                ("peer_ramp_bytes", c_double)]


class SimConfig(Structure):
    _fields_ = [("mode", c_int), ("pj_per_bit", c_double),
                ("link_power_w", c_double), ("wake_us", c_double),
                ("chunks", c_int), ("profile", POINTER(Profile)),
                ("peers_mapped", c_int)]


class SimResult(Structure):
    _fields_ = [("time_us", c_double), ("algbw_gbps", c_double),
                ("busbw_gbps", c_double), ("bound_gbps", c_double),
                ("efficiency", c_double), ("energy_j", c_double),
                ("energy_no_gating_j", c_double), ("bytes_moved", c_double),
                ("steps", c_int), ("num_links", c_int),
                ("link_bytes", POINTER(c_double)),
                ("link_utilisation", POINTER(c_double))]


class WorkloadOpResult(Structure):
    _fields_ = [("id", c_char_p), ("kind", c_int), ("start_us", c_double),
                ("end_us", c_double)]


class WorkloadResult(Structure):
    _fields_ = [("steps", c_int), ("step_us", c_double),
                ("total_us", c_double), ("compute_us", c_double),
                ("comm_us", c_double), ("exposed_comm_us", c_double),
                ("energy_j", c_double), ("energy_no_gating_j", c_double),
                ("distinct_collectives", c_int), ("num_ops", c_int),
                ("ops", POINTER(WorkloadOpResult))]


class FabricConfig(Structure):
    _fields_ = [("tiles", c_int), ("columns", c_int),
                ("packet_bytes", c_int)]


class FabricScheduleInfo(Structure):
    _fields_ = [("packets", c_uint64), ("deliveries", c_uint64),
                ("cycles", c_int64), ("lower_bound_cycles", c_int64)]


class FabricStats(Structure):
    _fields_ = [("packets", c_uint64), ("deliveries", c_uint64),
                ("delivered", c_uint64), ("misdelivered", c_uint64),
                ("late", c_uint64), ("missed", c_uint64),
                ("slipped", c_uint64), ("cycles", c_int64),
                ("toggles", c_uint64), ("toggles_ungated", c_uint64)]


class Config(Structure):
    _fields_ = [("topology", c_char_p), ("strategy", c_char_p),
                ("groups", c_char_p), ("timeout_s", c_double),
                ("chunk_bytes", c_size_t), ("replica_size", c_int),
                ("max_rings", c_int), ("algo", c_char_p), ("hosts", c_int),
                ("failed_links", c_char_p), ("completion", c_char_p),
                ("shared_buffers", c_int), ("stream_bytes", c_size_t)]


# ---- function signatures --------------------------------------------------
# name: (restype, argtypes). A restype of c_int marked "status" is checked
# by call() below; the others are plain queries.

_P = c_void_p
_PP = POINTER(c_void_p)
_SIGNATURES = {
    "mrc_version": (c_char_p, []),
    "mrc_status_name": (c_char_p, [c_int]),
    "mrc_status_string": (c_char_p, [c_int]),
    "mrc_last_error": (c_char_p, []),
    "mrc_free": (None, [_P]),
    "mrc_dtype_size": (c_size_t, [c_int]),
    "mrc_dtype_name": (c_char_p, [c_int]),
    "mrc_op_name": (c_char_p, [c_int]),
    "mrc_collective_name": (c_char_p, [c_int]),
    "mrc_algo_name": (c_char_p, [c_int]),
    "mrc_completion_name": (c_char_p, [c_int]),
    "mrc_dtype_parse": (c_int, [c_char_p, POINTER(c_int)]),
    "mrc_op_parse": (c_int, [c_char_p, POINTER(c_int)]),
    "mrc_collective_parse": (c_int, [c_char_p, POINTER(c_int)]),
    "mrc_algo_parse": (c_int, [c_char_p, POINTER(c_int)]),
    # topo.h
    "mrc_topo_create": (c_int, [c_char_p, _PP]),
    "mrc_topo_parse_json": (c_int, [c_char_p, c_size_t, c_char_p, _PP]),
    "mrc_topo_from_links": (c_int, [c_int, POINTER(Link), c_int, _PP]),
    "mrc_topo_fail_links": (c_int, [_P, c_char_p, _PP]),
    "mrc_topo_failed_links": (c_char_p, [_P]),
    "mrc_topo_destroy": (None, [_P]),
    "mrc_topo_name": (c_char_p, [_P]),
    "mrc_topo_num_nodes": (c_int, [_P]),
    "mrc_topo_num_links": (c_int, [_P]),
    "mrc_topo_num_physical_links": (c_int, [_P]),
    "mrc_topo_link": (POINTER(Link), [_P, c_int]),
    "mrc_topo_num_ports": (c_int, [_P, c_int]),
    "mrc_topo_port": (c_int, [_P, c_int, c_int, POINTER(c_int),
                              POINTER(c_int), POINTER(c_int)]),
    "mrc_topo_node_name": (c_char_p, [_P, c_int]),
    "mrc_topo_node_position": (c_int, [_P, c_int, POINTER(c_double),
                                       POINTER(c_double)]),
    "mrc_topo_node_bandwidth_gbps": (c_double, [_P, c_int]),
    "mrc_topo_total_bandwidth_gbps": (c_double, [_P]),
    "mrc_topo_to_json": (c_int, [_P, POINTER(c_void_p)]),
    "mrc_topo_save": (c_int, [_P, c_char_p]),
    "mrc_topo_to_dot": (c_int, [_P, POINTER(c_void_p)]),
    # embed.h
    "mrc_embed_create": (c_int, [_P, POINTER(EmbedConfig), _PP]),
    "mrc_embed_parse_json": (c_int, [_P, c_char_p, c_size_t, c_char_p,
                                     _PP]),
    "mrc_embed_destroy": (None, [_P]),
    "mrc_embed_topology": (c_void_p, [_P]),
    "mrc_embed_strategy": (c_char_p, [_P]),
    "mrc_embed_num_groups": (c_int, [_P]),
    "mrc_embed_group_nodes": (c_int, [_P, c_int, POINTER(POINTER(c_int))]),
    "mrc_embed_node_group": (c_int, [_P, c_int]),
    "mrc_embed_num_rings": (c_int, [_P, c_int]),
    "mrc_embed_ring": (POINTER(Ring), [_P, c_int, c_int]),
    "mrc_embed_link_load": (c_double, [_P, c_int, c_int]),
    "mrc_embed_num_idle": (c_int, [_P]),
    "mrc_embed_num_idle_physical": (c_int, [_P]),
    "mrc_embed_idle_ports": (c_int, [_P, c_int]),
    "mrc_embed_group_figures": (c_int, [_P, c_int, POINTER(EmbedFigures)]),
    "mrc_embed_figures": (c_int, [_P, POINTER(EmbedFigures)]),
    "mrc_embed_verify": (c_int, [_P]),
    "mrc_embed_to_json": (c_int, [_P, POINTER(c_void_p)]),
    "mrc_embed_to_dot": (c_int, [_P, POINTER(c_void_p)]),
    "mrc_embed_strategies": (POINTER(c_char_p), []),
    # program.h
    "mrc_program_compile": (c_int, [_P, POINTER(CompileConfig), _PP]),
    "mrc_program_destroy": (None, [_P]),
    "mrc_program_check": (c_int, [_P]),
    "mrc_program_save": (c_int, [_P, POINTER(c_void_p), POINTER(c_size_t)]),
    "mrc_program_load": (c_int, [c_char_p, c_size_t, _PP]),
    "mrc_program_listing": (c_int, [_P, POINTER(c_void_p)]),
    "mrc_program_info": (c_int, [_P, POINTER(ProgramInfo)]),
    # profile.h
    "mrc_profile_load": (c_int, [c_char_p, POINTER(Profile)]),
    "mrc_profile_parse": (c_int, [c_char_p, c_size_t, POINTER(Profile)]),
    # mrc.h
    "mrc_struct_size": (c_size_t, [c_char_p]),
    # sim.h
    "mrc_sim_run": (c_int, [_P, _P, POINTER(SimConfig),
                            POINTER(POINTER(SimResult))]),
    "mrc_sim_result_destroy": (None, [POINTER(SimResult)]),
    "mrc_workload_parse": (c_int, [c_char_p, c_size_t, c_char_p, _PP]),
    "mrc_workload_destroy": (None, [_P]),
    "mrc_sim_workload": (c_int, [_P, _P, POINTER(EmbedConfig),
                                 POINTER(SimConfig),
                                 POINTER(POINTER(WorkloadResult))]),
    "mrc_workload_result_destroy": (None, [POINTER(WorkloadResult)]),
    # fabric.h
    "mrc_fabric_create": (c_int, [POINTER(FabricConfig), _PP]),
    "mrc_fabric_destroy": (None, [_P]),
    "mrc_fabric_tiles": (c_int, [_P]),
    "mrc_fabric_columns": (c_int, [_P]),
    "mrc_fabric_rows": (c_int, [_P]),
    "mrc_fabric_packet_bytes": (c_int, [_P]),
    "mrc_fabric_column_of": (c_int, [_P, c_int]),
    "mrc_fabric_row_of": (c_int, [_P, c_int]),
    "mrc_fabric_delay": (c_int, [_P, c_int, c_int]),
    "mrc_exchange_create": (c_int, [_PP]),
    "mrc_exchange_destroy": (None, [_P]),
    "mrc_exchange_add": (c_int, [_P, c_int, POINTER(c_int), c_int,
                                 c_uint64]),
    "mrc_exchange_entries": (c_size_t, [_P]),
    "mrc_exchange_pattern": (c_int, [c_char_p, c_int, c_int, c_uint64,
                                     c_uint64, _PP]),
    "mrc_exchange_parse_json": (c_int, [c_char_p, c_size_t, c_char_p, _PP,
                                        POINTER(c_int), POINTER(c_int)]),
    "mrc_fabric_schedule": (c_int, [_P, _P, _PP]),
    "mrc_fabric_schedule_destroy": (None, [_P]),
    "mrc_fabric_schedule_info": (None, [_P, POINTER(FabricScheduleInfo)]),
    "mrc_fabric_packet_source": (c_int, [_P, c_uint64]),
    "mrc_fabric_packet_send_cycle": (c_int64, [_P, c_uint64]),
    "mrc_fabric_packet_flags": (c_uint, [_P, c_uint64]),
    "mrc_fabric_mux_select": (c_int, [_P, c_int, c_int64]),
    "mrc_fabric_simulate": (c_int, [_P, _P, POINTER(FabricStats)]),
    # comm.h
    "mrc_comm_init_all": (c_int, [_PP, c_int, POINTER(Config)]),
    "mrc_comm_init_rank": (c_int, [_PP, c_int, c_int, c_char_p,
                                   POINTER(Config)]),
    "mrc_comm_init_env": (c_int, [_PP, POINTER(Config)]),
    "mrc_comm_destroy": (c_int, [_P]),
    "mrc_comm_rank": (c_int, [_P]),
    "mrc_comm_size": (c_int, [_P]),
    "mrc_mem_alloc": (c_int, [c_size_t, _PP]),
    "mrc_mem_free": (c_int, [_P]),
    "mrc_allreduce": (c_int, [_P, _P, c_size_t, c_int, c_int, _P]),
    "mrc_reduce_scatter": (c_int, [_P, _P, c_size_t, c_int, c_int, _P]),
    "mrc_allgather": (c_int, [_P, _P, c_size_t, c_int, _P]),
    "mrc_reduce": (c_int, [_P, _P, c_size_t, c_int, c_int, c_int, _P]),
    "mrc_broadcast": (c_int, [_P, _P, c_size_t, c_int, c_int, _P]),
}

for _name, (_res, _args) in _SIGNATURES.items():
    try:
        _fn = getattr(lib, _name)
    except AttributeError:
        raise ImportError(
            "mrc: %s has no %s: the Python package and the C library are "
            "of different versions" % (LIBRARY_PATH, _name)) from None
    _fn.restype = _res
    _fn.argtypes = _args

# Each mirrored struct as large as the library's: a field added to a
# header and not here (or the other way) would have the library write
# past the end of the Python object (the profile lacked two doubles once,
# and parsing one aborted the interpreter).
STRUCTS = {Link: "mrc_link_t", Hop: "mrc_hop_t", Ring: "mrc_ring_t",
           EmbedConfig: "mrc_embed_config_t",
           EmbedFigures: "mrc_embed_figures_t",
           CompileConfig: "mrc_compile_config_t",
           ProgramInfo: "mrc_program_info_t", Profile: "mrc_profile_t",
           SimConfig: "mrc_sim_config_t", SimResult: "mrc_sim_result_t",
           WorkloadOpResult: "mrc_workload_op_result_t",
           WorkloadResult: "mrc_workload_result_t",
           FabricConfig: "mrc_fabric_config_t",
           FabricScheduleInfo: "mrc_fabric_schedule_info_t",
           FabricStats: "mrc_fabric_stats_t", Config: "mrc_config_t"}
for _cls, _cname in STRUCTS.items():
    _size = lib.mrc_struct_size(_cname.encode())
    if _size != ctypes.sizeof(_cls):
        raise ImportError(
            "mrc: the binding's %s is %d bytes, %s in %s is %d: the Python "
            "package and the C library are of different versions"
            % (_cls.__name__, ctypes.sizeof(_cls), _cname, LIBRARY_PATH, _size))

# Present when libmrc was built with MPI (mrc/mrc_mpi.h); the MPI_Comm
# argument's C type depends on the MPI, so it is left to the caller.
HAVE_MPI = hasattr(lib, "mrc_comm_init_mpi")
if HAVE_MPI:
    lib.mrc_comm_init_mpi.restype = c_int


def text(b):
    """A C string (bytes or None) as str."""
    return None if b is None else b.decode("utf-8", "replace")


def arg(s):
    """A Python string argument as a C string (None stays NULL)."""
    if s is None:
        return None
    if not isinstance(s, str):
        raise error_arg("expected a string, got %r" % (s,))
    return s.encode("utf-8")


def error_arg(message):
    """An Error for bad arguments found before the C library is called,
    with the same status the library gives them."""
    return Error(-1, "MRC_ERR_INVALID_ARG", message)


def check(status):
    """Raises Error for any status other than MRC_OK; the message is read
    on the calling thread, right after the failing call, as mrc keeps it
    per thread."""
    if status != 0:
        message = text(lib.mrc_last_error()) or text(
            lib.mrc_status_string(status))
        raise Error(status, text(lib.mrc_status_name(status)), message)


def take_string(ptr):
    """A string the library allocated (a char ** out parameter): copied
    out and freed."""
    try:
        return ctypes.string_at(ptr.value).decode("utf-8", "replace")
    finally:
        lib.mrc_free(ptr)


def parse_enum(kind, value):
    """A dtype/op/collective/algo given by name (or already an int) as the
    C enum value; unknown names raise Error with mrc's list of names."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    out = c_int()
    check(getattr(lib, "mrc_%s_parse" % kind)(arg(value), ctypes.byref(out)))
    return out.value


class _Handle:
    """One C object and its destroy function. It is freed once it is
    garbage and no live handle borrows it: an embedding's handle borrows
    its topology's, and the topology is destroyed after the embedding even
    when the garbage collector finalises a cycle of both in the other
    order."""

    __slots__ = ("ptr", "destroy", "deps", "users", "garbage")

    def __init__(self, ptr, destroy, deps=()):
        self.ptr = ptr
        self.destroy = destroy
        self.deps = tuple(deps)
        self.users = 0
        self.garbage = False
        for d in self.deps:
            d.users += 1

    def _release(self):
        if not (self.garbage and self.users == 0 and self.ptr):
            return
        ptr, self.ptr = self.ptr, None
        if self.destroy and lib is not None:
            try:
                getattr(lib, self.destroy)(ptr)
            except Exception:  # interpreter shutdown
                pass
        for d in self.deps:
            d.users -= 1
            d._release()

    def __del__(self):
        self.garbage = True
        self._release()


class Owned:
    """Base of objects that own a C handle. close() gives it up (again is
    a no-op; using the object afterwards raises Error), `with` closes at
    the end of the block, and garbage collection closes what is left.
    The C object itself is freed once nothing borrows it any more: an
    embedding keeps its topology's alive even if the topology is closed
    first, so no order of close() calls leaves a dangling pointer."""

    _destroy = None

    def __init__(self, handle, borrows=()):
        self._borrowed = tuple(o._h for o in borrows if o is not None)
        self._h = _Handle(handle, self._destroy, self._borrowed)

    @property
    def handle(self):
        """The C pointer (an int); Error once closed."""
        h = getattr(self, "_h", None)
        if h is None or not h.ptr:
            raise error_arg("%s is closed" % type(self).__name__)
        return h.ptr

    @property
    def closed(self):
        return getattr(self, "_h", None) is None

    def close(self):
        self._h = None
        self._borrowed = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
