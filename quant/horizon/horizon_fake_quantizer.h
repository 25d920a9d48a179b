/// @file
/// Horizon's FakeQuantize as a plain state class (a module will wrap it later): a moving-average
/// min/max observer (averaging_constant 0.01, per tensor or per channel along ch_axis), the
/// symmetric scale it implies, and the fake_quant_enabled / observer_enabled switches, all held
/// in tensors so they can be checkpointed. forward() observes (when enabled), recomputes the scale
/// from the running statistics in the same step ("fast training"), then fake-quantizes (when
/// enabled). States: QAT (observe + fake-quantize), Calibration (observe only), Validation
/// (fake-quantize with the fixed scale). with_args() builds a factory of identically configured
/// quantizers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/tensor.h"
#include "quant/horizon/horizon_qparams.h"
#include "quant/observer/uniform_observer.h"

namespace qgrad::horizon {

struct FakeQuantizeOptions {
  QDType dtype_ = QDType::QInt8;
  bool saturate_ = true;  ///< Horizon's default is configuration dependent; qgrad defaults to true
  RoundMode round_mode_ = RoundMode::HalfToEven;
  std::optional<std::int64_t> ch_axis_;  ///< empty: per tensor
  std::int64_t channel_len_ = 1;         ///< number of channels when per channel
  double averaging_constant_ = 0.01;

  FakeQuantizeOptions& dtype(QDType d) {
    dtype_ = d;
    return *this;
  }
  FakeQuantizeOptions& saturate(bool s) {
    saturate_ = s;
    return *this;
  }
  FakeQuantizeOptions& round_mode(RoundMode m) {
    round_mode_ = m;
    return *this;
  }
  FakeQuantizeOptions& per_channel(std::int64_t ch_axis, std::int64_t channel_len) {
    ch_axis_ = ch_axis;
    channel_len_ = channel_len;
    return *this;
  }
  FakeQuantizeOptions& averaging_constant(double c) {
    averaging_constant_ = c;
    return *this;
  }
};

class FakeQuantizer {
 public:
  enum class State { QAT, Calibration, Validation };
  using Factory = std::function<std::unique_ptr<FakeQuantizer>()>;

  explicit FakeQuantizer(const FakeQuantizeOptions& options = FakeQuantizeOptions());

  Tensor forward(const Tensor& x);

  /// Sets the scale (one value, or channel_len values); zero_point must be absent or all zeros
  /// (Horizon's quantization is symmetric).
  void set_qparams(const Tensor& scale, const Tensor& zero_point = Tensor());
  void set_qparams(const std::vector<double>& scale);
  void set_state(State s);
  void enable_fake_quant(bool on = true);
  void enable_observer(bool on = true);
  bool fake_quant_enabled() const;
  bool observer_enabled() const;

  const FakeQuantizeOptions& options() const { return options_; }
  QRange quant_range() const { return horizon::quant_range(options_.dtype_); }
  Tensor& scale() { return scale_; }            ///< float32 [channel_len]
  Tensor& zero_point() { return zero_point_; }  ///< int64 zeros [channel_len]
  Tensor& fake_quant_enabled_buffer() { return fake_quant_enabled_; }  ///< uint8 [1]
  Tensor& observer_enabled_buffer() { return observer_enabled_; }      ///< uint8 [1]
  ao::UniformQuantizationObserver& observer() { return *observer_; }
  /// The scale implied by the observer's statistics (the current scale when nothing was observed).
  Tensor calculate_scale() const;

  static Factory with_args(const FakeQuantizeOptions& options);

 private:
  FakeQuantizeOptions options_;
  std::unique_ptr<ao::UniformQuantizationObserver> observer_;
  Tensor scale_, zero_point_, fake_quant_enabled_, observer_enabled_;
};

}  // namespace qgrad::horizon
