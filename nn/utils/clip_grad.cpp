// clip_grad_norm_: per-gradient norms (the "grad_norm" kernel, accumulated in double in a fixed
// order: deterministic) into one float64 tensor on the first gradient's device, the total norm
// and coefficient from them there ("clip_coef"), and the scaling by that stored coefficient
// ("grad_scale"), with torch's rounding to the gradient dtype. All of it is queued on the device;
// only the double-returning form and error_if_nonfinite read a number back.
#include "nn/utils/clip_grad.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/utils/clip_grad_kernels.h"
#include "ops/device_check.h"

namespace qgrad::nn::utils {

namespace {

constexpr const char* kOp = "clip_grad_norm_";

std::vector<Tensor> gradients_of(const std::vector<Tensor>& parameters, double norm_type) {
  QGRAD_CHECK(norm_type > 0, ValueError,
              "clip_grad_norm_: norm_type must be positive or infinity, got ", norm_type);
  std::vector<Tensor> grads;
  for (const auto& p : parameters) {
    QGRAD_CHECK(p.defined(), ValueError, "clip_grad_norm_: a parameter is undefined");
    Tensor g = p.grad();
    if (!g.defined()) continue;
    require_floating(kOp, "grad", g);
    grads.push_back(g);
  }
  return grads;
}

// float64 [2] on the first gradient's device: the total norm (rounded to the first gradient's
// dtype) and the clip coefficient.
Tensor total_and_coef(const std::vector<Tensor>& grads, double max_norm, double norm_type) {
  static const KernelTable<GradNormKernel>& norm_table = kernel_table(kGradNormKernels);
  static const KernelTable<ClipCoefKernel>& coef_table = kernel_table(kClipCoefKernels);
  const Device device = grads[0].device();
  const TensorOptions f64 = TensorOptions().dtype(kFloat64).device(device);
  Tensor norms = empty({static_cast<std::int64_t>(grads.size())}, f64);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const Tensor g = grads[i].contiguous();
    const auto slot = static_cast<std::int64_t>(i);
    if (g.device() == device) {
      norm_table(kOp, g)(g, norm_type, norms, slot);
    } else {  // computed where the gradient is, then brought over
      Tensor own = empty({1}, TensorOptions().dtype(kFloat64).device(g.device()));
      norm_table(kOp, g)(g, norm_type, own, 0);
      norms.narrow(0, slot, 1).copy_(own.to(device));  // copy_ stays on one device
    }
  }
  Tensor out = empty({2}, f64);
  coef_table(kOp, norms)(norms, norm_type, grads[0].dtype(), max_norm, out);
  return out;
}

}  // namespace

Tensor clip_grad_norm_tensor_(const std::vector<Tensor>& parameters, double max_norm,
                              double norm_type, bool error_if_nonfinite) {
  const std::vector<Tensor> grads = gradients_of(parameters, norm_type);
  if (grads.empty()) return scalar_tensor(0.0);
  const Tensor out = total_and_coef(grads, max_norm, norm_type);
  const Tensor total = out.select(0, 0);
  if (error_if_nonfinite) {
    const double t = total.item<double>();
    QGRAD_CHECK(std::isfinite(t), ValueError, "clip_grad_norm_: the total norm of order ",
                norm_type,
                " for gradients from `parameters` is non-finite, so it cannot be clipped");
  }
  NoGradGuard no_grad;
  static const KernelTable<GradScaleKernel>& scale_table = kernel_table(kGradScaleKernels);
  const Tensor coef = out.narrow(0, 1, 1);
  std::vector<Tensor> coef_on;  // the coefficient copied to each other device, once
  auto coef_for = [&](Device d) {
    if (d == coef.device()) return coef;
    for (const Tensor& t : coef_on)
      if (t.device() == d) return t;
    return coef_on.emplace_back(coef.to(d));
  };
  for (Tensor g : grads) {  // a handle: copy_ and bump_version act on the gradient itself
    const Tensor c = g.contiguous();
    scale_table(kOp, c)(c, coef_for(c.device()));
    if (!c.is_same(g))
      g.copy_(c);
    else
      g.bump_version();
  }
  return total.to(grads[0].dtype());
}

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  return clip_grad_norm_tensor_(parameters, max_norm, norm_type, error_if_nonfinite).item<double>();
}

double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

}  // namespace qgrad::nn::utils
