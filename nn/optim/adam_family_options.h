/// @file
/// AdamFamilyOptions: the hyper-parameters Adam and AdamW share (lr, betas, eps, weight_decay,
/// amsgrad, maximize), written once. It is a CRTP base so that the setters chain on the named type
/// (AdamOptions(0.1).eps(1e-6) is still an AdamOptions); the named type gives its name for
/// messages (kName) and its default weight decay. items() and set_item() spell the checkpoint keys
/// ("lr", "beta1", "beta2", "eps", "weight_decay", "amsgrad", "maximize"), the same for both.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "nn/optim/optimizer.h"

namespace qgrad::optim {

/// The hyper-parameters Adam and AdamW share, with chainable setters returning `Derived`.
template <class Derived>
class AdamFamilyOptions : public OptimizerOptions {
 public:
  /// Sets the learning rate.
  Derived& lr(double v) {
    lr_ = v;
    return self();
  }
  /// Sets (beta1, beta2), the decay rates of the moment estimates.
  Derived& betas(std::pair<double, double> v) {
    betas_ = v;
    return self();
  }
  /// Sets eps, added to the denominator.
  Derived& eps(double v) {
    eps_ = v;
    return self();
  }
  /// Sets the weight decay.
  Derived& weight_decay(double v) {
    weight_decay_ = v;
    return self();
  }
  /// Sets whether the AMSGrad variant is used.
  Derived& amsgrad(bool v) {
    amsgrad_ = v;
    return self();
  }
  /// Sets whether the objective is maximised.
  Derived& maximize(bool v) {
    maximize_ = v;
    return self();
  }
  /// The learning rate.
  double lr() const { return lr_; }
  /// (beta1, beta2).
  std::pair<double, double> betas() const { return betas_; }
  /// eps.
  double eps() const { return eps_; }
  /// The weight decay.
  double weight_decay() const { return weight_decay_; }
  /// True for AMSGrad.
  bool amsgrad() const { return amsgrad_; }
  /// True when maximising.
  bool maximize() const { return maximize_; }

  /// A copy of these options.
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
  /// The learning rate.
  double get_lr() const override { return lr_; }
  /// Sets the learning rate.
  void set_lr(double lr) override { lr_ = lr; }

  /// The hyper-parameters as (name, value).
  std::vector<std::pair<std::string, double>> items() const override {
    return {{"lr", lr_},
            {"beta1", betas_.first},
            {"beta2", betas_.second},
            {"eps", eps_},
            {"weight_decay", weight_decay_},
            {"amsgrad", amsgrad_ ? 1.0 : 0.0},
            {"maximize", maximize_ ? 1.0 : 0.0}};
  }

  /// Sets one hyper-parameter by name; ValueError for an unknown name.
  void set_item(const std::string& name, double value) override {
    if (name == "lr")
      lr_ = value;
    else if (name == "beta1")
      betas_.first = value;
    else if (name == "beta2")
      betas_.second = value;
    else if (name == "eps")
      eps_ = value;
    else if (name == "weight_decay")
      weight_decay_ = value;
    else if (name == "amsgrad")
      amsgrad_ = value != 0;
    else if (name == "maximize")
      maximize_ = value != 0;
    else
      throw ValueError(std::string(Derived::kName) + ": unknown option '" + name + "'");
  }

 protected:
  /// Options with learning rate `lr` and weight decay `weight_decay` (the derived class's default).
  AdamFamilyOptions(double lr, double weight_decay) : lr_(lr), weight_decay_(weight_decay) {}

 private:
  Derived& self() { return static_cast<Derived&>(*this); }

  double lr_;
  std::pair<double, double> betas_{0.9, 0.999};
  double eps_ = 1e-8;
  double weight_decay_;
  bool amsgrad_ = false;
  bool maximize_ = false;
};

}  // namespace qgrad::optim
