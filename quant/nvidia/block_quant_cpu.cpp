// CPU scale-grid kernels of the block quantizers (MX and NVFP4 scales, grid expansion):
// block_quant_kernel.h's device-generic kernels through cpu::Map, registered in the "nvidia.*"
// tables.
#include "core/cpu_map.h"
#include "quant/nvidia/block_quant_kernel.h"
#include "quant/nvidia/block_quant_kernels.h"

namespace qgrad::nvidia {

namespace {

void mx_scales_cpu(const Tensor& amax, double max_value, const Tensor& scale, const Tensor& eff) {
  mx_scales<cpu::Map>(amax, max_value, scale, eff);
}

void nvfp4_scales_cpu(const Tensor& amax, const Tensor& global_amax, const MiniFloatSpec& e4m3,
                      double max_value, const Tensor& scale, const Tensor& eff) {
  nvfp4_scales<cpu::Map>(amax, global_amax, e4m3, max_value, scale, eff);
}

void expand_blocks_cpu(const Tensor& small, const Shape& block, const Tensor& out) {
  expand_blocks<cpu::Map>(small, block, out);
}

}  // namespace

void register_block_quant_cpu_kernels(KernelRegistry& r) {
  r.table(kMxScalesKernels).define(DeviceType::CPU, &mx_scales_cpu, kFloatingDTypes);
  r.table(kNvfp4ScalesKernels).define(DeviceType::CPU, &nvfp4_scales_cpu, kFloatingDTypes);
  r.table(kExpandBlocksKernels).define(DeviceType::CPU, &expand_blocks_cpu, kFloatingDTypes);
}

}  // namespace qgrad::nvidia
