// Tests of the unary ops and activations: PyTorch golden fixtures (values and gradients, NaN and
// boundary values, views), float64 gradchecks, the accuracy of the float32 approximations over
// dense sweeps, integer semantics, broadcast upstream gradients and error messages.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/autograd/gradcheck.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "support/golden.h"
#include "support/require_gradcheck.h"

using namespace qgrad;
using golden::GoldenCase;
using qgrad_test::require_gradcheck;

namespace {

const std::vector<GoldenCase>& unary_cases() {
  using V = std::vector<Tensor>;
  static const std::vector<GoldenCase> cases = {
      {"neg", [](const V& v) { return neg(v[0]); }},
      {"abs", [](const V& v) { return abs(v[0]); }},
      {"sign", [](const V& v) { return sign(v[0]); }},
      {"exp", [](const V& v) { return exp(v[0]); }},
      {"exp_extremes", [](const V& v) { return exp(v[0]); }},
      {"log", [](const V& v) { return log(v[0]); }},
      {"log_special", [](const V& v) { return log(v[0]); }},
      {"sqrt", [](const V& v) { return sqrt(v[0]); }},
      {"relu", [](const V& v) { return relu(v[0]); }},
      {"relu6", [](const V& v) { return relu6(v[0]); }},
      {"leaky_relu", [](const V& v) { return leaky_relu(v[0], 0.2); }},
      {"hardtanh", [](const V& v) { return hardtanh(v[0], -1.0, 1.0); }},
      {"sigmoid", [](const V& v) { return sigmoid(v[0]); }},
      {"tanh", [](const V& v) { return tanh(v[0]); }},
      {"gelu", [](const V& v) { return gelu(v[0]); }},
      {"gelu_tanh", [](const V& v) { return gelu(v[0], "tanh"); }},
      {"clamp_both", [](const V& v) { return clamp(v[0], -0.5, 0.5); }},
      {"clamp_min_only", [](const V& v) { return clamp(v[0], -0.5, std::nullopt); }},
      {"clamp_max_only", [](const V& v) { return clamp(v[0], std::nullopt, 0.5); }},
      {"sigmoid_transposed", [](const V& v) { return sigmoid(v[0].t()); }},
      {"tanh_sliced", [](const V& v) { return tanh(v[0].slice(0, 1, 6, 2).slice(1, 0, 9, 3)); }},
  };
  return cases;
}
const bool registered = golden::register_cases(unary_cases());

Tensor leaf(const Shape& shape, Generator& gen, double lo = -1.0, double hi = 1.0) {
  return uniform(shape, lo, hi, gen, TensorOptions().dtype(kFloat64)).set_requires_grad(true);
}

// Values in +-[lo, hi]: away from the kinks at 0 of relu, abs, leaky_relu.
Tensor away_from_zero(const Shape& shape, Generator& gen, double lo = 0.1, double hi = 2.0) {
  Tensor mag = uniform(shape, lo, hi, gen, TensorOptions().dtype(kFloat64));
  Tensor sign = sub(mul(bernoulli(shape, 0.5, gen, TensorOptions().dtype(kFloat64)), 2.0), 1.0);
  return mul(mag, sign).detach().set_requires_grad(true);
}

// Largest relative error of float32 `f` against float64 `ref` over `xs`, ignoring results whose
// magnitude is below `floor` (where an absolute error is what matters).
double max_rel_error(const std::function<Tensor(const Tensor&)>& f,
                     const std::function<double(double)>& ref, const std::vector<float>& xs,
                     double floor = 1e-30) {
  const std::vector<float> ys = f(from_vector<float>(xs)).to_vector<float>();
  double worst = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double r = ref(static_cast<double>(xs[i]));
    if (std::fabs(r) < floor) {
      worst = std::max(worst, std::fabs(ys[i] - r) / floor);
      continue;
    }
    worst = std::max(worst, std::fabs(ys[i] - r) / std::fabs(r));
  }
  return worst;
}

std::vector<float> sweep(double lo, double hi, int n) {
  std::vector<float> xs(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) xs[i] = static_cast<float>(lo + (hi - lo) * i / (n - 1));
  return xs;
}

}  // namespace

TEST_CASE("unary ops match PyTorch fixtures", "[unary][golden]") {
  REQUIRE(registered);
  for (const GoldenCase& c : unary_cases()) {
    DYNAMIC_SECTION(c.name) {
      golden::run_golden(c);
    }
  }
}

TEST_CASE("unary ops pass gradcheck", "[unary][gradcheck]") {
  Generator gen(21);
  const Shape s = {3, 5, 7};
  SECTION("smooth ops") {
    require_gradcheck([](const Tensor& x) { return neg(x); }, leaf(s, gen));
    require_gradcheck([](const Tensor& x) { return mul(sign(x), 3.0); }, away_from_zero(s, gen));
    require_gradcheck([](const Tensor& x) { return exp(x); }, leaf(s, gen, -3, 3));
    require_gradcheck([](const Tensor& x) { return log(x); }, leaf(s, gen, 0.2, 5));
    require_gradcheck([](const Tensor& x) { return sqrt(x); }, leaf(s, gen, 0.2, 5));
    require_gradcheck([](const Tensor& x) { return sigmoid(x); }, leaf(s, gen, -6, 6));
    require_gradcheck([](const Tensor& x) { return tanh(x); }, leaf(s, gen, -3, 3));
    require_gradcheck([](const Tensor& x) { return gelu(x); }, leaf(s, gen, -5, 5));
    require_gradcheck([](const Tensor& x) { return gelu(x, "tanh"); }, leaf(s, gen, -5, 5));
  }
  SECTION("piecewise ops away from their kinks") {
    require_gradcheck([](const Tensor& x) { return abs(x); }, away_from_zero(s, gen));
    require_gradcheck([](const Tensor& x) { return relu(x); }, away_from_zero(s, gen));
    require_gradcheck([](const Tensor& x) { return leaky_relu(x, 0.1); }, away_from_zero(s, gen));
    // On both sides of relu6's kinks (0 and 6) without touching them.
    Tensor r6 = from_vector<double>({-2.0, -0.3, 0.2, 1.7, 3.1, 5.8, 6.3, 9.0}, {2, 4});
    require_gradcheck([](const Tensor& x) { return relu6(x); }, r6.set_requires_grad(true));
    require_gradcheck([](const Tensor& x) { return hardtanh(x, -0.5, 0.7); },
                      away_from_zero(s, gen, 0.05, 0.45));
    require_gradcheck([](const Tensor& x) { return clamp(x, -0.5, 0.4); },
                      away_from_zero(s, gen, 0.05, 0.3));
    require_gradcheck([](const Tensor& x) { return clamp(x, 0.25, std::nullopt); },
                      leaf(s, gen, 0.3, 1.0));
    require_gradcheck([](const Tensor& x) { return clamp(x, std::nullopt, -0.25); },
                      leaf(s, gen, -1.0, -0.3));
  }
  SECTION("non-contiguous inputs") {
    require_gradcheck([](const Tensor& x) { return sigmoid(x.t()); }, leaf({7, 5}, gen, -4, 4));
    require_gradcheck([](const Tensor& x) { return gelu(x.slice(1, 1, 9, 3)); },
                      leaf({4, 9}, gen, -3, 3));
    require_gradcheck([](const Tensor& x) { return exp(x.transpose(0, 2)); }, leaf({2, 3, 4}, gen));
  }
}

TEST_CASE("float32 transcendentals are accurate over their whole range", "[unary][accuracy]") {
  // Against float64 libm; PyTorch's own float32 kernels are within a few ulp too, and the
  // golden tests use rel 1e-5.
  const auto ref_sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  const auto ref_gelu = [](double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); };
  const auto ref_gelu_tanh = [](double v) {  // 0.5 (1 + tanh(u)) = sigmoid(2u): no cancellation
    return v / (1.0 + std::exp(-2.0 * 0.79788456080286535588 * (v + 0.044715 * v * v * v)));
  };
  const auto exp_f = [](const Tensor& x) { return exp(x); };
  const auto log_f = [](const Tensor& x) { return log(x); };
  const auto tanh_f = [](const Tensor& x) { return tanh(x); };
  const auto sigmoid_f = [](const Tensor& x) { return sigmoid(x); };
  const auto gelu_f = [](const Tensor& x) { return gelu(x); };
  const auto gelu_tanh_f = [](const Tensor& x) { return gelu(x, "tanh"); };
  const int n = 200001;
  CHECK(max_rel_error(
            exp_f, [](double v) { return std::exp(v); }, sweep(-87, 88.7, n)) < 3e-7);
  std::vector<float> pos;
  for (int i = 0; i < n; ++i) pos.push_back(static_cast<float>(std::exp(-100.0 + 188.0 * i / n)));
  CHECK(max_rel_error(
            log_f, [](double v) { return std::log(v); }, pos) < 3e-7);
  CHECK(max_rel_error(
            log_f, [](double v) { return std::log(v); }, sweep(0.5, 2.0, n), 1e-6) < 3e-7);
  CHECK(max_rel_error(
            tanh_f, [](double v) { return std::tanh(v); }, sweep(-12, 12, n)) < 3e-7);
  CHECK(max_rel_error(
            tanh_f, [](double v) { return std::tanh(v); }, sweep(-1e-3, 1e-3, n)) < 3e-7);
  CHECK(max_rel_error(sigmoid_f, ref_sigmoid, sweep(-80, 30, n)) < 5e-7);
  // Relative accuracy even in the negative tails, where PyTorch's 1 + erf and 1 + tanh cancel
  // (the float32 exponent argument -x^2/2 is rounded, so the error grows slowly with |x|).
  CHECK(max_rel_error(gelu_f, ref_gelu, sweep(-4, 9, n)) < 3e-6);
  CHECK(max_rel_error(gelu_f, ref_gelu, sweep(-9, 9, n)) < 2e-5);
  CHECK(max_rel_error(gelu_tanh_f, ref_gelu_tanh, sweep(-4, 9, n)) < 3e-6);
  CHECK(max_rel_error(gelu_tanh_f, ref_gelu_tanh, sweep(-9, 9, n)) < 2e-5);

  // Special values, as libm.
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> e =
      exp(from_vector<float>({-inf, inf, nan, -110.0f})).to_vector<float>();
  CHECK(e[0] == 0.0f);
  CHECK(e[1] == inf);
  CHECK(std::isnan(e[2]));
  CHECK(e[3] == 0.0f);
  const std::vector<float> l =
      log(from_vector<float>({0.0f, -0.0f, -1.0f, inf, nan, 1.0f})).to_vector<float>();
  CHECK(l[0] == -inf);
  CHECK(l[1] == -inf);
  CHECK(std::isnan(l[2]));
  CHECK(l[3] == inf);
  CHECK(std::isnan(l[4]));
  CHECK(l[5] == 0.0f);
  const std::vector<float> t = tanh(from_vector<float>({-inf, inf, nan, -0.0f})).to_vector<float>();
  CHECK(t[0] == -1.0f);
  CHECK(t[1] == 1.0f);
  CHECK(std::isnan(t[2]));
  CHECK(std::signbit(t[3]));
  const std::vector<float> sg = sigmoid(from_vector<float>({-inf, inf, nan})).to_vector<float>();
  CHECK(sg[0] == 0.0f);
  CHECK(sg[1] == 1.0f);
  CHECK(std::isnan(sg[2]));
  const std::vector<float> g = gelu(from_vector<float>({-inf, inf, nan})).to_vector<float>();
  CHECK(std::isnan(g[0]));  // -inf * 0, as PyTorch
  CHECK(g[1] == inf);
  CHECK(std::isnan(g[2]));
}

TEST_CASE("unary backward accepts broadcast (stride 0) upstream gradients", "[unary]") {
  // sum's backward hands an expanded gradient to the op below it.
  Generator gen(3);
  for (const std::string which : {"sigmoid", "gelu", "tanh", "relu"}) {
    INFO(which);
    Tensor x = randn({4, 6}, gen).set_requires_grad(true);
    Tensor y = which == "sigmoid" ? sigmoid(x)
               : which == "gelu"  ? gelu(x)
               : which == "tanh"  ? tanh(x)
                                  : relu(x);
    sum(y).backward();
    Tensor x2 = x.detach().clone().set_requires_grad(true);
    Tensor y2 = which == "sigmoid" ? sigmoid(x2)
                : which == "gelu"  ? gelu(x2)
                : which == "tanh"  ? tanh(x2)
                                   : relu(x2);
    y2.backward(ones({4, 6}));
    CHECK(x.grad().to_vector<float>() == x2.grad().to_vector<float>());
  }
}

TEST_CASE("unary ops on large strided tensors match a plain loop", "[unary][parallel]") {
  Generator gen(8);
  Tensor base = randn({300, 257}, gen);
  Tensor x = base.t();  // [257, 300] non-contiguous, above the parallel grain
  const std::vector<float> xv = x.to_vector<float>();
  const std::vector<float> r = relu(x).to_vector<float>();
  const std::vector<float> c = clamp(x, -0.5, 0.25).to_vector<float>();
  const std::vector<float> e = exp(x).to_vector<float>();
  bool ok = true;
  for (std::size_t i = 0; i < xv.size(); ++i) {
    ok = ok && r[i] == (xv[i] > 0 ? xv[i] : 0.0f);
    ok = ok && c[i] == std::min(std::max(xv[i], -0.5f), 0.25f);
    ok = ok && std::fabs(e[i] - std::exp(static_cast<double>(xv[i]))) <= 3e-7 * std::exp(xv[i]);
  }
  CHECK(ok);
}

TEST_CASE("unary ops on integer tensors", "[unary][int]") {
  const std::int32_t lo = std::numeric_limits<std::int32_t>::min();
  Tensor x = from_vector<std::int32_t>({lo, -7, 0, 9});
  CHECK(neg(x).to_vector<std::int32_t>() == std::vector<std::int32_t>{lo, 7, 0, -9});
  CHECK(abs(x).to_vector<std::int32_t>() == std::vector<std::int32_t>{lo, 7, 0, 9});
  CHECK(relu(x).to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 0, 0, 9});
  CHECK(sign(x).to_vector<std::int32_t>() == std::vector<std::int32_t>{-1, -1, 0, 1});
  CHECK(clamp(x, -3.0, 5.0).to_vector<std::int32_t>() == std::vector<std::int32_t>{-3, -3, 0, 5});
  CHECK(clamp(x, std::nullopt, 1e12).to_vector<std::int32_t>() == x.to_vector<std::int32_t>());
  CHECK(neg(from_vector<std::uint8_t>({5})).to_vector<std::uint8_t>()[0] == 251);
  // A fractional bound makes the result float32, as torch.clamp's type promotion.
  Tensor f = clamp(x, 1.5, std::nullopt);
  CHECK(f.dtype() == kFloat32);
  CHECK(f.to_vector<float>() == std::vector<float>{1.5f, 1.5f, 1.5f, 9.0f});
}

TEST_CASE("unary ops reject bad arguments with errors naming the op", "[unary][errors]") {
  Tensor i = ones({2, 3}, TensorOptions().dtype(kInt64));
  for (const std::string op :
       {"exp", "log", "sqrt", "sigmoid", "tanh", "gelu", "leaky_relu", "relu6", "hardtanh"}) {
    INFO(op);
    auto call = [&] {
      if (op == "exp") return exp(i);
      if (op == "log") return log(i);
      if (op == "sqrt") return sqrt(i);
      if (op == "sigmoid") return sigmoid(i);
      if (op == "tanh") return tanh(i);
      if (op == "gelu") return gelu(i);
      if (op == "leaky_relu") return leaky_relu(i);
      if (op == "relu6") return relu6(i);
      return hardtanh(i);
    };
    REQUIRE_THROWS_AS(call(), DTypeError);
    REQUIRE_THROWS_WITH(call(), Catch::Contains(op) && Catch::Contains("int64"));
  }
  REQUIRE_THROWS_AS(gelu(ones({2}), "fast"), ValueError);
  REQUIRE_THROWS_WITH(gelu(ones({2}), "fast"), Catch::Contains("gelu"));
  REQUIRE_THROWS_AS(hardtanh(ones({2}), 1.0, -1.0), ValueError);
  REQUIRE_THROWS_AS(clamp(ones({2}), std::nullopt, std::nullopt), ValueError);
  REQUIRE_THROWS_WITH(clamp(ones({2}), std::nullopt, std::nullopt), Catch::Contains("clamp"));
  REQUIRE_THROWS_AS(clamp(ones({2}), std::nan(""), 1.0), ValueError);
  REQUIRE_THROWS_AS(relu(Tensor()), ValueError);
  REQUIRE_THROWS_WITH(relu(Tensor()), Catch::Contains("relu"));
}
