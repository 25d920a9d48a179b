/// @file
/// torch.ao learnable fake quantization (LSQ as PyTorch implements it in
/// torch._fake_quantize_learnable_per_tensor_affine / _per_channel_affine, used by
/// _LearnableFakeQuantize): scale and zero_point are float tensors that receive gradients.
/// Forward: fake quantization with zero point clamp(rne(zero_point), qmin, qmax).
/// Backward (PyTorch's exact arithmetic, including its fused multiply-adds):
///   per-tensor zero point zp_b = trunc(clamp(zero_point + 0.5, qmin, qmax)) (round half up),
///   per-channel zp_b = clamp(rne(zero_point)) (the same as the forward);
///   xq = rne(fma(x, 1/scale, zp_b));
///   in range:  dx = dy, dscale = ((dy * fma(xq - zp_b, scale, -x)) * (1/scale)) * grad_factor,
///              dzero_point = 0;
///   clamped:   dx = 0, dscale = (dy * (qmin or qmax - zp_b)) * grad_factor,
///              dzero_point = (-dy * scale) * grad_factor.
/// dx is not scaled by grad_factor. Gradients are summed in double in a fixed order.
/// Worked example (PyTorch's numbers): x=[-1,-0.26,0,0.04,0.05,0.26,1,12.8,13], scale 0.1,
/// zero_point 2.5, [0,127], dy=1 -> y=[-0.2,-0.2,0,0,0,0.3,1,12.5,12.5], dscale=245.1, dzp=-0.3.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace qgrad::ao {

/// scale, zero_point: one-element tensors of x's dtype. Differentiable in x, scale, zero_point.
Tensor fake_quantize_learnable_per_tensor_affine(const Tensor& x, const Tensor& scale,
                                                 const Tensor& zero_point, std::int64_t quant_min,
                                                 std::int64_t quant_max, double grad_factor = 1.0);
/// scale, zero_point: 1-D tensors of x's dtype with x.size(axis) elements.
Tensor fake_quantize_learnable_per_channel_affine(const Tensor& x, const Tensor& scale,
                                                  const Tensor& zero_point, std::int64_t axis,
                                                  std::int64_t quant_min, std::int64_t quant_max,
                                                  double grad_factor = 1.0);

/// The grad_factor _LearnableFakeQuantize uses with use_grad_scaling: 1/sqrt(numel * quant_max).
double learnable_grad_factor(std::int64_t numel, std::int64_t quant_max);

}  // namespace qgrad::ao
