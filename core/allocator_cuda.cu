// CUDA side of core/allocator.cpp: device memory from cudaMalloc with byte counters.
// (A caching allocator comes with the CUDA kernels; plain cudaMalloc/cudaFree is correct, slower.)
#include <cuda_runtime.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "core/allocator.h"
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
}  // namespace

DataPtr cuda_allocate(std::size_t nbytes, int device_index) {
  if (nbytes == 0) return DataPtr(nullptr, noop_free);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || device_index >= count) {
    cudaGetLastError();
    throw DeviceError("allocate: CUDA device " + std::to_string(device_index) +
                      " is not available (" + std::to_string(count) + " visible)");
  }
  cudaSetDevice(device_index);
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

AllocatorStats cuda_allocator_stats(int) {
  auto& c = counters();
  std::lock_guard<std::mutex> lock(c.mu);
  return {c.current, c.peak};
}

void cuda_reset_peak_bytes(int) {
  auto& c = counters();
  std::lock_guard<std::mutex> lock(c.mu);
  c.peak = c.current;
}

}  // namespace qgrad
