/// @file
/// sync_batch_norm: training-mode batch normalisation with the statistics of the global batch,
/// the inputs of every rank of a ProcessGroup together (the function behind
/// torch.nn.SyncBatchNorm). Each rank sends its per-channel count, sum and squared deviations
/// (float64) in one all_gather and combines them in rank order, so every rank normalises with
/// the same bits of the global mean and biased variance and updates its running statistics
/// with the same bits (running_var with the unbiased global variance, by batch_norm's own
/// update kernel). Backward all-reduces (SUM) the per-channel sums of dy and dy * (x - mean)
/// that the input gradient needs, as PyTorch's SyncBatchNorm backward; the weight and bias
/// gradients stay local (this rank's share of the global batch), to be summed or averaged
/// over the ranks with the other gradients (DistributedDataParallel).
///
/// Collectives: one in forward; one in backward when the input requires grad. Every rank must
/// run the same forward and backward passes, as with any collective.
#pragma once

#include <memory>

#include "core/tensor.h"
#include "distributed/process_group.h"

namespace qgrad::distributed {

/// Normalises `x` ([N, C] or [N, C, *], float32 or float64, N may differ between ranks) with
/// the mean and biased variance over dim 1's channels of the inputs of every rank of `group`,
/// differentiable in x, weight and bias (see the file comment). running_mean / running_var:
/// [C] buffers of x's dtype and device, updated in place as batch_norm does
/// (running = (1 - momentum) * running + momentum * statistic, with the global count), or both
/// undefined. weight / bias: [C], undefined = 1 / 0. Throws ValueError for a null group, or
/// (on every rank together) when the ranks hold one value per channel or fewer in all.
Tensor sync_batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, double momentum, double eps,
                       const std::shared_ptr<ProcessGroup>& group);

}  // namespace qgrad::distributed
