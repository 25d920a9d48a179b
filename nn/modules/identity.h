/// @file
/// Identity: returns its input unchanged (a placeholder, e.g. for a removed layer or an
/// optional shortcut), as torch.nn.Identity.
#pragma once

#include "nn/unary_module.h"

namespace qgrad::nn {

/// Returns its input unchanged, as torch.nn.Identity.
class Identity : public UnaryModule {
 public:
  Identity() : UnaryModule("Identity") {}
  Tensor forward(const Tensor& input) override { return input; }
};

}  // namespace qgrad::nn
