/// @file
/// torch.ao per-channel min/max observers as plain state classes: one running (min, max) per index
/// of ch_axis, held in float32 1-D tensors that start empty (shape [0]) and take the channel count
/// of the first batch.
///   PerChannelMinMaxObserver: running min/max per channel.
///   MovingAveragePerChannelMinMaxObserver: first batch sets, then m = m + c * (batch_m - m).
/// A later batch with another channel count is a ShapeError. calculate_qparams returns [C] scales
/// and zero points ([1.0] and [0] when nothing was observed).
#pragma once

#include "quant/observer/uniform_observer.h"

namespace qgrad::ao {

/// The default options of the per-channel observers: quint8, per_channel_affine.
inline ObserverOptions per_channel_affine_options() {
  return ObserverOptions().qscheme(QScheme::PerChannelAffine);
}

/// torch.ao's PerChannelMinMaxObserver: running min/max per index of ch_axis (see the file
/// comment).
class PerChannelMinMaxObserver : public UniformQuantizationObserver {
 public:
  /// Default: ch_axis 0, quint8, per_channel_affine.
  explicit PerChannelMinMaxObserver(std::int64_t ch_axis = 0,
                                    const ObserverOptions& options = per_channel_affine_options());

  /// Folds x's per-channel min/max into the running statistics; returns x. IndexError when ch_axis
  /// is out of range for x, ShapeError when the channel count differs from earlier batches.
  Tensor forward(const Tensor& x) override;
  /// [C] scales and zero points ([1.0] / [0] before any data).
  QParams calculate_qparams() const override;
  void reset_min_max_vals() override;  ///< back to empty statistics (shape [0])

  /// The channel axis (may be negative).
  std::int64_t ch_axis() const { return ch_axis_; }

 protected:
  /// For subclasses: name is used in error messages.
  PerChannelMinMaxObserver(const char* name, std::int64_t ch_axis, const ObserverOptions& options);
  /// Per-channel (min, max) of a batch, as float32 vectors (with a process group, of the global
  /// batch); checks the channel count against the running statistics.
  void batch_min_max(const Tensor& x, std::vector<float>& mn, std::vector<float>& mx) const;
  /// x's channel axis, normalised; IndexError / ShapeError as forward() says.
  std::int64_t channel_axis(const Tensor& x) const;

  std::int64_t ch_axis_;  ///< the channel axis
};

/// torch.ao's MovingAveragePerChannelMinMaxObserver: the first batch sets each channel's
/// min/max, later ones move them by averaging_constant.
class MovingAveragePerChannelMinMaxObserver : public PerChannelMinMaxObserver {
 public:
  /// averaging_constant in [0, 1] (ValueError).
  explicit MovingAveragePerChannelMinMaxObserver(
      double averaging_constant = 0.01, std::int64_t ch_axis = 0,
      const ObserverOptions& options = per_channel_affine_options());
  /// Updates the per-channel moving averages with x's statistics; returns x (errors as the base).
  Tensor forward(const Tensor& x) override;
  /// The weight c of a new batch.
  double averaging_constant() const { return averaging_constant_; }

 private:
  double averaging_constant_;
};

}  // namespace qgrad::ao
