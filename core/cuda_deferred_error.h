// Errors that GPU kernels find in their inputs, reported at the host's next wait instead of by a
// synchronisation of their own. A kernel that meets a bad value (a class target out of range,
// say) cannot throw, and checking on the host first would make the host wait for the GPU in
// every training step. So the kernel guards the access (it writes NaN, never reads or writes out
// of bounds) and records the error in its device's slot, a few bytes of device memory.
// cuda_stream_synchronize (every copy to the host, item(), qgrad::synchronize) takes the slot's
// contents out in stream order (a one-thread kernel moves them to a staging copy and clears the
// slot; the staging copy goes to pinned host memory), waits, and throws the error (an IndexError
// for a class target, a ValueError for a quantizer's range) naming the op, the value and the
// position. PyTorch's device-side assert stops the
// process's CUDA context instead; here the error is an exception and the device stays usable.
// The slot's functions exist in CUDA builds only; the enums below are plain C++ (the quant
// layer's parameter checks name them on the CPU too).
#pragma once

#include <cstdint>

namespace qgrad {

// What a slot records. Plain data: kernels write it through a device pointer.
enum class DeferredErrorKind : std::int32_t {
  None = 0,
  ClassTargetOutOfRange = 1,  // position, value, classes, ignore_index
  RangeNotOrdered = 2,        // a quantizer's running min (low) <= max (high) fails; position:
                              // the channel, -1 per tensor
  QParamsUnusable = 3,        // a fake quantizer's scale (low) or zero point (high) cannot be
                              // used for [value, classes]; position: the channel, -1 per tensor
  ParameterUnusable = 4,      // a quantizer's parameter (classes: a CheckedParameter) of value
                              // low breaks rule `value` (a ParameterRule); position: its index
};
// The parameters a ParameterUnusable error names, and the rules they must keep.
enum class CheckedParameter : std::int32_t {
  Alpha = 0,
  StepSize = 1,
  Beta = 2,
  TanhMax = 3,
  FoldedBnFactor = 4,
  Amax = 5,
  UnsignedInput = 6,
  Scale = 7,
  Offset = 8,
  ClipWidth = 9,
  ClipMin = 10,
  ClipMax = 11
};
enum class ParameterRule : std::int32_t {
  FiniteAndPositive = 0,
  Finite = 1,
  NonZero = 2,
  FiniteAndNonNegative = 3,
  NonNegative = 4,
  NotNaN = 5
};

// What a ParameterRule asks, as errors say it ("must be finite and > 0").
inline const char* parameter_rule_text(ParameterRule r) {
  switch (r) {
    case ParameterRule::FiniteAndPositive:
      return "must be finite and > 0";
    case ParameterRule::Finite:
      return "must be finite";
    case ParameterRule::NonZero:
      return "must not be zero";
    case ParameterRule::FiniteAndNonNegative:
      return "must be finite and >= 0";
    case ParameterRule::NonNegative:
      return "must be >= 0";
    case ParameterRule::NotNaN:
      return "must not be NaN";
  }
  return "is unusable";
}

// How errors name a CheckedParameter ("alpha", "step size s", "beta", "max|tanh(w)|").
inline const char* checked_parameter_name(CheckedParameter p) {
  switch (p) {
    case CheckedParameter::Alpha:
      return "alpha";
    case CheckedParameter::StepSize:
      return "step size s";
    case CheckedParameter::Beta:
      return "beta";
    case CheckedParameter::TanhMax:
      return "max|tanh(w)|";
    case CheckedParameter::FoldedBnFactor:
      return "bn.weight / sqrt(bn.running_var + eps)";
    case CheckedParameter::Amax:
      return "amax";
    case CheckedParameter::UnsignedInput:
      return "the input of an unsigned quantizer";
    case CheckedParameter::Scale:
      return "scale";
    case CheckedParameter::Offset:
      return "offset";
    case CheckedParameter::ClipWidth:
      return "cmax - cmin";
    case CheckedParameter::ClipMin:
      return "cmin";
    case CheckedParameter::ClipMax:
      return "cmax";
  }
  return "a parameter";
}
enum class DeferredErrorOp : std::int32_t {
  CrossEntropy = 0,
  NllLoss = 1,
  FusedMovingAvgObsFakeQuant = 2,
  ObserverCalculateQParams = 5,
  HorizonFakeQuantize = 6,
  Named = 9  // the op's name is in the record (`name`)
};

struct CudaDeferredError {
  std::int32_t claimed;  // 0 free; the first kernel thread to set it to 1 writes the rest
  DeferredErrorKind kind;
  DeferredErrorOp op;
  std::int32_t unused;
  std::int64_t position, value, classes, ignore_index;
  double low, high;
  std::int64_t name;  // op Named: the op's name, a string literal's address
};

// The device pointer of device `device_index`'s slot (created, zeroed, on first use; immortal like
// the streams of core/cuda_stream.h). Throws DeviceError when the memory cannot be allocated.
CudaDeferredError* cuda_deferred_error_slot(int device_index);

// Waits for the device's stream, then throws the error its kernels recorded since the last such
// wait, if any (the slot is cleared: the device is usable again). The checked wait behind
// cuda_stream_synchronize; without a slot yet, just the wait.
void cuda_synchronize_reporting_deferred_errors(int device_index, const char* op);

}  // namespace qgrad
