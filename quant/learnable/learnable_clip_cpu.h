// Raw CPU kernels of the two-sided learnable clip (no autograd); the bounds arrive as views
// expanded to x's shape.
#pragma once

#include "core/tensor.h"

namespace qgrad::learnable {

// y = clamp(x, lo, hi) (NaN passes through).
void learnable_clip_forward_cpu(const Tensor& x, const Tensor& lo, const Tensor& hi,
                                const Tensor& y);
// dx = dy where lo < x < hi; dlo = dy where x <= lo; dhi = dy where x >= hi (unreduced).
void learnable_clip_backward_cpu(const Tensor& dy, const Tensor& x, const Tensor& lo,
                                 const Tensor& hi, const Tensor& dx, const Tensor& dlo,
                                 const Tensor& dhi);

}  // namespace qgrad::learnable
