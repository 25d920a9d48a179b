// The loss family's kernel signatures ("class_loss" and "class_loss_backward" for cross
// entropy and nll, "mse_loss" and "mse_loss_backward") with the parameters they share, and its
// per-device register functions. The kernels do no argument checks: loss.cpp validates
// targets and shapes before calling them.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad {

// Class-index losses over input [N, C, S...] (viewed around dim 1) and target [N, S...].
struct ClassLossParams {
  std::int64_t ignore_index = -100;
  double label_smoothing = 0.0;
  bool from_logits = true;  // true: cross entropy (fused log_softmax); false: nll on log-probs
};

// target: contiguous int64 (N * S values); weight: contiguous [C] of input's dtype or undefined.
// Writes every per-position loss to `losses` (contiguous float64, N * S; 0 where ignored) and, for
// cross entropy, log-sum-exp of each position to `lse` (same layout), and the totals to `totals`
// (contiguous float64 [2] on input's device: the sum of the losses and the sum of weight[target]
// over the non-ignored positions), summed in position order, so they do not depend on the thread
// count; nothing is read back to the host. The CPU kernel expects targets checked by loss.cpp;
// the CUDA kernels check them themselves: a target out of range gives NaN (no out-of-bounds
// access) and is reported at the host's next wait for the GPU (core/cuda_deferred_error.h).
using ClassLossKernel = void(const Tensor& input, const Tensor& target, const Tensor& weight,
                             const ClassLossParams& p, const Tensor& losses, const Tensor& lse,
                             const Tensor& totals);
inline constexpr KernelTableKey<ClassLossKernel> kClassLossKernels{"class_loss",
                                                                   "cross_entropy nll_loss"};
// grad_in (contiguous, input's shape; zero-filled by the caller for nll) = d loss / d input,
// where position i's loss gradient is factor * g[i] (g contiguous of input's dtype with N * S
// values, or one value shared by all positions; factor a one-element float64 tensor on input's
// device, the mean's 1 / weight sum, or undefined for 1).
using ClassLossBackwardKernel = void(const Tensor& input, const Tensor& target,
                                     const Tensor& weight, const Tensor& lse,
                                     const ClassLossParams& p, const Tensor& g,
                                     const Tensor& factor, const Tensor& grad_in);
inline constexpr KernelTableKey<ClassLossBackwardKernel> kClassLossBackwardKernels{
    "class_loss_backward", "cross_entropy nll_loss"};

// Squared error. When `out` is defined it receives (a - b)^2 elementwise (any strides);
// otherwise total (a one-element float64 tensor on a's device) receives sum((a - b)^2),
// accumulated in double in a fixed block order.
using MseLossKernel = void(const Tensor& a, const Tensor& b, const Tensor& out,
                           const Tensor& total);
inline constexpr KernelTableKey<MseLossKernel> kMseLossKernels{"mse_loss", "mse_loss"};
// grad_a = factor * (a - b) * g (g has a's shape, possibly a stride-0 broadcast view).
using MseLossBackwardKernel = void(const Tensor& a, const Tensor& b, const Tensor& g, double factor,
                                   const Tensor& grad_a);
inline constexpr KernelTableKey<MseLossBackwardKernel> kMseLossBackwardKernels{"mse_loss_backward",
                                                                               "mse_loss"};

void register_loss_cpu_kernels(KernelRegistry& r);
void register_loss_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad
