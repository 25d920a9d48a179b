// clip_grad_norm_ against torch 1.13: total norm for p = 2, 1, inf, 3, clipping and
// non-clipping cases, gradients scaled in place; edge cases and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/factory.h"
#include "nn/utils/clip_grad.h"
#include "nn_test_helpers.h"

using namespace qgrad;
using qgrad_test::load_nn;
using qgrad_test::require_close;

TEST_CASE("clip_grad_norm_: total norms and clipped gradients match torch") {
  const Tensor cases = load_nn("clip_cases");
  for (std::int64_t c = 0; c < cases.size(0); ++c) {
    auto row = cases.select(0, c).to_vector<double>();
    const double norm_type = row[0], max_norm = row[1], ref_total = row[2];
    std::vector<Tensor> params;
    for (int j = 0; j < 3; ++j) {
      Tensor g = load_nn("clip_grad_p" + std::to_string(j));
      Tensor p = zeros(g.shape()).set_requires_grad();
      p.set_grad(g.clone());
      params.push_back(p);
    }
    INFO("case " << c << " norm_type " << norm_type << " max_norm " << max_norm);
    const double total = nn::utils::clip_grad_norm_(params, max_norm, norm_type);
    REQUIRE(total == Approx(ref_total).epsilon(1e-6));
    for (int j = 0; j < 3; ++j)
      require_close(params[j].grad(),
                    load_nn("clip_case" + std::to_string(c) + "_p" + std::to_string(j)), 1e-6, 1e-7,
                    "grad " + std::to_string(j));
  }
}

TEST_CASE("clip_grad_norm_: edge cases") {
  // No gradients at all: 0, nothing touched.
  Tensor p = ones({3}).set_requires_grad();
  REQUIRE(nn::utils::clip_grad_norm_({p}, 1.0) == 0.0);
  // Parameters without gradients are skipped.
  Tensor q = ones({2}).set_requires_grad();
  q.set_grad(from_vector<float>({3, 4}));
  REQUIRE(nn::utils::clip_grad_norm_({p, q}, 1.0) == Approx(5.0));
  auto g = q.grad().to_vector<float>();
  REQUIRE(g[0] == Approx(3.0 / (5.0 + 1e-6)));
  // Single tensor overload, float64 gradient.
  Tensor d = zeros({2}, TensorOptions().dtype(kFloat64)).set_requires_grad();
  d.set_grad(from_vector<double>({-6, 8}));
  REQUIRE(nn::utils::clip_grad_norm_(d, 100.0, std::numeric_limits<double>::infinity()) == 8.0);
  REQUIRE(d.grad().to_vector<double>() == std::vector<double>{-6, 8});
  // Non-finite total norm.
  d.set_grad(from_vector<double>({std::nan(""), 1}));
  REQUIRE_THROWS_AS(nn::utils::clip_grad_norm_(d, 1.0, 2.0, /*error_if_nonfinite=*/true),
                    ValueError);
  REQUIRE(std::isnan(nn::utils::clip_grad_norm_(d, 1.0)));
  REQUIRE_THROWS_WITH(nn::utils::clip_grad_norm_(d, 1.0, 0.0), Catch::Contains("norm_type"));
}
