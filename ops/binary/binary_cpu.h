// CPU kernel for the broadcasting binary ops (no autograd).
#pragma once

#include "ops/binary/binary.h"

namespace qgrad {

// a, b: views of out's shape (stride 0 on broadcast dims), dtype `compute`; out: the op's
// result dtype (compute, or uint8 for comparisons).
void binary_cpu(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);

}  // namespace qgrad
