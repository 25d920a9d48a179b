/// @file
/// 2-D pooling, differentiable, with PyTorch's semantics: max_pool2d (kernel, stride, padding,
/// dilation, ceil_mode; the gradient goes to the first maximum of each window), avg_pool2d
/// (count_include_pad, divisor_override) and adaptive_avg_pool2d. Inputs are [N, C, H, W] or
/// unbatched [C, H, W], float32 (oneDNN) or float64 (reference loops, for gradcheck).
#pragma once

#include <optional>

#include "core/tensor.h"

namespace qgrad {

/// kernel_size/padding/dilation: 1 value (both dims) or 2 ({h, w}); empty stride = kernel_size.
/// Padding must be at most half the kernel. ceil_mode rounds the output size up, but a last
/// window that would start in the right padding is dropped (as PyTorch).
Tensor max_pool2d(const Tensor& x, const Shape& kernel_size, const Shape& stride = {},
                  const Shape& padding = {0}, const Shape& dilation = {1}, bool ceil_mode = false);

/// count_include_pad: divide by the window clipped to the padded input (else by the number of
/// input elements in it); divisor_override (> 0) replaces either divisor.
Tensor avg_pool2d(const Tensor& x, const Shape& kernel_size, const Shape& stride = {},
                  const Shape& padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<std::int64_t> divisor_override = std::nullopt);

/// output_size: 1 value (square) or {oh, ow}; output cell i of n over length L averages
/// [floor(i*L/n), ceil((i+1)*L/n)).
Tensor adaptive_avg_pool2d(const Tensor& x, const Shape& output_size);

}  // namespace qgrad
