/// @file
/// torch.ao per-tensor min/max observers as plain state classes (the statistics are float32 0-d
/// tensors so a module can register them as buffers):
///   MinMaxObserver: running min/max over all batches (initial +inf / -inf).
///   MovingAverageMinMaxObserver: the first batch sets min/max; later batches update
///     m = m + c * (batch_m - m) in float32 (PyTorch's form, not (1-c)*m + c*batch_m).
/// Empty inputs are ignored. NaN in a batch makes the statistics NaN (as PyTorch) and
/// calculate_qparams then throws ValueError.
#pragma once

#include "quant/observer/uniform_observer.h"

namespace qgrad::ao {

/// torch.ao's MinMaxObserver: running min/max over all batches (see the file comment).
class MinMaxObserver : public UniformQuantizationObserver {
 public:
  /// Default: quint8, per_tensor_affine.
  explicit MinMaxObserver(const ObserverOptions& options = ObserverOptions());

  /// Folds x's min/max into the running statistics; returns x.
  Tensor forward(const Tensor& x) override;
  /// The qparams of the running min/max (ValueError when they are NaN or infinite after data).
  QParams calculate_qparams() const override;
  void reset_min_max_vals() override;  ///< back to +inf / -inf (nothing observed)

 protected:
  /// For subclasses: name is used in error messages.
  MinMaxObserver(const char* name, const ObserverOptions& options);
  /// The batch (min, max) of x, after PyTorch's conversion of x to float32; with a process
  /// group, of the global batch.
  void batch_min_max(const char* name, const Tensor& x, float& mn, float& mx) const;
};

/// torch.ao's MovingAverageMinMaxObserver: the first batch sets min/max, later ones move them
/// by averaging_constant (see the file comment).
class MovingAverageMinMaxObserver : public MinMaxObserver {
 public:
  /// averaging_constant in [0, 1] (ValueError).
  explicit MovingAverageMinMaxObserver(double averaging_constant = 0.01,
                                       const ObserverOptions& options = ObserverOptions());
  /// Updates the moving averages with x's min/max; returns x.
  Tensor forward(const Tensor& x) override;
  /// The weight c of a new batch.
  double averaging_constant() const { return averaging_constant_; }

 private:
  double averaging_constant_;
};

}  // namespace qgrad::ao
