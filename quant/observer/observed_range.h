// ObservedRange, the (min, max) of a run of elements as the observers and the fused observer +
// fake quant take it from torch.aminmax, written once for the CPU and CUDA reductions
// (QGRAD_HD): accumulated element by element and combined in any order, it gives the bits of a
// sequential scan, so a reduction's result does not depend on how it is split.
#pragma once

#include <cstdint>
#include <limits>

#include "core/host_device.h"

namespace qgrad::ao {

// The range of a run of elements as torch.aminmax gives it to an observer: NaN anywhere makes
// it NaN; otherwise the min and max, where a zero extreme takes the sign of the first zero of the
// run (the element a sequential `a = v < a ? v : a` scan keeps). Accumulated in any order and
// combined in any order it is the same, bit for bit: min and max are exact, and only the
// position of the first zero, a minimum too, decides the sign. So the CPU's chunks and the GPU's
// blocks agree whatever their launch shape.
inline constexpr std::int64_t kNoZero = std::numeric_limits<std::int64_t>::max();
struct ObservedRange {
  float mn, mx;
  std::int64_t first_zero;  // index of the run's first +0 / -0, kNoZero when it has none
  bool nan;
};
QGRAD_HD_INLINE ObservedRange empty_range() {
  return {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), kNoZero,
          false};
}
// Element i of the run, of value v.
QGRAD_HD_INLINE void observe_element(ObservedRange& r, float v, std::int64_t i) {
  r.nan = r.nan || !(v == v);
  r.mn = v < r.mn ? v : r.mn;
  r.mx = v > r.mx ? v : r.mx;
  if (v == 0.0f && i < r.first_zero) r.first_zero = i;
}
QGRAD_HD_INLINE ObservedRange combine(const ObservedRange& a, const ObservedRange& b) {
  return {b.mn < a.mn ? b.mn : a.mn, b.mx > a.mx ? b.mx : a.mx,
          b.first_zero < a.first_zero ? b.first_zero : a.first_zero, a.nan || b.nan};
}
// The batch min and max the running statistics take: NaN when the run has one, a zero extreme
// with the sign of the first zero (x[first_zero], read by the caller).
QGRAD_HD_INLINE float batch_min(const ObservedRange& r, float first_zero_value) {
  if (r.nan) return std::numeric_limits<float>::quiet_NaN();
  return r.mn == 0.0f ? first_zero_value : r.mn;
}
QGRAD_HD_INLINE float batch_max(const ObservedRange& r, float first_zero_value) {
  if (r.nan) return std::numeric_limits<float>::quiet_NaN();
  return r.mx == 0.0f ? first_zero_value : r.mx;
}

}  // namespace qgrad::ao
