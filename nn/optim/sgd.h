// SGD with momentum, dampening, Nesterov momentum, weight decay and maximize, following
// torch 1.13's update order exactly (torch.optim.SGD, single-tensor path):
//   d = grad (negated if maximize); d += weight_decay * p
//   buf = d on the first step, else buf = momentum * buf + (1 - dampening) * d
//   d = nesterov ? d + momentum * buf : buf;   p += -lr * d
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/optim/optimizer.h"

namespace qgrad::optim {

class SGDOptions : public OptimizerOptions {
 public:
  explicit SGDOptions(double lr) : lr_(lr) {}

  SGDOptions& lr(double v) {
    lr_ = v;
    return *this;
  }
  SGDOptions& momentum(double v) {
    momentum_ = v;
    return *this;
  }
  SGDOptions& dampening(double v) {
    dampening_ = v;
    return *this;
  }
  SGDOptions& weight_decay(double v) {
    weight_decay_ = v;
    return *this;
  }
  SGDOptions& nesterov(bool v) {
    nesterov_ = v;
    return *this;
  }
  SGDOptions& maximize(bool v) {
    maximize_ = v;
    return *this;
  }
  double lr() const { return lr_; }
  double momentum() const { return momentum_; }
  double dampening() const { return dampening_; }
  double weight_decay() const { return weight_decay_; }
  bool nesterov() const { return nesterov_; }
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

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& options);
  SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults);

  void step() override;
  std::string name() const override { return "SGD"; }

 protected:
  void check_options(const OptimizerOptions& options) const override;
  std::vector<std::string> state_keys() const override { return {"momentum_buffer"}; }
};

}  // namespace qgrad::optim
