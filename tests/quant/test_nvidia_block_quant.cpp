// Tests of modelopt-style block quantization: per-block amax with partial blocks, blocks equal to
// fake_tensor_quant / scaled_e4m3 per block, multi-axis blocks, static BlockQuantizer life cycle,
// double quantization of the block amax, MX (E8M0 scales) and NVFP4 worked examples, gradients
// and argument errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/factory.h"
#include "ops/binary/binary.h"
#include "quant/nvidia/block_quant.h"
#include "quant/nvidia/tensor_quant.h"
#include "support/fixtures.h"

using namespace qgrad;
using namespace qgrad::nvidia;
using qgrad_test::check_bits_or_nan;
using qgrad_test::same_bits_or_nan;

namespace {

BlockSizes blocks(std::vector<std::pair<std::int64_t, std::int64_t>> axes,
                  BlockQuantType type = BlockQuantType::Dynamic) {
  BlockSizes b;
  b.axes = std::move(axes);
  b.type = type;
  return b;
}

}  // namespace

TEST_CASE("nvidia block_amax: partial last block and finite-only max", "[quant][nvidia]") {
  Tensor x =
      from_vector<float>({1, -5, 2, 0.5f, -3, /**/ 7, 0, -0.25f, INFINITY, std::nanf("")}, {2, 5});
  Tensor a = block_amax(x, blocks({{-1, 2}}));
  CHECK(a.shape() == Shape{2, 3});
  CHECK(a.to_vector<float>() == std::vector<float>{5, 2, 3, 7, 0.25f, 0});
  CHECK(block_grid_shape({4, 6, 10}, blocks({{0, 3}, {2, 4}})) == Shape{2, 6, 3});
}

TEST_CASE("nvidia block_fake_quant: each block equals fake_tensor_quant with its amax",
          "[quant][nvidia]") {
  Generator gen(5);
  Tensor x = randn({3, 4, 37}, gen);
  for (bool narrow : {false, true}) {
    BlockQuantSpec spec;
    spec.num_bits = 4;
    spec.narrow_range = narrow;
    spec.block_sizes = blocks({{-1, 16}});
    Tensor y = block_fake_quant(x, spec);
    Tensor a = block_amax(x, spec.block_sizes);
    CHECK(a.shape() == Shape{3, 4, 3});
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j)
        for (int b = 0; b < 3; ++b) {
          const std::int64_t start = b * 16, len = std::min<std::int64_t>(16, 37 - start);
          Tensor xb = x.select(0, i).select(0, j).narrow(0, start, len).contiguous();
          Tensor ab = a.select(0, i).select(0, j).select(0, b);
          Tensor ref = fake_tensor_quant(xb, ab, 4, false, narrow);
          check_bits_or_nan(
              y.select(0, i).select(0, j).narrow(0, start, len).contiguous().to_vector<float>(),
              ref.to_vector<float>());
        }
  }
  // (E,M) elements: each block equals scaled_e4m3 with the block amax.
  BlockQuantSpec fp;
  fp.num_bits = NumBits(4, 3);
  fp.block_sizes = blocks({{1, 8}});
  Tensor x2 = randn({2, 20}, gen);
  Tensor y2 = block_fake_quant(x2, fp);
  Tensor a2 = block_amax(x2, fp.block_sizes);
  for (int i = 0; i < 2; ++i)
    for (int b = 0; b < 3; ++b) {
      const std::int64_t start = b * 8, len = std::min<std::int64_t>(8, 20 - start);
      Tensor ref = scaled_e4m3(x2.select(0, i).narrow(0, start, len).contiguous(),
                               a2.select(0, i).select(0, b));
      check_bits_or_nan(y2.select(0, i).narrow(0, start, len).contiguous().to_vector<float>(),
                        ref.to_vector<float>());
    }
}

TEST_CASE("nvidia block_fake_quant: two-axis blocks against a brute-force loop",
          "[quant][nvidia]") {
  Generator gen(9);
  Tensor x = randn({5, 7}, gen);
  BlockQuantSpec spec;
  spec.num_bits = 8;
  spec.block_sizes = blocks({{0, 2}, {1, 3}});
  Tensor y = block_fake_quant(x, spec);
  std::vector<float> xv = x.to_vector<float>(), yv = y.to_vector<float>();
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 7; ++c) {
      float amax = 0;
      for (int rr = (r / 2) * 2; rr < std::min(5, (r / 2) * 2 + 2); ++rr)
        for (int cc = (c / 3) * 3; cc < std::min(7, (c / 3) * 3 + 3); ++cc)
          amax = std::max(amax, std::fabs(xv[rr * 7 + cc]));
      const float s = 127.0f / amax;
      const float q = std::min(std::max(std::nearbyint(xv[r * 7 + c] * s), -128.0f), 127.0f);
      INFO("r " << r << " c " << c);
      CHECK(same_bits_or_nan(yv[r * 7 + c], q / s));
    }
  // Non-contiguous input gives the same result.
  Tensor xt = x.t().contiguous().t();
  check_bits_or_nan(block_fake_quant(xt, spec).to_vector<float>(), yv);
}

TEST_CASE("nvidia BlockQuantizer: static calibration life cycle", "[quant][nvidia]") {
  BlockQuantSpec spec;
  spec.num_bits = 8;
  spec.block_sizes = blocks({{-1, 4}}, BlockQuantType::Static);
  BlockQuantizer q(spec);
  Tensor x1 = from_vector<float>({1, 2, 3, 4, -8, 1, 1, 1}, {1, 8});
  Tensor x2 = from_vector<float>({0, 0, 0, 5, 1, 1, 1, 1}, {1, 8});
  REQUIRE_THROWS_AS(q(x1), ValueError);  // not calibrated
  q.calibrate(x1);
  q.calibrate(x2);
  CHECK(q.amax().to_vector<float>() == std::vector<float>{5, 8});
  CHECK(q.input_shape() == Shape{1, 8});
  REQUIRE_THROWS_AS(q.calibrate(zeros({2, 8})), ShapeError);
  REQUIRE_THROWS_AS(q(zeros({1, 9})), ShapeError);
  REQUIRE_THROWS_AS(q.calibrate(from_vector<float>({NAN, 0, 0, 0, 0, 0, 0, 0}, {1, 8})),
                    ValueError);
  // Forward clips against the calibrated amax: 6 > 5 saturates and gets no gradient.
  Tensor x3 = from_vector<float>({6, 1, 0, -5, 8, -9, 0, 0}, {1, 8});
  x3.set_requires_grad(true);
  Tensor y = q(x3);
  const std::vector<float> v = y.to_vector<float>();
  CHECK(v[0] == 127.0f / (127.0f / 5.0f));
  CHECK(v[5] == -128.0f / (127.0f / 8.0f));  // wide range by default (descriptor default)
  y.backward(ones_like(y));
  CHECK(x3.grad().to_vector<float>() == std::vector<float>{0, 1, 1, 1, 1, 0, 1, 1});
  q.reset();
  CHECK_FALSE(q.calibrated());
  // Dynamic quantizers refuse calibration and quantize each call with its own amax.
  BlockQuantSpec dyn = spec;
  dyn.block_sizes.type = BlockQuantType::Dynamic;
  BlockQuantizer d(dyn);
  REQUIRE_THROWS_AS(d.calibrate(x1), ValueError);
  check_bits_or_nan(d(x3).to_vector<float>(), block_fake_quant(x3, dyn).to_vector<float>());
}

TEST_CASE("nvidia block_fake_quant: double quantization of the block amax", "[quant][nvidia]") {
  Generator gen(2);
  Tensor x = randn({4, 64}, gen) * 2.0;
  // Integer scale_bits, one second-level amax per tensor.
  BlockQuantSpec spec;
  spec.num_bits = 4;
  spec.block_sizes = blocks({{-1, 16}});
  spec.block_sizes.scale_bits = NumBits(4);
  Tensor A = block_amax(x, spec.block_sizes);
  float a2 = 0;
  for (float v : A.to_vector<float>()) a2 = std::max(a2, v);
  Tensor Aq = fake_tensor_quant(A, scalar_tensor(a2), 4, true);
  check_bits_or_nan(block_effective_amax(x, spec).to_vector<float>(), Aq.to_vector<float>());
  // x is then quantized per block against A': compare one block.
  Tensor y = block_fake_quant(x, spec);
  Tensor ref = fake_tensor_quant(x.select(0, 1).narrow(0, 16, 16).contiguous(),
                                 Aq.select(0, 1).select(0, 1), 4, false, false);
  check_bits_or_nan(y.select(0, 1).narrow(0, 16, 16).contiguous().to_vector<float>(),
                    ref.to_vector<float>());
  // (E,M) scale_bits with scale blocks of 2 along the last grid axis: per (row, pair of blocks).
  BlockQuantSpec spec2 = spec;
  spec2.block_sizes.scale_bits = NumBits(4, 3);
  spec2.block_sizes.scale_block_sizes = {{-1, 2}};
  Tensor eff = block_effective_amax(x, spec2);
  std::vector<float> av = A.to_vector<float>(), ev = eff.to_vector<float>();
  const MiniFloatSpec e4m3 = minifloat_spec(kE4M3);
  for (int r = 0; r < 4; ++r)
    for (int b = 0; b < 4; ++b) {
      const float m2 = std::max(av[r * 4 + (b / 2) * 2], av[r * 4 + (b / 2) * 2 + 1]);
      const float s2 = (1.0f / m2) * 448.0f;  // fl(fl(1 / amax) * 448), as PyTorch
      const float expect = static_cast<float>(minifloat_round(av[r * 4 + b] * s2, e4m3)) / s2;
      CHECK(same_bits_or_nan(ev[r * 4 + b], expect));
    }
}

TEST_CASE("nvidia block_fake_quant: MX E8M0 scales", "[quant][nvidia]") {
  // One block of 32 with amax 1: descale = 1/448, ceil(log2) = -8, X = 2^-8; x/X = 256 x.
  std::vector<float> v(32, 0.0f);
  v[0] = 1.0f;
  v[1] = 0.3f;    // 76.8 -> E4M3 80 -> 0.3125
  v[2] = -0.01f;  // -2.56 -> -2.5 -> -0.009765625
  v[3] = 1e-6f;   // 2.56e-4 -> below half the min subnormal (2^-10) -> 0
  // Second block: amax 448 exactly -> descale 1 -> X = 1; 500 would exceed: amax 448 caps.
  std::vector<float> w(32, 0.5f);
  w[0] = 448.0f;
  w[1] = 300.0f;  // E4M3: binade 256..512 step 32 -> 288
  v.insert(v.end(), w.begin(), w.end());
  // Third block all zeros: X = 2^-127, output zeros.
  v.insert(v.end(), 32, 0.0f);
  Tensor x = from_vector<float>(v, {96});
  BlockQuantSpec spec;
  spec.num_bits = NumBits(4, 3);
  spec.block_sizes = blocks({{-1, 32}});
  spec.block_sizes.scale_bits = NumBits(kE8M0);
  const std::vector<float> y = block_fake_quant(x, spec).to_vector<float>();
  CHECK(y[0] == 1.0f);
  CHECK(y[1] == 0.3125f);
  CHECK(y[2] == -0.009765625f);
  CHECK(same_bits_or_nan(y[3], 0.0f));
  CHECK(y[32] == 448.0f);
  CHECK(y[33] == 288.0f);
  CHECK(y[34] == 0.5f);
  for (int i = 64; i < 96; ++i) CHECK(y[i] == 0.0f);
  const std::vector<float> eff = block_effective_amax(x, spec).to_vector<float>();
  CHECK(eff == std::vector<float>{448.0f / 256.0f, 448.0f, 448.0f * std::ldexp(1.0f, -127)});
  // Amax just above a power of two times 448 moves to the next exponent (no saturation).
  Tensor x2 = from_vector<float>({std::nextafter(448.0f, 1e9f), 1.0f}, {2});
  BlockQuantSpec s2 = spec;
  s2.block_sizes.axes = {{-1, 2}};
  const std::vector<float> y2 = block_fake_quant(x2, s2).to_vector<float>();
  CHECK(y2[0] == 448.0f);  // X = 2: 224.00002 -> 224 -> 448
  CHECK(y2[1] == 2.0f * static_cast<float>(minifloat_round(0.5, minifloat_spec(kE4M3))));
  // MX needs a float element format.
  BlockQuantSpec bad = spec;
  bad.num_bits = 8;
  REQUIRE_THROWS_AS(block_fake_quant(x, bad), ValueError);
}

TEST_CASE("nvidia block_fake_quant: NVFP4 worked example", "[quant][nvidia]") {
  // Per-tensor amax 2688 -> gs = 1. Block 0 (amax 2688): sb = 448, S = 448, q = E2M1(x / 448).
  // Block 1 (amax 6): sb = 1, S = 1. Block 2 (amax 0.001): sb = 1.67e-4 -> 2^-9 floor, S = 2^-9.
  std::vector<float> v(48, 0.0f);
  v[0] = 2688.0f;  // 6 * 448
  v[1] = 1344.0f;  // 3 * 448
  v[2] = 500.0f;   // 1.116 -> 1.0 -> 448
  v[3] = -700.0f;  // -1.5625 -> -1.5 -> -672
  v[16] = 6.0f;
  v[17] = 1.25f;   // tie -> 1
  v[18] = -2.6f;   // -> -3
  v[32] = 0.001f;  // 0.512 -> 0.5 -> 2^-10
  v[33] = -0.0f;
  v[34] = -1e-4f;  // rounds to zero: +0 as well
  Tensor x = from_vector<float>(v, {3, 16});
  BlockQuantSpec spec;
  spec.num_bits = NumBits(2, 1);
  spec.block_sizes = blocks({{-1, 16}});
  spec.block_sizes.scale_bits = NumBits(4, 3);
  x.set_requires_grad(true);
  Tensor y = block_fake_quant(x, spec);
  const std::vector<float> o = y.to_vector<float>();
  CHECK(o[0] == 2688.0f);
  CHECK(o[1] == 1344.0f);
  CHECK(o[2] == 448.0f);
  CHECK(o[3] == -672.0f);
  CHECK(o[16] == 6.0f);
  CHECK(o[17] == 1.0f);
  CHECK(o[18] == -3.0f);
  CHECK(o[32] == std::ldexp(1.0f, -10));
  CHECK(same_bits_or_nan(o[33], 0.0f));  // -0.0 -> +0: modelopt's E2M1 table has one zero
  CHECK(same_bits_or_nan(o[34], 0.0f));
  const std::vector<float> eff = block_effective_amax(x, spec).to_vector<float>();
  CHECK(eff == std::vector<float>{2688.0f, 6.0f, 6.0f * std::ldexp(1.0f, -9)});
  y.backward(ones_like(y));
  for (float g : x.grad().to_vector<float>()) CHECK(g == 1.0f);
  // All-zero tensor: zeros (modelopt would produce NaN from 0/0).
  Tensor z = block_fake_quant(zeros({2, 16}), spec);
  for (float g : z.to_vector<float>()) CHECK(g == 0.0f);
}

TEST_CASE("nvidia block_fake_quant: argument errors", "[quant][nvidia]") {
  Tensor x = zeros({4, 8});
  BlockQuantSpec spec;
  spec.block_sizes = blocks({{2, 4}});
  REQUIRE_THROWS_AS(block_fake_quant(x, spec), IndexError);
  REQUIRE_THROWS_WITH(block_fake_quant(x, spec), Catch::Contains("block_fake_quant"));
  spec.block_sizes = blocks({{-1, 0}});
  REQUIRE_THROWS_AS(block_fake_quant(x, spec), ValueError);
  spec.block_sizes = blocks({{-1, 4}, {1, 2}});  // same axis twice
  REQUIRE_THROWS_AS(block_fake_quant(x, spec), ValueError);
  spec.block_sizes = blocks({});
  REQUIRE_THROWS_AS(block_fake_quant(x, spec), ValueError);
  spec.block_sizes = blocks({{-1, 4}});
  spec.block_sizes.scale_block_sizes = {{-1, 2}};  // without scale_bits
  REQUIRE_THROWS_AS(block_fake_quant(x, spec), ValueError);
  spec.block_sizes.scale_block_sizes.clear();
  REQUIRE_THROWS_AS(block_fake_quant(x, spec, zeros({4, 3})), ShapeError);
  REQUIRE_THROWS_AS(block_fake_quant(x, spec, full({4, 2}, -1.0)), ValueError);
  spec.is_unsigned = true;
  REQUIRE_THROWS_AS(block_fake_quant(full({4, 8}, -1.0), spec), ValueError);
}
