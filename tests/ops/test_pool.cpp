// Tests of max_pool2d, avg_pool2d and adaptive_avg_pool2d: golden values and gradients against
// PyTorch (fixtures from tests/fixtures/gen_poolbn.py) for contiguous and non-contiguous
// inputs in float32 (oneDNN) and float64 (reference loops), float64 gradchecks, agreement of
// the two backends over a sweep of geometries, ceil_mode output sizes, and argument errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>

#include "core/autograd/grad_mode.h"
#include "core/autograd/gradcheck.h"
#include "core/factory.h"
#include "core/npy.h"
#include "ops/binary/binary.h"
#include "ops/pool/pool.h"
#include "ops/reduce/reduce.h"
#include "support/fixtures.h"
#include "support/require_gradcheck.h"

using namespace qgrad;
using qgrad_test::require_gradcheck;

namespace {

Tensor fixture(const std::string& c, const std::string& name) {
  return qgrad_test::load_fixture("poolbn", c + "_" + name);
}

// Equal values (infinities) and NaN where NaN is expected match.
void require_close(const Tensor& a, const Tensor& b, double rtol, double atol,
                   const std::string& what) {
  qgrad_test::require_close(a, b, rtol, atol, what, qgrad_test::kSpecialsMatch);
}

using PoolFn = std::function<Tensor(const Tensor&)>;

// Runs fn on `x` (made a leaf needing grad), backpropagates sum(y * gy); returns {y, gx}.
std::pair<Tensor, Tensor> run_with_grad(const PoolFn& fn, const Tensor& x, const Tensor& gy) {
  Tensor leaf = x.detach().clone();
  leaf.set_requires_grad(true);
  Tensor y = fn(leaf);
  sum(mul(y, gy.to(y.dtype()))).backward();
  return {y, leaf.grad()};
}

// The same through a non-contiguous view: every other column of a wider buffer.
std::pair<Tensor, Tensor> run_strided(const PoolFn& fn, const Tensor& x, const Tensor& gy) {
  Shape wide = x.shape();
  wide[3] *= 2;
  Tensor big = zeros(wide, TensorOptions().dtype(x.dtype()));
  {
    NoGradGuard ng;
    big.slice(3, 0, wide[3], 2).copy_(x);
  }
  big.set_requires_grad(true);
  Tensor view = big.slice(3, 0, wide[3], 2);
  REQUIRE_FALSE(view.is_contiguous());
  Tensor y = fn(view);
  sum(mul(y, gy.to(y.dtype()))).backward();
  return {y, big.grad().slice(3, 0, wide[3], 2)};
}

// ... and through a transposed layout (H and W swapped in memory).
std::pair<Tensor, Tensor> run_transposed(const PoolFn& fn, const Tensor& x, const Tensor& gy) {
  Tensor leaf = x.detach().transpose(2, 3).contiguous();
  leaf.set_requires_grad(true);
  Tensor view = leaf.transpose(2, 3);
  REQUIRE_FALSE(view.is_contiguous());
  Tensor y = fn(view);
  sum(mul(y, gy.to(y.dtype()))).backward();
  return {y, leaf.grad().transpose(2, 3)};
}

void check_golden(const std::string& c, const PoolFn& fn, double rtol = 1e-5, double atol = 1e-6) {
  const Tensor x = fixture(c, "x"), gy = fixture(c, "gy");
  const Tensor y_ref = fixture(c, "y"), gx_ref = fixture(c, "gx");
  for (DType dt : {kFloat32, kFloat64}) {
    const std::string tag = c + " " + dtype_name(dt);
    auto [y, gx] = run_with_grad(fn, x.to(dt), gy);
    REQUIRE(y.dtype() == dt);
    require_close(y, y_ref, rtol, atol, tag + " output");
    require_close(gx, gx_ref, rtol, atol, tag + " input gradient");
    auto [ys, gxs] = run_strided(fn, x.to(dt), gy);
    require_close(ys, y_ref, rtol, atol, tag + " strided output");
    require_close(gxs, gx_ref, rtol, atol, tag + " strided input gradient");
    auto [yt, gxt] = run_transposed(fn, x.to(dt), gy);
    require_close(yt, y_ref, rtol, atol, tag + " transposed output");
    require_close(gxt, gx_ref, rtol, atol, tag + " transposed input gradient");
  }
}

// A float64 leaf with distinct, well separated values (no ties for finite differences).
Tensor distinct_input(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  Tensor t = mul(randperm(numel_of(shape), gen).to(kFloat64), 0.1).reshape(shape).contiguous();
  t.set_requires_grad(true);
  return t;
}

}  // namespace

TEST_CASE("max_pool2d matches PyTorch", "[pool]") {
  check_golden("max_k2s2", [](const Tensor& x) { return max_pool2d(x, {2}, {2}); });
  check_golden("max_k3s2p1", [](const Tensor& x) { return max_pool2d(x, {3}, {2}, {1}); });
  check_golden("max_ceil_odd",
               [](const Tensor& x) { return max_pool2d(x, {3}, {2}, {0}, {1}, true); });
  check_golden("max_ceil_pad",
               [](const Tensor& x) { return max_pool2d(x, {2}, {2}, {1}, {1}, true); });
  check_golden("max_dil2", [](const Tensor& x) { return max_pool2d(x, {3}, {1}, {1}, {2}); });
  check_golden("max_rect", [](const Tensor& x) {
    return max_pool2d(x, {3, 2}, {2, 1}, {1, 0}, {1, 2}, true);
  });
}

TEST_CASE("max_pool2d sends the gradient of tied windows to the first maximum, as PyTorch",
          "[pool]") {
  check_golden("max_ties_k3s1", [](const Tensor& x) { return max_pool2d(x, {3}, {1}); });
  check_golden("max_ties_k2s2",
               [](const Tensor& x) { return max_pool2d(x, {2}, {2}, {0}, {1}, true); });
}

TEST_CASE("max_pool2d propagates NaN and its gradient as PyTorch", "[pool]") {
  check_golden("max_nan_k2s2", [](const Tensor& x) { return max_pool2d(x, {2}, {2}); });
  check_golden("max_nan_k3s1", [](const Tensor& x) { return max_pool2d(x, {3}, {1}, {1}); });
  // The NaN windows really are NaN (the comparison above lets NaN match NaN).
  const Tensor y = max_pool2d(fixture("max_nan_k2s2", "x"), {2}, {2});
  REQUIRE(std::isnan(y.to_vector<float>()[0]));
}

TEST_CASE("max_pool2d handles infinities like the float64 reference", "[pool]") {
  Generator gen(9);
  std::vector<double> v =
      randn({2, 3, 7, 8}, gen, TensorOptions().dtype(kFloat64)).to_vector<double>();
  const double inf = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < v.size(); i += 7) v[i] = (i % 2) ? inf : -inf;
  const Tensor x64 = from_vector<double>(v, {2, 3, 7, 8});
  const Tensor gy = randn({2, 3, 4, 4}, gen, TensorOptions().dtype(kFloat64));
  const PoolFn fn = [](const Tensor& t) { return max_pool2d(t, {3}, {2}, {1}); };
  auto [y64, g64] = run_with_grad(fn, x64, gy);
  auto [y32, g32] = run_with_grad(fn, x64.to(kFloat32), gy);
  require_close(y32, y64, 1e-6, 1e-6, "output");
  require_close(g32, g64, 1e-6, 1e-6, "gradient");
}

TEST_CASE("avg_pool2d matches PyTorch", "[pool]") {
  check_golden("avg_k3s2p1_incl", [](const Tensor& x) { return avg_pool2d(x, {3}, {2}, {1}); });
  check_golden("avg_k3s2p1_excl",
               [](const Tensor& x) { return avg_pool2d(x, {3}, {2}, {1}, false, false); });
  check_golden("avg_ceil_incl",
               [](const Tensor& x) { return avg_pool2d(x, {3}, {2}, {1}, true, true); });
  check_golden("avg_ceil_excl",
               [](const Tensor& x) { return avg_pool2d(x, {3}, {2}, {1}, true, false); });
  check_golden("avg_divisor",
               [](const Tensor& x) { return avg_pool2d(x, {2}, {2}, {1}, true, true, 3); });
}

TEST_CASE("adaptive_avg_pool2d matches PyTorch", "[pool]") {
  check_golden("adaptive_1x1", [](const Tensor& x) { return adaptive_avg_pool2d(x, {1}); });
  check_golden("adaptive_7to3", [](const Tensor& x) { return adaptive_avg_pool2d(x, {3, 3}); });
  check_golden("adaptive_rect", [](const Tensor& x) { return adaptive_avg_pool2d(x, {4, 5}); });
  check_golden("adaptive_up", [](const Tensor& x) { return adaptive_avg_pool2d(x, {7, 4}); });
}

TEST_CASE("pooling gradcheck in float64", "[pool]") {
  const Tensor x = distinct_input({2, 2, 7, 6}, 1);
  require_gradcheck([](const Tensor& t) { return max_pool2d(t, {2}); }, x);
  require_gradcheck([](const Tensor& t) { return max_pool2d(t, {3}, {2}, {1}, {1}, true); }, x);
  require_gradcheck([](const Tensor& t) { return max_pool2d(t, {2, 3}, {1, 2}, {1}, {2, 1}); }, x);
  require_gradcheck([](const Tensor& t) { return avg_pool2d(t, {3}, {2}, {1}, true, true); }, x);
  require_gradcheck([](const Tensor& t) { return avg_pool2d(t, {3}, {2}, {1}, true, false); }, x);
  require_gradcheck([](const Tensor& t) { return avg_pool2d(t, {2}, {2}, {1}, false, true, 5); },
                    x);
  require_gradcheck([](const Tensor& t) { return adaptive_avg_pool2d(t, {3, 4}); }, x);
  require_gradcheck([](const Tensor& t) { return adaptive_avg_pool2d(t, {1}); }, x);
  require_gradcheck([](const Tensor& t) { return adaptive_avg_pool2d(t, {9, 8}); }, x);
}

TEST_CASE("float32 oneDNN pooling agrees with the float64 reference over many geometries",
          "[pool]") {
  Generator gen(7);
  int cases = 0;
  for (std::int64_t k = 1; k <= 4; ++k)
    for (std::int64_t s = 1; s <= 3; ++s)
      for (std::int64_t p = 0; p <= k / 2; ++p)
        for (std::int64_t d = 1; d <= 2; ++d)
          for (bool ceil : {false, true})
            for (std::int64_t h : {5, 8}) {
              const Shape shape{2, 3, h, h + 1};
              if ((k - 1) * d + 1 > h + 2 * p) continue;
              const Tensor x64 = randn(shape, gen, TensorOptions().dtype(kFloat64));
              const Tensor x32 = x64.to(kFloat32);
              const std::string tag = "k" + std::to_string(k) + " s" + std::to_string(s) + " p" +
                                      std::to_string(p) + " d" + std::to_string(d) +
                                      (ceil ? " ceil" : "") + " h" + std::to_string(h);
              std::vector<std::pair<std::string, PoolFn>> fns = {
                  {"max",
                   [&](const Tensor& t) { return max_pool2d(t, {k}, {s}, {p}, {d}, ceil); }}};
              if (d == 1) {
                fns.push_back({"avg incl", [&](const Tensor& t) {
                                 return avg_pool2d(t, {k}, {s}, {p}, ceil, true);
                               }});
                fns.push_back({"avg excl", [&](const Tensor& t) {
                                 return avg_pool2d(t, {k}, {s}, {p}, ceil, false);
                               }});
                fns.push_back({"avg div", [&](const Tensor& t) {
                                 return avg_pool2d(t, {k}, {s}, {p}, ceil, true, 2);
                               }});
              }
              for (const auto& [name, fn] : fns) {
                Tensor y64;
                {
                  NoGradGuard ng;
                  y64 = fn(x64);
                }
                const Tensor gy = randn(y64.shape(), gen, TensorOptions().dtype(kFloat64));
                auto [r64, g64] = run_with_grad(fn, x64, gy);
                auto [r32, g32] = run_with_grad(fn, x32, gy);
                require_close(r32, r64, 1e-5, 1e-5, tag + " " + name + " output");
                require_close(g32, g64, 1e-5, 1e-5, tag + " " + name + " gradient");
                ++cases;
              }
            }
  REQUIRE(cases > 100);
}

TEST_CASE("pooling output sizes follow PyTorch's ceil_mode rule", "[pool]") {
  const Tensor x = zeros({1, 1, 5, 5});
  // floor((5 + 2 - 2) / 2) + 1 = 3; ceil gives 4, but that window would start in the padding.
  REQUIRE(max_pool2d(x, {2}, {2}, {1}, {1}, false).shape() == Shape{1, 1, 3, 3});
  REQUIRE(max_pool2d(x, {2}, {2}, {1}, {1}, true).shape() == Shape{1, 1, 3, 3});
  REQUIRE(max_pool2d(x, {2}, {2}, {0}, {1}, true).shape() == Shape{1, 1, 3, 3});
  REQUIRE(max_pool2d(x, {2}, {2}, {0}, {1}, false).shape() == Shape{1, 1, 2, 2});
  REQUIRE(avg_pool2d(zeros({1, 1, 6, 6}), {3}, {2}, {1}, true).shape() == Shape{1, 1, 4, 4});
  REQUIRE(max_pool2d(zeros({2, 3, 7, 9}), {3}, {2}, {0}, {1}, true).shape() == Shape{2, 3, 3, 4});
  REQUIRE(max_pool2d(zeros({1, 1, 9, 9}), {3}, {}, {0}, {2}).shape() == Shape{1, 1, 2, 2});
}

TEST_CASE("pooling accepts unbatched [C, H, W] input", "[pool]") {
  Generator gen(3);
  const Tensor x = randn({3, 6, 7}, gen);
  const Tensor xb = x.unsqueeze(0);
  require_close(max_pool2d(x, {3}, {2}, {1}), max_pool2d(xb, {3}, {2}, {1}).squeeze(0), 0, 0,
                "max");
  require_close(avg_pool2d(x, {2}), avg_pool2d(xb, {2}).squeeze(0), 0, 0, "avg");
  require_close(adaptive_avg_pool2d(x, {2}), adaptive_avg_pool2d(xb, {2}).squeeze(0), 0, 0,
                "adaptive");
  Tensor leaf = x.clone();
  leaf.set_requires_grad(true);
  sum(max_pool2d(leaf, {2})).backward();
  REQUIRE(leaf.grad().shape() == x.shape());
  REQUIRE(sum(leaf.grad()).item<double>() == Approx(3 * 3 * 3));
}

TEST_CASE("max_pool2d without grad matches the training path; backward can run twice", "[pool]") {
  Generator gen(5);
  const Tensor x = randn({2, 4, 9, 9}, gen);
  Tensor y_nograd;
  {
    NoGradGuard ng;
    y_nograd = max_pool2d(x, {3}, {2}, {1});
  }
  Tensor leaf = x.clone();
  leaf.set_requires_grad(true);
  Tensor y = max_pool2d(leaf, {3}, {2}, {1});
  require_close(y, y_nograd, 0, 0, "output");
  Tensor loss = sum(y);
  loss.backward(Tensor(), /*retain_graph=*/true);
  const Tensor g1 = leaf.grad().clone();
  leaf.set_grad(Tensor());
  loss.backward();
  require_close(leaf.grad(), g1, 0, 0, "second backward");
  // Every output's gradient lands on exactly one input.
  REQUIRE(sum(g1).item<double>() == Approx(2 * 4 * 5 * 5));
}

TEST_CASE("pooling of an empty batch gives an empty result", "[pool]") {
  Tensor x = zeros({0, 2, 6, 6});
  x.set_requires_grad(true);
  Tensor y = max_pool2d(x, {2});
  REQUIRE(y.shape() == Shape{0, 2, 3, 3});
  sum(y).backward();
  REQUIRE(x.grad().shape() == x.shape());
  REQUIRE(avg_pool2d(x, {2}).shape() == Shape{0, 2, 3, 3});
  REQUIRE(adaptive_avg_pool2d(x, {2}).shape() == Shape{0, 2, 2, 2});
}

TEST_CASE("pooling rejects bad arguments with errors naming the op", "[pool]") {
  const Tensor x = zeros({1, 2, 5, 5});
  REQUIRE_THROWS_AS(max_pool2d(zeros({5, 5}), {2}), ShapeError);
  REQUIRE_THROWS_WITH(max_pool2d(zeros({5, 5}), {2}), Catch::Contains("max_pool2d"));
  REQUIRE_THROWS_AS(max_pool2d(zeros({1, 1, 1, 5, 5}), {2}), ShapeError);
  REQUIRE_THROWS_AS(max_pool2d(zeros({1, 2, 5, 5}, TensorOptions().dtype(kInt32)), {2}),
                    DTypeError);
  REQUIRE_THROWS_AS(max_pool2d(x, {0}), ValueError);
  REQUIRE_THROWS_AS(max_pool2d(x, {2}, {0}), ValueError);
  REQUIRE_THROWS_AS(max_pool2d(x, {2}, {2}, {0}, {0}), ValueError);
  REQUIRE_THROWS_AS(max_pool2d(x, {2, 2, 2}), ValueError);
  REQUIRE_THROWS_AS(max_pool2d(x, {3}, {1}, {2}), ValueError);
  REQUIRE_THROWS_WITH(max_pool2d(x, {3}, {1}, {2}), Catch::Contains("half of kernel_size"));
  REQUIRE_THROWS_AS(max_pool2d(x, {2}, {1}, {-1}), ValueError);
  // Window larger than the padded input.
  REQUIRE_THROWS_AS(max_pool2d(x, {6}), ShapeError);
  REQUIRE_THROWS_WITH(max_pool2d(x, {6}),
                      Catch::Contains("max_pool2d") && Catch::Contains("[1, 2, 5, 5]"));
  REQUIRE_THROWS_AS(max_pool2d(x, {3}, {1}, {0}, {3}), ShapeError);
  REQUIRE_THROWS_AS(max_pool2d(zeros({1, 0, 5, 5}), {2}), ShapeError);
  REQUIRE_THROWS_AS(avg_pool2d(x, {6, 2}), ShapeError);
  REQUIRE_THROWS_WITH(avg_pool2d(x, {6, 2}), Catch::Contains("avg_pool2d"));
  REQUIRE_THROWS_AS(avg_pool2d(x, {2}, {2}, {0}, false, true, 0), ValueError);
  REQUIRE_THROWS_AS(avg_pool2d(x, {2}, {2}, {2}), ValueError);
  REQUIRE_THROWS_AS(adaptive_avg_pool2d(x, {0}), ValueError);
  REQUIRE_THROWS_WITH(adaptive_avg_pool2d(x, {0}), Catch::Contains("adaptive_avg_pool2d"));
  REQUIRE_THROWS_AS(adaptive_avg_pool2d(x, {1, 2, 3}), ValueError);
  REQUIRE_THROWS_AS(adaptive_avg_pool2d(zeros({4, 4}), {2}), ShapeError);
  REQUIRE_THROWS_AS(max_pool2d(Tensor(), {2}), ValueError);
}
