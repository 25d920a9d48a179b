// The element of Horizon's fake quantization, written once for the CPU driver
// (quant/value_mask_loop.h) and a CUDA kernel (QGRAD_HD): it divides by the scale (x / scale, not
// x * (1/scale)), rounds (half to even, or half up as floor(v + 0.5)), clamps in T and multiplies
// back, and reports qmin <= round(x / scale) <= qmax as the gradient mask. NaN fails both
// comparisons, so it passes through the clamp unchanged with mask 0.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/host_device.h"
#include "quant/horizon/horizon_qparams.h"

namespace qgrad::horizon {

template <typename T, RoundMode M>
struct FakeQuantizeElem {
  T scale, qmin, qmax;

  QGRAD_HD_INLINE T operator()(T x, std::uint8_t& m) const {
    const T v = x / scale;
    T r;
    if constexpr (M == RoundMode::HalfToEven) {
      r = hd::rint(v);
    } else {
      r = hd::floor(v + T(0.5));
    }
    m = static_cast<std::uint8_t>((r >= qmin) & (r <= qmax));
    return (r < qmin ? qmin : (r > qmax ? qmax : r)) * scale;
  }
};

// The element with its scale as an operand (one per tensor or per channel, broadcast along x),
// for where the scale is a device tensor: T(scale) as the CPU kernels take it, so the same bits.
template <typename T, RoundMode M>
struct FakeQuantizeOperandsElem {
  T qmin, qmax;
  QGRAD_HD_INLINE T operator()(T x, float scale, std::uint8_t& m) const {
    return FakeQuantizeElem<T, M>{static_cast<T>(scale), qmin, qmax}(x, m);
  }
};

// Whether statistics give a scale (finite), or are unobserved (+inf / -inf: the previous scale
// stays). The scale functor and the CPU and CUDA checks of it all ask this.
QGRAD_HD_INLINE bool is_unobserved(float mn, float mx) {
  return mn == std::numeric_limits<float>::infinity() &&
         mx == -std::numeric_limits<float>::infinity();
}
QGRAD_HD_INLINE bool statistics_usable(float mn, float mx) {
  return is_unobserved(mn, mx) || (mn - mn == 0 && mx - mx == 0);
}

// HorizonFakeQuantize's scale from its observer's statistics (horizon_qparams.h's rule), or
// `previous` while the statistics are unobserved (+inf / -inf). Unusable (NaN or infinite)
// statistics give NaN; the caller reports them.
struct ScaleFromStatisticsElem {
  float half_range;  // (qmax - qmin) / 2 in float
  QGRAD_HD_INLINE float operator()(float mn, float mx, float previous) const {
    if (is_unobserved(mn, mx)) return previous;
    if (!statistics_usable(mn, mx)) return std::numeric_limits<float>::quiet_NaN();
    return symmetric_scale_of(mn, mx, half_range);
  }
};

}  // namespace qgrad::horizon
