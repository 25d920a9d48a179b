// A bounded cache of CPU scratch buffers for the oneDNN kernels: the layouts a primitive
// works in (blocked copies of inputs and outputs), scratchpads and other temporaries that live
// for one call or from a forward to its backward. Large blocks freed to glibc go back to the OS
// and fault in again on the next call (about 1 µs per 4 KiB page, ~10 ms per training step of
// a 32-channel 28x28 convolution at batch 128); recycling them here avoids that. An explicit
// cache: the only state is the list of free blocks, bounded in bytes.
#pragma once

#include <cstddef>
#include <memory>

#include "core/allocator.h"

namespace qgrad::dnnl_backend {

class BufferPool;

// A block of at least `size()` bytes, 64-byte aligned; returned to the pool when destroyed.
class PooledBuffer {
 public:
  PooledBuffer(std::shared_ptr<BufferPool> pool, DataPtr block, std::size_t capacity,
               std::size_t size)
      : pool_(std::move(pool)), block_(std::move(block)), capacity_(capacity), size_(size) {}
  ~PooledBuffer();
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;

  void* data() const { return block_.get(); }
  std::size_t size() const { return size_; }

 private:
  std::shared_ptr<BufferPool> pool_;  // kept alive by its buffers (static destruction order)
  DataPtr block_;
  std::size_t capacity_;  // bytes allocated (a reused block may be larger than asked for)
  std::size_t size_;
};

// A buffer of `nbytes` bytes (contents undefined): a cached free block of a close size when
// there is one, else a new allocation (counted by qgrad's allocator statistics).
std::shared_ptr<PooledBuffer> acquire_buffer(std::size_t nbytes);

// Bytes currently held in free blocks, and the bound on them.
std::size_t buffer_pool_cached_bytes();
inline constexpr std::size_t kBufferPoolMaxCachedBytes = std::size_t{256} << 20;

// Frees every cached block (e.g. before measuring memory).
void buffer_pool_release_cached();

}  // namespace qgrad::dnnl_backend
