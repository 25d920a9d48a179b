/// @file
/// PACT (Choi et al., 2018): a clipped activation with a learnable upper bound alpha,
///   y = clip(x, 0, alpha),  dy/dx = 1 for 0 <= x < alpha,  dy/dalpha = 1[x >= alpha],
/// optionally followed by k-bit uniform quantization of [0, alpha] with the straight-through
/// estimator (y_q = rne(y / d) * d, d = alpha / (2^k - 1); the same gradients). The paper adds an
/// L2 penalty on alpha to the loss (pact_alpha_penalty). alpha broadcasts against x from the
/// trailing dims (one element per layer, or per channel).
#pragma once

#include "core/tensor.h"

namespace qgrad::learnable {

/// clip(x, 0, alpha) with PACT's gradients; ValueError unless alpha is finite and > 0.
Tensor pact_clip(const Tensor& x, const Tensor& alpha);
/// num_bits in [1, 16] (pact_bits.h).
Tensor pact_quantize(const Tensor& x, const Tensor& alpha, int num_bits);
/// weight * sum(alpha^2), differentiable in alpha.
Tensor pact_alpha_penalty(const Tensor& alpha, double weight);

}  // namespace qgrad::learnable
