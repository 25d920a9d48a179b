// CUDA side of core/allocator.cpp: device memory from cudaMalloc with byte counters.
// (A caching allocator comes with the CUDA kernels; plain cudaMalloc/cudaFree is correct, slower.)
#include <cuda_runtime.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "core/allocator.h"
#include "core/core_kernels.h"
#include "core/error.h"

namespace qgrad {

namespace {
struct CudaCounters {
  std::mutex mu;
  std::unordered_map<void*, std::size_t> sizes;
  std::size_t current = 0, peak = 0;
};
CudaCounters& counters() {
  static CudaCounters c;
  return c;
}
void cuda_free(void* p) {
  if (!p) return;
  {
    auto& c = counters();
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.sizes.find(p);
    if (it != c.sizes.end()) {
      c.current -= it->second;
      c.sizes.erase(it);
    }
  }
  cudaFree(p);
}
void noop_free(void*) {}

class CudaAllocator final : public DeviceAllocator {
 public:
  explicit CudaAllocator(int index) : index_(index) {}
  DataPtr allocate(std::size_t nbytes) override {
    if (nbytes == 0) return DataPtr(nullptr, noop_free);
    cudaSetDevice(index_);
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, nbytes);
    if (e != cudaSuccess) {
      cudaGetLastError();
      throw Error("allocate: cudaMalloc of " + std::to_string(nbytes) +
                  " bytes failed: " + cudaGetErrorString(e));
    }
    auto& c = counters();
    std::lock_guard<std::mutex> lock(c.mu);
    c.sizes[p] = nbytes;
    c.current += nbytes;
    c.peak = std::max(c.peak, c.current);
    return DataPtr(p, cuda_free);
  }
  AllocatorStats stats() const override {
    auto& c = counters();
    std::lock_guard<std::mutex> lock(c.mu);
    return {c.current, c.peak, c.current};
  }
  void reset_peak() override {
    auto& c = counters();
    std::lock_guard<std::mutex> lock(c.mu);
    c.peak = c.current;
  }
  void empty_cache() override {}

 private:
  int index_;
};

DeviceAllocator& cuda_allocator(int device_index) {
  static int count = -1;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (count < 0 && cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    count = 0;
  }
  if (device_index < 0 || device_index >= count)
    throw DeviceError("allocate: CUDA device " + std::to_string(device_index) +
                      " is not available (" + std::to_string(count) + " visible)");
  static std::unordered_map<int, CudaAllocator*> allocators;  // immortal, one per device
  auto& a = allocators[device_index];
  if (!a) a = new CudaAllocator(device_index);
  return *a;
}
}  // namespace

void register_allocator_cuda_kernels(KernelRegistry& r) {
  r.table<AllocatorKernel>("allocator").define(DeviceType::CUDA, &cuda_allocator, kAllDTypes);
}

}  // namespace qgrad
