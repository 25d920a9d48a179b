// AdamW (Loshchilov & Hutter): Adam with decoupled weight decay p *= 1 - lr * weight_decay
// applied before the moment update, following torch 1.13's torch.optim.AdamW (default
// weight_decay 1e-2), amsgrad and maximize included.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/optim/optimizer.h"

namespace qgrad::optim {

class AdamWOptions : public OptimizerOptions {
 public:
  explicit AdamWOptions(double lr = 1e-3) : lr_(lr) {}

  AdamWOptions& lr(double v) {
    lr_ = v;
    return *this;
  }
  AdamWOptions& betas(std::pair<double, double> v) {
    betas_ = v;
    return *this;
  }
  AdamWOptions& eps(double v) {
    eps_ = v;
    return *this;
  }
  AdamWOptions& weight_decay(double v) {
    weight_decay_ = v;
    return *this;
  }
  AdamWOptions& amsgrad(bool v) {
    amsgrad_ = v;
    return *this;
  }
  AdamWOptions& maximize(bool v) {
    maximize_ = v;
    return *this;
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

 private:
  double lr_;
  std::pair<double, double> betas_{0.9, 0.999};
  double eps_ = 1e-8;
  double weight_decay_ = 1e-2;
  bool amsgrad_ = false;
  bool maximize_ = false;
};

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& options = AdamWOptions());
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults);

  void step() override;
  std::string name() const override { return "AdamW"; }

 protected:
  void check_options(const OptimizerOptions& options) const override;
  std::vector<std::string> state_keys() const override {
    return {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  }
};

}  // namespace qgrad::optim
