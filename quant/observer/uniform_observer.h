/// @file
/// The base of torch.ao's min/max observers (UniformQuantizationObserverBase): options, the
/// integer range, the eps buffer and the rule that turns running min/max statistics into a scale
/// and zero point (_calculate_qparams), reproduced in float32 arithmetic:
///   min_neg = min(min, 0), max_pos = max(max, 0)
///   symmetric: scale = max(max(-min_neg, max_pos) / ((qmax - qmin) / 2), eps),
///              zero_point = 0 (quint8: 128, or (qmin + qmax) // 2 for a user range)
///   affine:    scale = max((max_pos - min_neg) / (qmax - qmin), eps),
///              zero_point = clamp(qmin - rne(min_neg / scale), qmin, qmax)
///   float qparams (per-channel): scale = (max - min) / (qmax - qmin) (1 where <= eps),
///              zero_point = -min / scale (float)
/// Never-observed statistics give scale [1.0] and zero_point [0]. eps defaults to float32's
/// epsilon 2^-23. Zero points are returned as int64 (PyTorch returns int32 for affine schemes).
/// With a process group (quant/synced_statistics.h) every observer reduces each batch's
/// statistics over the ranks before updating its running state, so the ranks hold the bits one
/// process observing the global batch would.
#pragma once

#include <cstdint>
#include <optional>

#include "core/tensor.h"
#include "quant/observer/quant_dtype.h"
#include "quant/synced_statistics.h"

namespace qgrad::ao {

inline constexpr double kFloat32Eps = 1.1920928955078125e-07;  ///< 2^-23

/// An observer's configuration (chainable setters); the range and scheme rules are
/// calculate_qmin_qmax's and the file comment's.
struct ObserverOptions {
  QuantDType dtype_ = QuantDType::QUInt8;       ///< the quantized dtype
  QScheme qscheme_ = QScheme::PerTensorAffine;  ///< the quantization scheme
  bool reduce_range_ = false;  ///< halve the integer range (PyTorch's reduce_range)
  /// The low end of a user integer range (both ends or neither; empty: the dtype's range).
  std::optional<std::int64_t> quant_min_, quant_max_;  ///< the high end of a user range
  double eps_ = kFloat32Eps;                           ///< the smallest scale (finite, > 0)

  /// Sets dtype_.
  ObserverOptions& dtype(QuantDType d) {
    dtype_ = d;
    return *this;
  }
  /// Sets qscheme_.
  ObserverOptions& qscheme(QScheme q) {
    qscheme_ = q;
    return *this;
  }
  /// Sets reduce_range_.
  ObserverOptions& reduce_range(bool r) {
    reduce_range_ = r;
    return *this;
  }
  /// Sets the user range.
  ObserverOptions& quant_range(std::int64_t qmin, std::int64_t qmax) {
    quant_min_ = qmin;
    quant_max_ = qmax;
    return *this;
  }
  /// Sets eps_.
  ObserverOptions& eps(double e) {
    eps_ = e;
    return *this;
  }
};

/// A scale and zero point per tensor ([1]) or per channel ([C]).
struct QParams {
  Tensor scale;       ///< float32 [n]
  Tensor zero_point;  ///< int64 [n] (float32 for per_channel_affine_float_qparams)
};

/// The base of torch.ao's min/max observers (UniformQuantizationObserverBase): options, integer
/// range, eps and the qparams rule (see the file comment).
class UniformQuantizationObserver : public quant::SyncedStatistics {
 public:
  virtual ~UniformQuantizationObserver() = default;

  /// The options it was built with.
  const ObserverOptions& options() const { return options_; }
  /// The lowest integer of the range.
  std::int64_t quant_min() const { return range_.quant_min; }
  /// The highest integer of the range.
  std::int64_t quant_max() const { return range_.quant_max; }
  /// The eps buffer (float32 [1]).
  Tensor& eps() { return eps_; }
  /// The eps buffer (float32 [1]).
  const Tensor& eps() const { return eps_; }

  /// Records statistics of x (any floating dtype; converted to float32); returns x.
  virtual Tensor forward(const Tensor& x) = 0;
  /// The scale and zero point of the running statistics (see the file comment). ValueError when
  /// the statistics are NaN, infinite or min > max after data.
  virtual QParams calculate_qparams() const = 0;
  virtual void reset_min_max_vals() = 0;  ///< forgets the running statistics

  /// The running statistics, float32: 0-d per tensor (+inf / -inf before any data), [C] per
  /// channel ([0] before the first batch). Here on the base so code holding any observer can
  /// read them; the concrete observers update them.
  Tensor& min_val() { return min_val_; }
  /// The running max (see min_val()).
  Tensor& max_val() { return max_val_; }
  /// The running min (see min_val()).
  const Tensor& min_val() const { return min_val_; }
  /// The running max (see min_val()).
  const Tensor& max_val() const { return max_val_; }

  /// _calculate_qparams for given statistics (0-d for per-tensor, 1-D per channel). Off the CPU
  /// the qparams are computed, and the statistics checked, on their device (the
  /// "observer.qparams" kernel; an unusable statistic is thrown at the host's next wait).
  QParams calculate_qparams_from(const Tensor& min_val, const Tensor& max_val) const;

 protected:
  /// `name` is used in error messages; `per_channel` says which schemes the observer accepts.
  UniformQuantizationObserver(const char* name, const ObserverOptions& options, bool per_channel);
  const char* name_;  ///< the observer's name in error messages
  /// The running min (see min_val()); both are set by the concrete observers' constructors.
  Tensor min_val_, max_val_;  ///< the running max
  /// forward() where the statistics are device tensors (off the CPU): the batch's min / max
  /// along `axis` (-1: the whole tensor) and the running statistics' update (averaging < 0:
  /// MinMaxObserver's torch.min / torch.max; else the moving average) through the
  /// "observer.aminmax_into" and "observer.running_stats" kernels, nothing read on the host.
  void observe_on_device(const Tensor& x, std::int64_t axis, float averaging);

 private:
  ObserverOptions options_;
  QuantRange range_;
  Tensor eps_;
  QParams calculate_qparams_on_device(const Tensor& min_val, const Tensor& max_val) const;
};

}  // namespace qgrad::ao
