// Horizon fake quantization's kernel signatures (no autograd) and its per-device register
// functions: y = clamp(round(x / scale), qmin, qmax) * scale (a division, rounding half to even or
// half up), with an optional uint8 mask of qmin <= round(x / scale) <= qmax. The front
// (horizon_fake_quantize.cpp) reaches them through the "horizon.fake_quantize_*" tables; its
// saturating backward is torch.ao's "torch_ao.masked_gradient".
#pragma once

#include <cstdint>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"
#include "quant/horizon/horizon_qparams.h"

namespace qgrad::horizon {

// x, y any strides (mask with y's strides, may be undefined).
using HorizonFakeQuantizePerTensorKernel = void(const Tensor& x, double scale, QRange range,
                                                RoundMode mode, const Tensor& y,
                                                const Tensor& mask);
// (horizon.fake_quantize runs these two on the CPU; its catalogue entry is the scale-tensor
// table's, below.)
inline constexpr KernelTableKey<HorizonFakeQuantizePerTensorKernel>
    kHorizonFakeQuantizePerTensorKernels{"horizon.fake_quantize_per_tensor", ""};
// x, y, mask contiguous; scale[c] for index c of `axis`.
using HorizonFakeQuantizePerChannelKernel = void(const Tensor& x, std::int64_t axis,
                                                 const std::vector<double>& scale, QRange range,
                                                 RoundMode mode, const Tensor& y,
                                                 const Tensor& mask);
inline constexpr KernelTableKey<HorizonFakeQuantizePerChannelKernel>
    kHorizonFakeQuantizePerChannelKernels{"horizon.fake_quantize_per_channel", ""};

// The same with the scale as a float32 tensor on x's device, nothing read on the host: one value
// (axis -1) or one per index of `axis`, contiguous. x and y any strides (mask with y's strides,
// may be undefined). What the GPU runs (horizon_fake_quantize_elem.h's FakeQuantizeOperandsElem
// through the device's map); its CPU kernel is the reference of the two above in the tests.
using HorizonFakeQuantizeScaleTensorKernel = void(const Tensor& x, const Tensor& scale,
                                                  std::int64_t axis, QRange range, RoundMode mode,
                                                  const Tensor& y, const Tensor& mask);
inline constexpr KernelTableKey<HorizonFakeQuantizeScaleTensorKernel>
    kHorizonFakeQuantizeScaleTensorKernels{"horizon.fake_quantize_scale_tensor",
                                           "horizon.fake_quantize"};

// HorizonFakeQuantize's scale from its observer's statistics where they are device tensors:
// scale = ScaleFromStatisticsElem{half_range}(min, max, previous), all float32 [n] contiguous
// (scale may be previous). NaN or infinite statistics: on the CPU a ValueError naming `owner`;
// on a GPU recorded and thrown at the host's next wait (core/cuda_deferred_error.h).
using HorizonScaleFromStatisticsKernel = void(const char* owner, const Tensor& min,
                                              const Tensor& max, const Tensor& previous,
                                              float half_range, const Tensor& scale);
inline constexpr KernelTableKey<HorizonScaleFromStatisticsKernel>
    kHorizonScaleFromStatisticsKernels{"horizon.scale_from_statistics", ""};

void register_horizon_fake_quantize_cpu_kernels(KernelRegistry& r);
void register_horizon_fake_quantize_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::horizon
