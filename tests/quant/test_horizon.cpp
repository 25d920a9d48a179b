// Tests of Horizon fake quantization (quant/horizon): the division-based formula and its two
// rounding modes at ties, dtype ranges, saturating vs plain straight-through gradients at the
// range boundaries, per-channel scales, the symmetric scale rule and its 2^-23 floor, the
// FakeQuantizer state class (QAT / calibration / validation, moving average, set_qparams,
// with_args), properties, finite differences of the STE surrogate, and bad arguments.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "core/factory.h"
#include "ops/binary/binary.h"
#include "quant/horizon/horizon_fake_quantize.h"
#include "quant/horizon/horizon_fake_quantize_kernels.h"
#include "quant/horizon/horizon_fake_quantizer.h"
#include "support/fixtures.h"

using namespace qgrad;
using namespace qgrad::horizon;

namespace {
Tensor scalar_scale(double s) {
  return full({1}, s);
}
std::vector<float> fq(const std::vector<float>& x, double s, QDType d = QDType::QInt8,
                      RoundMode m = RoundMode::HalfToEven) {
  return fake_quantize(from_vector<float>(x, {static_cast<std::int64_t>(x.size())}),
                       scalar_scale(s), d, std::nullopt, m)
      .to_vector<float>();
}
bool is_neg_zero(float v) {
  return v == 0 && std::signbit(v);
}
}  // namespace

TEST_CASE("horizon fake quantize divides by the scale and rounds half to even or half up",
          "[quant][horizon]") {
  // Exact ties with a power-of-two scale.
  const std::vector<float> x{0.25f, 0.75f, -0.25f, -0.75f, 1.25f};
  const std::vector<float> even = fq(x, 0.5);
  CHECK(even == std::vector<float>{0.0f, 1.0f, 0.0f, -1.0f, 1.0f});
  CHECK(is_neg_zero(even[2]));  // rne(-0.5) = -0.0, times the scale keeps the sign
  CHECK(fq(x, 0.5, QDType::QInt8, RoundMode::HalfUp) ==
        std::vector<float>{0.5f, 1.0f, 0.0f, -0.5f, 1.5f});
  // x / 0.1f and x * (1 / 0.1f) round differently for these values; Horizon divides.
  const float s = 0.1f;
  CHECK(fq({1.55f}, s)[0] == 15 * s);
  CHECK(fq({2.35f}, s)[0] == 23 * s);
  CHECK(fq({-1.55f}, s)[0] == -15 * s);
  const float t = 3.2500002f;  // t / 0.1f == 32.5 exactly
  CHECK(fq({t}, s)[0] == 32 * s);
  CHECK(fq({t}, s, QDType::QInt8, RoundMode::HalfUp)[0] == 33 * s);
}

TEST_CASE("horizon fake quantize dtype ranges", "[quant][horizon]") {
  CHECK(quant_range(QDType::QInt8).quant_min == -128);
  CHECK(quant_range(QDType::QInt16).quant_max == 32767);
  CHECK(fq({1000.0f, -1000.0f}, 1.0, QDType::QInt8) == std::vector<float>{127, -128});
  CHECK(fq({1e6f, -1e6f}, 1.0, QDType::QInt16) == std::vector<float>{32767, -32768});
  CHECK(fq({9.0f, -9.0f, 3.4f}, 1.0, QDType::QInt4) == std::vector<float>{7, -8, 3});
  CHECK(fq({20.0f, -3.0f, 3.6f}, 1.0, QDType::QUInt4) == std::vector<float>{15, 0, 4});
}

TEST_CASE("horizon saturate: clipped vs plain straight-through gradient", "[quant][horizon]") {
  // scale 1, qint8: round(x) in [-128, 127] passes; 127.4 rounds to 127 (in), 127.6 to 128 (out),
  // -128.5 rounds half to even to -128 (in), -128.6 to -129 (out).
  const std::vector<float> xs{127.4f, 127.6f, -128.5f, -128.6f, 0.3f};
  for (bool saturate : {true, false}) {
    Tensor x = from_vector<float>(xs, {5}).set_requires_grad(true);
    Tensor y = fake_quantize(x, scalar_scale(1.0), QDType::QInt8, std::nullopt,
                             RoundMode::HalfToEven, saturate);
    y.backward(full({5}, 2.0));
    const std::vector<float> g = x.grad().to_vector<float>();
    if (saturate)
      CHECK(g == std::vector<float>{2, 0, 2, 0, 2});
    else
      CHECK(g == std::vector<float>{2, 2, 2, 2, 2});
  }
  // Half-up rounding moves the boundary: -128.5 rounds up to -128 (in) either way, 127.5 to 128.
  Tensor x = from_vector<float>({127.5f, -128.5f}, {2}).set_requires_grad(true);
  fake_quantize(x, scalar_scale(1.0), QDType::QInt8, std::nullopt, RoundMode::HalfUp)
      .backward(ones({2}));
  CHECK(x.grad().to_vector<float>() == std::vector<float>{0, 1});
}

TEST_CASE("horizon per-channel fake quantize", "[quant][horizon]") {
  Generator gen(5);
  Tensor x = uniform({3, 4, 5}, -4, 4, gen);
  const std::vector<float> sc{0.1f, 0.02f, 0.5f, 0.0371f};
  Tensor y = fake_quantize(x, from_vector<float>(sc, {4}), QDType::QInt8, 1);
  Tensor yn = fake_quantize(x.transpose(0, 2).contiguous().transpose(0, 2),
                            from_vector<float>(sc, {4}), QDType::QInt8, -2);
  const std::vector<float> xv = x.to_vector<float>(), yv = y.to_vector<float>(),
                           ynv = yn.to_vector<float>();
  for (std::size_t i = 0; i < xv.size(); ++i) {
    const float s = sc[(i / 5) % 4];
    const float r = std::nearbyint(xv[i] / s);
    REQUIRE(yv[i] == std::min(std::max(r, -128.0f), 127.0f) * s);
    REQUIRE(ynv[i] == yv[i]);
  }
}

TEST_CASE("horizon symmetric scale rule", "[quant][horizon]") {
  CHECK(symmetric_scale(-3.0f, 1.0f, QDType::QInt8) == 3.0f / 127.5f);
  CHECK(symmetric_scale(0.5f, 2.0f, QDType::QInt8) == 2.0f / 127.5f);  // min clamped to 0
  CHECK(symmetric_scale(-4.0f, -1.0f, QDType::QInt16) == 4.0f / 32767.5f);
  CHECK(symmetric_scale(-1.0f, 1.0f, QDType::QInt4) == 1.0f / 7.5f);
  CHECK(symmetric_scale(0.0f, 0.0f, QDType::QInt8) == kMinScale);
  CHECK(symmetric_scale(-1e-9f, 1e-9f, QDType::QInt8) == kMinScale);
  REQUIRE_THROWS_AS(symmetric_scale(std::nanf(""), 1.0f, QDType::QInt8), ValueError);
}

TEST_CASE("horizon FakeQuantizer states, moving average and qparams", "[quant][horizon]") {
  FakeQuantizer fq_mod;
  Tensor b1 = from_vector<float>({-2.0f, 0.5f, 1.0f}, {3});
  Tensor b2 = from_vector<float>({-1.0f, 3.0f}, {2});
  // QAT: observe, scale recomputed in the same step, then fake-quantize with it.
  Tensor y1 = fq_mod.forward(b1);
  const float s1 = 2.0f / 127.5f;
  CHECK(fq_mod.scale().item<float>() == s1);
  CHECK(y1.to_vector<float>() == fake_quantize(b1, full({1}, s1)).to_vector<float>());
  fq_mod.forward(b2);
  const float c = 0.01f;
  const float mn = -2.0f + c * (-1.0f - -2.0f), mx = 1.0f + c * (3.0f - 1.0f);
  CHECK(fq_mod.scale().item<float>() == symmetric_scale(mn, mx, QDType::QInt8));

  // Calibration: observes, returns x unchanged.
  fq_mod.set_state(FakeQuantizer::State::Calibration);
  Tensor x = from_vector<float>({0.123f, 5.0f}, {2});
  CHECK(fq_mod.forward(x).is_same(x));
  CHECK(fq_mod.scale().item<float>() != symmetric_scale(mn, mx, QDType::QInt8));

  // Validation: fixed scale, no observation.
  fq_mod.set_state(FakeQuantizer::State::Validation);
  fq_mod.set_qparams({0.25});
  Tensor yv = fq_mod.forward(from_vector<float>({0.3f, 100.0f}, {2}));
  CHECK(yv.to_vector<float>() == std::vector<float>{0.25f, 127 * 0.25f});
  CHECK(fq_mod.scale().item<float>() == 0.25f);
  CHECK_FALSE(fq_mod.observer_enabled());
  CHECK(fq_mod.fake_quant_enabled());

  REQUIRE_THROWS_AS(fq_mod.set_qparams(full({1}, 0.1), full({1}, 3.0)), ValueError);
  REQUIRE_THROWS_AS(fq_mod.set_qparams(full({2}, 0.1)), ShapeError);
  REQUIRE_THROWS_AS(fq_mod.set_qparams({-0.1}), ValueError);
  REQUIRE_NOTHROW(fq_mod.set_qparams(full({1}, 0.1), zeros({1})));
}

TEST_CASE("horizon FakeQuantizer per channel and with_args", "[quant][horizon]") {
  const auto make = FakeQuantizer::with_args(
      FakeQuantizeOptions().dtype(QDType::QInt16).per_channel(0, 2).saturate(false));
  auto a = make(), b = make();
  REQUIRE(a.get() != b.get());
  CHECK(a->options().dtype_ == QDType::QInt16);
  Tensor x = from_vector<float>({-1.0f, 2.0f, 0.5f, -0.25f}, {2, 2}).set_requires_grad(true);
  Tensor y = a->forward(x);
  const std::vector<float> s = a->scale().to_vector<float>();
  CHECK(s[0] == 2.0f / 32767.5f);
  CHECK(s[1] == 0.5f / 32767.5f);
  y.backward(ones({2, 2}));
  CHECK(x.grad().to_vector<float>() == std::vector<float>{1, 1, 1, 1});
  CHECK(b->scale().to_vector<float>() == std::vector<float>{1.0f, 1.0f});  // untouched
  REQUIRE_THROWS_AS(a->forward(ones({3, 2})), ShapeError);
  REQUIRE_THROWS_AS(FakeQuantizer(FakeQuantizeOptions().per_channel(0, 0)), ValueError);
}

TEST_CASE("horizon fake quantize properties", "[quant][horizon]") {
  Generator gen(9);
  Tensor x = uniform({5000}, -20, 20, gen);
  const double s = 0.0917;
  for (RoundMode m : {RoundMode::HalfToEven, RoundMode::HalfUp}) {
    Tensor y = fake_quantize(x, scalar_scale(s), QDType::QInt8, std::nullopt, m);
    const std::vector<float> xv = x.to_vector<float>(), yv = y.to_vector<float>();
    const float sf = static_cast<float>(s);
    for (std::size_t i = 0; i < yv.size(); ++i) {
      const float k = yv[i] / sf;
      REQUIRE(std::fabs(k - std::nearbyint(k)) < 1e-3f);
      if (std::fabs(xv[i]) < 127 * sf) REQUIRE(std::fabs(yv[i] - xv[i]) <= sf * 0.5f + 1e-6f);
    }
    Tensor yy = fake_quantize(y, scalar_scale(s), QDType::QInt8, std::nullopt, m);
    REQUIRE(yy.to_vector<float>() == yv);
    std::vector<std::size_t> order(xv.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return xv[a] < xv[b]; });
    for (std::size_t i = 1; i < order.size(); ++i) REQUIRE(yv[order[i]] >= yv[order[i - 1]]);
  }
  Tensor yn = fake_quantize(from_vector<float>({std::nanf("")}, {1}), scalar_scale(0.1));
  CHECK(std::isnan(yn.item<float>()));
}

// Straight-through surrogate: with the rounding residual frozen, f(x) = s * clamp(x/s + d, lo, hi)
// has derivative 1 inside the range and 0 outside, which the saturating gradient must equal.
TEST_CASE("horizon gradient equals finite differences of the STE surrogate", "[quant][horizon]") {
  Generator gen(4);
  const double s = 0.05;
  Tensor xv = uniform({300}, -8, 8, gen, TensorOptions().dtype(kFloat64));
  std::vector<double> keep;
  for (double v : xv.to_vector<double>()) {
    const double t = v / s;
    if (std::fabs(t - std::floor(t) - 0.5) < 0.05 || std::fabs(t - 127) < 0.6 ||
        std::fabs(t + 128) < 0.6)
      continue;
    keep.push_back(v);
  }
  const auto n = static_cast<std::int64_t>(keep.size());
  Tensor x = from_vector<double>(keep, {n}).set_requires_grad(true);
  fake_quantize(x, full({1}, s, TensorOptions().dtype(kFloat64)))
      .backward(ones({n}, TensorOptions().dtype(kFloat64)));
  const std::vector<double> g = x.grad().to_vector<double>();
  const double h = 1e-7;
  for (std::size_t i = 0; i < keep.size(); ++i) {
    const double d = std::nearbyint(keep[i] / s) - keep[i] / s;
    auto f = [&](double v) { return s * std::min(std::max(v / s + d, -128.0), 127.0); };
    REQUIRE(g[i] == Approx((f(keep[i] + h) - f(keep[i] - h)) / (2 * h)).margin(1e-6));
  }
}

TEST_CASE("horizon fake quantize rejects bad arguments", "[quant][horizon]") {
  using Catch::Contains;
  Tensor x = ones({2, 3});
  REQUIRE_THROWS_WITH(fake_quantize(x, scalar_scale(0.0)),
                      Contains("horizon.fake_quantize") && Contains("scale"));
  REQUIRE_THROWS_AS(fake_quantize(x, scalar_scale(-1.0)), ValueError);
  REQUIRE_THROWS_AS(fake_quantize(x, full({3}, 0.1)), ShapeError);
  REQUIRE_THROWS_AS(fake_quantize(x, full({2}, 0.1), QDType::QInt8, 1), ShapeError);
  REQUIRE_THROWS_AS(fake_quantize(x, full({3}, 0.1), QDType::QInt8, 2), IndexError);
  REQUIRE_THROWS_AS(fake_quantize(ones({2}, TensorOptions().dtype(kInt32)), scalar_scale(0.1)),
                    DTypeError);
  REQUIRE_THROWS_AS(fake_quantize(x, full({1}, 1, TensorOptions().dtype(kInt64))), DTypeError);
}

// The GPU path (scale as a tensor through the scale-tensor kernel, its check, autograd), here on
// the CPU: fake_quantize's value and gradient, bit for bit, per tensor and per channel, both
// rounding modes, saturating or not, float32 and float64, strided input; and the scale from
// statistics the module computes there, against the host rule.
TEST_CASE("horizon fake quantize: the GPU path gives the CPU's bits", "[quant][horizon]") {
  using namespace qgrad::horizon;
  const auto same_bits = qgrad_test::require_bitwise_f64;
  Generator gen(9);
  for (const DType dt : {kFloat32, kFloat64}) {
    const Tensor base = (randn({3, 4, 5}, gen) * 2.0).to(dt);
    const Tensor x = base.transpose(0, 2);  // [5, 4, 3], strided
    for (const bool per_channel : {false, true}) {
      const Tensor scale = per_channel ? from_vector<float>({0.02f, 0.05f, 0.011f, 0.3f}, {4})
                                       : from_vector<float>({0.037f}, {1});
      const std::optional<std::int64_t> axis =
          per_channel ? std::optional<std::int64_t>(1) : std::nullopt;
      for (const RoundMode mode : {RoundMode::HalfToEven, RoundMode::HalfUp}) {
        for (const bool saturate : {true, false}) {
          INFO(dtype_name(dt) << (per_channel ? " per channel" : " per tensor")
                              << (saturate ? " saturating" : ""));
          const Tensor xa = x.detach().set_requires_grad(true);
          const Tensor xb = x.detach().set_requires_grad(true);
          const Tensor ya = fake_quantize(xa, scale, QDType::QInt4, axis, mode, saturate);
          const Tensor yb =
              fake_quantize_device_scale(xb, scale, QDType::QInt4, axis, mode, saturate);
          same_bits(yb.detach(), ya.detach());
          const Tensor g = randn(x.shape(), gen).to(dt);
          ya.backward(g);
          yb.backward(g);
          same_bits(xb.grad(), xa.grad());
        }
      }
    }
  }
  CHECK_THROWS_AS(fake_quantize_device_scale(randn({4}, gen), from_vector<float>({0.0f}, {1})),
                  ValueError);
  // The module's scale from statistics: the host rule, the previous scale while unobserved.
  const KernelTable<HorizonScaleFromStatisticsKernel>& table =
      kernel_table(kHorizonScaleFromStatisticsKernels);
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor mn = from_vector<float>({-1.5f, inf, -0.0f, 0.25f}, {4});
  const Tensor mx = from_vector<float>({0.5f, -inf, 0.0f, 3.0f}, {4});
  const Tensor prev = from_vector<float>({7.0f, 7.0f, 7.0f, 7.0f}, {4});
  const Tensor s = empty({4});
  table("test", mn)("HorizonFakeQuantize", mn, mx, prev, half_range(QDType::QInt8), s);
  const std::vector<float> got = s.to_vector<float>();
  CHECK(got[0] == symmetric_scale(-1.5f, 0.5f, QDType::QInt8));
  CHECK(got[1] == 7.0f);
  CHECK(got[2] == symmetric_scale(-0.0f, 0.0f, QDType::QInt8));
  CHECK(got[3] == symmetric_scale(0.25f, 3.0f, QDType::QInt8));
  const Tensor bad = from_vector<float>({NAN, 0.0f, 0.0f, 0.0f}, {4});
  CHECK_THROWS_AS(table("test", bad)("HorizonFakeQuantize", bad, mx, prev, 127.5f, s), ValueError);
}
