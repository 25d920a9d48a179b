// clip_grad_norm_'s kernel signatures ("grad_norm": one gradient's norm, accumulated in double;
// "clip_coef": the total norm and the clip coefficient from those norms; "grad_scale": a gradient
// multiplied in place by the coefficient rounded to its dtype) and the per-device register
// functions. Each takes and leaves its numbers in tensors on the gradients' device and only
// queues work there: nothing in clipping makes the host wait for a GPU.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad::nn::utils {

// Writes the norm of order p (> 0, or infinity) of g's elements into norms[slot] (norms: float64,
// contiguous, on g's device), accumulated in double in a fixed order (deterministic); NaN
// propagates.
using GradNormKernel = void(const Tensor& g, double p, const Tensor& norms, std::int64_t slot);
inline constexpr KernelTableKey<GradNormKernel> kGradNormKernels{"grad_norm", "clip_grad_norm_"};
// From the per-gradient norms (float64, contiguous), writes out[0] = the total norm of order p
// rounded to `dtype` (the gradients' dtype, float32 or float64) and out[1] = the clip coefficient
// for max_norm (out: float64 [2] on norms' device). See clip_grad_elem::ClipTotal.
using ClipCoefKernel = void(const Tensor& norms, double p, DType dtype, double max_norm,
                            const Tensor& out);
inline constexpr KernelTableKey<ClipCoefKernel> kClipCoefKernels{"clip_coef", "clip_grad_norm_"};
// g *= static_cast<T>(coef[0]), in place (g contiguous; coef: one float64 element on g's device).
using GradScaleKernel = void(const Tensor& g, const Tensor& coef);
inline constexpr KernelTableKey<GradScaleKernel> kGradScaleKernels{"grad_scale", "clip_grad_norm_"};

void register_clip_grad_cpu_kernels(KernelRegistry& r);
void register_clip_grad_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::nn::utils
