/// @file
/// nn::Module: the base of every layer, as torch::nn::Module. A module owns named parameters
/// (trainable leaf tensors), named buffers (state such as running statistics) and named child
/// modules; everything is reachable recursively under dotted names ("features.0.weight") in
/// registration order. It provides train/eval mode, moving to a device or dtype in place,
/// zero_grad, state_dict/load_state_dict, a PyTorch-style printout and a parameter summary.
///
/// forward() is not part of the base (each module defines its own signature, as in libtorch);
/// modules with one tensor in and one out derive from UnaryModule (nn/unary_module.h) so that
/// Sequential can chain them.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "core/tensor.h"
#include "nn/ordered_dict.h"

namespace qgrad::nn {

/// What load_state_dict found when strict = false (with strict = true any of these throws).
struct LoadStateDictResult {
  std::vector<std::string> missing_keys;     ///< in the module, absent from the dict
  std::vector<std::string> unexpected_keys;  ///< in the dict, unknown to the module
};

/// Base class of the layers and models: named parameters, buffers and child modules, training mode,
/// state_dict and printing, as torch.nn.Module.
class Module : public std::enable_shared_from_this<Module> {
 public:
  /// `name` is the type name used when printing; empty = the demangled C++ class name without
  /// its namespaces.
  explicit Module(std::string name = "");
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The type name ("Linear", "Sequential", or the class name of a user module).
  std::string name() const;
  /// One-line (or multi-line) description of this module's own settings, as PyTorch's
  /// extra_repr: "in_features=4, out_features=3, bias=True". Empty by default.
  virtual std::string extra_repr() const { return ""; }

  // ---- registration ----
  /// Registers a parameter (a leaf tensor; set to require grad when `requires_grad`). An
  /// undefined tensor registers an absent optional parameter (like bias=None): it is skipped by
  /// parameters() and state_dict(). Returns a handle aliasing the stored tensor.
  Tensor register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  /// Registers a buffer; non-persistent buffers are left out of state_dict().
  Tensor register_buffer(const std::string& name, Tensor tensor, bool persistent = true);
  /// Registers a child module and returns it with its own type.
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>, "register_module: M must derive from Module");
    add_child(name, module);
    return module;
  }
  /// Replaces an existing child (e.g. a layer with its quantized version) and returns it.
  template <typename M>
  std::shared_ptr<M> replace_module(const std::string& name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>, "replace_module: M must derive from Module");
    replace_child(name, module);
    return module;
  }

  // ---- traversal (registration order; recurse = include descendants under dotted names) ----
  /// A tensor or module registered in several places (shared weights) is listed once, under its
  /// first name, as in PyTorch; state_dict() lists every name.
  std::vector<Tensor> parameters(bool recurse = true) const;
  /// The parameters by dotted name ("conv1.weight").
  TensorDict named_parameters(bool recurse = true) const;
  /// The buffers (e.g. running statistics) of this module and, with `recurse`, its descendants.
  std::vector<Tensor> buffers(bool recurse = true) const;
  /// The buffers by dotted name.
  TensorDict named_buffers(bool recurse = true) const;
  /// The direct child modules.
  std::vector<std::shared_ptr<Module>> children() const;
  /// The direct child modules by name.
  OrderedDict<std::shared_ptr<Module>> named_children() const;
  /// All modules depth-first (pre-order). Including self needs the module to be owned by a
  /// std::shared_ptr (throws ValueError otherwise), as in libtorch.
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true);
  /// This module (with `prefix` as its name) and its descendants by dotted name.
  OrderedDict<std::shared_ptr<Module>> named_modules(const std::string& prefix = "",
                                                     bool include_self = true);
  /// Calls fn(qualified_name, module) on this module ("" name) and every descendant, pre-order.
  void apply(const std::function<void(const std::string&, Module&)>& fn,
             const std::string& prefix = "");
  /// Calls fn(name, module) on this module and each descendant (read-only).
  void apply(const std::function<void(const std::string&, const Module&)>& fn,
             const std::string& prefix = "") const;

  // ---- mode ----
  /// Sets training mode on this module and all descendants.
  virtual void train(bool on = true);
  /// Evaluation mode: train(false).
  void eval() { train(false); }
  /// True in training mode.
  bool is_training() const { return is_training_; }

  // ---- device and dtype (in place) ----
  /// Moves every parameter and buffer (and defined gradients) to `device`. The move happens in
  /// place on each tensor's TensorImpl (storage, strides, offset are swapped for the moved copy),
  /// so Tensor handles held elsewhere (layer members, optimiser parameter lists) stay valid and
  /// see the new data. Views taken of a parameter before the move keep the old storage, and
  /// optimiser state (momentum buffers) is not moved: call to() before creating the optimiser.
  void to(Device device);
  /// Casts floating parameters and buffers (and gradients) to `dtype` in place, as
  /// torch.nn.Module.to(dtype); integer buffers keep their dtype. `dtype` must be floating.
  void to(DType dtype);

  /// Sets the gradient of every parameter to undefined (PyTorch's set_to_none=True).
  void zero_grad();

  // ---- state ----
  /// Parameters and persistent buffers under dotted names, detached (sharing storage).
  TensorDict state_dict() const;
  /// Copies values from `dict` into the parameters and persistent buffers (converting dtype and
  /// device as needed) after checking everything first: mis-shaped entries always throw, and
  /// with `strict` missing or unexpected keys throw too. The ValueError lists every problem in
  /// one message. Nothing is modified when it throws.
  LoadStateDictResult load_state_dict(const TensorDict& dict, bool strict = true);

  // ---- summaries ----
  /// Number of parameter elements (only those requiring grad when trainable_only).
  std::int64_t num_parameters(bool trainable_only = false) const;
  /// A table of every parameter (name, shape, count, trainable) with totals.
  std::string summary() const;

  /// The PyTorch-style printout of this module tree (what operator<< writes).
  std::string repr() const;

 protected:
  /// Called before child `name` is replaced by `module`; a container that keeps its own typed
  /// list (Sequential) checks and updates it here. Throwing cancels the replacement.
  virtual void on_replace_child(const std::string& name, const std::shared_ptr<Module>& module);

  /// Direct access to this module's own entries for subclasses.
  const TensorDict& own_parameters() const { return parameters_; }
  /// This module's own buffers (not its children's).
  const TensorDict& own_buffers() const { return buffers_; }

 private:
  void check_new_name(const std::string& kind, const std::string& name) const;
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void replace_child(const std::string& name, std::shared_ptr<Module> module);
  void collect_parameters(const std::string& prefix, bool recurse, TensorDict& out) const;
  void collect_buffers(const std::string& prefix, bool recurse, bool persistent_only,
                       TensorDict& out) const;

  mutable std::string name_;
  TensorDict parameters_{"parameter"};
  TensorDict buffers_{"buffer"};
  std::set<std::string> non_persistent_buffers_;
  OrderedDict<std::shared_ptr<Module>> children_{"submodule"};
  bool is_training_ = true;
};

/// Prints the module tree, as PyTorch's repr.
std::ostream& operator<<(std::ostream& os, const Module& module);

}  // namespace qgrad::nn
