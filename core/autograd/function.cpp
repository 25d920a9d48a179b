// SavedTensor, gradient edges and op recording.
#include "core/autograd/function.h"

namespace qgrad {

SavedTensor::SavedTensor(const Tensor& t) {
  if (!t.defined()) return;
  data_ = t.detach();
  version_ = t.version();
}

Tensor SavedTensor::get() const {
  if (!data_.defined()) return data_;
  QGRAD_CHECK(data_.version() == version_, AutogradError,
              "one of the tensors needed for gradient computation has been modified by an "
              "in-place operation: its version is ",
              data_.version(), ", expected ", version_);
  return data_;
}

bool needs_grad(std::initializer_list<Tensor> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

bool needs_grad(const TensorList& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.impl()->autograd) return {};
  AutogradMeta& m = *t.impl()->autograd;
  if (m.grad_fn) return {m.grad_fn, m.output_nr};
  if (!m.requires_grad) return {};
  std::shared_ptr<Node> acc = m.grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    acc->outputs.push_back({t.shape(), t.dtype(), t.device()});
    m.grad_accumulator = acc;
  }
  return {acc, 0};
}

void record(const std::string& name, const TensorList& inputs,
            std::initializer_list<Tensor*> outputs, BackwardFn backward) {
  if (!needs_grad(inputs)) return;
  auto node = std::make_shared<FunctionNode>(name, std::move(backward));
  node->next_edges.reserve(inputs.size());
  for (const Tensor& t : inputs) node->next_edges.push_back(gradient_edge(t));
  std::uint32_t nr = 0;
  for (Tensor* out : outputs) {
    QGRAD_CHECK(out && out->defined(), AutogradError, name, ": output ", nr, " is undefined");
    // Giving an input a new grad_fn would silently turn a leaf into a non-leaf (its gradient
    // would never be accumulated) or cut an intermediate off its own history.
    for (const Tensor& in : inputs)
      QGRAD_CHECK(!out->is_same(in), AutogradError, name, ": output ", nr,
                  " is the same tensor handle as an input; return a new tensor (a view or a "
                  "copy) instead");
    node->outputs.push_back({out->shape(), out->dtype(), out->device()});
    if (is_floating(out->dtype())) {
      AutogradMeta& m = out->impl()->autograd_meta();
      m.requires_grad = true;
      m.grad_fn = node;
      m.output_nr = nr;
    }
    ++nr;
  }
}

}  // namespace qgrad
