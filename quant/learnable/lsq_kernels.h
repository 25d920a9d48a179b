// The LSQ and LSQ+ learnable quantizers' kernel signatures (no autograd) and their per-device
// register functions. Parameters arrive as views expanded to x's shape. z = (x - beta) / s
// (beta = 0 for LSQ); inside means -qn < z < qp for LSQ and qn < z < qp for LSQ+ (bounds are
// clipped inclusively). The initialisation statistics (lsq_init_scale, lsq_plus_init_minmax) read
// the data too, so they are kernels as well.
#pragma once

#include <cstdint>
#include <utility>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad::learnable {

// y = rne(clip((x - beta) / s, lo, hi)) * s + beta (beta undefined for LSQ).
using LsqForwardKernel = void(const Tensor& x, const Tensor& s, const Tensor& beta, double lo,
                              double hi, const Tensor& y);
inline constexpr KernelTableKey<LsqForwardKernel> kLsqForwardKernels{
    "learnable.lsq_forward", "lsq_quantize lsq_plus_quantize"};
// dx = dy inside, 0 outside; ds = g * dy * (rne(z) - z) inside, g * dy * bound outside;
// dbeta = 0 inside, g * dy outside (when beta is defined). Unreduced, x-shaped outputs.
using LsqBackwardKernel = void(const Tensor& dy, const Tensor& x, const Tensor& s,
                               const Tensor& beta, double lo, double hi, double grad_scale,
                               const Tensor& dx, const Tensor& ds, const Tensor& dbeta);
inline constexpr KernelTableKey<LsqBackwardKernel> kLsqBackwardKernels{
    "learnable.lsq_backward", "lsq_quantize lsq_plus_quantize"};
// sum |v| over all elements, accumulated in double in element order (lsq_init_scale).
using LsqAbsSumKernel = double(const Tensor& v);
inline constexpr KernelTableKey<LsqAbsSumKernel> kLsqAbsSumKernels{"learnable.lsq_abs_sum",
                                                                   "lsq_init_scale"};
// (min, max) of a non-empty x in double, std::min / std::max in element order
// (lsq_plus_init_minmax).
using LsqMinMaxKernel = std::pair<double, double>(const Tensor& x);
inline constexpr KernelTableKey<LsqMinMaxKernel> kLsqMinMaxKernels{"learnable.lsq_minmax",
                                                                   "lsq_plus_init_minmax"};

void register_lsq_cpu_kernels(KernelRegistry& r);
void register_lsq_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::learnable
