/// @file
/// torch.ao's FixedQParamsFakeQuantize and FixedQParamsObserver (PyTorch 1.13) as nn modules: fake
/// quantization per tensor with a scale and zero point fixed at construction, for ops whose
/// output range is known (sigmoid, tanh, hardsigmoid, softmax). The observer child
/// ("activation_post_process") is a no-op: forward(x) returns x and calculate_qparams() returns
/// the fixed values, so enabling the observer changes nothing. State (PyTorch's keys, the last
/// two being the same tensors as "scale" / "zero_point"): "fake_quant_enabled",
/// "observer_enabled" (uint8 [1]), "scale" (float32 [1]), "zero_point" (int32 [1]),
/// "activation_post_process.scale", "activation_post_process.zero_point". Gradient: the
/// straight-through estimator of fake_quantize_per_tensor_affine.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "nn/unary_module.h"
#include "quant/modules/calibratable.h"
#include "quant/observer/uniform_observer.h"

namespace qgrad::quant {

/// The fixed qparams and integer range of a FixedQParamsFakeQuantize.
struct FixedQParamsConfig {
  double scale = 1.0;                             ///< the scale (finite, > 0)
  std::int64_t zero_point = 0;                    ///< the zero point, in [quant_min, quant_max]
  ao::QuantDType dtype = ao::QuantDType::QUInt8;  ///< the quantized dtype
  ao::QScheme qscheme = ao::QScheme::PerTensorAffine;  ///< per-tensor schemes only
  std::int64_t quant_min = 0;                          ///< lowest integer (below quant_max)
  std::int64_t quant_max = 255;                        ///< highest integer
};

/// torch.ao.quantization.default_fixed_qparams_range_neg1to1_fake_quant (also PyTorch's
/// default_symmetric_fixed_qparams_fake_quant): scale 2/256, zero point 128, quint8 [0, 255].
FixedQParamsConfig fixed_qparams_range_neg1to1_config();
/// default_fixed_qparams_range_0to1_fake_quant (default_affine_fixed_qparams_fake_quant): scale
/// 1/256, zero point 0, quint8 [0, 255].
FixedQParamsConfig fixed_qparams_range_0to1_config();

/// torch.ao's FixedQParamsObserver: a no-op observer that reports the fixed qparams.
class FixedQParamsObserver : public nn::UnaryModule {
 public:
  /// ValueError: a scale that is not finite and > 0, a zero point outside [quant_min, quant_max],
  /// quant_min >= quant_max, a per-channel qscheme.
  explicit FixedQParamsObserver(const FixedQParamsConfig& config = FixedQParamsConfig());

  Tensor forward(const Tensor& x) override { return x; }  ///< observes nothing
  /// The fixed scale and zero point.
  ao::QParams calculate_qparams() const { return {scale_, zero_point_}; }
  /// The configuration.
  const FixedQParamsConfig& config() const { return config_; }
  const Tensor& scale() const { return scale_; }            ///< float32 [1]
  const Tensor& zero_point() const { return zero_point_; }  ///< int32 [1]

 private:
  FixedQParamsConfig config_;
  Tensor scale_, zero_point_;
};

/// torch.ao's FixedQParamsFakeQuantize: per-tensor fake quantization with fixed qparams (see the
/// file comment).
class FixedQParamsFakeQuantize : public nn::UnaryModule, public Calibratable {
 public:
  /// ValueError as FixedQParamsObserver's.
  explicit FixedQParamsFakeQuantize(const FixedQParamsConfig& config = FixedQParamsConfig());

  /// x fake-quantized with the fixed qparams (fake quantization on), else x.
  Tensor forward(const Tensor& x) override;
  /// The fixed scale and zero point.
  ao::QParams calculate_qparams() const { return {scale_, zero_point_}; }

  void enable_fake_quant(bool on = true);  ///< switches fake quantization in forward()
  /// enable_fake_quant(false).
  void disable_fake_quant() { enable_fake_quant(false); }
  void enable_observer(bool on = true);  ///< switches the (no-op) observer
  /// enable_observer(false).
  void disable_observer() { enable_observer(false); }
  bool fake_quant_enabled() const;  ///< whether forward() fake-quantizes
  bool observer_enabled() const;    ///< the observer switch

  /// The lowest integer of the range.
  std::int64_t quant_min() const { return config_.quant_min; }
  /// The highest integer of the range.
  std::int64_t quant_max() const { return config_.quant_max; }
  /// float32 [1].
  const Tensor& scale() const { return scale_; }
  /// int32 [1].
  const Tensor& zero_point() const { return zero_point_; }
  /// The observer child.
  const std::shared_ptr<FixedQParamsObserver>& activation_post_process() const { return observer_; }
  /// The configuration.
  const FixedQParamsConfig& config() const { return config_; }

  /// PyTorch's field order: "fake_quant_enabled=1, observer_enabled=1, scale=0.0078125,
  /// zero_point=128, dtype=quint8, quant_min=0, quant_max=255, qscheme=per_tensor_affine".
  std::string extra_repr() const override;

  /// As FakeQuantize (torch.ao's calibration flow switches every fake quantizer alike): fake
  /// quantization off while calibrating, back on after; the qparams never change.
  void start_calibration() override { disable_fake_quant(); }
  void finish_calibration(const CalibrationOptions&) override { enable_fake_quant(); }

 private:
  FixedQParamsConfig config_;
  std::shared_ptr<FixedQParamsObserver> observer_;
  Tensor fake_quant_enabled_, observer_enabled_, scale_, zero_point_;
};

}  // namespace qgrad::quant
