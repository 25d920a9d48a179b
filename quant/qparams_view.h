// qparams_along: a quantizer's parameters (one value per tensor, or one per index of a channel
// axis) viewed along the input's shape, stride 0 where they are shared, as the device-generic
// fake-quantization kernels feed them to their element functors as operands.
#pragma once

#include <cstdint>

#include "core/shape.h"
#include "core/tensor.h"

namespace qgrad::quant {

// `params` (p.numel() values, contiguous) as a view of x's shape: the same value everywhere when
// axis < 0, else along `axis` (which x.size(axis) == params.numel() must hold).
inline Tensor qparams_along(const Tensor& params, const Tensor& x, std::int64_t axis) {
  Shape along(static_cast<std::size_t>(x.dim()), 1);
  if (axis >= 0) along[static_cast<std::size_t>(axis)] = params.numel();
  return params.reshape(along).expand(x.shape());
}

}  // namespace qgrad::quant
