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

Tensors in shared memory: `use_shared_memory()` makes torch's CPU
allocator take tensors of 1 MiB or more from mrc_mem_alloc, memory that
the other ranks map and read with plain loads instead of through the
kernel (all_reduce of 64 MiB on 2 ranks: docs/performance.md). It pays for
tensors made after it (for DDP, before the model is wrapped). Setting
MRC_TORCH_SHARED_MEMORY=1 in the environment turns it on at import.
"""

import os as _os

import torch.distributed as _dist

from . import _torch_ext

BACKEND = "mrc"


def create_process_group(store, rank, world_size, timeout):
    """The creator that torch.distributed calls for backend "mrc"."""
    return _torch_ext.create_process_group(store, rank, world_size, timeout)


def use_shared_memory(enable=True, min_bytes=1 << 20):
    """Tensors of min_bytes or more made from now on come from memory the
    ranks of the job map directly (enable=True), or from torch's allocator
    again (enable=False). Tensors keep the memory they were made with."""
    if min_bytes < 0:
        raise ValueError("min_bytes is %d, not a size" % min_bytes)
    _torch_ext.use_shared_memory(bool(enable), int(min_bytes))


def in_shared_memory(tensor):
    """Whether the tensor's storage came from use_shared_memory."""
    return _torch_ext.in_shared_memory(tensor)


def _register():
    # A second import (or a reload) must not register twice: torch asserts
    # that a name is new.
    if BACKEND.upper() not in _dist.Backend._plugins:
        _dist.Backend.register_backend(BACKEND, create_process_group)


_register()
if _os.environ.get("MRC_TORCH_SHARED_MEMORY", "0") not in ("", "0"):
    use_shared_memory()
