// Adam (Kingma & Ba) with L2 weight decay added to the gradient, amsgrad and maximize, following
// torch 1.13's torch.optim.Adam (single-tensor path) op by op, including the order of the bias
// corrections: denom = sqrt(v) / sqrt(1 - beta2^t) + eps; p += -(lr / (1 - beta1^t)) * m / denom.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/optim/optimizer.h"

namespace qgrad::optim {

class AdamOptions : public OptimizerOptions {
 public:
  explicit AdamOptions(double lr = 1e-3) : lr_(lr) {}

  AdamOptions& lr(double v) {
    lr_ = v;
    return *this;
  }
  AdamOptions& betas(std::pair<double, double> v) {
    betas_ = v;
    return *this;
  }
  AdamOptions& eps(double v) {
    eps_ = v;
    return *this;
  }
  AdamOptions& weight_decay(double v) {
    weight_decay_ = v;
    return *this;
  }
  AdamOptions& amsgrad(bool v) {
    amsgrad_ = v;
    return *this;
  }
  AdamOptions& maximize(bool v) {
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
  double weight_decay_ = 0;
  bool amsgrad_ = false;
  bool maximize_ = false;
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& options = AdamOptions());
  Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults);

  void step() override;
  std::string name() const override { return "Adam"; }

 protected:
  void check_options(const OptimizerOptions& options) const override;
  std::vector<std::string> state_keys() const override {
    return {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  }
};

}  // namespace qgrad::optim
