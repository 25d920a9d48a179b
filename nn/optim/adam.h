// Adam (Kingma & Ba) with L2 weight decay added to the gradient, amsgrad and maximize, following
// torch 1.13's torch.optim.Adam (single-tensor path) op by op, including the order of the bias
// corrections: denom = sqrt(v) / sqrt(1 - beta2^t) + eps; p += -(lr / (1 - beta1^t)) * m / denom.
// A named type over AdamFamily (adam_family.h), which it shares with AdamW.
#pragma once

#include "nn/optim/adam_family.h"
#include "nn/optim/adam_family_options.h"

namespace qgrad::optim {

class AdamOptions : public AdamFamilyOptions<AdamOptions> {
 public:
  static constexpr const char* kName = "AdamOptions";
  static constexpr const char* kOptimizerName = "Adam";
  static constexpr bool kDecoupledWeightDecay = false;
  explicit AdamOptions(double lr = 1e-3) : AdamFamilyOptions(lr, /*weight_decay=*/0) {}
};

class Adam : public AdamFamily<AdamOptions> {
 public:
  using AdamFamily::AdamFamily;
};

}  // namespace qgrad::optim
