// The elements of torch.ao fake quantization with an integer zero point and of its masked
// backward, written once for the CPU drivers (quant/value_mask_loop.h, cpu::map) and the CUDA
// kernels (QGRAD_HD), each computed exactly as
// PyTorch 1.13's CPU kernels write it: x * (1/scale) (a multiply by the reciprocal), round half to
// even, the zero point added after rounding, clamping before any float-to-int conversion. Each
// returns the fake-quantized value and sets the straight-through gradient mask. Narrow ranges
// (every integer exact in float32) compute in T; the wide (qint32) per-tensor and per-channel
// kernels of PyTorch differ in where they convert to int64, and each has its element.
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

}  // namespace qgrad::ao
