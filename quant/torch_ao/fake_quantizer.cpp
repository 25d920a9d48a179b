// torch.ao FakeQuantize state: observe, recompute qparams, fake-quantize.
#include "quant/torch_ao/fake_quantizer.h"

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "quant/observer/minmax_observer.h"
#include "quant/observer/per_channel_minmax_observer.h"
#include "quant/torch_ao/fake_quantize.h"

namespace qgrad::ao {

namespace {
const char* kName = "ao.FakeQuantizer";
}

FakeQuantizer::FakeQuantizer(std::unique_ptr<UniformQuantizationObserver> observer)
    : observer_(std::move(observer)) {
  QGRAD_CHECK(observer_ != nullptr, ValueError, kName, ": observer must not be null");
  QGRAD_CHECK(observer_->options().qscheme_ != QScheme::PerChannelAffineFloatQParams, ValueError,
              kName, ": per_channel_affine_float_qparams (float zero points) is not supported");
  scale_ = full({1}, 1.0, TensorOptions().dtype(kFloat32));
  zero_point_ = zeros({1}, TensorOptions().dtype(kInt64));
  fake_quant_enabled_ = ones({1}, TensorOptions().dtype(kUInt8));
  observer_enabled_ = ones({1}, TensorOptions().dtype(kUInt8));
}

std::unique_ptr<FakeQuantizer> FakeQuantizer::make_default() {
  return std::make_unique<FakeQuantizer>(
      std::make_unique<MovingAverageMinMaxObserver>(0.01, ObserverOptions().quant_range(0, 255)));
}

bool FakeQuantizer::is_per_channel() const {
  return ao::is_per_channel(observer_->options().qscheme_);
}

std::int64_t FakeQuantizer::ch_axis() const {
  if (auto* pc = dynamic_cast<const PerChannelMinMaxObserver*>(observer_.get()))
    return pc->ch_axis();
  return -1;
}

Tensor FakeQuantizer::forward(const Tensor& x) {
  if (observer_enabled()) {
    NoGradGuard no_grad;
    observer_->forward(x);
    const QParams qp = observer_->calculate_qparams();
    if (qp.scale.shape() == scale_.shape()) {
      scale_.copy_(qp.scale);
      zero_point_.copy_(qp.zero_point);
    } else {
      scale_ = qp.scale.clone();
      zero_point_ = qp.zero_point.clone();
    }
  }
  if (!fake_quant_enabled()) return x;
  if (is_per_channel())
    return fake_quantize_per_channel_affine(x, scale_, zero_point_, ch_axis(), quant_min(),
                                            quant_max());
  return fake_quantize_per_tensor_affine(x, scale_, zero_point_, quant_min(), quant_max());
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

}  // namespace qgrad::ao
