// Tutorial chapter 2 (docs/tutorial.md): the straight-through estimator. Rounding is flat almost
// everywhere, so the true derivative of a fake quantizer is 0 (and infinite at the steps): a
// central finite difference shows it. QAT instead passes the upstream gradient straight through
// where the rounded value is on the grid and blocks it where the value was clipped. The example
// backpropagates a made-up upstream gradient through ao::fake_quantize_per_tensor_affine and
// compares x.grad() with the mask computed by hand, element by element; a mismatch makes it exit
// with status 1.
#include <cmath>
#include <cstdio>
#include <vector>

#include "qgrad.h"
#include "tutorial_check.h"

using namespace qgrad;

int main() {
  tutorial::Check check;
  const double scale = 0.125;  // chapter 1's grid: 4 bits, zero point 8, range [-1, 0.875]
  const std::int64_t zero_point = 8, quant_min = 0, quant_max = 15;

  // [tutorial:finite_difference]
  Tensor x = tensor({-1.3, -1.05, -0.3, -0.0625, 0.1875, 0.3125, 0.9, 2.0}).set_requires_grad();
  const double h = 1e-3;
  Tensor x0 = x.detach();  // no graph needed for the finite difference
  Tensor fd =
      (ao::fake_quantize_per_tensor_affine(x0 + h, scale, zero_point, quant_min, quant_max) -
       ao::fake_quantize_per_tensor_affine(x0 - h, scale, zero_point, quant_min, quant_max)) /
      (2 * h);
  // [/tutorial:finite_difference]
  const std::vector<float> xs = x.to_vector<float>(), fds = fd.to_vector<float>();
  std::printf("x      = %s\n", tutorial::fmt(xs).c_str());
  std::printf("finite difference = %s\n", tutorial::fmt(fds).c_str());
  // Away from a rounding step (x / scale not within h / scale of k + 0.5) the true derivative is
  // 0; at 0.1875 = 1.5 * scale, a step, it is a spike of scale / (2 h).
  bool flat = true;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double r = xs[i] / scale;
    const bool near_step = std::fabs(r - std::floor(r) - 0.5) < h / scale;
    if (!near_step) flat = flat && fds[i] == 0.0f;
  }
  check.that("the finite difference is 0 everywhere except at a rounding step", flat);
  check.near("at the step x = 0.1875 it is scale / (2 h) = 62.5", fds[4], scale / (2 * h), 1e-3);

  // [tutorial:ste]
  Tensor y = ao::fake_quantize_per_tensor_affine(x, scale, zero_point, quant_min, quant_max);
  Tensor dy = tensor({0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8});  // from the layers above
  y.backward(dy);
  // x.grad() is dy where quant_min <= rne(x / scale) + zero_point <= quant_max, else 0
  // [/tutorial:ste]

  // The mask by hand: the same test on the rounded, unclipped level.
  const std::vector<float> dys = dy.to_vector<float>();
  std::vector<float> mask, expected;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const float level = std::nearbyint(xs[i] * (1.0f / float(scale))) + float(zero_point);
    mask.push_back(level >= quant_min && level <= quant_max ? 1.0f : 0.0f);
    expected.push_back(dys[i] * mask.back());
  }
  std::printf("y      = %s\n", tutorial::fmt(y.to_vector<float>()).c_str());
  std::printf("mask   = %s\n", tutorial::fmt(mask).c_str());
  std::printf("x.grad = %s\n", tutorial::fmt(x.grad().to_vector<float>()).c_str());
  check.exact("x.grad() is dy times the mask computed by hand", x.grad().to_vector<float>(),
              expected);
  check.that("-1.05 < min = -1 still gets a gradient: rne(-8.4) + 8 = 0 is on the grid",
             mask[1] == 1.0f);
  check.that("0.9 > max = 0.875 still gets a gradient: rne(7.2) + 8 = 15 is on the grid",
             mask[6] == 1.0f);
  return check.exit_code();
}
