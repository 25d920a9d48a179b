// The element math of the NVIDIA tensor quantizers (pytorch_quantization's tensor_quant and
// TensorRT Model Optimizer's scaled / block formats), written once (QGRAD_HD) for the CPU
// kernels of tensor_quant_cpu.cpp and their future CUDA twins: the saturating round-to-nearest-
// even cast into an (E,M) minifloat as bit arithmetic on the IEEE encoding, the integer grid
// quantizer, the scaled and the divide-then-multiply minifloat quantizers, gemmlowp's affine fake
// quantizer, the clipped and the range straight-through gradients, the finite |x| running max and
// the scales of an amax. Each computes its value with the operations, in the order, that
// tensor_quant_kernels.h states (FMA contraction is off on both devices), so both give the same
// bits. The CPU drivers keep the loops, the block walk and the reductions.
#pragma once

#include <cstdint>
#include <limits>

#include "core/host_device.h"
#include "quant/nvidia/num_bits.h"

namespace qgrad::nvidia {

template <typename T>
struct FloatBits;
template <>
struct FloatBits<float> {
  using U = std::uint32_t;
  static constexpr int kFrac = 23;
  static QGRAD_HD_INLINE float from(U u) { return hd::float_of(u); }
};
template <>
struct FloatBits<double> {
  using U = std::uint64_t;
  static constexpr int kFrac = 52;
  static QGRAD_HD_INLINE double from(U u) { return hd::double_of(u); }
};

// Round-to-nearest-even cast into an (E,M) format with saturation. Normal range: round the IEEE
// fraction to M bits with integer arithmetic on the encoding (a carry moves into the exponent,
// as it should). Subnormal range: adding 2^(log2(min_subnormal) + frac_bits) makes the FPU round
// at the subnormal spacing, ties to even; subtracting it back is exact. Built on the host.
template <typename T>
struct MiniFloatCaster {
  using U = typename FloatBits<T>::U;
  T max, min_normal, magic;
  U half, lsb, mask;
  int shift;

  explicit MiniFloatCaster(const MiniFloatSpec& s)
      : max(static_cast<T>(s.max_value)),
        min_normal(static_cast<T>(s.min_normal)),
        magic(static_cast<T>(hd::ldexp(s.min_subnormal, FloatBits<T>::kFrac))) {
    shift = FloatBits<T>::kFrac - s.format.mantissa_bits;
    half = shift > 0 ? (U(1) << (shift - 1)) - 1 : 0;
    lsb = shift > 0 ? 1 : 0;
    mask = ~((U(1) << shift) - 1);
  }

  QGRAD_HD_INLINE T operator()(T v) const {
    T a = hd::min(hd::fabs(v), max);  // saturate (+Inf too); NaN stays NaN
    const T sub = (a + magic) - magic;
    U u = hd::bits_of(a);
    u = (u + half + ((u >> shift) & lsb)) & mask;
    const T nor = FloatBits<T>::from(u);
    const T r = a < min_normal ? sub : nor;
    return v != v ? v : hd::copysign(r, v);
  }
};

// Integer grid: q = clamp(rne(v * s), lo, hi); fake quantization divides q by the dequant scale.
template <typename T>
struct IntQuantElem {
  T lo, hi;
  QGRAD_HD_INLINE T operator()(T v, T s) const { return hd::min(hd::max(hd::rint(v * s), lo), hi); }
  QGRAD_HD_INLINE T fake(T v, T s, T d) const { return (*this)(v, s) / d; }
};

// Scaled minifloat: cast(v * s), divided by d when fake; |v| < tiny gives +0 (modelopt's
// ScaledE4M3 zero mask; tiny is 0 without it).
template <typename T>
struct FpScaledElem {
  MiniFloatCaster<T> cast;
  T tiny;
  bool fake;
  QGRAD_HD_INLINE T operator()(T v, T s, T d) const {
    const T q = cast(v * s);
    const T r = fake ? q / d : q;
    return hd::fabs(v) < tiny ? T(0) : r;
  }
};

// Divide-then-multiply minifloat (MX, NVFP4): cast(v / s), times s when fake; a zero scale gives
// v * 0 (a signed zero, NaN for non-finite v). The pieces are separate so that a segment with one
// scale can test it once and run a branch-free loop.
template <typename T>
struct FpDivmulElem {
  MiniFloatCaster<T> cast;
  bool fake;
  static QGRAD_HD_INLINE T zero_scale(T v) { return v * T(0); }
  QGRAD_HD_INLINE T quant(T v, T s) const { return cast(v / s); }
  QGRAD_HD_INLINE T fake_quant(T v, T s) const { return cast(v / s) * s; }
  QGRAD_HD_INLINE T operator()(T v, T s) const {
    if (s == T(0)) return zero_scale(v);
    const T q = quant(v, s);
    return fake ? static_cast<T>(q * s) : q;
  }
};

// Clipped straight-through estimator: dy where |x| <= amax (inclusive), else 0 (NaN x too).
template <typename T>
QGRAD_HD_INLINE T clip_ste_grad(T dy, T x, T amax) {
  return hd::fabs(x) <= amax ? dy : T(0);
}

// One step of the per-block max of the finite |x|: returns the new max, sets `nonfinite` for a NaN
// or +-Inf x (which is skipped).
template <typename T>
QGRAD_HD_INLINE T finite_absmax_step(T m, T x, bool& nonfinite) {
  const T v = hd::fabs(x);
  const bool ok = v <= std::numeric_limits<T>::max();  // false for Inf and NaN
  nonfinite |= !ok;
  return (ok && v > m) ? v : m;
}

// The scales of an amax for a quantizer whose largest value is `bound`: s = bound / amax; returns
// the quant scale (0 where amax <= eps), writes the dequant scale (1 there).
template <typename T>
struct AmaxScalesElem {
  T bound, eps;
  QGRAD_HD_INLINE T operator()(T amax, T& dequant) const {
    const T s = bound / amax;
    const bool zero = amax <= eps;
    dequant = zero ? T(1) : s;
    return zero ? T(0) : s;
  }
};

// gemmlowp affine fake quantization: q = clamp(rne(x / step) - qz, lo, hi); (q + qz) * step.
template <typename T>
struct AffineFakeQuantElem {
  T step, qz, lo, hi;
  QGRAD_HD_INLINE T operator()(T x) const {
    const T q = hd::min(hd::max(static_cast<T>(hd::rint(x / step) - qz), lo), hi);
    return (q + qz) * step;
  }
};

// Its straight-through gradient: dy where lo <= x <= hi, else 0 (NaN x too).
template <typename T>
struct RangeSteGradElem {
  T lo, hi;
  QGRAD_HD_INLINE T operator()(T dy, T x) const { return (x <= hi && x >= lo) ? dy : T(0); }
};

}  // namespace qgrad::nvidia
