// The scalar math of torch.ao's fused observer + fake quantization (PyTorch 1.13's
// fused_moving_avg_obs_fake_quant) and of fake quantization with a float zero point, written once
// for the CPU kernels and a later CUDA kernel (QGRAD_HD). Each function follows PyTorch 1.13's
// CPU code operation by operation: the moving average `isinf(m) ? cur : m + c * (cur - m)` in
// float32; ATen's quant_utils::ChooseQuantizationParams (its `_choose_qparams`, which differs
// from the observers' calculate_qparams: double scale, scale 0.1 for an empty range, a 6.1e-5
// scale floor that stretches the range, the zero point taken from whichever end has the smaller
// error and nudged with round-half-even, symmetric schemes by widening to a signed grid); the
// integer-zero-point element (x * (1/scale), rne, + zp, clamp) and the float-zero-point element
// (rne(fma(x, 1/scale, zp)) in float, clamp and dequantize in double).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/host_device.h"
#include "quant/observer/observed_range.h"
#include "quant/torch_ao/fake_quantize_elem.h"

namespace qgrad::ao::fused {

// One rounding of a * b + c (core/host_device.h).
using hd::fma;

// ATen's SMALL_SCALE_THRESHOLD (quant_utils.h).
constexpr float kSmallScaleThreshold = 6.1e-5f;

QGRAD_HD_INLINE bool is_inf(float v) {
  return v - v != v - v && v == v;  // inf - inf is NaN; NaN itself is excluded
}

// One step of the running statistic (calculate_moving_average): the first finite batch value
// replaces an infinite running value (the initial +inf / -inf).
QGRAD_HD_INLINE float moving_average(float running, float current, float averaging_const) {
  if (is_inf(running)) return current;
  const float diff = current - running;
  const float step = averaging_const * diff;
  return running + step;
}

struct ChosenQParams {
  float scale;
  std::int32_t zero_point;
};

QGRAD_HD_INLINE double abs_d(double v) {
  return v < 0 ? -v : v;
}
QGRAD_HD_INLINE float abs_f(float v) {
  return v < 0 ? -v : v;
}

// quant_utils::ChooseQuantizationParams(min, max, qmin, qmax, preserve_sparsity,
// force_scale_power_of_two = false, reduce_range = false). The caller has checked min <= max and
// that qmax - qmin fits comfortably in int32.
QGRAD_HD_INLINE ChosenQParams choose_qparams(float min, float max, std::int32_t qmin,
                                             std::int32_t qmax, bool preserve_sparsity) {
  if (min < 0 && max > 0 && preserve_sparsity) {
    const std::int32_t symmetric_qmin = -((qmax - qmin) / 2 + 1);
    const std::int32_t symmetric_qmax = (qmax - qmin) / 2;
    // fabs(float / int) is a float division; the larger of the two goes to double.
    const float a = abs_f(min / static_cast<float>(symmetric_qmin));
    const float b = abs_f(max / static_cast<float>(symmetric_qmax));
    const double max_scale = static_cast<double>(a < b ? b : a);
    min = static_cast<float>(max_scale * symmetric_qmin);
    max = static_cast<float>(max_scale * symmetric_qmax);
  }
  min = min < 0.f ? min : 0.f;
  max = max > 0.f ? max : 0.f;
  double scale =
      (static_cast<double>(max) - static_cast<double>(min)) / static_cast<double>(qmax - qmin);
  const float scale_f = static_cast<float>(scale);
  if (scale_f == 0.0f || is_inf(1.0f / scale_f)) scale = 0.1;
  if (scale < static_cast<double>(kSmallScaleThreshold)) {
    const float org_scale = static_cast<float>(scale);
    scale = static_cast<double>(kSmallScaleThreshold);
    if (min == 0.0f) {
      max = kSmallScaleThreshold * static_cast<float>(qmax - qmin);
    } else if (max == 0.0f) {
      min = -kSmallScaleThreshold * static_cast<float>(qmax - qmin);
    } else {
      const float amplifier = kSmallScaleThreshold / org_scale;
      min *= amplifier;
      max *= amplifier;
    }
  }
  const double zp_from_min = static_cast<double>(qmin) - static_cast<double>(min) / scale;
  const double zp_from_max = static_cast<double>(qmax) - static_cast<double>(max) / scale;
  const double err_min = abs_d(static_cast<double>(qmin)) + abs_d(static_cast<double>(min) / scale);
  const double err_max = abs_d(static_cast<double>(qmax)) + abs_d(static_cast<double>(max) / scale);
  double initial = err_min < err_max ? zp_from_min : zp_from_max;
  if (min < 0 && max > 0 && preserve_sparsity) initial = static_cast<double>(qmin + qmax) / 2;
  std::int32_t zp;
  if (initial < qmin)
    zp = qmin;
  else if (initial > qmax)
    zp = qmax;
  else
    zp = static_cast<std::int32_t>(hd::rint(initial));
  return {static_cast<float>(scale), zp};
}

// What one call of the fused op does, besides its flags (which are tensors, read where the
// state lives).
struct FusedObsFakeQuantParams {
  bool per_channel = false;  // along axis 0 (PyTorch 1.13 supports no other axis)
  bool symmetric = false;    // ChooseQuantizationParams' preserve_sparsity
  float averaging_const = 0.01f;
  std::int32_t quant_min = 0;
  std::int32_t quant_max = 255;
};

// The batch range (quant/observer/observed_range.h), as the fused op's code names it.
using ao::batch_max;
using ao::batch_min;
using ao::combine;
using ao::empty_range;
using ao::kNoZero;
using ao::observe_element;
using ao::ObservedRange;

// Fake quantization with an integer zero point, for ranges whose integers are exact in float
// (|bound|, |zp| <= 2^23), as PyTorch's per-tensor and per-channel CPU kernels compute it: the
// narrow element of torch.ao's fake quantization.
using FakeQuantElem = NarrowFakeQuantizeElem<float>;

QGRAD_HD_INLINE FakeQuantElem make_fake_quant_elem(float scale, std::int32_t zp, std::int32_t qmin,
                                                   std::int32_t qmax) {
  return {1.0f / scale, scale, static_cast<float>(zp), static_cast<float>(qmin),
          static_cast<float>(qmax)};
}

// One step of the fused op for one tensor or channel after its range was observed: the running
// statistics take the batch's min and max when observing; when fake quantizing, the qparams
// come from them. False (and q untouched) when the running min <= max fails (NaN statistics),
// which PyTorch reports after it has updated them.
QGRAD_HD_INLINE bool fused_step(const FusedObsFakeQuantParams& p, bool observe, bool fake_quant,
                                float bmin, float bmax, float& rmin, float& rmax,
                                ChosenQParams& q) {
  if (observe) {
    rmin = moving_average(rmin, bmin, p.averaging_const);
    rmax = moving_average(rmax, bmax, p.averaging_const);
  }
  if (!fake_quant) return true;
  if (!(rmin <= rmax)) return false;
  q = choose_qparams(rmin, rmax, p.quant_min, p.quant_max, p.symmetric);
  return true;
}

// The straight-through gradient of an element whose mask is bit k of `byte` (the fused op's
// packed per-tensor mask): dy * bit, so NaN * 0 stays NaN, as dy * m of a byte mask.
QGRAD_HD_INLINE float masked_bit_gradient(float dy, unsigned byte, unsigned k) {
  return dy * static_cast<float>((byte >> k) & 1u);
}

// PyTorch 1.13's per-channel kernel with a float zero point: q = lrintf(zp + x * (1/scale)) (the
// sum as one fused multiply-add in float, then rounded to the nearest integer, ties to even); mask
// qmin <= q <= qmax; y = (clamp(q, qmin, qmax) - zp) * scale evaluated in double (std::fmin/fmax of
// a long and an int64 promote to double) and rounded to T once. A NaN x gives NaN and mask 0
// (PyTorch's lrintf of NaN is unspecified).
template <typename T>
struct FloatZpFakeQuantElem {
  float inv, scale, zp;
  double qmin, qmax;
  QGRAD_HD_INLINE T operator()(T x, std::uint8_t& m) const {
    // PyTorch's kernel is compiled with FMA contraction: zp + x * inv is one fused
    // multiply-add (a single rounding; checked against its output at ties). For a double x it
    // is taken in double, then narrowed by lrintf's float argument.
    const float v = static_cast<float>(fma(x, static_cast<T>(inv), static_cast<T>(zp)));
    if (!(v == v)) {
      m = 0;
      return static_cast<T>(v);
    }
    const double q = static_cast<double>(hd::rint(v));
    m = static_cast<std::uint8_t>((q >= qmin) & (q <= qmax));
    const double c = q < qmin ? qmin : (q > qmax ? qmax : q);
    return static_cast<T>((c - static_cast<double>(zp)) * static_cast<double>(scale));
  }
};

// FloatZpFakeQuantElem with its qparams as operands (see NarrowFakeQuantizeOperandsElem):
// 1.0f / scale in float, as the CPU kernel computes it once per channel.
template <typename T>
struct FloatZpFakeQuantOperandsElem {
  double qmin, qmax;
  QGRAD_HD_INLINE T operator()(T x, float scale, float zero_point, std::uint8_t& m) const {
    return FloatZpFakeQuantElem<T>{1.0f / scale, scale, zero_point, qmin, qmax}(x, m);
  }
};

}  // namespace qgrad::ao::fused
