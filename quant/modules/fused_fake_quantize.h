/// @file
/// FusedMovingAvgObsFakeQuantize: torch.ao.quantization.FusedMovingAvgObsFakeQuantize (PyTorch
/// 1.13) as an nn module, the fake quantizer of PyTorch's default QAT qconfig
/// (get_default_qat_qconfig("fbgemm" / "x86")). forward(x) is one call of
/// ao::fused_moving_avg_obs_fake_quant on the module's state: observe (moving-average min/max),
/// then, only while fake quantization is enabled, choose scale / zero point with ATen's
/// ChooseQuantizationParams and fake-quantize. So, unlike FakeQuantize, scale and zero_point stay
/// as they were while fake quantization is off, and they can differ from calculate_qparams()
/// (the observer's rule, which PyTorch's module also returns there).
///
/// State (PyTorch's keys): "fake_quant_enabled", "observer_enabled" (int64 [1]), "scale"
/// (float32), "zero_point" (int32), "activation_post_process.{eps,min_val,max_val}". Per tensor
/// scale / zero_point are [1]; per channel (ch_axis 0 only, as in PyTorch 1.13) they hold
/// channel_len elements when it is given, else they start empty ([0]) and take the channel count
/// of the first batch, as the running statistics do.
#pragma once

#include <memory>
#include <string>

#include "quant/modules/calibratable.h"
#include "quant/modules/fake_quantize.h"
#include "quant/synced_statistics.h"

namespace qgrad::quant {

/// The observer child of the fused module: the statistics buffers of a MovingAverageMinMaxObserver
/// or MovingAveragePerChannelMinMaxObserver (their PyTorch class name is the module name), whose
/// values the fused op updates in place.
class FusedObserverState : public nn::Module {
 public:
  /// Validates and builds the statistics buffers of config's moving-average observer.
  explicit FusedObserverState(const ObserverConfig& config);

  ao::QParams calculate_qparams() const;  ///< the qparams of the current statistics
  /// The observer configuration.
  const ObserverConfig& config() const { return config_; }
  /// The lowest integer of the range.
  std::int64_t quant_min() const { return observer_->quant_min(); }
  /// The highest integer of the range.
  std::int64_t quant_max() const { return observer_->quant_max(); }
  /// The running min (float32, 0-d or [C]).
  const Tensor& min_val() const { return min_val_; }
  /// The running max (float32, 0-d or [C]).
  const Tensor& max_val() const { return max_val_; }
  std::string extra_repr() const override;

 private:
  ObserverConfig config_;
  std::unique_ptr<ao::UniformQuantizationObserver> observer_;  ///< options and the qparams rule
  Tensor eps_, min_val_, max_val_;
};

/// torch.ao's default_fused_act_fake_quant: quint8 [0, 255], per_tensor_affine.
FakeQuantizeConfig default_fused_act_fake_quant_config();
/// default_fused_wt_fake_quant: qint8 [-128, 127], per_tensor_symmetric.
FakeQuantizeConfig default_fused_wt_fake_quant_config();
/// default_fused_per_channel_wt_fake_quant: qint8 [-128, 127], per_channel_symmetric, ch_axis 0.
FakeQuantizeConfig default_fused_per_channel_wt_fake_quant_config();
/// get_default_qat_qconfig("fbgemm") (version 1): the activation quantizer is
/// default_fused_act_fake_quant with reduce_range = true (so [0, 127]); the weight quantizer is
/// default_fused_per_channel_wt_fake_quant.
FakeQuantizeConfig default_qat_activation_config();
/// default_fused_per_channel_wt_fake_quant (see above).
FakeQuantizeConfig default_qat_weight_config();

/// torch.ao's FusedMovingAvgObsFakeQuantize: moving-average observation and fake quantization
/// in one op (see the file comment).
class FusedMovingAvgObsFakeQuantize : public nn::UnaryModule,
                                      public Calibratable,
                                      public SyncedStatistics {
 public:
  /// A maker of identically configured modules (with_args()).
  using Factory = std::function<std::shared_ptr<FusedMovingAvgObsFakeQuantize>()>;

  /// The observer must be MovingAverageMinMax or MovingAveragePerChannelMinMax (ValueError, as
  /// PyTorch's assertion), per channel along ch_axis 0; no float qparams.
  explicit FusedMovingAvgObsFakeQuantize(
      const FakeQuantizeConfig& config = default_fused_act_fake_quant_config());
  /// A factory of modules built with config.
  static Factory with_args(const FakeQuantizeConfig& config);

  Tensor forward(const Tensor& x) override;
  /// The observer's qparams (calculate_qparams of its statistics), as PyTorch's module returns.
  ao::QParams calculate_qparams() const { return observer_->calculate_qparams(); }
  /// The scale (float32) and zero point (int32) that forward() fake-quantizes with while fake
  /// quantization is on: ATen's ChooseQuantizationParams of the running min/max, as the fused op
  /// chooses them. The stored scale() / zero_point() are these as of the last such step, so they
  /// are stale after observing with fake quantization off (calibration); int8 conversion and ONNX
  /// export read these instead, so all three agree. ValueError naming `op` when the statistics
  /// saw no data (a channel's min above its max).
  ao::QParams fake_quant_qparams(const std::string& op) const;

  void enable_fake_quant(bool on = true);  ///< switches fake quantization in forward()
  /// enable_fake_quant(false).
  void disable_fake_quant() { enable_fake_quant(false); }
  void enable_observer(bool on = true);  ///< switches observation in forward()
  /// enable_observer(false).
  void disable_observer() { enable_observer(false); }
  bool fake_quant_enabled() const;  ///< whether forward() fake-quantizes
  bool observer_enabled() const;    ///< whether forward() observes

  bool is_per_channel() const;      ///< whether the qscheme is per channel
  bool is_symmetric_quant() const;  ///< whether the qscheme is symmetric
  std::int64_t ch_axis() const;     ///< 0 per channel, -1 per tensor
  /// The lowest integer of the range.
  std::int64_t quant_min() const { return observer_->quant_min(); }
  /// The highest integer of the range.
  std::int64_t quant_max() const { return observer_->quant_max(); }
  /// The observer's moving-average weight.
  double averaging_constant() const { return config_.observer.averaging_constant; }
  /// The "scale" buffer (see fake_quant_qparams()).
  const Tensor& scale() const { return scale_; }
  /// The "zero_point" buffer (see fake_quant_qparams()).
  const Tensor& zero_point() const { return zero_point_; }
  /// The observer child.
  const std::shared_ptr<FusedObserverState>& activation_post_process() const { return observer_; }
  /// The configuration.
  const FakeQuantizeConfig& config() const { return config_; }

  /// PyTorch's: "fake_quant_enabled=tensor([1]), observer_enabled=tensor([1]), scale=..., ..."
  /// in qgrad's value notation.
  std::string extra_repr() const override;

  /// As FakeQuantize: observe without fake quantization, then fake quantization back on. Scale and
  /// zero point are chosen on the first step with fake quantization on.
  void start_calibration() override;
  /// Fake quantization back on; with options.strict, ValueError when the observer saw no data.
  void finish_calibration(const CalibrationOptions& options) override;
  /// The CPU and CUDA: flags and state stay on the device.
  bool runs_on(Device device) const override { return device.is_cpu() || device.is_cuda(); }

 private:
  // With a group of several ranks: the batch range reduced over the ranks and the running
  // statistics updated from it as the fused op would; false (nothing done) when the fused op
  // must report the input or state itself.
  bool observe_global_batch(const Tensor& x);

  FakeQuantizeConfig config_;
  std::shared_ptr<FusedObserverState> observer_;
  Tensor fake_quant_enabled_, observer_enabled_, scale_, zero_point_;
};

}  // namespace qgrad::quant
