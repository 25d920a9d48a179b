// The block quantizers' scale-grid kernels (block_quant_kernels.h's signatures) written once for
// every device: block_quant_elem.h's elements run by the device's map (Map: cpu::Map or
// cuda::Map) over the grids, and the grid expansion as one ExpandAt per fine element. Only .cpp /
// .cu files that register a kernel include this.
#pragma once

#include "core/dtype.h"
#include "core/tensor.h"
#include "quant/nvidia/block_quant_elem.h"
#include "quant/nvidia/num_bits.h"

namespace qgrad::nvidia {

template <typename Map>
void mx_scales(const Tensor& amax, double max_value, const Tensor& scale, const Tensor& eff) {
  QGRAD_DISPATCH_FLOAT(amax.dtype(), "mx_scales", [&] {
    using T = scalar_t;
    const T maxval = static_cast<T>(max_value);
    Map::template run<T, T>("mx_scales", MxScaleElem<T>{maxval}, scale, amax);
    Map::template run<T, T>("mx_scales", EffectiveAmaxElem<T>{maxval}, eff, scale);
  });
}

template <typename Map>
void nvfp4_scales(const Tensor& amax, const Tensor& global_amax, const MiniFloatSpec& e4m3,
                  double max_value, const Tensor& scale, const Tensor& eff) {
  QGRAD_DISPATCH_FLOAT(amax.dtype(), "nvfp4_scales", [&] {
    using T = scalar_t;
    Map::template run<T, T, T>("nvfp4_scales", Nvfp4ScaleElem<T>{MiniFloatCaster<double>(e4m3)},
                               scale, amax, global_amax);
    Map::template run<T, T>("nvfp4_scales", EffectiveAmaxElem<T>{static_cast<T>(max_value)}, eff,
                            scale);
  });
}

template <typename Map>
void expand_blocks(const Tensor& small, const Shape& block, const Tensor& out) {
  const ExpandIndex at = expand_index("expand_blocks", out.shape(), block, small.shape());
  QGRAD_DISPATCH_FLOAT(small.dtype(), "expand_blocks", [&] {
    using T = scalar_t;
    Map::for_each("expand_blocks", out.device(), out.numel(),
                  ExpandAt<T>{at, small.data_ptr<T>(), out.data_ptr<T>()});
  });
}

}  // namespace qgrad::nvidia
