// CPU kernels of batch normalisation (no autograd). The data x, y, gy, gx are contiguous
// [N, C, L] tensors (L = product of the spatial dims, 1 for [N, C] input); per-channel
// tensors (weight, bias, mean, var, gw, gb) are contiguous [C] of the data's dtype. An
// undefined weight means 1, an undefined bias 0. float32 and float64.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace qgrad {

// Training forward: batch mean and biased variance into mean/var, and
// y = (x - mean) / sqrt(var + eps) * weight + bias.
void batch_norm_train_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                          const Tensor& y, const Tensor& mean, const Tensor& var);
// Evaluation forward with the given statistics.
void batch_norm_eval_cpu(const Tensor& x, const Tensor& mean, const Tensor& var,
                         const Tensor& weight, const Tensor& bias, double eps, const Tensor& y);
// running = (1 - momentum) * running + momentum * batch, with the unbiased variance
// var * count / (count - 1) for running_var. running_* are 1-D [C] (any stride) of mean's
// dtype; either may be undefined.
void batch_norm_update_running_cpu(const Tensor& running_mean, const Tensor& running_var,
                                   const Tensor& mean, const Tensor& var, double momentum,
                                   std::int64_t count);
// Backward: gx (skipped when undefined), gw and gb (each skipped when undefined). training:
// mean/var are the batch statistics and gx includes their dependence on x; otherwise they
// are constants (gx = gy * weight / sqrt(var + eps)).
void batch_norm_backward_cpu(const Tensor& gy, const Tensor& x, const Tensor& mean,
                             const Tensor& var, const Tensor& weight, double eps, bool training,
                             const Tensor& gx, const Tensor& gw, const Tensor& gb);

}  // namespace qgrad
