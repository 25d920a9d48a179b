// torch.ao FixedQParamsFakeQuantize / FixedQParamsObserver modules: validation, buffers shared
// between the module and its observer, and per-tensor fake quantization with the fixed values.
#include "quant/modules/fixed_qparams_fake_quantize.h"

#include <cmath>

#include "core/factory.h"
#include "quant/modules/quant_repr.h"
#include "quant/modules/quantizer_device.h"
#include "quant/torch_ao/fake_quantize.h"

namespace qgrad::quant {

namespace {

void check_config(const char* op, const FixedQParamsConfig& c) {
  QGRAD_CHECK(!ao::is_per_channel(c.qscheme), ValueError, op,
              ": only per tensor quantization is supported, got qscheme ",
              ao::qscheme_name(c.qscheme));
  QGRAD_CHECK(c.quant_min < c.quant_max, ValueError, op, ": quant_min (", c.quant_min,
              ") must be less than quant_max (", c.quant_max, ")");
  QGRAD_CHECK(std::isfinite(c.scale) && c.scale > 0, ValueError, op,
              ": scale must be finite and > 0, got ", c.scale);
  // The buffer holds float32, as PyTorch's torch.tensor([scale], dtype=torch.float).
  QGRAD_CHECK(static_cast<float>(c.scale) > 0 && std::isfinite(static_cast<float>(c.scale)),
              ValueError, op, ": scale ", c.scale, " is not a positive float32");
  QGRAD_CHECK(c.zero_point >= c.quant_min && c.zero_point <= c.quant_max, ValueError, op,
              ": zero_point ", c.zero_point, " is outside [quant_min, quant_max] = [", c.quant_min,
              ", ", c.quant_max, "]");
}

}  // namespace

FixedQParamsConfig fixed_qparams_range_neg1to1_config() {
  FixedQParamsConfig c;
  c.scale = 2.0 / 256.0;
  c.zero_point = 128;
  return c;
}

FixedQParamsConfig fixed_qparams_range_0to1_config() {
  FixedQParamsConfig c;
  c.scale = 1.0 / 256.0;
  c.zero_point = 0;
  return c;
}

FixedQParamsObserver::FixedQParamsObserver(const FixedQParamsConfig& config)
    : nn::UnaryModule("FixedQParamsObserver"), config_(config) {
  check_config("FixedQParamsObserver", config);
  scale_ = register_buffer("scale", full({1}, config.scale, TensorOptions().dtype(kFloat32)));
  zero_point_ = register_buffer("zero_point", full({1}, static_cast<double>(config.zero_point),
                                                   TensorOptions().dtype(kInt32)));
}

FixedQParamsFakeQuantize::FixedQParamsFakeQuantize(const FixedQParamsConfig& config)
    : nn::UnaryModule("FixedQParamsFakeQuantize"), config_(config) {
  check_config("FixedQParamsFakeQuantize", config);
  fake_quant_enabled_ =
      register_buffer("fake_quant_enabled", ones({1}, TensorOptions().dtype(kUInt8)));
  observer_enabled_ = register_buffer("observer_enabled", ones({1}, TensorOptions().dtype(kUInt8)));
  observer_ = std::make_shared<FixedQParamsObserver>(config);
  // PyTorch assigns the observer's buffers to self.scale / self.zero_point: one tensor each,
  // under two state_dict keys.
  scale_ = register_buffer("scale", observer_->scale());
  zero_point_ = register_buffer("zero_point", observer_->zero_point());
  register_module("activation_post_process", observer_);
}

Tensor FixedQParamsFakeQuantize::forward(const Tensor& x) {
  require_cpu_quantizer_input(name(), x);
  // The observer is a no-op and calculate_qparams() returns the buffers themselves, so
  // observing (PyTorch copies the qparams onto themselves) changes nothing.
  if (!fake_quant_enabled()) return x;
  return ao::fake_quantize_per_tensor_affine(x, scale_, zero_point_, config_.quant_min,
                                             config_.quant_max);
}

void FixedQParamsFakeQuantize::enable_fake_quant(bool on) {
  fake_quant_enabled_.fill_(on ? 1 : 0);
}
void FixedQParamsFakeQuantize::enable_observer(bool on) {
  observer_enabled_.fill_(on ? 1 : 0);
}
bool FixedQParamsFakeQuantize::fake_quant_enabled() const {
  return fake_quant_enabled_.item<int>() != 0;
}
bool FixedQParamsFakeQuantize::observer_enabled() const {
  return observer_enabled_.item<int>() != 0;
}

std::string FixedQParamsFakeQuantize::extra_repr() const {
  return "fake_quant_enabled=" + values_repr(fake_quant_enabled_) +
         ", observer_enabled=" + values_repr(observer_enabled_) + ", scale=" + values_repr(scale_) +
         ", zero_point=" + values_repr(zero_point_) +
         ", dtype=" + ao::quant_dtype_name(config_.dtype) +
         ", quant_min=" + std::to_string(config_.quant_min) +
         ", quant_max=" + std::to_string(config_.quant_max) +
         ", qscheme=" + ao::qscheme_name(config_.qscheme);
}

}  // namespace qgrad::quant
