/// @file
/// HorizonFakeQuantize: Horizon's (horizon_plugin_pytorch) FakeQuantize as an nn module, the
/// module form of horizon::FakeQuantizer. A moving-average min/max Observer child
/// ("activation_post_process", averaging constant 0.01 by default, per tensor or per channel along
/// ch_axis) gathers statistics; with the observer enabled the symmetric scale
/// max(-min, max) / ((qmax - qmin) / 2) (floored at 2^-23) is recomputed from them in the same
/// step, then with fake quantization enabled y = clamp(round(x / scale), qmin, qmax) * scale
/// (horizon::fake_quantize: half-to-even or half-up rounding, saturate = clipped STE or pass-
/// through gradient). Zero point is always 0. dtypes qint8, qint16, qint4, quint4.
///
/// States: QAT (observe + fake-quantize), CALIBRATION (observe only), VALIDATION (fake-quantize
/// with the fixed scale). with_args(options) builds a factory of identically configured modules.
///
/// State dict: "fake_quant_enabled", "observer_enabled" (uint8 [1]), "scale" (float32
/// [channel_len]), "zero_point" (int64 zeros), "activation_post_process.{eps,min_val,max_val}".
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/unary_module.h"
#include "quant/horizon/horizon_fake_quantizer.h"
#include "quant/modules/calibratable.h"
#include "quant/modules/host_flag.h"
#include "quant/modules/observer_module.h"

namespace qgrad::quant {

/// Horizon's FakeQuantize as an nn module (see the file comment and horizon::FakeQuantizer).
class HorizonFakeQuantize : public nn::UnaryModule, public Calibratable {
 public:
  /// QAT, Calibration or Validation (horizon::FakeQuantizer::State).
  using State = horizon::FakeQuantizer::State;
  /// A maker of identically configured modules (with_args()).
  using Factory = std::function<std::shared_ptr<HorizonFakeQuantize>()>;

  /// ValueError: channel_len < 1, channel_len > 1 without ch_axis, a bad averaging constant.
  explicit HorizonFakeQuantize(
      const horizon::FakeQuantizeOptions& options = horizon::FakeQuantizeOptions());
  /// A factory of modules built with options.
  static Factory with_args(const horizon::FakeQuantizeOptions& options);

  /// Observes x and recomputes the scale (observer on), then fake-quantizes x (fake quantization
  /// on); x unchanged when fake quantization is off.
  Tensor forward(const Tensor& x) override;

  /// Sets the scale (one value, or channel_len values, finite and > 0); zero_point must be absent
  /// or all zeros (the quantization is symmetric).
  void set_qparams(const Tensor& scale, const Tensor& zero_point = Tensor());
  /// set_qparams with these scales (zero points 0).
  void set_qparams(const std::vector<double>& scale);
  void set_state(State s);  ///< sets both switches for the state
  State state() const;  ///< from the switches (observer off + fake quant off reads as Calibration)
  void enable_fake_quant(bool on = true);  ///< switches fake quantization in forward()
  /// enable_fake_quant(false).
  void disable_fake_quant() { enable_fake_quant(false); }
  void enable_observer(bool on = true);  ///< switches observation in forward()
  /// enable_observer(false).
  void disable_observer() { enable_observer(false); }
  bool fake_quant_enabled() const;  ///< whether forward() fake-quantizes
  bool observer_enabled() const;    ///< whether forward() observes

  /// The scale implied by the observer's statistics (the current scale before any data).
  Tensor calculate_scale() const;
  /// The "scale" buffer (float32 [channel_len]).
  const Tensor& scale() const { return scale_; }
  /// The "zero_point" buffer (zeros).
  const Tensor& zero_point() const { return zero_point_; }
  /// The configuration.
  const horizon::FakeQuantizeOptions& options() const { return options_; }
  /// The integer range of the dtype.
  horizon::QRange quant_range() const { return horizon::quant_range(options_.dtype_); }
  /// The observer child.
  const std::shared_ptr<Observer>& activation_post_process() const { return observer_; }

  /// "dtype=qint8, quant_min=-128, quant_max=127, ch_axis=-1, saturate=True,
  ///  round_mode=half_to_even, averaging_constant=0.01, state=QAT, scale=1.0, zero_point=0"
  std::string extra_repr() const override;

  /// CALIBRATION state; then QAT state. strict: an observer that saw no data is a ValueError.
  void start_calibration() override;
  /// QAT state; with options.strict, ValueError when the observer saw no data.
  void finish_calibration(const CalibrationOptions& options) override;
  /// The CPU, and CUDA (its observer's statistics and its scale stay on the GPU).
  bool runs_on(Device device) const override;

 private:
  horizon::FakeQuantizeOptions options_;
  std::shared_ptr<Observer> observer_;
  Tensor fake_quant_enabled_, observer_enabled_, scale_, zero_point_;
  HostFlag fake_quant_on_{Tensor()}, observer_on_{Tensor()};  // the flags as forward() reads them
};

const char* horizon_state_name(HorizonFakeQuantize::State s);  ///< "QAT", "CALIBRATION", ...

}  // namespace qgrad::quant
