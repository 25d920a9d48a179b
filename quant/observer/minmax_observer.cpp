// Per-tensor min/max observers: the batch's (min, max) comes from the "observer.aminmax" kernel
// table and the running statistics are updated on the host; off the CPU they stay device tensors
// (observe_on_device).
#include "quant/observer/minmax_observer.h"

#include <cmath>
#include <limits>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "quant/observer/aminmax_kernels.h"

namespace qgrad::ao {

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();

// PyTorch's torch.min / torch.max of two values: NaN propagates.
float nan_min(float a, float b) {
  return (a != a || b != b) ? std::nanf("") : std::min(a, b);
}
float nan_max(float a, float b) {
  return (a != a || b != b) ? std::nanf("") : std::max(a, b);
}
}  // namespace

MinMaxObserver::MinMaxObserver(const ObserverOptions& options)
    : MinMaxObserver("MinMaxObserver", options) {}

MinMaxObserver::MinMaxObserver(const char* name, const ObserverOptions& options)
    : UniformQuantizationObserver(name, options, /*per_channel=*/false) {
  min_val_ = scalar_tensor(kInf, TensorOptions().dtype(kFloat32));
  max_val_ = scalar_tensor(-kInf, TensorOptions().dtype(kFloat32));
}

void MinMaxObserver::batch_min_max(const char* name, const Tensor& x, float& mn, float& mx) const {
  static const KernelTable<AminmaxKernel>& table = kernel_table(kAminmaxKernels);
  require_floating(name, "input", x);
  const MinMax r = table(name, x)(x.detach());
  mn = r.min;
  mx = r.max;
  reduce_min_max(mn, mx);  // the global batch's range (a no-op without a group)
}

Tensor MinMaxObserver::forward(const Tensor& x) {
  if (x.defined() && x.numel() == 0) return x;
  NoGradGuard no_grad;
  if (x.defined() && !x.device().is_cpu()) {
    require_floating(name_, "input", x);
    observe_on_device(x.detach(), -1, -1.0f);
    return x;
  }
  float mn, mx;
  batch_min_max(name_, x, mn, mx);
  min_val_.fill_(nan_min(mn, min_val_.item<float>()));
  max_val_.fill_(nan_max(mx, max_val_.item<float>()));
  return x;
}

QParams MinMaxObserver::calculate_qparams() const {
  return calculate_qparams_from(min_val_, max_val_);
}

void MinMaxObserver::reset_min_max_vals() {
  min_val_.fill_(kInf);
  max_val_.fill_(-kInf);
}

MovingAverageMinMaxObserver::MovingAverageMinMaxObserver(double averaging_constant,
                                                         const ObserverOptions& options)
    : MinMaxObserver("MovingAverageMinMaxObserver", options),
      averaging_constant_(averaging_constant) {
  QGRAD_CHECK(
      std::isfinite(averaging_constant) && averaging_constant >= 0 && averaging_constant <= 1,
      ValueError, name_, ": averaging_constant must lie in [0, 1], got ", averaging_constant);
}

Tensor MovingAverageMinMaxObserver::forward(const Tensor& x) {
  if (x.defined() && x.numel() == 0) return x;
  NoGradGuard no_grad;
  if (x.defined() && !x.device().is_cpu()) {
    require_floating(name_, "input", x);
    // PyTorch multiplies by the constant converted to float32.
    observe_on_device(x.detach(), -1, static_cast<float>(averaging_constant_));
    return x;
  }
  float cur_min, cur_max;
  batch_min_max(name_, x, cur_min, cur_max);
  const float m = min_val_.item<float>(), M = max_val_.item<float>();
  if (m == kInf && M == -kInf) {
    min_val_.fill_(cur_min);
    max_val_.fill_(cur_max);
  } else {
    // PyTorch multiplies by the constant converted to float32, in separate float32 ops.
    const float c = static_cast<float>(averaging_constant_);
    const float dmin = cur_min - m;
    const float dmax = cur_max - M;
    const float step_min = c * dmin;
    const float step_max = c * dmax;
    min_val_.fill_(m + step_min);
    max_val_.fill_(M + step_max);
  }
  return x;
}

}  // namespace qgrad::ao
