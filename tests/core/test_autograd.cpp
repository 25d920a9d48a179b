// The autograd engine: gradient accumulation, diamonds, explicit output gradients, broadcasting
// reductions, requires_grad propagation, grad mode guards, detach, freed graphs and
// retain_graph, in-place modification of saved tensors, custom ops recorded with record()
// (multiple outputs, wrong shapes, dtype conversion), very deep chains (backward and
// destruction without stack overflow), and gradcheck catching a wrong backward rule.
#include <catch2/catch.hpp>

#include <thread>

#include "tensor_testing.h"

using namespace qgrad;
using qgrad::testing::check_gradients;
using qgrad::testing::leaf;

namespace {

std::vector<double> values(const Tensor& t) {
  return t.to_vector<double>();
}

Tensor f64(std::vector<double> v, const Shape& shape = {-1}) {
  return from_vector(v, shape, TensorOptions().dtype(kFloat64));
}

// y = x * x computed without autograd, with a hand-written backward rule `dy/dx = k * x`
// (k = 2 is right, anything else is a deliberately wrong rule).
Tensor custom_square(const Tensor& x, double k) {
  Tensor y;
  {
    NoGradGuard ng;
    y = mul(x, x);
  }
  SavedTensor sx(x);
  record("CustomSquareBackward", {x}, {&y},
         [sx, k](const TensorList& g) { return TensorList{mul(mul(g[0], sx.get()), k)}; });
  return y;
}

}  // namespace

TEST_CASE("leaf gradients accumulate across backward calls", "[core][autograd]") {
  Tensor x = f64({1, 2, 3}).set_requires_grad(true);
  sum(mul(x, 3.0)).backward();
  CHECK(values(x.grad()) == std::vector<double>{3, 3, 3});
  sum(mul(x, x)).backward();
  CHECK(values(x.grad()) == std::vector<double>{5, 7, 9});
  CHECK(x.grad().shape() == x.shape());
  CHECK(x.grad().dtype() == kFloat64);
  CHECK_FALSE(x.grad().requires_grad());
  x.set_grad(Tensor());
  CHECK_FALSE(x.grad().defined());
  sum(x).backward();
  CHECK(values(x.grad()) == std::vector<double>{1, 1, 1});
  // A leaf can be the root itself.
  Tensor s = scalar_tensor(2.0, TensorOptions().dtype(kFloat64).requires_grad());
  s.backward();
  CHECK(s.grad().item<double>() == 1.0);
}

TEST_CASE("diamond graphs sum the gradients of every path", "[core][autograd]") {
  Tensor x = f64({1.5, -2}).set_requires_grad(true);
  // y = x*x + x: dy/dx = 2x + 1
  sum(add(mul(x, x), x)).backward();
  CHECK(values(x.grad()) == std::vector<double>{4, -3});

  Tensor w = f64({0.5, 3}).set_requires_grad(true);
  Tensor a = mul(w, 2.0), b = mul(w, 3.0);
  sum(mul(a, b)).backward();  // 6 w^2 -> 12 w
  CHECK(values(w.grad()) == std::vector<double>{6, 36});

  // The same leaf reached through two overlapping views.
  Tensor v = f64({1, 2, 3, 4}).set_requires_grad(true);
  Tensor lo = v.slice(0, 0, 3), hi = v.slice(0, 1, 4);
  sum(add(lo, mul(hi, 10.0))).backward();
  CHECK(values(v.grad()) == std::vector<double>{1, 11, 11, 10});

  // Only the part of the graph below the root runs.
  Tensor u = f64({1, 1}).set_requires_grad(true);
  Tensor used = mul(u, 2.0);
  Tensor unused = mul(u, 5.0);
  sum(used).backward();
  CHECK(values(u.grad()) == std::vector<double>{2, 2});
  CHECK(unused.requires_grad());
}

TEST_CASE("backward with an explicit gradient for non-scalar outputs", "[core][autograd]") {
  Tensor x = leaf({2, 3});
  Tensor y = mul(x, 2.0);
  Tensor g = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  y.backward(g);
  CHECK(values(x.grad()) == std::vector<double>{2, 4, 6, 8, 10, 12});
  // .grad does not alias the caller's gradient tensor.
  Tensor z = leaf({2, 3}, 5);
  z.backward(g);
  g.fill_(0.0);
  CHECK(values(z.grad()) == std::vector<double>{1, 2, 3, 4, 5, 6});

  Tensor y2 = mul(leaf({2, 3}), 2.0);
  CHECK_THROWS_AS(y2.backward(), AutogradError);
  CHECK_THROWS_WITH(y2.backward(), Catch::Contains("backward") && Catch::Contains("scalar") &&
                                       Catch::Contains("[2, 3]"));
  CHECK_THROWS_AS(y2.backward(zeros({3, 2}, TensorOptions().dtype(kFloat64))), ShapeError);
  // A one-element non-0-d output may omit the gradient.
  Tensor one = leaf({1, 1});
  mul(one, 4.0).backward();
  CHECK(one.grad().item<double>() == 4.0);
  // A float32 gradient for a float64 output is converted, not propagated as float32.
  Tensor x3 = leaf({2});
  mul(x3, 1.0).backward(ones({2}));
  CHECK(x3.grad().dtype() == kFloat64);
}

TEST_CASE(".grad never aliases a gradient that other tensors can see", "[core][autograd]") {
  // add() hands the same gradient tensor to both inputs: each leaf needs its own buffer.
  Tensor a = leaf({4}, 1), b = leaf({4}, 2);
  add(a, b).backward(f64({1, 2, 3, 4}));
  REQUIRE(a.grad().defined());
  REQUIRE(b.grad().defined());
  CHECK(a.grad().impl()->storage != b.grad().impl()->storage);
  a.grad().fill_(0.0);  // e.g. an optimiser zeroing in place
  CHECK(values(b.grad()) == std::vector<double>{1, 2, 3, 4});
  // A gradient that arrives as a view (here: of a broadcast) is packed into its own buffer.
  Tensor c = leaf({1, 3}, 3);
  Tensor d = leaf({2, 3}, 4);
  sum(add(c, d)).backward();
  CHECK(c.grad().is_contiguous());
  CHECK(values(c.grad()) == std::vector<double>{2, 2, 2});
  CHECK(c.grad().impl()->storage != d.grad().impl()->storage);
  // Accumulation never writes into the first .grad in place (it may be shared by the caller).
  Tensor e = leaf({2}, 5);
  Tensor g = f64({1, 1});
  e.backward(g);
  Tensor first = e.grad();
  e.backward(g);
  CHECK(values(first) == std::vector<double>{1, 1});
  CHECK(values(e.grad()) == std::vector<double>{2, 2});
}

TEST_CASE("backward on tensors without a graph throws", "[core][autograd]") {
  Tensor plain = ones({2});
  CHECK_THROWS_AS(sum(plain).backward(), AutogradError);
  CHECK_THROWS_WITH(sum(plain).backward(), Catch::Contains("does not require grad"));
  Tensor undefined;
  CHECK_THROWS_AS(undefined.backward(), ValueError);
}

TEST_CASE("requires_grad propagation, is_leaf and grad_fn", "[core][autograd]") {
  Tensor a = leaf({3});
  Tensor b = ones({3}, TensorOptions().dtype(kFloat64));
  Tensor ab = mul(a, b);
  CHECK(ab.requires_grad());
  CHECK_FALSE(ab.is_leaf());
  REQUIRE(ab.grad_fn());
  CHECK(ab.grad_fn()->name() == "MulBackward");
  CHECK(ab.output_nr() == 0);
  CHECK_FALSE(mul(b, b).requires_grad());
  CHECK(mul(b, b).is_leaf());
  CHECK(a.is_leaf());
  CHECK(a.grad_fn() == nullptr);
  // Comparisons produce uint8 tensors, which never require grad.
  Tensor cmp = gt(a, b);
  CHECK(cmp.dtype() == kUInt8);
  CHECK_FALSE(cmp.requires_grad());
  // Leaves: requires_grad can be switched; integer tensors cannot require grad.
  Tensor c = zeros({2}, TensorOptions().dtype(kFloat64));
  c.set_requires_grad(true);
  CHECK(c.requires_grad());
  c.set_requires_grad(false);
  CHECK_FALSE(c.requires_grad());
  CHECK_THROWS_AS(zeros({2}, TensorOptions().dtype(kInt64)).set_requires_grad(true), DTypeError);
  CHECK_NOTHROW(zeros({2}, TensorOptions().dtype(kInt64)).set_requires_grad(false));
  CHECK_THROWS_AS(ab.set_requires_grad(false), AutogradError);
  CHECK_THROWS_WITH(ab.set_requires_grad(true),
                    Catch::Contains("set_requires_grad") && Catch::Contains("leaf"));
  // The gradient of a leaf must match it.
  CHECK_THROWS_AS(a.set_grad(zeros({4}, TensorOptions().dtype(kFloat64))), ShapeError);
  // Another dtype is accepted here (optimisers check it when they step, see nn/optim).
  CHECK_NOTHROW(a.set_grad(zeros({3})));
  a.set_grad(full({3}, 2.0, TensorOptions().dtype(kFloat64)));
  CHECK(values(a.grad()) == std::vector<double>{2, 2, 2});
}

TEST_CASE("NoGradGuard and EnableGradGuard", "[core][autograd]") {
  Tensor a = leaf({3});
  CHECK(GradMode::is_enabled());
  {
    NoGradGuard ng;
    CHECK_FALSE(GradMode::is_enabled());
    Tensor y = mul(a, 2.0);
    CHECK_FALSE(y.requires_grad());
    CHECK(y.grad_fn() == nullptr);
    CHECK_FALSE(a.view({3, 1}).requires_grad());
    {
      NoGradGuard nested;
      CHECK_FALSE(GradMode::is_enabled());
      {
        EnableGradGuard eg;
        CHECK(GradMode::is_enabled());
        CHECK(mul(a, 2.0).requires_grad());
      }
      CHECK_FALSE(GradMode::is_enabled());
    }
    CHECK_FALSE(GradMode::is_enabled());
    // requires_grad of the leaf itself is unaffected.
    CHECK(a.requires_grad());
  }
  CHECK(GradMode::is_enabled());
  // Grad mode is per thread.
  bool other_thread_enabled = false;
  {
    NoGradGuard ng;
    std::thread t([&] { other_thread_enabled = GradMode::is_enabled(); });
    t.join();
  }
  CHECK(other_thread_enabled);
}

TEST_CASE("detach shares storage and cuts the graph", "[core][autograd]") {
  Tensor x = leaf({2, 2});
  Tensor y = mul(x, 3.0);
  Tensor d = y.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_leaf());
  CHECK(d.impl()->storage == y.impl()->storage);
  CHECK(d.shape() == y.shape());
  d.fill_(1.0);
  CHECK(values(y) == std::vector<double>{1, 1, 1, 1});
  // A graph through the detached tensor does not reach x.
  Tensor z = mul(d, x);
  sum(z).backward();
  CHECK(values(x.grad()) == std::vector<double>{1, 1, 1, 1});
  Tensor dv = x.t().detach();
  CHECK(dv.strides() == x.t().strides());
}

TEST_CASE("broadcast inputs get gradients reduced to their own shape", "[core][autograd]") {
  Tensor a = f64({1, 2, 3}, {3, 1}).set_requires_grad(true);
  Tensor b = f64({10, 20, 30, 40}, {4}).set_requires_grad(true);
  Tensor s = scalar_tensor(2.0, TensorOptions().dtype(kFloat64).requires_grad());
  Tensor y = mul(mul(a, b), s);  // [3, 4]
  CHECK(y.shape() == Shape{3, 4});
  sum(y).backward();
  CHECK(a.grad().shape() == Shape{3, 1});
  CHECK(values(a.grad()) == std::vector<double>{200, 200, 200});
  CHECK(b.grad().shape() == Shape{4});
  CHECK(values(b.grad()) == std::vector<double>{12, 12, 12, 12});
  CHECK(s.grad().shape() == Shape{});
  CHECK(s.grad().item<double>() == Approx(6 * 100));
  check_gradients([](const std::vector<Tensor>& in) { return add(mul(in[0], in[1]), in[2]); },
                  {leaf({3, 1}, 1), leaf({1, 4}, 2), leaf({4}, 3)});
  // expand is differentiable the same way.
  Tensor e = f64({1, 2}, {2, 1}).set_requires_grad(true);
  sum(e.expand({3, 2, 5})).backward();
  CHECK(values(e.grad()) == std::vector<double>{15, 15});
}

TEST_CASE("a second backward through a freed graph throws; retain_graph allows it",
          "[core][autograd]") {
  Tensor x = f64({1, 2}).set_requires_grad(true);
  Tensor y = sum(mul(x, x));
  y.backward();
  CHECK(values(x.grad()) == std::vector<double>{2, 4});
  CHECK_THROWS_AS(y.backward(), AutogradError);
  CHECK_THROWS_WITH(y.backward(),
                    Catch::Contains("retain_graph") && Catch::Contains("second time"));

  Tensor x2 = f64({1, 2}).set_requires_grad(true);
  Tensor y2 = sum(mul(x2, x2));
  y2.backward(Tensor(), /*retain_graph=*/true);
  y2.backward(Tensor(), true);
  CHECK(values(x2.grad()) == std::vector<double>{4, 8});
  y2.backward();  // the last one may free the graph
  CHECK(values(x2.grad()) == std::vector<double>{6, 12});
  CHECK_THROWS_AS(y2.backward(), AutogradError);
}

TEST_CASE("in-place modification of a saved tensor makes backward throw", "[core][autograd]") {
  SECTION("fill_ on a saved input") {
    Tensor x = leaf({3});
    Tensor w = f64({1, 2, 3});
    Tensor y = sum(mul(x, w));  // saves w for x's gradient
    w.fill_(0.0);
    CHECK_THROWS_WITH(y.backward(), Catch::Contains("modified by an in-place operation"));
    // The failed pass already freed the nodes it ran: a retry fails as well.
    CHECK_THROWS_AS(y.backward(), AutogradError);
  }
  SECTION("copy_ into a view of a saved input") {
    Tensor x = leaf({2, 2});
    Tensor w = f64({1, 2, 3, 4}, {2, 2});
    Tensor y = sum(mul(x, w));
    w.select(0, 1).copy_(f64({7, 7}));
    CHECK_THROWS_AS(y.backward(), AutogradError);
  }
  SECTION("custom op saving its input") {
    Tensor x = f64({1, 2}).set_requires_grad(true);
    Tensor base = mul(x, 1.0);
    Tensor y = sum(custom_square(base, 2.0));
    NoGradGuard ng;  // in-place writes happen under no_grad in training code
    base.fill_(5.0);
    CHECK_THROWS_AS(y.backward(), AutogradError);
  }
  SECTION("an unmodified graph still works") {
    Tensor x = leaf({3});
    Tensor w = f64({1, 2, 3});
    Tensor y = sum(mul(x, w));
    Tensor other = f64({4, 5, 6});
    other.fill_(0.0);
    y.backward();
    CHECK(values(x.grad()) == std::vector<double>{1, 2, 3});
  }
}

TEST_CASE("custom ops via record(): multiple outputs, shape checks, dtype conversion",
          "[core][autograd]") {
  SECTION("multiple outputs, only some used") {
    Tensor x = f64({1, 2, 3}).set_requires_grad(true);
    Tensor y0, y1;
    {
      NoGradGuard ng;
      y0 = mul(x, 2.0);
      y1 = mul(x, 3.0);
    }
    record("TwoOutBackward", {x}, {&y0, &y1}, [](const TensorList& g) {
      // Unused outputs arrive as undefined gradients.
      Tensor gx = zeros({3}, TensorOptions().dtype(kFloat64));
      if (g[0].defined()) gx = add(gx, mul(g[0], 2.0));
      if (g[1].defined()) gx = add(gx, mul(g[1], 3.0));
      return TensorList{gx};
    });
    CHECK(y0.grad_fn() == y1.grad_fn());
    CHECK(y0.output_nr() == 0);
    CHECK(y1.output_nr() == 1);
    sum(y1).backward(Tensor(), true);
    CHECK(values(x.grad()) == std::vector<double>{3, 3, 3});
    x.set_grad(Tensor());
    sum(add(y0, y1)).backward();
    CHECK(values(x.grad()) == std::vector<double>{5, 5, 5});
  }
  SECTION("a backward rule returning the wrong shape is reported with the node name") {
    Tensor x = leaf({3});
    Tensor y;
    {
      NoGradGuard ng;
      y = mul(x, 1.0);
    }
    record("BadShapeBackward", {x}, {&y}, [](const TensorList&) {
      return TensorList{zeros({4}, TensorOptions().dtype(kFloat64))};
    });
    CHECK_THROWS_AS(sum(y).backward(Tensor(), true), AutogradError);
    CHECK_THROWS_WITH(sum(y).backward(), Catch::Contains("BadShapeBackward") &&
                                             Catch::Contains("[4]") && Catch::Contains("[3]"));
    Tensor y2;
    {
      NoGradGuard ng;
      y2 = mul(x, 1.0);
    }
    record("BadCountBackward", {x}, {&y2}, [](const TensorList& g) {
      return TensorList{g[0], g[0]};
    });
    CHECK_THROWS_WITH(sum(y2).backward(), Catch::Contains("BadCountBackward"));
  }
  SECTION("a gradient of another floating dtype is converted to the input's dtype") {
    Tensor x = ones({2}).set_requires_grad(true);  // float32
    Tensor y;
    {
      NoGradGuard ng;
      y = mul(x, 2.0);
    }
    record("PromotingBackward", {x}, {&y},
           [](const TensorList& g) { return TensorList{mul(g[0].to(kFloat64), 2.0)}; });
    sum(y).backward();
    CHECK(x.grad().dtype() == kFloat32);
    CHECK(values(x.grad()) == std::vector<double>{2, 2});
  }
  SECTION("an output that is one of the inputs is rejected") {
    Tensor x = leaf({2});
    Tensor same = x;
    CHECK_THROWS_AS(record("IdentityBackward", {x}, {&same}, [](const TensorList& g) { return g; }),
                    AutogradError);
    CHECK_THROWS_WITH(
        record("IdentityBackward", {x}, {&same}, [](const TensorList& g) { return g; }),
        Catch::Contains("IdentityBackward") && Catch::Contains("same tensor"));
    CHECK(x.is_leaf());
  }
  SECTION("record is a no-op without inputs requiring grad or in no-grad mode") {
    Tensor x = f64({1});
    Tensor y = mul(x, 2.0);
    record("Nothing", {x}, {&y}, [](const TensorList& g) { return g; });
    CHECK_FALSE(y.requires_grad());
    Tensor z = leaf({1});
    Tensor w = mul(z, 1.0).detach();
    {
      NoGradGuard ng;
      record("Nothing", {z}, {&w}, [](const TensorList& g) { return g; });
    }
    CHECK_FALSE(w.requires_grad());
  }
}

TEST_CASE("gradcheck detects a wrong backward rule and accepts a right one",
          "[core][autograd][gradcheck]") {
  Tensor x = leaf({2, 3});
  GradcheckResult good =
      gradcheck([](const std::vector<Tensor>& in) { return custom_square(in[0], 2.0); }, {x});
  INFO(good.message);
  CHECK(good.ok);
  GradcheckResult bad =
      gradcheck([](const std::vector<Tensor>& in) { return custom_square(in[0], 2.5); }, {x});
  CHECK_FALSE(bad.ok);
  CHECK_THAT(bad.message, Catch::Contains("analytic") && Catch::Contains("numeric") &&
                              Catch::Contains("input 0"));
  // A rule that forgets the gradient entirely (returns none) is caught too.
  auto no_grad_rule = [](const std::vector<Tensor>& in) {
    Tensor y;
    {
      NoGradGuard ng;
      y = mul(in[0], 3.0);
    }
    record("ForgetfulBackward", {in[0]}, {&y},
           [](const TensorList&) { return TensorList{Tensor()}; });
    return y;
  };
  CHECK_FALSE(gradcheck(no_grad_rule, {leaf({3})}).ok);
  // Only inputs that require grad are checked; others may be anything.
  Tensor c = from_vector(std::vector<double>{1, 2, 3}, {-1}, TensorOptions().dtype(kFloat64));
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return mul(in[0], in[1]); }, {leaf({3}), c})
            .ok);
  // Bad inputs.
  CHECK_THROWS_AS(gradcheck([](const std::vector<Tensor>& in) { return in[0]; },
                            {ones({2}).set_requires_grad(true)}),
                  DTypeError);
  Tensor nonleaf = mul(leaf({2}), 2.0);
  CHECK_THROWS_WITH(gradcheck([](const std::vector<Tensor>& in) { return in[0]; }, {nonleaf}),
                    Catch::Contains("gradcheck") && Catch::Contains("leaf"));
  GradcheckResult no_graph =
      gradcheck([](const std::vector<Tensor>& in) { return in[0].detach(); }, {leaf({2})});
  CHECK_FALSE(no_graph.ok);
}

TEST_CASE("a very deep chain backpropagates and is destroyed without stack overflow",
          "[core][autograd]") {
  constexpr int kDepth = 200000;
  Tensor x = scalar_tensor(1.0, TensorOptions().dtype(kFloat64).requires_grad());
  {
    Tensor y = x;
    for (int i = 0; i < kDepth; ++i) y = add(y, 1.0);
    CHECK(y.item<double>() == 1.0 + kDepth);
    y.backward(Tensor(), /*retain_graph=*/true);
    CHECK(x.grad().item<double>() == 1.0);
    y.backward();
    CHECK(x.grad().item<double>() == 2.0);
  }  // the whole chain is released here
  {
    // Never backpropagated: destruction alone must not recurse.
    Tensor y = x;
    for (int i = 0; i < kDepth / 2; ++i) y = mul(y, 1.0);
    CHECK(y.grad_fn() != nullptr);
  }
  {
    // A long chain of views.
    Tensor y = x.view({1});
    for (int i = 0; i < kDepth / 10; ++i) y = y.view({1}).unsqueeze(0).squeeze(0);
    sum(y).backward();
    CHECK(x.grad().item<double>() == 3.0);
  }
}

TEST_CASE("post-accumulate-grad hooks run after each accumulation into a leaf's grad") {
  Tensor w = from_vector<float>({1, 2}).set_requires_grad(true);
  std::vector<std::vector<float>> seen;
  const std::uint64_t id = w.register_post_accumulate_grad_hook(
      [&](const Tensor& leaf) { seen.push_back(leaf.grad().to_vector<float>()); });
  // w used twice in one graph: the engine sums both paths first, so the hook runs once.
  sum(w * 3.0 + w).backward();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == std::vector<float>{4, 4});
  sum(w).backward();  // accumulates: the hook sees the sum
  REQUIRE(seen.size() == 2);
  CHECK(seen[1] == std::vector<float>{5, 5});
  w.remove_post_accumulate_grad_hook(id);
  w.remove_post_accumulate_grad_hook(id);  // gone already: no-op
  sum(w).backward();
  CHECK(seen.size() == 2);
  // Interior tensors and tensors without grad have no accumulation to hook.
  Tensor interior = w * 2.0;
  CHECK_THROWS_AS(interior.register_post_accumulate_grad_hook([](const Tensor&) {}), AutogradError);
  CHECK_THROWS_AS(zeros({2}).register_post_accumulate_grad_hook([](const Tensor&) {}),
                  AutogradError);
}
