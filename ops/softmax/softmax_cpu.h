// CPU kernels of softmax / log_softmax and their backward rules (no autograd).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace qgrad {

// out (contiguous, x's shape and dtype) = softmax or log_softmax of x along `dim` (wrapped).
void softmax_cpu(const Tensor& x, std::int64_t dim, bool log, const Tensor& out);
// grad_in (contiguous) from the output gradient `g` (any strides) and the saved forward output
// `y` (contiguous): y * (g - sum(g * y)) for softmax, g - exp(y) * sum(g) for log_softmax.
void softmax_backward_cpu(const Tensor& g, const Tensor& y, std::int64_t dim, bool log,
                          const Tensor& grad_in);

}  // namespace qgrad
