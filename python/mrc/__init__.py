"""mrc: multi-ring collective communication, from Python.

A thin layer (ctypes) over libmrc: topologies, ring embeddings, compiled
programs, the link simulator and the tile fabric, and communicators whose
collectives run on numpy arrays in place. Every failing call raises
:class:`mrc.Error` with mrc's own message. docs/python.md has a tour.

    >>> import mrc
    >>> t = mrc.Topology("hcm8")
    >>> e = mrc.Embedding(t)
    >>> e.efficiency
    1.0
    >>> r = mrc.simulate(mrc.compile(e, "allreduce", 1 << 18))

The torch.distributed backend is a separate module, ``mrc.torch``; this
package does not import torch.
"""

from ._lib import Error, LIBRARY_PATH, lib as _clib
from .comm import (DTYPES, OPS, Comm, from_bfloat16, launched,
                   shared_array, to_bfloat16)
from .fabric import EAST, WEST, Exchange, Fabric, Schedule
from .program import (Profile, Program, SimResult, compile, load_profile,
                      simulate, simulate_workload)
from .topology import Embedding, Topology, strategies

__version__ = _clib.mrc_version().decode()

__all__ = ["Error", "LIBRARY_PATH", "Comm", "DTYPES", "OPS", "launched",
           "to_bfloat16", "from_bfloat16", "shared_array",
           "Exchange", "Fabric", "Schedule", "EAST", "WEST", "Profile",
           "Program", "SimResult", "compile", "load_profile", "simulate",
           "simulate_workload", "Embedding", "Topology", "strategies"]
