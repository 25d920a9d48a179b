// Selection and logic: where(cond, a, b) (differentiable in a and b, broadcasting all three) and
// the logical ops on uint8 masks (nonzero = true).
#pragma once

#include "core/tensor.h"

namespace qgrad {

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, double b);
Tensor where(const Tensor& cond, double a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& a);

}  // namespace qgrad
