/// @file
/// torch.ao fake quantization with fixed quantization parameters, as PyTorch's
/// torch.fake_quantize_per_tensor_affine / torch.fake_quantize_per_channel_affine:
///   y = (clamp(rne(x * (1/scale)) + zero_point, quant_min, quant_max) - zero_point) * scale
/// with the straight-through gradient dx = dy where quant_min <= rne(x/scale) + zp <= quant_max
/// (the unclamped rounded value). Float32 results are bit-exact to PyTorch 1.13 on the CPU.
/// Differences (documented choices): a scale that is not finite and > 0 is an error (PyTorch
/// computes garbage); NaN inputs give NaN outputs with zero gradient and +inf/huge inputs clamp to
/// quant_max (PyTorch maps both to quant_min through an undefined float-to-int conversion).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace qgrad::ao {

/// x float32/float64 of any shape; scale is used at float precision (as PyTorch does).
Tensor fake_quantize_per_tensor_affine(const Tensor& x, double scale, std::int64_t zero_point,
                                       std::int64_t quant_min, std::int64_t quant_max);
/// The same with the parameters held in tensors (one-element scale and zero point, as the
/// FakeQuantize module's buffers).
Tensor fake_quantize_per_tensor_affine(const Tensor& x, const Tensor& scale,
                                       const Tensor& zero_point, std::int64_t quant_min,
                                       std::int64_t quant_max);
/// scale: 1-D floating [C], zero_point: 1-D int32/int64 [C], C = x.size(axis). A floating
/// zero_point (per_channel_affine_float_qparams) is used as PyTorch 1.13 uses it:
/// q = rne(fma(x, 1/scale, zp)) in float (PyTorch's kernel is FMA-contracted), mask qmin <= q <=
/// qmax, y = (clamp(q, qmin, qmax) - zp) * scale in double; it is not checked against the range.
Tensor fake_quantize_per_channel_affine(const Tensor& x, const Tensor& scale,
                                        const Tensor& zero_point, std::int64_t axis,
                                        std::int64_t quant_min, std::int64_t quant_max);

/// The two above as they run off the CPU, on any device: the qparams stay tensors on x's device
/// (per tensor, axis -1: one element each; else 1-D with x.size(axis) elements; a float zero
/// point per channel is per_channel_affine_float_qparams), are never read on the host and are
/// checked by a kernel (on a GPU its ValueError comes at the host's next wait), and the value
/// and the straight-through mask come from one pass. Ranges within [-2^23, 2^23] only. On the
/// CPU it gives the functions' bits (the tests hold it to them); they keep their own kernels.
Tensor fake_quantize_device_qparams(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                                    std::int64_t axis, std::int64_t quant_min,
                                    std::int64_t quant_max);

}  // namespace qgrad::ao
