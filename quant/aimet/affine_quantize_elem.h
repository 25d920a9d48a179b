// The elements of AIMET affine quantization, written once for the CPU kernels
// (affine_quantize_cpu.cpp) and their future CUDA twins (QGRAD_HD), in AIMET's operation order:
// x / scale (a division), round half to even, subtract the offset, clamp, add the offset,
// multiply by the scale. C is the compute type (float, or double when `wide`); the kernels
// convert from and to the tensors' dtype around each call. The forward also gives the
// straight-through mask (qmin <= rne(x / s) - o <= qmax), the dx-only backward reads it back, and
// the full backward recomputes the element from x with AIMET's gradient formulas (its ds / do
// values are summed per channel by the CPU drivers, in their fixed order).
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "quant/aimet/affine_quantize_kernels.h"

namespace qgrad::aimet {

template <typename C>
QGRAD_HD_INLINE C affine_clamp(C v, C lo, C hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// y of one element; m receives the mask (left unset for Dequantize, which has none).
template <typename C, AffineKind K>
struct AffineForwardElem {
  C qmin, qmax;
  QGRAD_HD_INLINE C operator()(C x, C s, C o, std::uint8_t& m) const {
    if constexpr (K == AffineKind::Dequantize) {
      (void)m;
      return (x + o) * s;
    } else {
      const C xr = hd::rint(x / s) - o;
      const C q = affine_clamp<C>(xr, qmin, qmax);
      m = static_cast<std::uint8_t>((qmin <= xr) & (xr <= qmax));
      if constexpr (K == AffineKind::Quantize) {
        return q;
      } else {
        return (q + o) * s;
      }
    }
  }
};

// dx from the forward's mask: Quantize (g*m)/s, Dequantize g*s (m not read), QuantizeDequantize
// g*m (s not read).
template <typename C, AffineKind K>
struct AffineDxElem {
  QGRAD_HD_INLINE C operator()(C g, std::uint8_t m, C s) const {
    if constexpr (K == AffineKind::Dequantize) {
      (void)m;
      return g * s;
    } else {
      const C gm = g * static_cast<C>(m);
      if constexpr (K == AffineKind::Quantize) {
        return gm / s;
      } else {
        (void)s;
        return gm;
      }
    }
  }
};

// dx (a), ds (b) and do (c) of one element recomputed from x, AIMET's formulas.
template <typename C, AffineKind K>
struct AffineGradElem {
  C qmin, qmax;
  QGRAD_HD_INLINE void operator()(C gv, C xv, C sv, C ov, C& a, C& b, C& c) const {
    if constexpr (K == AffineKind::Dequantize) {
      a = gv * sv;
      b = gv * (xv + ov);
      c = gv * sv;
    } else {
      const C t = xv / sv;
      const C r = hd::rint(t);
      const C xr = r - ov;
      const C m = ((qmin <= xr) & (xr <= qmax)) ? C(1) : C(0);
      if constexpr (K == AffineKind::Quantize) {
        const C gm = gv * m;
        a = gm / sv;
        b = -(gm / sv) * t;
        c = -gm;
      } else {
        a = gv * m;
        b = gv * (affine_clamp<C>(r, ov + qmin, ov + qmax) - t * m);
        c = gv * ((C(1) - m) * sv);
      }
    }
  }
};

}  // namespace qgrad::aimet
