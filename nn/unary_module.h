/// @file
/// UnaryModule: a Module whose forward takes one tensor and returns one, the common interface
/// that lets Sequential chain layers (the role AnyModule plays in libtorch). Activations,
/// Flatten, Identity, Sequential itself and (later) Linear/Conv2d/BatchNorm derive from it.
#pragma once

#include <string>

#include "nn/module.h"

namespace qgrad::nn {

/// A module with one input tensor and one output: what Sequential holds.
class UnaryModule : public Module {
 public:
  /// A module named `name` (see Module).
  explicit UnaryModule(std::string name = "") : Module(std::move(name)) {}

  /// The module's computation.
  virtual Tensor forward(const Tensor& input) = 0;
  /// forward(input).
  Tensor operator()(const Tensor& input) { return forward(input); }
};

}  // namespace qgrad::nn
