// The CPU allocator (aligned operator new, large blocks cached for reuse) with byte counters, its
// registration in the "allocator" table, and the device-neutral allocate/stats functions that
// reach each device's allocator through that table.
#include "core/allocator.h"

#include <atomic>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "core/core_kernels.h"
#include "core/dispatch.h"
#include "core/error.h"

namespace qgrad {

namespace {
// Explicit counters, not state that changes behaviour: they only feed allocator_stats().
struct Counters {
  std::atomic<std::size_t> current{0};
  std::atomic<std::size_t> peak{0};
  void add(std::size_t n) {
    std::size_t now = current.fetch_add(n) + n;
    std::size_t p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
  }
  void sub(std::size_t n) { current.fetch_sub(n); }
};
Counters& cpu_counters() {
  static Counters c;
  return c;
}

// Large blocks are kept for reuse when freed: a fresh multi-megabyte block costs a page fault per
// 4 KiB on first touch (glibc returns such blocks to the OS on free), which made every op on big
// tensors pay far more for allocation than for its arithmetic. Sizes are bucketed (4 steps per
// power of two, at most 25% slack) so that the shapes of a training step find their blocks again.
// This is an explicit cache with a byte limit; small blocks go straight to the system allocator.
constexpr std::size_t kCacheMinBytes = std::size_t{1} << 18;  // 256 KiB

struct BlockHeader {
  std::size_t requested;  // bytes the caller asked for (feeds the counters)
  std::size_t capacity;   // bytes actually allocated after the header (the bucket size)
};
static_assert(sizeof(BlockHeader) <= kCpuAlignment, "header must fit in the alignment gap");

struct CpuBlockCache {
  std::mutex mu;
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks;  // capacity -> bases
  std::size_t cached_bytes = 0;
  std::size_t limit_bytes = std::size_t{4} << 30;
};
// Immortal on purpose: tensors owned by static objects may be freed during static destruction,
// after a function-local static cache would already be gone.
CpuBlockCache& block_cache() {
  static CpuBlockCache& cache = *new CpuBlockCache;
  return cache;
}

std::size_t bucket_size(std::size_t n) {
  if (n < kCacheMinBytes) return n;
  std::size_t p = std::size_t{1} << (63 - __builtin_clzll(static_cast<unsigned long long>(n)));
  const std::size_t step = p / 4;
  return (n + step - 1) / step * step;
}

void release_base(void* base) {
  ::operator delete(base, std::align_val_t(kCpuAlignment));
}

void cpu_free(void* p) {
  if (!p) return;
  void* base = static_cast<unsigned char*>(p) - kCpuAlignment;
  const BlockHeader h = *static_cast<BlockHeader*>(base);
  cpu_counters().sub(h.requested);
  if (h.capacity >= kCacheMinBytes) {
    CpuBlockCache& c = block_cache();
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.cached_bytes + h.capacity <= c.limit_bytes) {
      c.free_blocks[h.capacity].push_back(base);
      c.cached_bytes += h.capacity;
      return;
    }
  }
  release_base(base);
}

void* cpu_allocate(std::size_t nbytes) {
  const std::size_t cap = bucket_size(nbytes);
  if (cap >= kCacheMinBytes) {
    CpuBlockCache& c = block_cache();
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.free_blocks.find(cap);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void* base = it->second.back();
      it->second.pop_back();
      c.cached_bytes -= cap;
      static_cast<BlockHeader*>(base)->requested = nbytes;
      return base;
    }
  }
  void* base = nullptr;
  try {
    base = ::operator new(cap + kCpuAlignment, std::align_val_t(kCpuAlignment));
  } catch (const std::bad_alloc&) {
    // Give the cached blocks back and try once more before failing.
    empty_cpu_cache();
    try {
      base = ::operator new(cap + kCpuAlignment, std::align_val_t(kCpuAlignment));
    } catch (const std::bad_alloc&) {
      throw Error(detail::concat("allocate: out of CPU memory allocating ", nbytes, " bytes"));
    }
  }
  *static_cast<BlockHeader*>(base) = {nbytes, cap};
  return base;
}
void noop_free(void*) {}
}  // namespace

void empty_cpu_cache() {
  CpuBlockCache& c = block_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& [cap, bases] : c.free_blocks)
    for (void* b : bases) release_base(b);
  c.free_blocks.clear();
  c.cached_bytes = 0;
}

std::size_t cpu_cached_bytes() {
  CpuBlockCache& c = block_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.cached_bytes;
}

void set_cpu_cache_limit(std::size_t bytes) {
  CpuBlockCache& c = block_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.limit_bytes = bytes;
}

namespace {
class CpuAllocator final : public DeviceAllocator {
 public:
  DataPtr allocate(std::size_t nbytes) override {
    if (nbytes == 0) return DataPtr(nullptr, noop_free);
    void* raw = cpu_allocate(nbytes);
    cpu_counters().add(nbytes);
    return DataPtr(static_cast<unsigned char*>(raw) + kCpuAlignment, cpu_free);
  }
  AllocatorStats stats() const override {
    const std::size_t current = cpu_counters().current.load();
    return {current, cpu_counters().peak.load(), current + cpu_cached_bytes()};
  }
  void reset_peak() override { cpu_counters().peak.store(cpu_counters().current.load()); }
  void empty_cache() override { empty_cpu_cache(); }
};

DeviceAllocator& cpu_allocator(int) {
  static CpuAllocator& a = *new CpuAllocator;  // immortal, as the block cache
  return a;
}

DeviceAllocator& allocator_for(const char* op, Device device) {
  static const KernelTable<AllocatorKernel>& table = kernel_table(kAllocatorKernels);
  // Without a kernel (a CPU-only build) the device check gives the clearer error.
  if (table.find(device.type) == nullptr) check_device_available(op, device);
  return table.at(op, device)(device.index);
}
}  // namespace

void register_allocator_cpu_kernels(KernelRegistry& r) {
  r.table(kAllocatorKernels).define(DeviceType::CPU, &cpu_allocator, kAllDTypes);
}

DataPtr allocate(std::size_t nbytes, Device device) {
  return allocator_for("allocate", device).allocate(nbytes);
}

AllocatorStats allocator_stats(Device device) {
  return allocator_for("allocator_stats", device).stats();
}

void reset_peak_bytes(Device device) {
  allocator_for("reset_peak_bytes", device).reset_peak();
}

void empty_cache(Device device) {
  allocator_for("empty_cache", device).empty_cache();
}

}  // namespace qgrad
