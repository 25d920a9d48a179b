/// @file
/// Selection and logic: where(cond, a, b) (differentiable in a and b, broadcasting all three) and
/// the logical ops on uint8 masks (nonzero = true).
#pragma once

#include "core/tensor.h"

namespace qgrad {

/// a where cond is nonzero, b elsewhere (all three broadcast).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
/// a where cond is nonzero, the scalar b elsewhere.
Tensor where(const Tensor& cond, const Tensor& a, double b);
/// The scalar a where cond is nonzero, b elsewhere.
Tensor where(const Tensor& cond, double a, const Tensor& b);
/// a AND b (broadcast; nonzero is true), as a uint8 mask.
Tensor logical_and(const Tensor& a, const Tensor& b);
/// a OR b (broadcast; nonzero is true), as a uint8 mask.
Tensor logical_or(const Tensor& a, const Tensor& b);
/// NOT a (nonzero is true), as a uint8 mask.
Tensor logical_not(const Tensor& a);

}  // namespace qgrad
