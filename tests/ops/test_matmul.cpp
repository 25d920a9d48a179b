// matmul and linear: gradcheck in float64 (2-D, batched with broadcasting, 1-D operands,
// transposed views), golden outputs and gradients vs PyTorch 1.13 (fixtures from
// tests/fixtures/gen_conv.py), float32 vs float64 on strided operands, and argument errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "core/autograd/gradcheck.h"
#include "core/factory.h"
#include "core/npy.h"
#include "ops/matmul/matmul.h"
#include "ops/reduce/reduce.h"
#include "support/fixtures.h"

using namespace qgrad;

namespace {

Tensor fixture(const std::string& name) {
  return qgrad_test::load_fixture("conv", name);
}

// |got - want| <= rtol * |want| + atol * max(1, max|want|), elementwise.
void require_close(const Tensor& got, const Tensor& want, const std::string& what,
                   double rtol = 1e-4, double atol = 1e-5) {
  qgrad_test::require_close(got, want, rtol, atol, what, qgrad_test::kScaledAtol);
}

Tensor rand64(const Shape& s, Generator& gen) {
  return randn(s, gen, TensorOptions().dtype(DType::Float64)).set_requires_grad();
}

}  // namespace

TEST_CASE("matmul gradcheck float64", "[matmul]") {
  Generator gen(3);
  const std::pair<Shape, Shape> cases[] = {
      {{3, 4}, {4, 5}},    {{2, 3, 4}, {2, 4, 2}}, {{2, 1, 3, 4}, {3, 4, 2}},
      {{2, 3, 4}, {4, 5}}, {{3, 4}, {2, 4, 5}},    {{4}, {4, 3}},
      {{3, 4}, {4}},       {{2, 3, 4}, {4}},       {{4}, {2, 4, 3}},
      {{5}, {5}},          {{1, 3, 1}, {2, 1, 2}},
  };
  for (const auto& c : cases) {
    Tensor a = rand64(c.first, gen), b = rand64(c.second, gen);
    auto r = gradcheck([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {a, b});
    INFO(shape_str(c.first) << " @ " << shape_str(c.second) << ": " << r.message);
    REQUIRE(r.ok);
  }
}

TEST_CASE("matmul gradcheck float64 on transposed and expanded views", "[matmul]") {
  Generator gen(4);
  Tensor a = rand64({5, 3}, gen), b = rand64({2, 5, 4}, gen), c = rand64({4, 1}, gen);
  auto r = gradcheck(
      [](const std::vector<Tensor>& in) {
        // a^T [3, 5] @ b^T-batch [2, 5, 4] @ c expanded to [4, 3].
        return matmul(matmul(in[0].t(), in[1]), in[2].expand({4, 3}));
      },
      {a, b, c});
  INFO(r.message);
  REQUIRE(r.ok);
}

TEST_CASE("linear gradcheck float64", "[matmul][linear]") {
  Generator gen(5);
  Tensor x = rand64({4, 3}, gen), w = rand64({2, 3}, gen), b = rand64({2}, gen);
  auto r = gradcheck([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); },
                     {x, w, b});
  INFO(r.message);
  REQUIRE(r.ok);
  Tensor x3 = rand64({2, 3, 3}, gen);
  r = gradcheck([](const std::vector<Tensor>& in) { return linear(in[0], in[1]); }, {x3, w});
  INFO(r.message);
  REQUIRE(r.ok);
  Tensor x1 = rand64({3}, gen);
  r = gradcheck([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); },
                {x1, w, b});
  INFO(r.message);
  REQUIRE(r.ok);
}

TEST_CASE("matmul float32 matches PyTorch", "[matmul][golden]") {
  const std::pair<const char*, bool> cases[] = {
      {"mm", false},      {"mm_at", true},      {"bmm_broadcast", false}, {"vec_mat", false},
      {"mat_vec", false}, {"batch_vec", false}, {"vec_batch", false},     {"dot", false}};
  for (const auto& c : cases) {
    const std::string n = c.first;
    SECTION(n) {
      Tensor stored = fixture(n + "_a").set_requires_grad();
      Tensor a = c.second ? stored.t() : stored;
      Tensor b = fixture(n + "_b").set_requires_grad();
      Tensor y = matmul(a, b);
      require_close(y, fixture(n + "_y"), n + " forward");
      y.backward(fixture(n + "_gy"));
      require_close(stored.grad(), fixture(n + "_ga"), n + " grad a");
      require_close(b.grad(), fixture(n + "_gb"), n + " grad b");
    }
  }
}

TEST_CASE("linear float32 matches PyTorch", "[matmul][linear][golden]") {
  for (const char* name : {"linear_bias", "linear_3d_nobias"}) {
    const std::string n = name;
    SECTION(n) {
      const bool has_b = n == "linear_bias";
      Tensor x = fixture(n + "_x").set_requires_grad();
      Tensor w = fixture(n + "_w").set_requires_grad();
      Tensor b = has_b ? fixture(n + "_b").set_requires_grad() : Tensor();
      Tensor y = linear(x, w, b);
      require_close(y, fixture(n + "_y"), n + " forward");
      y.backward(fixture(n + "_gy"));
      require_close(x.grad(), fixture(n + "_gx"), n + " grad x");
      require_close(w.grad(), fixture(n + "_gw"), n + " grad w");
      if (has_b) require_close(b.grad(), fixture(n + "_gb"), n + " grad b");
    }
  }
}

TEST_CASE("matmul float32 on strided operands agrees with float64", "[matmul]") {
  Generator gen(6);
  // Transposed, sliced (row step 2), batch-permuted and expanded operands.
  Tensor base_a = randn({3, 8, 6}, gen), base_b = randn({5, 3, 7}, gen);
  const std::pair<Tensor, Tensor> cases[] = {
      {base_a.transpose(1, 2), randn({3, 8, 4}, gen)},                   // [3,6,8] @ [3,8,4]
      {base_a.slice(1, 0, 8, 2), base_b.permute({1, 2, 0})},             // [3,4,6] @ [3,7,5]?
      {base_a.select(0, 1), base_b.select(1, 0).t()},                    // [8,6] @ [7,5]^T
      {randn({6}, gen).expand({2, 4, 6}), randn({6, 3}, gen)},           // stride-0 rows & batch
      {randn({1, 4, 6}, gen).expand({5, 4, 6}), randn({5, 6, 2}, gen)},  // broadcast batch
      {randn({1, 4, 6}, gen).expand({5, 4, 6}), randn({1, 6, 2}, gen).expand({5, 6, 2})},
  };
  for (const auto& c : cases) {
    Tensor a = c.first, b = c.second;
    if (a.shape().back() != b.shape()[b.dim() - 2]) b = b.narrow(b.dim() - 2, 0, a.shape().back());
    Tensor y = matmul(a, b);
    Tensor y64 = matmul(a.to(DType::Float64), b.to(DType::Float64));
    require_close(y, y64, shape_str(a.shape()) + " @ " + shape_str(b.shape()), 1e-5, 1e-5);
  }
}

TEST_CASE("linear float32 with a transposed weight view and no bias", "[matmul][linear]") {
  Generator gen(9);
  Tensor x = randn({6, 5}, gen), wt = randn({5, 3}, gen);
  Tensor y = linear(x, wt.t());
  Tensor y64 = linear(x.to(DType::Float64), wt.t().to(DType::Float64));
  require_close(y, y64, "linear with w^T", 1e-5, 1e-5);
}

TEST_CASE("matmul and linear argument errors", "[matmul][errors]") {
  REQUIRE_THROWS_AS(matmul(zeros({3, 4}), zeros({5, 2})), ShapeError);
  REQUIRE_THROWS_WITH(matmul(zeros({3, 4}), zeros({5, 2})), Catch::Contains("matmul") &&
                                                                Catch::Contains("[3, 4]") &&
                                                                Catch::Contains("[5, 2]"));
  REQUIRE_THROWS_AS(matmul(zeros({2, 3, 4}), zeros({3, 4, 5})), ShapeError);  // batch 2 vs 3
  REQUIRE_THROWS_AS(matmul(zeros({3}), zeros({4})), ShapeError);
  REQUIRE_THROWS_AS(matmul(zeros({}), zeros({4})), ShapeError);
  REQUIRE_THROWS_AS(matmul(zeros({3, 4}), zeros({4, 2}, TensorOptions().dtype(DType::Float64))),
                    DTypeError);
  REQUIRE_THROWS_WITH(matmul(zeros({3, 4}), zeros({4, 2}, TensorOptions().dtype(DType::Float64))),
                      Catch::Contains("matmul"));
  REQUIRE_THROWS_AS(matmul(zeros({3, 4}, TensorOptions().dtype(DType::Int32)),
                           zeros({4, 2}, TensorOptions().dtype(DType::Int32))),
                    DTypeError);
  REQUIRE_THROWS_AS(matmul(Tensor(), zeros({4})), ValueError);

  REQUIRE_THROWS_AS(linear(zeros({2, 3}), zeros({4, 5})), ShapeError);
  REQUIRE_THROWS_WITH(linear(zeros({2, 3}), zeros({4, 5})), Catch::Contains("linear") &&
                                                                Catch::Contains("[2, 3]") &&
                                                                Catch::Contains("[4, 5]"));
  REQUIRE_THROWS_AS(linear(zeros({2, 3}), zeros({4, 3, 1})), ShapeError);
  REQUIRE_THROWS_AS(linear(zeros({2, 3}), zeros({4, 3}), zeros({5})), ShapeError);
  REQUIRE_THROWS_AS(
      linear(zeros({2, 3}), zeros({4, 3}), zeros({4}, TensorOptions().dtype(DType::Float64))),
      DTypeError);
}

TEST_CASE("matmul with an empty inner dimension gives zeros", "[matmul]") {
  Tensor y = matmul(zeros({3, 0}), zeros({0, 2}));
  REQUIRE(y.shape() == Shape{3, 2});
  REQUIRE(sum(y).item<double>() == 0.0);
  Tensor yl = linear(zeros({3, 0}), zeros({2, 0}), ones({2}));
  REQUIRE(sum(yl).item<double>() == 6.0);
}
