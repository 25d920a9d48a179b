// Horizon FakeQuantize module: moving-average observer, symmetric scale, states.
#include "quant/modules/horizon_fake_quantize.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/repr_format.h"
#include "quant/horizon/horizon_fake_quantize.h"
#include "quant/horizon/horizon_fake_quantize_kernels.h"
#include "quant/modules/fake_quantize.h"
#include "quant/modules/quant_repr.h"
#include "quant/modules/quantizer_device.h"

namespace qgrad::quant {

namespace {
const char* kName = "HorizonFakeQuantize";

ObserverConfig horizon_observer(const horizon::FakeQuantizeOptions& o) {
  ObserverConfig c;
  c.averaging_constant = o.averaging_constant_;
  if (o.ch_axis_) {
    c.kind = ObserverKind::MovingAveragePerChannelMinMax;
    c.ch_axis = *o.ch_axis_;
    c.options = ao::ObserverOptions()
                    .dtype(ao::QuantDType::QInt8)
                    .qscheme(ao::QScheme::PerChannelSymmetric);
  } else {
    c.kind = ObserverKind::MovingAverageMinMax;
    c.options =
        ao::ObserverOptions().dtype(ao::QuantDType::QInt8).qscheme(ao::QScheme::PerTensorSymmetric);
  }
  return c;
}
}  // namespace

const char* horizon_state_name(HorizonFakeQuantize::State s) {
  switch (s) {
    case HorizonFakeQuantize::State::QAT:
      return "QAT";
    case HorizonFakeQuantize::State::Calibration:
      return "CALIBRATION";
    case HorizonFakeQuantize::State::Validation:
      return "VALIDATION";
  }
  return "?";
}

HorizonFakeQuantize::HorizonFakeQuantize(const horizon::FakeQuantizeOptions& options)
    : nn::UnaryModule(kName), options_(options) {
  QGRAD_CHECK(options.channel_len_ >= 1, ValueError, kName, ": channel_len must be >= 1, got ",
              options.channel_len_);
  QGRAD_CHECK(options.ch_axis_ || options.channel_len_ == 1, ValueError, kName, ": channel_len ",
              options.channel_len_, " needs a ch_axis (per-channel quantization)");
  const std::int64_t n = options.channel_len_;
  fake_quant_enabled_ =
      register_buffer("fake_quant_enabled", ones({1}, TensorOptions().dtype(kUInt8)));
  observer_enabled_ = register_buffer("observer_enabled", ones({1}, TensorOptions().dtype(kUInt8)));
  scale_ = register_buffer("scale", ones({n}, TensorOptions().dtype(kFloat32)));
  zero_point_ = register_buffer("zero_point", zeros({n}, TensorOptions().dtype(kInt64)));
  observer_ = register_module("activation_post_process",
                              std::make_shared<Observer>(horizon_observer(options)));
  fake_quant_on_ = HostFlag(fake_quant_enabled_);
  observer_on_ = HostFlag(observer_enabled_);
}

HorizonFakeQuantize::Factory HorizonFakeQuantize::with_args(
    const horizon::FakeQuantizeOptions& options) {
  return [options] { return std::make_shared<HorizonFakeQuantize>(options); };
}

Tensor HorizonFakeQuantize::calculate_scale() const {
  const Tensor& mn = observer_->min_val();
  if (!mn.device().is_cpu()) {
    // On the device: the previous scale while the statistics are unobserved, decided there.
    static const KernelTable<horizon::HorizonScaleFromStatisticsKernel>& table =
        kernel_table(horizon::kHorizonScaleFromStatisticsKernels);
    if (mn.numel() == 0) return scale_.detach().clone();  // per channel, no batch yet
    const std::int64_t n = options_.channel_len_;
    QGRAD_CHECK(mn.numel() == n, ShapeError, kName, ": observed ", mn.numel(),
                " channels but channel_len is ", n);
    Tensor s = empty({n}, TensorOptions().dtype(kFloat32).device(mn.device()));
    table(kName, mn)(kName, mn.reshape({n}), observer_->max_val().reshape({n}),
                     scale_.detach().reshape({n}), horizon::half_range(options_.dtype_), s);
    return s;
  }
  if (!observer_has_data(*observer_)) return scale_.detach().clone();
  const std::vector<float> lo = observer_->min_val().to_vector<float>();
  const std::vector<float> hi = observer_->max_val().to_vector<float>();
  QGRAD_CHECK(static_cast<std::int64_t>(lo.size()) == options_.channel_len_, ShapeError, kName,
              ": observed ", lo.size(), " channels but channel_len is ", options_.channel_len_);
  std::vector<float> s(lo.size());
  for (std::size_t i = 0; i < lo.size(); ++i)
    s[i] = horizon::symmetric_scale(lo[i], hi[i], options_.dtype_);
  return from_vector<float>(s, {static_cast<std::int64_t>(s.size())});
}

Tensor HorizonFakeQuantize::forward(const Tensor& x) {
  if (!runs_on(x.device())) require_cpu_quantizer_input(name(), x);
  if (observer_enabled()) {
    observer_->forward(x.detach());
    NoGradGuard no_grad;
    Tensor s = scale_;
    s.copy_(calculate_scale());
  }
  if (!fake_quant_enabled()) return x;
  return horizon::fake_quantize(x, options_.ch_axis_ ? scale_ : scale_.reshape({}), options_.dtype_,
                                options_.ch_axis_, options_.round_mode_, options_.saturate_);
}

void HorizonFakeQuantize::set_qparams(const Tensor& scale, const Tensor& zero_point) {
  const char* op = "HorizonFakeQuantize::set_qparams";
  QGRAD_CHECK(scale.defined() && is_floating(scale.dtype()), DTypeError, op,
              ": scale must be a floating tensor");
  QGRAD_CHECK(scale.numel() == options_.channel_len_, ShapeError, op, ": scale must have ",
              options_.channel_len_, " elements, got shape ", scale.shape());
  for (double v : scale.to_vector<double>())
    QGRAD_CHECK(std::isfinite(v) && static_cast<float>(v) > 0, ValueError, op,
                ": scale values must be finite and > 0, got ", v);
  if (zero_point.defined()) {
    QGRAD_CHECK(zero_point.numel() == options_.channel_len_, ShapeError, op,
                ": zero_point must have ", options_.channel_len_, " elements, got shape ",
                zero_point.shape());
    for (double v : zero_point.to_vector<double>())
      QGRAD_CHECK(v == 0, ValueError, op,
                  ": Horizon quantization is symmetric, zero_point must be 0, got ", v);
  }
  NoGradGuard no_grad;
  Tensor s = scale_;
  s.copy_(scale.detach().reshape({options_.channel_len_}));
}

void HorizonFakeQuantize::set_qparams(const std::vector<double>& scale) {
  set_qparams(from_vector<double>(scale, {static_cast<std::int64_t>(scale.size())}));
}

void HorizonFakeQuantize::set_state(State s) {
  enable_observer(s != State::Validation);
  enable_fake_quant(s != State::Calibration);
}

HorizonFakeQuantize::State HorizonFakeQuantize::state() const {
  if (!fake_quant_enabled()) return State::Calibration;
  return observer_enabled() ? State::QAT : State::Validation;
}

void HorizonFakeQuantize::enable_fake_quant(bool on) {
  fake_quant_on_.set(on);
}
void HorizonFakeQuantize::enable_observer(bool on) {
  observer_on_.set(on);
}
bool HorizonFakeQuantize::fake_quant_enabled() const {
  return fake_quant_on_.get();
}
bool HorizonFakeQuantize::observer_enabled() const {
  return observer_on_.get();
}
bool HorizonFakeQuantize::runs_on(Device device) const {
  return device.is_cpu() || (device.is_cuda() && observer_->runs_on(device));
}

std::string HorizonFakeQuantize::extra_repr() const {
  const horizon::QRange r = quant_range();
  return std::string("dtype=") + horizon::qdtype_name(options_.dtype_) +
         ", quant_min=" + std::to_string(r.quant_min) +
         ", quant_max=" + std::to_string(r.quant_max) +
         ", ch_axis=" + std::to_string(options_.ch_axis_.value_or(-1)) +
         ", saturate=" + nn::py_bool(options_.saturate_) + ", round_mode=" +
         (options_.round_mode_ == horizon::RoundMode::HalfToEven ? "half_to_even" : "half_up") +
         ", averaging_constant=" + nn::py_float(options_.averaging_constant_) +
         ", state=" + horizon_state_name(state()) + ", scale=" + values_repr(scale_) +
         ", zero_point=" + values_repr(zero_point_);
}

void HorizonFakeQuantize::start_calibration() {
  set_state(State::Calibration);
}

void HorizonFakeQuantize::finish_calibration(const CalibrationOptions& options) {
  QGRAD_CHECK(!options.strict || observer_has_data(*observer_), ValueError, kName,
              "::finish_calibration: the observer saw no data during calibration");
  set_state(State::QAT);
}

}  // namespace qgrad::quant
