// Horizon FakeQuantize state: observer, scale buffers, switches and the QAT / calibration /
// validation states.
#include "quant/horizon/horizon_fake_quantizer.h"

#include <cmath>

#include "core/factory.h"
#include "quant/horizon/horizon_fake_quantize.h"
#include "quant/observer/minmax_observer.h"
#include "quant/observer/per_channel_minmax_observer.h"

namespace qgrad::horizon {

namespace {
const char* kName = "horizon.FakeQuantizer";
}

FakeQuantizer::FakeQuantizer(const FakeQuantizeOptions& options) : options_(options) {
  QGRAD_CHECK(options.channel_len_ >= 1, ValueError, kName, ": channel_len must be >= 1, got ",
              options.channel_len_);
  QGRAD_CHECK(options.ch_axis_ || options.channel_len_ == 1, ValueError, kName, ": channel_len ",
              options.channel_len_, " needs a ch_axis (per-channel quantization)");
  // The observer only gathers statistics; the scale follows Horizon's rule (symmetric_scale).
  if (options.ch_axis_) {
    observer_ = std::make_unique<ao::MovingAveragePerChannelMinMaxObserver>(
        options.averaging_constant_, *options.ch_axis_,
        ao::ObserverOptions()
            .dtype(ao::QuantDType::QInt8)
            .qscheme(ao::QScheme::PerChannelSymmetric));
  } else {
    observer_ = std::make_unique<ao::MovingAverageMinMaxObserver>(
        options.averaging_constant_, ao::ObserverOptions()
                                         .dtype(ao::QuantDType::QInt8)
                                         .qscheme(ao::QScheme::PerTensorSymmetric));
  }
  const std::int64_t n = options.channel_len_;
  scale_ = ones({n}, TensorOptions().dtype(kFloat32));
  zero_point_ = zeros({n}, TensorOptions().dtype(kInt64));
  fake_quant_enabled_ = ones({1}, TensorOptions().dtype(kUInt8));
  observer_enabled_ = ones({1}, TensorOptions().dtype(kUInt8));
}

Tensor FakeQuantizer::calculate_scale() const {
  Tensor mn, mx;
  if (auto* pc = dynamic_cast<ao::PerChannelMinMaxObserver*>(observer_.get())) {
    mn = pc->min_val();
    mx = pc->max_val();
  } else {
    auto* pt = dynamic_cast<ao::MinMaxObserver*>(observer_.get());
    mn = pt->min_val().reshape({1});
    mx = pt->max_val().reshape({1});
  }
  const std::vector<float> lo = mn.to_vector<float>(), hi = mx.to_vector<float>();
  if (lo.empty() || (std::isinf(lo[0]) && lo[0] > 0)) return scale_.clone();
  QGRAD_CHECK(static_cast<std::int64_t>(lo.size()) == options_.channel_len_, ShapeError, kName,
              ": observed ", lo.size(), " channels but channel_len is ", options_.channel_len_);
  std::vector<float> s(lo.size());
  for (std::size_t i = 0; i < lo.size(); ++i) s[i] = symmetric_scale(lo[i], hi[i], options_.dtype_);
  return from_vector<float>(s, {static_cast<std::int64_t>(s.size())});
}

Tensor FakeQuantizer::forward(const Tensor& x) {
  if (observer_enabled()) {
    observer_->forward(x);
    scale_.copy_(calculate_scale());
  }
  if (!fake_quant_enabled()) return x;
  return fake_quantize(x, options_.ch_axis_ ? scale_ : scale_.reshape({}), options_.dtype_,
                       options_.ch_axis_, options_.round_mode_, options_.saturate_);
}

void FakeQuantizer::set_qparams(const Tensor& scale, const Tensor& zero_point) {
  QGRAD_CHECK(scale.defined() && is_floating(scale.dtype()), DTypeError, kName,
              ".set_qparams: scale must be a floating tensor");
  QGRAD_CHECK(scale.numel() == options_.channel_len_, ShapeError, kName,
              ".set_qparams: scale must have ", options_.channel_len_, " elements, got shape ",
              scale.shape());
  for (double v : scale.to_vector<double>())
    QGRAD_CHECK(std::isfinite(v) && static_cast<float>(v) > 0, ValueError, kName,
                ".set_qparams: scale values must be finite and > 0, got ", v);
  if (zero_point.defined()) {
    QGRAD_CHECK(zero_point.numel() == options_.channel_len_, ShapeError, kName,
                ".set_qparams: zero_point must have ", options_.channel_len_,
                " elements, got shape ", zero_point.shape());
    for (double v : zero_point.to_vector<double>())
      QGRAD_CHECK(v == 0, ValueError, kName,
                  ".set_qparams: Horizon quantization is symmetric, zero_point must be 0, got ", v);
  }
  scale_.copy_(scale.reshape({options_.channel_len_}));
}

void FakeQuantizer::set_qparams(const std::vector<double>& scale) {
  set_qparams(from_vector<double>(scale, {static_cast<std::int64_t>(scale.size())}));
}

void FakeQuantizer::set_state(State s) {
  enable_observer(s != State::Validation);
  enable_fake_quant(s != State::Calibration);
}

void FakeQuantizer::enable_fake_quant(bool on) {
  fake_quant_enabled_.fill_(on ? 1 : 0);
}
void FakeQuantizer::enable_observer(bool on) {
  observer_enabled_.fill_(on ? 1 : 0);
}
bool FakeQuantizer::fake_quant_enabled() const {
  return fake_quant_enabled_.item<int>() != 0;
}
bool FakeQuantizer::observer_enabled() const {
  return observer_enabled_.item<int>() != 0;
}

FakeQuantizer::Factory FakeQuantizer::with_args(const FakeQuantizeOptions& options) {
  return [options] { return std::make_unique<FakeQuantizer>(options); };
}

}  // namespace qgrad::horizon
