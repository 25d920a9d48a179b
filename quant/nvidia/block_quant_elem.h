// The scale math of the NVIDIA block quantizers, one grid entry at a time, written once
// (QGRAD_HD) for the kernels of block_quant_kernel.h on every device: MX's E8M0
// scale (a power of two from the ceil of log2 rounded to the dtype, as modelopt's torch.log2),
// NVFP4's E4M3 block scale under a global scale, the effective amax (the clip bound of the
// backward) of a scale, and the coarse grid entry a fine grid element reads (ExpandIndex). Each
// follows modelopt's operations in order, as block_quant_kernels.h states them. One caveat for the
// device: log2 is not correctly rounded on either side, so a descale whose log2 lies within an ulp
// of a dtype rounding boundary may round differently.
#pragma once

#include <cstdint>

#include "core/error.h"
#include "core/host_device.h"
#include "core/shape.h"
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

// The flat index in a coarse grid `small` (row-major) of fine grid element i (row-major over
// `big`): each coordinate divided by its block size (a block <= 0 spans the whole axis).
struct ExpandIndex {
  static constexpr int kMaxDims = 12;
  int nd = 0;
  std::int64_t big[kMaxDims] = {};
  std::int64_t block[kMaxDims] = {};
  std::int64_t small_strides[kMaxDims] = {};
  QGRAD_HD_INLINE std::int64_t operator()(std::int64_t i) const {
    std::int64_t off = 0;
    for (int k = nd - 1; k >= 0; --k) {
      const std::int64_t idx = i % big[k];
      i /= big[k];
      off += (idx / block[k]) * small_strides[k];
    }
    return off;
  }
};

// The ExpandIndex of `big` over `small` with `block` (one entry per axis); ShapeError naming `op`
// beyond ExpandIndex::kMaxDims axes.
inline ExpandIndex expand_index(const char* op, const Shape& big, const Shape& block,
                                const Shape& small) {
  QGRAD_CHECK(big.size() <= static_cast<std::size_t>(ExpandIndex::kMaxDims) &&
                  block.size() == big.size() && small.size() == big.size(),
              ShapeError, op, ": expanding a grid of shape ", small, " onto ", big, " (at most ",
              ExpandIndex::kMaxDims, " axes)");
  ExpandIndex e;
  e.nd = static_cast<int>(big.size());
  const Shape strides = contiguous_strides(small);
  for (std::size_t k = 0; k < big.size(); ++k) {
    e.big[k] = big[k];
    e.block[k] = block[k] <= 0 ? big[k] : block[k];
    e.small_strides[k] = strides[k];
  }
  return e;
}

// out[i] = small[at(i)]: one fine grid element.
template <typename T>
struct ExpandAt {
  ExpandIndex at;
  const T* small;
  T* out;
  QGRAD_HD_INLINE void operator()(std::int64_t i) const { out[i] = small[at(i)]; }
};

}  // namespace qgrad::nvidia
