// torch.ao FakeQuantize module: observe, recompute qparams, fake-quantize.
#include "quant/modules/fake_quantize.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "quant/modules/lazy_buffer.h"
#include "quant/modules/quant_repr.h"
#include "quant/modules/quantizer_device.h"
#include "quant/torch_ao/fake_quantize.h"

namespace qgrad::quant {

namespace {
const char* kName = "FakeQuantize";
}  // namespace

ObserverConfig observer_config(ObserverKind kind, ao::QuantDType dtype, ao::QScheme qscheme,
                               std::int64_t qmin, std::int64_t qmax, bool reduce_range) {
  ObserverConfig c;
  c.kind = kind;
  c.options = ao::ObserverOptions()
                  .dtype(dtype)
                  .qscheme(qscheme)
                  .quant_range(qmin, qmax)
                  .reduce_range(reduce_range);
  return c;
}

FakeQuantizeConfig default_fake_quant_config() {
  return {observer_config(ObserverKind::MovingAverageMinMax, ao::QuantDType::QUInt8,
                          ao::QScheme::PerTensorAffine, 0, 255, true),
          std::nullopt};
}

FakeQuantizeConfig default_weight_fake_quant_config() {
  return {observer_config(ObserverKind::MovingAverageMinMax, ao::QuantDType::QInt8,
                          ao::QScheme::PerTensorSymmetric, -128, 127, false),
          std::nullopt};
}

FakeQuantizeConfig default_per_channel_weight_fake_quant_config() {
  return {observer_config(ObserverKind::MovingAveragePerChannelMinMax, ao::QuantDType::QInt8,
                          ao::QScheme::PerChannelSymmetric, -128, 127, false),
          std::nullopt};
}

bool observer_has_data(const Observer& observer) {
  const Tensor& mn = observer.min_val();
  if (mn.numel() == 0) return false;
  const double v = mn.to_vector<double>()[0];
  return !(std::isinf(v) && v > 0);
}

FakeQuantize::FakeQuantize(const FakeQuantizeConfig& config)
    : nn::UnaryModule(kName), config_(config) {
  QGRAD_CHECK(config.observer.options.qscheme_ != ao::QScheme::PerChannelAffineFloatQParams,
              ValueError, kName,
              ": per_channel_affine_float_qparams (float zero points) is not supported");
  const bool per_channel = quant::is_per_channel(config.observer.kind);
  QGRAD_CHECK(per_channel == ao::is_per_channel(config.observer.options.qscheme_), ValueError,
              kName, ": observer ", observer_kind_name(config.observer.kind),
              " does not match qscheme ", ao::qscheme_name(config.observer.options.qscheme_));
  QGRAD_CHECK(!config.channel_len || (per_channel && *config.channel_len >= 1), ValueError, kName,
              ": channel_len needs a per-channel observer and must be >= 1");
  fake_quant_enabled_ =
      register_buffer("fake_quant_enabled", ones({1}, TensorOptions().dtype(kUInt8)));
  observer_enabled_ = register_buffer("observer_enabled", ones({1}, TensorOptions().dtype(kUInt8)));
  const std::int64_t n = per_channel ? config.channel_len.value_or(0) : 1;
  scale_ = register_buffer("scale", ones({n}, TensorOptions().dtype(kFloat32)));
  zero_point_ = register_buffer("zero_point", zeros({n}, TensorOptions().dtype(kInt32)));
  observer_ =
      register_module("activation_post_process", std::make_shared<Observer>(config.observer));
  fake_quant_on_ = HostFlag(fake_quant_enabled_);
  observer_on_ = HostFlag(observer_enabled_);
}

FakeQuantize::Factory FakeQuantize::with_args(const FakeQuantizeConfig& config) {
  return [config] { return std::make_shared<FakeQuantize>(config); };
}

Tensor FakeQuantize::forward(const Tensor& x) {
  if (!runs_on(x.device())) require_cpu_quantizer_input(name(), x);
  if (observer_enabled()) {
    observer_->forward(x.detach());
    NoGradGuard no_grad;
    const ao::QParams qp = observer_->calculate_qparams();
    if (qp.scale.shape() != scale_.shape()) {
      rebind_buffer(scale_, qp.scale.to(scale_.dtype()));
      rebind_buffer(zero_point_, qp.zero_point.to(zero_point_.dtype()));
    } else {
      Tensor s = scale_, z = zero_point_;
      s.copy_(qp.scale);
      z.copy_(qp.zero_point);
    }
  }
  if (!fake_quant_enabled()) return x;
  if (is_per_channel())
    return ao::fake_quantize_per_channel_affine(x, scale_, zero_point_, ch_axis(), quant_min(),
                                                quant_max());
  return ao::fake_quantize_per_tensor_affine(x, scale_, zero_point_, quant_min(), quant_max());
}

namespace {

// The qparams as they will be stored (float32 scale, int32 zero point), after the checks that
// set_qparams promises: one value per tensor, 1-D [C] per channel, scale finite and > 0, zero
// point an integer in [qmin, qmax].
Tensor checked_scale(const char* op, const Tensor& scale, bool per_channel) {
  QGRAD_CHECK(scale.defined(), ValueError, op, ": scale is undefined");
  QGRAD_CHECK(is_floating(scale.dtype()), DTypeError, op, ": scale must be floating, got ",
              dtype_name(scale.dtype()));
  if (per_channel) {
    QGRAD_CHECK(scale.dim() == 1 && scale.numel() >= 1, ShapeError, op,
                ": a per-channel scale must be 1-D with at least one element, got shape ",
                scale.shape());
  } else {
    QGRAD_CHECK(scale.numel() == 1, ShapeError, op,
                ": a per-tensor scale must have one element, got shape ", scale.shape());
  }
  NoGradGuard no_grad;
  const Tensor s = scale.detach().to(kFloat32).reshape({scale.numel()}).contiguous();
  for (float v : s.to_vector<float>())
    QGRAD_CHECK(std::isfinite(v) && v > 0, ValueError, op,
                ": scale must be finite and > 0 (as float32), got ", v);
  return s;
}

Tensor checked_zero_point(const char* op, const Tensor& zero_point, bool per_channel,
                          std::int64_t qmin, std::int64_t qmax) {
  QGRAD_CHECK(zero_point.defined(), ValueError, op, ": zero_point is undefined");
  if (per_channel) {
    QGRAD_CHECK(zero_point.dim() == 1 && zero_point.numel() >= 1, ShapeError, op,
                ": a per-channel zero_point must be 1-D with at least one element, got shape ",
                zero_point.shape());
  } else {
    QGRAD_CHECK(zero_point.numel() == 1, ShapeError, op,
                ": a per-tensor zero_point must have one element, got shape ", zero_point.shape());
  }
  NoGradGuard no_grad;
  for (double v : zero_point.to_vector<double>())
    QGRAD_CHECK(
        v == std::nearbyint(v) && v >= static_cast<double>(qmin) && v <= static_cast<double>(qmax),
        ValueError, op, ": zero_point must be an integer in [quant_min, quant_max] = [", qmin, ", ",
        qmax, "], got ", v);
  return zero_point.detach().to(kInt32).reshape({zero_point.numel()}).contiguous();
}

// Writes `value` into a registered buffer: in place when the shape is unchanged, else rebinding
// it (a per-channel buffer taking a new channel count).
void store(const Tensor& buffer, const Tensor& value) {
  NoGradGuard no_grad;
  if (value.shape() == buffer.shape()) {
    Tensor b = buffer;
    b.copy_(value);
  } else {
    rebind_buffer(buffer, value);
  }
}

}  // namespace

void FakeQuantize::set_qparams(const Tensor& scale, const Tensor& zero_point) {
  const char* op = "FakeQuantize::set_qparams";
  const Tensor s = checked_scale(op, scale, is_per_channel());
  const Tensor z = checked_zero_point(op, zero_point, is_per_channel(), quant_min(), quant_max());
  QGRAD_CHECK(s.numel() == z.numel(), ShapeError, op, ": scale has ", s.numel(),
              " elements but zero_point has ", z.numel());
  store(scale_, s);
  store(zero_point_, z);
}

void FakeQuantize::set_qparams(double scale, std::int64_t zero_point) {
  QGRAD_CHECK(!is_per_channel(), ValueError,
              "FakeQuantize::set_qparams: a per-channel FakeQuantize needs [C] tensors, not a "
              "scalar scale and zero point");
  set_qparams(full({1}, scale, TensorOptions().dtype(kFloat64)),
              full({1}, static_cast<double>(zero_point), TensorOptions().dtype(kInt64)));
}

void FakeQuantize::set_scale(const Tensor& scale) {
  const char* op = "FakeQuantize::set_scale";
  const Tensor s = checked_scale(op, scale, is_per_channel());
  QGRAD_CHECK(s.numel() == zero_point_.numel(), ShapeError, op, ": scale has ", s.numel(),
              " elements but the zero_point buffer has ", zero_point_.numel(),
              " (use set_qparams to change both)");
  store(scale_, s);
}

void FakeQuantize::set_zero_point(const Tensor& zero_point) {
  const char* op = "FakeQuantize::set_zero_point";
  const Tensor z = checked_zero_point(op, zero_point, is_per_channel(), quant_min(), quant_max());
  QGRAD_CHECK(z.numel() == scale_.numel(), ShapeError, op, ": zero_point has ", z.numel(),
              " elements but the scale buffer has ", scale_.numel(),
              " (use set_qparams to change both)");
  store(zero_point_, z);
}

void FakeQuantize::enable_fake_quant(bool on) {
  fake_quant_on_.set(on);
}
void FakeQuantize::enable_observer(bool on) {
  observer_on_.set(on);
}
bool FakeQuantize::fake_quant_enabled() const {
  return fake_quant_on_.get();
}
bool FakeQuantize::observer_enabled() const {
  return observer_on_.get();
}
bool FakeQuantize::runs_on(Device device) const {
  return device.is_cpu() || (device.is_cuda() && observer_->runs_on(device));
}

std::string FakeQuantize::extra_repr() const {
  const ao::ObserverOptions& o = config_.observer.options;
  return "fake_quant_enabled=" + values_repr(fake_quant_enabled_) +
         ", observer_enabled=" + values_repr(observer_enabled_) +
         ", quant_min=" + std::to_string(quant_min()) +
         ", quant_max=" + std::to_string(quant_max()) +
         ", dtype=" + ao::quant_dtype_name(o.dtype_) + ", qscheme=" + ao::qscheme_name(o.qscheme_) +
         ", ch_axis=" + std::to_string(ch_axis()) + ", scale=" + values_repr(scale_) +
         ", zero_point=" + values_repr(zero_point_);
}

void FakeQuantize::start_calibration() {
  enable_observer(true);
  enable_fake_quant(false);
}

void FakeQuantize::finish_calibration(const CalibrationOptions& options) {
  QGRAD_CHECK(!options.strict || observer_has_data(*observer_), ValueError, kName,
              "::finish_calibration: the observer saw no data during calibration");
  enable_fake_quant(true);
}

}  // namespace qgrad::quant
