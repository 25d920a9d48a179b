// Add: the elementwise sum of two tensors as a module (forward(a, b)), so that residual
// additions are visible in the module tree and can be swapped for a quantized add later.
#pragma once

#include "nn/module.h"

namespace qgrad::nn {

class Add : public Module {
 public:
  Add() : Module("Add") {}
  // a + b with broadcasting (ops/binary add).
  Tensor forward(const Tensor& a, const Tensor& b);
  Tensor operator()(const Tensor& a, const Tensor& b) { return forward(a, b); }
};

}  // namespace qgrad::nn
