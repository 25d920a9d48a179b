// The elements of torch.ao fake quantization with an integer zero point, of its masked
// backward and of the learnable fake quantizer's backward, written once for the CPU drivers
// (quant/value_mask_loop.h, cpu::map, fake_quantize_cpu.cpp's learnable reduction) and the CUDA
// kernels (QGRAD_HD). The forward elements compute exactly as PyTorch 1.13's CPU kernels write
// it: x * (1/scale) (a multiply by the reciprocal), round half to even, the zero point added after
// rounding, clamping before any float-to-int conversion. Each returns the fake-quantized value and
// sets the straight-through gradient mask. Narrow ranges (every integer exact in float32) compute
// in T; the wide (qint32) per-tensor and per-channel kernels of PyTorch differ in where they
// convert to int64, and each has its element. The learnable backward follows PyTorch's vectorised
// kernel, two fused multiply-adds included.
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace qgrad::ao {

// Narrow ranges: all in T. NaN fails both comparisons, so it passes through the clamp.
template <typename T>
struct NarrowFakeQuantizeElem {
  T inv, scale, zp, qmin, qmax;
  QGRAD_HD_INLINE T operator()(T x, std::uint8_t& m) const {
    const T qf = zp + hd::rint(x * inv);
    m = static_cast<std::uint8_t>((qf >= qmin) & (qf <= qmax));
    const T q = qf < qmin ? qmin : (qf > qmax ? qmax : qf);
    return (q - zp) * scale;
  }
};

// Wide ranges (qint32) of the per-tensor kernel: PyTorch clamps in double, converts to int64,
// subtracts the zero point in int64 and multiplies in float. Its mask compares the float value
// against the bounds converted to float.
template <typename T>
struct WidePerTensorFakeQuantizeElem {
  T inv, scale, zpf, qmin_t, qmax_t;
  double qmin, qmax;
  std::int64_t zp;
  QGRAD_HD_INLINE T operator()(T x, std::uint8_t& m) const {
    const T qf = zpf + hd::rint(x * inv);
    m = static_cast<std::uint8_t>((qf >= qmin_t) & (qf <= qmax_t));
    if (hd::isnan(qf)) return qf;
    const double c = hd::min(hd::max(static_cast<double>(qf), qmin), qmax);
    return static_cast<T>(static_cast<std::int64_t>(c) - zp) * scale;
  }
};

// Wide ranges of the per-channel kernel: PyTorch converts to int64 before clamping (its mask
// compares integers) and multiplies (q - zp) * scale in double.
template <typename T>
struct WidePerChannelFakeQuantizeElem {
  T inv, zpf;
  double scale, qmin, qmax, zp;
  QGRAD_HD_INLINE T operator()(T x, std::uint8_t& m) const {
    const T qf = zpf + hd::rint(x * inv);
    if (hd::isnan(qf)) {
      m = 0;
      return qf;
    }
    const double d = static_cast<double>(qf);
    m = static_cast<std::uint8_t>((d >= qmin) & (d <= qmax));
    const double c = hd::min(hd::max(d, qmin), qmax);
    return static_cast<T>((c - zp) * scale);
  }
};

// The narrow element with its qparams as operands, one per tensor or per channel broadcast along
// x (scale float32, zero point an integer type): it builds NarrowFakeQuantizeElem from them at
// each element, T(1) / T(scale) as the kernels that build it once per tensor or channel do, so it
// gives their bits. What the GPU runs, where the qparams stay device tensors.
template <typename T, typename Z>
struct NarrowFakeQuantizeOperandsElem {
  T qmin, qmax;
  QGRAD_HD_INLINE T operator()(T x, float scale, Z zero_point, std::uint8_t& m) const {
    const T s = static_cast<T>(scale);
    return NarrowFakeQuantizeElem<T>{T(1) / s, s, static_cast<T>(zero_point), qmin, qmax}(x, m);
  }
};

// Whether a fake quantizer's qparams can be used: scale finite and > 0; an integer zero point in
// [quant_min, quant_max], a float one (per_channel_affine_float_qparams) finite. Checked on the
// host for host values, and by a kernel where the qparams are device tensors.
QGRAD_HD_INLINE bool qparams_usable(float scale, double zero_point, bool float_zero_point,
                                    double quant_min, double quant_max) {
  const bool scale_ok = scale > 0 && scale - scale == 0;  // excludes NaN and inf
  if (float_zero_point) return scale_ok && zero_point - zero_point == 0;
  return scale_ok && zero_point >= quant_min && zero_point <= quant_max &&
         hd::rint(zero_point) == zero_point;
}

// The straight-through backward of every masked fake quantizer: dy * mask, a multiplication, so
// a negative dy masked out gives -0.0 and a NaN dy stays NaN, as in PyTorch.
template <typename T>
struct MaskedGradientElem {
  QGRAD_HD_INLINE T operator()(T dy, std::uint8_t m) const { return dy * static_cast<T>(m); }
};

// One element of the learnable backward (_fake_quantize_learnable_per_*_affine_backward).
// PyTorch: xq = rne(fma(x, 1/s, zp)); in range dS = ((dy * fma(xq - zp, s, -x)) * (1/s)) * g,
// dZP = 0; clamped dS = (dy * (bound - zp)) * g, dZP = (-dy * s) * g; dx = dy * in_range.
// PyTorch's vectorised CPU kernel is contracted into FMAs at exactly those two places, so they are
// explicit hd::fma; every other operation is unfused. A NaN x poisons dS and dZP (qgrad's choice:
// PyTorch's int64 conversion of NaN is undefined). Written branch-free (selects) so the CPU loop
// vectorises. Range tests compare in T when the bounds are exact in T (narrow), else in double as
// PyTorch's int64 comparison does. The caller sums dS and dZP.
template <typename T>
struct LearnableGradElem {
  T scale, inv, zp, g, small, big, qmin_t, qmax_t;
  double qmin, qmax, zpd;
  template <bool kNarrow>
  QGRAD_HD_INLINE T operator()(T x, T dy, T& ds, T& dz) const {
    const T xq = hd::rint(hd::fma(x, inv, zp));
    bool below, above;
    T q_minus_zp;
    if constexpr (kNarrow) {
      below = xq < qmin_t;
      above = xq > qmax_t;
      q_minus_zp = xq - zp;
    } else {
      const double q = static_cast<double>(xq);
      below = q < qmin;
      above = q > qmax;
      q_minus_zp = static_cast<T>(q - zpd);
    }
    const bool nan = xq != xq;
    const bool in = !(below | above | nan);
    const T diff = hd::fma(q_minus_zp, scale, -x);
    const T ds_in = ((dy * diff) * inv) * g;
    const T bound = below ? small : big;
    const T ds_out = (dy * bound) * g;
    const T dz_out = (-dy * scale) * g;
    T s = in ? ds_in : ds_out;
    T z = in ? T(0) : dz_out;
    ds = nan ? xq : s;
    dz = nan ? xq : z;
    return in ? dy : dy * T(0);
  }
};

// bound - zp of the learnable element: the per-tensor kernel holds an int64 zero point (an
// integer difference, taken in double, converted to T); the per-channel kernel holds a float zero
// point (bound converted to T, then subtracted in T).
template <typename T>
QGRAD_HD_INLINE T learnable_bound_minus_zp(std::int64_t bound, double zp, T z,
                                           bool integer_zero_point) {
  return integer_zero_point ? static_cast<T>(static_cast<double>(bound) - zp)
                            : static_cast<T>(static_cast<T>(bound) - z);
}

// The learnable element of one tensor or channel, from its qparams as the kernels receive them.
template <typename T>
QGRAD_HD_INLINE LearnableGradElem<T> make_learnable_elem(double scale, double zp, std::int64_t qmin,
                                                         std::int64_t qmax, double grad_factor,
                                                         bool integer_zero_point) {
  const T s = static_cast<T>(scale);
  const T z = static_cast<T>(zp);
  return {s,
          T(1) / s,
          z,
          static_cast<T>(grad_factor),
          learnable_bound_minus_zp<T>(qmin, zp, z, integer_zero_point),
          learnable_bound_minus_zp<T>(qmax, zp, z, integer_zero_point),
          static_cast<T>(qmin),
          static_cast<T>(qmax),
          static_cast<double>(qmin),
          static_cast<double>(qmax),
          static_cast<double>(z)};
}

// Below this magnitude every integer of the computation (bounds, zero point, their differences)
// is exact in float32, so the elements can be computed entirely in T.
inline constexpr std::int64_t kNarrowLimit = std::int64_t{1} << 23;

QGRAD_HD_INLINE bool is_narrow(std::int64_t qmin, std::int64_t qmax, std::int64_t zp) {
  return qmin >= -kNarrowLimit && qmin <= kNarrowLimit && qmax >= -kNarrowLimit &&
         qmax <= kNarrowLimit && zp >= -kNarrowLimit && zp <= kNarrowLimit;
}

// The learnable fake quantizer's qparams from its parameters, as the GPU computes them where the
// parameters stay device tensors (learnable_fake_quantize.cpp computes the same on the host):
// returns the forward's scale at float precision and sets the forward's zero point
// clamp(rne(zp), qmin, qmax) and the backward's, trunc(clamp(zp + 0.5, qmin, qmax)) in T per
// tensor, the forward's per channel (PyTorch's two roundings). The parameters are finite (checked
// first).
template <typename T>
struct LearnableQParamsElem {
  double qmin, qmax;
  bool per_tensor;
  QGRAD_HD_INLINE float operator()(T scale, T zero_point, std::int64_t& forward_zp,
                                   double& backward_zp) const {
    const double r = static_cast<double>(hd::rint(zero_point));
    forward_zp = static_cast<std::int64_t>(hd::min(hd::max(r, qmin), qmax));
    if (per_tensor) {
      const double h = static_cast<double>(zero_point + T(0.5));
      backward_zp = static_cast<double>(static_cast<std::int64_t>(hd::min(hd::max(h, qmin), qmax)));
    } else {
      backward_zp = static_cast<double>(forward_zp);
    }
    return static_cast<float>(scale);
  }
};

// The learnable backward with its qparams as operands (the scale at float precision and the
// backward's zero point, broadcast along x): LearnableGradElem built at each element from them,
// as the CPU kernels build it once per tensor or channel, so it gives their bits; dx is returned,
// the unreduced dS and dZP set. The CPU kernel takes the narrow form when the whole tensor is
// narrow; here each element decides from its own channel's zero point (the two forms agree
// wherever the narrow one applies).
template <typename T>
struct LearnableGradOperandsElem {
  std::int64_t qmin, qmax;
  double grad_factor;
  bool integer_zero_point;  // per tensor (PyTorch's int64 zero point) or per channel (float)
  QGRAD_HD_INLINE T operator()(T x, T dy, float scale, double zero_point, T& ds, T& dz) const {
    const LearnableGradElem<T> e =
        make_learnable_elem<T>(scale, zero_point, qmin, qmax, grad_factor, integer_zero_point);
    const bool narrow =
        sizeof(T) == sizeof(double) || is_narrow(qmin, qmax, static_cast<std::int64_t>(zero_point));
    return narrow ? e.template operator()<true>(x, dy, ds, dz)
                  : e.template operator()<false>(x, dy, ds, dz);
  }
};

}  // namespace qgrad::ao
