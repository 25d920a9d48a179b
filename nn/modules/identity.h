// Identity: returns its input unchanged (a placeholder, e.g. for a removed layer or an
// optional shortcut), as torch.nn.Identity.
#pragma once

#include "nn/unary_module.h"

namespace qgrad::nn {

class Identity : public UnaryModule {
 public:
  Identity() : UnaryModule("Identity") {}
  Tensor forward(const Tensor& input) override { return input; }
};

}  // namespace qgrad::nn
