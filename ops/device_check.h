// Device checks shared by the ops: every op validates that its tensors live on one device and
// that a kernel exists for it, so a missing CUDA kernel is a clear error, never a fallback.
#pragma once

#include "core/tensor.h"

namespace qgrad {

// Throws DeviceError naming `op` unless `t` is on the CPU (for ops without a CUDA kernel yet).
void require_cpu(const char* op, const Tensor& t);
// Throws DTypeError naming `op` and `arg` unless `t` is float32 or float64.
void require_floating(const char* op, const char* arg, const Tensor& t);
// Throws ValueError naming `op` and `arg` when `t` is undefined.
void require_defined(const char* op, const char* arg, const Tensor& t);

}  // namespace qgrad
