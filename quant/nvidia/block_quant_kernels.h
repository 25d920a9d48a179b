// The block quantizers' scale-grid kernels (MX and NVFP4 scales, and the expansion of a coarse
// grid onto a finer one), their signatures and per-device register functions. They turn per-block
// amax grids, which live on the input's device, into the scales the element kernels of
// tensor_quant_kernels.h read; block_quant.cpp reaches them through the "nvidia.mx_scales",
// "nvidia.nvfp4_scales" and "nvidia.expand_blocks" tables. All grids are contiguous, of one
// floating dtype.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"
#include "quant/nvidia/num_bits.h"

namespace qgrad::nvidia {

// MX (E8M0 scales): scale[g] = 2^clamp(ceil(log2(amax[g] / max_value)), -127, 127), log2 rounded
// to the dtype before the ceil as modelopt's torch.log2 (2^-127 where
// amax[g] / max_value is not positive) and eff[g] = max_value * scale[g], the clip bound of the
// backward.
using MxScalesKernel = void(const Tensor& amax, double max_value, const Tensor& scale,
                            const Tensor& eff);
inline constexpr KernelTableKey<MxScalesKernel> kMxScalesKernels{
    "nvidia.mx_scales", "block_fake_quant block_effective_amax BlockQuantizer"};

// NVFP4 (E4M3 block scales under a global scale): with gs = global_amax[g] / (6 * 448),
// scale[g] = e4m3(max(amax[g] / (6 * gs), 2^-9)) * gs (a zero ratio counts as 1), or 0 where
// global_amax[g] <= 2^-24; eff[g] = max_value * scale[g].
using Nvfp4ScalesKernel = void(const Tensor& amax, const Tensor& global_amax,
                               const MiniFloatSpec& e4m3, double max_value, const Tensor& scale,
                               const Tensor& eff);
inline constexpr KernelTableKey<Nvfp4ScalesKernel> kNvfp4ScalesKernels{
    "nvidia.nvfp4_scales", "block_fake_quant block_effective_amax BlockQuantizer"};

// out (the fine grid) element i = small[i / block] per axis (block[k] <= 0: the whole axis).
using ExpandBlocksKernel = void(const Tensor& small, const Shape& block, const Tensor& out);
inline constexpr KernelTableKey<ExpandBlocksKernel> kExpandBlocksKernels{
    "nvidia.expand_blocks", "block_fake_quant block_effective_amax BlockQuantizer"};

void register_block_quant_cpu_kernels(KernelRegistry& r);
void register_block_quant_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::nvidia
