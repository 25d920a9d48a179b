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

/// Checks the arguments of batch norm op `op` (batch_norm, sync_batch_norm): a floating input
/// [N, C] or [N, C, *]; running_mean, running_var, weight, bias each undefined or a 1-D [C]
/// tensor of x's dtype and device, the running statistics both given or both not; eps finite
/// and non-negative, momentum finite. Throws DTypeError, DeviceError, ShapeError or ValueError
/// naming `op` and the argument otherwise.
void check_batch_norm_args(const char* op, const Tensor& x, const Tensor& running_mean,
                           const Tensor& running_var, const Tensor& weight, const Tensor& bias,
                           double momentum, double eps);

}  // namespace qgrad
