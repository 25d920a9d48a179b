// FunctionNode and AccumulateGrad.
#include "core/autograd/node.h"

#include "core/autograd/grad_arith.h"
#include "core/autograd/grad_mode.h"

namespace qgrad {

Node::~Node() {
  // Nodes this one holds the last reference to are moved onto an explicit stack and destroyed
  // one at a time after their own edges were moved off, so the recursion depth stays constant.
  std::vector<std::shared_ptr<Node>> stack;
  auto take_unique = [&stack](std::vector<Edge>& edges) {
    for (Edge& e : edges)
      if (e.fn && e.fn.use_count() == 1) stack.push_back(std::move(e.fn));
    edges.clear();
  };
  take_unique(next_edges);
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    take_unique(n->next_edges);
    // `n` dies here with no edges left, so its own destructor does not descend.
  }
}

TensorList FunctionNode::apply(TensorList&& grads) {
  QGRAD_CHECK(!released_, AutogradError, name(),
              ": trying to backward through the graph a second time (or to use saved tensors "
              "after they were freed); pass retain_graph=true to the first backward() if you "
              "need to backward twice");
  return fn_(grads);
}

void FunctionNode::release() {
  fn_ = nullptr;  // frees every captured SavedTensor
  released_ = true;
}

TensorList AccumulateGrad::apply(TensorList&& grads) {
  if (grads.empty() || !grads[0].defined()) return {};
  NoGradGuard no_grad;  // .grad is a plain tensor (no create_graph support)
  auto& meta = leaf_->autograd_meta();
  if (!meta.grad.defined()) {
    // Never alias the incoming gradient: it may be a view of another tensor's buffer.
    // Take the incoming buffer when nothing else can see it (the common case: a fresh gradient
    // from the op's backward); otherwise copy, since e.g. add() hands one tensor to both inputs
    // and an optimiser may later modify .grad in place.
    Tensor& in = grads[0];
    const bool sole_owner =
        in.impl_ptr().use_count() == 1 && in.impl()->storage.use_count() == 1 &&
        in.is_contiguous() && in.storage_offset() == 0 &&
        static_cast<std::size_t>(in.numel()) * in.element_size() == in.impl()->storage->nbytes();
    if (sole_owner) {
      meta.grad = std::move(in);
    } else {
      Tensor g = in.contiguous();
      meta.grad = g.is_same(in) ? g.clone() : g;
    }
  } else {
    meta.grad = add_grads(meta.grad, grads[0]);
  }
  if (!meta.post_accumulate_grad_hooks.empty()) {
    const Tensor leaf(leaf_);
    // A copy: a hook may remove itself (or others) while they run.
    const auto hooks = meta.post_accumulate_grad_hooks;
    for (const auto& h : hooks) h.second(leaf);
  }
  return {};
}

}  // namespace qgrad
