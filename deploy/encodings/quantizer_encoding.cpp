// AIMET encodings of qgrad's quantizer families: AIMET's own from min / max, the integer-grid
// families from their QdqParams (or Horizon's scale), mapped onto AIMET's 2^b-level grid.
#include "deploy/encodings/quantizer_encoding.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "core/factory.h"
#include "quant/modules/aimet_quantizer.h"
#include "quant/modules/fake_quantize.h"
#include "quant/modules/fused_fake_quantize.h"
#include "quant/modules/horizon_fake_quantize.h"
#include "quant/modules/learnable_fake_quantize.h"
#include "quant/modules/qdq_params.h"
#include "quant/modules/tensor_quantizer.h"

namespace qgrad::deploy {

namespace {

constexpr const char kOp[] = "AIMET encodings export";

// A family's grid [quant_min, quant_max] with zero points and scales as an AIMET encoding.
aimet::AffineEncoding grid_encoding(const std::vector<float>& scale,
                                    const std::vector<std::int64_t>& zero_point,
                                    std::int64_t quant_min, std::int64_t quant_max,
                                    const std::string& where) {
  const std::int64_t levels = quant_max - quant_min + 1;
  int bits = 0;
  while (bits < 32 && (std::int64_t{1} << bits) < levels) ++bits;
  QGRAD_CHECK(levels >= 2 && (std::int64_t{1} << bits) == levels, ValueError, kOp, ": ", where,
              ": the integer grid [", quant_min, ", ", quant_max, "] has ", levels,
              " levels, not a power of two (narrow_range?): an AIMET encoding has 2^bitwidth");
  const std::int64_t half = std::int64_t{1} << (bits - 1);
  bool symmetric = true;
  std::vector<double> offset;
  for (std::int64_t z : zero_point) {
    offset.push_back(static_cast<double>(quant_min - z));  // AIMET's file offset
    symmetric = symmetric && quant_min - z == -half;
  }
  // AffineEncoding holds offset - qmin of its grid: 0 on the signed grid, the file offset on
  // the unsigned one.
  for (double& o : offset) o = symmetric ? 0.0 : o;
  const std::int64_t n = static_cast<std::int64_t>(scale.size());
  return aimet::AffineEncoding(from_vector<float>(scale).view({n}),
                               from_vector<double>(offset).to(DType::Float32).view({n}), bits,
                               symmetric);
}

std::optional<aimet::AffineEncoding> from_qdq(const quant::QdqParams& p, const std::string& where) {
  if (p.identity) return std::nullopt;
  QGRAD_CHECK(!p.axis || *p.axis == 0, ValueError, kOp, ": ", where,
              ": per-channel parameters along axis ", p.axis.value_or(0),
              " (AIMET's per-channel encodings are along axis 0, the output channels)");
  std::vector<std::int64_t> zp(p.zero_point.begin(), p.zero_point.end());
  return grid_encoding(p.scale, zp, p.quant_min, p.quant_max, where);
}

std::optional<aimet::AffineEncoding> from_aimet(const quant::AimetQuantizeDequantize& q,
                                                const std::string& where) {
  QGRAD_CHECK(q.is_initialized(), ValueError, kOp, ": ", where,
              ": the AIMET quantizer's range was never set (run compute_encodings / calibrate)");
  NoGradGuard no_grad;
  const Tensor min = q.min().detach(), max = q.max().detach();
  // Per-channel encodings must be along dim 0 of the weight: shape (O, 1, ..., 1).
  const Shape& s = q.shape();
  for (std::size_t d = 1; d < s.size(); ++d)
    QGRAD_CHECK(s[d] == 1, ValueError, kOp, ": ", where, ": encoding shape ", shape_str(s),
                " is not per tensor or per output channel (O, 1, ...)");
  const Tensor scale = aimet::encoding_scale(min, max, q.bitwidth());
  const Tensor offset = aimet::encoding_offset(min, scale, q.bitwidth(), q.symmetric());
  for (float v : scale.contiguous().to_vector<float>())
    QGRAD_CHECK(std::isfinite(v) && v > 0.0f, ValueError, kOp, ": ", where, ": scale ", v,
                " (max - min must be positive and finite)");
  const std::int64_t n = scale.numel();
  return aimet::AffineEncoding(scale.contiguous().view({n}), offset.contiguous().view({n}),
                               q.bitwidth(), q.symmetric());
}

std::optional<aimet::AffineEncoding> from_horizon(const quant::HorizonFakeQuantize& q,
                                                  const std::string& where) {
  if (!q.fake_quant_enabled()) return std::nullopt;
  QGRAD_CHECK(!q.options().ch_axis_ || *q.options().ch_axis_ == 0 || q.scale().numel() == 1,
              ValueError, kOp, ": ", where, ": per-channel parameters along axis ",
              q.options().ch_axis_.value_or(0),
              " (AIMET's per-channel encodings are along axis 0, the output channels)");
  const std::vector<float> scale = q.scale().detach().contiguous().to_vector<float>();
  for (std::size_t i = 0; i < scale.size(); ++i)
    QGRAD_CHECK(std::isfinite(scale[i]) && scale[i] > 0.0f, ValueError, kOp, ": ", where,
                ": scale ", scale[i], " is not a usable positive finite scale");
  const horizon::QRange r = q.quant_range();
  return grid_encoding(scale, std::vector<std::int64_t>(scale.size(), 0), r.quant_min, r.quant_max,
                       where);
}

}  // namespace

std::optional<aimet::AffineEncoding> aimet_encoding_of(const nn::UnaryModule& quantizer,
                                                       const std::string& where) {
  if (const auto* q = dynamic_cast<const quant::AimetQuantizeDequantize*>(&quantizer))
    return from_aimet(*q, where);
  if (dynamic_cast<const quant::FakeQuantize*>(&quantizer) != nullptr ||
      dynamic_cast<const quant::FusedMovingAvgObsFakeQuantize*>(&quantizer) != nullptr ||
      dynamic_cast<const quant::TensorQuantizer*>(&quantizer) != nullptr ||
      dynamic_cast<const quant::LearnableFakeQuantize*>(&quantizer) != nullptr)
    return from_qdq(quant::any_qdq_params(quantizer, kOp, where), where);
  if (const auto* q = dynamic_cast<const quant::HorizonFakeQuantize*>(&quantizer))
    return from_horizon(*q, where);
  throw ValueError(std::string(kOp) + ": " + where + " is a " + quantizer.name() +
                   ", which has no AIMET encoding (supported: AimetQuantizeDequantize, torch.ao "
                   "FakeQuantize and FusedMovingAvgObsFakeQuantize, pytorch_quantization "
                   "TensorQuantizer, LearnableFakeQuantize, HorizonFakeQuantize)");
}

}  // namespace qgrad::deploy
