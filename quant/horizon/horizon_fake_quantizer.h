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

/// The configuration of a horizon::FakeQuantizer (chainable setters).
struct FakeQuantizeOptions {
  QDType dtype_ = QDType::QInt8;  ///< the quantized dtype (its integer range)
  bool saturate_ = true;  ///< Horizon's default is configuration dependent; qgrad defaults to true
  RoundMode round_mode_ = RoundMode::HalfToEven;  ///< how x / scale is rounded
  std::optional<std::int64_t> ch_axis_;           ///< empty: per tensor
  std::int64_t channel_len_ = 1;                  ///< number of channels when per channel
  double averaging_constant_ = 0.01;  ///< the observer's moving-average weight of a new batch

  /// Sets dtype_.
  FakeQuantizeOptions& dtype(QDType d) {
    dtype_ = d;
    return *this;
  }
  /// Sets saturate_.
  FakeQuantizeOptions& saturate(bool s) {
    saturate_ = s;
    return *this;
  }
  /// Sets round_mode_.
  FakeQuantizeOptions& round_mode(RoundMode m) {
    round_mode_ = m;
    return *this;
  }
  /// Per channel along ch_axis, with channel_len channels.
  FakeQuantizeOptions& per_channel(std::int64_t ch_axis, std::int64_t channel_len) {
    ch_axis_ = ch_axis;
    channel_len_ = channel_len;
    return *this;
  }
  /// Sets averaging_constant_.
  FakeQuantizeOptions& averaging_constant(double c) {
    averaging_constant_ = c;
    return *this;
  }
};

/// Horizon's FakeQuantize: a moving-average min/max observer, the symmetric scale it implies and
/// the fake-quant / observer switches (see the file comment).
class FakeQuantizer {
 public:
  /// The workflow states: QAT (observe + fake-quantize), Calibration (observe only), Validation
  /// (fake-quantize with the fixed scale).
  enum class State { QAT, Calibration, Validation };
  /// A maker of identically configured quantizers (with_args()).
  using Factory = std::function<std::unique_ptr<FakeQuantizer>()>;

  /// ValueError when channel_len < 1, or channel_len != 1 without a channel axis.
  explicit FakeQuantizer(const FakeQuantizeOptions& options = FakeQuantizeOptions());

  /// Observes x and recomputes the scale (observer on), then fake-quantizes x (fake quantization
  /// on); x unchanged when fake quantization is off.
  Tensor forward(const Tensor& x);

  /// Sets the scale (one value, or channel_len values); zero_point must be absent or all zeros
  /// (Horizon's quantization is symmetric).
  void set_qparams(const Tensor& scale, const Tensor& zero_point = Tensor());
  /// set_qparams with these scales (zero points 0).
  void set_qparams(const std::vector<double>& scale);
  void set_state(State s);                 ///< sets both switches for the state
  void enable_fake_quant(bool on = true);  ///< switches fake quantization in forward()
  void enable_observer(bool on = true);    ///< switches observation in forward()
  bool fake_quant_enabled() const;         ///< whether forward() fake-quantizes
  bool observer_enabled() const;           ///< whether forward() observes

  /// The configuration.
  const FakeQuantizeOptions& options() const { return options_; }
  /// The integer range of the dtype.
  QRange quant_range() const { return horizon::quant_range(options_.dtype_); }
  Tensor& scale() { return scale_; }            ///< float32 [channel_len]
  Tensor& zero_point() { return zero_point_; }  ///< int64 zeros [channel_len]
  Tensor& fake_quant_enabled_buffer() { return fake_quant_enabled_; }  ///< uint8 [1]
  Tensor& observer_enabled_buffer() { return observer_enabled_; }      ///< uint8 [1]
  /// The moving-average min/max observer.
  ao::UniformQuantizationObserver& observer() { return *observer_; }
  /// The scale implied by the observer's statistics (the current scale when nothing was observed).
  Tensor calculate_scale() const;

  /// A factory of quantizers built with options.
  static Factory with_args(const FakeQuantizeOptions& options);

 private:
  FakeQuantizeOptions options_;
  std::unique_ptr<ao::UniformQuantizationObserver> observer_;
  Tensor scale_, zero_point_, fake_quant_enabled_, observer_enabled_;
};

}  // namespace qgrad::horizon
