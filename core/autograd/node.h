/// @file
/// Autograd graph nodes. A Node is the backward of one forward op: it receives the gradients of
/// the op's outputs and returns the gradients of its inputs, which flow along `next_edges` to the
/// nodes that produced those inputs (or to a leaf's AccumulateGrad). Ops record a FunctionNode
/// whose backward rule is a closure written next to the forward code (see autograd/function.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace qgrad {

/// A list of tensors: a node's incoming or outgoing gradients.
using TensorList = std::vector<Tensor>;

/// Where a gradient goes: input `input_nr` of node `fn`.
struct Edge {
  std::shared_ptr<Node> fn;    ///< the node that receives the gradient (null: no gradient flows)
  std::uint32_t input_nr = 0;  ///< which of fn's forward outputs the gradient belongs to
  /// True when the edge leads to a node.
  bool valid() const { return fn != nullptr; }
};

/// What the engine checks an incoming gradient against: the shape/dtype/device of the forward
/// output this gradient belongs to.
struct OutputMeta {
  Shape shape;                   ///< the output's shape
  DType dtype = DType::Float32;  ///< the output's dtype
  Device device;                 ///< the output's device
};

/// The backward of one forward op (see the file comment).
class Node : public std::enable_shared_from_this<Node> {
 public:
  /// A node named `name` (the op's name, shown in errors and graph dumps).
  explicit Node(std::string name) : name_(std::move(name)) {}
  /// Releases the chain of nodes below this one iteratively: the default recursive destruction
  /// of next_edges would overflow the stack on very deep graphs (e.g. 100k+ chained ops).
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// The node's name.
  const std::string& name() const { return name_; }
  /// grads[i] is the gradient of forward output i (undefined = zero). Returns one gradient per
  /// next edge (undefined = no gradient).
  virtual TensorList apply(TensorList&& grads) = 0;
  /// Drops saved tensors after a backward pass without retain_graph.
  virtual void release() {}

  std::vector<Edge> next_edges;  ///< where the gradients of the op's inputs go, one edge per input
  std::vector<OutputMeta>
      outputs;  ///< the metadata of each forward output, to check incoming gradients against
  /// Outputs of this node that called retain_grad(): (output slot, tensor). The engine stores
  /// the slot's gradient in the tensor's .grad before apply(). Weak, so the graph does not keep
  /// a tensor alive (nor form a cycle through its grad_fn).
  std::vector<std::pair<std::uint32_t, std::weak_ptr<TensorImpl>>> retained_grads;

 private:
  std::string name_;
};

/// A backward rule: the gradients of an op's inputs from those of its outputs.
using BackwardFn = std::function<TensorList(const TensorList& grads)>;

/// A node whose backward is a closure (what ops record, through autograd/function.h).
class FunctionNode final : public Node {
 public:
  /// A node named `name` that runs `fn` as its backward.
  FunctionNode(std::string name, BackwardFn fn) : Node(std::move(name)), fn_(std::move(fn)) {}
  TensorList apply(TensorList&& grads) override;
  void release() override;

 private:
  BackwardFn fn_;
  bool released_ = false;
};

/// Accumulates the incoming gradient into a leaf's .grad().
class AccumulateGrad final : public Node {
 public:
  /// The node of leaf tensor `leaf`.
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf)
      : Node("AccumulateGrad"), leaf_(std::move(leaf)) {}
  TensorList apply(TensorList&& grads) override;

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

}  // namespace qgrad
