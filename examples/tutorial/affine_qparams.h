// torch.ao's affine rule for turning an observed range [min_val, max_val] into a scale and a zero
// point, written out by hand in float32 for the tutorial (docs/tutorial.md, chapters 1 and 3;
// qgrad's own version is UniformQuantizationObserver::calculate_qparams_from). The range is first
// widened to contain 0, so that 0.0 is exactly representable (zero padding and ReLU outputs stay
// exact); the scale spreads it over quant_max - quant_min steps (never below eps = 2^-23); the zero
// point is the integer that 0.0 maps to, rounded half to even and clamped into the grid.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tutorial {

struct AffineQParams {
  float scale;
  std::int64_t zero_point;
};

// [tutorial:affine_qparams]
inline AffineQParams affine_qparams(float min_val, float max_val, std::int64_t quant_min,
                                    std::int64_t quant_max) {
  const float min_neg = std::min(min_val, 0.0f);  // the range must contain 0
  const float max_pos = std::max(max_val, 0.0f);
  const float eps = 1.1920929e-07f;  // 2^-23, torch.ao's default
  const float scale =
      std::max((max_pos - min_neg) / static_cast<float>(quant_max - quant_min), eps);
  const auto zp = quant_min - static_cast<std::int64_t>(std::nearbyint(min_neg / scale));
  return {scale, std::clamp(zp, quant_min, quant_max)};
}
// [/tutorial:affine_qparams]

}  // namespace tutorial
