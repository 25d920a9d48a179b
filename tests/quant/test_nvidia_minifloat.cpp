// Tests of the (E,M) minifloat cast and scaled_e4m3: hand-computed E4M3 / E5M2 / E2M1 tables
// (max, min normal, min subnormal, halfway ties, saturation, NaN, signed zero), the vectorised
// kernel against a brute-force nearest-grid-point reference, and scaled quantization with amax
// (zero mask, per-channel amax, clipped STE).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/factory.h"
#include "quant/nvidia/block_quant.h"
#include "quant/nvidia/num_bits.h"
#include "quant/nvidia/tensor_quant.h"
#include "support/fixtures.h"

using namespace qgrad;
using namespace qgrad::nvidia;
using qgrad_test::same_bits_or_nan;

namespace {

// Plain cast through the tensor kernel (minifloat_cast: no scale, no small-value mask).
std::vector<float> kernel_cast(const std::vector<float>& v, FloatFormat f) {
  Tensor x = from_vector<float>(v, {static_cast<std::int64_t>(v.size())});
  return minifloat_cast(x, f).to_vector<float>();
}

// All non-negative finite values of a format, ascending, by enumerating its codes.
std::vector<double> enumerate_grid(const MiniFloatSpec& s) {
  std::vector<double> g;
  const int M = s.format.mantissa_bits;
  for (int e = 0; e < (1 << s.format.exponent_bits); ++e) {
    for (int m = 0; m < (1 << M); ++m) {
      const double v =
          e == 0 ? std::ldexp(m, 1 - s.bias - M) : std::ldexp(1.0 + std::ldexp(m, -M), e - s.bias);
      if (v <= s.max_value) g.push_back(v);
    }
  }
  return g;
}

// Nearest grid value, ties to the even code (even index in the ascending grid).
double brute_round(double v, const std::vector<double>& grid) {
  if (std::isnan(v)) return v;
  const double a = std::fabs(v);
  if (a >= grid.back()) return std::copysign(grid.back(), v);
  auto it = std::upper_bound(grid.begin(), grid.end(), a);
  const std::size_t hi = static_cast<std::size_t>(it - grid.begin()), lo = hi - 1;
  const double dl = a - grid[lo], dh = grid[hi] - a;
  const std::size_t pick = dl < dh ? lo : (dh < dl ? hi : (lo % 2 == 0 ? lo : hi));
  return std::copysign(grid[pick], v);
}

}  // namespace

TEST_CASE("nvidia minifloat: format constants", "[quant][nvidia]") {
  const MiniFloatSpec e4m3 = minifloat_spec(kE4M3);
  CHECK(e4m3.max_value == 448.0);
  CHECK(e4m3.min_normal == std::ldexp(1.0, -6));
  CHECK(e4m3.min_subnormal == std::ldexp(1.0, -9));
  CHECK(e4m3.max_exponent == 8);
  const MiniFloatSpec e5m2 = minifloat_spec(kE5M2);
  CHECK(e5m2.max_value == 57344.0);
  CHECK(e5m2.min_normal == std::ldexp(1.0, -14));
  CHECK(e5m2.min_subnormal == std::ldexp(1.0, -16));
  CHECK(minifloat_spec(kE2M1).max_value == 6.0);
  CHECK(minifloat_spec(kE2M1).min_subnormal == 0.5);
  CHECK(minifloat_spec({3, 2}).max_value == 28.0);
  CHECK(minifloat_spec({2, 3}).max_value == 7.5);
  CHECK(minifloat_spec({5, 10}).max_value == 65504.0);  // fp16
  CHECK(minifloat_spec({8, 23}).max_value ==
        static_cast<double>(std::numeric_limits<float>::max()));
  REQUIRE_THROWS_AS(minifloat_spec(kE8M0), ValueError);
  REQUIRE_THROWS_AS(minifloat_spec({1, 3}), ValueError);
  REQUIRE_THROWS_AS(minifloat_spec({4, 0}), ValueError);
  REQUIRE_THROWS_WITH(minifloat_spec({9, 3}, "scaled_e4m3"), Catch::Contains("scaled_e4m3"));
}

TEST_CASE("nvidia minifloat: E4M3 cast table", "[quant][nvidia]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float sub = std::ldexp(1.0f, -9);
  struct Row {
    float in, out;
  };
  const std::vector<Row> rows = {
      {448.0f, 448.0f},  // max
      {449.0f, 448.0f},  // above max: saturate
      {464.0f, 448.0f},  // PyTorch gives NaN from 464 on; qgrad saturates
      {1e30f, 448.0f},
      {inf, 448.0f},
      {-inf, -448.0f},
      {-500.0f, -448.0f},
      {std::ldexp(1.0f, -6), std::ldexp(1.0f, -6)},  // min normal
      {sub, sub},                                    // min subnormal
      {std::ldexp(1.0f, -10), 0.0f},                 // half of min subnormal: tie -> even (0)
      {-std::ldexp(1.0f, -10), -0.0f},               // ... keeps the sign
      {std::ldexp(1.0f, -10) * 1.0001f, sub},        // just above the tie
      {sub * 1.5f, sub * 2.0f},                      // tie between 1 and 2 units -> 2
      {sub * 2.5f, sub * 2.0f},                      // tie between 2 and 3 units -> 2
      {1.0625f, 1.0f},                               // 1 + 1/16: tie -> 1.000 (even)
      {1.1875f, 1.25f},                              // 1 + 3/16: tie -> 1.010 (even)
      {1.06f, 1.0f},
      {1.07f, 1.125f},
      {248.0f, 256.0f},  // tie 240 (odd) / 256 (even)
      {232.0f, 224.0f},  // tie 224 (even) / 240 (odd)
      {0.0f, 0.0f},
      {-0.0f, -0.0f},
      {-3.3f, -3.25f},
      {std::ldexp(1.0f, -6) - std::ldexp(1.0f, -12),
       std::ldexp(1.0f, -6)},  // rounds up into normal
  };
  std::vector<float> in;
  for (const Row& r : rows) in.push_back(r.in);
  in.push_back(nan);
  const std::vector<float> out = kernel_cast(in, kE4M3);
  const MiniFloatSpec spec = minifloat_spec(kE4M3);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO("E4M3(" << rows[i].in << ") = " << out[i] << ", expected " << rows[i].out);
    CHECK(same_bits_or_nan(out[i], rows[i].out));
    CHECK(same_bits_or_nan(static_cast<float>(minifloat_round(rows[i].in, spec)), rows[i].out));
  }
  CHECK(std::isnan(out.back()));
}

TEST_CASE("nvidia minifloat: E5M2 and E2M1 cast tables", "[quant][nvidia]") {
  const std::vector<float> in5 = {57344.0f,
                                  61440.0f /* tie with 65536: saturate */,
                                  1e9f,
                                  std::ldexp(1.0f, -14),
                                  std::ldexp(1.0f, -16),
                                  std::ldexp(1.0f, -17) /* tie -> 0 */,
                                  std::ldexp(3.0f, -17) /* tie 1|2 units -> 2 */,
                                  1.125f /* tie */,
                                  1.375f /* tie -> 1.5 */,
                                  -0.0f,
                                  100.0f};
  const std::vector<float> out5 = {57344.0f,
                                   57344.0f,
                                   57344.0f,
                                   std::ldexp(1.0f, -14),
                                   std::ldexp(1.0f, -16),
                                   0.0f,
                                   std::ldexp(1.0f, -15),
                                   1.0f,
                                   1.5f,
                                   -0.0f,
                                   96.0f};
  const std::vector<float> got5 = kernel_cast(in5, kE5M2);
  for (std::size_t i = 0; i < in5.size(); ++i) {
    INFO("E5M2(" << in5[i] << ") = " << got5[i]);
    CHECK(same_bits_or_nan(got5[i], out5[i]));
  }
  // E2M1 grid {0, .5, 1, 1.5, 2, 3, 4, 6}; boundaries 0.25 0.75 1.25 1.75 2.5 3.5 5 tie to even
  // codes exactly as modelopt's _cast_fp4 (0.75, 1.75, 3.5 up; 0.25, 1.25, 2.5, 5 down).
  const std::vector<float> in2 = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f,
                                  5.0f,  7.0f,  -0.3f, -5.1f, 0.2f, 2.9f};
  const std::vector<float> out2 = {0.0f, 1.0f, 1.0f,  2.0f,  2.0f, 4.0f,
                                   4.0f, 6.0f, -0.5f, -6.0f, 0.0f, 3.0f};
  const std::vector<float> got2 = kernel_cast(in2, kE2M1);
  for (std::size_t i = 0; i < in2.size(); ++i) {
    INFO("E2M1(" << in2[i] << ") = " << got2[i]);
    CHECK(same_bits_or_nan(got2[i], out2[i]));
  }
}

TEST_CASE("nvidia minifloat: kernel equals brute-force nearest grid point", "[quant][nvidia]") {
  Generator gen(11);
  for (FloatFormat f : {kE4M3, kE5M2, kE2M1, FloatFormat{3, 2}, FloatFormat{2, 3},
                        FloatFormat{4, 4}, FloatFormat{5, 4}}) {
    const MiniFloatSpec spec = minifloat_spec(f);
    const std::vector<double> grid = enumerate_grid(spec);
    std::vector<float> in;
    // Every grid point, every midpoint (ties) and its neighbours, plus log-uniform randoms.
    for (std::size_t i = 0; i + 1 < grid.size(); ++i) {
      const float mid = static_cast<float>((grid[i] + grid[i + 1]) / 2);
      for (float v : {static_cast<float>(grid[i]), mid, std::nextafter(mid, 0.0f),
                      std::nextafter(mid, 1e30f)}) {
        in.push_back(v);
        in.push_back(-v);
      }
    }
    std::vector<float> r =
        (uniform({20000}, std::log(spec.min_subnormal) - 3, std::log(spec.max_value) + 1, gen))
            .to_vector<float>();
    for (float v : r) in.push_back(std::exp(v));
    const std::vector<float> got = kernel_cast(in, f);
    for (std::size_t i = 0; i < in.size(); ++i) {
      const float expect = static_cast<float>(brute_round(in[i], grid));
      INFO(f.str() << " cast(" << in[i] << ") = " << got[i] << ", brute force " << expect);
      REQUIRE(same_bits_or_nan(got[i], expect));
      REQUIRE(same_bits_or_nan(static_cast<float>(minifloat_round(in[i], spec)), expect));
    }
  }
}

TEST_CASE("nvidia scaled_e4m3: amax scaling, zero mask, per-channel, STE", "[quant][nvidia]") {
  Tensor x = from_vector<float>({1.0f, -0.3f, 2.0f, 3.0f, 1e-8f, -1e-8f, 0.0f, 2.5f}, {8});
  x.set_requires_grad(true);
  Tensor amax = scalar_tensor(2.0f);
  Tensor y = scaled_e4m3(x, amax);
  const float s = 448.0f / 2.0f;
  const MiniFloatSpec spec = minifloat_spec(kE4M3);
  std::vector<float> xv = x.to_vector<float>(), yv = y.to_vector<float>();
  for (std::size_t i = 0; i < xv.size(); ++i) {
    float expect = static_cast<float>(minifloat_round(xv[i] * s, spec)) / s;
    if (std::fabs(xv[i]) < std::ldexp(1.0f, -24)) expect = 0.0f;  // +0 even for -1e-8
    INFO("i " << i);
    CHECK(same_bits_or_nan(yv[i], expect));
  }
  CHECK(yv[3] == 2.0f);  // 3 saturates to 448 / s = amax
  y.backward(ones_like(y));
  const std::vector<float> g = x.grad().to_vector<float>();
  CHECK(g == std::vector<float>{1, 1, 1, 0, 1, 1, 1, 0});
  // Without amax: plain cast, mask against 448.
  Tensor x2 = from_vector<float>({448.0f, 449.0f, -1000.0f, 3.3f}, {4});
  x2.set_requires_grad(true);
  Tensor y2 = scaled_e4m3(x2, Tensor());
  CHECK(y2.to_vector<float>() == std::vector<float>{448.0f, 448.0f, -448.0f, 3.25f});
  y2.backward(ones_like(y2));
  CHECK(x2.grad().to_vector<float>() == std::vector<float>{1, 0, 0, 1});
  // Per-channel amax [2,1]: each row uses its own scale; zero amax gives signed zeros.
  Tensor x3 = from_vector<float>({0.7f, -0.2f, 5.0f, -3.0f}, {2, 2});
  Tensor y3 = scaled_e4m3(x3, from_vector<float>({1.0f, 0.0f}, {2, 1}));
  const std::vector<float> v3 = y3.to_vector<float>();
  CHECK(same_bits_or_nan(v3[0], static_cast<float>(minifloat_round(0.7f * 448.0f, spec)) / 448.0f));
  CHECK(same_bits_or_nan(v3[2], 0.0f));
  CHECK(same_bits_or_nan(v3[3], -0.0f));
  // E5M2 through the generic entry.
  Tensor y4 = scaled_e4m3(from_vector<float>({1.0f, 0.1f}, {2}), scalar_tensor(1.0f), 5, 2);
  const float s4 = 57344.0f;
  CHECK(y4.to_vector<float>()[1] ==
        static_cast<float>(minifloat_round(0.1f * s4, minifloat_spec(kE5M2))) / s4);
  // NaN stays NaN, idempotence.
  Tensor y5 = scaled_e4m3(from_vector<float>({std::nanf(""), 0.123f}, {2}), scalar_tensor(1.0f));
  CHECK(std::isnan(y5.to_vector<float>()[0]));
  Tensor y6 = scaled_e4m3(y5, scalar_tensor(1.0f));
  CHECK(same_bits_or_nan(y6.to_vector<float>()[1], y5.to_vector<float>()[1]));
  // Errors name the op.
  REQUIRE_THROWS_AS(scaled_e4m3(x3, scalar_tensor(-1.0f)), ValueError);
  REQUIRE_THROWS_WITH(scaled_e4m3(x3, scalar_tensor(1.0f), 9, 3), Catch::Contains("scaled_e4m3"));
  REQUIRE_THROWS_AS(scaled_e4m3(x3, from_vector<float>({1, 2, 3}, {3})), ShapeError);
}

TEST_CASE("nvidia minifloat: float64 kernel equals the float32 kernel and the reference",
          "[quant][nvidia]") {
  Generator gen(21);
  Tensor x32 = uniform({5000}, -600.0, 600.0, gen);
  Tensor x64 = x32.to(kFloat64);
  for (FloatFormat f : {kE4M3, kE5M2, kE2M1}) {
    const MiniFloatSpec spec = minifloat_spec(f);
    const std::vector<double> got = minifloat_cast(x64, f).to_vector<double>();
    const std::vector<float> got32 = minifloat_cast(x32, f).to_vector<float>();
    const std::vector<double> in = x64.to_vector<double>();
    for (std::size_t i = 0; i < in.size(); ++i) {
      INFO(f.str() << " " << in[i]);
      REQUIRE(got[i] == minifloat_round(in[i], spec));
      REQUIRE(static_cast<double>(got32[i]) == got[i]);
    }
  }
  // Block quantization runs in float64 too (per block the float64 scaled cast).
  BlockQuantSpec spec;
  spec.num_bits = NumBits(4, 3);
  spec.block_sizes.axes = {{-1, 7}};
  spec.block_sizes.type = BlockQuantType::Dynamic;
  Tensor y = block_fake_quant(x64.reshape({50, 100}), spec);
  CHECK(y.dtype() == kFloat64);
  Tensor a = block_amax(x64.reshape({50, 100}), spec.block_sizes);
  Tensor ref = scaled_e4m3(x64.reshape({50, 100}).select(0, 3).narrow(0, 7, 7).contiguous(),
                           a.select(0, 3).select(0, 1));
  CHECK(y.select(0, 3).narrow(0, 7, 7).contiguous().to_vector<double>() == ref.to_vector<double>());
}
