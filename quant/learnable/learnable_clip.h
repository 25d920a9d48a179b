/// @file
/// The two-sided learnable clip of NVIDIA's TensorQuantizer with learn_amax (PACT-style gradients
/// for both bounds), bit for bit with pytorch_quantization's ClipFunction on the CPU:
/// y = torch.max(torch.min(x, cmax), cmin) (a tie returns the bound: clip(-0.0, 0, 6) = +0.0; NaN
/// propagates), and with the float masks a = (x > cmin), b = (x < cmax):
///   dx = dy * a * b (a float multiply: a masked element with negative dy gives -0.0),
///   dcmin = sum(dy * (1 - a)), dcmax = sum(dy * (1 - b)) (NaN x counts towards both bounds).
/// The sums are taken in double (see docs/quantization.md on reductions).
/// The quantizer's amax is max(-cmin, cmax) (learnable_clip_amax). The bounds broadcast against x
/// from the trailing dims (scalars in TensorQuantizer).
#pragma once

#include "core/tensor.h"

namespace qgrad::learnable {

/// clip(x, cmin, cmax) with learnable bounds (see the file comment); ValueError when a bound is
/// NaN or (scalar bounds) cmin exceeds cmax.
Tensor learnable_clip(const Tensor& x, const Tensor& cmin, const Tensor& cmax);
/// max(-cmin, cmax), differentiable.
Tensor learnable_clip_amax(const Tensor& cmin, const Tensor& cmax);

}  // namespace qgrad::learnable
