// The elements of PACT's clipped (and optionally quantized) activation and of its backward,
// written once for the CPU kernels (pact_cpu.cpp) and their future CUDA twins (QGRAD_HD):
// y = clip(x, 0, alpha), then, with levels > 0, rne(y / delta) * delta for delta = alpha / levels
// (divisions, as the paper's reference code); the backward passes dy to x on [0, alpha) and to
// alpha on [alpha, inf), unreduced.
#pragma once

#include "core/host_device.h"

namespace qgrad::learnable {

template <typename T>
struct PactForwardElem {
  T levels;       // the grid's step count, as T
  bool quantize;  // levels > 0
  QGRAD_HD_INLINE T operator()(T x, T alpha) const {
    T v = x < T(0) ? T(0) : (x >= alpha ? alpha : x);
    if (quantize) {
      const T delta = alpha / levels;
      v = hd::rint(v / delta) * delta;
    }
    return v;
  }
};

// Returns dx and sets dalpha. NaN x fails every comparison: no gradient to either.
template <typename T>
struct PactBackwardElem {
  QGRAD_HD_INLINE T operator()(T dy, T x, T alpha, T& dalpha) const {
    dalpha = x >= alpha ? dy : T(0);
    return (x >= T(0) && x < alpha) ? dy : T(0);
  }
};

}  // namespace qgrad::learnable
