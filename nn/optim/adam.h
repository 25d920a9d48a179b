// Adam (Kingma & Ba) with L2 weight decay added to the gradient, amsgrad and maximize, following
// torch 1.13's torch.optim.Adam (single-tensor path) op by op, including the order of the bias
// corrections: denom = sqrt(v) / sqrt(1 - beta2^t) + eps; p += -(lr / (1 - beta1^t)) * m / denom.
// Also the options and optimizer templates that Adam and AdamW (nn/optim/adamw.h) share: they
// differ only in the default weight decay and in how weight decay is applied.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/optim/optimizer.h"

namespace qgrad::optim {

// Hyper-parameters of the Adam family; Derived (AdamOptions or AdamWOptions) is what the
// chaining setters return and what clone() copies.
template <typename Derived>
class AdamOptionsBase : public OptimizerOptions {
 public:
  Derived& lr(double v) {
    lr_ = v;
    return self();
  }
  Derived& betas(std::pair<double, double> v) {
    betas_ = v;
    return self();
  }
  Derived& eps(double v) {
    eps_ = v;
    return self();
  }
  Derived& weight_decay(double v) {
    weight_decay_ = v;
    return self();
  }
  Derived& amsgrad(bool v) {
    amsgrad_ = v;
    return self();
  }
  Derived& maximize(bool v) {
    maximize_ = v;
    return self();
  }
  double lr() const { return lr_; }
  std::pair<double, double> betas() const { return betas_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  bool amsgrad() const { return amsgrad_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override;
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  std::vector<std::pair<std::string, double>> items() const override;
  void set_item(const std::string& name, double value) override;

 protected:
  AdamOptionsBase(double lr, double weight_decay) : lr_(lr), weight_decay_(weight_decay) {}

 private:
  Derived& self() { return static_cast<Derived&>(*this); }

  double lr_;
  std::pair<double, double> betas_{0.9, 0.999};
  double eps_ = 1e-8;
  double weight_decay_;
  bool amsgrad_ = false;
  bool maximize_ = false;
};

class AdamOptions : public AdamOptionsBase<AdamOptions> {
 public:
  static constexpr const char* kTypeName = "AdamOptions";
  explicit AdamOptions(double lr = 1e-3) : AdamOptionsBase(lr, /*weight_decay=*/0) {}
};

// The Adam step over parameter groups of `Options`; kDecoupled selects AdamW's weight decay
// (p *= 1 - lr * weight_decay) instead of L2 decay added to the gradient.
template <typename Options, bool kDecoupled>
class AdamFamily : public Optimizer {
 public:
  void step() override;

 protected:
  // `op` names the optimizer in error messages.
  AdamFamily(std::vector<ParamGroup> groups, const Options& defaults, const char* op);
  void check_options(const OptimizerOptions& options) const override;
  std::vector<std::string> state_keys() const override {
    return {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  }

 private:
  const char* op_;
};

class Adam : public AdamFamily<AdamOptions, /*kDecoupled=*/false> {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& options = AdamOptions());
  Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults);

  std::string name() const override { return "Adam"; }
};

}  // namespace qgrad::optim
