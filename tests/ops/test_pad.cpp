// pad: golden values and gradients vs PyTorch for constant (with negative pads / crops and fill
// values), reflect, replicate and circular modes, transposed inputs and a 1-D odd shape; float64
// gradchecks; the threaded forward and scatter-add backward vs per-plane results; the CUDA
// backward's gather (host/device index math) vs the CPU; integer tensors; empty shapes; errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/autograd/gradcheck.h"
#include "core/device.h"
#include "core/factory.h"
#include "core/npy.h"
#include "ops/binary/binary.h"
#include "ops/pad/pad.h"
#include "ops/pad/pad_elem.h"
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

// The CUDA backward gathers instead of scattering (ops/pad/pad_elem.h): per input element, the
// outputs copied from it, by next_output, in ascending order. Its index math is host/device, so
// it is checked here on every machine: against a brute-force inverse of source_index, and the
// whole gather against the CPU kernel bit for bit.
TEST_CASE("pad: the gather backward's inverse map and sums match the CPU scatter", "[pad]") {
  using pad_elem::next_output;
  using pad_elem::source_index;
  for (const PadMode mode :
       {PadMode::Constant, PadMode::Reflect, PadMode::Replicate, PadMode::Circular}) {
    for (std::int64_t n = 1; n <= 6; ++n) {
      for (std::int64_t l = -n; l <= n + 2; ++l) {
        for (std::int64_t r = -n; r <= n + 2; ++r) {
          const std::int64_t out = n + l + r;
          if (out < 0) continue;
          // What pad.cpp admits (see its checks).
          if (mode == PadMode::Reflect && (l >= n || r >= n)) continue;
          if (mode == PadMode::Circular &&
              (l > n || r > n ||
               n + std::min<std::int64_t>(l, 0) + std::min<std::int64_t>(r, 0) <= 0))
            continue;
          for (std::int64_t s = 0; s < n; ++s) {
            std::vector<std::int64_t> want, got;
            for (std::int64_t o = 0; o < out; ++o)
              if (source_index(mode, n, l, r, o) == s) want.push_back(o);
            for (std::int64_t o = next_output(mode, n, l, r, out, s, -1); o >= 0;
                 o = next_output(mode, n, l, r, out, s, o)) {
              got.push_back(o);
              if (got.size() > static_cast<std::size_t>(out)) break;  // no endless loop
            }
            INFO("mode " << static_cast<int>(mode) << " n " << n << " pads " << l << ", " << r
                         << " s " << s);
            REQUIRE(got == want);
          }
        }
      }
    }
  }

  Generator gen(11);
  struct Case {
    std::string mode;
    std::vector<std::int64_t> pads;
  };
  for (const Case& c : {Case{"reflect", {3, 2, 1, 4}}, Case{"replicate", {4, 3, 2, 5}},
                        Case{"circular", {5, 2, 3, 1}}, Case{"replicate", {-2, 6, 3, -1}},
                        Case{"reflect", {2, -3, 0, 1}}}) {
    INFO(c.mode);
    const Tensor x = randn({2, 3, 5, 6}, gen).set_requires_grad(true);
    const Tensor y = pad(x, c.pads, c.mode);
    // A transposed (strided) output gradient, as the CUDA kernel may get.
    const Tensor g = randn({y.shape()[3], y.shape()[2]}, gen).t().expand(y.shape());
    y.backward(g);
    PadPlan plan;
    plan.mode = c.mode == "reflect"     ? PadMode::Reflect
                : c.mode == "replicate" ? PadMode::Replicate
                                        : PadMode::Circular;
    plan.in_shape = x.shape();
    plan.out_shape = y.shape();
    plan.left = {0, 0, c.pads[2], c.pads[0]};
    plan.right = {0, 0, c.pads[3], c.pads[1]};
    const pad_elem::PadGeometry geo =
        pad_elem::make_geometry("pad backward", plan, x.strides(), g.strides());
    const std::vector<float> cpu = x.grad().to_vector<float>();
    const float* pg = g.data_ptr<float>();
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      const float v = geo.gather(pg, i);
      REQUIRE(std::memcmp(&v, &cpu[static_cast<std::size_t>(i)], sizeof v) == 0);
    }
  }
}
