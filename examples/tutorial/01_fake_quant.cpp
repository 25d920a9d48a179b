// Tutorial chapter 1 (docs/tutorial.md): a tensor through a fake quantizer by hand. A 4-bit
// unsigned grid [0, 15] and an observed range [-1, 0.875] give scale and zero point by torch.ao's
// affine rule (affine_qparams.h); each value is then divided by the scale, rounded half to even,
// shifted by the zero point, clipped to the grid and mapped back (dequantized). The by-hand
// results are compared bit for bit with qgrad's ao::fake_quantize_per_tensor_affine, and the
// properties the chapter states (outputs on the grid, error at most half a step inside the range,
// ties to even) are checked; any mismatch makes the program exit with status 1.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "affine_qparams.h"
#include "qgrad.h"
#include "tutorial_check.h"

using namespace qgrad;

int main() {
  tutorial::Check check;

  // [tutorial:qparams]
  const std::int64_t quant_min = 0, quant_max = 15;  // a 4-bit unsigned grid
  const float min_val = -1.0f, max_val = 0.875f;     // the range a calibration saw
  const auto [scale, zero_point] = tutorial::affine_qparams(min_val, max_val, quant_min, quant_max);
  // [/tutorial:qparams]
  std::printf("scale = %.8g, zero_point = %lld\n", static_cast<double>(scale),
              static_cast<long long>(zero_point));
  // scale = 1.875 / 15 and 0.0 must land on an integer: zero_point = 0 - rne(-1 / 0.125).
  check.that("scale is (max - min) / 15 = 0.125", scale == (max_val - min_val) / 15.0f);
  check.that("zero point is the integer 0.0 maps to: -min / scale = 8",
             zero_point == static_cast<std::int64_t>(-min_val / scale));

  // [tutorial:by_hand]
  const std::vector<float> x = {-1.3f, -0.3f, -0.0625f, 0.1875f, 0.3125f, 0.4f, 0.875f, 2.0f};
  const float inv_scale = 1.0f / scale;  // torch.ao multiplies by the reciprocal
  const float zp = static_cast<float>(zero_point);
  std::vector<float> by_hand;
  for (float v : x) {
    const float q = std::nearbyint(v * inv_scale) + zp;  // round half to even, then shift
    const float q_clipped = std::clamp(q, float(quant_min), float(quant_max));
    by_hand.push_back((q_clipped - zp) * scale);  // dequantize
  }
  // [/tutorial:by_hand]

  std::printf("%10s %10s %6s %6s %8s %12s\n", "x", "x/scale", "rne", "+zp", "clipped", "dequant");
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float r = x[i] * inv_scale;
    const float q = std::nearbyint(r) + zp;
    std::printf("%10.5g %10.5g %6g %6g %8g %12.8g\n", static_cast<double>(x[i]),
                static_cast<double>(r), static_cast<double>(std::nearbyint(r)),
                static_cast<double>(q),
                static_cast<double>(std::clamp(q, float(quant_min), float(quant_max))),
                static_cast<double>(by_hand[i]));
  }

  // [tutorial:qgrad_op]
  Tensor y =
      ao::fake_quantize_per_tensor_affine(from_vector(x), scale, zero_point, quant_min, quant_max);
  // [/tutorial:qgrad_op]
  std::printf("by hand: %s\nqgrad:   %s\n", tutorial::fmt(by_hand).c_str(),
              tutorial::fmt(y.to_vector<float>()).c_str());
  check.exact("ao::fake_quantize_per_tensor_affine equals the by-hand result bit for bit",
              y.to_vector<float>(), by_hand);

  // What the chapter says about the numbers, computed rather than written down.
  check.that("ties go to even: rne(-0.5) = -0, rne(1.5) = 2, rne(2.5) = 2",
             std::nearbyint(-0.5f) == 0.0f && std::nearbyint(1.5f) == 2.0f &&
                 std::nearbyint(2.5f) == 2.0f);
  bool on_grid = true, small_error = true, clipped_to_ends = true;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float k = by_hand[i] / scale + zp;  // the integer level of the output
    on_grid = on_grid && k == std::nearbyint(k) && k >= quant_min && k <= quant_max;
    if (x[i] >= min_val && x[i] <= max_val)
      small_error = small_error && std::fabs(by_hand[i] - x[i]) <= scale / 2;
    else
      clipped_to_ends = clipped_to_ends && (by_hand[i] == min_val || by_hand[i] == max_val);
  }
  check.that("every output is (k - zero_point) * scale for an integer k in [0, 15]", on_grid);
  check.that("inside [min, max] the error is at most scale / 2", small_error);
  check.that("outside [min, max] values clip to min or max", clipped_to_ends);
  return check.exit_code();
}
