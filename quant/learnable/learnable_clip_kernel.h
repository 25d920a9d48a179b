// The learnable clip's kernels (learnable_clip_kernels.h's signatures) written once for every
// device: learnable_clip_elem.h's elements run by the device's map (Map: cpu::Map or cuda::Map),
// the backward's dx and unreduced bound gradients in one pass. Only .cpp / .cu files that
// register a kernel include this.
#pragma once

#include "core/dtype.h"
#include "core/map_outputs.h"
#include "core/tensor.h"
#include "quant/learnable/learnable_clip_elem.h"

namespace qgrad::learnable {

template <typename Map>
void learnable_clip_forward(const Tensor& x, const Tensor& lo, const Tensor& hi, const Tensor& y) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "learnable_clip", [&] {
    using T = scalar_t;
    Map::template run<T, T, T, T>("learnable_clip", LearnableClipForwardElem<T>{}, y, x, lo, hi);
  });
}

template <typename Map>
void learnable_clip_backward(const Tensor& dy, const Tensor& x, const Tensor& lo, const Tensor& hi,
                             const Tensor& dx, const Tensor& dlo, const Tensor& dhi) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "learnable_clip backward", [&] {
    using T = scalar_t;
    Map::template run_outputs<Outputs<T, T, T>, T, T, T, T>(
        "learnable_clip backward", LearnableClipBackwardElem<T>{}, {dx, dlo, dhi}, dy, x, lo, hi);
  });
}

}  // namespace qgrad::learnable
