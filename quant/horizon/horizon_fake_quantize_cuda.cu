// CUDA kernels of Horizon's fake quantization, registered in the "horizon.*" tables: the forward
// with its scale as a device tensor (horizon_fake_quantize_scale_kernel.h through cuda::Map, the
// value and the mask in one pass, the CPU's element) and HorizonFakeQuantize's scale from its
// observer's statistics, whose NaN or infinite statistics are recorded for the host's next wait
// (core/cuda_deferred_error.h) instead of making the host wait.
#include "core/cuda_deferred_error.cuh"
#include "core/cuda_map.cuh"
#include "quant/horizon/horizon_fake_quantize_kernels.h"
#include "quant/horizon/horizon_fake_quantize_scale_kernel.h"

namespace qgrad::horizon {

namespace {

void fake_quantize_scale_tensor_cuda(const Tensor& x, const Tensor& scale, std::int64_t axis,
                                     QRange range, RoundMode mode, const Tensor& y,
                                     const Tensor& mask) {
  fake_quantize_scale_tensor<cuda::Map>(x, scale, axis, range, mode, y, mask);
}

// Records statistics that give no scale (NaN or infinite, other than never observed).
struct CheckStatistics {
  const float* mn;
  const float* mx;
  bool per_channel;
  CudaDeferredError* error;
  __device__ void operator()(std::int64_t c) const {
    if (statistics_usable(mn[c], mx[c])) return;
    cuda::report_range_not_ordered(error, DeferredErrorOp::HorizonFakeQuantize,
                                   per_channel ? c : -1, mn[c], mx[c]);
  }
};

void scale_from_statistics_cuda(const char* owner, const Tensor& min, const Tensor& max,
                                const Tensor& previous, float half_range, const Tensor& scale) {
  (void)owner;  // the deferred error names the module kind
  cuda::for_each_index(
      "HorizonFakeQuantize", min.device(), min.numel(),
      CheckStatistics{min.data_ptr<float>(), max.data_ptr<float>(), min.numel() > 1,
                      cuda_deferred_error_slot(min.device().index)});
  scale_from_statistics_values<cuda::Map>(min, max, previous, half_range, scale);
}

}  // namespace

void register_horizon_fake_quantize_cuda_kernels(KernelRegistry& r) {
  r.table(kHorizonFakeQuantizeScaleTensorKernels)
      .define(DeviceType::CUDA, &fake_quantize_scale_tensor_cuda, kFloatingDTypes);
  r.table(kHorizonScaleFromStatisticsKernels)
      .define(DeviceType::CUDA, &scale_from_statistics_cuda, DTypeSet{kFloat32});
}

}  // namespace qgrad::horizon
