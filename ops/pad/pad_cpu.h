// CPU padding kernels (no autograd): the forward gather for every mode and the scatter-add
// backward of the index-mapping modes (constant mode's backward is a constant pad of the
// gradient with the pads negated).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace qgrad {

enum class PadMode { Constant, Reflect, Replicate, Circular };

// The geometry of one pad: per dim (unpadded dims have 0, 0) how many elements are added on
// each side (negative = cropped). out_shape[d] = in_shape[d] + left[d] + right[d].
struct PadPlan {
  PadMode mode = PadMode::Constant;
  Shape in_shape, out_shape, left, right;
};

// out (contiguous, plan.out_shape) from x (plan.in_shape, any strides, any dtype); `value` fills
// the constant mode's border.
void pad_cpu(const Tensor& x, const PadPlan& plan, double value, const Tensor& out);
// grad_in (contiguous, plan.in_shape, zero-filled by the caller) += the gradient `g` (any
// strides) of every output element, at the input element it was copied from. Non-constant modes.
void pad_backward_cpu(const Tensor& g, const PadPlan& plan, const Tensor& grad_in);

}  // namespace qgrad
