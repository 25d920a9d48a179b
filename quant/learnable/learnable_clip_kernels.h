// The two-sided learnable clip's kernel signatures (no autograd) and its per-device register
// functions. The front in learnable_clip.cpp reaches them through the "learnable.clip_forward"
// and "learnable.clip_backward" tables; the bounds arrive as views expanded to x's shape.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad::learnable {

// y = clamp(x, lo, hi) (NaN passes through).
using LearnableClipForwardKernel = void(const Tensor& x, const Tensor& lo, const Tensor& hi,
                                        const Tensor& y);
// dx = dy where lo < x < hi; dlo = dy where x <= lo; dhi = dy where x >= hi (unreduced).
using LearnableClipBackwardKernel = void(const Tensor& dy, const Tensor& x, const Tensor& lo,
                                         const Tensor& hi, const Tensor& dx, const Tensor& dlo,
                                         const Tensor& dhi);

void register_learnable_clip_cpu_kernels(KernelRegistry& r);
void register_learnable_clip_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::learnable
