// The scale math of the NVIDIA block quantizers, one grid entry at a time, written once
// (QGRAD_HD) for the CPU kernels of block_quant_cpu.cpp and their future CUDA twins: MX's E8M0
// scale (a power of two from the ceil of log2 rounded to the dtype, as modelopt's torch.log2),
// NVFP4's E4M3 block scale under a global scale, and the effective amax (the clip bound of the
// backward) of a scale. Each follows modelopt's operations in order, as block_quant_kernels.h
// states them. One caveat for the device: log2 is not correctly rounded on either side, so a
// descale whose log2 lies within an ulp of a dtype rounding boundary may round differently.
#pragma once

#include "core/host_device.h"
#include "quant/nvidia/num_bits.h"
#include "quant/nvidia/tensor_quant.h"  // kMinAmax
#include "quant/nvidia/tensor_quant_elem.h"

namespace qgrad::nvidia {

// MX: 2^clamp(ceil(T(log2(amax / max_value))), -127, 127); 2^-127 where the ratio is not
// positive.
template <typename T>
struct MxScaleElem {
  T max_value;
  QGRAD_HD_INLINE T operator()(T amax) const {
    int k = -127;
    const T descale = amax / max_value;
    if (descale > T(0)) {
      // As modelopt: ceil of log2 rounded to T (torch.log2 in float32), so a descale within
      // half an ulp of log2 above 2^k gives k, not k + 1 (its block then saturates at maxval).
      // log2 in double, rounded once to T, is the correctly rounded T value.
      const double l =
          hd::ceil(static_cast<double>(static_cast<T>(hd::log2(static_cast<double>(descale)))));
      k = static_cast<int>(hd::min(hd::max(l, -127.0), 127.0));
    }
    return static_cast<T>(hd::ldexp(T(1), k));
  }
};

// NVFP4: gs = global_amax / (6 * 448); the block scale amax / (6 * gs) (a zero ratio counts as
// 1), at least 2^-9, rounded to E4M3 in double, times gs; 0 where global_amax <= 2^-24.
template <typename T>
struct Nvfp4ScaleElem {
  MiniFloatCaster<double> e4m3;
  QGRAD_HD_INLINE T operator()(T amax, T global_amax) const {
    if (global_amax <= static_cast<T>(kMinAmax)) return T(0);
    const T gs = global_amax / static_cast<T>(6.0 * 448.0);
    T sb = amax / (T(6) * gs);
    if (sb == T(0)) sb = T(1);
    sb = hd::max(sb, static_cast<T>(0.001953125));  // 2^-9
    const T sbq = static_cast<T>(e4m3(static_cast<double>(sb)));
    return sbq * gs;
  }
};

// The largest magnitude a block with this scale represents: max_value * scale.
template <typename T>
struct EffectiveAmaxElem {
  T max_value;
  QGRAD_HD_INLINE T operator()(T scale) const { return max_value * scale; }
};

}  // namespace qgrad::nvidia
