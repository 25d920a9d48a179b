/// @file
/// Adam (Kingma & Ba) with L2 weight decay added to the gradient, amsgrad and maximize, following
/// torch 1.13's torch.optim.Adam (single-tensor path) op by op, including the order of the bias
/// corrections: denom = sqrt(v) / sqrt(1 - beta2^t) + eps; p += -(lr / (1 - beta1^t)) * m / denom.
/// A named type over AdamFamily (adam_family.h), which it shares with AdamW.
#pragma once

#include "nn/optim/adam_family.h"
#include "nn/optim/adam_family_options.h"

namespace qgrad::optim {

/// Adam's hyper-parameters (see AdamFamilyOptions); weight_decay defaults to 0 and is added to the
/// gradient.
class AdamOptions : public AdamFamilyOptions<AdamOptions> {
 public:
  /// The options' class name in messages.
  static constexpr const char* kName = "AdamOptions";
  /// The optimiser's name.
  static constexpr const char* kOptimizerName = "Adam";
  /// Adam adds the weight decay to the gradient (L2), not to the update.
  static constexpr bool kDecoupledWeightDecay = false;
  /// Options with learning rate `lr`.
  explicit AdamOptions(double lr = 1e-3) : AdamFamilyOptions(lr, /*weight_decay=*/0) {}
};

class Adam : public AdamFamily<AdamOptions> {
 public:
  /// Adam over `params` (or parameter groups) with `options`.
  using AdamFamily::AdamFamily;
};

}  // namespace qgrad::optim
