// concat / stack: golden values and split gradients vs PyTorch (several dims, permuted and
// strided inputs, float32 + float64 promotion), float64 gradchecks, the threaded memcpy path,
// torch.cat's skipping of [0] tensors, integer inputs, and errors naming the offending tensor.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "core/autograd/gradcheck.h"
#include "core/device.h"
#include "core/factory.h"
#include "core/npy.h"
#include "ops/binary/binary.h"
#include "ops/concat/concat.h"
#include "support/fixtures.h"
#include "support/require_gradcheck.h"

using namespace qgrad;
using qgrad_test::require_gradcheck;

namespace {

Tensor fixture(const std::string& name) {
  return qgrad_test::load_fixture("nnfunc", name);
}

// Concatenation only moves (and widens) values: results must be exact.
void require_equal(const Tensor& got, const Tensor& want) {
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.to_vector<double>() == want.to_vector<double>());
}

Tensor leaf(const Tensor& t) {
  return t.clone().set_requires_grad(true);
}

}  // namespace

TEST_CASE("concat along dim 1 of permuted, strided and mixed-dtype inputs matches PyTorch",
          "[concat]") {
  Tensor a = leaf(fixture("cat_a")), bp = leaf(fixture("cat_bp")), c = leaf(fixture("cat_c"));
  REQUIRE(c.dtype() == kFloat64);
  Tensor b = bp.permute({2, 1, 0});
  Tensor cs = c.slice(1, 0, 6, 3);
  REQUIRE_FALSE(b.is_contiguous());
  REQUIRE_FALSE(cs.is_contiguous());
  Tensor y = concat({a, b, cs}, 1);
  REQUIRE(y.dtype() == kFloat64);  // float32 + float64 promotes
  require_equal(y, fixture("cat_d1_y"));
  y.backward(fixture("cat_g1"));
  REQUIRE(a.grad().dtype() == kFloat32);
  REQUIRE(c.grad().dtype() == kFloat64);
  require_equal(a.grad(), fixture("cat_d1_ga"));
  require_equal(bp.grad(), fixture("cat_d1_gbp"));
  require_equal(c.grad(), fixture("cat_d1_gc"));
}

TEST_CASE("concat along the last dim and dim 0 matches PyTorch", "[concat]") {
  {
    Tensor a = leaf(fixture("cat_a")), d = leaf(fixture("cat_d"));
    Tensor y = concat({a, d}, -1);
    require_equal(y, fixture("cat_dm1_y"));
    y.backward(fixture("cat_g2"));
    require_equal(a.grad(), fixture("cat_dm1_ga"));
    require_equal(d.grad(), fixture("cat_dm1_gd"));
  }
  {
    Tensor a = leaf(fixture("cat_a")), e = leaf(fixture("cat_e"));
    Tensor y = concat({a, e}, 0);
    require_equal(y, fixture("cat_d0_y"));
    y.backward(fixture("cat_g3"));
    require_equal(e.grad(), fixture("cat_d0_ge"));
  }
}

TEST_CASE("stack along every dim matches PyTorch", "[concat]") {
  for (int d = 0; d < 3; ++d) {
    INFO("dim " << d);
    Tensor s0 = leaf(fixture("stk_0")), s1t = leaf(fixture("stk_1t")), s2 = leaf(fixture("stk_2"));
    Tensor y = stack({s0, s1t.t(), s2}, d - 3);
    require_equal(y, fixture("stk_d" + std::to_string(d) + "_y"));
    y.backward(fixture("stk_d" + std::to_string(d) + "_g"));
    require_equal(s1t.grad(), fixture("stk_d" + std::to_string(d) + "_g1t"));
  }
}

TEST_CASE("concat and stack gradcheck in float64", "[concat][gradcheck]") {
  Generator gen(21);
  const TensorOptions f64 = TensorOptions().dtype(kFloat64);
  Tensor a = leaf(randn({2, 3, 4}, gen, f64)), b = leaf(randn({4, 2, 2}, gen, f64)),
         c = leaf(randn({2, 3, 1}, gen, f64));
  require_gradcheck(
      [](const std::vector<Tensor>& in) {
        return concat({in[0], in[1].permute({1, 2, 0}).narrow(1, 0, 2), in[2]}, 1);
      },
      {a, b, leaf(randn({2, 1, 4}, gen, f64))});
  require_gradcheck(
      [](const std::vector<Tensor>& in) {
        return concat({in[0], in[1], in[0]}, -1);
      },
      {a, c});
  require_gradcheck(
      [](const std::vector<Tensor>& in) {
        return stack({in[0], in[1].t(), in[0]}, 1);
      },
      {leaf(randn({3, 2}, gen, f64)), leaf(randn({2, 3}, gen, f64))});
}

TEST_CASE("concat of large contiguous blocks (threaded copy)", "[concat]") {
  Generator gen(22);
  const Tensor a = randn({64, 300, 5}, gen), b = randn({64, 200, 5}, gen);
  const Tensor y = concat({a, b}, 1);
  REQUIRE(y.shape() == Shape{64, 500, 5});
  require_equal(y.narrow(1, 0, 300), a);
  require_equal(y.narrow(1, 300, 200), b);
  const Tensor z = concat({a.transpose(0, 1), b.transpose(0, 1)}, 0);
  require_equal(z.narrow(0, 300, 200), b.transpose(0, 1));
}

TEST_CASE("concat skips [0] tensors as torch.cat, and joins integer tensors", "[concat]") {
  Tensor a = ones({2, 3}).set_requires_grad(true);
  Tensor e = zeros({0}).set_requires_grad(true);
  Tensor b = full({1, 3}, 2.0).set_requires_grad(true);
  Tensor y = concat({a, e, b}, 0);
  REQUIRE(y.shape() == Shape{3, 3});
  y.backward(ones({3, 3}));
  REQUIRE(e.grad().shape() == Shape{0});
  REQUIRE(b.grad().shape() == Shape{1, 3});
  REQUIRE(concat({zeros({0}), zeros({0})}, 0).shape() == Shape{0});
  REQUIRE(concat({zeros({0}), tensor({1, 2})}, 0).to_vector<double>() == std::vector<double>{1, 2});

  Tensor i = concat({arange(3), arange(2)}, 0);
  REQUIRE(i.dtype() == kInt64);
  REQUIRE(i.to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 2, 0, 1});
  Tensor f = concat({arange(2), tensor({0.5})}, 0);
  REQUIRE(f.dtype() == kFloat32);
  REQUIRE(f.to_vector<double>() == std::vector<double>{0, 1, 0.5});
}

TEST_CASE("concat and stack errors name the op, the tensor and the shapes", "[concat][errors]") {
  const Tensor a = zeros({2, 3}), b = zeros({2, 4}), c = zeros({2, 3, 1});
  REQUIRE_THROWS_AS(concat({a, a, b}, 0), ShapeError);
  REQUIRE_THROWS_WITH(concat({a, a, b}, 0),
                      Catch::Contains("concat") && Catch::Contains("tensor 2") &&
                          Catch::Contains("[2, 4]") && Catch::Contains("[2, 3]"));
  REQUIRE_NOTHROW(concat({a, b}, 1));
  REQUIRE_THROWS_AS(concat({a, c}, 0), ShapeError);
  REQUIRE_THROWS_WITH(concat({a, c}, 0), Catch::Contains("tensor 1") && Catch::Contains("dims"));
  REQUIRE_THROWS_AS(concat({}, 0), ValueError);
  REQUIRE_THROWS_AS(concat({a, a}, 2), IndexError);
  REQUIRE_THROWS_WITH(concat({a, a}, -3), Catch::Contains("concat"));
  REQUIRE_THROWS_AS(concat({scalar_tensor(1.0)}, 0), ShapeError);
  REQUIRE_THROWS_AS(concat({a, Tensor()}, 0), ValueError);

  REQUIRE_THROWS_AS(stack({a, a, b}, 0), ShapeError);
  REQUIRE_THROWS_WITH(stack({a, b}, 0), Catch::Contains("stack") && Catch::Contains("tensor 1") &&
                                            Catch::Contains("[2, 4]"));
  REQUIRE_THROWS_AS(stack({a, a}, 3), IndexError);
  REQUIRE_THROWS_AS(stack({}, 0), ValueError);
}
