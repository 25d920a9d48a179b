// torch.ao fake quantization's kernel signatures (no autograd) and its per-device register
// functions: the per-tensor and per-channel forward with an optional gradient mask, the masked
// straight-through backward, and the fused backward of the learnable (LSQ-style) forms that also
// reduces the scale and zero-point gradients. The fronts (fake_quantize.cpp,
// learnable_fake_quantize.cpp, and Horizon's masked backward) reach them through the
// "torch_ao.*" tables. Float32 results are bit-exact to PyTorch 1.13's CPU kernels for finite
// inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad::ao {

// y = (clamp(rne(x * (1/scale)) + zp, qmin, qmax) - zp) * scale. `mask` (uint8, x's shape) may be
// undefined; when defined it receives 1 where qmin <= rne(x/scale) + zp <= qmax. `scale` is used
// at float precision, as PyTorch does. x and y may be strided (y must not overlap x); mask
// must have y's strides.
using FakeQuantizePerTensorKernel = void(const Tensor& x, float scale, std::int64_t zero_point,
                                         std::int64_t quant_min, std::int64_t quant_max,
                                         const Tensor& y, const Tensor& mask);
// (fake_quantize_per_tensor_affine and the learnable forms run it on the CPU; their catalogue
// entries are the device-path tables', which have every device's kernels.)
inline constexpr KernelTableKey<FakeQuantizePerTensorKernel> kFakeQuantizePerTensorKernels{
    "torch_ao.fake_quantize_per_tensor", ""};

// The same with one (scale, zero point) per index of `axis`. x, y and mask are contiguous.
using FakeQuantizePerChannelKernel = void(const Tensor& x, std::int64_t axis,
                                          const std::vector<double>& scale,
                                          const std::vector<std::int64_t>& zero_point,
                                          std::int64_t quant_min, std::int64_t quant_max,
                                          const Tensor& y, const Tensor& mask);
inline constexpr KernelTableKey<FakeQuantizePerChannelKernel> kFakeQuantizePerChannelKernels{
    "torch_ao.fake_quantize_per_channel", ""};

// Fake quantization with its qparams as tensors on x's device, as the GPU runs it (nothing read
// on the host): scale float32 and zero_point int32, int64 or float32 (float: PyTorch's
// per_channel_affine_float_qparams), contiguous, of one element (axis -1, per tensor) or one per
// index of `axis`. Narrow ranges only (|quant_min|, |quant_max| <= 2^23). x and y any strides (y
// of x's shape, not overlapping it); mask (uint8, y's strides) may be undefined. The qparams'
// values are not checked here (kCheckQParamsKernels). On the CPU the fronts run the kernels
// above, with host qparams; this table's CPU kernel, the same element functors through cpu::map,
// is their reference in the tests.
using FakeQuantizeQParamsKernel = void(const Tensor& x, const Tensor& scale,
                                       const Tensor& zero_point, std::int64_t axis,
                                       std::int64_t quant_min, std::int64_t quant_max,
                                       const Tensor& y, const Tensor& mask);
inline constexpr KernelTableKey<FakeQuantizeQParamsKernel> kFakeQuantizeQParamsKernels{
    "torch_ao.fake_quantize_qparams",
    "fake_quantize_per_tensor_affine fake_quantize_per_channel_affine"};

// Checks qparams (qparams_usable, fake_quantize_elem.h): scale, and zero_point of any dtype, a
// float zero point (per_channel_affine_float_qparams) when float_zero_point, else one that must
// hold integers (an integer dtype, or integral floats). On the CPU a ValueError naming `op`; on a
// GPU recorded and thrown at the host's next wait (core/cuda_deferred_error.h), so the host does
// not wait here. `op` must be a string literal (the GPU's record keeps its address).
using CheckQParamsKernel = void(const char* op, const Tensor& scale, const Tensor& zero_point,
                                bool float_zero_point, std::int64_t quant_min,
                                std::int64_t quant_max);
inline constexpr KernelTableKey<CheckQParamsKernel> kCheckQParamsKernels{
    "torch_ao.check_qparams", "fake_quantize_per_tensor_affine fake_quantize_per_channel_affine"};

// dx = dy * mask (a multiplication, so a negative dy masked out gives -0.0 as in PyTorch).
using MaskedGradientKernel = void(const Tensor& dy, const Tensor& mask, const Tensor& dx);
inline constexpr KernelTableKey<MaskedGradientKernel> kMaskedGradientKernels{
    "torch_ao.masked_gradient",
    "fake_quantize_per_tensor_affine fake_quantize_per_channel_affine "
    "fused_moving_avg_obs_fake_quant horizon.fake_quantize"};

// Backward of _fake_quantize_learnable_per_tensor_affine. x, dy, dx contiguous. `zero_point` is
// the backward's zero point (trunc(clamp(zp + 0.5))). Returns the summed scale and zero-point
// gradients through dscale / dzero_point (accumulated in double, in a fixed order).
using LearnablePerTensorBackwardKernel = void(const Tensor& x, const Tensor& dy, double scale,
                                              double zero_point, std::int64_t quant_min,
                                              std::int64_t quant_max, double grad_factor,
                                              const Tensor& dx, double& dscale,
                                              double& dzero_point);
inline constexpr KernelTableKey<LearnablePerTensorBackwardKernel>
    kLearnablePerTensorBackwardKernels{"torch_ao.learnable_per_tensor_backward", ""};

// Backward of _fake_quantize_learnable_per_channel_affine; zero_point holds the rounded, clamped
// per-channel zero points; dscale / dzero_point receive one sum per channel.
using LearnablePerChannelBackwardKernel = void(const Tensor& x, const Tensor& dy, std::int64_t axis,
                                               const std::vector<double>& scale,
                                               const std::vector<double>& zero_point,
                                               std::int64_t quant_min, std::int64_t quant_max,
                                               double grad_factor, const Tensor& dx,
                                               std::vector<double>& dscale,
                                               std::vector<double>& dzero_point);
inline constexpr KernelTableKey<LearnablePerChannelBackwardKernel>
    kLearnablePerChannelBackwardKernels{"torch_ao.learnable_per_channel_backward", ""};

// The learnable fake quantizer's qparams from its parameters, on their device (nothing read on
// the host; the parameters are checked finite first): scale and zero_point (x's dtype, n
// elements, contiguous) give forward_scale (float32), forward_zero_point (int64,
// clamp(rne(zp))) and backward_zero_point (float64: per tensor trunc(clamp(zp + 0.5)), per
// channel the forward's), each of n elements.
using LearnableQParamsKernel = void(const Tensor& scale, const Tensor& zero_point,
                                    std::int64_t quant_min, std::int64_t quant_max, bool per_tensor,
                                    const Tensor& forward_scale, const Tensor& forward_zero_point,
                                    const Tensor& backward_zero_point);
inline constexpr KernelTableKey<LearnableQParamsKernel> kLearnableQParamsKernels{
    "torch_ao.learnable_qparams",
    "fake_quantize_learnable_per_tensor_affine fake_quantize_learnable_per_channel_affine"};

// The learnable backward with its qparams as device tensors (LearnableQParamsKernel's
// forward_scale and backward_zero_point, one element per tensor (axis -1) or per index of axis):
// dx and the unreduced, x-shaped dscale and dzero_point, written in one pass (x and dy any
// strides); the front sums the last two.
using LearnableBackwardOperandsKernel = void(const Tensor& x, const Tensor& dy, const Tensor& scale,
                                             const Tensor& zero_point, std::int64_t axis,
                                             std::int64_t quant_min, std::int64_t quant_max,
                                             double grad_factor, const Tensor& dx,
                                             const Tensor& dscale, const Tensor& dzero_point);
inline constexpr KernelTableKey<LearnableBackwardOperandsKernel> kLearnableBackwardOperandsKernels{
    "torch_ao.learnable_backward_operands",
    "fake_quantize_learnable_per_tensor_affine fake_quantize_learnable_per_channel_affine"};

void register_fake_quantize_cpu_kernels(KernelRegistry& r);
void register_fake_quantize_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::ao
