// cross_entropy, nll_loss and mse_loss: golden values and gradients vs PyTorch (all three
// reductions, class weights, ignore_index inside the batch, label smoothing with weights,
// spatial [N, C, d1, d2] logits given as a permuted view, extreme logits, unbatched input);
// float64 gradchecks; the threaded path vs a composed reference; error types and messages.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "core/autograd/gradcheck.h"
#include "core/device.h"
#include "core/factory.h"
#include "core/npy.h"
#include "ops/binary/binary.h"
#include "ops/loss/loss.h"
#include "ops/reduce/reduce.h"
#include "ops/softmax/softmax.h"
#include "ops/unary/unary.h"
#include "ops/where/where.h"
#include "support/fixtures.h"
#include "support/require_gradcheck.h"

using namespace qgrad;
using qgrad_test::require_gradcheck;

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

const TensorOptions kF64 = TensorOptions().dtype(kFloat64);

}  // namespace

TEST_CASE("cross_entropy matches PyTorch: reductions x weights x label smoothing", "[loss]") {
  const Tensor x = fixture("ce_x"), t = fixture("ce_t"), w = fixture("ce_w"), g = fixture("ce_g");
  REQUIRE(t.dtype() == kInt64);
  for (std::string red : {"mean", "sum", "none"}) {
    for (bool use_w : {false, true}) {
      for (int ls10 : {0, 1}) {
        const std::string tag =
            "ce_" + red + "_" + (use_w ? "w" : "nw") + "_ls" + std::to_string(ls10);
        INFO(tag);
        Tensor xl = leaf(x);
        CrossEntropyOptions o;
        o.reduction(red).label_smoothing(ls10 / 10.0);
        if (use_w) o.weight(w);
        Tensor y = cross_entropy(xl, t, o);
        require_close(y, fixture(tag + "_y"));
        if (red == "none")
          y.backward(g);
        else
          y.backward();
        require_close(xl.grad(), fixture(tag + "_gx"));
      }
    }
  }
}

TEST_CASE("cross_entropy with an ignore_index that is a real class", "[loss]") {
  Tensor x = leaf(fixture("ce_x"));
  Tensor y = cross_entropy(
      x, fixture("ce_t2"),
      CrossEntropyOptions().weight(fixture("ce_w")).ignore_index(2).label_smoothing(0.3));
  require_close(y, fixture("ce_ign2_y"));
  y.backward();
  require_close(x.grad(), fixture("ce_ign2_gx"));
}

TEST_CASE("cross_entropy over spatial dims with permuted (non-contiguous) logits", "[loss]") {
  const Tensor t = fixture("ce_sp_t"), w = fixture("ce_sp_w");
  for (std::string red : {"mean", "none"}) {
    INFO(red);
    Tensor xs = leaf(fixture("ce_sp_x"));  // [2, 3, 5, 4] -> logits [2, 4, 3, 5]
    Tensor logits = xs.permute({0, 3, 1, 2});
    REQUIRE_FALSE(logits.is_contiguous());
    Tensor y = cross_entropy(logits, t,
                             CrossEntropyOptions().weight(w).reduction(red).label_smoothing(0.2));
    require_close(y, fixture("ce_sp_" + red + "_y"));
    if (red == "none") {
      REQUIRE(y.shape() == Shape{2, 3, 5});
      y.backward(fixture("ce_sp_g"));
    } else {
      y.backward();
    }
    require_close(xs.grad(), fixture("ce_sp_" + red + "_gx"));
  }
}

TEST_CASE("cross_entropy of extreme logits (1e4) stays finite and exact", "[loss]") {
  for (int ls : {0, 25}) {
    INFO("label_smoothing " << ls / 100.0);
    Tensor x = leaf(fixture("ce_ext_x"));
    Tensor y = cross_entropy(x, fixture("ce_ext_t"),
                             CrossEntropyOptions().reduction("sum").label_smoothing(ls / 100.0));
    REQUIRE(std::isfinite(y.item<double>()));
    require_close(y, fixture("ce_ext_ls" + std::to_string(ls) + "_y"));
    y.backward();
    require_close(x.grad(), fixture("ce_ext_ls" + std::to_string(ls) + "_gx"));
  }
}

TEST_CASE("cross_entropy: unbatched input and all-ignored batches", "[loss]") {
  Tensor xu = leaf(fixture("ce_un_x"));
  Tensor y = cross_entropy(xu, scalar_tensor(3, TensorOptions().dtype(kInt64)),
                           CrossEntropyOptions().label_smoothing(0.1));
  REQUIRE(y.dim() == 0);
  require_close(y, fixture("ce_un_y"));
  y.backward();
  require_close(xu.grad(), fixture("ce_un_gx"));

  Tensor x = leaf(fixture("ce_x"));
  Tensor all_ignored = full({6}, -100, TensorOptions().dtype(kInt64));
  Tensor m = cross_entropy(x, all_ignored);
  REQUIRE(std::isnan(m.item<double>()));
  require_close(m, fixture("ce_allign_y"));
  m.backward();
  require_close(x.grad(), fixture("ce_allign_gx"));
  REQUIRE(cross_entropy(x, all_ignored, CrossEntropyOptions().reduction("sum")).item<double>() ==
          0.0);
}

TEST_CASE("nll_loss matches PyTorch", "[loss]") {
  const Tensor x = fixture("nll_x"), t = fixture("ce_t"), w = fixture("ce_w"), g = fixture("ce_g");
  for (std::string red : {"mean", "sum", "none"}) {
    for (bool use_w : {false, true}) {
      const std::string tag = "nll_" + red + "_" + (use_w ? "w" : "nw");
      INFO(tag);
      Tensor xl = leaf(x);
      NllLossOptions o;
      o.reduction(red);
      if (use_w) o.weight(w);
      Tensor y = nll_loss(xl, t, o);
      require_close(y, fixture(tag + "_y"));
      if (red == "none")
        y.backward(g);
      else
        y.backward();
      require_close(xl.grad(), fixture(tag + "_gx"));
    }
  }
}

TEST_CASE("mse_loss matches PyTorch with a non-contiguous target", "[loss]") {
  for (std::string red : {"mean", "sum", "none"}) {
    INFO(red);
    Tensor a = leaf(fixture("mse_a")), bt = leaf(fixture("mse_bt"));
    Tensor y = mse_loss(a, bt.t(), red);
    require_close(y, fixture("mse_" + red + "_y"));
    if (red == "none")
      y.backward(fixture("mse_g"));
    else
      y.backward();
    require_close(a.grad(), fixture("mse_" + red + "_ga"));
    require_close(bt.grad(), fixture("mse_" + red + "_gbt"));
  }
  // Mixed float32 / float64 promotes, and gradients come back in each input's dtype.
  Tensor a = leaf(fixture("mse_a")), b = leaf(fixture("mse_bt").t().to(kFloat64));
  Tensor y = mse_loss(a, b);
  REQUIRE(y.dtype() == kFloat64);
  require_close(y, fixture("mse_mean_y"), 1e-6);
  y.backward();
  REQUIRE(a.grad().dtype() == kFloat32);
  REQUIRE(b.grad().dtype() == kFloat64);
}

TEST_CASE("loss gradchecks in float64", "[loss][gradcheck]") {
  Generator gen(5);
  const Tensor x = randn({5, 4}, gen, kF64);
  const Tensor t = from_vector<std::int64_t>({3, -100, 0, 1, 3}, {5});
  const Tensor w = add(rand({4}, gen, kF64), 0.5);
  for (std::string red : {"mean", "sum", "none"}) {
    for (double ls : {0.0, 0.15}) {
      INFO(red << " ls " << ls);
      require_gradcheck(
          [&](const std::vector<Tensor>& in) {
            return cross_entropy(
                in[0], t, CrossEntropyOptions().weight(w).reduction(red).label_smoothing(ls));
          },
          {leaf(x)});
    }
    require_gradcheck(
        [&](const std::vector<Tensor>& in) {
          return nll_loss(in[0], t, NllLossOptions().weight(w).reduction(red));
        },
        {leaf(x)});
    require_gradcheck([&](const std::vector<Tensor>& in) { return mse_loss(in[0], in[1], red); },
                      {leaf(x), leaf(randn({5, 4}, gen, kF64))});
  }
  // Spatial logits through a transposed view.
  const Tensor xs = randn({2, 3, 4, 3}, gen, kF64);  // [N, H, W, C]
  const Tensor ts = randint(0, 3, {2, 3, 4}, gen);
  require_gradcheck(
      [&](const std::vector<Tensor>& in) {
        return cross_entropy(in[0].permute({0, 3, 1, 2}), ts,
                             CrossEntropyOptions().label_smoothing(0.1));
      },
      {leaf(xs)});
}

TEST_CASE("cross_entropy threaded path matches a composed reference", "[loss]") {
  Generator gen(9);
  const std::int64_t N = 1500, C = 40;
  const Tensor x = mul(randn({N, C}, gen), 3.0);
  const Tensor t = randint(0, C, {N}, gen);
  const Tensor onehot =
      eq(arange(static_cast<double>(C)).reshape({1, C}), t.reshape({N, 1})).to(kFloat32);
  const Tensor ref = neg(sum(mul(onehot, log_softmax(x, 1)), {1}));
  require_close(cross_entropy(x, t, CrossEntropyOptions().reduction("none")), ref, 1e-5, 1e-5);
  Tensor xl = leaf(x);
  cross_entropy(xl, t).backward();
  require_close(xl.grad(), div(sub(softmax(x, 1), onehot), static_cast<double>(N)), 1e-4, 1e-8);
}

TEST_CASE("cross_entropy: spatial tiles agree with the row kernel", "[loss]") {
  // [N, C, S] with S > one tile (contiguous, so the unit-stride tile path) vs the same logits as
  // [N * S, C] rows; with weights, ignored targets and label smoothing, value and gradient.
  Generator gen(10);
  const std::int64_t N = 3, C = 6, S = 301;
  const Tensor x = mul(randn({N, C, S}, gen), 4.0);
  Tensor t = randint(0, C, {N, S}, gen);
  std::int64_t* tp = t.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < N * S; i += 7) tp[i] = -100;
  const Tensor w = add(rand({C}, gen), 0.5);
  const Tensor g = randn({N, S}, gen);
  for (std::string red : {"mean", "none"}) {
    INFO(red);
    const auto o = CrossEntropyOptions().weight(w).label_smoothing(0.2).reduction(red);
    Tensor xa = leaf(x), xb = leaf(x.permute({0, 2, 1}).contiguous());
    Tensor ya = cross_entropy(xa, t, o);
    Tensor yb = cross_entropy(xb.reshape({N * S, C}), t.reshape({N * S}), o);
    require_close(ya.reshape({-1}), yb.reshape({-1}), 1e-5, 1e-6);
    if (red == "none") {
      ya.backward(g);
      yb.backward(g.reshape({N * S}));
    } else {
      ya.backward();
      yb.backward();
    }
    require_close(xa.grad(), xb.grad().permute({0, 2, 1}), 1e-5, 1e-7);
  }
}

TEST_CASE("loss errors: types and messages", "[loss][errors]") {
  const Tensor x = zeros({3, 5});
  const Tensor t = from_vector<std::int64_t>({0, 7, 1}, {3});
  REQUIRE_THROWS_AS(cross_entropy(x, t), IndexError);
  REQUIRE_THROWS_WITH(cross_entropy(x, t), Catch::Contains("cross_entropy") &&
                                               Catch::Contains("7") && Catch::Contains("5"));
  const Tensor neg_t = from_vector<std::int64_t>({0, -1, 1}, {3});
  REQUIRE_THROWS_AS(cross_entropy(x, neg_t), IndexError);
  REQUIRE_THROWS_WITH(cross_entropy(x, neg_t), Catch::Contains("-1"));
  REQUIRE_THROWS_WITH(nll_loss(x, t), Catch::Contains("nll_loss") && Catch::Contains("7"));
  // -1 is fine once it is the ignore_index.
  REQUIRE_NOTHROW(cross_entropy(x, neg_t, CrossEntropyOptions().ignore_index(-1)));

  REQUIRE_THROWS_AS(cross_entropy(x, t.to(kInt32)), DTypeError);
  REQUIRE_THROWS_WITH(cross_entropy(x, t.to(kFloat32)),
                      Catch::Contains("cross_entropy") && Catch::Contains("int64"));
  REQUIRE_THROWS_AS(cross_entropy(x.to(kInt64), t), DTypeError);
  REQUIRE_THROWS_AS(cross_entropy(x, from_vector<std::int64_t>({0, 1}, {2})), ShapeError);
  REQUIRE_THROWS_WITH(cross_entropy(x, from_vector<std::int64_t>({0, 1}, {2})),
                      Catch::Contains("[3, 5]") && Catch::Contains("[2]"));
  REQUIRE_THROWS_AS(
      cross_entropy(scalar_tensor(1.0), scalar_tensor(0, TensorOptions().dtype(kInt64))),
      ShapeError);
  const Tensor ok_t = from_vector<std::int64_t>({0, 1, 2}, {3});
  REQUIRE_THROWS_AS(cross_entropy(x, ok_t, CrossEntropyOptions().reduction("avg")), ValueError);
  REQUIRE_THROWS_WITH(cross_entropy(x, ok_t, CrossEntropyOptions().reduction("avg")),
                      Catch::Contains("avg") && Catch::Contains("reduction"));
  REQUIRE_THROWS_AS(cross_entropy(x, ok_t, CrossEntropyOptions().label_smoothing(1.5)), ValueError);
  REQUIRE_THROWS_AS(cross_entropy(x, ok_t, CrossEntropyOptions().weight(ones({4}))), ShapeError);
  REQUIRE_THROWS_AS(cross_entropy(x, ok_t, CrossEntropyOptions().weight(ones({5}).to(kInt64))),
                    DTypeError);
  Tensor wg = ones({5}).set_requires_grad(true);
  REQUIRE_THROWS_AS(cross_entropy(x, ok_t, CrossEntropyOptions().weight(wg)), ValueError);

  REQUIRE_THROWS_AS(mse_loss(zeros({3, 1}), zeros({3})), ShapeError);
  REQUIRE_THROWS_WITH(mse_loss(zeros({3, 1}), zeros({3})),
                      Catch::Contains("mse_loss") && Catch::Contains("[3, 1]"));
  REQUIRE_THROWS_AS(mse_loss(zeros({3}), zeros({3}).to(kInt32)), DTypeError);
  REQUIRE_THROWS_AS(mse_loss(zeros({3}), zeros({3}), "max"), ValueError);
}
