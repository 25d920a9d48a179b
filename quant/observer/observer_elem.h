// The element math of torch.ao's min/max observers, written once (QGRAD_HD) for where their
// statistics are device tensors: the running min / max update of MinMaxObserver (torch.min /
// torch.max, NaN propagating) and of the moving-average observers (in float32 steps, the first
// batch replacing never-observed statistics), and _calculate_qparams (uniform_observer.h's
// rule), each value computed with the float32 operations, in the order, of the observers' host
// code, so both give the same bits. The observers run them through cpu::map / cuda::map over one
// value per tensor or per channel (observer_kernels.h).
#pragma once

#include <cstdint>
#include <limits>

#include "core/host_device.h"

namespace qgrad::ao {

// PyTorch's torch.min / torch.max of two values: NaN propagates; otherwise std::min(a, b) /
// std::max(a, b), which keep a when the two compare equal.
QGRAD_HD_INLINE float nan_min(float a, float b) {
  if (hd::isnan(a) || hd::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
  return b < a ? b : a;
}
QGRAD_HD_INLINE float nan_max(float a, float b) {
  if (hd::isnan(a) || hd::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
  return a < b ? b : a;
}

// The running statistics after a batch: returns the new min, writes the new max. MinMaxObserver
// (averaging < 0): torch.min / torch.max of the batch's and the running ones. The moving-average
// observers: r + c * (b - r) in separate float32 steps, except that per-tensor statistics never
// observed (+inf / -inf) take the batch's (per channel, the first batch sets them instead).
struct RunningStatsElem {
  float averaging;  // the constant converted to float32; < 0 for MinMaxObserver
  bool per_tensor;  // +inf / -inf mean "never observed"
  QGRAD_HD_INLINE float operator()(float rmin, float rmax, float bmin, float bmax,
                                   float& new_max) const {
    if (averaging < 0) {
      new_max = nan_max(bmax, rmax);
      return nan_min(bmin, rmin);
    }
    const float inf = std::numeric_limits<float>::infinity();
    if (per_tensor && rmin == inf && rmax == -inf) {
      new_max = bmax;
      return bmin;
    }
    const float dmin = bmin - rmin, dmax = bmax - rmax;
    const float smin = averaging * dmin, smax = averaging * dmax;
    new_max = rmax + smax;
    return rmin + smin;
  }
};

// Whether running statistics give qparams: both finite and min <= max. Never-observed per-tensor
// statistics (+inf / -inf) are usable when `unobserved_ok` (they give the defaults).
QGRAD_HD_INLINE bool statistics_usable(float mn, float mx, bool unobserved_ok) {
  const float inf = std::numeric_limits<float>::infinity();
  if (unobserved_ok && mn == inf && mx == -inf) return true;
  return mn <= mx && mn - mn == 0 && mx - mx == 0;
}

// _calculate_qparams with an integer zero point: returns the scale, writes the zero point (see
// uniform_observer.h). Never-observed per-tensor statistics give scale 1, zero point 0.
struct UniformQParamsElem {
  float eps, half_range, range;  // (qmax - qmin) / 2 and qmax - qmin, rounded to float
  std::int64_t qmin, qmax, symmetric_zero_point;
  bool symmetric;
  QGRAD_HD_INLINE float operator()(float mn, float mx, std::int64_t& zp) const {
    const float inf = std::numeric_limits<float>::infinity();
    if (mn == inf && mx == -inf) {
      zp = 0;
      return 1.0f;
    }
    const float min_neg = 0.0f < mn ? 0.0f : mn;  // std::min(mn, 0.0f): -0.0 stays
    const float max_pos = mx < 0.0f ? 0.0f : mx;  // std::max(mx, 0.0f): -0.0 stays
    if (symmetric) {
      const float neg = -min_neg;
      const float amax = neg < max_pos ? max_pos : neg;
      const float s = amax / half_range;
      zp = symmetric_zero_point;
      return s < eps ? eps : s;
    }
    float s = (max_pos - min_neg) / range;
    s = s < eps ? eps : s;
    const std::int64_t z = qmin - static_cast<std::int64_t>(hd::rint(min_neg / s));
    zp = z < qmin ? qmin : (z > qmax ? qmax : z);
    return s;
  }
};

// _calculate_qparams for per_channel_affine_float_qparams: scale (max - min) / range (1 where
// not above eps) and the float zero point -min / scale.
struct FloatQParamsElem {
  float eps, range;
  QGRAD_HD_INLINE float operator()(float mn, float mx, float& zp) const {
    float s = (mx - mn) / range;
    s = s > eps ? s : 1.0f;
    zp = -mn / s;
    return s;
  }
};

}  // namespace qgrad::ao
