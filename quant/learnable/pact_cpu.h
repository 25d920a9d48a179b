// Raw CPU kernels of PACT (no autograd); alpha arrives as a view expanded to x's shape.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace qgrad::learnable {

// y = clip(x, 0, alpha); with levels > 0 then y = rne(y / (alpha / levels)) * (alpha / levels).
void pact_forward_cpu(const Tensor& x, const Tensor& alpha, std::int64_t levels, const Tensor& y);
// dx = dy where 0 <= x < alpha, dalpha = dy where x >= alpha (unreduced, x-shaped).
void pact_backward_cpu(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& dx,
                       const Tensor& dalpha);

}  // namespace qgrad::learnable
