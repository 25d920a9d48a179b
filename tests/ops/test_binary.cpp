// Tests of the broadcasting binary ops: PyTorch golden fixtures (values and gradients, odd shapes,
// broadcasting, views, scalars, ties and NaN in maximum/minimum, integer wrap-around), float64
// gradchecks, dtype promotion, integer semantics, the parallel paths and error messages.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/autograd/gradcheck.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "support/golden.h"
#include "support/require_gradcheck.h"

using namespace qgrad;
using golden::GoldenCase;
using qgrad_test::require_gradcheck;

namespace {

const std::vector<GoldenCase>& binary_cases() {
  using V = std::vector<Tensor>;
  static const std::vector<GoldenCase> cases = {
      {"add_bcast", [](const V& v) { return add(v[0], v[1]); }},
      {"sub_bcast", [](const V& v) { return sub(v[0], v[1]); }},
      {"mul_odd", [](const V& v) { return mul(v[0], v[1]); }},
      {"mul_transposed", [](const V& v) { return mul(v[0].t(), v[1]); }},
      {"div_bcast", [](const V& v) { return div(v[0], v[1]); }},
      {"div_sliced", [](const V& v) { return div(v[0].slice(1, 0, 10, 2), v[1]); }},
      {"pow_tensor", [](const V& v) { return pow(v[0], v[1]); }},
      {"pow_negative_base", [](const V& v) { return pow(v[0], v[1]); }},
      {"pow_scalar_2", [](const V& v) { return pow(v[0], 2.0); }},
      {"pow_scalar_3", [](const V& v) { return pow(v[0], 3.0); }},
      {"pow_scalar_neg1", [](const V& v) { return pow(v[0], -1.0); }},
      {"pow_scalar_half", [](const V& v) { return pow(v[0], 0.5); }},
      {"pow_scalar_2_5", [](const V& v) { return pow(v[0], 2.5); }},
      {"pow_zero_base", [](const V& v) { return pow(v[0], v[1]); }},
      {"maximum_ties", [](const V& v) { return maximum(v[0], v[1]); }},
      {"minimum_ties", [](const V& v) { return minimum(v[0], v[1]); }},
      {"maximum_nan", [](const V& v) { return maximum(v[0], v[1]); }},
      {"minimum_nan", [](const V& v) { return minimum(v[0], v[1]); }},
      {"add_scalar", [](const V& v) { return v[0] + 2.5; }},
      {"rsub_scalar", [](const V& v) { return 1.5 - v[0]; }},
      {"mul_scalar", [](const V& v) { return v[0] * -3.0; }},
      {"rdiv_scalar", [](const V& v) { return 2.0 / v[0]; }},
      {"maximum_scalar", [](const V& v) { return maximum(v[0], 0.0); }},
      {"cmp_eq", [](const V& v) { return eq(v[0], v[1]); }},
      {"cmp_ne", [](const V& v) { return ne(v[0], v[1]); }},
      {"cmp_lt", [](const V& v) { return lt(v[0], v[1]); }},
      {"cmp_le", [](const V& v) { return le(v[0], v[1]); }},
      {"cmp_gt", [](const V& v) { return gt(v[0], v[1]); }},
      {"cmp_ge", [](const V& v) { return ge(v[0], v[1]); }},
      {"int_add_bcast", [](const V& v) { return add(v[0], v[1]); }},
      {"int_sub_wrap", [](const V& v) { return sub(v[0], v[1]); }},
      {"int_mul_wrap", [](const V& v) { return mul(v[0], v[1]); }},
      {"int8_add_wrap", [](const V& v) { return add(v[0], v[1]); }},
      {"int_div", [](const V& v) { return div(v[0], v[1]); }},
      {"int_pow", [](const V& v) { return pow(v[0], v[1]); }},
      {"int_gt_bcast", [](const V& v) { return gt(v[0], v[1]); }},
      {"int_mixed_float_add", [](const V& v) { return add(v[0], v[1]); }},
  };
  return cases;
}
const bool registered = golden::register_cases(binary_cases());

Tensor leaf(const Shape& shape, Generator& gen, double lo = -1.0, double hi = 1.0) {
  return uniform(shape, lo, hi, gen, TensorOptions().dtype(kFloat64)).set_requires_grad(true);
}

// Values in +-[0.5, 1.5]: away from zero (divisors, log).
Tensor away_from_zero(const Shape& shape, Generator& gen) {
  Tensor mag = uniform(shape, 0.5, 1.5, gen, TensorOptions().dtype(kFloat64));
  Tensor sign = sub(mul(bernoulli(shape, 0.5, gen, TensorOptions().dtype(kFloat64)), 2.0), 1.0);
  return mul(mag, sign).detach().set_requires_grad(true);
}

}  // namespace

TEST_CASE("binary ops match PyTorch fixtures", "[binary][golden]") {
  REQUIRE(registered);
  for (const GoldenCase& c : binary_cases()) {
    DYNAMIC_SECTION(c.name) {
      golden::run_golden(c);
    }
  }
}

TEST_CASE("every elementwise fixture is checked by a test", "[golden]") {
  const std::vector<std::string> index = golden::fixture_index();
  REQUIRE(index.size() > 50);
  for (const std::string& name : index) {
    INFO("fixture without a test: " << name);
    CHECK(golden::registry().count(name) == 1);
  }
  const std::set<std::string> listed(index.begin(), index.end());
  for (const std::string& name : golden::registry()) {
    INFO("test without a fixture: " << name);
    CHECK(listed.count(name) == 1);
  }
}

TEST_CASE("binary ops pass gradcheck with broadcasting and views", "[binary][gradcheck]") {
  Generator gen(11);
  SECTION("add/sub broadcast [4,1,3] with [5,1]") {
    require_gradcheck([](const std::vector<Tensor>& v) { return add(v[0], v[1]); },
                      {leaf({4, 1, 3}, gen), leaf({5, 1}, gen)});
    require_gradcheck([](const std::vector<Tensor>& v) { return sub(v[0], v[1]); },
                      {leaf({4, 1, 3}, gen), leaf({5, 1}, gen)});
  }
  SECTION("mul with a transposed operand") {
    require_gradcheck([](const std::vector<Tensor>& v) { return mul(v[0].t(), v[1]); },
                      {leaf({5, 3}, gen), leaf({3, 5}, gen)});
  }
  SECTION("div with a sliced numerator and broadcast denominator") {
    require_gradcheck(
        [](const std::vector<Tensor>& v) { return div(v[0].slice(1, 1, 7, 2), v[1]); },
        {leaf({2, 7}, gen), away_from_zero({2, 1}, gen)});
  }
  SECTION("pow, both operands") {
    require_gradcheck([](const std::vector<Tensor>& v) { return pow(v[0], v[1]); },
                      {leaf({3, 5}, gen, 0.5, 2.0), leaf({5}, gen, -2.0, 2.0)});
  }
  SECTION("pow with a negative base and integer exponents (base only)") {
    Tensor e = from_vector<double>({-3, -2, -1, 0, 1, 2, 3, 2}, {2, 4});
    require_gradcheck([e](const std::vector<Tensor>& v) { return pow(v[0], e); },
                      {away_from_zero({2, 4}, gen)});
  }
  SECTION("pow scalar exponents") {
    for (double e : {2.0, 3.0, -1.0, -2.0, 0.5, 2.5}) {
      INFO("exponent " << e);
      require_gradcheck([e](const std::vector<Tensor>& v) { return pow(v[0], e); },
                        {leaf({3, 4}, gen, 0.5, 2.0)});
    }
  }
  SECTION("maximum/minimum without ties, broadcast") {
    require_gradcheck([](const std::vector<Tensor>& v) { return maximum(v[0], v[1]); },
                      {leaf({4, 1, 3}, gen), leaf({5, 1}, gen)});
    require_gradcheck([](const std::vector<Tensor>& v) { return minimum(v[0], v[1]); },
                      {leaf({4, 1, 3}, gen), leaf({5, 1}, gen)});
  }
  SECTION("scalar forms") {
    require_gradcheck([](const std::vector<Tensor>& v) { return add(sub(2.0, v[0]), 1.5); },
                      {leaf({3, 5, 7}, gen)});
    require_gradcheck([](const std::vector<Tensor>& v) { return div(3.0, mul(v[0], 2.0)); },
                      {away_from_zero({3, 4}, gen)});
    require_gradcheck([](const std::vector<Tensor>& v) { return div(v[0], -4.0); },
                      {leaf({3, 4}, gen)});
  }
  SECTION("0-d operands") {
    require_gradcheck([](const std::vector<Tensor>& v) { return mul(v[0], v[1]); },
                      {leaf({}, gen), leaf({2, 3}, gen)});
  }
}

TEST_CASE("maximum and minimum split the gradient of ties evenly", "[binary]") {
  Tensor a = tensor({1.0, 2.0, 3.0}).set_requires_grad(true);
  Tensor b = tensor({1.0, 5.0, 0.0}).set_requires_grad(true);
  sum(maximum(a, b)).backward();
  CHECK(a.grad().to_vector<float>() == std::vector<float>{0.5f, 0.0f, 1.0f});
  CHECK(b.grad().to_vector<float>() == std::vector<float>{0.5f, 1.0f, 0.0f});
}

TEST_CASE("binary dtype promotion follows torch.result_type", "[binary][dtype]") {
  Tensor f32 = ones({3}), f64 = ones({3}, TensorOptions().dtype(kFloat64));
  Tensor i32 = ones({3}, TensorOptions().dtype(kInt32)),
         i8 = ones({3}, TensorOptions().dtype(kInt8));
  CHECK(add(f32, f64).dtype() == kFloat64);
  CHECK(add(i32, i8).dtype() == kInt32);
  CHECK(add(i32, f32).dtype() == kFloat32);
  // A 0-d tensor does not widen a dimensioned one of its category, but a float one beats ints.
  CHECK(add(f32, scalar_tensor(2.0, TensorOptions().dtype(kFloat64))).dtype() == kFloat32);
  CHECK(add(i8, scalar_tensor(300, TensorOptions().dtype(kInt64))).dtype() == kInt8);
  CHECK(add(i32, scalar_tensor(2.5, TensorOptions().dtype(kFloat64))).dtype() == kFloat64);
  CHECK(add(scalar_tensor(1.0), scalar_tensor(1.0, TensorOptions().dtype(kFloat64))).dtype() ==
        kFloat64);
  // Scalars take the tensor's dtype, float32 for a fractional scalar and an int tensor.
  CHECK(add(i32, 2.0).dtype() == kInt32);
  CHECK(add(i32, 2.5).dtype() == kFloat32);
  CHECK(mul(f64, 0.1).dtype() == kFloat64);
  // Integer division is true division in float32; int pow stays int.
  CHECK(div(i32, i32).dtype() == kFloat32);
  CHECK(pow(i32, 2.0).dtype() == kInt32);
  CHECK(pow(i32, 0.5).dtype() == kFloat32);
  CHECK(gt(f32, f64).dtype() == kUInt8);
}

TEST_CASE("gradients of mixed-dtype operands come back in each input's dtype", "[binary][dtype]") {
  Tensor a = ones({2, 3}).set_requires_grad(true);
  Tensor b = scalar_tensor(2.0, TensorOptions().dtype(kFloat64)).set_requires_grad(true);
  Tensor c = ones({3}, TensorOptions().dtype(kFloat64)).set_requires_grad(true);
  Tensor y = add(mul(a, b), c);  // float32 * float64 0-d -> float32; + float64[3] -> float64
  CHECK(y.dtype() == kFloat64);
  sum(y).backward();
  CHECK(a.grad().dtype() == kFloat32);
  CHECK(b.grad().dtype() == kFloat64);
  CHECK(b.grad().item<double>() == 6.0);
  CHECK(c.grad().to_vector<double>() == std::vector<double>{2.0, 2.0, 2.0});
}

TEST_CASE("integer arithmetic wraps like PyTorch without undefined behaviour", "[binary][int]") {
  const auto i64 = TensorOptions().dtype(kInt64);
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  Tensor a = from_vector<std::int64_t>({big, std::numeric_limits<std::int64_t>::min(), 3});
  Tensor b = from_vector<std::int64_t>({1, 1, -4});
  CHECK(add(a, b).to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min(),
                                  std::numeric_limits<std::int64_t>::min() + 1, -1});
  CHECK(sub(b, a).to_vector<std::int64_t>()[0] == 1 - big);
  CHECK(mul(a, full({3}, 2, i64)).to_vector<std::int64_t>()[0] == -2);
  Tensor u = from_vector<std::uint8_t>({250, 3, 16});
  CHECK(add(u, u).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{244, 6, 32});
  CHECK(mul(u, u).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{36, 9, 0});
  CHECK(sub(from_vector<std::uint8_t>({1}), from_vector<std::uint8_t>({2}))
            .to_vector<std::uint8_t>()[0] == 255);
  // Integer division by zero goes through float: +-inf and NaN, never a trap.
  Tensor q = div(from_vector<std::int32_t>({1, -1, 0}), from_vector<std::int32_t>({0, 0, 0}));
  const std::vector<float> qv = q.to_vector<float>();
  CHECK(qv[0] == std::numeric_limits<float>::infinity());
  CHECK(qv[1] == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(qv[2]));
  CHECK(div(from_vector<std::int64_t>({7}), 2.0).item<double>() == 3.5);
  CHECK(pow(from_vector<std::int32_t>({-2, 3}), 3.0).to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{-8, 27});
  REQUIRE_THROWS_AS(pow(from_vector<std::int32_t>({2}), -1.0), ValueError);
  REQUIRE_THROWS_WITH(pow(from_vector<std::int32_t>({2}), -1.0), Catch::Contains("pow"));
}

TEST_CASE("comparisons and maximum propagate NaN like PyTorch", "[binary][nan]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor a = from_vector<float>({nan, 1.0f, nan});
  Tensor b = from_vector<float>({0.0f, nan, nan});
  for (const Tensor& r : {maximum(a, b), minimum(a, b), maximum(b, a)})
    for (float v : r.to_vector<float>()) CHECK(std::isnan(v));
  CHECK(eq(a, a).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{0, 1, 0});
  CHECK(ne(a, a).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{1, 0, 1});
  CHECK(lt(a, b).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{0, 0, 0});
}

TEST_CASE("binary ops on large broadcast and strided tensors match a plain loop",
          "[binary][parallel]") {
  // Above the parallel grain, with broadcasting, a transposed operand and a scalar.
  Generator gen(5);
  const std::int64_t R = 301, C = 257;
  Tensor a = randn({C, R}, gen).t();  // [R, C], non-contiguous
  Tensor b = randn({C}, gen);
  Tensor c = randn({R, 1}, gen);
  const std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>(),
                           cv = c.to_vector<float>();
  const std::vector<float> sum_ab = add(a, b).to_vector<float>();
  const std::vector<float> max_bc = maximum(b, c).to_vector<float>();
  const std::vector<float> mul_s = mul(a, 3.0).to_vector<float>();
  const std::vector<std::uint8_t> gt_ac = gt(a, c).to_vector<std::uint8_t>();
  bool ok = true;
  for (std::int64_t i = 0; i < R; ++i)
    for (std::int64_t j = 0; j < C; ++j) {
      const std::size_t k = static_cast<std::size_t>(i * C + j);
      ok = ok && sum_ab[k] == av[k] + bv[j];
      ok = ok && max_bc[k] == std::max(bv[j], cv[i]);
      ok = ok && mul_s[k] == av[k] * 3.0f;
      ok = ok && gt_ac[k] == (av[k] > cv[i] ? 1 : 0);
    }
  CHECK(ok);
}

TEST_CASE("binary ops reject bad arguments with errors naming the op", "[binary][errors]") {
  Tensor a = ones({2, 3}), b = ones({4});
  REQUIRE_THROWS_AS(add(a, b), ShapeError);
  REQUIRE_THROWS_WITH(
      add(a, b), Catch::Contains("add") && Catch::Contains("[2, 3]") && Catch::Contains("[4]"));
  REQUIRE_THROWS_WITH(mul(a, b), Catch::Contains("mul") && Catch::Contains("[2, 3]"));
  REQUIRE_THROWS_WITH(maximum(b, a), Catch::Contains("maximum") && Catch::Contains("[4]"));
  REQUIRE_THROWS_WITH(ge(a, ones({3, 2})), Catch::Contains("ge") && Catch::Contains("[3, 2]"));
  REQUIRE_THROWS_AS(div(a, Tensor()), ValueError);
  REQUIRE_THROWS_WITH(div(a, Tensor()), Catch::Contains("div") && Catch::Contains("other"));
  REQUIRE_THROWS_AS(sub(Tensor(), a), ValueError);
}

// On a GPU a 0-d exponent takes pow's general backward (reading it on the host would make every
// backward wait for the GPU); the CPU reads it and takes the scalar form. The two must agree bit
// for bit: here the general form runs on the CPU through a [1]-shaped exponent.
TEST_CASE("pow backward: a 0-d exponent's scalar form gives the general form's bits") {
  Generator gen(21);
  const Tensor a0 = rand({6, 37}, gen) * 3.0;
  a0.narrow(1, 0, 2).fill_(0.0);  // zero bases: inf and 0-exponent edge cases
  const Tensor g0 = randn({6, 37}, gen);
  for (double e : {2.0, 3.0, -1.0, 0.5, 2.5, 0.1, 0.0, -0.7, 1.0, 7.0}) {
    for (DType dt : {kFloat32, kFloat64}) {
      INFO("exponent " << e << ", " << dtype_name(dt));
      auto grad = [&](const Tensor& b) {
        const Tensor a = a0.to(dt).detach().set_requires_grad(true);
        pow(a, b).backward(g0.to(dt));
        return a.grad().to(kFloat64).to_vector<double>();
      };
      const Tensor scalar = full({}, e, TensorOptions().dtype(dt));
      const std::vector<double> s = grad(scalar), general = grad(scalar.reshape({1}));
      REQUIRE(s.size() == general.size());
      std::size_t bad = 0;
      for (std::size_t i = 0; i < s.size(); ++i)
        if (std::memcmp(&s[i], &general[i], sizeof(double)) != 0 &&
            !(std::isnan(s[i]) && std::isnan(general[i])))
          ++bad;
      CHECK(bad == 0);
    }
  }
}
