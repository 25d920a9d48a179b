// CPU kernels for where and the logical ops.
#pragma once

#include "core/tensor.h"

namespace qgrad {

// All operands already broadcast to out's shape; cond is uint8; a, b, out share a dtype.
void where_cpu(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);
// op: 0 and, 1 or, 2 not (b ignored). a, b uint8 views of out's shape.
void logical_cpu(int op, const Tensor& a, const Tensor& b, const Tensor& out);

}  // namespace qgrad
