// The per-element math of AIMET's MinMaxEncodingAnalyzer, written once for the CPU kernels
// (minmax_encoding_cpu.cpp) and their future CUDA twins (QGRAD_HD): the merge of a batch's
// min / max statistics into the running ones (in double, NaN propagating) and the statistics ->
// encoding range rule, applied in the statistics' dtype T as AIMET computes it (the range
// stretched to include zero and to at least kMinimumScale per step, symmetric ranges widened to
// a grid centred on zero, then kept finite).
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace qgrad::aimet {

// The quiet NaN that std::nan("") returns.
QGRAD_HD_INLINE double merge_nan() {
  return hd::double_of(0x7ff8000000000000ull);
}

QGRAD_HD_INLINE double minmax_merge_min(double run, double batch) {
  return (hd::isnan(run) || hd::isnan(batch)) ? merge_nan() : hd::min(run, batch);
}
QGRAD_HD_INLINE double minmax_merge_max(double run, double batch) {
  return (hd::isnan(run) || hd::isnan(batch)) ? merge_nan() : hd::max(run, batch);
}

// The encoding range of one (min, max) pair for n = num_steps bins. big is T's largest finite
// value; the step counts stay integers until each use, as AIMET converts them there.
template <typename T>
struct MinMaxEncodingElem {
  T n, eps, big;
  std::int64_t pos_steps, neg_steps;  // num_steps / 2, (num_steps + 1) / 2
  bool symmetric;
  QGRAD_HD_INLINE void operator()(T min, T max, T& out_min, T& out_max) const {
    const T min0 = hd::min(min, T(0));
    const T max0 = hd::max(max, T(0));
    const T diff = (max0 - min0) / n;
    const T adj = diff < eps ? eps : T(0);
    T umin, umax;
    if (symmetric) {
      umax = max0 + static_cast<T>(pos_steps) * adj;
      umin = min0 - static_cast<T>(neg_steps) * adj;
      const T delta = hd::max(umax / static_cast<T>(pos_steps), -umin / static_cast<T>(neg_steps));
      umin = static_cast<T>(-neg_steps) * delta;
      umax = static_cast<T>(pos_steps) * delta;
    } else {
      umax = max0 + n * adj;
      umin = min0;
    }
    out_max = hd::min(umax, big);
    out_min = hd::max(umin, -big);
  }
};

}  // namespace qgrad::aimet
