// The one CPU driver of the fake quantizers' forward: a single pass that writes each element's
// fake-quantized value and its straight-through gradient mask (1 where the rounded value lies in
// [quant_min, quant_max]), as PyTorch's TensorIterator writes several outputs in one loop. It is
// parametrised by a family's element functor, `T operator()(T x, std::uint8_t& mask) const`, a
// QGRAD_HD object from the family's *_elem.h header (Horizon, torch.ao, torch.ao fused) that a
// CUDA kernel can run as it is. Per tensor the operands may have any strides (StridedLoop); per
// channel they are contiguous and each channel has its own functor (ChannelLoop). Without a mask
// tensor the functor's mask goes to a local the compiler removes, so the value-only loop costs
// what a loop without the mask would.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/channel_loop.h"
#include "core/host_device.h"
#include "core/strided_loop.h"
#include "core/tensor.h"

namespace qgrad::quant {

// y[i] = e(x[i], m[i]) for i in [0, n); m may be null (no mask). Out of line and with local
// restrict pointers so the loop vectorises: the uint8 mask stores could otherwise alias x, y and
// the functor's parameters.
template <typename T, typename E>
QGRAD_NOINLINE void value_mask_row(const E& elem, const T* __restrict__ x, T* __restrict__ y,
                                   std::uint8_t* __restrict__ m, std::int64_t n) {
  const E e = elem;
  if (m != nullptr) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = e(x[i], m[i]);
  } else {
    std::uint8_t unused;
    for (std::int64_t i = 0; i < n; ++i) y[i] = e(x[i], unused);
  }
}

// Per tensor: y = e(x), mask = its mask, over y's shape. x, y any strides; mask (uint8, y's
// shape) may be undefined.
template <typename T, typename E>
void value_mask_map(const E& elem, const Tensor& x, const Tensor& y, const Tensor& mask) {
  const T* px = static_cast<const T*>(x.raw_data());
  T* py = static_cast<T*>(y.raw_data());
  std::uint8_t* pm = mask.defined() ? static_cast<std::uint8_t*>(mask.raw_data()) : nullptr;
  // Without a mask it takes y's strides, so the dimensions coalesce as for y and x alone.
  const Shape& mask_strides = mask.defined() ? mask.strides() : y.strides();
  StridedLoop<3> loop(y.shape(), {y.strides(), mask_strides, x.strides()}, {0, 0, 0});
  loop.run([&](const std::array<std::int64_t, 3>& off, std::int64_t n,
               const std::array<std::int64_t, 3>& st) {
    std::uint8_t* m = pm != nullptr ? pm + off[1] : nullptr;
    if (st[0] == 1 && st[1] == 1 && st[2] == 1)
      return value_mask_row(elem, px + off[2], py + off[0], m, n);
    const E e = elem;
    std::uint8_t unused;
    for (std::int64_t i = 0; i < n; ++i)
      py[off[0] + i * st[0]] = e(px[off[2] + i * st[2]], m != nullptr ? m[i * st[1]] : unused);
  });
}

// Per channel: y = elems[c](x), mask = its mask, for c the index along `axis` (normalised).
// x, y and mask (may be undefined) contiguous.
template <typename T, typename E>
void value_mask_map_channels(const std::vector<E>& elems, const Tensor& x, std::int64_t axis,
                             const Tensor& y, const Tensor& mask) {
  const T* px = static_cast<const T*>(x.raw_data());
  T* py = static_cast<T*>(y.raw_data());
  std::uint8_t* pm = mask.defined() ? static_cast<std::uint8_t*>(mask.raw_data()) : nullptr;
  ChannelLoop(x.shape(), axis).run([&](std::int64_t c, std::int64_t off, std::int64_t n) {
    value_mask_row(elems[static_cast<std::size_t>(c)], px + off, py + off,
                   pm != nullptr ? pm + off : nullptr, n);
  });
}

}  // namespace qgrad::quant
