"""Topologies and the rings embedded in them (include/mrc/topo.h,
include/mrc/embed.h)."""

import os
from ctypes import POINTER, byref, c_double, c_int, c_void_p

import numpy as np

from . import _lib
from ._lib import Owned, arg, check, lib, take_string, text

__all__ = ["Topology", "Embedding", "strategies"]

_LINK_FIELDS = ("a", "b", "count", "bandwidth_gbps", "latency_ns",
                "port_a", "port_b")


def _link_dict(link):
    return {f: getattr(link, f) for f in _LINK_FIELDS}


def _ints(ptr, n):
    """n C ints at ptr as a new numpy array (the C memory is the
    owner's, so it is copied out)."""
    if n <= 0:
        return np.zeros(0, dtype=np.intc)
    return np.ctypeslib.as_array(ptr, shape=(n,)).copy()


class Topology(Owned):
    """A physical topology: nodes joined by full-duplex links.

    ``Topology(spec)`` takes a generator spec ("hcm8", "torus2d:4,4,bw=50",
    "ladder:4,rung=2") or the path of a topology file
    (docs/topology-format.md). Other sources: :meth:`from_json`,
    :meth:`from_links`. Immutable; validated in full when made.
    """

    _destroy = "mrc_topo_destroy"

    def __init__(self, spec=None, _handle=None, _parent=None):
        if _handle is None:
            if not isinstance(spec, (str, os.PathLike)):
                raise _lib.error_arg("Topology: a spec or a file name, not "
                                     "%r" % (spec,))
            out = c_void_p()
            check(lib.mrc_topo_create(arg(os.fspath(spec)), byref(out)))
            _handle = out.value
        # A copy made by fail_links() refers to its intact topology.
        super().__init__(_handle, borrows=(_parent,))

    @classmethod
    def from_json(cls, text_, origin=None):
        """A topology from JSON text in the file format."""
        data = text_.encode("utf-8") if isinstance(text_, str) else text_
        out = c_void_p()
        check(lib.mrc_topo_parse_json(data, len(data), arg(origin),
                                      byref(out)))
        return cls(_handle=out.value)

    @classmethod
    def from_links(cls, num_nodes, links):
        """A topology of ``num_nodes`` nodes from links given as dicts
        (keys a, b and optionally count, bandwidth_gbps, latency_ns) or
        tuples (a, b[, count[, bandwidth_gbps[, latency_ns]]]). Omitted
        fields take the file format's defaults (1 link, 32 GB/s,
        500 ns)."""
        arr = (_lib.Link * max(len(links), 1))()
        for i, link in enumerate(links):
            if isinstance(link, dict):
                unknown = set(link) - set(_LINK_FIELDS)
                if unknown:
                    raise _lib.error_arg(
                        "link %d: unknown key %s (known: a, b, count, "
                        "bandwidth_gbps, latency_ns)"
                        % (i, sorted(unknown)[0]))
                link = (link.get("a"), link.get("b"), link.get("count", 1),
                        link.get("bandwidth_gbps", 32.0),
                        link.get("latency_ns", 500.0))
            link = tuple(link) + (1, 32.0, 500.0)[max(len(link) - 2, 0):]
            try:
                arr[i] = _lib.Link(int(link[0]), int(link[1]), int(link[2]),
                                   float(link[3]), float(link[4]), 0, 0)
            except (TypeError, ValueError, IndexError):
                raise _lib.error_arg("link %d: %r is not (a, b[, count[, "
                                     "bandwidth_gbps[, latency_ns]]])"
                                     % (i, links[i])) from None
        out = c_void_p()
        check(lib.mrc_topo_from_links(int(num_nodes), arr, len(links),
                                      byref(out)))
        return cls(_handle=out.value)

    def fail_links(self, failed):
        """A copy without the links that ``failed`` names ("0-1",
        "2-3:1,4-5")."""
        out = c_void_p()
        check(lib.mrc_topo_fail_links(self.handle, arg(failed), byref(out)))
        return Topology(_handle=out.value, _parent=self)

    # ---- queries ---------------------------------------------------------

    @property
    def name(self):
        return text(lib.mrc_topo_name(self.handle))

    @property
    def num_nodes(self):
        return lib.mrc_topo_num_nodes(self.handle)

    @property
    def num_links(self):
        """Link entries (a link of count c is one entry)."""
        return lib.mrc_topo_num_links(self.handle)

    @property
    def num_physical_links(self):
        return lib.mrc_topo_num_physical_links(self.handle)

    @property
    def failed_links(self):
        """The links fail_links() took out ("0-4:1"), or None."""
        return text(lib.mrc_topo_failed_links(self.handle))

    def link(self, i):
        """Link entry i as a dict: a, b, count, bandwidth_gbps, latency_ns,
        port_a, port_b."""
        p = lib.mrc_topo_link(self.handle, int(i))
        if not p:
            raise _lib.error_arg("link %d: out of range (the topology has "
                                 "%d)" % (i, self.num_links))
        return _link_dict(p.contents)

    @property
    def links(self):
        """Every link entry, as dicts (see :meth:`link`)."""
        return [self.link(i) for i in range(self.num_links)]

    def links_array(self):
        """The links as numpy arrays in a dict: a, b, count, port_a,
        port_b (int) and bandwidth_gbps, latency_ns (float), one element
        a link entry."""
        links = self.links
        return {f: np.array([l[f] for l in links],
                            dtype=float if f in ("bandwidth_gbps",
                                                 "latency_ns") else int)
                for f in _LINK_FIELDS}

    def num_ports(self, node):
        n = lib.mrc_topo_num_ports(self.handle, int(node))
        if n < 0:
            raise _lib.error_arg("node %d: out of range (the topology has "
                                 "%d)" % (node, self.num_nodes))
        return n

    def port(self, node, port):
        """What is behind ``port`` of ``node``: (link, peer, peer_port)."""
        link, peer, peer_port = c_int(), c_int(), c_int()
        check(lib.mrc_topo_port(self.handle, int(node), int(port),
                                byref(link), byref(peer), byref(peer_port)))
        return link.value, peer.value, peer_port.value

    def node_name(self, node):
        return text(lib.mrc_topo_node_name(self.handle, int(node)))

    def node_position(self, node):
        """(x, y) if the node has drawing coordinates, else None."""
        x, y = c_double(), c_double()
        if lib.mrc_topo_node_position(self.handle, int(node), byref(x),
                                      byref(y)):
            return x.value, y.value
        return None

    @property
    def node_bandwidth_gbps(self):
        """Each node's total outgoing bandwidth (GB/s), a numpy array."""
        return np.array([lib.mrc_topo_node_bandwidth_gbps(self.handle, n)
                         for n in range(self.num_nodes)])

    @property
    def total_bandwidth_gbps(self):
        return lib.mrc_topo_total_bandwidth_gbps(self.handle)

    # ---- output ----------------------------------------------------------

    def to_json(self):
        """The topology in the file format (reads back identical)."""
        out = c_void_p()
        check(lib.mrc_topo_to_json(self.handle, byref(out)))
        return take_string(out)

    def to_dot(self):
        out = c_void_p()
        check(lib.mrc_topo_to_dot(self.handle, byref(out)))
        return take_string(out)

    def save(self, path):
        """Writes the file format to ``path``, whole or not at all."""
        check(lib.mrc_topo_save(self.handle, arg(str(path))))

    def embed(self, strategy=None, groups=None, replica_size=0, max_rings=0):
        """Rings embedded in this topology: see :class:`Embedding`."""
        return Embedding(self, strategy, groups, replica_size, max_rings)

    def __repr__(self):
        if self.closed:
            return "<mrc.Topology (closed)>"
        return "<mrc.Topology %s: %d nodes, %d links>" % (
            self.name, self.num_nodes, self.num_links)


def strategies():
    """The names of the ring strategies (`mrc help rings`)."""
    p = lib.mrc_embed_strategies()
    names = []
    i = 0
    while p[i] is not None:
        names.append(text(p[i]))
        i += 1
    return names


class Embedding(Owned):
    """Logical rings embedded in a topology.

    ``Embedding(topo, strategy=None, groups=None, replica_size=0,
    max_rings=0)``: ``strategy`` a name from :func:`strategies` (None:
    auto), ``groups`` "4+4" or "0,4+1,5" (None: one group of every node),
    ``replica_size`` GCL replicas, ``max_rings`` a limit per group. The
    embedding keeps its topology alive.
    """

    _destroy = "mrc_embed_destroy"

    def __init__(self, topology, strategy=None, groups=None, replica_size=0,
                 max_rings=0, _handle=None):
        if not isinstance(topology, Topology):
            topology = Topology(topology)
        self.topology = topology
        if _handle is None:
            self._config = _lib.EmbedConfig(arg(strategy), arg(groups),
                                            int(replica_size), int(max_rings))
            out = c_void_p()
            check(lib.mrc_embed_create(topology.handle, byref(self._config),
                                       byref(out)))
            _handle = out.value
        super().__init__(_handle, borrows=(topology,))

    @classmethod
    def from_json(cls, topology, text_, origin=None):
        """An embedding in the JSON form of :meth:`to_json`, verified."""
        data = text_.encode("utf-8") if isinstance(text_, str) else text_
        out = c_void_p()
        check(lib.mrc_embed_parse_json(topology.handle, data, len(data),
                                       arg(origin), byref(out)))
        return cls(topology, _handle=out.value)

    def _topo(self):
        """The topology's C pointer, alive while the embedding is, even
        if the Topology object was closed."""
        return lib.mrc_embed_topology(self.handle)

    @property
    def strategy(self):
        return text(lib.mrc_embed_strategy(self.handle))

    @property
    def num_groups(self):
        return lib.mrc_embed_num_groups(self.handle)

    def group_nodes(self, g):
        """The nodes of group g in rank order (numpy array)."""
        nodes = POINTER(c_int)()
        n = lib.mrc_embed_group_nodes(self.handle, int(g), byref(nodes))
        if n < 0 or not 0 <= g < self.num_groups:
            raise _lib.error_arg("group %d: out of range (the embedding has "
                                 "%d)" % (g, self.num_groups))
        return _ints(nodes, n)

    @property
    def groups(self):
        return [self.group_nodes(g) for g in range(self.num_groups)]

    def node_group(self, node):
        return lib.mrc_embed_node_group(self.handle, int(node))

    def num_rings(self, g=0):
        return lib.mrc_embed_num_rings(self.handle, int(g))

    def ring(self, g, r):
        """Ring r of group g as a dict: nodes (numpy array), bidirectional,
        share, and hops (dicts: from, to, route, links, ports, in_ports)."""
        p = lib.mrc_embed_ring(self.handle, int(g), int(r))
        if not p:
            raise _lib.error_arg("ring %d of group %d: out of range" % (r, g))
        ring = p.contents
        hops = []
        for i in range(ring.size):
            h = ring.hops[i]
            steps = h.route_len - 1
            hops.append({"from": h.from_, "to": h.to,
                         "route": _ints(h.route, h.route_len),
                         "links": _ints(h.links, steps),
                         "ports": _ints(h.ports, steps),
                         "in_ports": _ints(h.in_ports, steps)})
        return {"nodes": _ints(ring.nodes, ring.size),
                "bidirectional": bool(ring.bidirectional),
                "share": ring.share, "hops": hops}

    def rings(self, g=0):
        """The rings of group g (see :meth:`ring`)."""
        return [self.ring(g, r) for r in range(self.num_rings(g))]

    @property
    def link_loads(self):
        """Bytes carried per byte of each group's allreduce data, a numpy
        array of shape (num_links, 2): [i, 0] is link entry i from a to b,
        [i, 1] from b to a; 0 where the direction is idle."""
        n = lib.mrc_topo_num_links(self._topo())
        out = np.zeros((n, 2))
        for i in range(n):
            for d in (0, 1):
                out[i, d] = lib.mrc_embed_link_load(self.handle, i, d)
        return out

    @property
    def idle_link_directions(self):
        return lib.mrc_embed_num_idle(self.handle)

    @property
    def idle_physical_links(self):
        return lib.mrc_embed_num_idle_physical(self.handle)

    @property
    def idle_ports(self):
        """Ports no hop uses, per node (numpy array)."""
        return np.array([lib.mrc_embed_idle_ports(self.handle, n)
                         for n in range(lib.mrc_topo_num_nodes(
                             self._topo()))])

    def figures(self, group=None):
        """Allreduce figures as a dict (bound_gbps, algbw_gbps,
        efficiency): of group ``group``, or of the worst group."""
        f = _lib.EmbedFigures()
        if group is None:
            check(lib.mrc_embed_figures(self.handle, byref(f)))
        else:
            check(lib.mrc_embed_group_figures(self.handle, int(group),
                                              byref(f)))
        return {"bound_gbps": f.bound_gbps, "algbw_gbps": f.algbw_gbps,
                "efficiency": f.efficiency}

    @property
    def efficiency(self):
        return self.figures()["efficiency"]

    def verify(self):
        """Checks every invariant again; Error if one fails."""
        check(lib.mrc_embed_verify(self.handle))

    def to_json(self):
        out = c_void_p()
        check(lib.mrc_embed_to_json(self.handle, byref(out)))
        return take_string(out)

    def to_dot(self):
        out = c_void_p()
        check(lib.mrc_embed_to_dot(self.handle, byref(out)))
        return take_string(out)

    def compile(self, collective, count, dtype="float32", op="sum", root=0,
                chunk_bytes=0, algo="rings", hosts=0):
        """Compiles a collective on these rings: see
        :func:`mrc.compile`."""
        from .program import compile as _compile
        return _compile(self, collective, count, dtype, op, root,
                        chunk_bytes, algo, hosts)

    def __repr__(self):
        if self.closed:
            return "<mrc.Embedding (closed)>"
        return "<mrc.Embedding %s on %s: %d groups, efficiency %.4f>" % (
            self.strategy, text(lib.mrc_topo_name(self._topo())),
            self.num_groups,
            self.efficiency)

