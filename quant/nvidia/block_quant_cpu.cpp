// CPU scale-grid kernels of the block quantizers (MX and NVFP4 scales, grid expansion): plain
// serial loops over the grids, in the grids' dtype, registered in the "nvidia.*" tables.
#include "quant/nvidia/block_quant_kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "quant/nvidia/tensor_quant.h"  // kMinAmax

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
    for_each_grid<T>(scale, amax, [&](T a) {
      int k = -127;
      const T descale = a / maxval;
      if (descale > T(0)) {
        // As modelopt: ceil of log2 rounded to T (torch.log2 in float32), so a descale within
        // half an ulp of log2 above 2^k gives k, not k + 1 (its block then saturates at maxval).
        // log2 in double, rounded once to T, is the correctly rounded T value.
        const double l =
            std::ceil(static_cast<double>(static_cast<T>(std::log2(static_cast<double>(descale)))));
        k = static_cast<int>(std::min(std::max(l, -127.0), 127.0));
      }
      return static_cast<T>(std::ldexp(T(1), k));
    });
    for_each_grid<T>(eff, scale, [&](T s) { return maxval * s; });
  });
}

void nvfp4_scales_cpu(const Tensor& amax, const Tensor& global_amax, const MiniFloatSpec& e4m3,
                      double max_value, const Tensor& scale, const Tensor& eff) {
  QGRAD_DISPATCH_FLOAT(amax.dtype(), "nvfp4_scales_cpu", [&] {
    using T = scalar_t;
    const T* pa = amax.data_ptr<T>();
    const T* pa2 = global_amax.data_ptr<T>();
    T* ps = scale.data_ptr<T>();
    for (std::int64_t g = 0; g < amax.numel(); ++g) {
      if (pa2[g] <= static_cast<T>(kMinAmax)) {
        ps[g] = T(0);
        continue;
      }
      const T gs = pa2[g] / static_cast<T>(6.0 * 448.0);
      T sb = pa[g] / (T(6) * gs);
      if (sb == T(0)) sb = T(1);
      sb = std::max(sb, static_cast<T>(std::ldexp(1.0, -9)));
      const T sbq = static_cast<T>(minifloat_round(static_cast<double>(sb), e4m3));
      ps[g] = sbq * gs;
    }
    for_each_grid<T>(eff, scale, [&](T s) { return static_cast<T>(max_value) * s; });
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
