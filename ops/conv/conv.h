/// @file
/// 2-D convolution, differentiable, with torch.nn.functional.conv2d's semantics: input
/// [N, C, H, W], weight [O, C / groups, kh, kw], optional bias [O], stride, zero padding,
/// dilation and groups (groups == C is a depthwise convolution). float32 runs on oneDNN (the
/// layouts it prefers, primitives cached per shape); float64 on reference loops (gradcheck).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace qgrad {

/// stride / padding / dilation: one value for both spatial dims or {h, w}.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              const Shape& stride = {1}, const Shape& padding = {0}, const Shape& dilation = {1},
              std::int64_t groups = 1);

/// The same parameters as a chainable options object:
///   conv2d(x, w, b, Conv2dOptions().stride(2).padding({1, 0}))
struct Conv2dOptions {
  Shape stride_{1};          ///< per spatial dim, or one value for both
  Shape padding_{0};         ///< zero padding per spatial dim, or one value for both
  Shape dilation_{1};        ///< kernel dilation per spatial dim, or one value for both
  std::int64_t groups_ = 1;  ///< number of channel groups

  /// Sets the stride.
  Conv2dOptions& stride(const Shape& s) {
    stride_ = s;
    return *this;
  }
  /// Sets the padding.
  Conv2dOptions& padding(const Shape& p) {
    padding_ = p;
    return *this;
  }
  /// Sets the dilation.
  Conv2dOptions& dilation(const Shape& d) {
    dilation_ = d;
    return *this;
  }
  /// Sets the number of groups.
  Conv2dOptions& groups(std::int64_t g) {
    groups_ = g;
    return *this;
  }
};

/// conv2d with the parameters in an options object.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options);

}  // namespace qgrad
