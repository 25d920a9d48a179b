// The softmax family's kernel signatures ("softmax" and "softmax_backward" tables, each for
// softmax and log_softmax) and its per-device register functions.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad {

// out (contiguous, x's shape and dtype) = softmax or log_softmax of x along `dim` (wrapped).
using SoftmaxKernel = void(const Tensor& x, std::int64_t dim, bool log, const Tensor& out);
inline constexpr KernelTableKey<SoftmaxKernel> kSoftmaxKernels{"softmax", "softmax log_softmax"};
// grad_in (contiguous) from the output gradient `g` (any strides) and the saved forward output
// `y` (contiguous): y * (g - sum(g * y)) for softmax, g - exp(y) * sum(g) for log_softmax.
using SoftmaxBackwardKernel = void(const Tensor& g, const Tensor& y, std::int64_t dim, bool log,
                                   const Tensor& grad_in);
inline constexpr KernelTableKey<SoftmaxBackwardKernel> kSoftmaxBackwardKernels{
    "softmax_backward", "softmax log_softmax"};

void register_softmax_cpu_kernels(KernelRegistry& r);
void register_softmax_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad
