// The kernels that keep torch.ao's min/max observers' statistics on their device: the running
// min / max update after a batch and the statistics' qparams, with observer_elem.h's functors
// through the device's map (written once, below, for every Map), and the check that the
// statistics can give qparams, which on a GPU is recorded and thrown at the host's next wait
// (core/cuda_deferred_error.h) instead of making the host wait. The observers run these where
// their statistics are device tensors; on the CPU they compute the same values on the host, and
// these tables' CPU kernels are the reference the tests hold them to.
#pragma once

#include <array>
#include <cstdint>

#include "core/dispatch.h"
#include "core/map_outputs.h"
#include "core/tensor.h"
#include "quant/observer/observer_elem.h"

namespace qgrad::ao {

// new_min, new_max = RunningStatsElem{averaging, per_tensor}(rmin, rmax, bmin, bmax), all
// float32 of one shape (new_* contiguous).
using RunningStatsKernel = void(const Tensor& rmin, const Tensor& rmax, const Tensor& bmin,
                                const Tensor& bmax, float averaging, bool per_tensor,
                                const Tensor& new_min, const Tensor& new_max);
inline constexpr KernelTableKey<RunningStatsKernel> kRunningStatsKernels{
    "observer.running_stats",
    "MinMaxObserver MovingAverageMinMaxObserver PerChannelMinMaxObserver "
    "MovingAveragePerChannelMinMaxObserver"};

// How an observer turns statistics into qparams: UniformQParamsElem's or, with float_qparams,
// FloatQParamsElem's values; `unobserved_ok` for per-tensor statistics (+inf / -inf before data).
struct ObserverQParamsRule {
  UniformQParamsElem integer;
  FloatQParamsElem floating;
  bool float_qparams = false;
  bool unobserved_ok = false;
};

// Checks min / max (float32, contiguous, n values) with statistics_usable, naming `observer` in
// the error (per element when n > 1), then writes scale (float32 [n]) and zero_point (int64 [n],
// float32 with float_qparams).
using ObserverQParamsKernel = void(const char* observer, const Tensor& min, const Tensor& max,
                                   const ObserverQParamsRule& rule, const Tensor& scale,
                                   const Tensor& zero_point);
inline constexpr KernelTableKey<ObserverQParamsKernel> kObserverQParamsKernels{
    "observer.qparams",
    "MinMaxObserver MovingAverageMinMaxObserver PerChannelMinMaxObserver "
    "MovingAveragePerChannelMinMaxObserver"};

void register_observer_cpu_kernels(KernelRegistry& r);
void register_observer_cuda_kernels(KernelRegistry& r);

// The element work of the two kernels, for the device's Map (cpu::Map, cuda::Map).
template <typename Map>
void running_stats(const Tensor& rmin, const Tensor& rmax, const Tensor& bmin, const Tensor& bmax,
                   float averaging, bool per_tensor, const Tensor& new_min, const Tensor& new_max) {
  Map::template run_outputs<Outputs<float, float>, float, float, float, float>(
      "observer running statistics", RunningStatsElem{averaging, per_tensor}, {new_min, new_max},
      rmin, rmax, bmin, bmax);
}
template <typename Map>
void observer_qparams_values(const Tensor& min, const Tensor& max, const ObserverQParamsRule& rule,
                             const Tensor& scale, const Tensor& zero_point) {
  if (rule.float_qparams)
    Map::template run_outputs<Outputs<float, float>, float, float>(
        "calculate_qparams", rule.floating, {scale, zero_point}, min, max);
  else
    Map::template run_outputs<Outputs<float, std::int64_t>, float, float>(
        "calculate_qparams", rule.integer, {scale, zero_point}, min, max);
}

}  // namespace qgrad::ao
