// Tests of the papers' learnable quantizers (quant/learnable): LSQ and LSQ+ forward values
// (ties, clipping), gradients at the boundaries, finite differences of the straight-through
// surrogate (per tensor and per channel), initialisers; PACT and the two-sided learnable clip
// against gradcheck (their gradients are true derivatives away from the kinks), boundary rules,
// the alpha penalty; bad arguments.
#include <catch2/catch.hpp>
#include <limits>

#include <cmath>

#include "core/autograd/gradcheck.h"
#include "core/factory.h"
#include "quant/learnable/learnable_clip.h"
#include "quant/learnable/lsq.h"
#include "quant/learnable/pact.h"

using namespace qgrad;
using namespace qgrad::learnable;

namespace {
const TensorOptions f64 = TensorOptions().dtype(kFloat64);
Tensor vec(std::vector<double> v) {
  return from_vector<double>(v, {static_cast<std::int64_t>(v.size())});
}
Tensor scalar_param(double v, const TensorOptions& o = TensorOptions()) {
  return full({1}, v, o).set_requires_grad(true);
}
}  // namespace

TEST_CASE("lsq forward: clip, round half to even, rescale", "[quant][learnable]") {
  Tensor v = from_vector<float>({0.3f, -2.6f, 1.75f, 10.0f, 0.25f, 0.75f, -0.25f}, {7});
  Tensor y = lsq_quantize(v, full({1}, 0.5), 4, 3);
  CHECK(y.to_vector<float>() == std::vector<float>{0.5f, -2.0f, 1.5f, 1.5f, 0.0f, 1.0f, -0.0f});
}

TEST_CASE("lsq gradients inside, at and beyond the clip bounds", "[quant][learnable]") {
  // s = 0.5, Q_N = 4, Q_P = 3: v/s = [0.6, -4 (bound), 3 (bound), 20, -10, 1.2].
  Tensor v = vec({0.3, -2.0, 1.5, 10.0, -5.0, 0.6}).set_requires_grad(true);
  Tensor s = scalar_param(0.5, f64);
  const double g = 0.25;
  Tensor y = lsq_quantize(v, s, 4, 3, g);
  y.backward(vec({1, 2, 3, 4, 5, 6}));
  CHECK(v.grad().to_vector<double>() == std::vector<double>{1, 0, 0, 0, 0, 6});
  const double want = g * (1 * (1 - 0.6) + 2 * -4 + 3 * 3 + 4 * 3 + 5 * -4 + 6 * (1 - 1.2));
  CHECK(s.grad().item<double>() == Approx(want));
}

// LSQ's gradients are the exact derivatives of the surrogate with the rounding residual
// d = rne(v/s) - v/s frozen: f(v, s) = s * (clip(v/s, -Q_N, Q_P) + d * inside).
TEST_CASE("lsq gradients equal finite differences of the STE surrogate", "[quant][learnable]") {
  Generator gen(17);
  const std::int64_t qn = 8, qp = 7;
  for (bool per_channel : {false, true}) {
    const std::int64_t C = per_channel ? 3 : 1, K = 60;
    std::vector<double> sv =
        per_channel ? std::vector<double>{0.11, 0.23, 0.05} : std::vector<double>{0.13};
    Tensor xr = uniform({3, K}, -2.2, 2.2, gen, f64);
    std::vector<double> xs = xr.to_vector<double>();
    // Move points off ties and off the clip bounds.
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const double s = sv[per_channel ? i / K : 0];
      double t = xs[i] / s;
      if (std::fabs(t - std::floor(t) - 0.5) < 0.05) t += 0.2;
      if (std::fabs(t + qn) < 0.05 || std::fabs(t - qp) < 0.05) t += 0.3;
      xs[i] = t * s;
    }
    Tensor x = from_vector<double>(xs, {3, K}).set_requires_grad(true);
    Tensor s =
        from_vector<double>(sv, per_channel ? Shape{C, 1} : Shape{1}).set_requires_grad(true);
    Tensor w = uniform({3, K}, -1, 1, gen, f64);
    const double g = 0.37;
    lsq_quantize(x, s, qn, qp, g).backward(w);
    const std::vector<double> wv = w.to_vector<double>();
    auto f = [&](std::size_t i, double xi, double si) {
      const double s0 = sv[per_channel ? i / K : 0];
      const double t0 = xs[i] / s0;
      const bool inside = -qn < t0 && t0 < qp;
      const double d = inside ? std::nearbyint(t0) - t0 : 0.0;
      const double t = xi / si;
      return si * (std::min(std::max(t, -double(qn)), double(qp)) + d);
    };
    const double h = 1e-7;
    std::vector<double> fd_s(static_cast<std::size_t>(C), 0.0);
    const std::vector<double> gx = x.grad().to_vector<double>();
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const std::size_t c = per_channel ? i / K : 0;
      fd_s[c] += wv[i] * (f(i, xs[i], sv[c] + h) - f(i, xs[i], sv[c] - h)) / (2 * h);
      const double fd_x = wv[i] * (f(i, xs[i] + h, sv[c]) - f(i, xs[i] - h, sv[c])) / (2 * h);
      REQUIRE(gx[i] == Approx(fd_x).margin(1e-6));
    }
    const std::vector<double> gs = s.grad().to_vector<double>();
    for (std::size_t c = 0; c < gs.size(); ++c)
      CHECK(gs[c] == Approx(g * fd_s[c]).epsilon(1e-6).margin(1e-6));
  }
}

TEST_CASE("lsq initialisers and gradient scale", "[quant][learnable]") {
  CHECK(lsq_init_scale(vec({-1, 2, -3, 4}), 4) == Approx(2 * 2.5 / 2));
  CHECK(lsq_grad_scale(1000, 127) == Approx(1 / std::sqrt(127000.0)));
  REQUIRE_THROWS_AS(lsq_grad_scale(0, 127), ValueError);
  REQUIRE_THROWS_AS(lsq_init_scale(empty({0}), 3), ValueError);
  const auto [s, b] = lsq_plus_init_minmax(vec({-1.0, 0.5, 3.0}), -128, 127);
  CHECK(s == Approx(4.0 / 255));
  CHECK(b == Approx(-1.0 + 128 * 4.0 / 255));
}

TEST_CASE("lsq+ forward and gradients with a learnable offset", "[quant][learnable]") {
  // s = 0.5, beta = 1, [n, p] = [-2, 3]: z = (x - 1)/0.5.
  Tensor x = vec({1.3, -5.0, 4.0, 2.26, 1.0}).set_requires_grad(true);
  Tensor s = scalar_param(0.5, f64), beta = scalar_param(1.0, f64);
  Tensor y = lsq_plus_quantize(x, s, beta, -2, 3, 0.5);
  // z = [0.6, -12, 6, 2.52, 0] -> q = [1, -2, 3, 3, 0]
  CHECK(y.to_vector<double>() == std::vector<double>{1.5, 0.0, 2.5, 2.5, 1.0});
  y.backward(vec({1, 2, 3, 4, 5}));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{1, 0, 0, 4, 5});
  CHECK(beta.grad().item<double>() == Approx(0.5 * (2 + 3)));
  CHECK(s.grad().item<double>() ==
        Approx(0.5 * (1 * (1 - 0.6) + 2 * -2 + 3 * 3 + 4 * (3 - 2.52) + 5 * 0)));

  // Finite differences of the surrogate s * (clamp(z, n, p) + d*inside) + beta.
  Generator gen(2);
  std::vector<double> xs = uniform({200}, -3, 4, gen, f64).to_vector<double>();
  const double s0 = 0.31, b0 = 0.4;
  std::vector<double> keep;
  for (double v : xs) {
    const double z = (v - b0) / s0;
    if (std::fabs(z - std::floor(z) - 0.5) < 0.05 || std::fabs(z + 4) < 0.05 ||
        std::fabs(z - 5) < 0.05)
      continue;
    keep.push_back(v);
  }
  Tensor xk = vec(keep).set_requires_grad(true);
  Tensor sk = scalar_param(s0, f64), bk = scalar_param(b0, f64);
  lsq_plus_quantize(xk, sk, bk, -4, 5)
      .backward(ones({static_cast<std::int64_t>(keep.size())}, f64));
  auto f = [&](double si, double bi) {
    double total = 0;
    for (double v : keep) {
      const double z0 = (v - b0) / s0;
      const bool inside = -4 < z0 && z0 < 5;
      const double d = inside ? std::nearbyint(z0) - z0 : 0;
      total += si * (std::min(std::max((v - bi) / si, -4.0), 5.0) + d) + bi;
    }
    return total;
  };
  const double h = 1e-7;
  CHECK(sk.grad().item<double>() ==
        Approx((f(s0 + h, b0) - f(s0 - h, b0)) / (2 * h)).epsilon(1e-6));
  CHECK(bk.grad().item<double>() ==
        Approx((f(s0, b0 + h) - f(s0, b0 - h)) / (2 * h)).epsilon(1e-6).margin(1e-6));
}

TEST_CASE("pact clip: values, boundary gradients and gradcheck", "[quant][learnable]") {
  Tensor x = vec({-1.0, 0.0, 0.5, 2.0, 3.0}).set_requires_grad(true);
  Tensor a = scalar_param(2.0, f64);
  Tensor y = pact_clip(x, a);
  CHECK(y.to_vector<double>() == std::vector<double>{0, 0, 0.5, 2, 2});
  y.backward(vec({1, 2, 3, 4, 5}));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 2, 3, 0, 0});
  CHECK(a.grad().item<double>() == 9.0);  // x >= alpha: 4 + 5

  Generator gen(1);
  std::vector<double> xs = uniform({40}, -1, 3, gen, f64).to_vector<double>();
  for (double& v : xs)
    if (std::fabs(v) < 0.01 || std::fabs(v - 1.3) < 0.01) v += 0.05;
  Tensor xg = vec(xs).set_requires_grad(true);
  Tensor ag = scalar_param(1.3, f64);
  const GradcheckResult r =
      gradcheck([](const std::vector<Tensor>& in) { return pact_clip(in[0], in[1]); }, {xg, ag});
  INFO(r.message);
  CHECK(r.ok);

  // Per-channel alpha broadcasts and its gradient sums per channel.
  Tensor xc = from_vector<double>({0.5, 3.0, 1.0, 5.0}, {2, 2}).set_requires_grad(true);
  Tensor ac = from_vector<double>({1.0, 2.0}, {2, 1}).set_requires_grad(true);
  pact_clip(xc, ac).backward(ones({2, 2}, f64));
  CHECK(ac.grad().to_vector<double>() == std::vector<double>{1, 1});
}

TEST_CASE("pact quantize: k-bit grid on [0, alpha] with the clip's gradients",
          "[quant][learnable]") {
  Tensor x = vec({0.5, 0.1, 0.2, 1.5, -1.0}).set_requires_grad(true);
  Tensor a = scalar_param(1.0, f64);
  Tensor y = pact_quantize(x, a, 2);  // levels 3, step 1/3: 0.5 -> 1.5 -> 2 (even) -> 2/3
  const std::vector<double> v = y.to_vector<double>();
  CHECK(v[0] == Approx(2.0 / 3));
  CHECK(v[1] == 0.0);
  CHECK(v[2] == Approx(1.0 / 3));
  CHECK(v[3] == 1.0);
  CHECK(v[4] == 0.0);
  y.backward(ones({5}, f64));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{1, 1, 1, 0, 0});
  CHECK(a.grad().item<double>() == 1.0);
  Tensor pen = pact_alpha_penalty(a, 0.01);
  CHECK(pen.item<double>() == Approx(0.01));
}

TEST_CASE("learnable two-sided clip: strict inside, inclusive bounds, gradcheck",
          "[quant][learnable]") {
  Tensor x = vec({-3.0, -2.0, 0.5, 2.0, 4.0}).set_requires_grad(true);
  Tensor lo = scalar_param(-2.0, f64), hi = scalar_param(2.0, f64);
  Tensor y = learnable_clip(x, lo, hi);
  CHECK(y.to_vector<double>() == std::vector<double>{-2, -2, 0.5, 2, 2});
  y.backward(vec({1, 2, 3, 4, 5}));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0, 3, 0, 0});
  CHECK(lo.grad().item<double>() == 3.0);  // x <= cmin: 1 + 2
  CHECK(hi.grad().item<double>() == 9.0);  // x >= cmax: 4 + 5
  CHECK(learnable_clip_amax(full({}, -3.0), full({}, 2.0)).item<double>() == 3.0);

  Generator gen(6);
  std::vector<double> xs = uniform({30}, -3, 3, gen, f64).to_vector<double>();
  for (double& v : xs)
    if (std::fabs(v + 1.1) < 0.01 || std::fabs(v - 1.7) < 0.01) v += 0.05;
  const GradcheckResult r =
      gradcheck([](const std::vector<Tensor>& in) { return learnable_clip(in[0], in[1], in[2]); },
                {vec(xs).set_requires_grad(true), scalar_param(-1.1, f64), scalar_param(1.7, f64)});
  INFO(r.message);
  CHECK(r.ok);
}

TEST_CASE("learnable quantizers reject bad arguments", "[quant][learnable]") {
  using Catch::Contains;
  Tensor x = ones({2, 3});
  REQUIRE_THROWS_WITH(lsq_quantize(x, full({1}, 0.0), 4, 3),
                      Contains("lsq_quantize") && Contains("s"));
  REQUIRE_THROWS_AS(lsq_quantize(x, full({1}, 0.1), -1, 3), ValueError);
  REQUIRE_THROWS_AS(lsq_quantize(x, full({2}, 0.1), 4, 3), ShapeError);
  REQUIRE_THROWS_AS(lsq_quantize(x, full({1}, 0.1, f64), 4, 3), DTypeError);
  REQUIRE_THROWS_AS(lsq_plus_quantize(x, full({1}, 0.1), Tensor(), -4, 3), ValueError);
  REQUIRE_THROWS_AS(lsq_plus_quantize(x, full({1}, 0.1), full({1}, 0.0), 3, 3), ValueError);
  REQUIRE_THROWS_AS(pact_clip(x, full({1}, -1.0)), ValueError);
  REQUIRE_THROWS_AS(pact_quantize(x, full({1}, 1.0), 0), ValueError);
  REQUIRE_THROWS_WITH(learnable_clip(x, full({1}, 2.0), full({1}, 1.0)),
                      Contains("learnable_clip: cmax - cmin must be >= 0, got -1"));
  // The checks run as the quant.check_parameter kernel (on a GPU: at the next wait): scalar
  // bounds by their width (NaN in either fails), tensor bounds each for NaN.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  REQUIRE_THROWS_WITH(learnable_clip(x, full({1}, nan), full({1}, 1.0)),
                      Contains("learnable_clip: cmax - cmin must be >= 0, got nan"));
  REQUIRE_THROWS_WITH(learnable_clip(x, full({1}, 0.0), full({1}, nan)),
                      Contains("cmax - cmin must be >= 0, got nan"));
  const Tensor x2 = ones({3, 2});
  REQUIRE_THROWS_WITH(learnable_clip(x2, from_vector<float>({0.0f, float(nan)}), full({1}, 1.0)),
                      Contains("learnable_clip: cmin[1] must not be NaN"));
  REQUIRE_THROWS_WITH(learnable_clip(x2, full({1}, 0.0), from_vector<float>({float(nan), 1.0f})),
                      Contains("learnable_clip: cmax[0] must not be NaN"));
  CHECK_NOTHROW(learnable_clip(x, full({1}, 1.0), full({1}, 1.0)));
  REQUIRE_THROWS_AS(
      learnable_clip(ones({2}, TensorOptions().dtype(kInt32)), full({1}, 0.0), full({1}, 1.0)),
      DTypeError);
}
