// Allocators: aligned CPU memory (and CUDA device memory in CUDA builds) handed out as a
// move-only DataPtr, with per-device byte counters (current and peak) for memory benchmarks.
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
AllocatorStats allocator_stats(Device device);
void reset_peak_bytes(Device device);

}  // namespace qgrad
