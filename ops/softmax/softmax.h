/// @file
/// softmax and log_softmax over any dimension, differentiable. Both subtract the maximum along
/// the dimension first, so huge logits (1e4 and beyond) never overflow; each runs as one fused
/// kernel forward and one fused kernel backward.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace qgrad {

/// exp(x - max) / sum(exp(x - max)) along `dim` (negative dims count from the end).
Tensor softmax(const Tensor& x, std::int64_t dim);
/// (x - max) - log(sum(exp(x - max))) along `dim`.
Tensor log_softmax(const Tensor& x, std::int64_t dim);

}  // namespace qgrad
