/// @file
/// Batch normalisation over dim 1 of an [N, C] or [N, C, *] input, differentiable in the input,
/// weight and bias, as torch.nn.functional.batch_norm: training mode normalises with the batch
/// mean and biased variance and updates the running statistics in place (running_var with the
/// unbiased batch variance); evaluation mode normalises with the running statistics.
#pragma once

#include "core/tensor.h"

namespace qgrad {

/// running_mean/running_var: [C] buffers of x's dtype, updated in place when training (their
/// version counters are bumped); they may be undefined in training mode only (then nothing is
/// tracked). weight/bias: [C], undefined = 1/0. running = (1 - momentum) * running +
/// momentum * batch_statistic.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  bool training = false, double momentum = 0.1, double eps = 1e-5);

/// Checks a per-channel argument `name` of batch norm op `op` (batch_norm, sync_batch_norm):
/// undefined, or a 1-D [C] tensor of x's dtype and device (C = x's dim 1); throws DeviceError,
/// DTypeError or ShapeError naming both otherwise.
void check_batch_norm_channel_arg(const char* op, const char* name, const Tensor& t,
                                  const Tensor& x);

}  // namespace qgrad
