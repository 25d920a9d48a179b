// CUDA kernels of AIMET affine quantization: the strided forward and backward of every encoding
// shape and ste_round's rounding (affine_quantize_strided_kernel.h through cuda::map, the CPU's
// elements), registered in the "aimet.*" tables. The fast per-channel kernels of the CPU have no
// CUDA twins: off the CPU the front takes the strided path, whose scale and offset gradients
// sum_to_shape reduces.
#include "core/cuda_map.cuh"
#include "quant/aimet/affine_quantize_kernels.h"
#include "quant/aimet/affine_quantize_strided_kernel.h"

namespace qgrad::aimet {

namespace {

void affine_forward_strided_cuda(AffineKind kind, const Tensor& x, const Tensor& scale,
                                 const Tensor& offset, std::int64_t qmin, std::int64_t qmax,
                                 bool wide, const Tensor& y) {
  affine_forward_strided<cuda::Map>(kind, x, scale, offset, qmin, qmax, wide, y);
}

void affine_backward_strided_cuda(AffineKind kind, const Tensor& g, const Tensor& x,
                                  const Tensor& scale, const Tensor& offset, std::int64_t qmin,
                                  std::int64_t qmax, bool wide, const Tensor& dx,
                                  const Tensor& dscale, const Tensor& doffset) {
  affine_backward_strided<cuda::Map>(kind, g, x, scale, offset, qmin, qmax, wide, dx, dscale,
                                     doffset);
}

void round_half_even_cuda(const Tensor& x, const Tensor& y) {
  round_half_even<cuda::Map>(x, y);
}

}  // namespace

void register_affine_quantize_cuda_kernels(KernelRegistry& r) {
  r.table(kAffineForwardStridedKernels)
      .define(DeviceType::CUDA, &affine_forward_strided_cuda, kFloatingDTypes);
  r.table(kAffineBackwardStridedKernels)
      .define(DeviceType::CUDA, &affine_backward_strided_cuda, kFloatingDTypes);
  r.table(kRoundHalfEvenKernels).define(DeviceType::CUDA, &round_half_even_cuda, kFloatingDTypes);
}

}  // namespace qgrad::aimet
