"""The tile exchange fabric inside a chip (include/mrc/fabric.h,
docs/fabric.md): geometry, exchanges, the compile-time schedule and the
cycle-by-cycle simulation."""

import os
from ctypes import POINTER, byref, c_int, c_void_p

import numpy as np

from . import _lib
from ._lib import Owned, arg, check, lib

__all__ = ["Fabric", "Exchange", "Schedule", "EAST", "WEST"]

EAST = 1
WEST = 2


def _fields(s):
    return {f: getattr(s, f) for f, _ in s._fields_}


class Fabric(Owned):
    """The geometry: ``tiles`` tiles (0: 1472) in ``columns`` columns
    (0: 16) along the exchange, packets of ``packet_bytes`` (0: 4)."""

    _destroy = "mrc_fabric_destroy"

    def __init__(self, tiles=0, columns=0, packet_bytes=0):
        cfg = _lib.FabricConfig(int(tiles), int(columns), int(packet_bytes))
        out = c_void_p()
        check(lib.mrc_fabric_create(byref(cfg), byref(out)))
        super().__init__(out.value)

    tiles = property(lambda self: lib.mrc_fabric_tiles(self.handle))
    columns = property(lambda self: lib.mrc_fabric_columns(self.handle))
    rows = property(lambda self: lib.mrc_fabric_rows(self.handle),
                    doc="tiles in a full column")
    packet_bytes = property(
        lambda self: lib.mrc_fabric_packet_bytes(self.handle))

    def _tile(self, t):
        t = int(t)
        if not 0 <= t < self.tiles:
            raise _lib.error_arg("tile %d: out of range (the fabric has %d)"
                                 % (t, self.tiles))
        return t

    def column_of(self, tile):
        return lib.mrc_fabric_column_of(self.handle, self._tile(tile))

    def row_of(self, tile):
        return lib.mrc_fabric_row_of(self.handle, self._tile(tile))

    def delay(self, source, dest):
        """Cycles from a send by ``source`` to its arrival at ``dest``."""
        return lib.mrc_fabric_delay(self.handle, self._tile(source),
                                    self._tile(dest))

    def schedule(self, exchange):
        """The compile-time schedule of ``exchange`` on this fabric."""
        return Schedule(self, exchange)

    def run(self, exchange):
        """Schedules and simulates ``exchange``: a dict of the schedule's
        info and the simulation's stats (as `mrc fabric --json`)."""
        with self.schedule(exchange) as s:
            d = s.info
            sim = s.simulate()
        d["simulated_cycles"] = sim.pop("cycles")
        d.update(sim)
        return d

    def __repr__(self):
        if self.closed:
            return "<mrc.Fabric (closed)>"
        return "<mrc.Fabric %d tiles in %d columns of %d, %d-byte packets>" % (
            self.tiles, self.columns, self.rows, self.packet_bytes)


class Exchange(Owned):
    """A list of transfers {source tile, destination tiles, bytes}: empty
    (then :meth:`add`), a named pattern (:meth:`pattern`) or JSON
    (:meth:`from_json`)."""

    _destroy = "mrc_exchange_destroy"

    def __init__(self, _handle=None):
        if _handle is None:
            out = c_void_p()
            check(lib.mrc_exchange_create(byref(out)))
            _handle = out.value
        self.tiles = self.columns = None
        super().__init__(_handle)

    @classmethod
    def pattern(cls, name, tiles=0, columns=0, seed=1, bytes=0):
        """A named pattern: neighbour, broadcast, random, all-to-all, over
        ``tiles`` in ``columns`` (0: the defaults, 1472 and 16), one
        transfer of ``bytes`` per entry (0: 4)."""
        out = c_void_p()
        tiles = int(tiles) or 1472
        columns = int(columns) or 16
        check(lib.mrc_exchange_pattern(arg(name), tiles, columns, int(seed),
                                       int(bytes) or 4, byref(out)))
        x = cls(out.value)
        x.tiles, x.columns = tiles, columns
        return x

    @classmethod
    def from_json(cls, text_, origin=None):
        """An exchange from JSON text or a file path: {"tiles": T,
        "columns": C, "exchange": [{"source": 0, "destinations": [1, 5],
        "bytes": 8}, ...]}. ``tiles`` and ``columns`` are set to the
        file's, or None."""
        if not (isinstance(text_, str) and text_.lstrip().startswith("{")):
            origin = os.fspath(text_)
            with open(origin, "rb") as f:
                text_ = f.read()
        data = text_.encode("utf-8") if isinstance(text_, str) else text_
        out, t, c = c_void_p(), c_int(), c_int()
        check(lib.mrc_exchange_parse_json(data, len(data), arg(origin),
                                          byref(out), byref(t), byref(c)))
        x = cls(out.value)
        x.tiles, x.columns = t.value or None, c.value or None
        return x

    def add(self, source, dests, bytes=4):
        """Adds a transfer of ``bytes`` from ``source`` to every tile of
        ``dests`` (one packet multicast to all of them per packet_bytes)."""
        d = np.ascontiguousarray(dests, dtype=np.intc).ravel()
        check(lib.mrc_exchange_add(self.handle, int(source),
                                   d.ctypes.data_as(POINTER(c_int)), len(d),
                                   int(bytes)))

    def __len__(self):
        return lib.mrc_exchange_entries(self.handle)


class Schedule(Owned):
    """Send cycles and flags of every packet and every tile's multiplexer
    selection per cycle. Keeps its fabric and exchange alive."""

    _destroy = "mrc_fabric_schedule_destroy"

    def __init__(self, fabric, exchange):
        self.fabric, self.exchange = fabric, exchange
        out = c_void_p()
        check(lib.mrc_fabric_schedule(fabric.handle, exchange.handle,
                                      byref(out)))
        super().__init__(out.value, borrows=(fabric, exchange))

    def _fabric(self):
        """The fabric's C pointer: held by the schedule even if the
        Fabric object was closed."""
        self.handle  # Error if the schedule is closed
        return self._borrowed[0].ptr

    @property
    def info(self):
        """A dict: packets, deliveries, cycles, lower_bound_cycles."""
        i = _lib.FabricScheduleInfo()
        lib.mrc_fabric_schedule_info(self.handle, byref(i))
        return _fields(i)

    def packets(self):
        """Every packet's source, send cycle and flags (EAST | WEST), as
        three numpy arrays in a dict."""
        n = self.info["packets"]
        h = self.handle
        return {"source": np.fromiter(
                    (lib.mrc_fabric_packet_source(h, p) for p in range(n)),
                    dtype=np.int32, count=n),
                "send_cycle": np.fromiter(
                    (lib.mrc_fabric_packet_send_cycle(h, p)
                     for p in range(n)), dtype=np.int64, count=n),
                "flags": np.fromiter(
                    (lib.mrc_fabric_packet_flags(h, p) for p in range(n)),
                    dtype=np.uint8, count=n)}

    def mux_select(self, tile, cycle):
        """The sender tile ``tile``'s multiplexer selects in ``cycle``, or
        -1."""
        tiles = lib.mrc_fabric_tiles(self._fabric())
        if not 0 <= int(tile) < tiles:
            raise _lib.error_arg("tile %d: out of range (the fabric has %d)"
                                 % (tile, tiles))
        return lib.mrc_fabric_mux_select(self.handle, int(tile), int(cycle))

    def simulate(self):
        """Plays the schedule cycle by cycle; a dict: packets, deliveries,
        delivered, misdelivered, late, missed, slipped, cycles, toggles,
        toggles_ungated, saved (the share of toggles the flags save)."""
        s = _lib.FabricStats()
        check(lib.mrc_fabric_simulate(self._fabric(), self.handle,
                                      byref(s)))
        d = _fields(s)
        d["saved"] = (1.0 - s.toggles / s.toggles_ungated
                      if s.toggles_ungated else 0.0)
        return d
