// clip_grad_norm_ against torch 1.13: total norm for p = 2, 1, inf, 3, clipping and
// non-clipping cases, gradients scaled in place; edge cases and errors; the tensor-returning
// form against the double one.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/factory.h"
#include "nn/utils/clip_grad.h"
#include "nn_test_helpers.h"
#include "ops/binary/binary.h"

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

TEST_CASE("clip_grad_norm_tensor_: the same clipping, the norm as a tensor of the grads' dtype") {
  for (double p : {2.0, 1.0, 3.0, std::numeric_limits<double>::infinity()}) {
    for (DType dt : {kFloat32, kFloat64}) {
      INFO("p " << p << " dtype " << dtype_name(dt));
      const TensorOptions o = TensorOptions().dtype(dt);
      auto make = [&] {
        Tensor a = zeros({3, 4}, o).set_requires_grad();
        a.set_grad(arange(12, o).reshape({3, 4}) - 5.5);
        Tensor b = zeros({5}, o).set_requires_grad();
        b.set_grad(full({5}, 0.25, o));
        return std::vector<Tensor>{a, b};
      };
      std::vector<Tensor> x = make(), y = make();
      const double total = nn::utils::clip_grad_norm_(x, 2.0, p);
      const Tensor t = nn::utils::clip_grad_norm_tensor_(y, 2.0, p);
      REQUIRE(t.dim() == 0);
      REQUIRE(t.dtype() == dt);
      REQUIRE(t.device() == kCPU);
      REQUIRE(t.item<double>() == total);  // the double form reads this same tensor
      REQUIRE(total > 2.0);                // so both clipped
      for (int j = 0; j < 2; ++j)
        REQUIRE(x[j].grad().to_vector<double>() == y[j].grad().to_vector<double>());
    }
  }
  // The coefficient and total are those of the old host formula, in float32.
  Tensor q = zeros({2}).set_requires_grad();
  q.set_grad(from_vector<float>({3, 4}));
  const Tensor t = nn::utils::clip_grad_norm_tensor_({q}, 1.0);
  REQUIRE(t.item<float>() == 5.0f);
  const float coef = 1.0f / (5.0f + static_cast<float>(1e-6));
  REQUIRE(q.grad().to_vector<float>() == std::vector<float>{3 * coef, 4 * coef});
  // No gradients: torch's tensor(0.).
  Tensor none = ones({3}).set_requires_grad();
  const Tensor z = nn::utils::clip_grad_norm_tensor_({none}, 1.0);
  REQUIRE((z.dim() == 0 && z.dtype() == kFloat32 && z.item<float>() == 0.0f));
  // A NaN total leaves NaN gradients (the coefficient is NaN, as torch.clamp keeps it) unless
  // error_if_nonfinite, which throws before any gradient is touched.
  Tensor d = zeros({2}, TensorOptions().dtype(kFloat64)).set_requires_grad();
  d.set_grad(from_vector<double>({std::nan(""), 1}));
  REQUIRE_THROWS_WITH(nn::utils::clip_grad_norm_tensor_({d}, 1.0, 2.0, true),
                      Catch::Contains("non-finite"));
  REQUIRE(std::isnan(d.grad().to_vector<double>()[0]));
  REQUIRE(d.grad().to_vector<double>()[1] == 1.0);
  REQUIRE(std::isnan(nn::utils::clip_grad_norm_tensor_({d}, 1.0).item<double>()));
  REQUIRE(std::isnan(d.grad().to_vector<double>()[1]));
}
