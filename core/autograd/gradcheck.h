/// @file
/// gradcheck: compares the analytic gradients of a function (from backward()) with central finite
/// differences, in float64, as torch.autograd.gradcheck. Used by the test of every
/// differentiable op.
#pragma once

#include <functional>
#include <string>

#include "core/tensor.h"

namespace qgrad {

/// Tolerances and seed of gradcheck.
struct GradcheckOptions {
  double eps = 1e-6;       ///< finite-difference step
  double atol = 1e-5;      ///< absolute tolerance
  double rtol = 1e-3;      ///< relative tolerance
  std::uint64_t seed = 0;  ///< for the random output weights
};

/// The outcome of gradcheck.
struct GradcheckResult {
  bool ok = true;       ///< true when every gradient matched
  std::string message;  ///< the first mismatch: input, element, analytic vs numeric
};

/// `fn` maps the inputs to one output tensor. Inputs must be float64 leaves; those with
/// requires_grad are checked. The scalar checked is sum(fn(inputs) * w) with a fixed random w.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, GradcheckOptions opts = {});

}  // namespace qgrad
