// CPU scale-grid kernels of the block quantizers (MX and NVFP4 scales, grid expansion): plain
// serial loops running block_quant_elem.h's elements over the grids, in the grids' dtype,
// registered in the "nvidia.*" tables.
#include "quant/nvidia/block_quant_kernels.h"

#include <vector>

#include "quant/nvidia/block_quant_elem.h"

namespace qgrad::nvidia {

namespace {

template <typename T, typename F>
void for_each_grid(const Tensor& out, const Tensor& a, F f) {
  const T* pa = a.data_ptr<T>();
  T* po = out.data_ptr<T>();
  for (std::int64_t g = 0; g < a.numel(); ++g) po[g] = f(pa[g]);
}

void mx_scales_cpu(const Tensor& amax, double max_value, const Tensor& scale, const Tensor& eff) {
  QGRAD_DISPATCH_FLOAT(amax.dtype(), "mx_scales_cpu", [&] {
    using T = scalar_t;
    const T maxval = static_cast<T>(max_value);
    for_each_grid<T>(scale, amax, MxScaleElem<T>{maxval});
    for_each_grid<T>(eff, scale, EffectiveAmaxElem<T>{maxval});
  });
}

void nvfp4_scales_cpu(const Tensor& amax, const Tensor& global_amax, const MiniFloatSpec& e4m3,
                      double max_value, const Tensor& scale, const Tensor& eff) {
  QGRAD_DISPATCH_FLOAT(amax.dtype(), "nvfp4_scales_cpu", [&] {
    using T = scalar_t;
    const T* pa = amax.data_ptr<T>();
    const T* pa2 = global_amax.data_ptr<T>();
    T* ps = scale.data_ptr<T>();
    const Nvfp4ScaleElem<T> block_scale{MiniFloatCaster<double>(e4m3)};
    for (std::int64_t g = 0; g < amax.numel(); ++g) ps[g] = block_scale(pa[g], pa2[g]);
    for_each_grid<T>(eff, scale, EffectiveAmaxElem<T>{static_cast<T>(max_value)});
  });
}

void expand_blocks_cpu(const Tensor& small, const Shape& block, const Tensor& out) {
  const Shape& big_shape = out.shape();
  const Shape sstr = contiguous_strides(small.shape());
  const std::size_t nd = big_shape.size();
  QGRAD_DISPATCH_FLOAT(small.dtype(), "block_quant", [&] {
    const scalar_t* ps = small.data_ptr<scalar_t>();
    scalar_t* po = out.data_ptr<scalar_t>();
    std::vector<std::int64_t> idx(nd, 0);
    const std::int64_t n = out.numel();
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t off = 0;
      for (std::size_t k = 0; k < nd; ++k) {
        const std::int64_t bk = block[k] <= 0 ? big_shape[k] : block[k];
        off += (idx[k] / bk) * sstr[k];
      }
      po[i] = ps[off];
      for (std::size_t k = nd; k-- > 0;) {
        if (++idx[k] < big_shape[k]) break;
        idx[k] = 0;
      }
    }
  });
}

}  // namespace

void register_block_quant_cpu_kernels(KernelRegistry& r) {
  r.table(kMxScalesKernels).define(DeviceType::CPU, &mx_scales_cpu, kFloatingDTypes);
  r.table(kNvfp4ScalesKernels).define(DeviceType::CPU, &nvfp4_scales_cpu, kFloatingDTypes);
  r.table(kExpandBlocksKernels).define(DeviceType::CPU, &expand_blocks_cpu, kFloatingDTypes);
}

}  // namespace qgrad::nvidia
