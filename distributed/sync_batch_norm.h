/// @file
/// SyncBatchNorm: batch normalisation whose training statistics are those of the global batch,
/// the inputs of every rank of a ProcessGroup together (torch.nn.SyncBatchNorm), so N ranks
/// with batch B normalise like one process with batch N x B. Batch norm is local by default
/// (nn::BatchNorm2d on each rank); SyncBatchNorm is the option, usually set by
/// convert_sync_batchnorm (distributed/convert_sync_batchnorm.h).
///
/// It is an nn::BatchNorm2d: same options, parameters (weight, bias) and buffers (running_mean,
/// running_var, num_batches_tracked) under the same names, so checkpoints move between the two,
/// and code that recognises a BatchNorm2d (folding into a convolution, ONNX and int8 export,
/// fused conv-BN QAT, which calls its forward) takes it too. Its name() is "BatchNorm2d" (the
/// base fixes it); extra_repr() names the process group.
///
/// Training on several ranks: sync_batch_norm (distributed/sync_batch_norm_op.h), one
/// all_gather per forward and one all_reduce per backward, with num_batches_tracked and
/// momentum / cumulative average as BatchNorm2d; the running statistics are the same bits on
/// every rank. Evaluation, and a group of one rank, run BatchNorm2d's own forward (the same
/// bits as a BatchNorm2d). Every rank must call forward and backward the same number of times.
#pragma once

#include <memory>
#include <string>

#include "distributed/process_group.h"
#include "nn/modules/batchnorm.h"

namespace qgrad::distributed {

/// Batch norm with global-batch statistics in training (see the file comment).
class SyncBatchNorm : public nn::BatchNorm2d {
 public:
  /// A SyncBatchNorm with `options` over the ranks of `group`. Throws ValueError for a null
  /// group or invalid options (naming SyncBatchNorm and the option).
  SyncBatchNorm(const nn::BatchNormOptions& options, std::shared_ptr<ProcessGroup> group);

  /// Input [N, C] or [N, C, *] (N may differ between ranks; C must not).
  Tensor forward(const Tensor& input) override;
  /// BatchNorm2d's, then the group: "16, eps=1e-05, ..., process_group=mpi, world_size=2".
  std::string extra_repr() const override;

  /// The group whose ranks share the statistics.
  const std::shared_ptr<ProcessGroup>& process_group() const { return group_; }

 protected:
  /// Throws ShapeError unless the input has 2 or more dims.
  void check_input_dim(const Tensor& input) const override;

 private:
  std::shared_ptr<ProcessGroup> group_;
};

}  // namespace qgrad::distributed
