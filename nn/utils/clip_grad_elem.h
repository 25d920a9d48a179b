// clip_grad_norm_'s element math, written once for both devices: the norm's fold (each element's
// term, how terms combine, the final root; double throughout, NaN propagating), the total norm
// and clip coefficient from the per-gradient norms (computed where the gradients are, so the host
// need not wait for them), and the scaling g * (coef rounded to g's dtype), as torch multiplies
// by the clip coefficient tensor.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"
#include "nn/utils/clip_grad_kernels.h"

namespace qgrad::nn::utils::clip_grad_elem {

// The norm of order p as a fold over the elements: acc = combine(acc, term(x)) from 0, then
// finish(acc). p = 1, 2 and infinity take exact special forms (no pow), as torch's do.
struct NormFold {
  enum class Kind { One, Two, Inf, General };
  Kind kind;
  double p;

  static NormFold of(double p) {
    if (std::isinf(p)) return {Kind::Inf, p};
    if (p == 1.0) return {Kind::One, p};
    if (p == 2.0) return {Kind::Two, p};
    return {Kind::General, p};
  }
  QGRAD_HD_INLINE double term(double v) const {
    switch (kind) {
      case Kind::Two:
        return v * v;
      case Kind::General:
        return ::pow(::fabs(v), p);
      default:
        return ::fabs(v);
    }
  }
  // The max for infinity (a NaN term wins and stays), the sum otherwise.
  QGRAD_HD_INLINE double combine(double acc, double t) const {
    if (kind != Kind::Inf) return acc + t;
    return (t > acc || hd::isnan(t)) && !hd::isnan(acc) ? t : acc;
  }
  QGRAD_HD_INLINE double finish(double acc) const {
    if (kind == Kind::Two) return ::sqrt(acc);
    if (kind == Kind::General) return ::pow(acc, 1.0 / p);
    return acc;
  }
};

// The total norm from the per-gradient norms, as torch combines them: each norm rounded to the
// gradients' dtype (torch holds it as a tensor of that dtype), folded with NormFold, the root
// rounded again; then the clip coefficient min(max_norm / (total + 1e-6), 1) in that dtype, NaN
// propagating as torch.clamp does. Writes out[0] = total, out[1] = coefficient.
struct ClipTotal {
  NormFold f;
  bool float32;  // the gradients' dtype is float32 (else float64)
  double max_norm;

  QGRAD_HD_INLINE double rounded(double v) const {
    return float32 ? static_cast<double>(static_cast<float>(v)) : v;
  }
  QGRAD_HD void operator()(const double* norms, std::int64_t n, double* out) const {
    double acc = 0;
    for (std::int64_t i = 0; i < n; ++i) acc = f.combine(acc, f.term(rounded(norms[i])));
    const double total = rounded(f.finish(acc));
    out[0] = total;
    if (float32) {
      const float denom = static_cast<float>(total) + static_cast<float>(1e-6);
      out[1] = hd::min(static_cast<float>(max_norm) / denom, 1.0f);
    } else {
      out[1] = hd::min(max_norm / (total + 1e-6), 1.0);
    }
  }
};

template <typename T>
struct Scale {
  T s;
  QGRAD_HD T operator()(T v) const { return v * s; }
};

// Scale by a coefficient the device computed (ClipTotal's out[1]), read where the kernel runs.
template <typename T>
struct ScaleByStored {
  const double* coef;
  QGRAD_HD T operator()(T v) const { return Scale<T>{static_cast<T>(*coef)}(v); }
};

}  // namespace qgrad::nn::utils::clip_grad_elem
