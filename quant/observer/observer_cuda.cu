// CUDA kernels of the observer tables (observer_kernels.h): observer_elem.h's functors through
// cuda::Map, and a kernel that checks the statistics and records unusable ones in the device's
// deferred-error slot, thrown at the host's next wait, so a QAT step never waits for them.
#include "core/cuda_deferred_error.cuh"
#include "core/cuda_map.cuh"
#include "quant/observer/observer_kernels.h"

namespace qgrad::ao {

namespace {

void running_stats_cuda(const Tensor& rmin, const Tensor& rmax, const Tensor& bmin,
                        const Tensor& bmax, float averaging, bool per_tensor, const Tensor& new_min,
                        const Tensor& new_max) {
  running_stats<cuda::Map>(rmin, rmax, bmin, bmax, averaging, per_tensor, new_min, new_max);
}

struct CheckStatistics {
  const float* mn;
  const float* mx;
  bool unobserved_ok, per_channel;
  CudaDeferredError* error;
  __device__ void operator()(std::int64_t i) const {
    if (statistics_usable(mn[i], mx[i], unobserved_ok)) return;
    cuda::report_range_not_ordered(error, DeferredErrorOp::ObserverCalculateQParams,
                                   per_channel ? i : -1, mn[i], mx[i]);
  }
};

void observer_qparams_cuda(const char* observer, const Tensor& min, const Tensor& max,
                           const ObserverQParamsRule& rule, const Tensor& scale,
                           const Tensor& zero_point) {
  (void)observer;  // the deferred error names calculate_qparams
  cuda::for_each_index(
      "calculate_qparams", min.device(), min.numel(),
      CheckStatistics{min.data_ptr<float>(), max.data_ptr<float>(), rule.unobserved_ok,
                      min.numel() > 1, cuda_deferred_error_slot(min.device().index)});
  observer_qparams_values<cuda::Map>(min, max, rule, scale, zero_point);
}

}  // namespace

void register_observer_cuda_kernels(KernelRegistry& r) {
  r.table(kRunningStatsKernels).define(DeviceType::CUDA, &running_stats_cuda, DTypeSet{kFloat32});
  r.table(kObserverQParamsKernels)
      .define(DeviceType::CUDA, &observer_qparams_cuda, DTypeSet{kFloat32});
}

}  // namespace qgrad::ao
