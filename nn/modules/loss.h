/// @file
/// Loss modules, as torch.nn.CrossEntropyLoss and torch.nn.MSELoss: forward(input, target)
/// wrappers over ops/loss that keep the loss settings. CrossEntropyLoss registers its optional
/// class weight as the buffer "weight", as PyTorch's _WeightedLoss does, so it appears in
/// state_dict only when given and moves with to(device).
#pragma once

#include <string>

#include "nn/module.h"
#include "ops/loss/loss.h"

namespace qgrad::nn {

/// Cross-entropy between logits and class indices, as torch.nn.CrossEntropyLoss (see
/// cross_entropy).
class CrossEntropyLoss : public Module {
 public:
  /// Options as the functional form (qgrad::CrossEntropyOptions: weight, ignore_index,
  /// reduction, label_smoothing); invalid reduction, label_smoothing outside [0, 1] or a weight
  /// that is not 1-D floating throw ValueError / ShapeError / DTypeError here.
  explicit CrossEntropyLoss(const CrossEntropyOptions& options = {});
  /// logits [N, C] (or [N, C, d...] / [C]) and int64 class indices -> loss.
  Tensor forward(const Tensor& input, const Tensor& target);
  /// forward(input, target).
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  /// The options.
  const CrossEntropyOptions& options() const { return options_; }

 private:
  CrossEntropyOptions options_;
};

/// Mean squared error, as torch.nn.MSELoss.
class MSELoss : public Module {
 public:
  /// reduction: "none", "mean" or "sum" (ValueError otherwise).
  explicit MSELoss(std::string reduction = "mean");
  /// (input - target)^2, reduced.
  Tensor forward(const Tensor& input, const Tensor& target);
  /// forward(input, target).
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  /// "none", "mean" or "sum".
  const std::string& reduction() const { return reduction_; }

 private:
  std::string reduction_;
};

}  // namespace qgrad::nn
