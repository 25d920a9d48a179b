// CPU kernels of the observer tables (observer_kernels.h): observer_elem.h's functors through
// cpu::Map, and the statistics check as a ValueError naming the observer, as its host code
// raises it.
#include <string>
#include <vector>

#include "core/cpu_map.h"
#include "quant/observer/observer_kernels.h"

namespace qgrad::ao {

namespace {

void running_stats_cpu(const Tensor& rmin, const Tensor& rmax, const Tensor& bmin,
                       const Tensor& bmax, float averaging, bool per_tensor, const Tensor& new_min,
                       const Tensor& new_max) {
  running_stats<cpu::Map>(rmin, rmax, bmin, bmax, averaging, per_tensor, new_min, new_max);
}

void observer_qparams_cpu(const char* observer, const Tensor& min, const Tensor& max,
                          const ObserverQParamsRule& rule, const Tensor& scale,
                          const Tensor& zero_point) {
  const std::vector<float> mn = min.to_vector<float>(), mx = max.to_vector<float>();
  for (std::size_t i = 0; i < mn.size(); ++i)
    QGRAD_CHECK(statistics_usable(mn[i], mx[i], rule.unobserved_ok), ValueError, observer,
                ": calculate_qparams: the statistics must be finite with min <= max, got min ",
                mn[i], " max ", mx[i], " (element ", i, "; NaN statistics are invalid)");
  observer_qparams_values<cpu::Map>(min, max, rule, scale, zero_point);
}

}  // namespace

void register_observer_cpu_kernels(KernelRegistry& r) {
  r.table(kRunningStatsKernels).define(DeviceType::CPU, &running_stats_cpu, DTypeSet{kFloat32});
  r.table(kObserverQParamsKernels)
      .define(DeviceType::CPU, &observer_qparams_cpu, DTypeSet{kFloat32});
}

}  // namespace qgrad::ao
