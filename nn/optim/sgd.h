/// @file
/// SGD with momentum, dampening, Nesterov momentum, weight decay and maximize, following
/// torch 1.13's update order exactly (torch.optim.SGD, single-tensor path):
///   d = grad (negated if maximize); d += weight_decay * p
///   buf = d on the first step, else buf = momentum * buf + (1 - dampening) * d
///   d = nesterov ? d + momentum * buf : buf;   p += -lr * d
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/optim/optimizer.h"

namespace qgrad::optim {

/// SGD's hyper-parameters, with chainable setters (torch.optim.SGD's defaults).
class SGDOptions : public OptimizerOptions {
 public:
  /// Options with learning rate `lr`.
  explicit SGDOptions(double lr) : lr_(lr) {}

  /// Sets the learning rate.
  SGDOptions& lr(double v) {
    lr_ = v;
    return *this;
  }
  /// Sets the momentum factor.
  SGDOptions& momentum(double v) {
    momentum_ = v;
    return *this;
  }
  /// Sets the dampening of the momentum.
  SGDOptions& dampening(double v) {
    dampening_ = v;
    return *this;
  }
  /// Sets the weight decay (L2, added to the gradient).
  SGDOptions& weight_decay(double v) {
    weight_decay_ = v;
    return *this;
  }
  /// Sets whether Nesterov momentum is used.
  SGDOptions& nesterov(bool v) {
    nesterov_ = v;
    return *this;
  }
  /// Sets whether the objective is maximised.
  SGDOptions& maximize(bool v) {
    maximize_ = v;
    return *this;
  }
  /// The learning rate.
  double lr() const { return lr_; }
  /// The momentum factor.
  double momentum() const { return momentum_; }
  /// The dampening.
  double dampening() const { return dampening_; }
  /// The weight decay.
  double weight_decay() const { return weight_decay_; }
  /// True for Nesterov momentum.
  bool nesterov() const { return nesterov_; }
  /// True when maximising.
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override;
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  std::vector<std::pair<std::string, double>> items() const override;
  void set_item(const std::string& name, double value) override;

 private:
  double lr_;
  double momentum_ = 0;
  double dampening_ = 0;
  double weight_decay_ = 0;
  bool nesterov_ = false;
  bool maximize_ = false;
};

/// Stochastic gradient descent with optional momentum, as torch.optim.SGD.
class SGD : public Optimizer {
 public:
  /// SGD over `params` with `options`.
  SGD(std::vector<Tensor> params, const SGDOptions& options);
  /// SGD over parameter groups; `defaults` fills the groups without options.
  SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults);

  void step() override;
  std::string name() const override { return "SGD"; }

 protected:
  void check_options(const OptimizerOptions& options) const override;
  std::vector<std::string> state_keys() const override { return {"momentum_buffer"}; }
};

}  // namespace qgrad::optim
