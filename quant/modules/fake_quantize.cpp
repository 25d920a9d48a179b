// torch.ao FakeQuantize module: observe, recompute qparams, fake-quantize.
#include "quant/modules/fake_quantize.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "quant/modules/lazy_buffer.h"
#include "quant/modules/quant_repr.h"
#include "quant/torch_ao/fake_quantize.h"

namespace qgrad::quant {

namespace {
const char* kName = "FakeQuantize";

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
}  // namespace

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
}

FakeQuantize::Factory FakeQuantize::with_args(const FakeQuantizeConfig& config) {
  return [config] { return std::make_shared<FakeQuantize>(config); };
}

Tensor FakeQuantize::forward(const Tensor& x) {
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

void FakeQuantize::enable_fake_quant(bool on) {
  fake_quant_enabled_.fill_(on ? 1 : 0);
}
void FakeQuantize::enable_observer(bool on) {
  observer_enabled_.fill_(on ? 1 : 0);
}
bool FakeQuantize::fake_quant_enabled() const {
  return fake_quant_enabled_.item<int>() != 0;
}
bool FakeQuantize::observer_enabled() const {
  return observer_enabled_.item<int>() != 0;
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
