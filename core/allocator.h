/// @file
/// Allocators: one DeviceAllocator per device (aligned CPU memory with a reuse cache for large
/// blocks; in CUDA builds a caching device allocator), reached through the "allocator" kernel
/// table, handing out memory as a move-only DataPtr and keeping byte statistics.
#pragma once

#include <cstddef>
#include <memory>

#include "core/device.h"
#include "core/kernel_table_key.h"

namespace qgrad {

/// Owning pointer to device memory; its deleter gives the block back to its allocator.
using DataPtr = std::unique_ptr<void, void (*)(void*)>;

/// 64-byte aligned so that vector loads and oneDNN never see a misaligned base.
inline constexpr std::size_t kCpuAlignment = 64;

/// A device allocator's byte counts.
struct AllocatorStats {
  std::size_t current_bytes = 0;   ///< held by live tensors ("allocated")
  std::size_t peak_bytes = 0;      ///< the most current_bytes has been since the last reset
  std::size_t reserved_bytes = 0;  ///< held from the system: live plus cached for reuse
};

/// What each device's allocator provides. Implementations are immortal singletons.
class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  /// A block of at least `nbytes` bytes.
  virtual DataPtr allocate(std::size_t nbytes) = 0;
  /// The current byte counts.
  virtual AllocatorStats stats() const = 0;
  /// Resets peak_bytes to current_bytes.
  virtual void reset_peak() = 0;
  /// Gives cached (free) blocks back to the system.
  virtual void empty_cache() = 0;
};
/// The "allocator" kernel: the allocator of device `index` of its device type.
using AllocatorKernel = DeviceAllocator&(int device_index);
/// The key of the "allocator" kernel table.
inline constexpr KernelTableKey<AllocatorKernel> kAllocatorKernels{"allocator", ""};

/// Allocates `nbytes` on `device` through its allocator.
DataPtr allocate(std::size_t nbytes, Device device);
/// The byte counts of `device`'s allocator.
AllocatorStats allocator_stats(Device device);
/// Resets the peak byte count of `device`'s allocator.
void reset_peak_bytes(Device device);
/// Gives `device`'s cached (free) blocks back to the system.
void empty_cache(Device device);

/// The CPU allocator keeps freed blocks of 256 KiB and more for reuse (fresh large blocks cost a
/// page fault per page on first touch). These release the cached blocks, report their size and
/// bound it (default 4 GiB).
void empty_cpu_cache();
/// The bytes the CPU cache holds for reuse.
std::size_t cpu_cached_bytes();
/// Bounds the bytes the CPU cache may hold.
void set_cpu_cache_limit(std::size_t bytes);

}  // namespace qgrad
