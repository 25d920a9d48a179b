// DoReFa-Net's k-bit weight quantization (Zhou et al. 2016), the weight quantizer of PACT
// (Choi et al. 2018):
//   t = tanh(w),  w_n = t / (2 max|t|) + 1/2  (in [0, 1]),
//   w_q = 2 round(w_n n) / n - 1,  n = 2^k - 1,
// rounding half to even (tf.round, as the reference code) with the straight-through estimator
// for the rounding; the gradient flows through tanh and the normalisation (max|t| included, as
// the reference's reduce_max does). The result takes the 2^k evenly spaced values from -1 to 1
// (no zero level for even counts). Built from differentiable ops, so it runs wherever they do.
#pragma once

#include "core/tensor.h"

namespace qgrad::learnable {

// w floating, any shape with at least one element; num_bits in [1, 16] (pact_bits.h).
Tensor dorefa_quantize_weight(const Tensor& w, int num_bits);

}  // namespace qgrad::learnable
