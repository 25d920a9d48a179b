// CPU kernels of AIMET's MinMaxEncodingAnalyzer: the statistics merge (in double) and the
// statistics -> range rule (element by element in the statistics' dtype), registered in the
// "aimet.minmax_*" tables.
#include "quant/aimet/minmax_encoding_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/factory.h"

namespace qgrad::aimet {

namespace {

constexpr float kMinimumScale = 1.1920928955078125e-07f;

std::pair<Tensor, Tensor> minmax_merge_cpu(const Tensor& run_min, const Tensor& run_max,
                                           const Tensor& batch_min, const Tensor& batch_max) {
  const std::vector<double> a = run_min.to_vector<double>(), b = batch_min.to_vector<double>();
  const std::vector<double> c = run_max.to_vector<double>(), d = batch_max.to_vector<double>();
  std::vector<double> mn(a.size()), mx(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    mn[i] = (std::isnan(a[i]) || std::isnan(b[i])) ? std::nan("") : std::min(a[i], b[i]);
    mx[i] = (std::isnan(c[i]) || std::isnan(d[i])) ? std::nan("") : std::max(c[i], d[i]);
  }
  const TensorOptions o = TensorOptions().dtype(run_min.dtype());
  return {from_vector<double>(mn, run_min.shape(), o), from_vector<double>(mx, run_min.shape(), o)};
}

void minmax_encodings_cpu(const Tensor& min, const Tensor& max, std::int64_t num_steps,
                          bool symmetric, const Tensor& out_min, const Tensor& out_max) {
  // AIMET computes in the statistics' dtype (float32 in practice); the rule is applied in T.
  QGRAD_DISPATCH_FLOAT(min.dtype(), "aimet.MinMaxEncodingAnalyzer.compute_encodings", [&] {
    using T = scalar_t;
    const std::vector<double> lo = min.to_vector<double>(), hi = max.to_vector<double>();
    T* pmin = out_min.data_ptr<T>();
    T* pmax = out_max.data_ptr<T>();
    const T n = static_cast<T>(num_steps);
    const std::int64_t pos_steps = num_steps / 2, neg_steps = (num_steps + 1) / 2;
    const T eps = static_cast<T>(kMinimumScale);
    const T big = std::numeric_limits<T>::max();
    for (std::size_t i = 0; i < lo.size(); ++i) {
      const T min0 = std::min(static_cast<T>(lo[i]), T(0));
      const T max0 = std::max(static_cast<T>(hi[i]), T(0));
      const T diff = (max0 - min0) / n;
      const T adj = diff < eps ? eps : T(0);
      T umin, umax;
      if (symmetric) {
        umax = max0 + static_cast<T>(pos_steps) * adj;
        umin = min0 - static_cast<T>(neg_steps) * adj;
        const T delta =
            std::max(umax / static_cast<T>(pos_steps), -umin / static_cast<T>(neg_steps));
        umin = static_cast<T>(-neg_steps) * delta;
        umax = static_cast<T>(pos_steps) * delta;
      } else {
        umax = max0 + n * adj;
        umin = min0;
      }
      pmax[i] = std::min(umax, big);
      pmin[i] = std::max(umin, -big);
    }
  });
}

}  // namespace

void register_minmax_encoding_cpu_kernels(KernelRegistry& r) {
  r.table(kMinMaxMergeKernels).define(DeviceType::CPU, &minmax_merge_cpu, kFloatingDTypes);
  r.table(kMinMaxEncodingsKernels).define(DeviceType::CPU, &minmax_encodings_cpu, kFloatingDTypes);
}

}  // namespace qgrad::aimet
