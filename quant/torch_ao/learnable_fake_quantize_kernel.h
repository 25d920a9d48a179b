// torch.ao learnable fake quantization with its parameters as tensors on x's device
// (fake_quantize_kernels.h's LearnableQParamsKernel and LearnableBackwardOperandsKernel), written
// once for every device: the qparams from the parameters in one pass, and the backward's dx with
// the unreduced scale and zero-point gradients in one pass, the qparams viewed along x's shape
// (stride 0 off the channel axis), by the device's map (Map: cpu::Map or cuda::Map). Only .cpp /
// .cu files that register a kernel include this.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/map_outputs.h"
#include "core/tensor.h"
#include "quant/qparams_view.h"
#include "quant/torch_ao/fake_quantize_elem.h"

namespace qgrad::ao {

template <typename Map>
void learnable_qparams(const Tensor& scale, const Tensor& zero_point, std::int64_t quant_min,
                       std::int64_t quant_max, bool per_tensor, const Tensor& forward_scale,
                       const Tensor& forward_zero_point, const Tensor& backward_zero_point) {
  QGRAD_DISPATCH_FLOAT(scale.dtype(), "learnable fake quantize qparams", [&] {
    const LearnableQParamsElem<scalar_t> e{static_cast<double>(quant_min),
                                           static_cast<double>(quant_max), per_tensor};
    Map::template run_outputs<Outputs<float, std::int64_t, double>, scalar_t, scalar_t>(
        "learnable fake quantize qparams", e,
        {forward_scale, forward_zero_point, backward_zero_point}, scale, zero_point);
  });
}

template <typename Map>
void learnable_backward_operands(const Tensor& x, const Tensor& dy, const Tensor& scale,
                                 const Tensor& zero_point, std::int64_t axis,
                                 std::int64_t quant_min, std::int64_t quant_max, double grad_factor,
                                 const Tensor& dx, const Tensor& dscale,
                                 const Tensor& dzero_point) {
  const char* op = axis < 0 ? "_fake_quantize_learnable_per_tensor_affine backward"
                            : "_fake_quantize_learnable_per_channel_affine backward";
  const Tensor s = quant::qparams_along(scale, x, axis);
  const Tensor z = quant::qparams_along(zero_point, x, axis);
  QGRAD_DISPATCH_FLOAT(x.dtype(), op, [&] {
    using T = scalar_t;
    const LearnableGradOperandsElem<T> e{quant_min, quant_max, grad_factor, axis < 0};
    Map::template run_outputs<Outputs<T, T, T>, T, T, float, double>(
        op, e, {dx, dscale, dzero_point}, x, dy, s, z);
  });
}

}  // namespace qgrad::ao
