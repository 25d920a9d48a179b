// convert_sync_batchnorm: a walk over the module tree that replaces each BatchNorm2d child by
// a SyncBatchNorm carrying its state.
#include "distributed/convert_sync_batchnorm.h"

#include <map>

#include "distributed/sync_batch_norm.h"

namespace qgrad::distributed {

namespace {

// requires_grad and the gradient of `from` onto `to` (a parameter of the new layer).
void carry_autograd_state(const Tensor& from, Tensor to) {
  if (!from.defined()) return;
  to.set_requires_grad(from.requires_grad());
  if (from.grad().defined()) to.set_grad(from.grad());
}

std::shared_ptr<SyncBatchNorm> to_sync(const nn::BatchNorm2d& bn,
                                       const std::shared_ptr<ProcessGroup>& group) {
  auto sync = std::make_shared<SyncBatchNorm>(bn.options(), group);
  // The new tensors are float32 on the CPU: first the old layer's dtype and device, then its
  // values (num_batches_tracked stays int64).
  const Tensor& like = bn.weight().defined() ? bn.weight() : bn.running_mean();
  if (like.defined()) {
    sync->to(like.dtype());
    sync->to(like.device());
  }
  sync->load_state_dict(bn.state_dict());
  carry_autograd_state(bn.weight(), sync->weight());
  carry_autograd_state(bn.bias(), sync->bias());
  sync->train(bn.is_training());
  return sync;
}

// A layer already converted -> its replacement, so that a layer shared by two parents stays one
// shared layer (the keys keep the old layers alive, so no address is reused meanwhile).
using Converted = std::map<std::shared_ptr<nn::Module>, std::shared_ptr<SyncBatchNorm>>;

// Converts below `parent`.
std::int64_t convert_below(nn::Module& parent, const std::shared_ptr<ProcessGroup>& group,
                           Converted& done) {
  std::int64_t count = 0;
  for (const auto& child : parent.named_children()) {
    const std::shared_ptr<nn::Module>& m = child.value;
    if (std::dynamic_pointer_cast<SyncBatchNorm>(m)) continue;
    if (auto bn = std::dynamic_pointer_cast<nn::BatchNorm2d>(m)) {
      auto it = done.find(m);
      if (it == done.end()) {
        it = done.emplace(m, to_sync(*bn, group)).first;
        ++count;
      }
      parent.replace_module(child.key, it->second);
      continue;
    }
    count += convert_below(*m, group, done);
  }
  return count;
}

}  // namespace

std::int64_t convert_sync_batchnorm(nn::Module& model, std::shared_ptr<ProcessGroup> group) {
  QGRAD_CHECK(group != nullptr, ValueError, "convert_sync_batchnorm: the process group is null");
  if (dynamic_cast<const SyncBatchNorm*>(&model) != nullptr) return 0;
  QGRAD_CHECK(dynamic_cast<const nn::BatchNorm2d*>(&model) == nullptr, ValueError,
              "convert_sync_batchnorm: the model itself is a BatchNorm2d, which has no parent to "
              "be replaced in; construct a SyncBatchNorm(bn.options(), group) instead");
  Converted done;
  return convert_below(model, group, done);
}

}  // namespace qgrad::distributed
