// SyncBatchNorm: when to synchronise (training on several ranks, as PyTorch's need_sync), and
// BatchNorm2d's bookkeeping of num_batches_tracked and momentum around sync_batch_norm.
#include "distributed/sync_batch_norm.h"

#include <utility>

#include "core/autograd/grad_mode.h"
#include "distributed/sync_batch_norm_op.h"
#include "ops/binary/binary.h"

namespace qgrad::distributed {

namespace {

// BatchNormBase's checks, made first so that the errors name SyncBatchNorm.
const nn::BatchNormOptions& checked_options(const nn::BatchNormOptions& o) {
  QGRAD_CHECK(o.num_features_ > 0, ValueError, "SyncBatchNorm: num_features must be positive, got ",
              o.num_features_);
  QGRAD_CHECK(o.eps_ > 0, ValueError, "SyncBatchNorm: eps must be positive, got ", o.eps_);
  QGRAD_CHECK(o.cumulative_average_ || (o.momentum_ >= 0 && o.momentum_ <= 1), ValueError,
              "SyncBatchNorm: momentum must be in [0, 1], got ", o.momentum_);
  return o;
}

}  // namespace

SyncBatchNorm::SyncBatchNorm(const nn::BatchNormOptions& options,
                             std::shared_ptr<ProcessGroup> group)
    : nn::BatchNorm2d(checked_options(options)), group_(std::move(group)) {
  QGRAD_CHECK(group_ != nullptr, ValueError, "SyncBatchNorm: process_group is null");
}

Tensor SyncBatchNorm::forward(const Tensor& input) {
  // Checked here too (BatchNorm2d's forward checks again), so the errors name SyncBatchNorm.
  QGRAD_CHECK(input.defined(), ValueError, "SyncBatchNorm: input is undefined");
  check_input_dim(input);
  const nn::BatchNormOptions& o = options();
  QGRAD_CHECK(input.size(1) == o.num_features_, ShapeError, "SyncBatchNorm: expected ",
              o.num_features_, " channels (num_features) in dim 1, got shape ",
              shape_str(input.shape()));
  // Evaluation uses the running statistics (or this rank's batch when nothing is tracked, as
  // PyTorch), and one rank's batch is the global batch: BatchNorm2d itself, bit for bit.
  if (!is_training() || group_->size() == 1) return nn::BatchNorm2d::forward(input);
  const bool track = o.track_running_stats_;
  double factor = o.momentum_;
  std::int64_t batches = 0;
  if (track && o.cumulative_average_) {
    // Every rank holds the same count (the buffers are the same bits on every rank).
    batches = num_batches_tracked().item<std::int64_t>() + 1;
    factor = 1.0 / static_cast<double>(batches);
  }
  Tensor y =
      sync_batch_norm(input, track ? running_mean() : Tensor(), track ? running_var() : Tensor(),
                      weight(), bias(), factor, o.eps_, group_);
  if (track) {
    // After the op, so that a rejected input leaves the count alone (as BatchNorm2d).
    NoGradGuard no_grad;
    Tensor count = num_batches_tracked();
    if (o.cumulative_average_)
      count.fill_(static_cast<double>(batches));
    else
      count.copy_(count + 1.0);
  }
  return y;
}

std::string SyncBatchNorm::extra_repr() const {
  return nn::BatchNorm2d::extra_repr() + ", process_group=" + group_->backend() +
         ", world_size=" + std::to_string(group_->size());
}

void SyncBatchNorm::check_input_dim(const Tensor& input) const {
  QGRAD_CHECK(input.dim() >= 2, ShapeError, "SyncBatchNorm: expected at least 2D input (got ",
              input.dim(), "D input of shape ", shape_str(input.shape()), ")");
}

}  // namespace qgrad::distributed
