/// @file
/// Loss functions with PyTorch's semantics, differentiable with respect to the input (and, for
/// mse_loss, the target): cross_entropy (log_softmax + nll fused in one kernel, with class
/// weights, ignore_index and label smoothing), nll_loss and mse_loss.
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.h"
#include "ops/loss/reduction.h"

namespace qgrad {

/// Options of cross_entropy, with chainable setters:
///   cross_entropy(x, t, CrossEntropyOptions().weight(w).ignore_index(0).label_smoothing(0.1))
struct CrossEntropyOptions {
  Tensor weight_;                     ///< optional per-class weight [C] (not differentiated)
  std::int64_t ignore_index_ = -100;  ///< target value whose samples are left out
  std::string reduction_ = "mean";    ///< "none", "mean" or "sum"
  double label_smoothing_ = 0.0;      ///< in [0, 1]

  /// Sets the per-class weight.
  CrossEntropyOptions& weight(const Tensor& w) {
    weight_ = w;
    return *this;
  }
  /// Sets the ignored target value.
  CrossEntropyOptions& ignore_index(std::int64_t i) {
    ignore_index_ = i;
    return *this;
  }
  /// Sets the reduction.
  CrossEntropyOptions& reduction(const std::string& r) {
    reduction_ = r;
    return *this;
  }
  /// Sets the label smoothing.
  CrossEntropyOptions& label_smoothing(double s) {
    label_smoothing_ = s;
    return *this;
  }
};

/// Options of nll_loss, with chainable setters.
struct NllLossOptions {
  Tensor weight_;                     ///< optional per-class weight [C] (not differentiated)
  std::int64_t ignore_index_ = -100;  ///< target value whose samples are left out
  std::string reduction_ = "mean";    ///< "none", "mean" or "sum"

  /// Sets the per-class weight.
  NllLossOptions& weight(const Tensor& w) {
    weight_ = w;
    return *this;
  }
  /// Sets the ignored target value.
  NllLossOptions& ignore_index(std::int64_t i) {
    ignore_index_ = i;
    return *this;
  }
  /// Sets the reduction.
  NllLossOptions& reduction(const std::string& r) {
    reduction_ = r;
    return *this;
  }
};

/// input: logits [N, C] or [N, C, d1, ...] (or unbatched [C]); target: int64 class indices
/// [N] / [N, d1, ...] (or 0-d). Targets equal to ignore_index contribute nothing; "mean" divides
/// by the summed weight of the non-ignored targets (NaN when there are none, as PyTorch). With
/// label smoothing s the loss is (1 - s) * nll + s / C * sum_c(-weight[c] * log_softmax[c]).
Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyOptions& options = {});
/// input: log-probabilities of the same layouts as cross_entropy; loss = -weight[t] * input[t].
Tensor nll_loss(const Tensor& input, const Tensor& target, const NllLossOptions& options = {});
/// (input - target)^2, reduced. Shapes must be equal (a broadcast here is almost always a bug).
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");

}  // namespace qgrad
