// The loss family's per-element math, shared by the CPU and CUDA kernels (QGRAD_HD): the cross
// entropy of one position from its log-sum-exp parts (with label smoothing), the squared error
// and its gradient. One formula each, so both devices round at the same points.
#pragma once

#include "core/host_device.h"

namespace qgrad::loss_elem {

// Cross entropy of a non-ignored position from its target logit x_t, its max md,
// log_s = log(sum(exp(x - md))) and, with smoothing, sw = sum_c w_c (x_c - md):
// (1 - eps) * wt * -log_softmax_t + eps / C * sum_c -w_c log_softmax_c, where w_all = sum_c w_c.
QGRAD_HD_INLINE double cross_entropy(double x_t, double md, double log_s, double sw, double wt,
                                     double eps, double C, double w_all) {
  const double logp_t = (x_t - md) - log_s;
  double l = -(1.0 - eps) * wt * logp_t;
  if (eps > 0) l -= eps / C * (sw - log_s * w_all);
  return l;
}

// (a - b)^2, in the element type.
template <typename T>
struct SquaredDiff {
  QGRAD_HD_INLINE T operator()(T a, T b) const {
    const T d = a - b;
    return d * d;
  }
};

// d/da of factor * (a - b)^2 / 2 times the output gradient g: ((a - b) * factor) * g.
template <typename T>
struct MseGrad {
  T factor;
  QGRAD_HD_INLINE T operator()(T a, T b, T g) const { return ((a - b) * factor) * g; }
};

}  // namespace qgrad::loss_elem
