// Tests of batch_norm: golden outputs, input/weight/bias gradients and updated running
// statistics against PyTorch (fixtures from tests/fixtures/gen_poolbn.py) in training and
// evaluation mode for [N, C], [N, C, L] and [N, C, H, W] inputs, contiguous or not, in float32
// and float64; float64 gradchecks; in-place semantics of the running buffers; argument errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <string>

#include "core/autograd/grad_mode.h"
#include "core/autograd/gradcheck.h"
#include "core/factory.h"
#include "core/npy.h"
#include "ops/batch_norm/batch_norm.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "support/fixtures.h"
#include "support/require_gradcheck.h"

using namespace qgrad;
using qgrad_test::require_gradcheck;

namespace {

Tensor fixture(const std::string& c, const std::string& name) {
  return qgrad_test::load_fixture("poolbn", c + "_" + name);
}

// Equal infinities match, NaN never does.
void require_close(const Tensor& a, const Tensor& b, double rtol, double atol,
                   const std::string& what) {
  qgrad_test::require_close(a, b, rtol, atol, what, qgrad_test::kEqualMatches);
}

Tensor leaf(const Tensor& t, DType dt) {
  Tensor l = t.to(dt).detach().clone();
  l.set_requires_grad(true);
  return l;
}

enum class Layout { Contiguous, Strided, Transposed };

// Checks case `c` in dtype `dt`, feeding x in `layout`.
void check_case(const std::string& c, bool training, bool affine, bool running, double momentum,
                double eps, DType dt, Layout layout) {
  const std::string tag =
      c + " " + dtype_name(dt) + " layout " + std::to_string(static_cast<int>(layout));
  const Tensor x_ref = fixture(c, "x"), gy = fixture(c, "gy");
  Tensor x_leaf, x_in;
  if (layout == Layout::Contiguous) {
    x_leaf = leaf(x_ref, dt);
    x_in = x_leaf;
  } else if (layout == Layout::Strided) {
    // Every other element of the last dim of a wider buffer.
    Shape wide = x_ref.shape();
    wide.back() *= 2;
    x_leaf = zeros(wide, TensorOptions().dtype(dt));
    {
      NoGradGuard ng;
      x_leaf.slice(-1, 0, wide.back(), 2).copy_(x_ref);
    }
    x_leaf.set_requires_grad(true);
    x_in = x_leaf.slice(-1, 0, wide.back(), 2);
  } else {
    x_leaf = leaf(x_ref.transpose(0, 1).contiguous(), dt);
    x_in = x_leaf.transpose(0, 1);
  }
  if (layout != Layout::Contiguous) REQUIRE_FALSE(x_in.is_contiguous());
  Tensor w, b, rm, rv;
  if (affine) {
    w = leaf(fixture(c, "w"), dt);
    b = leaf(fixture(c, "b"), dt);
  }
  if (running) {
    rm = fixture(c, "rm").to(dt);
    rv = fixture(c, "rv").to(dt);
  }
  const std::uint64_t rm_version = running ? rm.version() : 0;
  Tensor y = batch_norm(x_in, rm, rv, w, b, training, momentum, eps);
  REQUIRE(y.dtype() == dt);
  require_close(y, fixture(c, "y"), 1e-5, 2e-5, tag + " output");
  sum(mul(y, gy.to(dt))).backward();
  Tensor gx = x_leaf.grad();
  if (layout == Layout::Strided) gx = gx.slice(-1, 0, gx.size(-1), 2);
  if (layout == Layout::Transposed) gx = gx.transpose(0, 1);
  require_close(gx, fixture(c, "gx"), 1e-4, 2e-5, tag + " input gradient");
  if (affine) {
    require_close(w.grad(), fixture(c, "gw"), 1e-4, 2e-5, tag + " weight gradient");
    require_close(b.grad(), fixture(c, "gb"), 1e-4, 2e-5, tag + " bias gradient");
  }
  if (running) {
    require_close(rm, fixture(c, "rm_new"), 1e-5, 1e-6, tag + " running_mean");
    require_close(rv, fixture(c, "rv_new"), 1e-5, 1e-6, tag + " running_var");
    if (training) REQUIRE(rm.version() > rm_version);
  }
}

void check_all(const std::string& c, bool training, bool affine, bool running,
               double momentum = 0.1, double eps = 1e-5) {
  for (DType dt : {kFloat32, kFloat64})
    for (Layout layout : {Layout::Contiguous, Layout::Strided, Layout::Transposed})
      check_case(c, training, affine, running, momentum, eps, dt, layout);
}

Tensor f64_leaf(const Shape& shape, Generator& gen, double scale = 1, double shift = 0) {
  Tensor t = add(mul(randn(shape, gen, TensorOptions().dtype(kFloat64)), scale), shift);
  t = t.detach().contiguous();
  t.set_requires_grad(true);
  return t;
}

}  // namespace

TEST_CASE("batch_norm training on [N, C, H, W] matches PyTorch", "[batch_norm]") {
  check_all("bn_train4d", true, true, true);
}

TEST_CASE("batch_norm evaluation on [N, C, H, W] matches PyTorch", "[batch_norm]") {
  check_all("bn_eval4d", false, true, true);
}

TEST_CASE("batch_norm on [N, C] (BatchNorm1d) matches PyTorch", "[batch_norm]") {
  check_all("bn_train2d", true, true, true, 0.3, 1e-3);
  check_all("bn_eval2d", false, true, true);
}

TEST_CASE("batch_norm without affine parameters or running statistics matches PyTorch",
          "[batch_norm]") {
  check_all("bn_train3d_plain", true, false, false);
}

TEST_CASE("batch_norm gradcheck in float64", "[batch_norm]") {
  Generator gen(11);
  const Tensor x = f64_leaf({3, 2, 3, 2}, gen, 1.5, 0.5);
  const Tensor w = f64_leaf({2}, gen), b = f64_leaf({2}, gen);
  const Tensor rm = mul(randn({2}, gen, TensorOptions().dtype(kFloat64)), 0.3);
  const Tensor rv = add(rand({2}, gen, TensorOptions().dtype(kFloat64)), 0.5);
  SECTION("training") {
    require_gradcheck(
        [](const std::vector<Tensor>& in) {
          return batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true);
        },
        {x, w, b});
  }
  SECTION("training with running statistics") {
    Tensor rm2 = rm.clone(), rv2 = rv.clone();
    require_gradcheck(
        [&](const std::vector<Tensor>& in) {
          return batch_norm(in[0], rm2, rv2, in[1], in[2], true, 0.2, 1e-3);
        },
        {x, w, b});
  }
  SECTION("evaluation") {
    require_gradcheck(
        [&](const std::vector<Tensor>& in) {
          return batch_norm(in[0], rm, rv, in[1], in[2], false);
        },
        {x, w, b});
  }
  SECTION("2-D input, no affine") {
    const Tensor x2 = f64_leaf({5, 3}, gen);
    require_gradcheck(
        [](const std::vector<Tensor>& in) {
          return batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor(), true);
        },
        {x2});
  }
  SECTION("weight only needs grad") {
    Tensor xc = x.detach().clone();
    require_gradcheck(
        [&](const std::vector<Tensor>& in) {
          return batch_norm(xc, Tensor(), Tensor(), in[0], Tensor(), true);
        },
        {w});
  }
}

TEST_CASE("batch_norm updates running statistics with PyTorch's rule", "[batch_norm]") {
  Generator gen(2);
  for (DType dt : {kFloat32, kFloat64}) {
    const Tensor x = randn({6, 3, 4}, gen, TensorOptions().dtype(dt));
    // Non-contiguous running buffers: every other element of a longer vector.
    Tensor rm_buf = ones({6}, TensorOptions().dtype(dt)),
           rv_buf = ones({6}, TensorOptions().dtype(dt));
    Tensor rm = rm_buf.slice(0, 0, 6, 2), rv = rv_buf.slice(0, 0, 6, 2);
    batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.25);
    const Tensor mean_b = mean(x, {0, 2});
    const Tensor var_u = var(x, {0, 2}, 1);
    require_close(rm, add(mul(mean_b, 0.25), 0.75), 1e-6, 1e-6, "running_mean");
    require_close(rv, add(mul(var_u, 0.25), 0.75), 1e-6, 1e-6, "running_var (unbiased)");
    // Untouched gaps of the buffers.
    REQUIRE(rm_buf.to_vector<double>()[1] == 1.0);
    REQUIRE(rv_buf.to_vector<double>()[5] == 1.0);
    // Evaluation leaves them alone and uses them.
    const Tensor rm_before = rm.clone();
    Tensor y = batch_norm(x, rm, rv, Tensor(), Tensor(), false);
    require_close(rm, rm_before, 0, 0, "running_mean after eval");
    const Tensor expect =
        div(sub(x, rm.reshape({1, 3, 1})), qgrad::sqrt(add(rv.reshape({1, 3, 1}), 1e-5)));
    require_close(y, expect, 1e-5, 1e-6, "eval output");
  }
}

TEST_CASE("batch_norm in evaluation mode keeps its statistics for backward", "[batch_norm]") {
  Generator gen(4);
  Tensor x = randn({4, 2, 3}, gen);
  x.set_requires_grad(true);
  Tensor rm = zeros({2}), rv = ones({2});
  Tensor w = full({2}, 2.0);
  Tensor y = batch_norm(x, rm, rv, w, Tensor(), false);
  // A training step in between changes the running buffers in place.
  batch_norm(randn({4, 2, 3}, gen), rm, rv, Tensor(), Tensor(), true);
  sum(y).backward();
  require_close(x.grad(), full({4, 2, 3}, 2.0 / std::sqrt(1.0 + 1e-5)), 1e-6, 1e-6,
                "eval gradient uses the forward's statistics");
}

TEST_CASE("batch_norm detects in-place changes of its input before backward", "[batch_norm]") {
  Generator gen(8);
  Tensor x = randn({4, 2, 3}, gen);
  x.set_requires_grad(true);
  Tensor h = mul(x, 1.0);
  Tensor y = batch_norm(h, Tensor(), Tensor(), Tensor(), Tensor(), true);
  h.fill_(1.0);
  REQUIRE_THROWS_AS(sum(y).backward(), AutogradError);
}

TEST_CASE("batch_norm rejects bad arguments with errors naming the op", "[batch_norm]") {
  const Tensor x = zeros({4, 3, 2, 2});
  const Tensor c3 = ones({3});
  REQUIRE_THROWS_AS(batch_norm(zeros({4}), Tensor(), Tensor(), Tensor(), Tensor(), true),
                    ShapeError);
  REQUIRE_THROWS_WITH(batch_norm(zeros({4}), Tensor(), Tensor(), Tensor(), Tensor(), true),
                      Catch::Contains("batch_norm"));
  REQUIRE_THROWS_AS(batch_norm(x, ones({4}), c3, c3, c3, true), ShapeError);
  REQUIRE_THROWS_WITH(batch_norm(x, ones({4}), c3, c3, c3, true),
                      Catch::Contains("batch_norm") && Catch::Contains("running_mean") &&
                          Catch::Contains("[4, 3, 2, 2]"));
  REQUIRE_THROWS_AS(batch_norm(x, c3, ones({3, 1}), c3, c3, true), ShapeError);
  REQUIRE_THROWS_AS(batch_norm(x, c3, c3, ones({2}), c3, true), ShapeError);
  REQUIRE_THROWS_AS(batch_norm(x, c3, c3, c3, ones({3}, TensorOptions().dtype(kFloat64)), true),
                    DTypeError);
  REQUIRE_THROWS_AS(batch_norm(zeros({4, 3}, TensorOptions().dtype(kInt64)), c3, c3), DTypeError);
  REQUIRE_THROWS_AS(batch_norm(x, Tensor(), Tensor(), c3, c3, false), ValueError);
  REQUIRE_THROWS_WITH(batch_norm(x, Tensor(), Tensor(), c3, c3, false),
                      Catch::Contains("evaluation mode"));
  REQUIRE_THROWS_AS(batch_norm(x, c3, Tensor(), c3, c3, true), ValueError);
  REQUIRE_THROWS_AS(batch_norm(zeros({1, 3}), Tensor(), Tensor(), c3, c3, true), ValueError);
  REQUIRE_THROWS_WITH(batch_norm(zeros({1, 3, 1, 1}), Tensor(), Tensor(), c3, c3, true),
                      Catch::Contains("more than 1 value per channel"));
  REQUIRE_THROWS_AS(batch_norm(x, c3, c3, c3, c3, true, 0.1, -1.0), ValueError);
  // One value per channel is fine in evaluation mode.
  REQUIRE(batch_norm(zeros({1, 3}), c3, c3, c3, c3, false).shape() == Shape{1, 3});
}
