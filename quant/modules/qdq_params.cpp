// QdqParams from torch.ao's fake quantizers, pytorch_quantization's TensorQuantizer, Horizon's
// FakeQuantize and AIMET's QuantizeDequantize, with the checks that keep an unusable scale or an
// inexpressible quantizer out of the exported model.
#include "quant/modules/qdq_params.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/shape.h"
#include "quant/aimet/affine_encoding.h"
#include "quant/aimet/affine_quantize.h"
#include "quant/horizon/horizon_fake_quantize.h"
#include "quant/learnable/dorefa.h"
#include "quant/modules/aimet_quantizer.h"
#include "quant/modules/dorefa_weight_quantizer.h"
#include "quant/modules/fake_quantize.h"
#include "quant/modules/fused_fake_quantize.h"
#include "quant/modules/horizon_fake_quantize.h"
#include "quant/modules/learnable_fake_quantize.h"
#include "quant/modules/pact_activation_quantizer.h"
#include "quant/modules/tensor_quantizer.h"
#include "quant/nvidia/tensor_quant.h"
#include "quant/observer/quant_dtype.h"
#include "quant/torch_ao/fake_quantize.h"

namespace qgrad::quant {

namespace {

// Every scale finite, positive and a normal float32 (a denormal scale loses precision in any
// runtime, and 1 / scale overflows).
void check_scales(const QdqParams& p, const std::string& op, const std::string& where) {
  QGRAD_CHECK(!p.scale.empty(), ValueError, op, ": ", where,
              " has no scale yet (never observed or calibrated)");
  for (std::size_t i = 0; i < p.scale.size(); ++i) {
    const float s = p.scale[i];
    QGRAD_CHECK(std::isfinite(s) && s >= FLT_MIN, ValueError, op, ": ", where, ": scale",
                p.scale.size() > 1 ? " of channel " + std::to_string(i) : std::string(), " is ", s,
                " (zero, negative, NaN, infinite or denormal scales cannot be exported)");
  }
}

// v as an int32, or a ValueError naming `what`: converting NaN, an infinity or a value beyond
// int32 to an integer is undefined behaviour, and a diverged run's NaN weights reach here.
std::int32_t checked_int32(double v, const std::string& op, const std::string& where,
                           const std::string& what) {
  QGRAD_CHECK(std::isfinite(v) && v >= std::numeric_limits<std::int32_t>::min() &&
                  v <= std::numeric_limits<std::int32_t>::max(),
              ValueError, op, ": ", where, ": ", what, " is ", v,
              ", which has no int32 (NaN or infinite weights or quantizer state cannot be "
              "converted)");
  return static_cast<std::int32_t>(v);
}

// The integers of a quantized weight, element by element (the values are whole numbers).
std::int32_t weight_int32(double v, std::size_t i, const std::string& op,
                          const std::string& where) {
  if (std::isfinite(v) && std::fabs(v) <= 2147483647.0) return static_cast<std::int32_t>(v);
  return checked_int32(v, op, where, "weight element " + std::to_string(i) + " quantized");
}

void check_8bit(const QdqParams& p, const std::string& op, const std::string& where) {
  const bool fits =
      p.quant_min >= 0 ? p.quant_max <= 255 : p.quant_min >= -128 && p.quant_max <= 127;
  QGRAD_CHECK(fits && p.quant_min < p.quant_max, ValueError, op, ": ", where,
              ": the integer grid [", p.quant_min, ", ", p.quant_max,
              "] is wider than 8 bits (only int8 and uint8 grids are supported)");
  for (std::int32_t z : p.zero_point)
    QGRAD_CHECK(z >= p.quant_min && z <= p.quant_max, ValueError, op, ": ", where, ": zero point ",
                z, " is outside [", p.quant_min, ", ", p.quant_max, "]");
}

template <typename FQ>
QdqParams ao_params(const FQ& fq, const std::string& op, const std::string& where) {
  QdqParams p;
  p.family = "torch_ao";
  if (!fq.fake_quant_enabled()) {
    p.identity = true;
    return p;
  }
  if constexpr (std::is_same_v<FQ, FusedMovingAvgObsFakeQuantize>) {
    // What its forward fake-quantizes with, not the stored copy (stale after calibration).
    const ao::QParams q = fq.fake_quant_qparams(op + ": " + where);
    p.scale = q.scale.template to_vector<float>();
    p.zero_point = q.zero_point.template to_vector<std::int32_t>();
  } else {
    p.scale = fq.scale().template to_vector<float>();
    p.zero_point = fq.zero_point().template to_vector<std::int32_t>();
  }
  p.quant_min = fq.quant_min();
  p.quant_max = fq.quant_max();
  if (fq.is_per_channel()) p.axis = fq.ch_axis();
  QGRAD_CHECK(p.scale.size() == p.zero_point.size(), ValueError, op, ": ", where, ": ",
              p.scale.size(), " scales but ", p.zero_point.size(), " zero points");
  QGRAD_CHECK(p.axis || p.scale.size() == 1, ValueError, op, ": ", where,
              ": a per-tensor quantizer with ", p.scale.size(), " scales");
  check_scales(p, op, where);
  check_8bit(p, op, where);
  return p;
}

QdqParams nvidia_params(const TensorQuantizer& tq, const std::string& op,
                        const std::string& where) {
  QdqParams p;
  p.family = "nvidia";
  const nvidia::QuantDescriptor& d = tq.descriptor();
  if (!tq.is_enabled() || (!tq.quant_enabled() && !d.learn_amax())) {
    p.identity = true;
    return p;
  }
  const std::string what = op + ": " + where + " (TensorQuantizer " + tq.extra_repr() + ")";
  QGRAD_CHECK(tq.quant_enabled(), ValueError, what,
              ": learn_amax with quantization off (a clip only) is not supported yet");
  QGRAD_CHECK(!d.num_bits().is_float(), ValueError, what, ": num_bits ", d.num_bits().str(),
              " is a float format (FP8 has no int8 / uint8 grid)");
  QGRAD_CHECK(!d.block_sizes(), ValueError, what,
              ": block quantization has no per-tensor or per-channel form");
  QGRAD_CHECK(d.fake_quant(), ValueError, what, ": fake_quant false is not supported");
  QGRAD_CHECK(!d.scale_amax(), ValueError, what, ": scale_amax is not supported yet");
  QGRAD_CHECK(tq.has_amax(), ValueError, what,
              ": no amax (a dynamic quantizer, or one never calibrated) cannot be exported");
  const Tensor amax = tq.amax();
  const std::vector<double> a = amax.to_vector<double>();
  if (a.size() > 1 || !d.axis().is_none()) {
    QGRAD_CHECK(d.axis().axes.size() == 1, ValueError, what,
                ": per-channel amax must keep exactly one axis");
    p.axis = d.axis().axes[0];
  }
  const nvidia::IntRange r =
      nvidia::int_quant_range(d.num_bits().bits(), d.is_unsigned(), d.narrow_range(), op.c_str());
  p.quant_min = static_cast<std::int64_t>(r.min_bound);
  p.quant_max = static_cast<std::int64_t>(r.max_bound);
  for (std::size_t i = 0; i < a.size(); ++i) {
    // pq quantizes a channel with amax <= 2^-24 to zero with scale 1: no 8-bit scale does that.
    QGRAD_CHECK(std::isfinite(a[i]) && a[i] > nvidia::kMinAmax, ValueError, what, ": amax",
                a.size() > 1 ? " of channel " + std::to_string(i) : std::string(), " is ", a[i],
                " (zero, NaN or below 2^-24: no usable scale)");
    p.scale.push_back(static_cast<float>(a[i] / r.max_bound));  // pq's amax / 127 for 8 bits
    p.zero_point.push_back(0);
  }
  check_scales(p, op, where);
  check_8bit(p, op, where);
  return p;
}

// Horizon: y = clamp(rne(x / scale), qmin, qmax) * scale with zero point 0, QuantizeLinear's
// own arithmetic. Half-up rounding has no QuantizeLinear form.
QdqParams horizon_params(const HorizonFakeQuantize& q, const std::string& op,
                         const std::string& where) {
  QdqParams p;
  p.family = "horizon";
  if (!q.fake_quant_enabled()) {
    p.identity = true;
    return p;
  }
  const std::string what = op + ": " + where + " (HorizonFakeQuantize)";
  QGRAD_CHECK(q.options().round_mode_ == horizon::RoundMode::HalfToEven, ValueError, what,
              ": round_mode half_up has no QuantizeLinear form (ONNX and oneDNN round half to "
              "even)");
  p.scale = q.scale().detach().contiguous().to_vector<float>();
  p.zero_point.assign(p.scale.size(), 0);
  const horizon::QRange r = q.quant_range();
  p.quant_min = r.quant_min;
  p.quant_max = r.quant_max;
  if (q.options().ch_axis_) p.axis = *q.options().ch_axis_;
  QGRAD_CHECK(p.axis || p.scale.size() == 1, ValueError, what, ": a per-tensor quantizer with ",
              p.scale.size(), " scales");
  check_scales(p, op, where);
  check_8bit(p, op, where);
  return p;
}

// AIMET's scale and offset, in the encoding shape, from the quantizer's range.
struct AimetEncodingTensors {
  Tensor scale, offset;
};
AimetEncodingTensors aimet_encoding_tensors(const AimetQuantizeDequantize& q) {
  NoGradGuard no_grad;
  const Tensor scale = aimet::encoding_scale(q.min().detach(), q.max().detach(), q.bitwidth());
  return {scale, aimet::encoding_offset(q.min().detach(), scale, q.bitwidth(), q.symmetric())};
}

// AIMET: quantize = clamp(rne(x / scale) - offset, qmin, qmax), dequantize = (q + offset) * scale:
// QuantizeLinear with zero point -offset. Per channel along the encoding shape's one non-1 dim.
QdqParams aimet_params(const AimetQuantizeDequantize& q, const std::string& op,
                       const std::string& where) {
  QdqParams p;
  p.family = "aimet";
  const std::string what = op + ": " + where + " (AIMET QuantizeDequantize)";
  QGRAD_CHECK(q.is_initialized(), ValueError, what,
              ": the range was never set (run compute_encodings / calibrate)");
  const Shape& shape = q.shape();
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    QGRAD_CHECK(!p.axis, ValueError, what, ": encoding shape ", shape_str(shape),
                " is not per tensor or per channel along one axis");
    p.axis = static_cast<std::int64_t>(d);
  }
  const AimetEncodingTensors e = aimet_encoding_tensors(q);
  p.scale = e.scale.contiguous().to_vector<float>();
  for (double o : e.offset.contiguous().to_vector<double>()) {
    QGRAD_CHECK(o == std::nearbyint(o), ValueError, what, ": offset ", o, " is not an integer");
    p.zero_point.push_back(checked_int32(-o, op, where, "the AIMET offset's negation"));
  }
  p.quant_min = q.qmin();
  p.quant_max = q.qmax();
  check_scales(p, op, where);
  check_8bit(p, op, where);
  return p;
}

// PACT: y = rne(clip(x, 0, alpha) / d) * d with d = alpha / (2^k - 1) in float32 (the kernel's
// own arithmetic): an unsigned grid [0, 2^k - 1] of scale d and zero point 0. QuantizeLinear
// saturates negative inputs to 0 and the grid's clip stops at the level alpha rounds to, so the
// clip at alpha needs nothing more.
QdqParams pact_params(const PactActivationQuantizer& q, const std::string& op,
                      const std::string& where) {
  QdqParams p;
  p.family = "pact";
  const std::int64_t levels = (std::int64_t{1} << q.num_bits()) - 1;
  const float alpha = q.alpha().detach().to(DType::Float32).item<float>();
  p.scale = {alpha / static_cast<float>(levels)};
  p.zero_point = {0};
  p.quant_min = 0;
  p.quant_max = levels;
  check_scales(p, op, where + " (PactActivationQuantizer, alpha " + std::to_string(alpha) + ")");
  check_8bit(p, op, where + " (PactActivationQuantizer)");
  return p;
}

// DoReFa weights: w_q = 2 r / n - 1 with r in [0, n], n = 2^k - 1, are the odd integers
// 2 r - n in [-n, n] times 1 / n: a symmetric int8 grid for k <= 7. At 8 bits the 256 levels
// reach +-255 (every level sits half a step off zero at scale 2 / 255), which no int8 grid with an
// integer zero point holds.
QdqParams dorefa_params(const DoReFaWeightQuantizer& q, const std::string& op,
                        const std::string& where) {
  const int bits = q.num_bits();
  QGRAD_CHECK(bits <= 7, ValueError, op, ": ", where, " (DoReFaWeightQuantizer) has num_bits ",
              bits, ": DoReFa's ", bits, "-bit weights are the odd multiples of 1/",
              (std::int64_t{1} << bits) - 1,
              " up to +-1, whose integers 2r - n do not fit int8 (a half-step zero point); "
              "num_bits <= 7 maps to int8, or give this layer another family's weight quantizer");
  QdqParams p;
  p.family = "pact";
  const std::int64_t levels = (std::int64_t{1} << bits) - 1;
  p.scale = {1.0f / static_cast<float>(levels)};
  p.zero_point = {0};
  p.quant_min = -levels;
  p.quant_max = levels;
  check_8bit(p, op, where);
  return p;
}

}  // namespace

bool QdqParams::narrower_than_type() const {
  return is_uint8() ? quant_min != 0 || quant_max != 255 : quant_min != -128 || quant_max != 127;
}

QdqParams qdq_params(const nn::UnaryModule& quantizer, const std::string& op,
                     const std::string& where) {
  if (const auto* fq = dynamic_cast<const FakeQuantize*>(&quantizer))
    return ao_params(*fq, op, where);
  if (const auto* fq = dynamic_cast<const FusedMovingAvgObsFakeQuantize*>(&quantizer))
    return ao_params(*fq, op, where);
  if (const auto* tq = dynamic_cast<const TensorQuantizer*>(&quantizer))
    return nvidia_params(*tq, op, where);
  if (const auto* hq = dynamic_cast<const HorizonFakeQuantize*>(&quantizer))
    return horizon_params(*hq, op, where);
  if (const auto* aq = dynamic_cast<const AimetQuantizeDequantize*>(&quantizer))
    return aimet_params(*aq, op, where);
  if (const auto* pq = dynamic_cast<const PactActivationQuantizer*>(&quantizer))
    return pact_params(*pq, op, where);
  if (const auto* dq = dynamic_cast<const DoReFaWeightQuantizer*>(&quantizer))
    return dorefa_params(*dq, op, where);
  throw ValueError(
      op + ": " + where + " is a " + quantizer.name() + ", which " + op +
      " does not support yet (supported: torch.ao FakeQuantize "
      "and FusedMovingAvgObsFakeQuantize, pytorch_quantization TensorQuantizer, "
      "LSQ LearnableFakeQuantize, Horizon FakeQuantize, AIMET QuantizeDequantize, PACT "
      "PactActivationQuantizer, DoReFaWeightQuantizer up to 7 bits)");
}

QdqParams lsq_qdq_params(const nn::UnaryModule& quantizer, const std::string& op,
                         const std::string& where) {
  const auto* lfq = dynamic_cast<const LearnableFakeQuantize*>(&quantizer);
  QGRAD_CHECK(lfq != nullptr, ValueError, op, ": ", where, " is a ", quantizer.name(),
              ", not a LearnableFakeQuantize");
  QdqParams p;
  p.family = "lsq";
  if (!lfq->fake_quant_enabled()) {
    p.identity = true;
    return p;
  }
  p.scale = lfq->scale().detach().to(DType::Float32).to_vector<float>();
  p.quant_min = lfq->quant_min();
  p.quant_max = lfq->quant_max();
  if (lfq->is_per_channel()) p.axis = lfq->ch_axis();
  // The forward's zero point: symmetric schemes zero it, others round half to even in float32
  // and clamp (torch.ao's _fake_quantize_learnable_*).
  const bool symmetric = ao::is_symmetric(lfq->config().observer.options.qscheme_);
  for (double z : lfq->zero_point().to_vector<double>()) {
    const double r = symmetric ? 0.0 : std::nearbyint(static_cast<float>(z));
    QGRAD_CHECK(!std::isnan(r), ValueError, op, ": ", where, ": the zero point is NaN");
    p.zero_point.push_back(
        checked_int32(std::min<double>(std::max<double>(r, static_cast<double>(p.quant_min)),
                                       static_cast<double>(p.quant_max)),
                      op, where, "the zero point"));
  }
  QGRAD_CHECK(p.axis || p.scale.size() == 1, ValueError, op, ": ", where,
              ": a per-tensor quantizer with ", p.scale.size(), " scales");
  check_scales(p, op, where);
  check_8bit(p, op, where);
  return p;
}

std::vector<std::int32_t> quantize_weight(const nn::UnaryModule& quantizer, const QdqParams& p,
                                          const Tensor& weight, const std::string& op,
                                          const std::string& where) {
  const Tensor w = weight.detach().contiguous().to(DType::Float32);
  if (p.axis) {
    QGRAD_CHECK(*p.axis >= 0 && *p.axis < w.dim() &&
                    static_cast<std::size_t>(w.size(*p.axis)) == p.scale.size(),
                ValueError, op, ": ", where, ": ", p.scale.size(),
                " per-channel scales along axis ", *p.axis, " for a weight of shape ",
                shape_str(w.shape()));
  }
  std::vector<std::int32_t> q(static_cast<std::size_t>(w.numel()));
  if (const auto* tq = dynamic_cast<const TensorQuantizer*>(&quantizer)) {
    // pq's own kernel gives the integers directly.
    const nvidia::QuantDescriptor& d = tq->descriptor();
    const Tensor ints =
        nvidia::tensor_quant(w, tq->amax(), d.num_bits().bits(), d.is_unsigned(), d.narrow_range())
            .first;
    const std::vector<float> v = ints.to_vector<float>();
    for (std::size_t i = 0; i < v.size(); ++i) q[i] = weight_int32(v[i], i, op, where);
    return q;
  }
  if (const auto* aq = dynamic_cast<const AimetQuantizeDequantize*>(&quantizer)) {
    // AIMET's own quantize gives the integers (q + offset = q - zero point: the same q).
    const AimetEncodingTensors e = aimet_encoding_tensors(*aq);
    NoGradGuard no_grad;
    const std::vector<float> v = aimet::quantize(w, e.scale, e.offset, p.quant_min, p.quant_max)
                                     .contiguous()
                                     .to_vector<float>();
    for (std::size_t i = 0; i < v.size(); ++i) q[i] = weight_int32(v[i], i, op, where);
    return q;
  }
  if (const auto* dq = dynamic_cast<const DoReFaWeightQuantizer*>(&quantizer)) {
    // DoReFa's own quantization gives 2 r / n - 1; times n, rounded, the odd integer 2 r - n.
    NoGradGuard no_grad;
    const std::vector<float> v =
        learnable::dorefa_quantize_weight(w, dq->num_bits()).contiguous().to_vector<float>();
    const double n = static_cast<double>(p.quant_max);
    for (std::size_t i = 0; i < v.size(); ++i)
      q[i] = weight_int32(std::nearbyint(static_cast<double>(v[i]) * n), i, op, where);
    return q;
  }
  // torch.ao, LSQ and Horizon: the fake-quantized weight from the family's own kernel is
  // (q - zp) * scale exactly; dividing by the scale and rounding recovers q.
  Tensor fq;
  std::int64_t inner = 1, channels = 1;
  if (p.axis) {
    channels = w.size(*p.axis);
    for (std::int64_t d = *p.axis + 1; d < w.dim(); ++d) inner *= w.size(d);
  }
  if (const auto* hq = dynamic_cast<const HorizonFakeQuantize*>(&quantizer)) {
    NoGradGuard no_grad;
    fq = horizon::fake_quantize(w, hq->scale().detach(), hq->options().dtype_, p.axis,
                                hq->options().round_mode_, hq->options().saturate_);
  } else if (p.axis) {
    const Tensor scale = from_vector<float>(p.scale);
    const Tensor zp = from_vector<std::int32_t>(p.zero_point);
    fq = ao::fake_quantize_per_channel_affine(w, scale, zp, *p.axis, p.quant_min, p.quant_max);
  } else {
    fq = ao::fake_quantize_per_tensor_affine(w, p.scale[0], p.zero_point[0], p.quant_min,
                                             p.quant_max);
  }
  const std::vector<float> v = fq.contiguous().to_vector<float>();
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::size_t c =
        p.axis ? (i / static_cast<std::size_t>(inner)) % static_cast<std::size_t>(channels) : 0;
    const double k = std::nearbyint(static_cast<double>(v[i]) / p.scale[c]) + p.zero_point[c];
    q[i] = weight_int32(k, i, op, where);
  }
  return q;
}

QdqParams any_qdq_params(const nn::UnaryModule& quantizer, const std::string& op,
                         const std::string& where) {
  if (dynamic_cast<const LearnableFakeQuantize*>(&quantizer) != nullptr)
    return lsq_qdq_params(quantizer, op, where);
  return qdq_params(quantizer, op, where);
}

}  // namespace qgrad::quant
