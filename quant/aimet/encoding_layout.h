// EncodingLayout: how an AIMET encoding (scale / offset of a shape broadcast against x from the
// trailing dims) maps onto a contiguous x, as [outer, channels, inner] with one encoding element
// per channel: element (o, c, k) of x uses encoding element c. Per tensor is [1, 1, numel];
// (O,1,1,1) on a conv weight is [1, O, I*kh*kw]; (C,1,1) on [N,C,H,W] is [N, C, H*W]; (C) on
// [N, C] is [N, C, 1]. Encodings whose non-1 dims are not one block of x's dims (after dropping
// size-1 dims of x) have no such layout.
#pragma once

#include <cstdint>
#include <optional>

#include "core/shape.h"

namespace qgrad::aimet {

struct EncodingLayout {
  std::int64_t outer = 1;
  std::int64_t channels = 1;
  std::int64_t inner = 1;
  std::int64_t numel() const { return outer * channels * inner; }
};

// `encoding` must broadcast to `x` from the trailing dims (the caller checked it). Channel c
// is encoding element c of a contiguous tensor of shape `encoding`.
std::optional<EncodingLayout> encoding_layout(const Shape& x, const Shape& encoding);

}  // namespace qgrad::aimet
