/// @file
/// AIMET v2 affine quantization functions (aimet_torch.v2.quantization.affine.quantize /
/// dequantize / quantize_dequantize), differentiable in the input, the scale and the offset:
///   quantize(x)            = clamp(rne(x / scale) - offset, qmin, qmax)
///   dequantize(q)          = (q + offset) * scale
///   quantize_dequantize(x) = dequantize(quantize(x))
/// AIMET's offset is minus the usual zero point. scale and offset broadcast against x from the
/// trailing dims (shape [] / [1] per tensor, [O,1,1,1] per output channel of a conv weight, ...).
/// Gradients (AIMET's custom autograd functions), mask = qmin <= rne(x/scale) - offset <= qmax:
///   quantize_dequantize: dx = dy*mask, dscale = dy*(clamp(rne(x/s), o+qmin, o+qmax) - (x/s)*mask),
///                        doffset = dy*(!mask)*scale
///   quantize:            dx = dy*mask/s, dscale = -(dy*mask/s)*(x/s), doffset = -dy*mask
///   dequantize:          dq = dy*s, dscale = dy*(q+o), doffset = dy*s
/// summed over the broadcast dims. float32 inputs are computed in double when the grid is too
/// fine for float32 (more than ~2^20 steps), as AIMET does.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace qgrad::aimet {

/// clamp(rne(x / scale) - offset, qmin, qmax), differentiable in x, scale and offset.
Tensor quantize(const Tensor& x, const Tensor& scale, const Tensor& offset, std::int64_t qmin,
                std::int64_t qmax);
/// (q + offset) * scale, differentiable in q, scale and offset.
Tensor dequantize(const Tensor& q, const Tensor& scale, const Tensor& offset);
/// dequantize(quantize(x)), with AIMET's fused gradients (see the file comment).
Tensor quantize_dequantize(const Tensor& x, const Tensor& scale, const Tensor& offset,
                           std::int64_t qmin, std::int64_t qmax);

/// rne(x) with the identity gradient (AIMET's ste_round), used for the learnable offset.
Tensor ste_round(const Tensor& x);

}  // namespace qgrad::aimet
