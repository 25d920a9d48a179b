// The check of a learnable quantizer's parameter values (PACT's alpha, LSQ's step size and
// offset, DoReFa's max|tanh(w)|) as a kernel, so that a GPU checks them where they live: on the
// CPU a ValueError now, on a GPU recorded in the device's deferred-error slot and thrown at the
// host's next wait (core/cuda_deferred_error.h), so a training step makes the host wait nowhere.
#pragma once

#include "core/cuda_deferred_error.h"
#include "core/dispatch.h"
#include "core/host_device.h"
#include "core/tensor.h"

namespace qgrad::learnable {

// Whether a parameter value keeps `rule` (NaN and infinities never do).
QGRAD_HD_INLINE bool parameter_usable(double v, ParameterRule rule) {
  const bool finite = v - v == 0;
  return rule == ParameterRule::FiniteAndPositive ? finite && v > 0 : finite;
}

// Checks every element of `values` (floating, any shape) against `rule`; `op` names the function
// in the error, `which` the parameter.
using CheckParameterKernel = void(const char* op, CheckedParameter which, ParameterRule rule,
                                  const Tensor& values);
inline constexpr KernelTableKey<CheckParameterKernel> kCheckParameterKernels{
    "learnable.check_parameter",
    "pact_clip pact_quantize lsq_quantize lsq_plus_quantize dorefa_quantize_weight"};

void register_parameter_check_cpu_kernels(KernelRegistry& r);
void register_parameter_check_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::learnable
