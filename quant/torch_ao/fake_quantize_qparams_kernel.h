// torch.ao fake quantization with its qparams as tensors (fake_quantize_kernels.h's
// FakeQuantizeQParamsKernel), written once for every device: the qparams are viewed along x's
// shape (stride 0 off the channel axis) and fed to the element functors as operands, with the
// value and the mask written in one pass by the device's map (Map: cpu::Map or cuda::Map). Only
// .cpp / .cu files that register a kernel include this.
#pragma once

#include <array>
#include <cstdint>

#include "core/dtype.h"
#include "core/map_outputs.h"
#include "core/tensor.h"
#include "quant/qparams_view.h"
#include "quant/torch_ao/fake_quantize_elem.h"
#include "quant/torch_ao/fused_obs_fake_quant_math.h"

namespace qgrad::ao {

// e(x, operands..., m) without a mask output: the value only.
template <typename E>
struct ValueOnly {
  E e;
  template <typename... Args>
  QGRAD_HD_INLINE auto operator()(Args... args) const {
    std::uint8_t unused;
    return e(args..., unused);
  }
};

template <typename Map, typename T, typename Z, typename E>
void run_qparams_elem(const char* op, const E& e, const Tensor& x, const Tensor& s, const Tensor& z,
                      const Tensor& y, const Tensor& mask) {
  if (mask.defined())
    Map::template run_outputs<Outputs<T, std::uint8_t>, T, float, Z>(op, e, {y, mask}, x, s, z);
  else
    Map::template run<T, T, float, Z>(op, ValueOnly<E>{e}, y, x, s, z);
}

template <typename Map>
void fake_quantize_qparams(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                           std::int64_t axis, std::int64_t quant_min, std::int64_t quant_max,
                           const Tensor& y, const Tensor& mask) {
  const char* op =
      axis < 0 ? "fake_quantize_per_tensor_affine" : "fake_quantize_per_channel_affine";
  const Tensor s = quant::qparams_along(scale, x, axis);
  const Tensor z = quant::qparams_along(zero_point, x, axis);
  QGRAD_DISPATCH_FLOAT(x.dtype(), op, [&] {
    using T = scalar_t;
    const T qmin = static_cast<T>(quant_min), qmax = static_cast<T>(quant_max);
    switch (zero_point.dtype()) {
      case kInt32:
        run_qparams_elem<Map, T, std::int32_t>(
            op, NarrowFakeQuantizeOperandsElem<T, std::int32_t>{qmin, qmax}, x, s, z, y, mask);
        break;
      case kInt64:
        run_qparams_elem<Map, T, std::int64_t>(
            op, NarrowFakeQuantizeOperandsElem<T, std::int64_t>{qmin, qmax}, x, s, z, y, mask);
        break;
      default:
        QGRAD_CHECK(zero_point.dtype() == kFloat32, DTypeError, op,
                    ": zero_point must be int32, int64 or float32 here, got ",
                    dtype_name(zero_point.dtype()));
        run_qparams_elem<Map, T, float>(
            op,
            fused::FloatZpFakeQuantOperandsElem<T>{static_cast<double>(quant_min),
                                                   static_cast<double>(quant_max)},
            x, s, z, y, mask);
    }
  });
}

}  // namespace qgrad::ao
