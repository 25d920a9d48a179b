// CPU reduction kernel (no autograd).
#pragma once

#include <vector>

#include "core/tensor.h"

namespace qgrad {

enum class ReduceOp { Sum, Max, Min, ArgMax, ArgMin };

// Reduces x over the dims flagged in `reduced` into `out` (contiguous, numel = product of kept
// dims). Sum accumulates in double; Max/Min propagate NaN; ArgMax/ArgMin give the first index.
// Output dtypes: Sum: x's (floats) or int64 (ints); Max/Min: x's; ArgMax/ArgMin: int64, and
// for those `values` (optional, x's dtype, like out) receives the extreme values in the same pass.
void reduce_cpu(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced, const Tensor& out,
                const Tensor& values = Tensor());
// Variance over the flagged dims with divisor max(0, N - correction) (two passes in double);
// x float32/float64, out of x's dtype.
void var_cpu(const Tensor& x, const std::vector<bool>& reduced, std::int64_t correction,
             const Tensor& out);

}  // namespace qgrad
