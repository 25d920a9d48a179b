// Kernel / stride / padding pairs and window extents of the deployment back ends.
#include "deploy/common/layer_geometry.h"

#include "core/error.h"

namespace qgrad::deploy {

std::array<std::int64_t, 2> pair_of(const Shape& s, const std::string& op, const std::string& where,
                                    const char* what) {
  QGRAD_CHECK(s.size() == 1 || s.size() == 2, ValueError, op, ": ", where, ": ", what,
              " must have 1 or 2 values, got ", shape_str(s));
  return {s[0], s.size() == 1 ? s[0] : s[1]};
}

WindowExtent window_extent(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                           std::int64_t padding, std::int64_t dilation, bool ceil_mode) {
  WindowExtent e;
  const std::int64_t span = dilation * (kernel - 1) + 1, room = in + 2 * padding - span;
  if (room < 0) return e;
  e.out = (ceil_mode ? (room + stride - 1) / stride : room / stride) + 1;
  if (ceil_mode && (e.out - 1) * stride >= in + padding) --e.out;
  e.pad_right = (e.out - 1) * stride + span - in - padding;
  e.valid = true;
  return e;
}

}  // namespace qgrad::deploy
