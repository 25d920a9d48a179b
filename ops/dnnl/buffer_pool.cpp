// The buffer pool: free blocks in a size-ordered multimap under one mutex. A request takes the
// smallest free block of at least its size and at most twice it; blocks beyond the byte bound
// are freed, largest first.
#include "ops/dnnl/buffer_pool.h"

#include <iterator>
#include <map>
#include <mutex>

namespace qgrad::dnnl_backend {

class BufferPool {
 public:
  std::shared_ptr<PooledBuffer> acquire(const std::shared_ptr<BufferPool>& self,
                                        std::size_t nbytes) {
    const std::size_t want = nbytes == 0 ? 1 : nbytes;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.lower_bound(want);
      if (it != free_.end() && it->first <= 2 * want) {
        const std::size_t cap = it->first;
        DataPtr block = std::move(it->second);
        free_.erase(it);
        cached_ -= cap;
        return std::make_shared<PooledBuffer>(self, std::move(block), cap, nbytes);
      }
    }
    return std::make_shared<PooledBuffer>(self, allocate(want, kCPU), want, nbytes);
  }

  void give_back(DataPtr block, std::size_t cap) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.emplace(cap, std::move(block));
    cached_ += cap;
    while (cached_ > kBufferPoolMaxCachedBytes && !free_.empty()) {
      auto largest = std::prev(free_.end());
      cached_ -= largest->first;
      free_.erase(largest);
    }
  }

  std::size_t cached() {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_;
  }

  void release_all() {
    std::lock_guard<std::mutex> lock(mu_);
    free_.clear();
    cached_ = 0;
  }

 private:
  std::mutex mu_;
  std::multimap<std::size_t, DataPtr> free_;
  std::size_t cached_ = 0;
};

namespace {
const std::shared_ptr<BufferPool>& pool() {
  static const std::shared_ptr<BufferPool> p = std::make_shared<BufferPool>();
  return p;
}
}  // namespace

PooledBuffer::~PooledBuffer() {
  if (block_) pool_->give_back(std::move(block_), capacity_);
}

std::shared_ptr<PooledBuffer> acquire_buffer(std::size_t nbytes) {
  return pool()->acquire(pool(), nbytes);
}

std::size_t buffer_pool_cached_bytes() {
  return pool()->cached();
}

void buffer_pool_release_cached() {
  pool()->release_all();
}

}  // namespace qgrad::dnnl_backend
