// The optimisers' kernel signatures ("sgd_update" and "adam_update" tables: one fused in-place
// update of a contiguous parameter and its state) with their hyper-parameters, and the
// per-device register functions.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad::optim {

struct SgdStepConfig {
  double lr = 0;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
};

struct AdamStepConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;
  bool decoupled_weight_decay = false;  // AdamW: p *= 1 - lr * weight_decay
};

// p, g, buf contiguous, one dtype and device; buf undefined without momentum; `first`: the
// momentum buffer is new (it becomes the gradient).
using SgdUpdateKernel = void(const Tensor& p, const Tensor& g, const Tensor& buf,
                             const SgdStepConfig& c, bool first);
inline constexpr KernelTableKey<SgdUpdateKernel> kSgdUpdateKernels{"sgd_update", "sgd_step"};
// p, g, exp_avg, exp_avg_sq (and max_exp_avg_sq, undefined without amsgrad) contiguous, one
// dtype and device; `step` counts from 1.
using AdamUpdateKernel = void(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v,
                              const Tensor& vmax, const AdamStepConfig& c, std::int64_t step);
inline constexpr KernelTableKey<AdamUpdateKernel> kAdamUpdateKernels{"adam_update", "adam_step"};

void register_optim_cpu_kernels(KernelRegistry& r);
void register_optim_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::optim
