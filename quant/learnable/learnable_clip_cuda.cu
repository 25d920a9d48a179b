// CUDA kernels of the two-sided learnable clip: learnable_clip_kernel.h's device-generic
// kernels through cuda::map, the CPU's elements, registered in the "learnable.clip_*" tables.
#include "core/cuda_map.cuh"
#include "quant/learnable/learnable_clip_kernel.h"
#include "quant/learnable/learnable_clip_kernels.h"

namespace qgrad::learnable {

namespace {

void learnable_clip_forward_cuda(const Tensor& x, const Tensor& lo, const Tensor& hi,
                                 const Tensor& y) {
  learnable_clip_forward<cuda::Map>(x, lo, hi, y);
}

void learnable_clip_backward_cuda(const Tensor& dy, const Tensor& x, const Tensor& lo,
                                  const Tensor& hi, const Tensor& dx, const Tensor& dlo,
                                  const Tensor& dhi) {
  learnable_clip_backward<cuda::Map>(dy, x, lo, hi, dx, dlo, dhi);
}

}  // namespace

void register_learnable_clip_cuda_kernels(KernelRegistry& r) {
  r.table(kLearnableClipForwardKernels)
      .define(DeviceType::CUDA, &learnable_clip_forward_cuda, kFloatingDTypes);
  r.table(kLearnableClipBackwardKernels)
      .define(DeviceType::CUDA, &learnable_clip_backward_cuda, kFloatingDTypes);
}

}  // namespace qgrad::learnable
