// The pad family's kernel signatures ("pad" table: the forward gather for every mode, also the
// constant mode's backward, a constant pad of the gradient with the pads negated;
// "pad_backward": the scatter-add backward of the index-mapping modes), the plan they share,
// and its per-device register functions.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
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
using PadKernel = void(const Tensor& x, const PadPlan& plan, double value, const Tensor& out);
inline constexpr KernelTableKey<PadKernel> kPadKernels{"pad", "pad"};
// grad_in (contiguous, plan.in_shape, zero-filled by the caller) += the gradient `g` (any
// strides) of every output element, at the input element it was copied from, each input
// element's terms added in ascending output order (so every device gives the same bits).
// Non-constant modes.
using PadBackwardKernel = void(const Tensor& g, const PadPlan& plan, const Tensor& grad_in);
inline constexpr KernelTableKey<PadBackwardKernel> kPadBackwardKernels{"pad_backward", "pad"};

void register_pad_cpu_kernels(KernelRegistry& r);
void register_pad_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad
