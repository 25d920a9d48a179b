/// @file
/// AdamFamily: the one implementation of Adam and AdamW, which differ only in how weight decay
/// enters (added to the gradient, or decoupled: p *= 1 - lr * weight_decay before the moment
/// update) and in their names. It validates options, keeps the per-parameter state (step,
/// exp_avg, exp_avg_sq, max_exp_avg_sq with amsgrad) and runs the fused "adam_update" kernel
/// (optim_elem.h), following torch 1.13's _single_tensor_adam / _single_tensor_adamw op by op.
/// Options is the named options type, which also names its optimiser (kOptimizerName) and says
/// whether its weight decay is decoupled (kDecoupledWeightDecay); Adam and AdamW (adam.h,
/// adamw.h) are thin named types over AdamFamily<AdamOptions> and AdamFamily<AdamWOptions>, both
/// instantiated once in adam_family.cpp.
#pragma once

#include <string>
#include <vector>

#include "nn/optim/optimizer.h"

namespace qgrad::optim {

/// Adam and AdamW, one implementation: `Options` chooses L2 or decoupled weight decay.
template <class Options>
class AdamFamily : public Optimizer {
 public:
  /// An optimiser over `params` with `options`.
  AdamFamily(std::vector<Tensor> params, const Options& options = Options());
  /// An optimiser over parameter groups; `defaults` fills the groups without options.
  AdamFamily(std::vector<ParamGroup> groups, const Options& defaults);

  /// One Adam (or AdamW) update of every parameter that has a gradient.
  void step() override;
  /// "Adam" or "AdamW".
  std::string name() const override { return Options::kOptimizerName; }

 protected:
  /// Throws ValueError unless `options` are `Options` with valid values.
  void check_options(const OptimizerOptions& options) const override;
  /// The per-parameter state entries: step, the moment estimates and AMSGrad's maximum.
  std::vector<std::string> state_keys() const override {
    return {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  }
};

}  // namespace qgrad::optim
