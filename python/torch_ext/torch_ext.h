/* What the extension's files share (process_group.cpp registers them). */
#ifndef MRC_TORCH_EXT_H
#define MRC_TORCH_EXT_H

#include <ATen/ATen.h>

#include <cstddef>

/* allocator.cpp: torch's CPU allocator takes tensors of min_bytes or more
 * from mrc_mem_alloc (enable), or is put back as it was. */
void mrc_torch_use_shared_memory(bool enable, size_t min_bytes);
/* Whether use_shared_memory is on (every rank is to turn it on alike:
 * a process group made while it is on reads its peers' tensors in
 * place, mrc_config_t.shared_buffers). */
bool mrc_torch_shared_memory_on();
/* Whether t's storage is such a region. */
bool mrc_torch_in_shared_memory(const at::Tensor &t);
/* For the tests: bytes from the CPU allocator's raw_allocate, written,
 * and given back with raw_deallocate (torch's own code calls them). */
void mrc_torch_raw_roundtrip(size_t bytes);

#endif
