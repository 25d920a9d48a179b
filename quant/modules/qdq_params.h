// QdqParams: the 8-bit quantization parameters (scale, zero point, integer grid) of one qgrad
// quantizer module, derived exactly as its family derives them, and the integer grid values of a
// weight under it. Shared by the deployment back ends: the ONNX exporter turns them into
// QuantizeLinear / DequantizeLinear, int8 inference into oneDNN scales and zero points.
// Supported: torch.ao's FakeQuantize and FusedMovingAvgObsFakeQuantize (their stored scale and
// zero_point, as torch.ao's convert uses them), pytorch_quantization's TensorQuantizer with a
// static integer amax (scale = amax / max_bound, zero point 0: pq's amax/127 for 8 bits),
// Horizon's FakeQuantize (its scale, zero point 0, half-to-even rounding only), AIMET's
// QuantizeDequantize (its scale, zero point = -offset) and PACT's two quantizers (the activation:
// scale alpha / (2^k - 1) on [0, 2^k - 1]; DoReFa weights up to 7 bits: the odd integers
// 2r - n on [-n, n] at scale 1 / n, n = 2^k - 1).
// Grids narrower than the 8-bit type (bit widths below 8, reduce_range, narrow_range) keep
// their quant_min / quant_max, which the back ends enforce on activations (a Clip in ONNX, a
// clip post-op in oneDNN); weights are already on their grid. LSQ has lsq_qdq_params() below.
// Anything else (FP8, block quantization, dynamic amax, Horizon's half-up rounding, grids wider
// than 8 bits: qint16, AIMET above 8 bits, DoReFa's 8-bit weights with their half-step zero) and
// any zero, NaN, infinite or denormal scale is a ValueError naming the back end (`op`: "ONNX
// export", "int8 convert"), the layer and the quantizer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "nn/unary_module.h"

namespace qgrad::quant {

struct QdqParams {
  bool identity = false;                 // the quantizer passes values through (disabled): no Q/DQ
  std::vector<float> scale;              // one value per tensor, else one per channel
  std::vector<std::int32_t> zero_point;  // as scale
  std::optional<std::int64_t> axis;      // the channel axis of per-channel parameters
  std::int64_t quant_min = 0;            // the quantizer's integer grid
  std::int64_t quant_max = 0;
  bool is_uint8() const { return quant_min >= 0; }  // else int8
  // The grid is narrower than the 8-bit type's full range (activations must be clipped to it).
  bool narrower_than_type() const;
  std::string family;  // "torch_ao", "nvidia", "lsq", "horizon", "aimet" or "pact", for messages
};

// The parameters of `quantizer`; `op` and `where` name the caller and the quantizer in errors
// ("ONNX export", "layer '0' input quantizer").
QdqParams qdq_params(const nn::UnaryModule& quantizer, const std::string& op,
                     const std::string& where);

// LSQ / LSQ+ (LearnableFakeQuantize) as the affine grid its forward quantizes on: its learned
// scale, and its zero point rounded half to even and clamped to [quant_min, quant_max] (0 for a
// symmetric qscheme), the parameters torch.ao's learnable kernel hands to the same per-tensor /
// per-channel fake quantization as FakeQuantize. quantize_weight() then gives its weights'
// integers. ValueError for another module, a disabled quantizer is `identity`, and the scale and
// grid checks are qdq_params()'s.
QdqParams lsq_qdq_params(const nn::UnaryModule& quantizer, const std::string& op,
                         const std::string& where);

// lsq_qdq_params() for an LSQ / LSQ+ quantizer, qdq_params() for the others: what every back end
// uses (ONNX export, int8 inference, AIMET encodings).
QdqParams any_qdq_params(const nn::UnaryModule& quantizer, const std::string& op,
                         const std::string& where);

// The integer values (row-major, one per element of `weight`) that `quantizer`, with parameters
// `p`, puts `weight` on, computed with the family's own kernel; `op` and `where` as above.
std::vector<std::int32_t> quantize_weight(const nn::UnaryModule& quantizer, const QdqParams& p,
                                          const Tensor& weight, const std::string& op,
                                          const std::string& where);

}  // namespace qgrad::quant
