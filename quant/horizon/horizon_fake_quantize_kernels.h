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
inline constexpr KernelTableKey<HorizonFakeQuantizePerTensorKernel>
    kHorizonFakeQuantizePerTensorKernels{"horizon.fake_quantize_per_tensor",
                                         "horizon.fake_quantize"};
// x, y, mask contiguous; scale[c] for index c of `axis`.
using HorizonFakeQuantizePerChannelKernel = void(const Tensor& x, std::int64_t axis,
                                                 const std::vector<double>& scale, QRange range,
                                                 RoundMode mode, const Tensor& y,
                                                 const Tensor& mask);
inline constexpr KernelTableKey<HorizonFakeQuantizePerChannelKernel>
    kHorizonFakeQuantizePerChannelKernels{"horizon.fake_quantize_per_channel",
                                          "horizon.fake_quantize"};

void register_horizon_fake_quantize_cpu_kernels(KernelRegistry& r);
void register_horizon_fake_quantize_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::horizon
