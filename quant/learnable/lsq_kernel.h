// LSQ / LSQ+'s element-wise kernels (lsq_kernels.h's forward and backward) written once for every
// device: lsq_elem.h's elements run by the device's map (Map: cpu::Map or cuda::Map), the
// backward's dx and unreduced step-size (and offset) gradients in one pass. Without beta (LSQ)
// the elements see an offset of 0 and no offset gradient is written. Only .cpp / .cu files that
// register a kernel include this.
#pragma once

#include "core/dtype.h"
#include "core/map_outputs.h"
#include "core/tensor.h"
#include "quant/learnable/lsq_elem.h"

namespace qgrad::learnable {

// LSQ's elements without the offset operand.
template <typename T>
struct LsqForwardNoBeta {
  LsqForwardElem<T> e;
  QGRAD_HD_INLINE T operator()(T x, T s) const { return e(x, s, T(0)); }
};
template <typename T>
struct LsqBackwardNoBeta {
  LsqBackwardElem<T> e;
  QGRAD_HD_INLINE T operator()(T dy, T x, T s, T& ds) const {
    T unused;
    return e(dy, x, s, T(0), ds, unused);
  }
};

template <typename Map>
void lsq_forward(const Tensor& x, const Tensor& s, const Tensor& beta, double lo, double hi,
                 const Tensor& y) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "lsq_quantize", [&] {
    using T = scalar_t;
    const LsqForwardElem<T> e{static_cast<T>(lo), static_cast<T>(hi), beta.defined()};
    if (beta.defined())
      Map::template run<T, T, T, T>("lsq_plus_quantize", e, y, x, s, beta);
    else
      Map::template run<T, T, T>("lsq_quantize", LsqForwardNoBeta<T>{e}, y, x, s);
  });
}

template <typename Map>
void lsq_backward(const Tensor& dy, const Tensor& x, const Tensor& s, const Tensor& beta, double lo,
                  double hi, double grad_scale, const Tensor& dx, const Tensor& ds,
                  const Tensor& dbeta) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "lsq_quantize backward", [&] {
    using T = scalar_t;
    const LsqBackwardElem<T> e{static_cast<T>(lo), static_cast<T>(hi), static_cast<T>(grad_scale),
                               beta.defined()};
    if (beta.defined())
      Map::template run_outputs<Outputs<T, T, T>, T, T, T, T>("lsq_plus_quantize backward", e,
                                                              {dx, ds, dbeta}, dy, x, s, beta);
    else
      Map::template run_outputs<Outputs<T, T>, T, T, T>(
          "lsq_quantize backward", LsqBackwardNoBeta<T>{e}, {dx, ds}, dy, x, s);
  });
}

}  // namespace qgrad::learnable
