/// @file
/// torch.ao's fused observer + fake quantization, PyTorch 1.13's
/// torch.fused_moving_avg_obs_fake_quant (the op behind FusedMovingAvgObsFakeQuantize, the default
/// QAT fake quantizer of get_default_qat_qconfig("fbgemm" / "x86")). With the observer on, the
/// running min/max take the batch's min/max (the first time, while they are infinite) or move by m
/// + c * (batch - m) in float32; with fake quantization on, scale and zero point are chosen from
/// the running statistics by ATen's ChooseQuantizationParams (not the observers' calculate_qparams:
/// see fused_obs_fake_quant_math.h) and written into `scale` / `zero_point`, and x is
/// fake-quantized with them; with it off, x is returned unchanged and scale / zero_point keep their
/// values. Gradient: the straight-through mask (identity when fake quantization is off). Float32
/// results, running statistics and qparams are bit-exact to PyTorch 1.13 on the CPU.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace qgrad::ao {

/// x: float32 of any shape (empty: returned as a copy, nothing updated). observer_on /
/// fake_quant_on: one-element integer tensors (a module's enable flags). running_min / running_max
/// (float32), scale (float32) and zero_point (int32 or int64) are updated in place: per tensor
/// they hold one element; per channel (per_row_fake_quant, ch_axis must be 0 as in PyTorch 1.13)
/// they hold x.size(0) elements, or start empty ([0]) and are then resized in place (running
/// statistics to +inf / -inf, scale to 1, zero point to 0). symmetric_quant selects the
/// symmetric choice of qparams. quant_min <= quant_max within [-2^23, 2^23] (PyTorch passes them
/// as int32).
Tensor fused_moving_avg_obs_fake_quant(const Tensor& x, const Tensor& observer_on,
                                       const Tensor& fake_quant_on, const Tensor& running_min,
                                       const Tensor& running_max, const Tensor& scale,
                                       const Tensor& zero_point, double averaging_const,
                                       std::int64_t quant_min, std::int64_t quant_max,
                                       std::int64_t ch_axis, bool per_row_fake_quant,
                                       bool symmetric_quant);

}  // namespace qgrad::ao
