// The elements of the two-sided learnable clip and of its backward, written once for the CPU
// kernels (learnable_clip_cpu.cpp) and their future CUDA twins (QGRAD_HD): the forward is
// torch.min(x, hi) then torch.max(., lo) as PyTorch's vectorised CPU kernels compute them, the
// backward pytorch_quantization's ClipFunction with its float masks.
#pragma once

#include "core/host_device.h"

namespace qgrad::learnable {

// A tie returns the bound (clip(-0.0, 0, 6) = +0.0); NaN propagates.
template <typename T>
struct LearnableClipForwardElem {
  QGRAD_HD_INLINE T operator()(T x, T lo, T hi) const {
    const T m = (x != x) ? x : (x < hi ? x : hi);
    return (m != m) ? m : (m > lo ? m : lo);
  }
};

// Returns dx = dy * a * b and sets dlo = dy * (1 - a), dhi = dy * (1 - b) for the float masks
// a = (x > lo), b = (x < hi): multiplies, so a masked element with a negative dy gives -0.0 and
// NaN in dy propagates; NaN x is outside both masks.
template <typename T>
struct LearnableClipBackwardElem {
  QGRAD_HD_INLINE T operator()(T dy, T x, T lo, T hi, T& dlo, T& dhi) const {
    const T min_mask = x > lo ? T(1) : T(0);
    const T max_mask = x < hi ? T(1) : T(0);
    dlo = dy * (T(1) - min_mask);
    dhi = dy * (T(1) - max_mask);
    return dy * min_mask * max_mask;
  }
};

}  // namespace qgrad::learnable
