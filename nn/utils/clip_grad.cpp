// clip_grad_norm_: per-gradient norms accumulated in double on one thread (deterministic),
// combined and applied with torch's rounding to the gradient dtype.
#include "nn/utils/clip_grad.h"

#include <algorithm>
#include <cmath>

#include "core/autograd/grad_mode.h"
#include "ops/device_check.h"

namespace qgrad::nn::utils {

namespace {

template <typename T>
double grad_norm(const Tensor& g, double p) {
  const Tensor c = g.contiguous();
  const T* d = c.data_ptr<T>();
  const std::int64_t n = c.numel();
  if (std::isinf(p)) {
    double m = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double a = std::fabs(static_cast<double>(d[i]));
      if (a > m || std::isnan(a)) m = a;
    }
    return m;
  }
  double s = 0;
  if (p == 2.0) {
    for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>(d[i]) * static_cast<double>(d[i]);
    return std::sqrt(s);
  }
  if (p == 1.0) {
    for (std::int64_t i = 0; i < n; ++i) s += std::fabs(static_cast<double>(d[i]));
    return s;
  }
  for (std::int64_t i = 0; i < n; ++i) s += std::pow(std::fabs(static_cast<double>(d[i])), p);
  return std::pow(s, 1.0 / p);
}

// Rounds v to dtype `dt` (float32 or float64).
double round_to(DType dt, double v) {
  return dt == kFloat32 ? static_cast<double>(static_cast<float>(v)) : v;
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  QGRAD_CHECK(norm_type > 0, ValueError,
              "clip_grad_norm_: norm_type must be positive or infinity, got ", norm_type);
  std::vector<Tensor> grads;
  for (const auto& p : parameters) {
    QGRAD_CHECK(p.defined(), ValueError, "clip_grad_norm_: a parameter is undefined");
    Tensor g = p.grad();
    if (!g.defined()) continue;
    require_cpu("clip_grad_norm_", g);
    require_floating("clip_grad_norm_", "grad", g);
    grads.push_back(g);
  }
  if (grads.empty()) return 0.0;
  const DType dt = grads[0].dtype();
  const bool inf = std::isinf(norm_type);
  double acc = 0;
  for (const auto& g : grads) {
    const double n = QGRAD_DISPATCH_FLOAT(g.dtype(), "clip_grad_norm_",
                                          [&] { return grad_norm<scalar_t>(g, norm_type); });
    const double rn = round_to(dt, n);  // each norm is a tensor of the gradient dtype
    if (inf)
      acc = (std::isnan(rn) || rn > acc) ? rn : acc;
    else
      acc += norm_type == 2.0 ? rn * rn : std::pow(rn, norm_type);
  }
  double total = inf ? acc : (norm_type == 2.0 ? std::sqrt(acc) : std::pow(acc, 1.0 / norm_type));
  total = round_to(dt, total);
  QGRAD_CHECK(!error_if_nonfinite || std::isfinite(total), ValueError,
              "clip_grad_norm_: the total norm of order ", norm_type,
              " for gradients from `parameters` is non-finite, so it cannot be clipped");
  double coef;
  if (dt == kFloat32) {
    const float denom = static_cast<float>(total) + static_cast<float>(1e-6);
    coef = std::min(static_cast<float>(max_norm) / denom, 1.0f);
  } else {
    coef = std::min(max_norm / (total + 1e-6), 1.0);
  }
  NoGradGuard no_grad;
  for (auto& g : grads) {
    QGRAD_DISPATCH_FLOAT(g.dtype(), "clip_grad_norm_", [&] {
      Tensor c = g.contiguous();
      scalar_t* d = c.data_ptr<scalar_t>();
      const auto s = static_cast<scalar_t>(coef);
      for (std::int64_t i = 0, n = c.numel(); i < n; ++i) d[i] = d[i] * s;
      if (!c.is_same(g))
        g.copy_(c);
      else
        g.bump_version();
    });
  }
  return total;
}

double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

}  // namespace qgrad::nn::utils
