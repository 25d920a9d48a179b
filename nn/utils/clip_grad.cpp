// clip_grad_norm_: per-gradient norms (the "grad_norm" kernel, accumulated in double in index
// order: deterministic), combined and applied ("grad_scale") with torch's rounding to the
// gradient dtype.
#include "nn/utils/clip_grad.h"

#include <algorithm>
#include <cmath>

#include "core/autograd/grad_mode.h"
#include "nn/utils/clip_grad_kernels.h"
#include "ops/device_check.h"

namespace qgrad::nn::utils {

namespace {

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
    require_floating("clip_grad_norm_", "grad", g);
    grads.push_back(g);
  }
  if (grads.empty()) return 0.0;
  const DType dt = grads[0].dtype();
  static const KernelTable<GradNormKernel>& norm_table = kernel_table<GradNormKernel>("grad_norm");
  const bool inf = std::isinf(norm_type);
  double acc = 0;
  for (const auto& g : grads) {
    const double n = norm_table("clip_grad_norm_", g)(g.contiguous(), norm_type);
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
  static const KernelTable<GradScaleKernel>& scale_table =
      kernel_table<GradScaleKernel>("grad_scale");
  for (auto& g : grads) {
    Tensor c = g.contiguous();
    scale_table("clip_grad_norm_", c)(c, coef);
    if (!c.is_same(g))
      g.copy_(c);
    else
      g.bump_version();
  }
  return total;
}

double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

}  // namespace qgrad::nn::utils
