// Argument checks shared by the ops (defined, floating). Which devices have a kernel is the
// kernel tables' business (core/dispatch.h): a missing kernel is a clear error there.
#pragma once

#include "core/tensor.h"

namespace qgrad {

// Throws DTypeError naming `op` and `arg` unless `t` is float32 or float64.
void require_floating(const char* op, const char* arg, const Tensor& t);
// Throws ValueError naming `op` and `arg` when `t` is undefined.
void require_defined(const char* op, const char* arg, const Tensor& t);

}  // namespace qgrad
