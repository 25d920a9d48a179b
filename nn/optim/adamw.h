// AdamW (Loshchilov & Hutter): Adam with decoupled weight decay p *= 1 - lr * weight_decay
// applied before the moment update, following torch 1.13's torch.optim.AdamW (default
// weight_decay 1e-2), amsgrad and maximize included. Shares options and step with Adam
// (nn/optim/adam.h).
#pragma once

#include <string>
#include <vector>

#include "nn/optim/adam.h"

namespace qgrad::optim {

class AdamWOptions : public AdamOptionsBase<AdamWOptions> {
 public:
  static constexpr const char* kTypeName = "AdamWOptions";
  explicit AdamWOptions(double lr = 1e-3) : AdamOptionsBase(lr, /*weight_decay=*/1e-2) {}
};

class AdamW : public AdamFamily<AdamWOptions, /*kDecoupled=*/true> {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& options = AdamWOptions());
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults);

  std::string name() const override { return "AdamW"; }
};

}  // namespace qgrad::optim
