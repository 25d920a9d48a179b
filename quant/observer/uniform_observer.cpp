// The observers' quantization-parameter rule, element by element in float32.
#include "quant/observer/uniform_observer.h"

#include <algorithm>
#include <cmath>

#include "core/factory.h"
#include "quant/observer/aminmax_kernels.h"
#include "quant/observer/observer_kernels.h"

namespace qgrad::ao {

UniformQuantizationObserver::UniformQuantizationObserver(const char* name,
                                                         const ObserverOptions& options,
                                                         bool per_channel)
    : name_(name), options_(options) {
  QGRAD_CHECK(is_per_channel(options.qscheme_) == per_channel, ValueError, name, ": qscheme ",
              qscheme_name(options.qscheme_), " is not supported (expected a ",
              per_channel ? "per-channel" : "per-tensor", " scheme)");
  QGRAD_CHECK(!(is_symmetric(options.qscheme_) && options.reduce_range_ &&
                options.dtype_ == QuantDType::QUInt8),
              ValueError, name, ": cannot reduce range for symmetric quantization for quint8");
  QGRAD_CHECK(std::isfinite(options.eps_) && options.eps_ > 0, ValueError, name,
              ": eps must be finite and > 0, got ", options.eps_);
  range_ = calculate_qmin_qmax(options.quant_min_, options.quant_max_, options.dtype_,
                               options.reduce_range_);
  eps_ = full({1}, static_cast<float>(options.eps_), TensorOptions().dtype(kFloat32));
}

void UniformQuantizationObserver::observe_on_device(const Tensor& x, std::int64_t axis,
                                                    float averaging) {
  static const KernelTable<AminmaxIntoKernel>& aminmax = kernel_table(kAminmaxIntoKernels);
  static const KernelTable<RunningStatsKernel>& update = kernel_table(kRunningStatsKernels);
  QGRAD_CHECK(min_val_.device() == x.device() && max_val_.device() == x.device(), DeviceError,
              name_, ": the input is on ", x.device(), " but the running statistics are on ",
              min_val_.device(), "; move the observer's module with the model");
  const Tensor xf = x.dtype() == kFloat32 ? x : x.to(kFloat32);
  AminmaxIntoKernel& into = aminmax(name_, xf);
  const std::int64_t n = axis < 0 ? 1 : x.size(axis);
  const TensorOptions f32 = TensorOptions().dtype(kFloat32).device(x.device());
  Tensor bmin = empty({n}, f32), bmax = empty({n}, f32);
  into(xf, axis, bmin, bmax);
  reduce_min_max(bmin, bmax);   // the global batch's range (a no-op without a group)
  if (min_val_.numel() == 0) {  // per channel, the first batch: its statistics
    min_val_ = bmin;
    max_val_ = bmax;
    return;
  }
  const Tensor new_min = empty({n}, f32), new_max = empty({n}, f32);
  update(name_, bmin)(min_val_.reshape({n}), max_val_.reshape({n}), bmin, bmax, averaging, axis < 0,
                      new_min, new_max);
  min_val_.copy_(new_min.reshape(min_val_.shape()));
  max_val_.copy_(new_max.reshape(max_val_.shape()));
}

QParams UniformQuantizationObserver::calculate_qparams_from(const Tensor& min_val,
                                                            const Tensor& max_val) const {
  const TensorOptions f32 = TensorOptions().dtype(kFloat32).device(min_val.device());
  const TensorOptions i64 = TensorOptions().dtype(kInt64).device(min_val.device());
  auto defaults = [&] { return QParams{full({1}, 1.0, f32), zeros({1}, i64)}; };
  if (min_val.numel() == 0 || max_val.numel() == 0) return defaults();
  QGRAD_CHECK(min_val.shape() == max_val.shape(), ShapeError, name_,
              ": calculate_qparams: min_val shape ", min_val.shape(),
              " differs from max_val shape ", max_val.shape());
  if (!min_val.device().is_cpu()) return calculate_qparams_on_device(min_val, max_val);
  const std::vector<float> mins = min_val.to_vector<float>();
  const std::vector<float> maxs = max_val.to_vector<float>();
  if (min_val.dim() == 0 && std::isinf(mins[0]) && mins[0] > 0 && std::isinf(maxs[0]) &&
      maxs[0] < 0)
    return defaults();
  for (std::size_t i = 0; i < mins.size(); ++i) {
    QGRAD_CHECK(mins[i] <= maxs[i], ValueError, name_, ": calculate_qparams: min ", mins[i],
                " should be <= max ", maxs[i], " (element ", i, "; NaN statistics are invalid)");
    QGRAD_CHECK(std::isfinite(mins[i]) && std::isfinite(maxs[i]), ValueError, name_,
                ": calculate_qparams: statistics must be finite, got min ", mins[i], " max ",
                maxs[i], " (element ", i, ")");
  }

  const std::int64_t qmin = range_.quant_min, qmax = range_.quant_max;
  const float eps = static_cast<float>(options_.eps_);
  const QScheme q = options_.qscheme_;
  const Shape out_shape{static_cast<std::int64_t>(mins.size())};
  Tensor scale = empty(out_shape, f32);
  float* ps = scale.data_ptr<float>();
  if (q == QScheme::PerChannelAffineFloatQParams) {
    Tensor zp = empty(out_shape, f32);
    float* pz = zp.data_ptr<float>();
    const float range = static_cast<float>(static_cast<double>(qmax - qmin));
    for (std::size_t i = 0; i < mins.size(); ++i) {
      float s = (maxs[i] - mins[i]) / range;
      s = s > eps ? s : 1.0f;
      ps[i] = s;
      pz[i] = -mins[i] / s;
    }
    return {scale, zp};
  }
  Tensor zp = empty(out_shape, i64);
  std::int64_t* pz = zp.data_ptr<std::int64_t>();
  for (std::size_t i = 0; i < mins.size(); ++i) {
    const float min_neg = std::min(mins[i], 0.0f);
    const float max_pos = std::max(maxs[i], 0.0f);
    if (is_symmetric(q)) {
      const float amax = std::max(-min_neg, max_pos);
      const float half = static_cast<float>(static_cast<double>(qmax - qmin) / 2.0);
      ps[i] = std::max(amax / half, eps);
      std::int64_t z = 0;
      if (options_.dtype_ == QuantDType::QUInt8) {
        const std::int64_t sum = qmin + qmax;
        z = options_.quant_min_ ? (sum >= 0 ? sum / 2 : -((-sum + 1) / 2)) : 128;
      }
      pz[i] = z;
    } else {
      const float range = static_cast<float>(static_cast<double>(qmax - qmin));
      const float s = std::max((max_pos - min_neg) / range, eps);
      ps[i] = s;
      const std::int64_t z = qmin - static_cast<std::int64_t>(std::nearbyint(min_neg / s));
      pz[i] = std::min(std::max(z, qmin), qmax);
    }
  }
  return {scale, zp};
}

QParams UniformQuantizationObserver::calculate_qparams_on_device(const Tensor& min_val,
                                                                 const Tensor& max_val) const {
  static const KernelTable<ObserverQParamsKernel>& table = kernel_table(kObserverQParamsKernels);
  const std::int64_t n = min_val.numel();
  const std::int64_t qmin = range_.quant_min, qmax = range_.quant_max;
  const QScheme q = options_.qscheme_;
  ObserverQParamsRule rule;
  rule.float_qparams = q == QScheme::PerChannelAffineFloatQParams;
  rule.unobserved_ok = min_val.dim() == 0;
  const float eps = static_cast<float>(options_.eps_);
  const float range = static_cast<float>(static_cast<double>(qmax - qmin));
  rule.floating = {eps, range};
  std::int64_t symmetric_zp = 0;
  if (options_.dtype_ == QuantDType::QUInt8) {
    const std::int64_t sum = qmin + qmax;
    symmetric_zp = options_.quant_min_ ? (sum >= 0 ? sum / 2 : -((-sum + 1) / 2)) : 128;
  }
  rule.integer = {eps,
                  static_cast<float>(static_cast<double>(qmax - qmin) / 2.0),
                  range,
                  qmin,
                  qmax,
                  symmetric_zp,
                  is_symmetric(q)};
  const Tensor mn = min_val.to(kFloat32).reshape({n}).contiguous();
  const Tensor mx = max_val.to(kFloat32).reshape({n}).contiguous();
  const Device d = min_val.device();
  Tensor scale = empty({n}, TensorOptions().dtype(kFloat32).device(d));
  Tensor zp = empty({n}, TensorOptions().dtype(rule.float_qparams ? kFloat32 : kInt64).device(d));
  table(name_, mn)(name_, mn, mx, rule, scale, zp);
  return {scale, zp};
}

}  // namespace qgrad::ao
