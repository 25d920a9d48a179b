// Tensor::retain_grad() and the functional autograd::grad(), checked against what PyTorch 1.13
// does for the same graphs (values from torch.autograd.grad / .backward() in the comments):
// interior gradients kept across backward passes by accumulation, retain_grad no-op on leaves
// and its error on tensors without grad, autograd::grad of leaves and interior tensors (an
// AIMET-like scale/offset computed from min/max) without touching .grad, several outputs with
// grad_outputs, pruning of the graph below the inputs, allow_unused, and the errors.
#include <catch2/catch.hpp>

#include "tensor_testing.h"

using namespace qgrad;

namespace {

Tensor f64(std::vector<double> v, bool requires_grad = false) {
  return from_vector(v, {-1}, TensorOptions().dtype(kFloat64).requires_grad(requires_grad));
}

std::vector<double> values(const Tensor& t) {
  return t.to_vector<double>();
}

}  // namespace

TEST_CASE("retain_grad keeps an interior gradient and accumulates it", "[core][autograd]") {
  // x = [1, 2]; y = 3x; z = sum(y*y): dz/dy = 2y = [6, 12], dz/dx = 18x.
  Tensor x = f64({1, 2}, true);
  Tensor y = mul(x, 3.0);
  CHECK_FALSE(y.retains_grad());
  y.retain_grad();
  y.retain_grad();  // twice is the same as once
  CHECK(y.retains_grad());
  Tensor z = sum(mul(y, y));
  z.backward(Tensor(), /*retain_graph=*/true);
  CHECK(values(y.grad()) == std::vector<double>{6, 12});
  CHECK(values(x.grad()) == std::vector<double>{18, 36});
  z.backward();  // torch: y.grad = [12, 24]
  CHECK(values(y.grad()) == std::vector<double>{12, 24});
  CHECK(values(x.grad()) == std::vector<double>{36, 72});
  CHECK(y.grad().dtype() == kFloat64);
  CHECK(y.grad().shape() == y.shape());
}

TEST_CASE("retain_grad: the sum over every use, roots, leaves and errors", "[core][autograd]") {
  Tensor a = f64({1, 2}, true);
  // y used twice: torch gives y.grad = [5, 5].
  Tensor y = mul(a, 1.0);
  y.retain_grad();
  add(sum(mul(y, 2.0)), sum(mul(y, 3.0))).backward();
  CHECK(values(y.grad()) == std::vector<double>{5, 5});
  // The root itself: its gradient is the seed (torch: o.grad = 1).
  Tensor o = sum(mul(a, 2.0));
  o.retain_grad();
  o.backward();
  CHECK(o.grad().dim() == 0);
  CHECK(o.grad().item<double>() == 1.0);
  // An interior tensor without retain_grad keeps no gradient.
  Tensor w = mul(a, 2.0);
  sum(w).backward();
  CHECK_FALSE(w.grad().defined());
  // Leaves: a no-op (torch: leaf.retains_grad is False).
  a.retain_grad();
  CHECK_FALSE(a.retains_grad());
  // The retained gradient is a copy: changing it leaves the leaf's alone.
  Tensor b = f64({1, 1}, true);
  Tensor c = mul(b, 1.0);
  c.retain_grad();
  sum(c).backward();
  c.grad().fill_(7.0);
  CHECK(values(b.grad()) == std::vector<double>{1, 1});
  // A tensor that does not require grad: torch's message.
  CHECK_THROWS_AS(f64({1}).retain_grad(), AutogradError);
  CHECK_THROWS_WITH(
      f64({1}).retain_grad(),
      Catch::Contains("retain_grad") &&
          Catch::Contains("can't retain_grad on Tensor that has requires_grad=False"));
  CHECK_THROWS_AS(Tensor().retain_grad(), ValueError);
  // A retained tensor that died before backward is skipped.
  Tensor d = f64({1, 2}, true);
  Tensor loss;
  {
    Tensor tmp = mul(d, 2.0);
    tmp.retain_grad();
    loss = sum(mul(tmp, tmp));
  }
  loss.backward();
  CHECK(values(d.grad()) == std::vector<double>{8, 16});
}

TEST_CASE("autograd::grad of leaves and interior tensors, .grad untouched", "[core][autograd]") {
  // torch: x = [1, 2]; y = 3x; z = sum(y*y); grad(z, [x]) = [18, 36], x.grad None.
  Tensor x = f64({1, 2}, true);
  Tensor y = mul(x, 3.0);
  Tensor z = sum(mul(y, y));
  TensorList g = autograd::grad({z}, {x}, {}, /*retain_graph=*/true);
  REQUIRE(g.size() == 1);
  CHECK(values(g[0]) == std::vector<double>{18, 36});
  CHECK_FALSE(x.grad().defined());
  // An interior input and a leaf together, and the same input twice.
  g = autograd::grad({z}, {y, x, y}, {}, true);
  CHECK(values(g[0]) == std::vector<double>{6, 12});
  CHECK(values(g[1]) == std::vector<double>{18, 36});
  CHECK(values(g[2]) == std::vector<double>{6, 12});
  CHECK_FALSE(x.grad().defined());
  CHECK_FALSE(y.grad().defined());  // not retained
  // Two interior tensors on one chain (torch: y = 2a; w = 3y; grad(sum(w*w), [y, w]) =
  // [36, 72], [12, 24]).
  Tensor a = f64({1, 2}, true);
  Tensor y2 = mul(a, 2.0);
  Tensor w = mul(y2, 3.0);
  g = autograd::grad({sum(mul(w, w))}, {y2, w});
  CHECK(values(g[0]) == std::vector<double>{36, 72});
  CHECK(values(g[1]) == std::vector<double>{12, 24});
  // An output as its own input: the seed (torch: grad(o, [o]) = 1).
  Tensor o = sum(mul(a, 2.0));
  g = autograd::grad({o}, {o});
  CHECK(g[0].dim() == 0);
  CHECK(g[0].item<double>() == 1.0);
  CHECK_FALSE(a.grad().defined());
}

TEST_CASE("autograd::grad: AIMET-like scale and offset from min/max", "[core][autograd]") {
  // scale = (max - min) / 255, offset = min / scale; loss = sum(x * scale + offset), with
  // min = -1, max = 3, x = [0.5, 1.5, -2]. torch.autograd.grad(loss, [scale, offset, min, max])
  // = 12192.1875, 3, 143.4375, 47.8125 (the scale's gradient includes the path through offset).
  Tensor mn = f64({-1.0}, true);
  Tensor mx = f64({3.0}, true);
  Tensor x = f64({0.5, 1.5, -2.0});
  Tensor scale = div(sub(mx, mn), 255.0);
  Tensor offset = div(mn, scale);
  Tensor loss = sum(add(mul(x, scale), offset));
  TensorList g = autograd::grad({loss}, {scale, offset, mn, mx}, {}, true);
  CHECK(g[0].item<double>() == Approx(12192.1875));
  CHECK(g[1].item<double>() == Approx(3.0));
  CHECK(g[2].item<double>() == Approx(143.4375));
  CHECK(g[3].item<double>() == Approx(47.8125));
  CHECK_FALSE(mn.grad().defined());
  CHECK_FALSE(mx.grad().defined());
  // The same gradients through backward() with retain_grad.
  scale.retain_grad();
  offset.retain_grad();
  loss.backward();
  CHECK(scale.grad().item<double>() == Approx(g[0].item<double>()));
  CHECK(offset.grad().item<double>() == Approx(g[1].item<double>()));
  CHECK(mn.grad().item<double>() == Approx(g[2].item<double>()));
}

TEST_CASE("autograd::grad: several outputs with grad_outputs, retained tensors on the path",
          "[core][autograd]") {
  // torch: grad([2a, a*a], [a], [ones, [1, 10]]) = [4, 42] for a = [1, 2].
  Tensor a = f64({1, 2}, true);
  TensorList g = autograd::grad({mul(a, 2.0), mul(a, a)}, {a},
                                {ones({2}, TensorOptions().dtype(kFloat64)), f64({1, 10})});
  CHECK(values(g[0]) == std::vector<double>{4, 42});
  // An undefined grad_output of a one-element output is 1.
  g = autograd::grad({sum(mul(a, a)), mul(a, 2.0)}, {a}, {Tensor(), f64({1, 1})});
  CHECK(values(g[0]) == std::vector<double>{4, 6});
  // A retained interior tensor above the inputs gets its .grad (torch: y.grad = [4, 8]) ...
  Tensor y = mul(a, 2.0);
  y.retain_grad();
  autograd::grad({sum(mul(y, y))}, {a});
  CHECK(values(y.grad()) == std::vector<double>{4, 8});
  // ... but not when it is itself the input and nothing below it is needed (its grad_fn does
  // not run; torch: y.grad None).
  Tensor y3 = mul(a, 2.0);
  y3.retain_grad();
  g = autograd::grad({sum(mul(y3, y3))}, {y3});
  CHECK(values(g[0]) == std::vector<double>{4, 8});
  CHECK_FALSE(y3.grad().defined());
  CHECK_FALSE(a.grad().defined());
}

TEST_CASE("autograd::grad runs only the graph above its inputs", "[core][autograd]") {
  // A branch leading only to another leaf must not run: its backward rule would throw.
  Tensor a = f64({1, 2}, true);
  Tensor b = f64({3, 4}, true);
  Tensor bad = b.detach().clone();
  Tensor yb = mul(b, 1.0);
  record("ThrowingBackward", {b}, {&bad},
         [](const TensorList&) -> TensorList { throw AutogradError("must not run"); });
  Tensor loss = add(sum(mul(a, a)), sum(add(bad, yb)));
  TensorList g = autograd::grad({loss}, {a}, {}, true);
  CHECK(values(g[0]) == std::vector<double>{2, 4});
  CHECK_THROWS_WITH(autograd::grad({loss}, {b}, {}, true), Catch::Contains("must not run"));
  CHECK_FALSE(a.grad().defined());
  CHECK_FALSE(b.grad().defined());
}

TEST_CASE("autograd::grad: unused inputs, freed graphs and bad arguments", "[core][autograd]") {
  Tensor a = f64({1}, true);
  Tensor b = f64({2}, true);
  Tensor unused_interior = mul(a, 5.0);
  // torch: "One of the differentiated Tensors appears to not have been used in the graph".
  CHECK_THROWS_AS(autograd::grad({sum(mul(a, 2.0))}, {a, b}), AutogradError);
  CHECK_THROWS_WITH(autograd::grad({sum(mul(a, 2.0))}, {a, b}),
                    Catch::Contains("autograd::grad") && Catch::Contains("input 1") &&
                        Catch::Contains("not have been used in the graph") &&
                        Catch::Contains("allow_unused"));
  CHECK_THROWS_AS(autograd::grad({sum(mul(a, 2.0))}, {unused_interior}), AutogradError);
  TensorList g = autograd::grad({sum(mul(a, 2.0))}, {a, b, unused_interior}, {}, {}, false, true);
  CHECK(values(g[0]) == std::vector<double>{2});
  CHECK_FALSE(g[1].defined());
  CHECK_FALSE(g[2].defined());
  // An input that does not require grad (torch: "does not require grad").
  CHECK_THROWS_WITH(autograd::grad({sum(mul(a, 2.0))}, {f64({1})}),
                    Catch::Contains("input 0") && Catch::Contains("does not require grad"));
  // An output that does not require grad.
  CHECK_THROWS_WITH(autograd::grad({sum(f64({1}))}, {a}),
                    Catch::Contains("element 0 of the outputs does not require grad"));
  // Implicit gradients only for one-element outputs; shapes must match.
  Tensor v = mul(f64({1, 2}, true), 2.0);
  CHECK_THROWS_WITH(autograd::grad({v}, {v}),
                    Catch::Contains("implicitly created only for scalar outputs"));
  CHECK_THROWS_AS(autograd::grad({v}, {v}, {f64({1, 2, 3})}), ShapeError);
  CHECK_THROWS_AS(autograd::grad({v}, {v}, {f64({1}), f64({1})}), ValueError);
  CHECK_THROWS_AS(autograd::grad({}, {a}), ValueError);
  CHECK_THROWS_AS(autograd::grad({sum(a)}, {}), ValueError);
  CHECK_THROWS_AS(autograd::grad({sum(a)}, {Tensor()}), ValueError);
  // create_graph is not supported (no double backward): a clear error, nothing run.
  Tensor o = sum(mul(a, a));
  CHECK_THROWS_AS(autograd::grad({o}, {a}, {}, {}, /*create_graph=*/true), AutogradError);
  CHECK_THROWS_WITH(autograd::grad({o}, {a}, {}, {}, true),
                    Catch::Contains("create_graph") && Catch::Contains("not supported"));
  // Without retain_graph, a second pass through the same graph fails as backward() does.
  autograd::grad({o}, {a});
  CHECK_THROWS_WITH(autograd::grad({o}, {a}),
                    Catch::Contains("backward through the graph a second time"));
}
