// The batch_norm family's kernel signatures ("batch_norm_train", "batch_norm_eval",
// "batch_norm_update_running" and "batch_norm_backward" tables) and its per-device register
// functions. The data x, y, gy, gx are contiguous [N, C, L] tensors (L = product of the spatial
// dims, 1 for [N, C] input); per-channel tensors (weight, bias, mean, var, gw, gb) are
// contiguous [C] of the data's dtype. An undefined weight means 1, an undefined bias 0.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad {

// Training forward: batch mean and biased variance into mean/var, and
// y = (x - mean) / sqrt(var + eps) * weight + bias.
using BatchNormTrainKernel = void(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                  double eps, const Tensor& y, const Tensor& mean,
                                  const Tensor& var);
inline constexpr KernelTableKey<BatchNormTrainKernel> kBatchNormTrainKernels{"batch_norm_train",
                                                                             "batch_norm"};
// Evaluation forward with the given statistics.
using BatchNormEvalKernel = void(const Tensor& x, const Tensor& mean, const Tensor& var,
                                 const Tensor& weight, const Tensor& bias, double eps,
                                 const Tensor& y);
inline constexpr KernelTableKey<BatchNormEvalKernel> kBatchNormEvalKernels{"batch_norm_eval",
                                                                           "batch_norm"};
// running = (1 - momentum) * running + momentum * batch, with the unbiased variance
// var * count / (count - 1) for running_var. running_* are 1-D [C] (any stride) of mean's
// dtype; either may be undefined.
using BatchNormUpdateRunningKernel = void(const Tensor& running_mean, const Tensor& running_var,
                                          const Tensor& mean, const Tensor& var, double momentum,
                                          std::int64_t count);
inline constexpr KernelTableKey<BatchNormUpdateRunningKernel> kBatchNormUpdateRunningKernels{
    "batch_norm_update_running", "batch_norm"};
// Backward: gx, gw and gb (each skipped when undefined). training: mean/var are the batch
// statistics and gx includes their dependence on x; otherwise they are constants
// (gx = gy * weight / sqrt(var + eps)).
using BatchNormBackwardKernel = void(const Tensor& gy, const Tensor& x, const Tensor& mean,
                                     const Tensor& var, const Tensor& weight, double eps,
                                     bool training, const Tensor& gx, const Tensor& gw,
                                     const Tensor& gb);
inline constexpr KernelTableKey<BatchNormBackwardKernel> kBatchNormBackwardKernels{
    "batch_norm_backward", "batch_norm"};

void register_batch_norm_cpu_kernels(KernelRegistry& r);
void register_batch_norm_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad
