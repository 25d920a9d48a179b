// Int32 bias quantization: the grid's scales from the layer's quantizers (qdq_params) and the
// fake quantization through torch.ao's per-channel kernel.
#include "quant/modules/int32_bias.h"

#include <cfloat>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/factory.h"
#include "core/shape.h"
#include "quant/modules/aimet_quantizer.h"
#include "quant/modules/qdq_params.h"
#include "quant/torch_ao/fake_quantize.h"

namespace qgrad::quant {

namespace {

constexpr std::int64_t kInt32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

void check_bias(const Tensor& bias, const std::vector<float>& scale, const char* op) {
  QGRAD_CHECK(
      bias.defined() && bias.dim() == 1 && bias.numel() == static_cast<std::int64_t>(scale.size()),
      ShapeError, op, ": expected a 1-D bias of ", scale.size(), " elements, got ",
      bias.defined() ? shape_str(bias.shape()) : std::string("(undefined)"));
  QGRAD_CHECK(bias.dtype() == DType::Float32, DTypeError, op, ": expected a float32 bias, got ",
              dtype_name(bias.dtype()));
}

}  // namespace

std::optional<std::vector<float>> int32_bias_scale(const nn::UnaryModule* input_quantizer,
                                                   const nn::UnaryModule* weight_quantizer,
                                                   std::int64_t out_channels, const std::string& op,
                                                   const std::string& where) {
  if (input_quantizer == nullptr || weight_quantizer == nullptr) return std::nullopt;
  // AIMET's compute_encodings scope quantizes each batch with that batch's own encoding and
  // stores none: calibration runs with the float bias.
  for (const nn::UnaryModule* q : {input_quantizer, weight_quantizer}) {
    const auto* a = dynamic_cast<const AimetQuantizeDequantize*>(q);
    if (a != nullptr && a->computing_encodings()) return std::nullopt;
  }
  const QdqParams in = any_qdq_params(*input_quantizer, op, where + " input quantizer");
  if (in.identity) return std::nullopt;
  const QdqParams w = any_qdq_params(*weight_quantizer, op, where + " weight quantizer");
  if (w.identity) return std::nullopt;
  QGRAD_CHECK(!in.axis && in.scale.size() == 1, ValueError, op, ": ", where,
              ": an int32 bias needs a per-tensor input scale, the input quantizer has ",
              in.scale.size(), " along axis ", in.axis ? *in.axis : 0);
  const std::size_t n = static_cast<std::size_t>(out_channels);
  QGRAD_CHECK(w.scale.size() == 1 || (w.axis && *w.axis == 0 && w.scale.size() == n), ValueError,
              op, ": ", where, ": an int32 bias needs one weight scale per output channel (", n,
              ", axis 0) or one per tensor, the weight quantizer has ", w.scale.size(),
              w.axis ? " along axis " + std::to_string(*w.axis) : std::string());
  std::vector<float> scale(n);
  for (std::size_t c = 0; c < n; ++c) {
    // A float32 product, as ONNX Runtime forms the bias scale of its integer kernels.
    scale[c] = in.scale[0] * w.scale[w.scale.size() == 1 ? 0 : c];
    QGRAD_CHECK(std::isfinite(scale[c]) && scale[c] >= FLT_MIN, ValueError, op, ": ", where,
                ": the int32 bias scale of channel ", c, " (input scale ", in.scale[0],
                " x weight scale ", w.scale[w.scale.size() == 1 ? 0 : c], ") is ", scale[c],
                " (zero, denormal or infinite)");
  }
  return scale;
}

Tensor fake_quantize_int32_bias(const Tensor& bias, const std::vector<float>& scale) {
  check_bias(bias, scale, "fake_quantize_int32_bias");
  const std::int64_t n = bias.numel();
  const Tensor s = from_vector<float>(scale, {n}, TensorOptions().device(bias.device()));
  const Tensor zp = zeros({n}, TensorOptions().dtype(DType::Int32).device(bias.device()));
  return ao::fake_quantize_per_channel_affine(bias, s, zp, 0, kInt32Min, kInt32Max);
}

std::vector<std::int32_t> int32_bias_values(const Tensor& bias, const std::vector<float>& scale) {
  check_bias(bias, scale, "int32_bias_values");
  const std::vector<float> b = bias.detach().contiguous().to_vector<float>();
  std::vector<std::int32_t> q(b.size());
  for (std::size_t c = 0; c < b.size(); ++c) {
    // torch.ao's per-channel rounding in float32: rne(b * (1 / s)), then the int32 clamp (NaN
    // has no integer: the fake quantization gives NaN there, the exporter an error).
    const float inv = 1.0f / scale[c];
    const float r = std::nearbyint(b[c] * inv);
    QGRAD_CHECK(!std::isnan(r), ValueError, "int32_bias_values: bias[", c, "] is NaN");
    q[c] = r <= static_cast<float>(kInt32Min)   ? std::numeric_limits<std::int32_t>::min()
           : r >= static_cast<float>(kInt32Max) ? std::numeric_limits<std::int32_t>::max()
                                                : static_cast<std::int32_t>(r);
  }
  return q;
}

}  // namespace qgrad::quant
