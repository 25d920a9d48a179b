// Tests of the NVIDIA integer and affine quantization functions: the spec's worked examples,
// properties (idempotence, grid, monotonicity, ties, signed zero, tiny amax, per-channel
// broadcasting), clipped-STE masks at the exact boundary, errors, gradcheck in float64 and golden
// values written by tests/fixtures/gen_quant_nvidia.py with PyTorch's float32 arithmetic.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/factory.h"
#include "core/npy.h"
#include "ops/binary/binary.h"
#include "quant/nvidia/tensor_quant.h"
#include "support/fixtures.h"

using namespace qgrad;
using namespace qgrad::nvidia;
using qgrad_test::same_bits_or_nan;

namespace {

Tensor f32(const std::vector<float>& v, const Shape& s = {}) {
  return from_vector<float>(v, s.empty() ? Shape{static_cast<std::int64_t>(v.size())} : s);
}
Tensor scalar32(float v) {
  return scalar_tensor(v);
}
void require_bits(const Tensor& t, const std::vector<float>& expect) {
  qgrad_test::check_bits_or_nan(t.to_vector<float>(), expect);
}
std::string fixture(const std::string& name) {
  return qgrad_test::fixture_path("quant_nvidia", name);
}

}  // namespace

TEST_CASE("nvidia tensor_quant: int8 narrow range values and scale", "[quant][nvidia]") {
  Tensor x = f32({-2.0f, -1.0f, -0.5f, 0.0f, 0.3f, 1.0f, 1.5f});
  auto [q, scale] = tensor_quant(x, scalar32(1.0f));
  // scale = 127 / 1; x*127 rounded half-even, clamped to [-127, 127].
  require_bits(q, {-127, -127, -64 /* -63.5 -> -64 */, 0, 38 /* 38.1 */, 127, 127});
  REQUIRE(scale.dim() == 0);
  CHECK(scale.item<float>() == 127.0f);
  // Wide range reaches -128 only when narrow_range is off.
  auto [q2, s2] = tensor_quant(x, scalar32(1.0f), 8, false, false);
  CHECK(q2.to_vector<float>()[0] == -128.0f);
  // Unsigned: [0, 255], scale 255.
  auto [q3, s3] = tensor_quant(f32({0.0f, 0.5f, 2.0f}), scalar32(1.0f), 8, true);
  require_bits(q3, {0, 128 /* 127.5 -> 128 */, 255});
  CHECK(s3.item<float>() == 255.0f);
  (void)s2;
}

TEST_CASE("nvidia fake_tensor_quant: divides q by scale", "[quant][nvidia]") {
  // amax 3: scale = 127/3 in float32; out = q / scale (a division, not q * (1/scale)).
  Tensor x = f32({0.1f, -0.7f, 1.3f, 2.9f, 3.5f});
  Tensor out = fake_tensor_quant(x, scalar32(3.0f));
  const float scale = 127.0f / 3.0f;
  std::vector<float> expect;
  for (float v : x.to_vector<float>()) {
    float q = std::nearbyint(v * scale);
    q = std::min(std::max(q, -127.0f), 127.0f);
    expect.push_back(q / scale);
  }
  require_bits(out, expect);
  require_bits(legacy_fake_tensor_quant(x, scalar32(3.0f)), expect);
}

TEST_CASE("nvidia fake_tensor_quant: ties round to even", "[quant][nvidia]") {
  // amax 127 -> scale 1 exactly, so x*scale = x and .5 ties are visible directly.
  Tensor x = f32({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f});
  auto [q, s] = tensor_quant(x, scalar32(127.0f));
  require_bits(q, {0.0f, 2.0f, 2.0f, -0.0f, -2.0f, -2.0f, 126.0f});
  (void)s;
}

TEST_CASE("nvidia fake_tensor_quant: signed zero and tiny or zero amax", "[quant][nvidia]") {
  Tensor x = f32({-1.0f, -0.0f, 0.0f, 2.0f, -1e-30f});
  // amax exactly 2^-24 counts as zero (inclusive): outputs are x*0 with x's sign; scale 1.
  for (float a : {0.0f, 1.0f / (1 << 24), 1e-30f}) {
    auto [q, s] = tensor_quant(x, scalar32(a));
    require_bits(q, {-0.0f, -0.0f, 0.0f, 0.0f, -0.0f});
    CHECK(s.item<float>() == 1.0f);
    require_bits(fake_tensor_quant(x, scalar32(a)), {-0.0f, -0.0f, 0.0f, 0.0f, -0.0f});
  }
  // Just above the threshold it quantizes normally.
  const float a = std::nextafter(1.0f / (1 << 24), 1.0f);
  auto [q, s] = tensor_quant(f32({a}), scalar32(a));
  CHECK(q.item<float>() == 127.0f);
  // Small negative values round to -0.0.
  require_bits(fake_tensor_quant(f32({-0.001f}), scalar32(1.0f)), {-0.0f});
  (void)s;
}

TEST_CASE("nvidia fake_tensor_quant: NaN stays NaN, Inf saturates", "[quant][nvidia]") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = f32({nan, inf, -inf, 1e38f, -1e38f});
  auto [q, s] = tensor_quant(x, scalar32(1.0f));
  std::vector<float> v = q.to_vector<float>();
  CHECK(std::isnan(v[0]));
  CHECK(v[1] == 127.0f);
  CHECK(v[2] == -127.0f);
  CHECK(v[3] == 127.0f);
  CHECK(v[4] == -127.0f);
  // Zero amax: Inf * 0 is NaN, as in the reference.
  auto [qz, sz] = tensor_quant(x, scalar32(0.0f));
  CHECK(std::isnan(qz.to_vector<float>()[1]));
  (void)s;
  (void)sz;
}

TEST_CASE("nvidia fake_tensor_quant: idempotent, on the grid, monotone", "[quant][nvidia]") {
  Generator gen(7);
  Tensor x = randn({4097}, gen) * 3.0;
  for (bool narrow : {true, false}) {
    for (int bits : {2, 4, 8}) {
      Tensor amax = scalar32(2.5f);
      Tensor y = fake_tensor_quant(x, amax, bits, false, narrow);
      Tensor yy = fake_tensor_quant(y, amax, bits, false, narrow);
      std::vector<float> vy = y.to_vector<float>(), vyy = yy.to_vector<float>();
      std::vector<float> vx = x.to_vector<float>();
      const float scale = static_cast<float>(std::ldexp(1.0, bits - 1) - 1) / 2.5f;
      for (std::size_t i = 0; i < vy.size(); ++i) {
        INFO("bits " << bits << " narrow " << narrow << " i " << i << " x " << vx[i]);
        REQUIRE(same_bits_or_nan(vy[i], vyy[i]));
        // On the grid: y * scale is (within one rounding of the division) an integer.
        const float k = std::nearbyint(vy[i] * scale);
        REQUIRE(std::fabs(vy[i] * scale - k) < 1e-3f);
        // Within [min_bound, max_bound] / scale (wide range reaches one step below -amax).
        REQUIRE(std::fabs(vy[i]) <= (narrow ? 2.5f : 2.5f + 1.0f / scale) * 1.0001f);
      }
      // Monotone: sorting x sorts y.
      std::vector<std::size_t> idx(vx.size());
      for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return vx[a] < vx[b]; });
      for (std::size_t i = 1; i < idx.size(); ++i) REQUIRE(vy[idx[i - 1]] <= vy[idx[i]]);
    }
  }
}

TEST_CASE("nvidia fake_tensor_quant: per-channel amax broadcasting", "[quant][nvidia]") {
  Generator gen(3);
  Tensor x = randn({3, 2, 5}, gen);
  Tensor amax = f32({0.5f, 1.0f, 2.0f}, {3, 1, 1});
  Tensor y = fake_tensor_quant(x, amax);
  // Each channel equals the per-tensor result with its own amax.
  for (int c = 0; c < 3; ++c) {
    Tensor yc = fake_tensor_quant(x.select(0, c), scalar32(amax.to_vector<float>()[c]));
    require_bits(y.select(0, c).contiguous(), yc.to_vector<float>());
  }
  // Per-channel along the last axis, amax given with fewer dims ([5] broadcasts to [3,2,5]).
  Tensor amax_last = f32({0.1f, 0.4f, 0.0f, 1.0f, 3.0f});
  Tensor y2 = fake_tensor_quant(x, amax_last);
  for (int k = 0; k < 5; ++k) {
    Tensor yk =
        fake_tensor_quant(x.select(2, k).contiguous(), scalar32(amax_last.to_vector<float>()[k]));
    require_bits(y2.select(2, k).contiguous(), yk.to_vector<float>());
  }
  // tensor_quant returns the scale with amax's shape, 1 where amax is zero.
  auto [q, s] = tensor_quant(x, amax_last);
  CHECK(s.shape() == Shape{5});
  CHECK(s.to_vector<float>()[2] == 1.0f);
  (void)q;
  // Non-contiguous input gives the same values as its contiguous copy.
  Tensor xt = randn({5, 6}, gen).t();
  require_bits(
      fake_tensor_quant(xt, f32({1, 2, 3, 4, 5, 6}, {6, 1})),
      fake_tensor_quant(xt.contiguous(), f32({1, 2, 3, 4, 5, 6}, {6, 1})).to_vector<float>());
}

TEST_CASE("nvidia fake_tensor_quant: clipped STE mask is inclusive", "[quant][nvidia]") {
  Tensor x = f32({-1.5f, -1.0f, -0.999f, 0.0f, 1.0f, std::nextafter(1.0f, 2.0f), 7.0f});
  x.set_requires_grad(true);
  Tensor amax = scalar32(1.0f);
  Tensor y = fake_tensor_quant(x, amax);
  y.backward(ones_like(y));
  require_bits(x.grad(), {0, 1, 1, 1, 1, 0, 0});
  // Per channel: each channel clips against its own amax; NaN gets no gradient.
  Tensor x2 = f32({0.5f, 0.6f, 2.0f, 2.1f, std::nanf(""), 0.0f}, {3, 2});
  x2.set_requires_grad(true);
  Tensor a2 = f32({0.5f, 2.0f, 1.0f}, {3, 1});
  a2.set_requires_grad(true);
  Tensor y2 = fake_tensor_quant(x2, a2);
  y2.backward(full_like(y2, 3.0));
  require_bits(x2.grad(), {3, 0, 3, 0, 0, 3});
  CHECK_FALSE(a2.grad().defined());  // no gradient to amax
  // tensor_quant's q has the same mask.
  Tensor x3 = f32({-2.0f, 0.5f});
  x3.set_requires_grad(true);
  auto [q, s] = tensor_quant(x3, scalar32(1.0f));
  q.backward(ones_like(q));
  require_bits(x3.grad(), {0, 1});
  (void)s;
}

TEST_CASE("nvidia fake_tensor_quant: float64 forward and STE gradient", "[quant][nvidia]") {
  // The forward is piecewise constant, so finite differences say 0 almost everywhere while the
  // STE says 1: gradcheck does not apply. The float64 gradient is checked against the mask.
  auto opts = TensorOptions().dtype(kFloat64);
  Tensor x = from_vector<double>({-3.0, -1.0, -0.25, 0.5, 1.0, 1.25}, {6}, opts);
  x.set_requires_grad(true);
  Tensor y = fake_tensor_quant(x, scalar_tensor(1.0, opts), 4);
  CHECK(y.dtype() == kFloat64);
  y.backward(from_vector<double>({1, 2, 3, 4, 5, 6}, {6}, opts));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 2, 3, 4, 5, 0});
  // float64 follows the same formula in double.
  const double s = 7.0;
  CHECK(y.to_vector<double>()[2] == std::nearbyint(-0.25 * s) / s);
}

TEST_CASE("nvidia fake_tensor_quant: argument errors", "[quant][nvidia]") {
  Tensor x = f32({1.0f, -1.0f});
  REQUIRE_THROWS_AS(fake_tensor_quant(x, scalar32(-1.0f)), ValueError);
  REQUIRE_THROWS_WITH(fake_tensor_quant(x, scalar32(-1.0f)), Catch::Contains("fake_tensor_quant"));
  REQUIRE_THROWS_AS(fake_tensor_quant(x, scalar32(std::nanf(""))), ValueError);
  REQUIRE_THROWS_AS(fake_tensor_quant(x, scalar32(INFINITY)), ValueError);
  REQUIRE_THROWS_AS(fake_tensor_quant(x, scalar32(1.0f), 8, true), ValueError);
  REQUIRE_THROWS_WITH(fake_tensor_quant(x, scalar32(1.0f), 8, true), Catch::Contains("unsigned"));
  REQUIRE_THROWS_AS(fake_tensor_quant(x, scalar32(1.0f), 1), ValueError);
  REQUIRE_THROWS_AS(fake_tensor_quant(x, scalar32(1.0f), 25), ValueError);
  REQUIRE_THROWS_AS(fake_tensor_quant(x, f32({1, 2, 3})), ShapeError);
  REQUIRE_THROWS_WITH(tensor_quant(x, f32({1, 2, 3})), Catch::Contains("tensor_quant"));
  REQUIRE_THROWS_AS(fake_tensor_quant(x.to(kInt32), scalar32(1.0f)), DTypeError);
  REQUIRE_THROWS_AS(fake_tensor_quant(x, Tensor()), ValueError);
  // unsigned accepts -0.0 and NaN (not negative).
  REQUIRE_NOTHROW(fake_tensor_quant(f32({-0.0f, std::nanf("")}), scalar32(1.0f), 8, true));
  // Empty input.
  CHECK(fake_tensor_quant(zeros({0, 3}), scalar32(1.0f)).shape() == Shape{0, 3});
}

TEST_CASE("nvidia fake_affine_tensor_quant: spec example and mask", "[quant][nvidia]") {
  Tensor x = f32({-1.0f, -0.5f, 0.0f, 0.37f, 2.0f, 3.5f});
  x.set_requires_grad(true);
  Tensor y = fake_affine_tensor_quant(x, -1.0, 3.0, 8);
  std::vector<float> v = y.to_vector<float>();
  const std::vector<float> expect = {-1.0039216f, -0.5019608f, 0.0f,
                                     0.3764706f,  1.9921570f,  2.9960785f};
  for (std::size_t i = 0; i < v.size(); ++i) CHECK(v[i] == Approx(expect[i]).epsilon(1e-7));
  // Bit-exact against the formula evaluated in float32 here.
  const float step = 4.0f / 255.0f;
  const float qz = std::nearbyint(-1.0f / step) + 128.0f;
  std::vector<float> exact;
  for (float xv : x.to_vector<float>()) {
    float q = std::min(std::max(std::nearbyint(xv / step) - qz, -128.0f), 127.0f);
    exact.push_back((q + qz) * step);
  }
  require_bits(y, exact);
  y.backward(ones_like(y));
  require_bits(x.grad(), {1, 1, 1, 1, 1, 0});
  REQUIRE_THROWS_AS(fake_affine_tensor_quant(x, 1.0, 1.0), ValueError);
  REQUIRE_THROWS_WITH(fake_affine_tensor_quant(x, 2.0, 1.0),
                      Catch::Contains("fake_affine_tensor_quant"));
  REQUIRE_THROWS_AS(fake_affine_tensor_quant(x, 0.0, 1.0, 0), ValueError);
}

TEST_CASE("nvidia tensor_quant: golden values from PyTorch float32", "[quant][nvidia]") {
  // gen_quant_nvidia.py evaluates the reference formulas with torch ops in float32.
  Tensor x = load_npy(fixture("x.npy"));
  Tensor amax_c = load_npy(fixture("amax_channel.npy"));
  struct Case {
    const char* file;
    int bits;
    bool is_unsigned, narrow;
  };
  for (const Case& c : {Case{"fake_tensor_8_narrow.npy", 8, false, true},
                        Case{"fake_tensor_4_wide.npy", 4, false, false}}) {
    INFO(c.file);
    require_bits(fake_tensor_quant(x, scalar32(2.0f), c.bits, c.is_unsigned, c.narrow),
                 load_npy(fixture(c.file)).to_vector<float>());
  }
  require_bits(fake_tensor_quant(x, amax_c, 8),
               load_npy(fixture("fake_tensor_channel.npy")).to_vector<float>());
  Tensor xa = load_npy(fixture("x_abs.npy"));
  require_bits(fake_tensor_quant(xa, scalar32(1.5f), 8, true),
               load_npy(fixture("fake_tensor_unsigned.npy")).to_vector<float>());
  require_bits(fake_affine_tensor_quant(x, -1.7, 2.3, 8),
               load_npy(fixture("fake_affine.npy")).to_vector<float>());
}
