// Raw CPU kernels of the LSQ and LSQ+ learnable quantizers (no autograd). Parameters arrive as
// views expanded to x's shape. z = (x - beta) / s (beta = 0 for LSQ); inside means -qn < z < qp
// for LSQ and qn < z < qp for LSQ+ (bounds are clipped inclusively).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace qgrad::learnable {

// y = rne(clip((x - beta) / s, lo, hi)) * s + beta (beta undefined for LSQ).
void lsq_forward_cpu(const Tensor& x, const Tensor& s, const Tensor& beta, double lo, double hi,
                     const Tensor& y);
// dx = dy inside, 0 outside; ds = g * dy * (rne(z) - z) inside, g * dy * bound outside;
// dbeta = 0 inside, g * dy outside (when beta is defined). Unreduced, x-shaped outputs.
void lsq_backward_cpu(const Tensor& dy, const Tensor& x, const Tensor& s, const Tensor& beta,
                      double lo, double hi, double grad_scale, const Tensor& dx, const Tensor& ds,
                      const Tensor& dbeta);

}  // namespace qgrad::learnable
