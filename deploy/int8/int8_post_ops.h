// The oneDNN post-ops that finish a requantisation (internal to deploy/int8). After the output
// scales, values v are in units of the output grid; a fused ReLU and the grid's bounds are one
// clip (exact: clipping to integer bounds commutes with rounding half to even), left out when
// neither is needed, as the conversion to uint8 / int8 saturates anyway.
//
// Convolutions set DNNL_ARG_DST zero points, which oneDNN adds after the post-ops: the clip is
// relative to the zero point, [max(0, quant_min - zp), quant_max - zp] with the ReLU.
// Primitives without destination zero points (inner product, binary) get `add_zero_point`: one
// linear post-op v + shift + zp, then the clip in absolute grid units, [max(zp, quant_min),
// quant_max] with the ReLU (round(v + zp) = round(v) + zp for an integer zp). `shift` (output
// units) takes off input zero points the primitive cannot apply itself (binary add). At most two
// eltwise post-ops on purpose: oneDNN 2.6's jit:uni binary kernel writes wrong int8 results with
// three chained eltwise post-ops (linear, clip, linear), as tests/deploy/test_int8_layers.cpp's
// add test showed. `sum` (convolutions only) puts oneDNN's sum post-op first, adding
// (s_sum / s_out) * (dst - zp_sum) of the int8 tensor already in the destination, before the
// clip. A float32 output gets the shift and the ReLU only. `relu_max` (real units, with `relu`;
// 0: none) caps the fused ReLU, as ReLU6 does: the clip's upper end becomes
// min(quant_max, zp + relu_max / s_out), in float (rounding after clipping to c gives
// min(round(v), round(c)), as quantizing ReLU6's output does).
#pragma once

#include <dnnl.hpp>

#include <cstdint>
#include <optional>

#include "deploy/int8/int8_grid.h"

namespace qgrad::quant {

// The clip a requantisation onto `output` needs, in absolute grid units: [max(zp, quant_min),
// quant_max] with a fused ReLU, [quant_min, quant_max] for a grid narrower than its type; none
// when neither applies (the conversion's saturation is enough). requantize_post_ops() and
// Int8DirectConv2d both take their clip from here.
struct GridClip {
  std::int64_t lo = 0, hi = 0;
};
std::optional<GridClip> output_clip(const Int8Grid& output, bool relu);

dnnl::post_ops requantize_post_ops(const std::optional<Int8Grid>& output, bool relu,
                                   bool add_zero_point, double shift = 0,
                                   const Int8Grid* sum = nullptr, double relu_max = 0);

}  // namespace qgrad::quant
