/// @file
/// The gradient arithmetic the autograd core does itself: summing two gradients that reach one
/// tensor, and summing a broadcast gradient back to an input's shape. Both reach their kernels
/// through the "add" and "sum" tables (core/core_kernels.h), so they run on any device that the
/// binary and reduce families have kernels for.
#pragma once

#include "core/tensor.h"

namespace qgrad {

/// a + b for gradients of one shape, dtype and device (no autograd; a fresh tensor).
Tensor add_grads(const Tensor& a, const Tensor& b);
/// Sums `grad` over the dims that broadcasting added or expanded, giving `shape` (no autograd).
Tensor sum_to_shape(const Tensor& grad, const Shape& shape);

}  // namespace qgrad
