// Parameter-free layers: activations match their ops, Flatten, Identity, Add, and Sequential's
// chaining, naming, indexing and replacement.
#include <catch2/catch.hpp>

#include "core/factory.h"
#include "nn/modules/activation.h"
#include "nn/modules/add.h"
#include "nn/modules/flatten.h"
#include "nn/modules/identity.h"
#include "nn/modules/sequential.h"
#include "nn_test_helpers.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"

using namespace qgrad;
using qgrad_test::require_equal;

TEST_CASE("layers: activation modules compute their ops with the configured parameters") {
  Generator gen(3);
  Tensor x = randn({4, 5}, gen) * 3.0;
  require_equal(nn::ReLU()(x), relu(x), "ReLU");
  require_equal(nn::ReLU6()(x), relu6(x), "ReLU6");
  require_equal(nn::LeakyReLU(0.3)(x), leaky_relu(x, 0.3), "LeakyReLU");
  require_equal(nn::Hardtanh(-0.5, 2.0)(x), hardtanh(x, -0.5, 2.0), "Hardtanh");
  require_equal(nn::Sigmoid()(x), sigmoid(x), "Sigmoid");
  require_equal(nn::Tanh()(x), tanh(x), "Tanh");
  require_equal(nn::GELU()(x), gelu(x), "GELU");
  require_equal(nn::GELU("tanh")(x), gelu(x, "tanh"), "GELU tanh");
  // Spot values so the modules cannot silently pass a wrong parameter through.
  Tensor v = from_vector<float>({-2.0f, 0.5f, 7.0f});
  REQUIRE(nn::LeakyReLU(0.25)(v).to_vector<float>() == std::vector<float>{-0.5f, 0.5f, 7.0f});
  REQUIRE(nn::Hardtanh(-1.0, 3.0)(v).to_vector<float>() == std::vector<float>{-1.0f, 0.5f, 3.0f});
  REQUIRE(nn::ReLU6()(v).to_vector<float>() == std::vector<float>{0.0f, 0.5f, 6.0f});
}

TEST_CASE("layers: activation arguments are validated") {
  REQUIRE_THROWS_AS(nn::Hardtanh(1.0, 1.0), ValueError);
  REQUIRE_THROWS_WITH(nn::Hardtanh(2.0, 1.0), Catch::Contains("Hardtanh"));
  REQUIRE_THROWS_AS(nn::GELU("fast"), ValueError);
  REQUIRE_THROWS_WITH(nn::GELU("fast"), Catch::Contains("GELU") && Catch::Contains("fast"));
}

TEST_CASE("layers: activations are differentiable through the module") {
  Tensor x = from_vector<double>({-1.0, 2.0, 3.0}).set_requires_grad();
  nn::LeakyReLU m(0.1);
  sum(m(x)).backward();
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{0.1, 1.0, 1.0});
}

TEST_CASE("layers: Flatten merges the configured dims and Identity passes through") {
  Tensor x = zeros({2, 3, 4, 5});
  REQUIRE(nn::Flatten()(x).shape() == Shape{2, 60});
  REQUIRE(nn::Flatten(0, 1)(x).shape() == Shape{6, 4, 5});
  REQUIRE(nn::Flatten(-3, -2)(x).shape() == Shape{2, 12, 5});
  REQUIRE_THROWS_AS(nn::Flatten(1, 7)(x), IndexError);
  REQUIRE(nn::Identity()(x).is_same(x));
}

TEST_CASE("layers: Add sums two tensors with broadcasting and gradients") {
  nn::Add add;
  Tensor a = from_vector<double>({1, 2, 3, 4}, {2, 2}).set_requires_grad();
  Tensor b = from_vector<double>({10, 20}, {2}).set_requires_grad();
  Tensor y = add(a, b);
  REQUIRE(y.to_vector<double>() == std::vector<double>{11, 22, 13, 24});
  sum(y).backward();
  REQUIRE(b.grad().to_vector<double>() == std::vector<double>{2, 2});
  REQUIRE(add.parameters().empty());
  REQUIRE_THROWS_AS(add(zeros({2}), zeros({3})), ShapeError);
}

TEST_CASE("layers: Sequential chains, names children by position and indexes") {
  nn::Sequential seq{std::make_shared<nn::Flatten>(), std::make_shared<nn::ReLU>()};
  auto tanh_layer = seq.push_back(std::make_shared<nn::Tanh>());
  auto named = seq.push_back("out", std::make_shared<nn::Identity>());
  REQUIRE(seq.size() == 4);
  REQUIRE(seq.named_children().keys() == std::vector<std::string>{"0", "1", "2", "out"});
  REQUIRE(seq[2].get() == tanh_layer.get());
  REQUIRE(seq.at<nn::Identity>(3).get() == named.get());
  REQUIRE_THROWS_AS(seq[4], IndexError);
  REQUIRE_THROWS_AS(seq.at<nn::ReLU>(0), ValueError);

  Tensor x = from_vector<float>({-1, 0.5, 2, -3}, {2, 2});
  Tensor y = seq(x);
  REQUIRE(y.shape() == Shape{2, 2});
  require_equal(y, tanh(relu(x)));

  std::size_t n = 0;
  for (const auto& m : seq) n += m != nullptr;
  REQUIRE(n == 4);

  // An empty Sequential is the identity.
  Tensor z = nn::Sequential()(x);
  REQUIRE(z.is_same(x));
}

TEST_CASE("layers: Sequential::replace_module swaps a layer and checks its kind") {
  nn::Sequential seq{std::make_shared<nn::ReLU>(), std::make_shared<nn::Tanh>()};
  seq.replace_module("0", std::make_shared<nn::LeakyReLU>(0.5));
  Tensor x = from_vector<float>({-2.0f});
  REQUIRE(seq(x).to_vector<float>()[0] == Approx(std::tanh(-1.0f)));
  REQUIRE(seq.named_children()["0"]->name() == "LeakyReLU");
  REQUIRE_THROWS_AS(seq.replace_module("0", std::make_shared<nn::Add>()), ValueError);
  REQUIRE_THROWS_AS(seq.replace_module("5", std::make_shared<nn::ReLU>()), ValueError);
  REQUIRE(seq.named_children()["0"]->name() == "LeakyReLU");  // unchanged after the error
}
