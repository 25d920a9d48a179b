// conv2d: gradcheck in float64 over stride/padding/dilation/groups, golden forward and gradients
// vs PyTorch 1.13 (fixtures from tests/fixtures/gen_conv.py), layouts (non-contiguous input and
// weight, broadcast upstream gradient), primitive caching, argument errors, and the buffer pool
// the oneDNN kernels keep their temporaries in.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/autograd/gradcheck.h"
#include "core/factory.h"
#include "core/npy.h"
#include "ops/binary/binary.h"
#include "ops/conv/conv.h"
#include "ops/conv/conv_kernels.h"
#include "ops/dnnl/dnnl_context.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
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

struct ConvCase {
  const char* name;
  Shape stride, padding, dilation;
  std::int64_t groups;
  bool has_bias, nhwc;
};

// Mirrors CONV_CASES in tests/fixtures/gen_conv.py.
const ConvCase kCases[] = {
    {"k3p1", {1}, {1}, {1}, 1, true, false},
    {"lenet5x5", {1}, {0}, {1}, 1, true, false},
    {"lenet_c2", {1}, {0}, {1}, 1, true, false},
    {"stride2", {2}, {1}, {1}, 1, true, false},
    {"dilation2", {1}, {2}, {2}, 1, true, false},
    {"groups2", {1}, {1}, {1}, 2, true, false},
    {"depthwise", {1}, {1}, {1}, 8, true, false},
    {"depthwise_mult2", {2}, {1}, {1}, 8, false, false},
    {"odd_asym", {2, 1}, {1, 0}, {1, 2}, 1, true, false},
    {"noncontig_nhwc", {1}, {1}, {1}, 1, true, true},
    {"batch1_c16", {1}, {1}, {1}, 1, false, false},
    {"c32_blocked", {1}, {1}, {1}, 1, true, false},
    {"pointwise_s2", {2}, {0}, {1}, 1, true, false},
};

}  // namespace

TEST_CASE("conv2d gradcheck float64: stride, padding, dilation, groups", "[conv]") {
  Generator gen(7);
  struct G {
    Shape x, w;
    Shape stride, padding, dilation;
    std::int64_t groups;
    bool bias;
  };
  const G cases[] = {
      {{2, 3, 5, 5}, {4, 3, 3, 3}, {1}, {1}, {1}, 1, true},
      {{1, 2, 7, 6}, {3, 2, 3, 2}, {2, 1}, {1, 0}, {1}, 1, true},
      {{2, 2, 7, 7}, {2, 2, 3, 3}, {1}, {2}, {2}, 1, false},
      {{1, 4, 5, 5}, {6, 2, 3, 3}, {1}, {1}, {1}, 2, true},
      {{2, 3, 5, 4}, {3, 1, 3, 3}, {2}, {1}, {1}, 3, true},  // depthwise
      {{1, 2, 6, 6}, {2, 2, 5, 5}, {1}, {0}, {1}, 1, true},  // LeNet-like 5x5
  };
  for (const G& c : cases) {
    Tensor x = rand64(c.x, gen), w = rand64(c.w, gen);
    Tensor b = c.bias ? rand64({c.w[0]}, gen) : Tensor();
    std::vector<Tensor> inputs{x, w};
    if (c.bias) inputs.push_back(b);
    auto r = gradcheck(
        [&](const std::vector<Tensor>& in) {
          return conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), c.stride, c.padding,
                        c.dilation, c.groups);
        },
        inputs);
    INFO("x " << shape_str(c.x) << " w " << shape_str(c.w) << ": " << r.message);
    REQUIRE(r.ok);
  }
}

TEST_CASE("conv2d gradcheck float64: non-contiguous input", "[conv]") {
  Generator gen(8);
  Tensor base = rand64({2, 5, 6, 3}, gen);  // NHWC storage
  Tensor w = rand64({2, 3, 3, 3}, gen);
  auto r = gradcheck(
      [](const std::vector<Tensor>& in) {
        return conv2d(in[0].permute({0, 3, 1, 2}), in[1], Tensor(), {1}, {1});
      },
      {base, w});
  INFO(r.message);
  REQUIRE(r.ok);
}

TEST_CASE("conv2d float32 matches PyTorch: outputs and gradients", "[conv][golden]") {
  for (const ConvCase& c : kCases) {
    const std::string n = c.name;
    SECTION(n) {
      Tensor stored = fixture(n + "_x");
      Tensor x = c.nhwc ? stored.permute({0, 3, 1, 2}).detach().set_requires_grad()
                        : stored.set_requires_grad();
      if (c.nhwc) REQUIRE_FALSE(x.is_contiguous());
      Tensor w = fixture(n + "_w").set_requires_grad();
      Tensor b = c.has_bias ? fixture(n + "_b").set_requires_grad() : Tensor();
      Tensor y = conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
      require_close(y, fixture(n + "_y"), n + " forward");
      y.backward(fixture(n + "_gy"));
      require_close(x.grad(), fixture(n + "_gx"), n + " grad input");
      require_close(w.grad(), fixture(n + "_gw"), n + " grad weight");
      if (c.has_bias) require_close(b.grad(), fixture(n + "_gb"), n + " grad bias");

      // The same call again reuses every cached primitive and gives the same numbers.
      const std::size_t cached = dnnl_backend::primitive_cache().size();
      x.set_grad(Tensor());
      w.set_grad(Tensor());
      Tensor y2 = conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
      y2.backward(fixture(n + "_gy"));
      REQUIRE(dnnl_backend::primitive_cache().size() == cached);
      require_close(y2, y, n + " repeated forward", 0, 0);
      require_close(x.grad(), fixture(n + "_gx"), n + " repeated grad input");
    }
  }
}

TEST_CASE("conv2d float32 with only some inputs requiring grad", "[conv]") {
  // First layer of a network: the data needs no gradient, only weight and bias.
  Tensor x = fixture("k3p1_x");
  Tensor w = fixture("k3p1_w").set_requires_grad();
  Tensor b = fixture("k3p1_b").set_requires_grad();
  Tensor y = conv2d(x, w, b, {1}, {1});
  y.backward(fixture("k3p1_gy"));
  require_close(w.grad(), fixture("k3p1_gw"), "grad weight");
  require_close(b.grad(), fixture("k3p1_gb"), "grad bias");
  REQUIRE_FALSE(x.grad().defined());

  // Frozen weight and bias: only the input gradient.
  Tensor x2 = fixture("k3p1_x").set_requires_grad();
  Tensor y2 = conv2d(x2, fixture("k3p1_w"), fixture("k3p1_b"), {1}, {1});
  y2.backward(fixture("k3p1_gy"));
  require_close(x2.grad(), fixture("k3p1_gx"), "grad input");

  // Weight only (bias without grad).
  Tensor w3 = fixture("c32_blocked_w").set_requires_grad();
  Tensor y3 = conv2d(fixture("c32_blocked_x"), w3, fixture("c32_blocked_b"), {1}, {1});
  y3.backward(fixture("c32_blocked_gy"));
  require_close(w3.grad(), fixture("c32_blocked_gw"), "grad weight only");
}

TEST_CASE("conv2d float32 layouts: non-contiguous weight, broadcast gradient", "[conv]") {
  Generator gen(11);
  Tensor x = randn({2, 16, 6, 6}, gen);
  Tensor w = randn({8, 16, 3, 3}, gen);
  Tensor w_nc = randn({3, 3, 16, 8}, gen);  // a permuted copy of w
  w_nc.copy_(w.permute({2, 3, 1, 0}));
  Tensor w_view = w_nc.permute({3, 2, 0, 1});
  REQUIRE_FALSE(w_view.is_contiguous());
  require_close(conv2d(x, w_view, Tensor(), {1}, {1}), conv2d(x, w, Tensor(), {1}, {1}),
                "permuted weight", 1e-6, 1e-6);

  // Grouped, with a permuted weight and a batch-1 channels-last input (size-1 dim N).
  Tensor wg = randn({8, 8, 3, 3}, gen);
  Tensor wg_view = wg.permute({2, 3, 1, 0}).contiguous().permute({3, 2, 0, 1});
  Tensor x1 = randn({1, 16, 6, 6}, gen);
  Tensor x1_view = x1.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  REQUIRE_FALSE(wg_view.is_contiguous());
  REQUIRE_FALSE(x1_view.is_contiguous());
  require_close(conv2d(x1_view, wg_view, Tensor(), {1}, {1}, {1}, 2),
                conv2d(x1, wg, Tensor(), {1}, {1}, {1}, 2), "grouped, strided operands", 1e-6,
                1e-6);

  // sum() sends back an expanded (stride 0) gradient; the result must equal a dense ones.
  Tensor xa = x.clone().set_requires_grad(), xb = x.clone().set_requires_grad();
  Tensor wa = w.clone().set_requires_grad(), wb = w.clone().set_requires_grad();
  sum(conv2d(xa, wa, Tensor(), {2}, {1})).backward();
  Tensor yb = conv2d(xb, wb, Tensor(), {2}, {1});
  yb.backward(ones(yb.shape()));
  require_close(xa.grad(), xb.grad(), "grad input, expanded gy", 1e-6, 1e-6);
  require_close(wa.grad(), wb.grad(), "grad weight, expanded gy", 1e-6, 1e-6);
}

TEST_CASE("conv2d float32 agrees with the float64 reference on a wider layer", "[conv]") {
  Generator gen(12);
  Tensor x = randn({3, 32, 10, 10}, gen).set_requires_grad();
  Tensor w = (randn({48, 16, 3, 3}, gen)).set_requires_grad();
  Tensor b = randn({48}, gen).set_requires_grad();
  Tensor x64 = x.detach().to(DType::Float64).set_requires_grad();
  Tensor w64 = w.detach().to(DType::Float64).set_requires_grad();
  Tensor b64 = b.detach().to(DType::Float64).set_requires_grad();
  Tensor gy = randn({3, 48, 5, 5}, gen);
  Tensor y = conv2d(x, w, b, {2}, {1}, {1}, 2);
  Tensor y64 = conv2d(x64, w64, b64, {2}, {1}, {1}, 2);
  require_close(y, y64, "forward");
  y.backward(gy);
  y64.backward(gy.to(DType::Float64));
  require_close(x.grad(), x64.grad(), "grad input");
  require_close(w.grad(), w64.grad(), "grad weight");
  require_close(b.grad(), b64.grad(), "grad bias");
}

TEST_CASE("conv2d float32 Winograd paths agree with the float64 reference", "[conv][winograd]") {
  // Batch 16 and 32 channels at 14x14: Winograd for all three primitives; 16 channels: direct
  // forward and backward data, Winograd backward weights (where oneDNN has the kernels).
  struct W {
    std::int64_t n, c, o, h, w;
    bool fwd, bwd_data, bwd_weights;
  };
  const W cases[] = {{16, 32, 32, 14, 14, true, true, true},
                     {17, 32, 48, 16, 15, true, true, true},  // odd batch, sizes, channels
                     {16, 16, 16, 14, 14, false, false, true}};
  Generator gen(13);
  for (const W& c : cases) {
    Conv2dGeometry g{c.n, c.c, c.h, c.w, c.o, 3, 3, 1, 1, 1, 1, 1, 1, 1, c.h, c.w};
    const Conv2dAlgorithms algs = conv2d_cpu_algorithms(g);
    REQUIRE(algs.forward == c.fwd);
    REQUIRE(algs.backward_data == c.bwd_data);
    REQUIRE(algs.backward_weights == c.bwd_weights);
    Tensor x = randn({c.n, c.c, c.h, c.w}, gen).set_requires_grad();
    Tensor w = (randn({c.o, c.c, 3, 3}, gen) * 0.2).detach().set_requires_grad();
    Tensor b = randn({c.o}, gen).set_requires_grad();
    Tensor x64 = x.detach().to(DType::Float64).set_requires_grad();
    Tensor w64 = w.detach().to(DType::Float64).set_requires_grad();
    Tensor b64 = b.detach().to(DType::Float64).set_requires_grad();
    Tensor gy = randn({c.n, c.o, c.h, c.w}, gen);
    Tensor y = conv2d(x, w, b, {1}, {1});
    Tensor y64 = conv2d(x64, w64, b64, {1}, {1});
    const std::string n = std::to_string(c.c) + "->" + std::to_string(c.o) + " channels";
    require_close(y, y64, n + " forward");
    y.backward(gy);
    y64.backward(gy.to(DType::Float64));
    require_close(x.grad(), x64.grad(), n + " grad input");
    require_close(w.grad(), w64.grad(), n + " grad weight");
    require_close(b.grad(), b64.grad(), n + " grad bias");
  }
  // Outside Winograd's reach: strided, dilated, grouped, 5x5, small batch.
  Conv2dGeometry g{16, 32, 14, 14, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 7, 7};
  REQUIRE_FALSE(conv2d_cpu_algorithms(g).backward_weights);
  g = {8, 32, 14, 14, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 14, 14};
  REQUIRE_FALSE(conv2d_cpu_algorithms(g).forward);
  g = {16, 32, 14, 14, 32, 5, 5, 1, 1, 2, 2, 1, 1, 1, 14, 14};
  REQUIRE_FALSE(conv2d_cpu_algorithms(g).forward);
  g = {16, 32, 14, 14, 32, 3, 3, 1, 1, 1, 1, 1, 1, 2, 14, 14};
  REQUIRE_FALSE(conv2d_cpu_algorithms(g).backward_weights);
}

TEST_CASE("conv2d options struct and no-grad mode", "[conv]") {
  Tensor x = fixture("odd_asym_x"), w = fixture("odd_asym_w"), b = fixture("odd_asym_b");
  Tensor y = conv2d(x, w, b, Conv2dOptions().stride({2, 1}).padding({1, 0}).dilation({1, 2}));
  require_close(y, fixture("odd_asym_y"), "options");
  NoGradGuard no_grad;
  Tensor wg = w.clone().set_requires_grad();
  Tensor y2 = conv2d(x, wg, b, {2, 1}, {1, 0}, {1, 2});
  REQUIRE_FALSE(y2.requires_grad());
  require_close(y2, fixture("odd_asym_y"), "inference");
}

TEST_CASE("conv2d argument errors", "[conv][errors]") {
  Tensor x = zeros({2, 4, 8, 8});
  Tensor w = zeros({6, 4, 3, 3});
  // Channel mismatch.
  REQUIRE_THROWS_AS(conv2d(x, zeros({6, 3, 3, 3})), ShapeError);
  REQUIRE_THROWS_WITH(conv2d(x, zeros({6, 3, 3, 3})), Catch::Contains("conv2d") &&
                                                          Catch::Contains("[2, 4, 8, 8]") &&
                                                          Catch::Contains("[6, 3, 3, 3]"));
  // Groups that do not divide the channels.
  REQUIRE_THROWS_AS(conv2d(x, zeros({6, 1, 3, 3}), Tensor(), {1}, {0}, {1}, 3), ValueError);
  REQUIRE_THROWS_WITH(conv2d(x, zeros({6, 1, 3, 3}), Tensor(), {1}, {0}, {1}, 3),
                      Catch::Contains("conv2d") && Catch::Contains("groups"));
  REQUIRE_THROWS_AS(conv2d(x, zeros({5, 2, 3, 3}), Tensor(), {1}, {0}, {1}, 2), ValueError);
  REQUIRE_THROWS_AS(conv2d(x, w, Tensor(), {1}, {0}, {1}, 0), ValueError);
  // Wrong ranks.
  REQUIRE_THROWS_AS(conv2d(zeros({4, 8, 8}), w), ShapeError);
  REQUIRE_THROWS_WITH(conv2d(zeros({4, 8, 8}), w),
                      Catch::Contains("conv2d") && Catch::Contains("4-D"));
  REQUIRE_THROWS_AS(conv2d(x, zeros({6, 4, 3})), ShapeError);
  // Output size <= 0.
  REQUIRE_THROWS_AS(conv2d(x, zeros({6, 4, 9, 9})), ShapeError);
  REQUIRE_THROWS_WITH(conv2d(x, zeros({6, 4, 3, 3}), Tensor(), {1}, {0}, {5}),
                      Catch::Contains("conv2d") && Catch::Contains("output size"));
  // Dtypes.
  REQUIRE_THROWS_AS(conv2d(x, w.to(DType::Float64)), DTypeError);
  REQUIRE_THROWS_WITH(conv2d(x, w.to(DType::Float64)), Catch::Contains("conv2d"));
  REQUIRE_THROWS_AS(conv2d(x.to(DType::Int32), w.to(DType::Int32)), DTypeError);
  REQUIRE_THROWS_AS(conv2d(x, w, zeros({6}, TensorOptions().dtype(DType::Float64))), DTypeError);
  // Bias shape, bad parameters, undefined input.
  REQUIRE_THROWS_AS(conv2d(x, w, zeros({5})), ShapeError);
  REQUIRE_THROWS_AS(conv2d(x, w, Tensor(), {0}), ValueError);
  REQUIRE_THROWS_AS(conv2d(x, w, Tensor(), {1}, {-1}), ValueError);
  REQUIRE_THROWS_AS(conv2d(x, w, Tensor(), {1, 1, 1}), ValueError);
  REQUIRE_THROWS_AS(conv2d(Tensor(), w), ValueError);
}

TEST_CASE("conv2d with an empty batch", "[conv]") {
  Tensor x = zeros({0, 3, 5, 5}).set_requires_grad();
  Tensor w = ones({2, 3, 3, 3}).set_requires_grad();
  Tensor b = ones({2}).set_requires_grad();
  Tensor y = conv2d(x, w, b, {1}, {1});
  REQUIRE(y.shape() == Shape{0, 2, 5, 5});
  sum(y).backward();
  REQUIRE(w.grad().shape() == w.shape());
  REQUIRE(sum(abs(w.grad())).item<double>() == 0.0);
  REQUIRE(sum(abs(b.grad())).item<double>() == 0.0);
}
