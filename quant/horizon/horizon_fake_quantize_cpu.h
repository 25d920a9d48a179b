// Raw CPU kernels of Horizon's fake quantization (no autograd):
// y = clamp(round(x / scale), qmin, qmax) * scale (a division, rounding half to even or half up),
// with an optional uint8 mask of qmin <= round(x / scale) <= qmax.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "quant/horizon/horizon_qparams.h"

namespace qgrad::horizon {

// x, y any strides (mask with y's strides, may be undefined).
void fake_quantize_per_tensor_cpu(const Tensor& x, double scale, QRange range, RoundMode mode,
                                  const Tensor& y, const Tensor& mask);
// x, y, mask contiguous; scale[c] for index c of `axis`.
void fake_quantize_per_channel_cpu(const Tensor& x, std::int64_t axis,
                                   const std::vector<double>& scale, QRange range, RoundMode mode,
                                   const Tensor& y, const Tensor& mask);

}  // namespace qgrad::horizon
