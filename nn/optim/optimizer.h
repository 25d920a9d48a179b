/// @file
/// Optimizer: the base of qgrad's optimisers, as torch::optim::Optimizer. Parameters live in
/// ParamGroups, each with its own hyper-parameters (an OptimizerOptions subclass: lr, momentum,
/// betas, ...; groups given without options get a copy of the defaults). Per-parameter state
/// (momentum buffers, moments, step counts) is kept by parameter identity. state_dict() and
/// load_state_dict() turn groups and state into a flat name -> Tensor map so it can go into a
/// safetensors checkpoint:
///   "param_groups.<g>.<option>"  0-d float64 (lr, momentum, beta1, ..., initial_lr if set)
///   "param_groups.<g>.params"    int64 [n]: the global indices of the group's parameters
///   "state.<i>.<name>"           parameter i's state tensors (i counts across groups in order)
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

/// Hyper-parameters of one parameter group.
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  /// A copy of these options.
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  /// The learning rate.
  virtual double get_lr() const = 0;
  /// Sets the learning rate.
  virtual void set_lr(double lr) = 0;
  /// All hyper-parameters as (name, value), booleans as 0/1, for checkpoints.
  virtual std::vector<std::pair<std::string, double>> items() const = 0;
  /// Sets one hyper-parameter by name; throws ValueError for a name this optimiser lacks.
  virtual void set_item(const std::string& name, double value) = 0;
};

/// Parameters updated with one set of hyper-parameters.
class ParamGroup {
 public:
  /// A group of `params` that takes the optimiser's defaults when added.
  explicit ParamGroup(std::vector<Tensor> params);
  /// A group of `params` with its own `options`.
  ParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options);
  /// A deep copy (the options are cloned).
  ParamGroup(const ParamGroup& other);
  /// A deep copy (the options are cloned).
  ParamGroup& operator=(const ParamGroup& other);
  /// Moves a group.
  ParamGroup(ParamGroup&&) = default;
  /// Moves a group.
  ParamGroup& operator=(ParamGroup&&) = default;

  /// The parameters.
  std::vector<Tensor>& params() { return params_; }
  /// The parameters.
  const std::vector<Tensor>& params() const { return params_; }
  /// False until options are set (by the constructor or by add_param_group).
  bool has_options() const { return options_ != nullptr; }
  /// The hyper-parameters; throws when there are none.
  OptimizerOptions& options();
  /// The hyper-parameters; throws when there are none.
  const OptimizerOptions& options() const;
  /// Replaces the hyper-parameters.
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }

  /// The learning rate a scheduler started from (PyTorch's group['initial_lr']); set by the
  /// first LR scheduler attached to the optimiser.
  std::optional<double> initial_lr;

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};

/// Base of the optimisers: parameter groups with their hyper-parameters, per-parameter state,
/// state_dict.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// Adds a group (options default to a copy of the optimiser's defaults). Parameters must be
  /// defined floating leaf tensors and appear in only one group.
  void add_param_group(ParamGroup group);
  /// Sets every parameter's gradient to undefined.
  void zero_grad();
  /// One update of every parameter that has a gradient.
  virtual void step() = 0;
  /// The optimiser's name for messages ("SGD", "Adam", "AdamW").
  virtual std::string name() const = 0;

  /// The parameter groups.
  std::vector<ParamGroup>& param_groups() { return groups_; }
  /// The parameter groups.
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  /// The default hyper-parameters of new groups.
  const OptimizerOptions& defaults() const { return *defaults_; }
  /// All parameters, group by group.
  std::vector<Tensor> parameters() const;

  /// The state of one parameter (null when it has none yet, e.g. before its first step).
  const TensorDict* state(const Tensor& param) const;

  /// Group hyper-parameters and per-parameter state as name -> Tensor, for checkpoints.
  TensorDict state_dict() const;
  /// Restores group hyper-parameters and per-parameter state saved by state_dict() of an
  /// optimiser of the same kind over parameters of the same shapes. Everything is checked first
  /// and all problems are reported in one ValueError; nothing changes when it throws. Floating
  /// state is cast to its parameter's dtype and device.
  void load_state_dict(const TensorDict& dict);

 protected:
  /// An optimiser whose groups default to `defaults`.
  explicit Optimizer(std::unique_ptr<OptimizerOptions> defaults);
  /// Throws ValueError when `options` is not this optimiser's kind or holds invalid values.
  virtual void check_options(const OptimizerOptions& options) const = 0;
  /// The state entry names a parameter may have ("momentum_buffer", "exp_avg", "step", ...).
  virtual std::vector<std::string> state_keys() const = 0;
  /// The state of `param`, created empty on first use.
  TensorDict& state_for(const Tensor& param);
  /// Runs fn(p, g) with contiguous CPU views of `param` and its gradient (same dtype and shape,
  /// checked), writes the result back when `param` itself is not contiguous, and bumps its
  /// version counter. The kernels of step() write through p's raw data.
  void update_param(const Tensor& param,
                    const std::function<void(const Tensor& p, const Tensor& g)>& fn) const;

 private:
  std::vector<ParamGroup> groups_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::unordered_map<const TensorImpl*, TensorDict> state_;
};

}  // namespace qgrad::optim
