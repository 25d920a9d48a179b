/// @file
/// Horizon fake quantization (horizon_plugin_pytorch.quantization.FakeQuantize's math), symmetric
/// only: y = clamp(round(x / scale), qmin, qmax) * scale, zero point 0. round is half to even by
/// default or half up (floor(x / scale + 0.5)). saturate=true gives the clipped straight-through
/// gradient (dx = dy where qmin <= round(x / scale) <= qmax, else 0); saturate=false passes dy
/// through unchanged. NaN inputs give NaN outputs (and a zero gradient when saturating).
#pragma once

#include <cstdint>
#include <optional>

#include "core/tensor.h"
#include "quant/horizon/horizon_qparams.h"

namespace qgrad::horizon {

/// scale: floating tensor with one element (per tensor, ch_axis empty) or 1-D with x.size(ch_axis)
/// elements (per channel). Differentiable in x.
Tensor fake_quantize(const Tensor& x, const Tensor& scale, QDType dtype = QDType::QInt8,
                     std::optional<std::int64_t> ch_axis = std::nullopt,
                     RoundMode round_mode = RoundMode::HalfToEven, bool saturate = true);

/// fake_quantize as it runs off the CPU, on any device: the scale stays a tensor on x's device,
/// is never read on the host and is checked by a kernel (on a GPU its ValueError comes at the
/// host's next wait); the value and the mask come from one pass. On the CPU it gives
/// fake_quantize's bits (the tests hold it to them); fake_quantize keeps its own kernels there.
Tensor fake_quantize_device_scale(const Tensor& x, const Tensor& scale,
                                  QDType dtype = QDType::QInt8,
                                  std::optional<std::int64_t> ch_axis = std::nullopt,
                                  RoundMode round_mode = RoundMode::HalfToEven,
                                  bool saturate = true);

}  // namespace qgrad::horizon
