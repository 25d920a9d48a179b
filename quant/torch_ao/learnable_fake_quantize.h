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

/// The path the two functions above take off the CPU, on any device (the CPU tests hold it to
/// their bits): the parameters stay tensors on x's device and are read nowhere on the host
/// (their checks, scale finite and > 0 and zero point finite, run as a kernel whose failure is
/// thrown at the host's next wait on a GPU). axis: a negative value is per tensor (the fronts
/// normalise a per-channel axis first). float32 input only; quant_min and quant_max within [-2^23,
/// 2^23]. Forward and dx bitwise the CPU functions'; the scale and zero-point gradients are summed
/// in double in another order, so equal to rounding.
Tensor fake_quantize_learnable_device(const Tensor& x, const Tensor& scale,
                                      const Tensor& zero_point, std::int64_t axis,
                                      std::int64_t quant_min, std::int64_t quant_max,
                                      double grad_factor = 1.0);

/// The grad_factor _LearnableFakeQuantize uses with use_grad_scaling: 1/sqrt(numel * quant_max).
double learnable_grad_factor(std::int64_t numel, std::int64_t quant_max);

}  // namespace qgrad::ao
