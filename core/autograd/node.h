// Autograd graph nodes. A Node is the backward of one forward op: it receives the gradients of
// the op's outputs and returns the gradients of its inputs, which flow along `next_edges` to the
// nodes that produced those inputs (or to a leaf's AccumulateGrad). Ops record a FunctionNode
// whose backward rule is a closure written next to the forward code (see autograd/function.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace qgrad {

using TensorList = std::vector<Tensor>;

struct Edge {
  std::shared_ptr<Node> fn;
  std::uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

// What the engine checks an incoming gradient against: the shape/dtype/device of the forward
// output this gradient belongs to.
struct OutputMeta {
  Shape shape;
  DType dtype = DType::Float32;
  Device device;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  explicit Node(std::string name) : name_(std::move(name)) {}
  // Releases the chain of nodes below this one iteratively: the default recursive destruction
  // of next_edges would overflow the stack on very deep graphs (e.g. 100k+ chained ops).
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::string& name() const { return name_; }
  // grads[i] is the gradient of forward output i (undefined = zero). Returns one gradient per
  // next edge (undefined = no gradient).
  virtual TensorList apply(TensorList&& grads) = 0;
  // Drops saved tensors after a backward pass without retain_graph.
  virtual void release() {}

  std::vector<Edge> next_edges;
  std::vector<OutputMeta> outputs;
  // Outputs of this node that called retain_grad(): (output slot, tensor). The engine stores
  // the slot's gradient in the tensor's .grad before apply(). Weak, so the graph does not keep
  // a tensor alive (nor form a cycle through its grad_fn).
  std::vector<std::pair<std::uint32_t, std::weak_ptr<TensorImpl>>> retained_grads;

 private:
  std::string name_;
};

using BackwardFn = std::function<TensorList(const TensorList& grads)>;

class FunctionNode final : public Node {
 public:
  FunctionNode(std::string name, BackwardFn fn) : Node(std::move(name)), fn_(std::move(fn)) {}
  TensorList apply(TensorList&& grads) override;
  void release() override;

 private:
  BackwardFn fn_;
  bool released_ = false;
};

// Accumulates the incoming gradient into a leaf's .grad().
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf)
      : Node("AccumulateGrad"), leaf_(std::move(leaf)) {}
  TensorList apply(TensorList&& grads) override;

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

}  // namespace qgrad
