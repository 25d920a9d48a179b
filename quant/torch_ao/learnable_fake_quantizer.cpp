// torch.ao _LearnableFakeQuantize state.
#include "quant/torch_ao/learnable_fake_quantizer.h"

#include <algorithm>
#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "quant/observer/per_channel_minmax_observer.h"
#include "quant/torch_ao/learnable_fake_quantize.h"

namespace qgrad::ao {

namespace {
const char* kName = "ao.LearnableFakeQuantizer";
}

LearnableFakeQuantizer::LearnableFakeQuantizer(
    std::unique_ptr<UniformQuantizationObserver> observer,
    const LearnableFakeQuantizeOptions& options)
    : observer_(std::move(observer)), options_(options) {
  QGRAD_CHECK(observer_ != nullptr, ValueError, kName, ": observer must not be null");
  QGRAD_CHECK(observer_->quant_min() < observer_->quant_max(), ValueError, kName,
              ": quant_min must be < quant_max");
  const bool per_channel = is_per_channel(observer_->options().qscheme_);
  QGRAD_CHECK(observer_->options().qscheme_ != QScheme::PerChannelAffineFloatQParams, ValueError,
              kName, ": per_channel_affine_float_qparams is not supported");
  QGRAD_CHECK(per_channel == (options.channel_len_ > 0), ValueError, kName,
              ": a per-channel observer needs channel_len > 0 and a per-tensor one channel_len -1, "
              "got ",
              options.channel_len_);
  if (auto* pc = dynamic_cast<PerChannelMinMaxObserver*>(observer_.get())) ch_axis_ = pc->ch_axis();
  const std::int64_t n = per_channel ? options.channel_len_ : 1;
  scale_ = full({n}, options.scale_).set_requires_grad(false);
  zero_point_ = full({n}, options.zero_point_).set_requires_grad(false);
  fake_quant_enabled_ = ones({1}, TensorOptions().dtype(kUInt8));
  static_enabled_ = ones({1}, TensorOptions().dtype(kUInt8));
  learning_enabled_ = zeros({1}, TensorOptions().dtype(kUInt8));
}

Tensor LearnableFakeQuantizer::forward(const Tensor& x) {
  const float eps = static_cast<float>(observer_->options().eps_);
  if (static_enabled_.item<int>() != 0) {
    NoGradGuard no_grad;
    observer_->forward(x);
    const QParams qp = observer_->calculate_qparams();
    scale_.copy_(qp.scale);
    zero_point_.copy_(qp.zero_point.to(kFloat32));
  } else {
    NoGradGuard no_grad;
    std::vector<float> s = scale_.to_vector<float>();
    for (float& v : s) v = std::max(v, eps);
    scale_.copy_(from_vector<float>(s, {static_cast<std::int64_t>(s.size())}));
  }
  if (fake_quant_enabled_.item<int>() == 0) return x;
  if (is_symmetric(observer_->options().qscheme_)) {
    NoGradGuard no_grad;
    zero_point_.zero_();
  }
  const double g = options_.use_grad_scaling_ ? learnable_grad_factor(x.numel(), quant_max()) : 1.0;
  if (ch_axis_ >= 0 || is_per_channel(observer_->options().qscheme_))
    return fake_quantize_learnable_per_channel_affine(x, scale_, zero_point_, ch_axis_, quant_min(),
                                                      quant_max(), g);
  return fake_quantize_learnable_per_tensor_affine(x, scale_, zero_point_, quant_min(), quant_max(),
                                                   g);
}

QParams LearnableFakeQuantizer::calculate_qparams() {
  NoGradGuard no_grad;
  const float eps = static_cast<float>(observer_->options().eps_);
  std::vector<float> s = scale_.to_vector<float>();
  for (float& v : s) v = std::max(v, eps);
  const auto n = static_cast<std::int64_t>(s.size());
  scale_.copy_(from_vector<float>(s, {n}));
  std::vector<std::int64_t> z;
  for (float v : zero_point_.to_vector<float>())
    z.push_back(static_cast<std::int64_t>(
        std::min<float>(std::max<float>(std::nearbyint(v), static_cast<float>(quant_min())),
                        static_cast<float>(quant_max()))));
  return {scale_.detach().clone(), from_vector<std::int64_t>(z, {n})};
}

void LearnableFakeQuantizer::enable_param_learning() {
  toggle_qparam_learning(true);
  toggle_fake_quant(true);
  toggle_observer_update(false);
}
void LearnableFakeQuantizer::enable_static_estimate() {
  toggle_qparam_learning(false);
  toggle_fake_quant(true);
  toggle_observer_update(true);
}
void LearnableFakeQuantizer::enable_static_observation() {
  toggle_qparam_learning(false);
  toggle_fake_quant(false);
  toggle_observer_update(true);
}
void LearnableFakeQuantizer::toggle_qparam_learning(bool on) {
  learning_enabled_.fill_(on ? 1 : 0);
  scale_.set_requires_grad(on);
  zero_point_.set_requires_grad(on);
}
void LearnableFakeQuantizer::toggle_fake_quant(bool on) {
  fake_quant_enabled_.fill_(on ? 1 : 0);
}
void LearnableFakeQuantizer::toggle_observer_update(bool on) {
  static_enabled_.fill_(on ? 1 : 0);
}

}  // namespace qgrad::ao
