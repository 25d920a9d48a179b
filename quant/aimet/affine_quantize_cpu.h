// Raw CPU kernels of AIMET v2's affine quantization (no autograd). scale and offset arrive as
// views expanded to x's shape (zero strides on broadcast dims), so per-tensor, per-channel and
// any trailing-dim encoding shape run through the same strided loop. `wide` computes in double
// (AIMET upcasts float32 when the grid is too fine for float32 to be numerically stable).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace qgrad::aimet {

enum class AffineKind { Quantize, Dequantize, QuantizeDequantize };

// Quantize:           y = clamp(rne(x / s) - o, qmin, qmax)
// Dequantize:         y = (x + o) * s
// QuantizeDequantize: y = (clamp(rne(x / s) - o, qmin, qmax) + o) * s
void affine_forward_cpu(AffineKind kind, const Tensor& x, const Tensor& scale, const Tensor& offset,
                        std::int64_t qmin, std::int64_t qmax, bool wide, const Tensor& y);

// Unreduced gradients (x-shaped, contiguous outputs) of the three functions, AIMET's formulas,
// with mask = qmin <= rne(x / s) - o <= qmax recomputed from x:
// Quantize:           dx = (g*m)/s, ds = -((g*m)/s)*(x/s), do = -(g*m)
// Dequantize:         dx = g*s, ds = g*(x+o), do = g*s
// QuantizeDequantize: dx = g*m, ds = g*(clamp(rne(x/s), o+qmin, o+qmax) - (x/s)*m),
//                     do = g*(!m*s)
void affine_backward_cpu(AffineKind kind, const Tensor& g, const Tensor& x, const Tensor& scale,
                         const Tensor& offset, std::int64_t qmin, std::int64_t qmax, bool wide,
                         const Tensor& dx, const Tensor& dscale, const Tensor& doffset);

// y = rne(x) (the forward of AIMET's ste_round).
void round_half_even_cpu(const Tensor& x, const Tensor& y);

}  // namespace qgrad::aimet
