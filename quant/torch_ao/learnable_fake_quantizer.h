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

/// The initial parameters and options of a LearnableFakeQuantizer (chainable setters).
struct LearnableFakeQuantizeOptions {
  double scale_ = 1.0;             ///< initial scale
  double zero_point_ = 0.0;        ///< initial zero point (float, learnable)
  std::int64_t channel_len_ = -1;  ///< -1: per tensor
  bool use_grad_scaling_ = false;  ///< scale the gradients by 1/sqrt(numel * quant_max)

  /// Sets scale_.
  LearnableFakeQuantizeOptions& scale(double s) {
    scale_ = s;
    return *this;
  }
  /// Sets zero_point_.
  LearnableFakeQuantizeOptions& zero_point(double z) {
    zero_point_ = z;
    return *this;
  }
  /// Sets channel_len_.
  LearnableFakeQuantizeOptions& channel_len(std::int64_t c) {
    channel_len_ = c;
    return *this;
  }
  /// Sets use_grad_scaling_.
  LearnableFakeQuantizeOptions& use_grad_scaling(bool u) {
    use_grad_scaling_ = u;
    return *this;
  }
};

/// torch.ao's _LearnableFakeQuantize: learnable scale and zero point, an observer for static
/// estimates, and the three mode switches (see the file comment).
class LearnableFakeQuantizer {
 public:
  /// ValueError when observer is null, its range is empty, its qscheme is
  /// per_channel_affine_float_qparams, or channel_len disagrees with a per-channel qscheme.
  LearnableFakeQuantizer(std::unique_ptr<UniformQuantizationObserver> observer,
                         const LearnableFakeQuantizeOptions& options = {});

  /// Fake-quantizes x with the learnable scale and zero point, first observing and copying the
  /// observer's qparams when static estimation is on (see the file comment).
  Tensor forward(const Tensor& x);
  /// The scale clamped to >= eps and the zero point rounded (half to even) and clamped (int64).
  QParams calculate_qparams();

  /// PyTorch's modes: learning (parameters learn, no observation), static estimate (observe and
  /// copy qparams, fake-quantize), static observation (observe only, x passes through).
  void enable_param_learning();
  /// Static estimate: no learning, observe and copy the qparams, fake-quantize.
  void enable_static_estimate();
  /// Static observation: no learning, observe only, x passes through.
  void enable_static_observation();
  void toggle_qparam_learning(bool on);  ///< also sets requires_grad of scale / zero_point
  void toggle_fake_quant(bool on);       ///< switches fake quantization
  void toggle_observer_update(bool on);  ///< switches observation with static estimates

  Tensor& scale() { return scale_; }            ///< float32 parameter
  Tensor& zero_point() { return zero_point_; }  ///< float32 parameter
  /// The lowest integer of the observer's range.
  std::int64_t quant_min() const { return observer_->quant_min(); }
  /// The highest integer of the observer's range.
  std::int64_t quant_max() const { return observer_->quant_max(); }
  /// The observer of static estimates.
  UniformQuantizationObserver& observer() { return *observer_; }
  /// uint8 [1], the fake-quantization switch.
  Tensor& fake_quant_enabled_buffer() { return fake_quant_enabled_; }
  /// uint8 [1], the static-estimate switch.
  Tensor& static_enabled_buffer() { return static_enabled_; }
  /// uint8 [1], the parameter-learning switch.
  Tensor& learning_enabled_buffer() { return learning_enabled_; }

 private:
  std::unique_ptr<UniformQuantizationObserver> observer_;
  LearnableFakeQuantizeOptions options_;
  std::int64_t ch_axis_ = -1;
  Tensor scale_, zero_point_, fake_quant_enabled_, static_enabled_, learning_enabled_;
};

}  // namespace qgrad::ao
