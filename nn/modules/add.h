/// @file
/// Add: the elementwise sum of two tensors as a module (forward(a, b)), so that residual
/// additions are visible in the module tree and can be swapped for a quantized add later.
#pragma once

#include <string>
#include <utility>

#include "nn/module.h"

namespace qgrad::nn {

/// Adds two tensors, as a module so that quantization can replace it.
class Add : public Module {
 public:
  Add() : Module("Add") {}
  /// a + b with broadcasting (ops/binary add).
  /// Virtual so that a quantized add (an input quantizer on each operand) can replace it.
  virtual Tensor forward(const Tensor& a, const Tensor& b);
  /// forward(a, b).
  Tensor operator()(const Tensor& a, const Tensor& b) { return forward(a, b); }

 protected:
  /// For subclasses that print under their own name (QuantAdd).
  explicit Add(std::string name) : Module(std::move(name)) {}
};

}  // namespace qgrad::nn
