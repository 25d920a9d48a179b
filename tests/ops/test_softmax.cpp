// softmax / log_softmax: golden values and gradients vs PyTorch (tests/fixtures/gen_nnfunc.py)
// over every dim of 3-D tensors, non-contiguous inputs, tiles wider than the kernel's, long rows
// and extreme logits; float64 gradchecks; the threaded path vs a composed reference; errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/autograd/grad_mode.h"
#include "core/autograd/gradcheck.h"
#include "core/device.h"
#include "core/factory.h"
#include "core/npy.h"
#include "core/vec_math.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/softmax/softmax.h"
#include "ops/unary/unary.h"
#include "support/fixtures.h"

using namespace qgrad;

namespace {

Tensor fixture(const std::string& name) {
  return qgrad_test::load_fixture("nnfunc", name);
}

// Elementwise |got - want| <= atol + rtol * |want|; equal infinities and NaNs match.
void require_close(const Tensor& got, const Tensor& want, double rtol = 1e-5, double atol = 1e-6) {
  qgrad_test::require_close(got, want, rtol, atol, "", qgrad_test::kSpecialsMatch);
}

Tensor leaf(const Tensor& t) {
  return t.clone().set_requires_grad(true);
}

using Fn = Tensor (*)(const Tensor&, std::int64_t);

}  // namespace

TEST_CASE("softmax and log_softmax match PyTorch over every dim of a 3-D tensor", "[softmax]") {
  const Tensor x = fixture("sm_x"), g = fixture("sm_g");
  for (int d = 0; d < 3; ++d) {
    for (const char* name : {"sm", "lsm"}) {
      INFO(name << " dim " << d);
      const Fn fn = std::string(name) == "sm" ? softmax : log_softmax;
      // Negative and positive spellings of the dim give the same result.
      Tensor xl = leaf(x);
      Tensor y = fn(xl, d - 3);
      const std::string tag = std::string(name) + "_d" + std::to_string(d);
      require_close(y, fixture(tag + "_y"));
      y.backward(g);
      require_close(xl.grad(), fixture(tag + "_gx"));
    }
  }
}

TEST_CASE("softmax handles non-contiguous (permuted) inputs", "[softmax]") {
  const Tensor xp = fixture("sm_xp"), g = fixture("sm_g");
  for (int d = 0; d < 3; ++d) {
    for (const char* name : {"sm", "lsm"}) {
      INFO(name << " dim " << d);
      const Fn fn = std::string(name) == "sm" ? softmax : log_softmax;
      Tensor xl = leaf(xp);
      Tensor v = xl.permute({1, 2, 0});
      REQUIRE_FALSE(v.is_contiguous());
      Tensor y = fn(v, d);
      const std::string tag = std::string(name) + "_perm_d" + std::to_string(d);
      require_close(y, fixture(tag + "_y"));
      y.backward(g);
      require_close(xl.grad(), fixture(tag + "_gxp"));
    }
  }
}

TEST_CASE("softmax over columns wider than a kernel tile and long odd rows", "[softmax]") {
  {
    Tensor x = leaf(fixture("sm_wide_x"));
    Tensor y = softmax(x, 1);
    require_close(y, fixture("sm_wide_y"));
    y.backward(fixture("sm_wide_g"));
    require_close(x.grad(), fixture("sm_wide_gx"));
  }
  {
    Tensor x = leaf(fixture("sm_long_x"));
    Tensor y = log_softmax(x, -1);
    require_close(y, fixture("lsm_long_y"), 1e-5, 1e-5);
    y.backward(fixture("sm_long_g"));
    require_close(x.grad(), fixture("lsm_long_gx"), 1e-5, 1e-5);
  }
  {
    Tensor x = leaf(fixture("sm64_x"));
    REQUIRE(x.dtype() == kFloat64);
    Tensor y = softmax(x, 0);
    require_close(y, fixture("sm64_y"), 1e-12, 1e-14);
    y.backward(fixture("sm64_g"));
    require_close(x.grad(), fixture("sm64_gx"), 1e-12, 1e-14);
  }
}

TEST_CASE("softmax of extreme logits (1e4, -inf) does not overflow", "[softmax]") {
  const Tensor x = fixture("sm_ext_x"), g = fixture("sm_ext_g");
  for (const char* name : {"sm", "lsm"}) {
    INFO(name);
    const Fn fn = std::string(name) == "sm" ? softmax : log_softmax;
    Tensor xl = leaf(x);
    Tensor y = fn(xl, 1);
    for (double v : y.to_vector<double>()) REQUIRE_FALSE(std::isnan(v));
    require_close(y, fixture(std::string(name) + "_ext_y"));
    y.backward(g);
    for (double v : xl.grad().to_vector<double>()) REQUIRE(std::isfinite(v));
    require_close(xl.grad(), fixture(std::string(name) + "_ext_gx"));
  }
}

TEST_CASE("softmax gradcheck in float64", "[softmax][gradcheck]") {
  Generator gen(7);
  const Tensor base = randn({3, 4, 5}, gen, TensorOptions().dtype(kFloat64));
  for (const Fn fn : {softmax, log_softmax}) {
    for (std::int64_t d : {0, 1, -1}) {
      INFO("dim " << d);
      Tensor x = leaf(base);
      auto r = gradcheck([&](const std::vector<Tensor>& in) { return fn(in[0], d); }, {x});
      INFO(r.message);
      REQUIRE(r.ok);
      // Through a non-contiguous view, and with a size-1 softmax dim.
      Tensor xt = leaf(randn({5, 4, 3}, gen, TensorOptions().dtype(kFloat64)));
      r = gradcheck(
          [&](const std::vector<Tensor>& in) {
            return fn(in[0].permute({2, 1, 0}), d);
          },
          {xt});
      INFO(r.message);
      REQUIRE(r.ok);
    }
    Tensor x1 = leaf(randn({4, 1, 3}, gen, TensorOptions().dtype(kFloat64)));
    auto r = gradcheck([&](const std::vector<Tensor>& in) { return fn(in[0], 1); }, {x1});
    INFO(r.message);
    REQUIRE(r.ok);
  }
}

TEST_CASE("softmax backward accepts broadcast (stride-0) and strided upstream gradients",
          "[softmax]") {
  Generator gen(3);
  const Tensor x0 = randn({6, 7}, gen, TensorOptions().dtype(kFloat64));
  // sum() hands softmax's backward an expanded, stride-0 gradient: d/dx sum(softmax) = 0.
  Tensor x = leaf(x0);
  sum(softmax(x, 1)).backward();
  for (double v : x.grad().to_vector<double>()) REQUIRE(std::abs(v) < 1e-12);
  // log_softmax: d/dx sum(log_softmax) = 1 - C * softmax.
  Tensor x2 = leaf(x0);
  sum(log_softmax(x2, 0)).backward();
  NoGradGuard ng;
  require_close(x2.grad(), sub(1.0, mul(softmax(x0, 0), 6.0)), 1e-12, 1e-12);
}

TEST_CASE("softmax threaded path matches a composed reference", "[softmax]") {
  Generator gen(11);
  for (std::int64_t d : {0, 1, 2}) {
    INFO("dim " << d);
    const Tensor x = mul(randn({40, 33, 50}, gen), 5.0);
    const Tensor ref_sm = [&] {
      Tensor e = exp(sub(x, amax(x, {d}, true)));
      return div(e, sum(e, {d}, true));
    }();
    require_close(softmax(x, d), ref_sm, 1e-5, 1e-7);
    require_close(log_softmax(x, d), log(ref_sm), 1e-5, 1e-5);
    Tensor rowsum = sum(softmax(x.transpose(0, 2), d), {d});
    for (double v : rowsum.to_vector<double>()) REQUIRE(std::abs(v - 1.0) < 1e-5);
  }
}

TEST_CASE("the vectorised exp is accurate for x <= 0 and keeps NaN", "[softmax]") {
  double worst = 0;
  for (float v = -87.3f; v <= 0.0f; v += 0.000731f) {
    const double want = std::exp(static_cast<double>(v));
    worst =
        std::max(worst, std::abs(static_cast<double>(vec_math::exp_nonpositive(v)) - want) / want);
  }
  INFO("worst relative error " << worst);
  REQUIRE(worst < 2.5e-7);
  REQUIRE(vec_math::exp_nonpositive(0.0f) == 1.0f);
  REQUIRE(vec_math::exp_nonpositive(-std::numeric_limits<float>::infinity()) == 0.0f);
  REQUIRE(vec_math::exp_nonpositive(-100.0f) == 0.0f);
  REQUIRE(std::isnan(vec_math::exp_nonpositive(std::numeric_limits<float>::quiet_NaN())));
  REQUIRE(std::abs(vec_math::exp_nonpositive(1e-7f) - 1.0f) < 1e-6f);  // rounding noise above 0
}

TEST_CASE("softmax sums over more classes than one summation block", "[softmax]") {
  Generator gen(12);
  const Tensor x = mul(randn({1300, 3, 2}, gen), 4.0);  // C = 1300 along dim 0, columns of 6
  for (std::int64_t d : {0, 2}) {
    INFO("dim " << d);
    const Tensor xd = d == 0 ? x : x.permute({1, 2, 0}).contiguous();  // C last for dim 2
    const Tensor e = exp(sub(xd, amax(xd, {d}, true)));
    const Tensor ref = div(e, sum(e, {d}, true));
    require_close(softmax(xd, d), ref, 1e-5, 1e-9);
    require_close(log_softmax(xd, d), log(ref), 1e-5, 1e-5);
  }
}

TEST_CASE("softmax edge shapes: 0-d, empty, size-1 dims", "[softmax]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double v : softmax(tensor({1.0, nan, 2.0}), 0).to_vector<double>()) REQUIRE(std::isnan(v));
  for (double v : log_softmax(tensor({nan, 1.0}), 0).to_vector<double>()) REQUIRE(std::isnan(v));
  Tensor s = scalar_tensor(3.0);
  REQUIRE(softmax(s, 0).item<double>() == 1.0);
  REQUIRE(log_softmax(s, -1).item<double>() == 0.0);
  Tensor e = zeros({0, 4});
  REQUIRE(softmax(e, 1).shape() == Shape{0, 4});
  Tensor one = tensor({1.0, 2.0}).reshape({2, 1});
  for (double v : softmax(one, 1).to_vector<double>()) REQUIRE(v == 1.0);
}

TEST_CASE("softmax errors name the op", "[softmax][errors]") {
  Tensor ints = arange(6).reshape({2, 3});
  REQUIRE_THROWS_AS(softmax(ints, 1), DTypeError);
  REQUIRE_THROWS_WITH(softmax(ints, 1), Catch::Contains("softmax") && Catch::Contains("int64"));
  REQUIRE_THROWS_WITH(log_softmax(ints, 1), Catch::Contains("log_softmax"));
  Tensor x = zeros({2, 3});
  REQUIRE_THROWS_AS(softmax(x, 2), IndexError);
  REQUIRE_THROWS_WITH(log_softmax(x, -3),
                      Catch::Contains("log_softmax") && Catch::Contains("out of range"));
  REQUIRE_THROWS_AS(softmax(Tensor(), 0), ValueError);
}
