/// @file
/// AdamW (Loshchilov & Hutter): Adam with decoupled weight decay p *= 1 - lr * weight_decay
/// applied before the moment update, following torch 1.13's torch.optim.AdamW (default
/// weight_decay 1e-2), amsgrad and maximize included. A named type over AdamFamily
/// (adam_family.h), which it shares with Adam.
#pragma once

#include "nn/optim/adam_family.h"
#include "nn/optim/adam_family_options.h"

namespace qgrad::optim {

/// AdamW's hyper-parameters (see AdamFamilyOptions); weight_decay defaults to 1e-2 and is
/// decoupled.
class AdamWOptions : public AdamFamilyOptions<AdamWOptions> {
 public:
  /// The options' class name in messages.
  static constexpr const char* kName = "AdamWOptions";
  /// The optimiser's name.
  static constexpr const char* kOptimizerName = "AdamW";
  /// AdamW decays the weights directly (decoupled), not through the gradient.
  static constexpr bool kDecoupledWeightDecay = true;
  /// Options with learning rate `lr`.
  explicit AdamWOptions(double lr = 1e-3) : AdamFamilyOptions(lr, /*weight_decay=*/1e-2) {}
};

class AdamW : public AdamFamily<AdamWOptions> {
 public:
  /// AdamW over `params` (or parameter groups) with `options`.
  using AdamFamily::AdamFamily;
};

}  // namespace qgrad::optim
