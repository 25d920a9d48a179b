// CPU kernels of AIMET's MinMaxEncodingAnalyzer: the statistics merge (in double) and the
// statistics -> range rule (element by element in the statistics' dtype), registered in the
// "aimet.minmax_*" tables. The per-element math is minmax_encoding_elem.h's.
#include "quant/aimet/minmax_encoding_kernels.h"

#include <limits>
#include <vector>

#include "core/factory.h"
#include "quant/aimet/minmax_encoding_elem.h"

namespace qgrad::aimet {

namespace {

constexpr float kMinimumScale = 1.1920928955078125e-07f;

std::pair<Tensor, Tensor> minmax_merge_cpu(const Tensor& run_min, const Tensor& run_max,
                                           const Tensor& batch_min, const Tensor& batch_max) {
  const std::vector<double> a = run_min.to_vector<double>(), b = batch_min.to_vector<double>();
  const std::vector<double> c = run_max.to_vector<double>(), d = batch_max.to_vector<double>();
  std::vector<double> mn(a.size()), mx(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    mn[i] = minmax_merge_min(a[i], b[i]);
    mx[i] = minmax_merge_max(c[i], d[i]);
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
    const MinMaxEncodingElem<T> e{static_cast<T>(num_steps),     static_cast<T>(kMinimumScale),
                                  std::numeric_limits<T>::max(), num_steps / 2,
                                  (num_steps + 1) / 2,           symmetric};
    for (std::size_t i = 0; i < lo.size(); ++i)
      e(static_cast<T>(lo[i]), static_cast<T>(hi[i]), pmin[i], pmax[i]);
  });
}

}  // namespace

void register_minmax_encoding_cpu_kernels(KernelRegistry& r) {
  r.table(kMinMaxMergeKernels).define(DeviceType::CPU, &minmax_merge_cpu, kFloatingDTypes);
  r.table(kMinMaxEncodingsKernels).define(DeviceType::CPU, &minmax_encodings_cpu, kFloatingDTypes);
}

}  // namespace qgrad::aimet
