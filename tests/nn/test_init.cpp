// nn::init: fan/gain arithmetic against torch's values, sample statistics of each initialiser
// against torch's samples of the same distribution, in-place semantics and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "core/factory.h"
#include "nn/init.h"
#include "nn_test_helpers.h"

using namespace qgrad;
namespace init = qgrad::nn::init;
using qgrad_test::load_nn;

namespace {

struct Stats {
  double mean, std, min, max;
};

Stats stats_of(const Tensor& t) {
  auto v = t.to_vector<double>();
  double s = 0, mn = v[0], mx = v[0];
  for (double x : v) {
    s += x;
    mn = std::min(mn, x);
    mx = std::max(mx, x);
  }
  const double mean = s / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return {mean, std::sqrt(ss / static_cast<double>(v.size() - 1)), mn, mx};
}

}  // namespace

TEST_CASE("init: fan in/out match torch's _calculate_fan_in_and_fan_out") {
  const Shape shapes[] = {{5, 3}, {16, 8, 3, 3}, {4, 2, 5}, {7, 3, 2, 2, 2}};
  auto fans = load_nn("init_fans").to_vector<std::int64_t>();
  for (std::size_t i = 0; i < 4; ++i) {
    auto [fi, fo] = init::calculate_fan_in_and_fan_out(empty(shapes[i]));
    CHECK(fi == fans[2 * i]);
    CHECK(fo == fans[2 * i + 1]);
  }
  REQUIRE_THROWS_AS(init::calculate_fan_in_and_fan_out(empty({5})), ValueError);
  REQUIRE_THROWS_WITH(init::calculate_fan_in_and_fan_out(empty({5})),
                      Catch::Contains("fewer than 2 dimensions"));
}

TEST_CASE("init: calculate_gain matches torch") {
  using N = init::Nonlinearity;
  const std::pair<N, double> cases[] = {
      {N::Linear, 0.01}, {N::Conv2D, 0.01},    {N::Sigmoid, 0.01},  {N::Tanh, 0.01},
      {N::ReLU, 0.01},   {N::LeakyReLU, 0.01}, {N::LeakyReLU, 0.2}, {N::LeakyReLU, std::sqrt(5.0)},
      {N::SELU, 0.01}};
  auto gains = load_nn("init_gains").to_vector<double>();
  for (std::size_t i = 0; i < gains.size(); ++i)
    CHECK(init::calculate_gain(cases[i].first, cases[i].second) == Approx(gains[i]).epsilon(1e-15));
}

TEST_CASE("init: sample statistics agree with torch's for every initialiser") {
  // Rows: mean, std, min, max of torch's samples of shape [128, 64, 3, 3] (73728 values).
  auto ref = load_nn("init_stats").to_vector<double>();
  using init::FanMode;
  using init::Nonlinearity;
  Generator gen(11);
  std::vector<std::function<void(Tensor)>> cases = {
      [&](Tensor t) { init::kaiming_uniform_(t, gen, std::sqrt(5.0)); },
      [&](Tensor t) { init::kaiming_uniform_(t, gen); },
      [&](Tensor t) { init::kaiming_normal_(t, gen, 0.0, FanMode::FanOut, Nonlinearity::ReLU); },
      [&](Tensor t) { init::xavier_uniform_(t, gen, init::calculate_gain(Nonlinearity::Tanh)); },
      [&](Tensor t) { init::xavier_normal_(t, gen); },
      [&](Tensor t) { init::uniform_(t, gen, -0.25, 0.75); },
      [&](Tensor t) { init::normal_(t, gen, 0.5, 2.0); },
  };
  const bool uniform_case[] = {true, true, false, true, false, true, false};
  for (std::size_t c = 0; c < cases.size(); ++c) {
    INFO("case " << c);
    Tensor t = empty({128, 64, 3, 3}, TensorOptions().dtype(kFloat64));
    cases[c](t);
    const Stats s = stats_of(t);
    const double ref_mean = ref[4 * c], ref_std = ref[4 * c + 1];
    const double ref_min = ref[4 * c + 2], ref_max = ref[4 * c + 3];
    // Two independent sample means differ by sqrt(2) standard errors typically; allow 5.
    const double se = ref_std / std::sqrt(73728.0);
    CHECK(std::fabs(s.mean - ref_mean) < 5 * std::sqrt(2.0) * se);
    CHECK(s.std == Approx(ref_std).epsilon(0.02));
    if (uniform_case[c]) {
      // Uniform: the support is [-bound, bound] (or [a, b]); both samples nearly reach it.
      const double half = (ref_max - ref_min) / 2;
      CHECK(s.min >= ref_min - 1e-3 * half);
      CHECK(s.max <= ref_max + 1e-3 * half);
      CHECK(s.min < ref_min + 1e-3 * half);
      CHECK(s.max > ref_max - 1e-3 * half);
    }
  }
}

TEST_CASE("init: kaiming_uniform_ bound is gain * sqrt(3 / fan_in)") {
  Generator gen(1);
  Tensor w = empty({20, 10, 3, 3});
  init::kaiming_uniform_(w, gen, std::sqrt(5.0));
  // gain = sqrt(2 / (1 + 5)) = sqrt(1/3); bound = sqrt(1/3) * sqrt(3 / 90) = 1/sqrt(90).
  const double bound = 1.0 / std::sqrt(90.0);
  const Stats s = stats_of(w);
  REQUIRE(s.max <= bound);
  REQUIRE(s.min >= -bound);
  REQUIRE(s.max > 0.98 * bound);
}

TEST_CASE("init: initialisers work in place on parameters and are reproducible") {
  Tensor p = zeros({8, 4}).set_requires_grad();
  Tensor alias = p;
  Generator g1(5), g2(5);
  init::xavier_uniform_(p, g1);
  REQUIRE(p.is_leaf());  // no graph was recorded
  REQUIRE(p.requires_grad());
  REQUIRE(alias.to_vector<float>() == p.to_vector<float>());
  Tensor q = zeros({8, 4});
  init::xavier_uniform_(q, g2);
  REQUIRE(q.to_vector<float>() == p.to_vector<float>());
  init::constant_(p, 0.25);
  REQUIRE(p.to_vector<float>() == std::vector<float>(32, 0.25f));
  init::ones_(p);
  REQUIRE(p.to_vector<float>() == std::vector<float>(32, 1.0f));
  init::zeros_(p);
  REQUIRE(p.to_vector<float>() == std::vector<float>(32, 0.0f));
}

TEST_CASE("init: errors name the initialiser") {
  Generator gen(0);
  Tensor i = zeros({4, 4}, TensorOptions().dtype(kInt64));
  REQUIRE_THROWS_AS(init::normal_(i, gen), DTypeError);
  REQUIRE_THROWS_WITH(init::kaiming_uniform_(i, gen), Catch::Contains("kaiming_uniform_"));
  REQUIRE_THROWS_AS(init::xavier_normal_(zeros({3}), gen), ValueError);
  REQUIRE_THROWS_AS(init::uniform_(zeros({3}), gen, 1.0, 0.0), ValueError);
  REQUIRE_THROWS_AS(init::constant_(Tensor(), 1.0), ValueError);
  // Zero-element tensors are a no-op, as in PyTorch.
  Tensor e = zeros({0, 3});
  REQUIRE_NOTHROW(init::kaiming_normal_(e, gen));
}
