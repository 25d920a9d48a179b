// CUDA kernels of AIMET's MinMaxEncodingAnalyzer: minmax_encoding_kernel.h's device-generic merge
// and range rule through cuda::map (the CPU's elements), registered in the "aimet.minmax_*"
// tables, so calibration keeps the statistics on the GPU.
#include "core/cuda_map.cuh"
#include "quant/aimet/minmax_encoding_kernel.h"
#include "quant/aimet/minmax_encoding_kernels.h"

namespace qgrad::aimet {

namespace {

std::pair<Tensor, Tensor> minmax_merge_cuda(const Tensor& run_min, const Tensor& run_max,
                                            const Tensor& batch_min, const Tensor& batch_max) {
  return minmax_merge<cuda::Map>(run_min, run_max, batch_min, batch_max);
}

void minmax_encodings_cuda(const Tensor& min, const Tensor& max, std::int64_t num_steps,
                           bool symmetric, const Tensor& out_min, const Tensor& out_max) {
  minmax_encodings<cuda::Map>(min, max, num_steps, symmetric, out_min, out_max);
}

}  // namespace

void register_minmax_encoding_cuda_kernels(KernelRegistry& r) {
  r.table(kMinMaxMergeKernels).define(DeviceType::CUDA, &minmax_merge_cuda, kFloatingDTypes);
  r.table(kMinMaxEncodingsKernels)
      .define(DeviceType::CUDA, &minmax_encodings_cuda, kFloatingDTypes);
}

}  // namespace qgrad::aimet
