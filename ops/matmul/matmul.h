/// @file
/// Matrix products, differentiable: matmul with torch.matmul's semantics (1-D operands, batched
/// operands whose batch dims broadcast) and linear (x @ weight^T + bias, as torch.nn.functional.
/// linear). float32 runs on oneDNN's matmul primitive, reading transposed and strided views in
/// place; float64 (for gradcheck) on reference loops.
#pragma once

#include "core/tensor.h"

namespace qgrad {

/// a [..., M, K] @ b [..., K, N] -> [broadcast(...), M, N]. A 1-D a is treated as [1, K] and a
/// 1-D b as [K, 1], the added dim being removed from the result (1-D @ 1-D gives a 0-d scalar).
Tensor matmul(const Tensor& a, const Tensor& b);

/// x [*, in], weight [out, in], bias [out] or undefined -> [*, out].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace qgrad
