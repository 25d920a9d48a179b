// Horizon fake quantization with its scale as a tensor (horizon_fake_quantize_kernels.h's
// HorizonFakeQuantizeScaleTensorKernel) and the scale from statistics, written once for every
// device: the scale is viewed along x's shape (stride 0 off the channel axis) and fed to
// FakeQuantizeOperandsElem, the value and the mask written in one pass by the device's map (Map:
// cpu::Map or cuda::Map). Only .cpp / .cu files that register a kernel include this.
#pragma once

#include <array>
#include <cstdint>

#include "core/dtype.h"
#include "core/map_outputs.h"
#include "core/tensor.h"
#include "quant/horizon/horizon_fake_quantize_elem.h"
#include "quant/horizon/horizon_qparams.h"
#include "quant/qparams_view.h"

namespace qgrad::horizon {

// e(x, scale, m) without a mask output: the value only.
template <typename E>
struct ScaleValueOnly {
  E e;
  template <typename T>
  QGRAD_HD_INLINE T operator()(T x, float scale) const {
    std::uint8_t unused;
    return e(x, scale, unused);
  }
};

template <typename Map, typename T, RoundMode M>
void run_scale_elem(const Tensor& x, const Tensor& s, QRange r, const Tensor& y,
                    const Tensor& mask) {
  const FakeQuantizeOperandsElem<T, M> e{static_cast<T>(r.quant_min), static_cast<T>(r.quant_max)};
  if (mask.defined())
    Map::template run_outputs<Outputs<T, std::uint8_t>, T, float>("horizon.fake_quantize", e,
                                                                  {y, mask}, x, s);
  else
    Map::template run<T, T, float>("horizon.fake_quantize", ScaleValueOnly<decltype(e)>{e}, y, x,
                                   s);
}

template <typename Map>
void fake_quantize_scale_tensor(const Tensor& x, const Tensor& scale, std::int64_t axis,
                                QRange range, RoundMode mode, const Tensor& y, const Tensor& mask) {
  const Tensor s = quant::qparams_along(scale, x, axis);
  QGRAD_DISPATCH_FLOAT(x.dtype(), "horizon.fake_quantize", [&] {
    if (mode == RoundMode::HalfToEven)
      run_scale_elem<Map, scalar_t, RoundMode::HalfToEven>(x, s, range, y, mask);
    else
      run_scale_elem<Map, scalar_t, RoundMode::HalfUp>(x, s, range, y, mask);
  });
}

template <typename Map>
void scale_from_statistics_values(const Tensor& min, const Tensor& max, const Tensor& previous,
                                  float half_range, const Tensor& scale) {
  Map::template run<float, float, float, float>(
      "HorizonFakeQuantize", ScaleFromStatisticsElem{half_range}, scale, min, max, previous);
}

}  // namespace qgrad::horizon
