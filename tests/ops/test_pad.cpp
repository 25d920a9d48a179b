// pad: golden values and gradients vs PyTorch for constant (with negative pads / crops and fill
// values), reflect, replicate and circular modes, transposed inputs and a 1-D odd shape; float64
// gradchecks; the threaded forward and scatter-add backward vs per-plane results; integer
// tensors; empty shapes; errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "core/autograd/gradcheck.h"
#include "core/device.h"
#include "core/factory.h"
#include "core/npy.h"
#include "ops/binary/binary.h"
#include "ops/pad/pad.h"
#include "support/fixtures.h"

using namespace qgrad;

namespace {

Tensor fixture(const std::string& name) {
  return qgrad_test::load_fixture("nnfunc", name);
}

void require_close(const Tensor& got, const Tensor& want, double rtol = 1e-6, double atol = 1e-6) {
  qgrad_test::require_close(got, want, rtol, atol, "", qgrad_test::kPlain);
}

Tensor leaf(const Tensor& t) {
  return t.clone().set_requires_grad(true);
}

struct Case {
  const char* tag;
  std::vector<std::int64_t> pads;
  const char* mode;
  double value;
};

}  // namespace

TEST_CASE("pad matches PyTorch in every mode, with negative pads", "[pad]") {
  const std::vector<Case> cases = {
      {"c1", {1, 2}, "constant", 0.0},
      {"c2", {1, -1, 2, 0}, "constant", 0.0},
      {"c3", {-1, -2, 1, 1, 0, 2}, "constant", 1.5},
      {"c4", {0, 0, 0, 0, -1, 1, 1, -1}, "constant", -2.0},
      {"r1", {2, 1, 1, 2}, "reflect", 0.0},
      {"r2", {3, 4, 0, 0}, "reflect", 0.0},
      {"p1", {3, 0, 1, 2}, "replicate", 0.0},
      {"p2", {-1, 2, 3, -2}, "replicate", 0.0},
      {"o1", {1, 2, 2, 1}, "circular", 0.0},
  };
  for (const Case& c : cases) {
    INFO(c.tag << " " << c.mode);
    Tensor x = leaf(fixture("pad_x"));
    Tensor y = pad(x, c.pads, c.mode, c.value);
    const std::string t = std::string("pad_") + c.tag;
    require_close(y, fixture(t + "_y"), 0, 0);  // padding only moves values
    y.backward(fixture(t + "_g"));
    require_close(x.grad(), fixture(t + "_gx"));
  }
}

TEST_CASE("pad of transposed inputs and of a 1-D tensor matches PyTorch", "[pad]") {
  {
    Tensor xt = leaf(fixture("pad_xt"));
    Tensor y = pad(xt.t(), {2, -3, -1, 1}, "constant", 0.5);
    require_close(y, fixture("pad_t_y"), 0, 0);
    y.backward(ones(y.shape()));
    require_close(xt.grad(), fixture("pad_t_gx"));
  }
  {
    Tensor xt = leaf(fixture("pad_xt"));
    Tensor y = pad(xt.t().unsqueeze(0), {2, 1, 1, 2}, "reflect");
    require_close(y, fixture("pad_tr_y"), 0, 0);
    y.backward(ones(y.shape()));
    require_close(xt.grad(), fixture("pad_tr_gx"));
  }
  {
    Tensor x1 = leaf(fixture("pad_x1"));
    Tensor y = pad(x1, {2, -3});
    require_close(y, fixture("pad_1d_y"), 0, 0);
    y.backward(ones(y.shape()));
    require_close(x1.grad(), fixture("pad_1d_gx"));
  }
}

TEST_CASE("pad gradcheck in float64", "[pad][gradcheck]") {
  Generator gen(31);
  const TensorOptions f64 = TensorOptions().dtype(kFloat64);
  const std::vector<Case> cases = {
      {"constant", {1, -2, -1, 2}, "constant", 0.25},
      {"reflect", {2, 1, -1, 2}, "reflect", 0.0},
      {"replicate", {3, -1, 2, 2}, "replicate", 0.0},
      {"circular", {2, 3, -1, 1}, "circular", 0.0},
  };
  for (const Case& c : cases) {
    INFO(c.tag);
    Tensor x = leaf(randn({2, 5, 4}, gen, f64));  // padded as its [2, 4, 5] transpose
    auto r = gradcheck(
        [&](const std::vector<Tensor>& in) {
          return pad(in[0].transpose(1, 2), c.pads, c.mode, c.value);
        },
        {x});
    INFO(r.message);
    REQUIRE(r.ok);
  }
}

TEST_CASE("pad threaded forward and backward agree with per-plane results", "[pad]") {
  Generator gen(32);
  const TensorOptions f64 = TensorOptions().dtype(kFloat64);
  for (const char* mode : {"reflect", "replicate", "circular", "constant"}) {
    INFO(mode);
    const std::vector<std::int64_t> pads = {3, 2, 1, 4};
    Tensor x = leaf(randn({16, 8, 40, 40}, gen, f64));
    Tensor y = pad(x, pads, mode);
    REQUIRE(y.shape() == Shape{16, 8, 45, 45});
    const Tensor g = randn(y.shape(), gen, f64);
    y.backward(g);
    for (std::int64_t i : {0, 7, 15}) {
      Tensor xi = leaf(x.detach().select(0, i).contiguous());
      Tensor yi = pad(xi, pads, mode);
      require_close(y.select(0, i), yi, 0, 0);
      yi.backward(g.select(0, i).contiguous());
      require_close(x.grad().select(0, i), xi.grad(), 1e-12, 1e-12);
    }
  }
}

TEST_CASE("pad: integer tensors, empty pads and empty dims", "[pad]") {
  Tensor i = arange(6).reshape({2, 3});
  Tensor y = pad(i, {1, 0}, "constant", 7);
  REQUIRE(y.dtype() == kInt64);
  REQUIRE(y.to_vector<std::int64_t>() == std::vector<std::int64_t>{7, 0, 1, 2, 7, 3, 4, 5});
  REQUIRE(pad(i, {0, 0, -1, 0}, "replicate").to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{3, 4, 5});

  Tensor x = ones({2, 2}).set_requires_grad(true);
  Tensor c = pad(x, {});
  REQUIRE_FALSE(c.is_same(x));
  REQUIRE(c.to_vector<double>() == x.to_vector<double>());

  REQUIRE(pad(zeros({0, 3}), {1, 1}).shape() == Shape{0, 5});
  Tensor f = pad(zeros({2, 0}), {1, 2}, "constant", 3.0);
  REQUIRE(f.shape() == Shape{2, 3});
  for (double v : f.to_vector<double>()) REQUIRE(v == 3.0);
  REQUIRE(pad(ones({3}), {-1, -2}).shape() == Shape{0});
}

TEST_CASE("pad errors name the op and the problem", "[pad][errors]") {
  const Tensor x = zeros({2, 3, 4});
  REQUIRE_THROWS_AS(pad(x, {1, 2, 3}), ValueError);
  REQUIRE_THROWS_WITH(pad(x, {1, 2, 3}), Catch::Contains("pad") && Catch::Contains("pairs"));
  REQUIRE_THROWS_AS(pad(x, {1, 1, 1, 1, 1, 1, 1, 1}), ValueError);
  REQUIRE_THROWS_WITH(pad(x, {1, 1, 1, 1, 1, 1, 1, 1}), Catch::Contains("[2, 3, 4]"));
  REQUIRE_THROWS_AS(pad(x, {1, 1}, "mirror"), ValueError);
  REQUIRE_THROWS_WITH(pad(x, {1, 1}, "mirror"), Catch::Contains("mirror"));
  REQUIRE_THROWS_AS(pad(x, {-3, -2}), ShapeError);
  REQUIRE_THROWS_WITH(pad(x, {-3, -2}), Catch::Contains("pad") && Catch::Contains("negative"));
  REQUIRE_THROWS_AS(pad(x, {4, 0}, "reflect"), ValueError);
  REQUIRE_THROWS_WITH(pad(x, {0, 4}, "reflect"),
                      Catch::Contains("reflect") && Catch::Contains("smaller"));
  REQUIRE_NOTHROW(pad(x, {3, 3}, "reflect"));
  REQUIRE_THROWS_AS(pad(x, {5, 0}, "circular"), ValueError);
  REQUIRE_THROWS_AS(pad(x, {1, 1}, "reflect", 2.0), ValueError);
  REQUIRE_THROWS_AS(pad(zeros({2, 0}), {1, 1}, "replicate"), ShapeError);
  REQUIRE_THROWS_AS(pad(arange(3).to(kInt8), {1, 1}, "constant", 1000.0), ValueError);
  REQUIRE_THROWS_WITH(pad(zeros({2}), {1, 1}, "constant", 1e300), Catch::Contains("float32"));
  REQUIRE(pad(zeros({2}), {1, 0}, "constant", -INFINITY).to_vector<double>()[0] == -INFINITY);
  REQUIRE_THROWS_AS(pad(Tensor(), {1, 1}), ValueError);
}
