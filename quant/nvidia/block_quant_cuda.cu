// CUDA scale-grid kernels of the block quantizers (MX and NVFP4 scales, grid expansion):
// block_quant_kernel.h's device-generic kernels through cuda::Map, the CPU's elements,
// registered in the "nvidia.*" tables.
#include "core/cuda_map.cuh"
#include "quant/nvidia/block_quant_kernel.h"
#include "quant/nvidia/block_quant_kernels.h"

namespace qgrad::nvidia {

namespace {

void mx_scales_cuda(const Tensor& amax, double max_value, const Tensor& scale, const Tensor& eff) {
  mx_scales<cuda::Map>(amax, max_value, scale, eff);
}

void nvfp4_scales_cuda(const Tensor& amax, const Tensor& global_amax, const MiniFloatSpec& e4m3,
                       double max_value, const Tensor& scale, const Tensor& eff) {
  nvfp4_scales<cuda::Map>(amax, global_amax, e4m3, max_value, scale, eff);
}

void expand_blocks_cuda(const Tensor& small, const Shape& block, const Tensor& out) {
  expand_blocks<cuda::Map>(small, block, out);
}

}  // namespace

void register_block_quant_cuda_kernels(KernelRegistry& r) {
  r.table(kMxScalesKernels).define(DeviceType::CUDA, &mx_scales_cuda, kFloatingDTypes);
  r.table(kNvfp4ScalesKernels).define(DeviceType::CUDA, &nvfp4_scales_cuda, kFloatingDTypes);
  r.table(kExpandBlocksKernels).define(DeviceType::CUDA, &expand_blocks_cuda, kFloatingDTypes);
}

}  // namespace qgrad::nvidia
