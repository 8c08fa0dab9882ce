/*
 * mrc.torch.use_shared_memory: torch's CPU allocator, for tensors of
 * min_bytes or more, takes memory from mrc_mem_alloc, which the peers of
 * a shared-memory job map and read with plain loads (the kernel's copy
 * otherwise: a third of a 64 MiB all_reduce's time here). Smaller
 * tensors, and any allocation mrc_mem_alloc refuses (each region is a
 * file: the descriptors may run out), come from the allocator that was
 * in place before.
 *
 * Accepts: enabling and disabling at any time; tensors keep the memory
 * they were made with and free it the right way whichever is in place.
 * Limits: CPU tensors only (it is torch's CPU allocator); 64 regions
 * alive at once are shared with the peers (mrc_mem_alloc), so it pays
 * for the tensors that are communicated, made after it is enabled
 * (DDP's buckets: enable it before wrapping the model).
 */
#include <c10/core/CPUAllocator.h>

#include <cstring>
#include <mutex>
#include <unordered_set>

#include "mrc/comm.h"
#include "mrc/status.h"
#include "torch_ext.h"

namespace {

std::mutex lock;
std::unordered_set<void *> regions; /* the tensors' regions alive */
c10::DeleterFnPtr before_raw = nullptr; /* the allocator before's */

void free_region(void *p)
{
    {
        std::lock_guard<std::mutex> g(lock);
        regions.erase(p);
    }
    mrc_mem_free(p);
}

/* raw_deallocate's deleter: raw_allocate takes its memory from allocate,
 * so it may be a region or the allocator before's. */
void free_any(void *p)
{
    bool mine;
    {
        std::lock_guard<std::mutex> g(lock);
        mine = regions.count(p) > 0;
    }
    if (mine)
        free_region(p);
    else if (before_raw)
        before_raw(p);
}

struct SharedAllocator final : c10::Allocator {
    c10::Allocator *before = nullptr;
    size_t min_bytes = 0;

    c10::DataPtr allocate(size_t n) const override
    {
        void *p = nullptr;
        if (n >= min_bytes && n > 0 && mrc_mem_alloc(n, &p) == MRC_OK) {
            std::lock_guard<std::mutex> g(lock);
            regions.insert(p);
            return {p, p, &free_region, c10::Device(c10::DeviceType::CPU)};
        }
        return before->allocate(n);
    }
    c10::DeleterFnPtr raw_deleter() const override { return &free_any; }
};

SharedAllocator shared;
c10::Allocator *original = nullptr;
/* Above the default's 0, so that it takes the place; the same when the
 * original is put back. */
constexpr uint8_t PRIORITY = 1;

} // namespace

void mrc_torch_use_shared_memory(bool enable, size_t min_bytes)
{
    std::lock_guard<std::mutex> g(lock);
    if (!original)
        original = c10::GetCPUAllocator();
    if (enable) {
        shared.before = original;
        before_raw = original->raw_deleter();
        shared.min_bytes = min_bytes;
        c10::SetCPUAllocator(&shared, PRIORITY);
    } else {
        c10::SetCPUAllocator(original, PRIORITY);
    }
}

bool mrc_torch_shared_memory_on()
{
    std::lock_guard<std::mutex> g(lock);
    return original && c10::GetCPUAllocator() == &shared;
}

bool mrc_torch_in_shared_memory(const at::Tensor &t)
{
    void *p = t.storage().data_ptr().get_context();
    std::lock_guard<std::mutex> g(lock);
    return t.storage().data_ptr().get_deleter() == &free_region &&
           regions.count(p) > 0;
}

void mrc_torch_raw_roundtrip(size_t bytes)
{
    c10::Allocator *a = c10::GetCPUAllocator();
    void *p = a->raw_allocate(bytes);
    memset(p, 1, bytes);
    a->raw_deallocate(p);
}
