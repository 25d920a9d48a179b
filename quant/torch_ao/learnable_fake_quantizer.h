/// @file
/// torch.ao's _LearnableFakeQuantize as a plain state class: learnable float32 scale and
/// zero_point (per tensor, or channel_len values per channel along the observer's ch_axis), an
/// observer for static estimates, and the fake_quant_enabled / static_enabled / learning_enabled
/// switches. forward(): with static estimation on, observe and copy the observer's qparams into
/// the parameters; otherwise clamp the scale to >= eps (2^-23). With fake quantization on, zero the
/// zero point for symmetric schemes and apply the learnable fake quantization
/// (learnable_fake_quantize.h) with grad_factor 1/sqrt(numel * quant_max) when use_grad_scaling.
/// The quantization range is the observer's.
#pragma once

#include <memory>

#include "core/tensor.h"
#include "quant/observer/uniform_observer.h"

namespace qgrad::ao {

struct LearnableFakeQuantizeOptions {
  double scale_ = 1.0;
  double zero_point_ = 0.0;
  std::int64_t channel_len_ = -1;  ///< -1: per tensor
  bool use_grad_scaling_ = false;

  LearnableFakeQuantizeOptions& scale(double s) {
    scale_ = s;
    return *this;
  }
  LearnableFakeQuantizeOptions& zero_point(double z) {
    zero_point_ = z;
    return *this;
  }
  LearnableFakeQuantizeOptions& channel_len(std::int64_t c) {
    channel_len_ = c;
    return *this;
  }
  LearnableFakeQuantizeOptions& use_grad_scaling(bool u) {
    use_grad_scaling_ = u;
    return *this;
  }
};

class LearnableFakeQuantizer {
 public:
  LearnableFakeQuantizer(std::unique_ptr<UniformQuantizationObserver> observer,
                         const LearnableFakeQuantizeOptions& options = {});

  Tensor forward(const Tensor& x);
  /// The scale clamped to >= eps and the zero point rounded (half to even) and clamped (int64).
  QParams calculate_qparams();

  /// PyTorch's modes: learning (parameters learn, no observation), static estimate (observe and
  /// copy qparams, fake-quantize), static observation (observe only, x passes through).
  void enable_param_learning();
  void enable_static_estimate();
  void enable_static_observation();
  void toggle_qparam_learning(bool on);  ///< also sets requires_grad of scale / zero_point
  void toggle_fake_quant(bool on);
  void toggle_observer_update(bool on);

  Tensor& scale() { return scale_; }            ///< float32 parameter
  Tensor& zero_point() { return zero_point_; }  ///< float32 parameter
  std::int64_t quant_min() const { return observer_->quant_min(); }
  std::int64_t quant_max() const { return observer_->quant_max(); }
  UniformQuantizationObserver& observer() { return *observer_; }
  Tensor& fake_quant_enabled_buffer() { return fake_quant_enabled_; }
  Tensor& static_enabled_buffer() { return static_enabled_; }
  Tensor& learning_enabled_buffer() { return learning_enabled_; }

 private:
  std::unique_ptr<UniformQuantizationObserver> observer_;
  LearnableFakeQuantizeOptions options_;
  std::int64_t ch_axis_ = -1;
  Tensor scale_, zero_point_, fake_quant_enabled_, static_enabled_, learning_enabled_;
};

}  // namespace qgrad::ao
