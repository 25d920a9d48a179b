// Tests of where and the logical ops: PyTorch golden fixtures (broadcasting all three operands,
// a scalar operand, a transposed operand, integer values), float64 gradchecks, masks of other
// dtypes, the parallel path and error messages.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/autograd/gradcheck.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/where/where.h"
#include "support/golden.h"

using namespace qgrad;
using golden::GoldenCase;

namespace {

const std::vector<GoldenCase>& where_cases() {
  using V = std::vector<Tensor>;
  static const std::vector<GoldenCase> cases = {
      {"where_bcast", [](const V& v) { return where(v[0], v[1], v[2]); }},
      {"where_scalar_other", [](const V& v) { return where(v[0], v[1], 0.0); }},
      {"where_transposed", [](const V& v) { return where(v[0], v[1].t(), v[2]); }},
      {"int_where", [](const V& v) { return where(v[0], v[1], v[2]); }},
  };
  return cases;
}
const bool registered = golden::register_cases(where_cases());

}  // namespace

TEST_CASE("where matches PyTorch fixtures", "[where][golden]") {
  REQUIRE(registered);
  for (const GoldenCase& c : where_cases()) {
    DYNAMIC_SECTION(c.name) {
      golden::run_golden(c);
    }
  }
}

TEST_CASE("where passes gradcheck with broadcasting", "[where][gradcheck]") {
  Generator gen(31);
  const auto f64 = TensorOptions().dtype(kFloat64);
  Tensor cond = bernoulli({4, 1, 3}, 0.5, gen, TensorOptions().dtype(kUInt8));
  Tensor a = randn({5, 1}, gen, f64).set_requires_grad(true);
  Tensor b = randn({3}, gen, f64).set_requires_grad(true);
  GradcheckResult r =
      gradcheck([&](const std::vector<Tensor>& v) { return where(cond, v[0], v[1]); }, {a, b});
  INFO(r.message);
  CHECK(r.ok);
  r = gradcheck(
      [&](const std::vector<Tensor>& v) { return where(gt(v[0].t(), 0.0), v[0].t(), 2.0); },
      {randn({4, 3}, gen, f64).set_requires_grad(true)});
  INFO(r.message);
  CHECK(r.ok);
}

TEST_CASE("where takes any dtype as the condition (nonzero is true)", "[where]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor cond = from_vector<float>({0.0f, 2.0f, nan, -0.0f});
  Tensor r = where(cond, ones({4}), zeros({4}));
  CHECK(r.to_vector<float>() == std::vector<float>{0, 1, 1, 0});
  Tensor ci = from_vector<std::int64_t>({0, 5, -1, 0});
  CHECK(where(ci, 1.0, zeros({4})).to_vector<float>() == std::vector<float>{0, 1, 1, 0});
  // Mixed operand dtypes promote; the gradient reaches each operand in its own dtype.
  Tensor a = ones({4}).set_requires_grad(true);
  Tensor b = zeros({4}, TensorOptions().dtype(kFloat64)).set_requires_grad(true);
  Tensor y = where(ci, a, b);
  CHECK(y.dtype() == kFloat64);
  sum(y).backward();
  CHECK(a.grad().dtype() == kFloat32);
  CHECK(a.grad().to_vector<float>() == std::vector<float>{0, 1, 1, 0});
  CHECK(b.grad().to_vector<double>() == std::vector<double>{1, 0, 0, 1});
}

TEST_CASE("where and logical ops on large tensors match a plain loop", "[where][parallel]") {
  Generator gen(9);
  Tensor c = bernoulli({301, 257}, 0.3, gen, TensorOptions().dtype(kUInt8));
  Tensor d = bernoulli({257}, 0.6, gen, TensorOptions().dtype(kUInt8));
  Tensor a = randn({257, 301}, gen).t();
  Tensor b = randn({301, 1}, gen);
  const auto cv = c.to_vector<std::uint8_t>(), dv = d.to_vector<std::uint8_t>();
  const auto av = a.to_vector<float>(), bv = b.to_vector<float>();
  const auto w = where(c, a, b).to_vector<float>();
  const auto land = logical_and(c, d).to_vector<std::uint8_t>();
  const auto lor = logical_or(c, d).to_vector<std::uint8_t>();
  const auto lnot = logical_not(c).to_vector<std::uint8_t>();
  bool ok = true;
  for (std::size_t i = 0; i < 301; ++i)
    for (std::size_t j = 0; j < 257; ++j) {
      const std::size_t k = i * 257 + j;
      ok = ok && w[k] == (cv[k] ? av[k] : bv[i]);
      ok = ok && land[k] == (cv[k] && dv[j]);
      ok = ok && lor[k] == (cv[k] || dv[j]);
      ok = ok && lnot[k] == !cv[k];
    }
  CHECK(ok);
}

TEST_CASE("where and logical ops reject bad arguments naming the op", "[where][errors]") {
  Tensor c = ones({2, 3}, TensorOptions().dtype(kUInt8));
  REQUIRE_THROWS_AS(where(c, ones({4}), ones({3})), ShapeError);
  REQUIRE_THROWS_WITH(where(c, ones({4}), ones({3})), Catch::Contains("where") &&
                                                          Catch::Contains("[2, 3]") &&
                                                          Catch::Contains("[4]"));
  REQUIRE_THROWS_WITH(where(c, ones({3}), ones({2, 2})), Catch::Contains("where"));
  REQUIRE_THROWS_AS(where(Tensor(), ones({3}), ones({3})), ValueError);
  REQUIRE_THROWS_WITH(where(Tensor(), ones({3}), ones({3})), Catch::Contains("condition"));
  REQUIRE_THROWS_AS(logical_and(c, ones({5})), ShapeError);
  REQUIRE_THROWS_WITH(logical_or(c, ones({5})), Catch::Contains("logical_or"));
}
