// The oneDNN post-ops that finish a requantisation (internal to deploy/int8): after the output
// scales, values are in units of the output grid, relative to its zero point. A fused ReLU and
// the grid's bounds are one clip, to [max(0, quant_min - zp), quant_max - zp] with the ReLU or
// [quant_min - zp, quant_max - zp] without (exact: clipping to integer bounds commutes with
// rounding); it is left out when neither is needed, as the conversion to uint8 / int8
// saturates anyway. `add_zero_point` appends + zp as a linear post-op, for primitives without
// destination zero points (inner product); convolutions set DNNL_ARG_DST zero points instead.
// A float32 output only gets the ReLU.
#pragma once

#include <dnnl.hpp>

#include <optional>

#include "deploy/int8/int8_grid.h"

namespace qgrad::quant {

dnnl::post_ops requantize_post_ops(const std::optional<Int8Grid>& output, bool relu,
                                   bool add_zero_point);

}  // namespace qgrad::quant
