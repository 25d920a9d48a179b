// The check of a quantizer's parameter values (PACT's alpha, LSQ's step size and offset, DoReFa's
// max|tanh(w)|, QuantConvBn2d's folded batch-norm factor, an NVIDIA amax, the learnable clip's
// bounds) and of an unsigned
// quantizer's input as a kernel, so that a GPU checks them where they live: on the CPU a
// ValueError now, on a GPU recorded in the device's deferred-error slot and thrown at the host's
// next wait (core/cuda_deferred_error.h), so a training step makes the host wait nowhere.
#pragma once

#include "core/cuda_deferred_error.h"
#include "core/dispatch.h"
#include "core/host_device.h"
#include "core/tensor.h"

namespace qgrad::quant {

// Whether a value keeps `rule` (NaN never does; infinities only NonZero, NonNegative and
// NotNaN).
QGRAD_HD_INLINE bool parameter_usable(double v, ParameterRule rule) {
  const bool finite = v - v == 0;
  switch (rule) {
    case ParameterRule::FiniteAndPositive:
      return finite && v > 0;
    case ParameterRule::Finite:
      return finite;
    case ParameterRule::NonZero:
      return v != 0;
    case ParameterRule::FiniteAndNonNegative:
      return finite && v >= 0;
    case ParameterRule::NonNegative:
      return v >= 0;
    case ParameterRule::NotNaN:
      return v == v;
  }
  return false;
}

// Checks every element of `values` (floating, contiguous, any shape) against `rule`. `op` names
// the function in the error and must be a string literal (a GPU's error keeps the pointer until
// the host's next wait); `which` names the values.
using CheckParameterKernel = void(const char* op, CheckedParameter which, ParameterRule rule,
                                  const Tensor& values);
inline constexpr KernelTableKey<CheckParameterKernel> kCheckParameterKernels{
    "quant.check_parameter",
    "pact_clip pact_quantize lsq_quantize lsq_plus_quantize dorefa_quantize_weight "
    "learnable_clip"};

void register_parameter_check_cpu_kernels(KernelRegistry& r);
void register_parameter_check_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::quant
