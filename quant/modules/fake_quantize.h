/// @file
/// FakeQuantize: torch.ao.quantization.FakeQuantize as an nn module. An Observer child
/// ("activation_post_process") gathers statistics; forward(x) with the observer enabled records
/// x (detached) and recomputes scale / zero_point from the statistics (every step, as PyTorch),
/// then with fake quantization enabled applies fake_quantize_per_tensor_affine or, for per-channel
/// observers, fake_quantize_per_channel_affine along the observer's ch_axis. Gradient: the
/// straight-through estimator only.
///
/// State (PyTorch's keys): "fake_quant_enabled", "observer_enabled" (uint8 [1]), "scale" (float32),
/// "zero_point" (int32), "activation_post_process.{eps,min_val,max_val}". scale/zero_point are [1]
/// per tensor; per channel they have channel_len elements when it is given, else they start empty
/// ([0], PyTorch starts at [1]) and take the channel count of the first observed batch.
///
/// with_args(config) returns a factory of identically configured modules (PyTorch's with_args);
/// default_fake_quant_config() and friends are PyTorch's ready-made configurations.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "nn/unary_module.h"
#include "quant/modules/calibratable.h"
#include "quant/modules/host_flag.h"
#include "quant/modules/observer_module.h"

namespace qgrad::quant {

/// The configuration of a FakeQuantize: its observer and, per channel, the channel count.
struct FakeQuantizeConfig {
  /// Default: MovingAverageMinMaxObserver(0.01), quint8, per_tensor_affine, [0, 255].
  ObserverConfig observer;
  /// Per-channel observers: the channel count, to size scale / zero_point up front.
  std::optional<std::int64_t> channel_len;
};

/// An observer configuration from its kind, dtype, qscheme, quant range and reduce_range: how
/// PyTorch's ready-made fake-quant configurations (here and in fused_fake_quantize.h) are written.
ObserverConfig observer_config(ObserverKind kind, ao::QuantDType dtype, ao::QScheme qscheme,
                               std::int64_t qmin, std::int64_t qmax, bool reduce_range);

/// torch.ao.quantization.default_fake_quant: moving-average min/max, quint8 [0, 255],
/// per_tensor_affine, reduce_range = true (so [0, 127]).
FakeQuantizeConfig default_fake_quant_config();
/// default_weight_fake_quant: moving-average min/max, qint8 [-128, 127], per_tensor_symmetric.
FakeQuantizeConfig default_weight_fake_quant_config();
/// default_per_channel_weight_fake_quant: moving-average per-channel min/max along ch_axis 0,
/// qint8 [-128, 127], per_channel_symmetric.
FakeQuantizeConfig default_per_channel_weight_fake_quant_config();

/// torch.ao's FakeQuantize as an nn module (see the file comment).
class FakeQuantize : public nn::UnaryModule, public Calibratable {
 public:
  /// A maker of identically configured FakeQuantize modules (with_args()).
  using Factory = std::function<std::shared_ptr<FakeQuantize>()>;

  /// ValueError for per_channel_affine_float_qparams, a channel_len with a per-tensor observer or
  /// a channel_len < 1.
  explicit FakeQuantize(const FakeQuantizeConfig& config = FakeQuantizeConfig());
  /// A factory of FakeQuantize(config), as torch.ao's with_args.
  static Factory with_args(const FakeQuantizeConfig& config);

  Tensor forward(const Tensor& x) override;
  /// The observer's qparams of its current statistics.
  ao::QParams calculate_qparams() const { return observer_->calculate_qparams(); }

  void enable_fake_quant(bool on = true);  ///< switches fake quantization in forward()
  /// enable_fake_quant(false).
  void disable_fake_quant() { enable_fake_quant(false); }
  void enable_observer(bool on = true);  ///< switches observation in forward()
  /// enable_observer(false).
  void disable_observer() { enable_observer(false); }
  bool fake_quant_enabled() const;  ///< whether forward() fake-quantizes
  bool observer_enabled() const;    ///< whether forward() observes

  /// Whether the observer is per channel.
  bool is_per_channel() const { return observer_->is_per_channel(); }
  /// The observer's channel axis (-1 per tensor).
  std::int64_t ch_axis() const { return observer_->ch_axis(); }
  /// The lowest integer of the range.
  std::int64_t quant_min() const { return observer_->quant_min(); }
  /// The highest integer of the range.
  std::int64_t quant_max() const { return observer_->quant_max(); }
  /// The "scale" buffer (float32, [1] or [C]).
  const Tensor& scale() const { return scale_; }
  /// The "zero_point" buffer (int32, [1] or [C]).
  const Tensor& zero_point() const { return zero_point_; }
  /// Set the qparams directly (no state_dict round trip), e.g. to freeze a quantizer: call
  /// disable_observer() too, or the next observing forward recomputes them. Per tensor: one value
  /// each (any shape of one element; stored as [1]). Per channel: 1-D [C] each (C >= 1, the
  /// same for both; a new C resizes the buffers, as load_state_dict would). Scales must be
  /// finite and > 0, zero points integers in [quant_min, quant_max]; ValueError / ShapeError
  /// otherwise, naming the argument, and nothing changes. set_scale / set_zero_point keep the
  /// other buffer, so they need its current element count.
  void set_qparams(const Tensor& scale, const Tensor& zero_point);
  void set_qparams(double scale, std::int64_t zero_point);  ///< per tensor
  void set_scale(const Tensor& scale);            ///< set_qparams with the current zero point
  void set_zero_point(const Tensor& zero_point);  ///< set_qparams with the current scale
  /// The observer child.
  const std::shared_ptr<Observer>& activation_post_process() const { return observer_; }
  /// The configuration.
  const FakeQuantizeConfig& config() const { return config_; }

  /// PyTorch's: "fake_quant_enabled=1, observer_enabled=1, quant_min=0, quant_max=255,
  /// dtype=quint8, qscheme=per_tensor_affine, ch_axis=-1, scale=1.0, zero_point=0"
  std::string extra_repr() const override;

  /// Observe without fake quantization; then fake quantization back on (the observer stays on,
  /// as in torch.ao QAT). strict: an observer that saw no data is a ValueError.
  void start_calibration() override;
  void finish_calibration(const CalibrationOptions& options) override;
  /// The CPU, and CUDA with a min/max observer (its statistics and qparams stay on the GPU).
  bool runs_on(Device device) const override;

 private:
  FakeQuantizeConfig config_;
  std::shared_ptr<Observer> observer_;
  Tensor fake_quant_enabled_, observer_enabled_, scale_, zero_point_;
  HostFlag fake_quant_on_{Tensor()}, observer_on_{Tensor()};  // the flags as forward() reads them
};

/// True when the observer has recorded at least one batch.
bool observer_has_data(const Observer& observer);

}  // namespace qgrad::quant
