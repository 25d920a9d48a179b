// CUDA kernels of clip_grad_norm_: one gradient's norm as a fixed-shape two-level reduction
// (blocks fold grid-strided elements with clip_grad_elem.h's NormFold, one block folds the
// partials in block order, so the result does not change from run to run; it differs from the
// CPU's index-order sum only by rounding), read back as one double; and the in-place scaling,
// the CPU's functor on cuda::map.
#include <cuda_runtime.h>

#include <algorithm>

#include "core/allocator.h"
#include "core/cuda_map.cuh"
#include "nn/utils/clip_grad_elem.h"

namespace qgrad::nn::utils {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 256;  // partials folded by the second pass's one block

using clip_grad_elem::NormFold;

// Folds shared[0..kThreads) into shared[0] in a fixed tree order.
__device__ void block_fold(double* shared, const NormFold& f) {
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (static_cast<int>(threadIdx.x) < w)
      shared[threadIdx.x] = f.combine(shared[threadIdx.x], shared[threadIdx.x + w]);
    __syncthreads();
  }
}

template <typename T>
__global__ void norm_partials(const T* g, std::int64_t n, NormFold f, double* partials) {
  __shared__ double shared[kThreads];
  double acc = 0;
  const std::int64_t step = static_cast<std::int64_t>(kThreads) * gridDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(kThreads) + threadIdx.x; i < n;
       i += step)
    acc = f.combine(acc, f.term(static_cast<double>(g[i])));
  shared[threadIdx.x] = acc;
  block_fold(shared, f);
  if (threadIdx.x == 0) partials[blockIdx.x] = shared[0];
}

__global__ void norm_finish(const double* partials, int count, NormFold f, double* out) {
  __shared__ double shared[kThreads];
  double acc = 0;
  for (int i = threadIdx.x; i < count; i += kThreads) acc = f.combine(acc, partials[i]);
  shared[threadIdx.x] = acc;
  block_fold(shared, f);
  if (threadIdx.x == 0) *out = f.finish(shared[0]);
}

double grad_norm_cuda(const Tensor& g, double p) {
  const NormFold f = NormFold::of(p);
  const std::int64_t n = g.numel();
  if (n == 0) return f.finish(0.0);
  const int device = g.device().index;
  const CudaDeviceGuard guard(device);
  cudaStream_t stream = cuda_stream(device);
  const int blocks =
      static_cast<int>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
  const DataPtr scratch = allocate(sizeof(double) * (blocks + 1), g.device());
  auto* partials = static_cast<double*>(scratch.get());
  QGRAD_DISPATCH_FLOAT(g.dtype(), "clip_grad_norm_", [&] {
    norm_partials<<<blocks, kThreads, 0, stream>>>(static_cast<const scalar_t*>(g.raw_data()), n, f,
                                                   partials);
  });
  norm_finish<<<1, kThreads, 0, stream>>>(partials, blocks, f, partials + blocks);
  QGRAD_CUDA_CHECK(cudaGetLastError(), "clip_grad_norm_", "norm kernels, shape ", g.shape());
  double result = 0;
  QGRAD_CUDA_CHECK(
      cudaMemcpyAsync(&result, partials + blocks, sizeof(double), cudaMemcpyDeviceToHost, stream),
      "clip_grad_norm_", "reading the norm back");
  cuda_stream_synchronize(device, "clip_grad_norm_");
  return result;
}

}  // namespace

void register_clip_grad_cuda_kernels(KernelRegistry& r) {
  r.table<GradNormKernel>("grad_norm").define(DeviceType::CUDA, &grad_norm_cuda, kFloatingDTypes);
  r.table<GradScaleKernel>("grad_scale")
      .define(DeviceType::CUDA, &clip_grad_elem::scale<cuda::Map>, kFloatingDTypes);
}

}  // namespace qgrad::nn::utils
