// The caching CUDA allocator behind the "allocator" kernel table (CUDA side of
// core/allocator.cpp). Freed blocks are kept per device in free lists keyed by block size and
// handed out again for requests of the same size class, so a training loop, whose steps ask for
// the same sizes over and over, calls cudaMalloc only during its first steps and never calls
// cudaFree (both synchronise and cost far more than a small kernel). empty_cache() gives the
// cached blocks back to the driver; an allocation cudaMalloc cannot serve empties the cache and
// retries once before throwing. Reuse is safe without events because every qgrad kernel and copy
// on a device runs on that device's single stream (core/cuda_stream.h): a block freed on the host
// while kernels that use it are still queued is only handed to work queued after them. Stats:
// current_bytes are the bytes requested by live tensors, reserved_bytes the block sizes held from
// the driver (live and cached), peak_bytes the highest current_bytes since the last reset. One
// allocator per visible device; the allocators and the live-block index are immortal, so tensors
// freed during static destruction never touch a destroyed object, and a free makes no CUDA call.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/allocator.h"
#include "core/core_kernels.h"
#include "core/cuda_check.h"
#include "core/cuda_stream.h"
#include "core/error.h"

namespace qgrad {

namespace {

// Size classes. Requests up to 1 MiB round up to a multiple of 512 B: at most 511 B of slack,
// and few classes for the many small tensors of a model (biases, batch-norm statistics, scalars).
// Larger ones round up to a multiple of 2 MiB, the page size the driver maps large allocations
// with (so it mostly rounds them so anyway), which keeps the number of classes small: the slack
// is under 2 MiB and under the request itself (worst case 1 MiB + 1 B -> 2 MiB), a shrinking
// fraction as requests grow (under 10% from 20 MiB up). Blocks are never split: a block is
// reused only for a request of its exact class, which is what repeating training steps ask for,
// and keeps the allocator simple (no fragmentation bookkeeping). Each block is its own
// cudaMalloc, aligned to 256 B by the driver.
constexpr std::size_t kSmallLimit = std::size_t{1} << 20;    // 1 MiB
constexpr std::size_t kSmallGranule = 512;                   // bytes
constexpr std::size_t kLargeGranule = std::size_t{2} << 20;  // 2 MiB

std::size_t block_size(std::size_t nbytes) {
  const std::size_t granule = nbytes <= kSmallLimit ? kSmallGranule : kLargeGranule;
  QGRAD_CHECK(nbytes <= SIZE_MAX - granule, Error, "allocate: ", nbytes,
              " bytes cannot be allocated on a CUDA device");
  return (nbytes + granule - 1) / granule * granule;
}

std::string mib(std::size_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f MiB",
                static_cast<double>(bytes) / static_cast<double>(std::size_t{1} << 20));
  return text;
}

class CudaCachingAllocator final : public DeviceAllocator {
 public:
  explicit CudaCachingAllocator(int index) : index_(index) {}

  DataPtr allocate(std::size_t nbytes) override;
  AllocatorStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return {current_, peak_, reserved_};
  }
  void reset_peak() override {
    std::lock_guard<std::mutex> lock(mu_);
    peak_ = current_;
  }
  void empty_cache() override {
    std::lock_guard<std::mutex> lock(mu_);
    release_cached_locked("empty_cache");
  }

  // A live block comes back (from the DataPtr's deleter): cached for reuse. Makes no CUDA call,
  // so it is safe at any time, static destruction included.
  void release(void* p, std::size_t size, std::size_t requested) {
    std::lock_guard<std::mutex> lock(mu_);
    free_[size].push_back(p);
    cached_ += size;
    current_ -= requested;
  }

 private:
  void* take_cached_locked(std::size_t size);
  void* cuda_malloc_locked(std::size_t size, std::size_t requested);
  void release_cached_locked(const char* op);

  const int index_;
  mutable std::mutex mu_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;  // block size -> cached blocks
  std::size_t current_ = 0;                                   // bytes requested by live blocks
  std::size_t peak_ = 0;      // highest current_ since the last reset
  std::size_t reserved_ = 0;  // block sizes held from the driver: live and cached
  std::size_t cached_ = 0;    // block sizes in free_
};

// The allocator of each visible device, created once; immortal (see the header comment).
const std::vector<std::unique_ptr<CudaCachingAllocator>>& allocators() {
  static const auto& all = *[] {
    auto* v = new std::vector<std::unique_ptr<CudaCachingAllocator>>;
    for (int i = 0; i < cuda_visible_device_count(); ++i)
      v->push_back(std::make_unique<CudaCachingAllocator>(i));
    return v;
  }();
  return all;
}

// Live blocks by address: what the DataPtr deleter (a plain function pointer, without state)
// needs to find a block's device and sizes. Immortal, as the allocators.
struct LiveBlock {
  int device;
  std::size_t size;       // the block's size class
  std::size_t requested;  // bytes the caller asked for
};
class LiveBlocks {
 public:
  void insert(void* p, LiveBlock b) {
    std::lock_guard<std::mutex> lock(mu_);
    blocks_.emplace(p, b);
  }
  std::optional<LiveBlock> take(void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find(p);
    if (it == blocks_.end()) return std::nullopt;
    LiveBlock b = it->second;
    blocks_.erase(it);
    return b;
  }

 private:
  std::mutex mu_;
  std::unordered_map<void*, LiveBlock> blocks_;
};
LiveBlocks& live_blocks() {
  static LiveBlocks& blocks = *new LiveBlocks;
  return blocks;
}

void cuda_block_free(void* p) {
  if (!p) return;
  if (const std::optional<LiveBlock> b = live_blocks().take(p))
    allocators()[static_cast<std::size_t>(b->device)]->release(p, b->size, b->requested);
}
void noop_free(void*) {}

DataPtr CudaCachingAllocator::allocate(std::size_t nbytes) {
  if (nbytes == 0) return DataPtr(nullptr, noop_free);
  const std::size_t size = block_size(nbytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    p = take_cached_locked(size);
    if (!p) p = cuda_malloc_locked(size, nbytes);
    current_ += nbytes;
    peak_ = std::max(peak_, current_);
  }
  try {
    live_blocks().insert(p, {index_, size, nbytes});
  } catch (...) {
    release(p, size, nbytes);  // out of host memory for the index entry: keep the block cached
    throw;
  }
  return DataPtr(p, cuda_block_free);
}

void* CudaCachingAllocator::take_cached_locked(std::size_t size) {
  auto it = free_.find(size);
  if (it == free_.end() || it->second.empty()) return nullptr;
  void* p = it->second.back();  // the most recently freed block: likeliest still in L2
  it->second.pop_back();
  cached_ -= size;
  return p;
}

void* CudaCachingAllocator::cuda_malloc_locked(std::size_t size, std::size_t requested) {
  CudaDeviceGuard guard(index_);  // cudaMalloc allocates on the current device
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, size);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    // The cache may hold enough memory in blocks of other sizes: give it back and retry once.
    release_cached_locked("allocate");
    e = cudaMalloc(&p, size);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      std::size_t free_bytes = 0, total_bytes = 0;
      const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
      if (!known) cudaGetLastError();
      throw Error(detail::concat(
          "allocate: CUDA out of memory on cuda:", index_, " allocating ", requested, " bytes (",
          mib(requested), ", a block of ", size, " bytes); ", current_,
          " bytes allocated to live tensors, ", reserved_,
          " bytes reserved by qgrad (after emptying its cache and retrying once)",
          known
              ? detail::concat("; the device has ", mib(free_bytes), " free of ", mib(total_bytes))
              : std::string()));
    }
  }
  if (e != cudaSuccess)
    detail::throw_cuda_error(e, "cudaMalloc", "allocate", size, " bytes on cuda:", index_);
  reserved_ += size;
  return p;
}

void CudaCachingAllocator::release_cached_locked(const char* op) {
  if (cached_ == 0) return;
  // Kernels queued before the blocks were freed may still use them: wait for the stream first.
  cuda_stream_synchronize_unchecked(index_, op);
  CudaDeviceGuard guard(index_);
  for (auto& [size, blocks] : free_) {
    while (!blocks.empty()) {
      QGRAD_CUDA_CHECK(cudaFree(blocks.back()), op, "a cached block of ", size,
                       " bytes on cuda:", index_);
      blocks.pop_back();
      cached_ -= size;
      reserved_ -= size;
    }
  }
  free_.clear();
}

DeviceAllocator& cuda_allocator(int device_index) {
  check_cuda_device_index("CUDA allocator", device_index);
  return *allocators()[static_cast<std::size_t>(device_index)];
}

}  // namespace

void register_allocator_cuda_kernels(KernelRegistry& r) {
  r.table(kAllocatorKernels).define(DeviceType::CUDA, &cuda_allocator, kAllDTypes);
}

}  // namespace qgrad
