// The per-parameter Adam/AdamW update shared by optim::Adam and optim::AdamW: state
// initialisation (step, exp_avg, exp_avg_sq, max_exp_avg_sq) and the fused update (the
// "adam_update" kernel of the parameter's device, optim_elem.h), which follows torch 1.13's
// _single_tensor_adam / _single_tensor_adamw op by op.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "nn/optim/optim_kernels.h"
#include "nn/ordered_dict.h"

namespace qgrad::optim {

// Hyper-parameter (de)serialisation and validation shared by AdamOptions and AdamWOptions.
template <typename Options>
std::vector<std::pair<std::string, double>> adam_option_items(const Options& o) {
  return {{"lr", o.lr()},
          {"beta1", o.betas().first},
          {"beta2", o.betas().second},
          {"eps", o.eps()},
          {"weight_decay", o.weight_decay()},
          {"amsgrad", o.amsgrad() ? 1.0 : 0.0},
          {"maximize", o.maximize() ? 1.0 : 0.0}};
}

template <typename Options>
void adam_set_option_item(Options& o, const char* what, const std::string& name, double value) {
  if (name == "lr")
    o.lr(value);
  else if (name == "beta1")
    o.betas({value, o.betas().second});
  else if (name == "beta2")
    o.betas({o.betas().first, value});
  else if (name == "eps")
    o.eps(value);
  else if (name == "weight_decay")
    o.weight_decay(value);
  else if (name == "amsgrad")
    o.amsgrad(value != 0);
  else if (name == "maximize")
    o.maximize(value != 0);
  else
    throw ValueError(std::string(what) + ": unknown option '" + name + "'");
}

template <typename Options>
void adam_check_options(const Options& o, const char* op) {
  QGRAD_CHECK(o.lr() >= 0, ValueError, op, ": invalid learning rate ", o.lr());
  QGRAD_CHECK(o.eps() >= 0, ValueError, op, ": invalid epsilon value ", o.eps());
  QGRAD_CHECK(o.betas().first >= 0 && o.betas().first < 1, ValueError, op,
              ": invalid beta parameter at index 0: ", o.betas().first);
  QGRAD_CHECK(o.betas().second >= 0 && o.betas().second < 1, ValueError, op,
              ": invalid beta parameter at index 1: ", o.betas().second);
  QGRAD_CHECK(o.weight_decay() >= 0, ValueError, op, ": invalid weight_decay value ",
              o.weight_decay());
}

template <typename Options>
AdamStepConfig adam_config(const Options& o, bool decoupled) {
  AdamStepConfig c;
  c.lr = o.lr();
  c.beta1 = o.betas().first;
  c.beta2 = o.betas().second;
  c.eps = o.eps();
  c.weight_decay = o.weight_decay();
  c.amsgrad = o.amsgrad();
  c.maximize = o.maximize();
  c.decoupled_weight_decay = decoupled;
  return c;
}

// Updates contiguous `p` in place from contiguous `g`, creating missing entries in `state`.
void adam_update(const Tensor& p, const Tensor& g, TensorDict& state, const AdamStepConfig& cfg);

}  // namespace qgrad::optim
