// The CUDA reductions to an ObservedRange (observed_range.h) that the observers and the fused
// observer + fake quant share: a whole block over one contiguous row, a grid over a tensor in a
// number of parts that depends on its size alone, then one block over the parts, and a block over
// one channel of an [outer, C, inner] layout (launch_range_parts queues the parts). Each thread
// accumulates its elements and the block
// combines them with a fixed tree (core/cuda_block_reduce.cuh); as an ObservedRange combines to
// the same bits in any order, the results are the CPU's. Only .cu files include this.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda_block_reduce.cuh"
#include "core/cuda_check.h"
#include "core/factory.h"
#include "core/tensor.h"
#include "quant/observer/observed_range.h"

namespace qgrad::ao::cuda_range {

using qgrad::cuda::kRowThreads;

struct CombineRanges {
  __device__ ObservedRange operator()(const ObservedRange& a, const ObservedRange& b) const {
    return combine(a, b);
  }
};

// The range of row[0, n) over the whole block (every thread gets it; all must call it).
__device__ inline ObservedRange block_row_range(const float* row, std::int64_t n,
                                                ObservedRange* shared) {
  ObservedRange r = empty_range();
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) observe_element(r, row[i], i);
  return qgrad::cuda::block_reduce(r, shared, CombineRanges{});
}

// The range of channel c of x viewed as [outer, C, inner] (contiguous), its elements numbered in
// row-major order (o * inner + i), over the whole block.
__device__ inline ObservedRange block_channel_range(const float* x, std::int64_t outer,
                                                    std::int64_t channels, std::int64_t inner,
                                                    std::int64_t c, ObservedRange* shared) {
  ObservedRange r = empty_range();
  const std::int64_t n = outer * inner;
  for (std::int64_t e = threadIdx.x; e < n; e += blockDim.x) {
    const std::int64_t o = e / inner, i = e % inner;
    observe_element(r, x[(o * channels + c) * inner + i], e);
  }
  return qgrad::cuda::block_reduce(r, shared, CombineRanges{});
}

// A tensor's parts: about kPartElements elements each, at most kMaxParts, a count fixed by n.
inline constexpr std::int64_t kPartElements = 16384;
inline constexpr std::int64_t kMaxParts = 1024;
inline std::int64_t part_count(std::int64_t n) {
  return std::max<std::int64_t>(1, std::min(kMaxParts, (n + kPartElements - 1) / kPartElements));
}

// Block b reduces x[b * chunk, (b + 1) * chunk) to parts[b]; nothing when `enabled` is given and
// holds 0 (a flag read on the device).
__global__ inline void range_parts_kernel(const float* x, std::int64_t n, std::int64_t chunk,
                                          const std::int64_t* enabled, ObservedRange* parts) {
  __shared__ ObservedRange shared[kRowThreads];
  if (enabled != nullptr && *enabled == 0) return;  // uniform over the grid
  const std::int64_t b = static_cast<std::int64_t>(blockIdx.x) * chunk;
  const std::int64_t e = b + chunk < n ? b + chunk : n;
  ObservedRange r = empty_range();
  for (std::int64_t i = b + threadIdx.x; i < e; i += blockDim.x) observe_element(r, x[i], i);
  r = qgrad::cuda::block_reduce(r, shared, CombineRanges{});
  if (threadIdx.x == 0) parts[blockIdx.x] = r;
}

// range_parts_kernel over x[0, n) queued on `stream`: the parts, in a scratch tensor on `device`
// that `storage` keeps until the kernels that read them are queued, and their count.
struct RangeParts {
  Tensor storage;
  ObservedRange* parts;
  int count;
};
inline RangeParts launch_range_parts(const char* op, const float* x, std::int64_t n,
                                     const std::int64_t* enabled, Device device,
                                     cudaStream_t stream) {
  const std::int64_t count = part_count(n);
  const std::int64_t chunk = (n + count - 1) / count;
  RangeParts r;
  r.storage = empty({count * static_cast<std::int64_t>(sizeof(ObservedRange))},
                    TensorOptions().dtype(kUInt8).device(device));
  r.parts = static_cast<ObservedRange*>(r.storage.raw_data());
  r.count = static_cast<int>(count);
  range_parts_kernel<<<r.count, kRowThreads, 0, stream>>>(x, n, chunk, enabled, r.parts);
  QGRAD_CUDA_CHECK(cudaGetLastError(), op, "range kernel launch over ", n, " elements");
  return r;
}

// The parts combined, over the whole block (every thread gets it; all must call it).
__device__ inline ObservedRange combine_parts(const ObservedRange* parts, int count,
                                              ObservedRange* shared) {
  ObservedRange r = empty_range();
  for (int k = threadIdx.x; k < count; k += blockDim.x) r = combine(r, parts[k]);
  return qgrad::cuda::block_reduce(r, shared, CombineRanges{});
}

}  // namespace qgrad::ao::cuda_range
