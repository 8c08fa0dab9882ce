"""backend="mrc" for torch.distributed.

Importing this module registers the backend:

    import mrc.torch  # registers the backend
    dist.init_process_group("mrc", rank=r, world_size=n)

Ranks of one host meet through the process group's store (env://, tcp://,
file:// or a store passed in), so torchrun and torch.multiprocessing.spawn
need nothing more. Collectives run on CPU tensors of int8, uint8, int32,
int64, float16, bfloat16, float32 and float64 with ReduceOp SUM, AVG,
PRODUCT, MIN and MAX; the process group's timeout bounds every call, and a
peer that dies makes the others' calls raise a RuntimeError naming it.
"""

import torch.distributed as _dist

from . import _torch_ext

BACKEND = "mrc"


def create_process_group(store, rank, world_size, timeout):
    """The creator that torch.distributed calls for backend "mrc"."""
    return _torch_ext.create_process_group(store, rank, world_size, timeout)


def _register():
    # A second import (or a reload) must not register twice: torch asserts
    # that a name is new.
    if BACKEND.upper() not in _dist.Backend._plugins:
        _dist.Backend.register_backend(BACKEND, create_process_group)


_register()
