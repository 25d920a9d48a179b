// Pool2dGeometry construction: argument validation and PyTorch's output-size rule.
#include "ops/pool/pool_geometry.h"

#include <algorithm>
#include <array>

#include "core/error.h"

namespace qgrad {

namespace {

// An int-or-pair argument as {h, w}.
std::array<std::int64_t, 2> pair_arg(const char* op, const char* name, const Shape& v) {
  QGRAD_CHECK(v.size() == 1 || v.size() == 2, ValueError, op, ": ", name,
              " must have 1 or 2 values ({h, w}), got ", v);
  return {v[0], v.size() == 2 ? v[1] : v[0]};
}

}  // namespace

std::int64_t pool_output_size(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p,
                              std::int64_t d, bool ceil_mode) {
  const std::int64_t span = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  // Floor division that rounds towards -inf (span may be negative for a too-large window).
  std::int64_t out = (span >= 0 ? span / s : -((-span + s - 1) / s)) + 1;
  // ceil_mode must not add a window that starts in the right padding.
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

Pool2dGeometry make_pool2d_geometry(const char* op, const Shape& x_shape, const Shape& kernel,
                                    const Shape& stride, const Shape& padding,
                                    const Shape& dilation, bool ceil_mode) {
  QGRAD_CHECK(x_shape.size() == 4, ShapeError, op,
              ": expected a 4-D input [N, C, H, W], got shape ", x_shape);
  const auto k = pair_arg(op, "kernel_size", kernel);
  const auto s = stride.empty() ? k : pair_arg(op, "stride", stride);
  const auto p = pair_arg(op, "padding", padding);
  const auto d = pair_arg(op, "dilation", dilation);
  for (int i = 0; i < 2; ++i) {
    QGRAD_CHECK(k[i] > 0, ValueError, op, ": kernel_size must be positive, got ", kernel);
    QGRAD_CHECK(s[i] > 0, ValueError, op, ": stride must be positive, got ", stride);
    QGRAD_CHECK(d[i] > 0, ValueError, op, ": dilation must be positive, got ", dilation);
    QGRAD_CHECK(p[i] >= 0, ValueError, op, ": padding must be non-negative, got ", padding);
    QGRAD_CHECK(p[i] <= k[i] / 2, ValueError, op,
                ": padding must be at most half of kernel_size, got padding ", padding,
                " for kernel_size ", kernel);
  }
  QGRAD_CHECK(x_shape[1] > 0 && x_shape[2] > 0 && x_shape[3] > 0, ShapeError, op,
              ": channel and spatial sizes must be non-zero, got input shape ", x_shape);

  Pool2dGeometry g;
  g.n = x_shape[0];
  g.c = x_shape[1];
  g.ih = x_shape[2];
  g.iw = x_shape[3];
  g.kh = k[0];
  g.kw = k[1];
  g.sh = s[0];
  g.sw = s[1];
  g.ph = p[0];
  g.pw = p[1];
  g.dh = d[0];
  g.dw = d[1];
  g.oh = pool_output_size(g.ih, g.kh, g.sh, g.ph, g.dh, ceil_mode);
  g.ow = pool_output_size(g.iw, g.kw, g.sw, g.pw, g.dw, ceil_mode);
  QGRAD_CHECK(g.oh >= 1 && g.ow >= 1, ShapeError, op, ": input of shape ", x_shape,
              " is too small for kernel_size ", Shape{g.kh, g.kw}, ", dilation ", Shape{g.dh, g.dw},
              " and padding ", Shape{g.ph, g.pw}, " (output size would be ", Shape{g.oh, g.ow},
              ")");
  // Right padding such that (in + ph + pad_r - extent) / s + 1 == out; clamped at 0 when floor
  // mode leaves input rows unused (the clamp adds less than one stride, so the count holds).
  const std::int64_t extent_h = (g.kh - 1) * g.dh + 1, extent_w = (g.kw - 1) * g.dw + 1;
  g.pad_bottom = std::max<std::int64_t>(0, (g.oh - 1) * g.sh + extent_h - g.ih - g.ph);
  g.pad_right = std::max<std::int64_t>(0, (g.ow - 1) * g.sw + extent_w - g.iw - g.pw);
  return g;
}

}  // namespace qgrad
