// FunctionNode and AccumulateGrad.
#include "core/autograd/node.h"

#include "core/autograd/grad_mode.h"
#include "ops/binary/binary.h"

namespace qgrad {

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
    Tensor g = grads[0].contiguous();
    meta.grad = g.is_same(grads[0]) ? g.clone() : g;
  } else {
    meta.grad = add(meta.grad, grads[0]);
  }
  return {};
}

}  // namespace qgrad
