// CUDA kernels of clip_grad_norm_: one gradient's norm as a fixed-shape two-level reduction
// (blocks fold grid-strided elements with clip_grad_elem.h's NormFold, one block folds the
// partials in block order, so the result does not change from run to run; it differs from the
// CPU's index-order sum only by rounding), left in device memory; the total norm and clip
// coefficient on one thread (the CPU's ClipTotal); and the in-place scaling by that stored
// coefficient on cuda::map. Nothing here waits for the device.
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

// Queues g's norm into norms[slot]; no host wait (the scratch block is reused only by work
// queued after this on the same stream).
void grad_norm_cuda(const Tensor& g, double p, const Tensor& norms, std::int64_t slot) {
  const NormFold f = NormFold::of(p);
  const std::int64_t n = g.numel();
  const int device = g.device().index;
  const CudaDeviceGuard guard(device);
  cudaStream_t stream = cuda_stream(device);
  double* out = norms.data_ptr<double>() + slot;
  if (n == 0) {
    // One block folding nothing writes finish(0), as the CPU's empty loop does.
    norm_finish<<<1, kThreads, 0, stream>>>(nullptr, 0, f, out);
    QGRAD_CUDA_CHECK(cudaGetLastError(), "clip_grad_norm_", "norm kernel, shape ", g.shape());
    return;
  }
  const int blocks =
      static_cast<int>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
  const DataPtr scratch = allocate(sizeof(double) * blocks, g.device());
  auto* partials = static_cast<double*>(scratch.get());
  QGRAD_DISPATCH_FLOAT(g.dtype(), "clip_grad_norm_", [&] {
    norm_partials<<<blocks, kThreads, 0, stream>>>(static_cast<const scalar_t*>(g.raw_data()), n, f,
                                                   partials);
  });
  norm_finish<<<1, kThreads, 0, stream>>>(partials, blocks, f, out);
  QGRAD_CUDA_CHECK(cudaGetLastError(), "clip_grad_norm_", "norm kernels, shape ", g.shape());
}

__global__ void clip_total(clip_grad_elem::ClipTotal total, const double* norms, std::int64_t n,
                           double* out) {
  total(norms, n, out);
}

void clip_coef_cuda(const Tensor& norms, double p, DType dtype, double max_norm,
                    const Tensor& out) {
  const int device = norms.device().index;
  const CudaDeviceGuard guard(device);
  const clip_grad_elem::ClipTotal total{NormFold::of(p), dtype == kFloat32, max_norm};
  clip_total<<<1, 1, 0, cuda_stream(device)>>>(total, norms.data_ptr<double>(), norms.numel(),
                                               out.data_ptr<double>());
  QGRAD_CUDA_CHECK(cudaGetLastError(), "clip_grad_norm_", "total norm kernel, ", norms.numel(),
                   " norms");
}

void grad_scale_cuda(const Tensor& g, const Tensor& coef) {
  const double* c = coef.data_ptr<double>();
  QGRAD_DISPATCH_FLOAT(g.dtype(), "clip_grad_norm_", [&] {
    cuda::Map::template run<scalar_t, scalar_t>("clip_grad_norm_",
                                                clip_grad_elem::ScaleByStored<scalar_t>{c}, g, g);
  });
}

}  // namespace

void register_clip_grad_cuda_kernels(KernelRegistry& r) {
  r.table(kGradNormKernels).define(DeviceType::CUDA, &grad_norm_cuda, kFloatingDTypes);
  r.table(kClipCoefKernels).define(DeviceType::CUDA, &clip_coef_cuda, kFloatingDTypes);
  r.table(kGradScaleKernels).define(DeviceType::CUDA, &grad_scale_cuda, kFloatingDTypes);
}

}  // namespace qgrad::nn::utils
