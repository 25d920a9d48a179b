// Pool2dGeometry: the sizes of one 2-D pooling (input, output, window, stride, padding,
// dilation) and its construction from user arguments with PyTorch's rules: int-or-pair
// arguments, padding at most half the kernel, and the ceil_mode output size whose last window
// must start inside the input or its left padding.
#pragma once

#include <cstdint>

#include "core/shape.h"

namespace qgrad {

struct Pool2dGeometry {
  std::int64_t n = 0, c = 0, ih = 0, iw = 0, oh = 0, ow = 0;
  std::int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  // Bottom/right padding that makes the windows tile exactly (oh-1)*sh + dilated kernel rows:
  // >= 0, below the dilated kernel extent, larger than ph only for an extra ceil_mode window.
  std::int64_t pad_bottom = 0, pad_right = 0;
};

// PyTorch's pooling output length for one spatial dim (d is the dilation, 1 = none).
std::int64_t pool_output_size(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p,
                              std::int64_t d, bool ceil_mode);

// Checks the arguments of `op` for an input of shape [N, C, H, W] and returns the geometry.
// kernel/padding/dilation take 1 value (both dims) or 2 ({h, w}); an empty stride means the
// kernel. Throws ValueError (bad values) or ShapeError (window larger than the padded input).
Pool2dGeometry make_pool2d_geometry(const char* op, const Shape& x_shape, const Shape& kernel,
                                    const Shape& stride, const Shape& padding,
                                    const Shape& dilation, bool ceil_mode);

}  // namespace qgrad
