// CPU kernel of the batched matrix product (no autograd): float32 on oneDNN's matmul primitive,
// float64 on plain loops.
#pragma once

#include "core/tensor.h"

namespace qgrad {

// out = a @ b (+ bias). a is [..., M, K] and b [..., K, N], both of out's rank, each batch dim
// equal to out's or 1 (broadcast); any strides (including 0 from expand). bias is undefined or
// 1-D [N] added to every row. out is [..., M, N], contiguous and preallocated; all share a dtype.
void matmul_cpu(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out);

}  // namespace qgrad
