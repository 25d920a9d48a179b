/// @file
/// The backward engine: runs the graph below a set of roots in reverse topological order,
/// iteratively (no recursion, so deep graphs cannot overflow the stack). Two entry points share
/// it: run_backward (Tensor::backward: accumulate into the leaves' .grad) and autograd::grad
/// (torch.autograd.grad: return the gradients of chosen tensors, leaves' .grad untouched).
#pragma once

#include <optional>

#include "core/autograd/node.h"

namespace qgrad {

/// Runs backward from `roots` seeded with `grad_roots`, accumulating into the leaves' .grad();
/// frees the graph's saved tensors unless `retain_graph`.
void run_backward(const TensorList& roots, const TensorList& grad_roots, bool retain_graph);

namespace autograd {

/// The gradients of `outputs` with respect to `inputs`, as torch.autograd.grad: the sum over
/// outputs of grad_outputs[i] . d outputs[i] / d inputs. Inputs may be leaves or interior
/// tensors (e.g. a scale computed from min/max); the .grad of leaves is not touched, and only
/// the part of the graph that leads to the inputs runs. grad_outputs may be empty, or hold
/// undefined entries, for one-element outputs (implicitly 1). retain_graph defaults to
/// create_graph. create_graph=true throws AutogradError: backward rules run with grad mode off,
/// so gradients carry no graph of their own (no double backward). An input that does not
/// require grad throws; one that no gradient reaches throws unless allow_unused (then its
/// result is an undefined tensor). Interior tensors with retain_grad() on the path get their
/// .grad as in Tensor::backward.
TensorList grad(const TensorList& outputs, const TensorList& inputs,
                const TensorList& grad_outputs = {}, std::optional<bool> retain_graph = {},
                bool create_graph = false, bool allow_unused = false);

}  // namespace autograd

}  // namespace qgrad
