// CPU reduction kernel (no autograd).
#pragma once

#include <vector>

#include "core/tensor.h"

namespace qgrad {

enum class ReduceOp { Sum, Max, Min, ArgMax, ArgMin };

// Reduces x over the dims flagged in `reduced` into `out` (contiguous, numel = product of kept
// dims). Sum accumulates in double; Max/Min propagate NaN; ArgMax/ArgMin give the first index.
void reduce_cpu(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced, const Tensor& out);

}  // namespace qgrad
