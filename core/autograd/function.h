/// @file
/// Recording differentiable ops. An op computes its outputs with plain kernels, then — when grad
/// mode is on and an input requires grad — calls `record(...)` with a closure that is its
/// backward rule. Tensors the closure needs are captured as SavedTensor, which detaches them (no
/// reference cycles through grad_fn) and checks on use that no in-place write changed them.
///
///   Tensor y = relu_kernel(x);
///   if (needs_grad({x}))
///     record("ReluBackward", {x}, {y}, [sy = SavedTensor(y)](const TensorList& g) {
///       return TensorList{relu_backward(g[0], sy.get())};
///     });
#pragma once

#include <initializer_list>
#include <string>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"

namespace qgrad {

/// A tensor saved for backward, with the version it had when saved, so that an in-place change
/// since is detected.
class SavedTensor {
 public:
  SavedTensor() = default;
  /// Saves `t` and its current version.
  explicit SavedTensor(const Tensor& t);
  /// Returns the saved tensor; throws AutogradError if it was modified in place since saving.
  Tensor get() const;
  /// True when a tensor was saved.
  bool defined() const { return data_.defined(); }

 private:
  Tensor data_;
  std::uint64_t version_ = 0;
};

/// True when grad mode is on and any defined input requires grad.
bool needs_grad(std::initializer_list<Tensor> inputs);
/// True when grad mode is on and any defined input requires grad.
bool needs_grad(const TensorList& inputs);

/// The edge along which a gradient for `t` should flow (its grad_fn, its leaf accumulator, or
/// nothing when it does not require grad).
Edge gradient_edge(const Tensor& t);

/// Creates a FunctionNode named `name` with one edge per input, and makes each output a
/// non-leaf that requires grad with this node as grad_fn. No-op when !needs_grad(inputs).
/// Outputs are passed by reference because their autograd metadata is set here.
void record(const std::string& name, const TensorList& inputs,
            std::initializer_list<Tensor*> outputs, BackwardFn backward);

}  // namespace qgrad
