/// @file
/// torch.ao's FakeQuantize as a plain state class (a module will wrap it later): an observer,
/// the scale / zero_point buffers and the fake_quant_enabled / observer_enabled switches. forward()
/// first observes the batch and recomputes the qparams from the observer (every step, when
/// observing), then fake-quantizes with them (per tensor, or per channel along the observer's
/// ch_axis); the gradient is the straight-through estimator only. Buffers start at scale [1.0],
/// zero_point [0]; a per-channel quantizer's buffers take the channel count at the first step
/// (the tensors are replaced, as PyTorch resizes them).
#pragma once

#include <memory>

#include "core/tensor.h"
#include "quant/observer/uniform_observer.h"

namespace qgrad::ao {

/// torch.ao's FakeQuantize: an observer, scale / zero_point buffers and the fake-quant /
/// observer switches (see the file comment).
class FakeQuantizer {
 public:
  /// Any of the min/max observers except per_channel_affine_float_qparams (ValueError).
  explicit FakeQuantizer(std::unique_ptr<UniformQuantizationObserver> observer);
  /// PyTorch's default FakeQuantize: MovingAverageMinMaxObserver, quint8, per_tensor_affine, with
  /// the user range [0, 255] (so a symmetric quint8 zero point is 127, PyTorch's rule for user
  /// ranges).
  static std::unique_ptr<FakeQuantizer> make_default();

  /// Observes x and recomputes the qparams (observer on), then fake-quantizes x with them (fake
  /// quantization on; the straight-through gradient); x unchanged when fake quantization is off.
  Tensor forward(const Tensor& x);
  /// The observer's qparams of its current statistics.
  QParams calculate_qparams() const { return observer_->calculate_qparams(); }

  void enable_fake_quant(bool on = true);  ///< switches fake quantization in forward()
  void enable_observer(bool on = true);    ///< switches observation in forward()
  bool fake_quant_enabled() const;         ///< whether forward() fake-quantizes
  bool observer_enabled() const;           ///< whether forward() observes

  bool is_per_channel() const;   ///< whether the observer's qscheme is per channel
  std::int64_t ch_axis() const;  ///< -1 per tensor
  /// The lowest integer of the observer's range.
  std::int64_t quant_min() const { return observer_->quant_min(); }
  /// The highest integer of the observer's range.
  std::int64_t quant_max() const { return observer_->quant_max(); }
  Tensor& scale() { return scale_; }                                   ///< float32
  Tensor& zero_point() { return zero_point_; }                         ///< int64
  Tensor& fake_quant_enabled_buffer() { return fake_quant_enabled_; }  ///< uint8 [1]
  Tensor& observer_enabled_buffer() { return observer_enabled_; }      ///< uint8 [1]
  /// The observer that chooses the qparams.
  UniformQuantizationObserver& observer() { return *observer_; }

 private:
  std::unique_ptr<UniformQuantizationObserver> observer_;
  Tensor scale_, zero_point_, fake_quant_enabled_, observer_enabled_;
};

}  // namespace qgrad::ao
