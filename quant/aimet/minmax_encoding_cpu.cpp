// CPU kernels of AIMET's MinMaxEncodingAnalyzer: minmax_encoding_kernel.h's device-generic merge
// and range rule through cpu::map, registered in the "aimet.minmax_*" tables.
#include "core/cpu_map.h"
#include "quant/aimet/minmax_encoding_kernel.h"
#include "quant/aimet/minmax_encoding_kernels.h"

namespace qgrad::aimet {

namespace {

std::pair<Tensor, Tensor> minmax_merge_cpu(const Tensor& run_min, const Tensor& run_max,
                                           const Tensor& batch_min, const Tensor& batch_max) {
  return minmax_merge<cpu::Map>(run_min, run_max, batch_min, batch_max);
}

void minmax_encodings_cpu(const Tensor& min, const Tensor& max, std::int64_t num_steps,
                          bool symmetric, const Tensor& out_min, const Tensor& out_max) {
  minmax_encodings<cpu::Map>(min, max, num_steps, symmetric, out_min, out_max);
}

}  // namespace

void register_minmax_encoding_cpu_kernels(KernelRegistry& r) {
  r.table(kMinMaxMergeKernels).define(DeviceType::CPU, &minmax_merge_cpu, kFloatingDTypes);
  r.table(kMinMaxEncodingsKernels).define(DeviceType::CPU, &minmax_encodings_cpu, kFloatingDTypes);
}

}  // namespace qgrad::aimet
