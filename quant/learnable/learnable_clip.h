// The two-sided learnable clip of NVIDIA's TensorQuantizer with learn_amax (PACT-style gradients
// for both bounds): y = clamp(x, cmin, cmax) with
//   dx = dy where cmin < x < cmax (strict), dcmin = sum(dy where x <= cmin),
//   dcmax = sum(dy where x >= cmax).
// The quantizer's amax is max(-cmin, cmax) (learnable_clip_amax). The bounds broadcast against x
// from the trailing dims (scalars in TensorQuantizer).
#pragma once

#include "core/tensor.h"

namespace qgrad::learnable {

Tensor learnable_clip(const Tensor& x, const Tensor& cmin, const Tensor& cmax);
// max(-cmin, cmax), differentiable.
Tensor learnable_clip_amax(const Tensor& cmin, const Tensor& cmax);

}  // namespace qgrad::learnable
