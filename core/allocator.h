// Allocators: aligned CPU memory (with a reuse cache for large blocks; CUDA device memory in CUDA
// builds) handed out as a move-only DataPtr, with per-device byte counters (current and peak).
#pragma once

#include <cstddef>
#include <memory>

#include "core/device.h"

namespace qgrad {

using DataPtr = std::unique_ptr<void, void (*)(void*)>;

// 64-byte aligned so that vector loads and oneDNN never see a misaligned base.
inline constexpr std::size_t kCpuAlignment = 64;

DataPtr allocate(std::size_t nbytes, Device device);

struct AllocatorStats {
  std::size_t current_bytes = 0;
  std::size_t peak_bytes = 0;
};
// current_bytes/peak_bytes count bytes held by live tensors (not the reuse cache below).
AllocatorStats allocator_stats(Device device);
void reset_peak_bytes(Device device);

// The CPU allocator keeps freed blocks of 256 KiB and more for reuse (fresh large blocks cost a
// page fault per page on first touch). These release the cached blocks, report their size and
// bound it (default 4 GiB).
void empty_cpu_cache();
std::size_t cpu_cached_bytes();
void set_cpu_cache_limit(std::size_t bytes);

}  // namespace qgrad
