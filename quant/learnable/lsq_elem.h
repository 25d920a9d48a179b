// The elements of LSQ / LSQ+ (learned step size, and the learned offset of LSQ+), written once
// for the CPU kernels (lsq_cpu.cpp) and their future CUDA twins (QGRAD_HD). z = (x - beta) / s
// (a division; beta absent for LSQ), clipped to [lo, hi], rounded half to even and scaled back;
// the backward passes dy inside the open range and gives the per-element step-size and offset
// gradients (grad_scale g included), which the kernels' callers reduce. `has_beta` (LSQ+) is a
// member rather than a template parameter: the kernels decide it per tensor at run time.
#pragma once

#include "core/host_device.h"

namespace qgrad::learnable {

// y = rne(clip(z, lo, hi)) * s (+ beta). Without beta nothing is added, so -0.0 stays -0.0.
template <typename T>
struct LsqForwardElem {
  T lo, hi;
  bool has_beta;
  QGRAD_HD_INLINE T operator()(T x, T s, T beta) const {
    const T z = (has_beta ? x - beta : x) / s;
    const T c = z < lo ? lo : (z > hi ? hi : z);
    const T q = hd::rint(c) * s;
    return has_beta ? q + beta : q;
  }
};

// Returns dx; sets ds = g * dy * (rne(z) - z) inside, g * dy * bound outside (the bounds count as
// outside), and dbeta = 0 inside, g * dy outside. A NaN z gives dx = 0 and NaN ds / dbeta.
template <typename T>
struct LsqBackwardElem {
  T lo, hi, g;
  bool has_beta;
  QGRAD_HD_INLINE T operator()(T dy, T x, T s, T beta, T& ds, T& dbeta) const {
    const T z = (has_beta ? x - beta : x) / s;
    if (z <= lo || z >= hi) {
      ds = g * (dy * (z <= lo ? lo : hi));
      dbeta = g * dy;
      return T(0);
    }
    if (z != z) {  // NaN input: no gradient to x, NaN to the parameters
      ds = dbeta = z;
      return T(0);
    }
    ds = g * (dy * (hd::rint(z) - z));
    dbeta = T(0);
    return dy;
  }
};

}  // namespace qgrad::learnable
