// The two-sided learnable clip's kernel signatures (no autograd) and its per-device register
// functions. The front in learnable_clip.cpp reaches them through the "learnable.clip_forward"
// and "learnable.clip_backward" tables; the bounds arrive as views expanded to x's shape.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad::learnable {

// y = max(min(x, hi), lo) as PyTorch's torch.min/torch.max: a tie returns the bound (so
// clip(-0.0, 0, 6) = +0.0), NaN passes through.
using LearnableClipForwardKernel = void(const Tensor& x, const Tensor& lo, const Tensor& hi,
                                        const Tensor& y);
inline constexpr KernelTableKey<LearnableClipForwardKernel> kLearnableClipForwardKernels{
    "learnable.clip_forward", "learnable_clip"};
// With the float masks a = (x > lo), b = (x < hi): dx = dy * a * b, dlo = dy * (1 - a),
// dhi = dy * (1 - b) (unreduced; a masked dx with negative dy is -0.0, NaN x counts for both
// bounds), as pytorch_quantization's ClipFunction.
using LearnableClipBackwardKernel = void(const Tensor& dy, const Tensor& x, const Tensor& lo,
                                         const Tensor& hi, const Tensor& dx, const Tensor& dlo,
                                         const Tensor& dhi);
inline constexpr KernelTableKey<LearnableClipBackwardKernel> kLearnableClipBackwardKernels{
    "learnable.clip_backward", "learnable_clip"};

void register_learnable_clip_cpu_kernels(KernelRegistry& r);
void register_learnable_clip_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::learnable
