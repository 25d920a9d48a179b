// The element of Horizon's fake quantization, written once for the CPU driver
// (quant/value_mask_loop.h) and a CUDA kernel (QGRAD_HD): it divides by the scale (x / scale, not
// x * (1/scale)), rounds (half to even, or half up as floor(v + 0.5)), clamps in T and multiplies
// back, and reports qmin <= round(x / scale) <= qmax as the gradient mask. NaN fails both
// comparisons, so it passes through the clamp unchanged with mask 0.
#pragma once

#include <cmath>
#include <cstdint>

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
      r = std::floor(v + T(0.5));
    }
    m = static_cast<std::uint8_t>((r >= qmin) & (r <= qmax));
    return (r < qmin ? qmin : (r > qmax ? qmax : r)) * scale;
  }
};

}  // namespace qgrad::horizon
