// PACT's kernel signatures (the clipped, optionally quantized activation and its backward, no
// autograd) and its per-device register functions. The fronts in pact.cpp reach the kernels
// through the "learnable.pact_forward" and "learnable.pact_backward" tables; alpha arrives as a
// view expanded to x's shape.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad::learnable {

// y = clip(x, 0, alpha); with levels > 0 then y = rne(y / (alpha / levels)) * (alpha / levels).
using PactForwardKernel = void(const Tensor& x, const Tensor& alpha, std::int64_t levels,
                               const Tensor& y);
inline constexpr KernelTableKey<PactForwardKernel> kPactForwardKernels{"learnable.pact_forward",
                                                                       "pact_clip pact_quantize"};
// dx = dy where 0 <= x < alpha, dalpha = dy where x >= alpha (unreduced, x-shaped).
using PactBackwardKernel = void(const Tensor& dy, const Tensor& x, const Tensor& alpha,
                                const Tensor& dx, const Tensor& dalpha);
inline constexpr KernelTableKey<PactBackwardKernel> kPactBackwardKernels{"learnable.pact_backward",
                                                                         "pact_clip pact_quantize"};

void register_pact_cpu_kernels(KernelRegistry& r);
void register_pact_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::learnable
