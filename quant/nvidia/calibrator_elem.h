/// @file
/// The element math of the NVIDIA calibrators, written once (QGRAD_HD) for the CPU kernels of
/// calibrator_cpu.cpp and their future CUDA twins: one element's contribution to the statistics
/// of |x| a HistogramCalibrator starts from (max |x| and zero count, in double), the bin
/// torch.histc(min=0, max=range_max) puts |x| in (PyTorch 1.13's float32 CPU arithmetic), and the
/// running max of amax grids. Counting and merging stay in the drivers: integer counts and max
/// are exact and order-free, so any reduction order gives the same result.
#pragma once

#include <cstdint>
#include <limits>

#include "core/host_device.h"

namespace qgrad::nvidia {

/// Statistics of |x| over a tensor.
struct AbsStats {
  double max = 0;          ///< max |x|
  std::int64_t zeros = 0;  ///< elements with |x| == 0
  bool nonfinite = false;  ///< a NaN or +-Inf was seen (max and zeros are then meaningless)
};

/// Adds x to s; false (and s.nonfinite set) when x is NaN or +-Inf.
QGRAD_HD_INLINE bool add_abs_stat(AbsStats& s, double x) {
  const double a = hd::fabs(x);
  if (!(a <= std::numeric_limits<double>::max())) {  // NaN fails the compare too
    s.nonfinite = true;
    return false;
  }
  s.max = hd::max(s.max, a);
  s.zeros += a == 0;
  return true;
}

/// The bin torch.histc(min=0, max=range_max, bins) puts v in: trunc((v / range_max) * bins) in
/// float32, the top edge in the last bin; -1 when v is outside [0, range_max] or NaN. range_max
/// must be finite and > 0 (so t lies in [0, bins] and converts to an integer exactly).
QGRAD_HD_INLINE std::int64_t torch_histc_bin(float v, float range_max, std::int64_t bins) {
  if (!(v >= 0.0f && v <= range_max)) return -1;  // also NaN
  const float t = (v / range_max) * static_cast<float>(bins);
  const auto pos = static_cast<std::int64_t>(t);
  return pos == bins ? bins - 1 : pos;
}

/// The histogram bin of |x| (-1: not counted, as torch.histc drops it, or a skipped zero).
struct AbsHistcBinElem {
  float range_max;    ///< the histogram's top edge (finite, > 0)
  std::int64_t bins;  ///< the number of bins
  bool skip_zeros;    ///< |x| == 0 is not counted
  /// The bin of |x|, or -1.
  QGRAD_HD_INLINE std::int64_t operator()(float x) const {
    const float a = hd::fabs(x);
    if (skip_zeros && a == 0) return -1;
    return torch_histc_bin(a, range_max, bins);
  }
};

/// The running max of amax grids, std::max's rule: a NaN in `a` is ignored, a NaN acc stays.
template <typename T>
QGRAD_HD_INLINE T amax_merge(T acc, T a) {
  return hd::max(acc, a);
}

}  // namespace qgrad::nvidia
