// Optimizer: the base of qgrad's optimisers, as torch::optim::Optimizer. Parameters live in
// ParamGroups, each with its own hyper-parameters (an OptimizerOptions subclass: lr, momentum,
// betas, ...; groups given without options get a copy of the defaults). Per-parameter state
// (momentum buffers, moments, step counts) is kept by parameter identity. state_dict() and
// load_state_dict() turn groups and state into a flat name -> Tensor map so it can go into a
// safetensors checkpoint:
//   "param_groups.<g>.<option>"  0-d float64 (lr, momentum, beta1, ..., initial_lr if set)
//   "param_groups.<g>.params"    int64 [n]: the global indices of the group's parameters
//   "state.<i>.<name>"           parameter i's state tensors (i counts across groups in order)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "nn/ordered_dict.h"

namespace qgrad::optim {

// Hyper-parameters of one parameter group.
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  // All hyper-parameters as (name, value), booleans as 0/1, for checkpoints.
  virtual std::vector<std::pair<std::string, double>> items() const = 0;
  // Sets one hyper-parameter by name; throws ValueError for a name this optimiser lacks.
  virtual void set_item(const std::string& name, double value) = 0;
};

class ParamGroup {
 public:
  explicit ParamGroup(std::vector<Tensor> params);
  ParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options);
  ParamGroup(const ParamGroup& other);
  ParamGroup& operator=(const ParamGroup& other);
  ParamGroup(ParamGroup&&) = default;
  ParamGroup& operator=(ParamGroup&&) = default;

  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }
  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }

  // The learning rate a scheduler started from (PyTorch's group['initial_lr']); set by the
  // first LR scheduler attached to the optimiser.
  std::optional<double> initial_lr;

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Adds a group (options default to a copy of the optimiser's defaults). Parameters must be
  // defined floating leaf tensors and appear in only one group.
  void add_param_group(ParamGroup group);
  // Sets every parameter's gradient to undefined.
  void zero_grad();
  // One update of every parameter that has a gradient.
  virtual void step() = 0;
  // The optimiser's name for messages ("SGD", "Adam", "AdamW").
  virtual std::string name() const = 0;

  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  const OptimizerOptions& defaults() const { return *defaults_; }
  // All parameters, group by group.
  std::vector<Tensor> parameters() const;

  // The state of one parameter (null when it has none yet, e.g. before its first step).
  const TensorDict* state(const Tensor& param) const;

  TensorDict state_dict() const;
  // Restores group hyper-parameters and per-parameter state saved by state_dict() of an
  // optimiser of the same kind over parameters of the same shapes. Everything is checked first
  // and all problems are reported in one ValueError; nothing changes when it throws. Floating
  // state is cast to its parameter's dtype and device.
  void load_state_dict(const TensorDict& dict);

 protected:
  explicit Optimizer(std::unique_ptr<OptimizerOptions> defaults);
  // Throws ValueError when `options` is not this optimiser's kind or holds invalid values.
  virtual void check_options(const OptimizerOptions& options) const = 0;
  // The state entry names a parameter may have ("momentum_buffer", "exp_avg", "step", ...).
  virtual std::vector<std::string> state_keys() const = 0;
  // The state of `param`, created empty on first use.
  TensorDict& state_for(const Tensor& param);
  // Runs fn(p, g) with contiguous CPU views of `param` and its gradient (same dtype and shape,
  // checked), writes the result back when `param` itself is not contiguous, and bumps its
  // version counter. The kernels of step() write through p's raw data.
  void update_param(const Tensor& param,
                    const std::function<void(const Tensor& p, const Tensor& g)>& fn) const;

 private:
  std::vector<ParamGroup> groups_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::unordered_map<const TensorImpl*, TensorDict> state_;
};

}  // namespace qgrad::optim
