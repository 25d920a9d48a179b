// Tensor metadata and every view op (view, reshape, permute, transpose, t, squeeze, unsqueeze,
// narrow, slice, select, expand, flatten, contiguous) on odd shapes and non-contiguous inputs:
// values (read through strides, independent of the copy kernels), shapes, strides, storage
// sharing and write-through, plus float64 gradchecks of each view op and of clone / to(dtype).
#include <catch2/catch.hpp>

#include <functional>
#include <tuple>

#include "tensor_testing.h"

using namespace qgrad;
using qgrad::testing::at;
using qgrad::testing::check_gradients;
using qgrad::testing::for_each_index;
using qgrad::testing::iota;
using qgrad::testing::leaf;
using qgrad::testing::shares_storage;

TEST_CASE("tensor metadata of a contiguous tensor", "[core][views]") {
  Tensor x = zeros({2, 3, 5}, TensorOptions().dtype(kFloat64));
  CHECK(x.defined());
  CHECK(x.shape() == Shape{2, 3, 5});
  CHECK(x.strides() == Shape{15, 5, 1});
  CHECK(x.dim() == 3);
  CHECK(x.numel() == 30);
  CHECK(x.size(0) == 2);
  CHECK(x.size(-1) == 5);
  CHECK(x.stride(-2) == 5);
  CHECK(x.dtype() == kFloat64);
  CHECK(x.device() == kCPU);
  CHECK(x.storage_offset() == 0);
  CHECK(x.is_contiguous());
  CHECK(x.element_size() == 8);
  CHECK(x.is_leaf());
  CHECK_FALSE(x.requires_grad());
  CHECK_FALSE(x.grad().defined());
  CHECK(x.version() == 0);

  Tensor s = scalar_tensor(2.5);
  CHECK(s.dim() == 0);
  CHECK(s.numel() == 1);
  CHECK(s.shape().empty());
  CHECK(s.strides().empty());
  CHECK(s.is_contiguous());
  CHECK(s.item<double>() == 2.5);

  Tensor e = empty({4, 0, 3});
  CHECK(e.numel() == 0);
  CHECK(e.is_contiguous());
  CHECK(e.strides() == Shape{3, 3, 1});

  Tensor u;
  CHECK_FALSE(u.defined());
  CHECK_THROWS_AS(u.shape(), ValueError);
  CHECK_THROWS_WITH(u.numel(), Catch::Contains("undefined"));
}

TEST_CASE("view infers -1, shares storage and writes through", "[core][views]") {
  Tensor x = iota({2, 3, 4});
  Tensor v = x.view({4, -1});
  CHECK(v.shape() == Shape{4, 6});
  CHECK(v.strides() == Shape{6, 1});
  CHECK(shares_storage(v, x));
  CHECK(v.to_vector<double>() == x.to_vector<double>());
  v.select(0, 2).select(0, 5).fill_(-7.0);  // element 17 of x
  CHECK(at(x, {1, 1, 1}) == -7.0);
  CHECK(x.version() == v.version());
  CHECK(x.version() == 1);

  CHECK(x.view({-1}).shape() == Shape{24});
  CHECK(x.view({1, 24, 1}).strides() == Shape{24, 1, 1});
  CHECK(scalar_tensor(3.0).view({1, 1}).shape() == Shape{1, 1});
  CHECK(iota({1}).view({}).dim() == 0);
  CHECK(empty({0, 5}).view({5, 0, 3}).shape() == Shape{5, 0, 3});
  CHECK(empty({0, 5}).view({-1, 5}).shape() == Shape{0, 5});
  CHECK_THROWS_AS(empty({0, 5}).view({5, -1, 0}), ShapeError);  // -1 would be ambiguous
}

TEST_CASE("view and reshape with dims whose product overflows int64 throw ShapeError",
          "[core][views]") {
  Tensor x = iota({2, 3, 4});
  const std::int64_t big = std::int64_t{1} << 62;
  CHECK_THROWS_AS(x.view({big, 8, -1}), ShapeError);
  CHECK_THROWS_WITH(x.reshape({big, big, 0}), Catch::Contains("reshape"));
  CHECK_THROWS_AS(x.view({0, big, big}), ShapeError);
  CHECK_THROWS_AS(x.view({big, 4, 0, -1}), ShapeError);
}

TEST_CASE("view of non-contiguous inputs: compatible strides succeed, others throw",
          "[core][views]") {
  // permute gives shape [3, 2, 4], strides [4, 12, 1]: splitting the last dim is a view.
  Tensor x = iota({2, 3, 4});
  Tensor p = x.permute({1, 0, 2});
  Tensor v = p.view({3, 2, 2, 2});
  CHECK(v.strides() == Shape{4, 12, 2, 1});
  CHECK(shares_storage(v, x));
  for_each_index(v.shape(), [&](const Shape& i) {
    CHECK(at(v, i) == at(p, {i[0], i[1], i[2] * 2 + i[3]}));
  });
  // Merging dims 0 and 1 of p is impossible without a copy.
  CHECK_THROWS_AS(p.view({6, 4}), ShapeError);
  CHECK_THROWS_WITH(p.view({6, 4}), Catch::Contains("view") && Catch::Contains("[3, 2, 4]") &&
                                        Catch::Contains("reshape"));

  // Expanded (stride 0) dims can be split but not merged with real ones.
  Tensor e = iota({3, 1}).expand({3, 4});
  Tensor ev = e.view({3, 2, 2});
  CHECK(ev.strides() == Shape{1, 0, 0});
  CHECK_THROWS_AS(e.view({12}), ShapeError);

  // A step slice keeps its stride when viewed with extra unit dims.
  Tensor s = iota({10}).slice(0, 1, 10, 3);  // 1, 4, 7
  Tensor sv = s.view({1, 3, 1});
  CHECK(sv.strides()[1] == 3);
  CHECK(sv.to_vector<double>() == std::vector<double>{1, 4, 7});
}

TEST_CASE("reshape views when possible and copies non-contiguous inputs", "[core][views]") {
  Tensor x = iota({3, 5});
  Tensor r = x.reshape({5, 3});
  CHECK(shares_storage(r, x));

  Tensor xt = x.t();  // [5, 3], strides [1, 5]
  CHECK_FALSE(xt.is_contiguous());
  Tensor r2 = xt.reshape({15});
  CHECK_FALSE(shares_storage(r2, x));
  CHECK(r2.is_contiguous());
  std::vector<double> expected;
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 3; ++j) expected.push_back(static_cast<double>(j * 5 + i));
  CHECK(r2.to_vector<double>() == expected);
  // The copy is independent of the source.
  r2.fill_(0.0);
  CHECK(at(x, {1, 1}) == 6.0);

  CHECK(xt.reshape({-1, 5}).shape() == Shape{3, 5});
  CHECK_THROWS_AS(x.reshape({4, 4}), ShapeError);
  CHECK_THROWS_WITH(x.reshape({-1, -1}), Catch::Contains("reshape") && Catch::Contains("-1"));
  CHECK_THROWS_WITH(x.reshape({7, -1}), Catch::Contains("reshape") && Catch::Contains("[3, 5]") &&
                                            Catch::Contains("[7, -1]"));
}

TEST_CASE("permute, transpose and t on odd shapes", "[core][views]") {
  Tensor x = iota({2, 3, 5});
  Tensor p = x.permute({2, 0, 1});
  CHECK(p.shape() == Shape{5, 2, 3});
  CHECK(p.strides() == Shape{1, 15, 5});
  CHECK(shares_storage(p, x));
  CHECK_FALSE(p.is_contiguous());
  for_each_index(p.shape(), [&](const Shape& i) {
    CHECK(at(p, i) == static_cast<double>(i[1] * 15 + i[2] * 5 + i[0]));
  });
  // Negative dims, and writing through the permuted view.
  Tensor q = x.permute({-1, -3, -2});
  CHECK(q.shape() == Shape{5, 2, 3});
  q.select(0, 4).select(0, 1).select(0, 2).fill_(100.0);
  CHECK(at(x, {1, 2, 4}) == 100.0);

  Tensor tr = x.transpose(0, -1);
  CHECK(tr.shape() == Shape{5, 3, 2});
  CHECK(tr.strides() == Shape{1, 5, 15});
  CHECK(x.transpose(1, 1).strides() == x.strides());

  Tensor m = iota({3, 7});
  CHECK(m.t().shape() == Shape{7, 3});
  CHECK(m.t().strides() == Shape{1, 7});
  CHECK(at(m.t(), {6, 2}) == 20.0);
  Tensor v = iota({4});
  CHECK(v.t().is_same(v));
  CHECK(scalar_tensor(1.0).t().dim() == 0);
  // Transposing twice restores the original geometry.
  CHECK(m.t().t().strides() == m.strides());
}

TEST_CASE("squeeze and unsqueeze", "[core][views]") {
  Tensor x = iota({1, 3, 1, 5});
  Tensor s = x.squeeze();
  CHECK(s.shape() == Shape{3, 5});
  CHECK(shares_storage(s, x));
  CHECK(x.squeeze(0).shape() == Shape{3, 1, 5});
  CHECK(x.squeeze(-2).shape() == Shape{1, 3, 5});
  CHECK(x.squeeze(1).shape() == x.shape());  // not size 1: unchanged

  // Squeezing a non-contiguous tensor stays a view.
  Tensor nt = iota({5, 1, 3}).permute({2, 1, 0});  // [3, 1, 5]
  Tensor ns = nt.squeeze(1);
  CHECK(ns.shape() == Shape{3, 5});
  CHECK(ns.strides() == Shape{1, 3});
  CHECK(shares_storage(ns, nt));

  Tensor y = iota({3, 5});
  Tensor u0 = y.unsqueeze(0);
  CHECK(u0.shape() == Shape{1, 3, 5});
  CHECK(u0.strides() == Shape{15, 5, 1});
  Tensor u2 = y.unsqueeze(2);
  CHECK(u2.shape() == Shape{3, 5, 1});
  CHECK(u2.strides() == Shape{5, 1, 1});
  CHECK(y.unsqueeze(-1).shape() == Shape{3, 5, 1});
  CHECK(y.unsqueeze(-3).shape() == Shape{1, 3, 5});
  // On a transposed input the new dim gets a consistent stride.
  Tensor yt = y.t().unsqueeze(1);
  CHECK(yt.shape() == Shape{5, 1, 3});
  CHECK(yt.strides() == Shape{1, 15, 5});  // as PyTorch: size * stride of the next dim
  for_each_index(yt.shape(), [&](const Shape& i) { CHECK(at(yt, i) == at(y, {i[2], i[0]})); });
  CHECK(scalar_tensor(4.0).unsqueeze(0).shape() == Shape{1});
  CHECK(scalar_tensor(4.0).squeeze().dim() == 0);
  CHECK(scalar_tensor(4.0).squeeze(0).dim() == 0);
}

TEST_CASE("narrow, slice with step and select", "[core][views]") {
  Tensor x = iota({4, 7});
  Tensor n = x.narrow(1, 2, 3);
  CHECK(n.shape() == Shape{4, 3});
  CHECK(n.strides() == Shape{7, 1});
  CHECK(n.storage_offset() == 2);
  CHECK(shares_storage(n, x));
  for_each_index(n.shape(), [&](const Shape& i) { CHECK(at(n, i) == i[0] * 7.0 + i[1] + 2); });
  CHECK(x.narrow(0, -2, 2).storage_offset() == 14);  // negative start
  CHECK(x.narrow(1, 7, 0).numel() == 0);

  Tensor s = x.slice(1, 1, 7, 3);  // columns 1, 4
  CHECK(s.shape() == Shape{4, 2});
  CHECK(s.strides() == Shape{7, 3});
  CHECK(s.storage_offset() == 1);
  CHECK(s.to_vector<double>() == std::vector<double>{1, 4, 8, 11, 15, 18, 22, 25});
  CHECK(x.slice(1, 0, 7, 2).size(1) == 4);  // 0, 2, 4, 6
  CHECK(x.slice(1, -3, 100).size(1) == 3);  // negative start, clamped end
  CHECK(x.slice(1, 5, 2).size(1) == 0);     // empty range
  CHECK(x.slice(0, -100, 2).size(0) == 2);  // start clamped to 0
  CHECK(x.slice(0, 1, -1).shape() == Shape{2, 7});
  // Slicing a slice composes strides and offsets; writes go through.
  Tensor ss = s.slice(0, 1, 4, 2);  // rows 1, 3
  CHECK(ss.strides() == Shape{14, 3});
  CHECK(ss.storage_offset() == 8);
  ss.fill_(-1.0);
  CHECK(at(x, {3, 4}) == -1.0);
  CHECK(at(x, {1, 1}) == -1.0);
  CHECK(at(x, {2, 1}) == 15.0);

  Tensor sel = x.select(1, -1);
  CHECK(sel.shape() == Shape{4});
  CHECK(sel.strides() == Shape{7});
  CHECK(sel.storage_offset() == 6);
  CHECK(x.select(0, 2).to_vector<double>() == std::vector<double>{14, 15, 16, 17, 18, 19, 20});
  // select on a transposed view
  Tensor xt = iota({4, 7}).t();
  CHECK(xt.select(0, 3).to_vector<double>() == std::vector<double>{3, 10, 17, 24});
  CHECK(iota({5}).select(0, 4).dim() == 0);
  CHECK(iota({5}).select(0, 4).item<double>() == 4.0);
}

TEST_CASE("expand broadcasts with stride 0 and shares storage", "[core][views]") {
  Tensor x = iota({3, 1});
  Tensor e = x.expand({2, 3, 4});
  CHECK(e.shape() == Shape{2, 3, 4});
  CHECK(e.strides() == Shape{0, 1, 0});
  CHECK(shares_storage(e, x));
  for_each_index(e.shape(), [&](const Shape& i) { CHECK(at(e, i) == static_cast<double>(i[1])); });
  CHECK(x.expand({-1, 5}).shape() == Shape{3, 5});
  CHECK(x.expand({3, 1}).is_same(x));
  CHECK(x.expand({3, 0}).numel() == 0);
  x.select(0, 1).fill_(9.0);
  CHECK(at(e, {1, 1, 3}) == 9.0);
  CHECK(scalar_tensor(2.0).expand({2, 2}).to_vector<double>() == std::vector<double>(4, 2.0));
  // Expanding a non-contiguous tensor.
  Tensor nt = iota({2, 3}).t().unsqueeze(0);  // [1, 3, 2]
  Tensor ne = nt.expand({4, 3, 2});
  CHECK(ne.strides() == Shape{0, 1, 3});
}

TEST_CASE("flatten", "[core][views]") {
  Tensor x = iota({2, 3, 4, 5});
  CHECK(x.flatten().shape() == Shape{120});
  CHECK(x.flatten(1, 2).shape() == Shape{2, 12, 5});
  CHECK(x.flatten(-2).shape() == Shape{2, 3, 20});
  CHECK(x.flatten(2, 2).shape() == x.shape());
  CHECK(shares_storage(x.flatten(1), x));
  CHECK(scalar_tensor(1.0).flatten().shape() == Shape{1});
  // Flattening a non-contiguous tensor copies, with the permuted order.
  Tensor p = iota({2, 3}).t();
  Tensor f = p.flatten();
  CHECK_FALSE(shares_storage(f, p));
  CHECK(f.to_vector<double>() == std::vector<double>{0, 3, 1, 4, 2, 5});
  // Flattening dims that stay viewable in a non-contiguous tensor does not copy.
  Tensor q = iota({4, 3, 2}).permute({0, 2, 1}).slice(0, 0, 4, 2);  // [2, 2, 3]
  CHECK(shares_storage(q.flatten(0, 0), q));
}

TEST_CASE("contiguous returns self or a packed copy", "[core][views]") {
  Tensor x = iota({3, 4});
  CHECK(x.contiguous().is_same(x));
  Tensor sel = x.select(1, 2);  // stride 4
  Tensor c = sel.contiguous();
  CHECK(c.is_contiguous());
  CHECK_FALSE(shares_storage(c, x));
  CHECK(c.to_vector<double>() == std::vector<double>{2, 6, 10});
  // Unit dims do not break contiguity, whatever their stride.
  Tensor u = iota({3}).unsqueeze(1).expand({3, 1});
  CHECK(u.is_contiguous());
  Tensor big = iota({3, 1}).expand({3, 4});
  Tensor bc = big.contiguous();
  CHECK(bc.strides() == Shape{4, 1});
  CHECK(bc.to_vector<double>() == std::vector<double>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
}

TEST_CASE("writes through every view op are visible in the base", "[core][views]") {
  using ViewFn = std::function<Tensor(const Tensor&)>;
  // Each view must alias base element (1, 2, 3) at the index given.
  const std::vector<std::tuple<std::string, ViewFn, Shape>> cases = {
      {"view",
       [](const Tensor& b) {
         return b.view({6, 4});
       },
       {5, 3}},
      {"reshape",
       [](const Tensor& b) {
         return b.reshape({2, 12});
       },
       {1, 11}},
      {"permute",
       [](const Tensor& b) {
         return b.permute({2, 0, 1});
       },
       {3, 1, 2}},
      {"transpose", [](const Tensor& b) { return b.transpose(0, 2); }, {3, 2, 1}},
      {"t", [](const Tensor& b) { return b.select(0, 1).t(); }, {3, 2}},
      {"squeeze", [](const Tensor& b) { return b.unsqueeze(1).squeeze(); }, {1, 2, 3}},
      {"unsqueeze", [](const Tensor& b) { return b.unsqueeze(-1); }, {1, 2, 3, 0}},
      {"narrow", [](const Tensor& b) { return b.narrow(2, 2, 2); }, {1, 2, 1}},
      {"slice", [](const Tensor& b) { return b.slice(2, 1, 4, 2); }, {1, 2, 1}},
      {"select", [](const Tensor& b) { return b.select(1, 2); }, {1, 3}},
      {"expand",
       [](const Tensor& b) {
         return b.unsqueeze(0).expand({3, 2, 3, 4});
       },
       {2, 1, 2, 3}},
      {"flatten", [](const Tensor& b) { return b.flatten(1); }, {1, 11}},
      {"detach", [](const Tensor& b) { return b.detach(); }, {1, 2, 3}},
  };
  for (const auto& [name, fn, idx] : cases) {
    INFO(name);
    Tensor base = iota({2, 3, 4});
    Tensor v = fn(base);
    CHECK(shares_storage(v, base));
    CHECK(at(v, idx) == 23.0);
    Tensor one = v;
    for (std::int64_t i : idx) one = one.select(0, i);
    one.fill_(-5.0);
    CHECK(at(base, {1, 2, 3}) == -5.0);
    CHECK(base.to_vector<double>()[23] == -5.0);
    CHECK(base.version() == 1);
  }
}

TEST_CASE("clone copies data and is independent", "[core][views]") {
  Tensor x = iota({2, 3}).t();
  Tensor c = x.clone();
  CHECK_FALSE(shares_storage(c, x));
  CHECK(c.shape() == x.shape());
  CHECK(c.is_contiguous());
  CHECK(c.to_vector<double>() == x.to_vector<double>());
  c.fill_(0);
  CHECK(x.to_vector<double>() == std::vector<double>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("gradcheck of view ops on non-contiguous inputs", "[core][views][gradcheck]") {
  Tensor a = leaf({3, 4}, 1);
  Tensor b = leaf({2, 3, 5}, 2);
  Tensor c = leaf({3, 1}, 3);
  using V = const std::vector<Tensor>&;
  SECTION("view") {
    check_gradients([](V in) { return in[0].view({2, -1}); }, {a});
    check_gradients([](V in) { return in[0].permute({1, 0, 2}).view({3, 2, 5, 1}); }, {b});
  }
  SECTION("reshape (viewable and copying)") {
    check_gradients([](V in) { return in[0].reshape({4, 3}); }, {a});
    check_gradients([](V in) { return in[0].t().reshape({12}); }, {a});
    check_gradients([](V in) { return in[0].transpose(0, 2).reshape({5, 6}); }, {b});
  }
  SECTION("permute / transpose / t") {
    check_gradients([](V in) { return in[0].permute({2, 0, 1}); }, {b});
    check_gradients([](V in) { return in[0].transpose(-1, 0); }, {b});
    check_gradients([](V in) { return in[0].t(); }, {a});
  }
  SECTION("squeeze / unsqueeze") {
    check_gradients([](V in) { return in[0].squeeze(); }, {c});
    check_gradients([](V in) { return in[0].squeeze(1); }, {c});
    check_gradients([](V in) { return in[0].t().unsqueeze(1); }, {a});
  }
  SECTION("narrow / slice with step / select") {
    check_gradients([](V in) { return in[0].narrow(1, 1, 2); }, {a});
    check_gradients([](V in) { return in[0].slice(2, 0, 5, 2); }, {b});
    check_gradients([](V in) { return in[0].t().slice(0, 1, 4, 2).slice(1, -2, 3); }, {a});
    check_gradients([](V in) { return in[0].select(1, -1); }, {b});
    check_gradients([](V in) { return in[0].t().select(0, 2); }, {a});
  }
  SECTION("expand") {
    check_gradients([](V in) { return in[0].expand({2, 3, 4}); }, {c});
    check_gradients([](V in) { return in[0].t().expand({5, 1, 3}); }, {c});
  }
  SECTION("flatten / contiguous / clone") {
    check_gradients([](V in) { return in[0].flatten(1); }, {b});
    check_gradients([](V in) { return in[0].permute({2, 1, 0}).flatten(0, 1); }, {b});
    check_gradients([](V in) { return in[0].t().contiguous(); }, {a});
    check_gradients([](V in) { return in[0].slice(0, 0, 3, 2).clone(); }, {a});
  }
  SECTION("to(dtype) round trip through float32") {
    GradcheckOptions o;
    o.eps = 1e-3;  // float32 rounding would swamp a 1e-6 difference
    o.atol = 1e-3;
    o.rtol = 1e-2;
    check_gradients([](V in) { return in[0].to(kFloat32).to(kFloat64); }, {a}, o);
  }
}

TEST_CASE("to(dtype) backward converts the gradient back", "[core][views]") {
  Tensor x = leaf({2, 3});
  Tensor y = x.to(kFloat32);
  CHECK(y.grad_fn() != nullptr);
  CHECK(y.grad_fn()->name() == "ToCopyBackward");
  y.backward(full({2, 3}, 0.5));
  REQUIRE(x.grad().defined());
  CHECK(x.grad().dtype() == kFloat64);
  CHECK(x.grad().to_vector<double>() == std::vector<double>(6, 0.5));
  // Integer targets are not differentiable: no graph.
  CHECK_FALSE(x.to(kInt32).requires_grad());
}

TEST_CASE("view ops record the expected backward node names", "[core][views]") {
  Tensor x = leaf({2, 3});
  CHECK(x.view({3, 2}).grad_fn()->name() == "ViewBackward");
  CHECK(x.permute({1, 0}).grad_fn()->name() == "PermuteBackward");
  CHECK(x.unsqueeze(0).grad_fn()->name() == "UnsqueezeBackward");
  CHECK(x.slice(1, 0, 2).grad_fn()->name() == "SliceBackward");
  CHECK(x.unsqueeze(0).expand({4, 2, 3}).grad_fn()->name() == "ExpandBackward");
  CHECK(x.t().contiguous().grad_fn()->name() == "CloneBackward");
  // Views keep the storage of the leaf.
  CHECK(shares_storage(x.view({6}), x));
  // Under NoGradGuard nothing is recorded.
  NoGradGuard ng;
  CHECK_FALSE(x.view({6}).requires_grad());
}
