// Per-channel min/max observers: the batch's per-channel (min, max) comes from the
// "observer.aminmax_per_channel" kernel table and the running statistics are updated on the host;
// off the CPU they stay device tensors (observe_on_device).
#include "quant/observer/per_channel_minmax_observer.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "quant/observer/aminmax_kernels.h"

namespace qgrad::ao {

namespace {
float nan_min(float a, float b) {
  return (a != a || b != b) ? std::nanf("") : std::min(a, b);
}
float nan_max(float a, float b) {
  return (a != a || b != b) ? std::nanf("") : std::max(a, b);
}

Tensor float_vector(const std::vector<float>& v) {
  return from_vector<float>(v, {static_cast<std::int64_t>(v.size())});
}
}  // namespace

PerChannelMinMaxObserver::PerChannelMinMaxObserver(std::int64_t ch_axis,
                                                   const ObserverOptions& options)
    : PerChannelMinMaxObserver("PerChannelMinMaxObserver", ch_axis, options) {}

PerChannelMinMaxObserver::PerChannelMinMaxObserver(const char* name, std::int64_t ch_axis,
                                                   const ObserverOptions& options)
    : UniformQuantizationObserver(name, options, /*per_channel=*/true), ch_axis_(ch_axis) {
  min_val_ = empty({0}, TensorOptions().dtype(kFloat32));
  max_val_ = empty({0}, TensorOptions().dtype(kFloat32));
}

void PerChannelMinMaxObserver::batch_min_max(const Tensor& x, std::vector<float>& mn,
                                             std::vector<float>& mx) const {
  static const KernelTable<AminmaxPerChannelKernel>& table =
      kernel_table(kAminmaxPerChannelKernels);
  require_floating(name_, "input", x);
  AminmaxPerChannelKernel& aminmax = table(name_, x);
  const std::int64_t axis = channel_axis(x);
  const std::vector<MinMax> r = aminmax(x.detach(), axis);
  mn.resize(r.size());
  mx.resize(r.size());
  for (std::size_t c = 0; c < r.size(); ++c) {
    mn[c] = r[c].min;
    mx[c] = r[c].max;
  }
  reduce_min_max(mn, mx);  // the global batch's ranges (a no-op without a group)
}

// The normalised channel axis of x, checked against the running statistics.
std::int64_t PerChannelMinMaxObserver::channel_axis(const Tensor& x) const {
  require_floating(name_, "input", x);
  const std::int64_t d = x.dim();
  QGRAD_CHECK(d >= 1 && ch_axis_ >= -d && ch_axis_ < d, IndexError, name_, ": ch_axis ", ch_axis_,
              " out of range for an input of shape ", x.shape());
  const std::int64_t axis = ch_axis_ < 0 ? ch_axis_ + d : ch_axis_;
  const std::int64_t C = x.size(axis);
  QGRAD_CHECK(min_val_.numel() == 0 || min_val_.numel() == C, ShapeError, name_, ": the input has ",
              C, " channels along axis ", axis, " (shape ", x.shape(),
              ") but the running statistics have ", min_val_.numel());
  return axis;
}

Tensor PerChannelMinMaxObserver::forward(const Tensor& x) {
  if (x.defined() && x.numel() == 0) return x;
  NoGradGuard no_grad;
  if (x.defined() && !x.device().is_cpu()) {
    observe_on_device(x.detach(), channel_axis(x), -1.0f);
    return x;
  }
  std::vector<float> mn, mx;
  batch_min_max(x, mn, mx);
  if (min_val_.numel() != 0) {
    const std::vector<float> m = min_val_.to_vector<float>(), M = max_val_.to_vector<float>();
    for (std::size_t c = 0; c < mn.size(); ++c) {
      mn[c] = nan_min(mn[c], m[c]);
      mx[c] = nan_max(mx[c], M[c]);
    }
  }
  min_val_ = float_vector(mn);
  max_val_ = float_vector(mx);
  return x;
}

QParams PerChannelMinMaxObserver::calculate_qparams() const {
  return calculate_qparams_from(min_val_, max_val_);
}

void PerChannelMinMaxObserver::reset_min_max_vals() {
  min_val_ = empty({0}, TensorOptions().dtype(kFloat32));
  max_val_ = empty({0}, TensorOptions().dtype(kFloat32));
}

MovingAveragePerChannelMinMaxObserver::MovingAveragePerChannelMinMaxObserver(
    double averaging_constant, std::int64_t ch_axis, const ObserverOptions& options)
    : PerChannelMinMaxObserver("MovingAveragePerChannelMinMaxObserver", ch_axis, options),
      averaging_constant_(averaging_constant) {
  QGRAD_CHECK(
      std::isfinite(averaging_constant) && averaging_constant >= 0 && averaging_constant <= 1,
      ValueError, name_, ": averaging_constant must lie in [0, 1], got ", averaging_constant);
}

Tensor MovingAveragePerChannelMinMaxObserver::forward(const Tensor& x) {
  if (x.defined() && x.numel() == 0) return x;
  NoGradGuard no_grad;
  if (x.defined() && !x.device().is_cpu()) {
    observe_on_device(x.detach(), channel_axis(x), static_cast<float>(averaging_constant_));
    return x;
  }
  std::vector<float> mn, mx;
  batch_min_max(x, mn, mx);
  if (min_val_.numel() != 0) {
    const std::vector<float> m = min_val_.to_vector<float>(), M = max_val_.to_vector<float>();
    const float c = static_cast<float>(averaging_constant_);
    for (std::size_t i = 0; i < mn.size(); ++i) {
      const float dmin = mn[i] - m[i], dmax = mx[i] - M[i];
      const float smin = c * dmin, smax = c * dmax;
      mn[i] = m[i] + smin;
      mx[i] = M[i] + smax;
    }
  }
  min_val_ = float_vector(mn);
  max_val_ = float_vector(mx);
  return x;
}

}  // namespace qgrad::ao
