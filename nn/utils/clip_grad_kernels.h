// clip_grad_norm_'s kernel signatures ("grad_norm": one gradient's norm, accumulated in double;
// "grad_scale": a gradient multiplied in place by a coefficient rounded to its dtype) and the
// per-device register functions.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad::nn::utils {

// The norm of order p (> 0, or infinity) of g's elements, accumulated in double in index order
// (deterministic); NaN propagates.
using GradNormKernel = double(const Tensor& g, double p);
// g *= static_cast<T>(coef), in place (g contiguous).
using GradScaleKernel = void(const Tensor& g, double coef);

void register_clip_grad_cpu_kernels(KernelRegistry& r);
void register_clip_grad_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::nn::utils
