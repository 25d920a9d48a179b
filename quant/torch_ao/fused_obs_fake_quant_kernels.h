// Kernel signatures and per-device register functions of torch.ao's fused observer + fake
// quantization (fused_moving_avg_obs_fake_quant) and of per-channel fake quantization with float
// zero points. The fronts (fused_obs_fake_quant.cpp, fake_quantize.cpp) reach them through the
// "torch_ao.fused_moving_avg_obs_fake_quant", "torch_ao.masked_gradient_bits" and
// "torch_ao.fake_quantize_per_channel_float_zp" tables; the element math lives in
// fused_obs_fake_quant_math.h, which the CPU and CUDA kernels share.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"
#include "quant/torch_ao/fused_obs_fake_quant_math.h"

namespace qgrad::ao {

using fused::FusedObsFakeQuantParams;

// The op's state, every tensor on x's device, contiguous: observer_on and fake_quant_on, int64
// [1] (read by the kernel where they live, so the host never waits for a GPU's flags);
// running_min / running_max, float32, one value per channel (one per tensor), updated in place
// when observing; scale (float32) and zero_point (int32), of the same length, written when fake
// quantizing.
struct FusedObsFakeQuantState {
  Tensor observer_on, fake_quant_on;
  Tensor running_min, running_max;
  Tensor scale, zero_point;
};

// x: contiguous float32, non-empty. y (x's shape) receives the fake-quantized x, or a copy of x
// when not fake quantizing; mask (uint8, may be undefined) receives the straight-through mask
// (all ones when not fake quantizing): one byte per element of x per channel, and per tensor
// packed bits, ceil(n / 8) bytes, bit i % 8 of byte i / 8 for element i (an eighth of the memory
// traffic, which is what the per-tensor op, reading x twice, is bound by). Running statistics
// for which min <= max fails (NaN) are a ValueError, as in PyTorch, after the statistics are
// updated: thrown by the CPU kernel, and on a GPU recorded by the kernel and thrown at the
// host's next wait (core/cuda_deferred_error.h), the failing rows of y being NaN.
using FusedObsFakeQuantKernel = void(const Tensor& x, const FusedObsFakeQuantParams& params,
                                     const FusedObsFakeQuantState& state, const Tensor& y,
                                     const Tensor& mask);
inline constexpr KernelTableKey<FusedObsFakeQuantKernel> kFusedObsFakeQuantKernels{
    "torch_ao.fused_moving_avg_obs_fake_quant", "fused_moving_avg_obs_fake_quant"};

// dx = dy where the packed mask bit of the element is set, else 0 (dy * bit: NaN * 0 stays
// NaN, as the byte-mask kernel's dy * m does). dy, dx contiguous, of n elements; dx may be dy.
using MaskedGradientBitsKernel = void(const Tensor& dy, const Tensor& bits, const Tensor& dx);
inline constexpr KernelTableKey<MaskedGradientBitsKernel> kMaskedGradientBitsKernels{
    "torch_ao.masked_gradient_bits", ""};

// Per-channel fake quantization with float zero points (fused_obs_fake_quant_math.h's
// FloatZpFakeQuantElem). x, y, mask contiguous; mask may be undefined.
using FakeQuantizePerChannelFloatZpKernel = void(const Tensor& x, std::int64_t axis,
                                                 const std::vector<float>& scale,
                                                 const std::vector<float>& zero_point,
                                                 std::int64_t quant_min, std::int64_t quant_max,
                                                 const Tensor& y, const Tensor& mask);
// (fake_quantize_per_channel_affine runs it on the CPU; its catalogue entry is the qparams
// table's, fake_quantize_kernels.h.)
inline constexpr KernelTableKey<FakeQuantizePerChannelFloatZpKernel>
    kFakeQuantizePerChannelFloatZpKernels{"torch_ao.fake_quantize_per_channel_float_zp", ""};

void register_fused_obs_fake_quant_cpu_kernels(KernelRegistry& r);
void register_fused_obs_fake_quant_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::ao
