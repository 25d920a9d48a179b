// Parameterised layers beyond the PyTorch comparison: default initialisation (bounds,
// statistics, draw order, reproducibility from a seed), BatchNorm's buffers and modes, Dropout's
// masks and seeding, unbatched inputs, dtype moves, and argument errors.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/factory.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/dropout.h"
#include "nn/modules/linear.h"
#include "nn/modules/loss.h"
#include "nn/modules/pooling.h"
#include "nn_test_helpers.h"
#include "ops/binary/binary.h"
#include "ops/conv/conv.h"
#include "ops/reduce/reduce.h"

using namespace qgrad;
using qgrad_test::require_close;
using qgrad_test::require_equal;

namespace {

// All |v| < bound, mean ~ 0 and variance ~ bound^2 / 3 (a uniform on (-bound, bound)).
void require_uniform(const Tensor& t, double bound, const std::string& what) {
  INFO(what << " bound " << bound);
  const auto v = t.to_vector<double>();
  double s = 0, s2 = 0;
  for (double x : v) {
    REQUIRE(std::fabs(x) <= bound);
    s += x;
    s2 += x * x;
  }
  const double n = static_cast<double>(v.size());
  const double mean = s / n, var = s2 / n - mean * mean;
  const double expect_var = bound * bound / 3;
  // Tolerances of ~5 standard errors for these sizes.
  REQUIRE(std::fabs(mean) < 5 * std::sqrt(expect_var / n));
  REQUIRE(std::fabs(var - expect_var) < 5 * bound * bound * std::sqrt(4.0 / 45 / n));
}

}  // namespace

TEST_CASE("layers: Linear and Conv2d default init follows PyTorch's bounds and statistics") {
  Generator gen(5);
  nn::Linear lin(300, 200, gen);
  REQUIRE(lin.weight().shape() == Shape{200, 300});
  REQUIRE(lin.bias().shape() == Shape{200});
  REQUIRE(lin.weight().dtype() == kFloat32);
  REQUIRE(lin.weight().requires_grad());
  REQUIRE(lin.weight().is_leaf());
  require_uniform(lin.weight(), 1 / std::sqrt(300.0), "linear weight");
  require_uniform(lin.bias(), 1 / std::sqrt(300.0), "linear bias");

  nn::Conv2d conv(nn::Conv2dOptions(16, 64, 3), gen);
  require_uniform(conv.weight(), 1 / std::sqrt(144.0), "conv weight");
  require_uniform(conv.bias(), 1 / std::sqrt(144.0), "conv bias");

  // fan_in counts the input channels of one group only.
  nn::Conv2d grouped(nn::Conv2dOptions(32, 64, {3, 5}).groups(8), gen);
  REQUIRE(grouped.weight().shape() == Shape{64, 4, 3, 5});
  require_uniform(grouped.weight(), 1 / std::sqrt(60.0), "grouped conv weight");
}

TEST_CASE("layers: initialisation draws weight then bias from the given generator") {
  // kaiming_uniform_(a = sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), then the bias: the
  // same two uniform draws made by hand from a generator with the same seed give the layer.
  Generator gen(42), ref(42);
  nn::Linear lin(7, 4, gen);
  const double b = 1 / std::sqrt(7.0);
  Tensor w = uniform({4, 7}, -b, b, ref);
  Tensor bias = uniform({4}, -b, b, ref);
  require_close(lin.weight(), w, 1e-6, 1e-7, "weight");
  require_close(lin.bias(), bias, 1e-6, 1e-7, "bias");
  REQUIRE(gen.offset() == ref.offset());

  // Same seed, same layer; the generator advances, so the next layer differs.
  Generator g1(9), g2(9);
  nn::Conv2d c1(nn::Conv2dOptions(3, 5, 3), g1), c2(nn::Conv2dOptions(3, 5, 3), g2);
  require_equal(c1.weight(), c2.weight(), "same seed");
  require_equal(c1.bias(), c2.bias(), "same seed bias");
  nn::Conv2d c3(nn::Conv2dOptions(3, 5, 3), g1);
  REQUIRE(c3.weight().to_vector<float>() != c1.weight().to_vector<float>());

  // reset_parameters re-draws.
  Generator g3(9);
  c3.reset_parameters(g3);
  require_equal(c3.weight(), c1.weight(), "reset from the same seed");
}

TEST_CASE("layers: Linear/Conv2d state_dict keys, no-bias variants and unbatched inputs") {
  Generator gen(1);
  nn::Linear lin(nn::LinearOptions(3, 2).bias(false), gen);
  REQUIRE(lin.state_dict().keys() == std::vector<std::string>{"weight"});
  REQUIRE_FALSE(lin.bias().defined());
  Tensor x = randn({3}, gen);
  REQUIRE(lin(x).shape() == Shape{2});

  nn::Conv2d conv(nn::Conv2dOptions(2, 3, 3).padding(1), gen);
  REQUIRE(conv.state_dict().keys() == std::vector<std::string>{"weight", "bias"});
  REQUIRE(conv.options().kernel_size_ == Shape{3, 3});
  REQUIRE(conv.options().padding_ == Shape{1, 1});
  Tensor img = randn({2, 4, 5}, gen);
  Tensor y = conv(img);
  REQUIRE(y.shape() == Shape{3, 4, 5});
  require_close(y, conv(img.unsqueeze(0)).squeeze(0), 0, 0, "unbatched = batch of one");
  require_close(y, conv2d(img.unsqueeze(0), conv.weight(), conv.bias(), {1}, {1}).squeeze(0), 0, 0,
                "module = functional");
}

TEST_CASE("layers: BatchNorm buffers, modes and num_batches_tracked") {
  nn::BatchNorm2d bn(3);
  REQUIRE(bn.state_dict().keys() == std::vector<std::string>{"weight", "bias", "running_mean",
                                                             "running_var", "num_batches_tracked"});
  REQUIRE(bn.named_parameters().keys() == std::vector<std::string>{"weight", "bias"});
  REQUIRE(bn.weight().to_vector<float>() == std::vector<float>{1, 1, 1});
  REQUIRE(bn.bias().to_vector<float>() == std::vector<float>{0, 0, 0});
  REQUIRE(bn.running_mean().to_vector<float>() == std::vector<float>{0, 0, 0});
  REQUIRE(bn.running_var().to_vector<float>() == std::vector<float>{1, 1, 1});
  REQUIRE(bn.num_batches_tracked().dtype() == kInt64);
  REQUIRE(bn.num_batches_tracked().item<std::int64_t>() == 0);

  Generator gen(3);
  Tensor x = randn({4, 3, 2, 2}, gen) * 2.0 + 1.0;
  bn(x);
  bn(x);
  REQUIRE(bn.num_batches_tracked().item<std::int64_t>() == 2);
  const auto mean_after = bn.running_mean().to_vector<float>();
  REQUIRE(mean_after != std::vector<float>{0, 0, 0});

  // Eval: running statistics are used and left alone; output is the affine normalisation.
  bn.eval();
  Tensor y = bn(x);
  REQUIRE(bn.num_batches_tracked().item<std::int64_t>() == 2);
  REQUIRE(bn.running_mean().to_vector<float>() == mean_after);
  const auto rm = bn.running_mean().to_vector<float>(), rv = bn.running_var().to_vector<float>();
  const auto xv = x.to_vector<float>(), yv = y.to_vector<float>();
  for (std::size_t i = 0; i < xv.size(); ++i) {
    const std::size_t c = (i / 4) % 3;
    REQUIRE(yv[i] == Approx((xv[i] - rm[c]) / std::sqrt(rv[c] + 1e-5)).epsilon(1e-5));
  }

  // A rejected input leaves the count alone; reset_running_stats restores the defaults.
  bn.train();
  REQUIRE_THROWS_AS(bn(randn({1, 3, 1, 1}, gen)), ValueError);
  REQUIRE(bn.num_batches_tracked().item<std::int64_t>() == 2);
  bn.reset_running_stats();
  REQUIRE(bn.num_batches_tracked().item<std::int64_t>() == 0);
  REQUIRE(bn.running_var().to_vector<float>() == std::vector<float>{1, 1, 1});

  // Moving to float64 keeps the counter int64.
  bn.to(kFloat64);
  REQUIRE(bn.running_mean().dtype() == kFloat64);
  REQUIRE(bn.num_batches_tracked().dtype() == kInt64);
  REQUIRE(bn(x.to(kFloat64)).dtype() == kFloat64);

  // affine=false / track_running_stats=false leave those entries out, as PyTorch.
  nn::BatchNorm1d plain(nn::BatchNormOptions(5).affine(false).track_running_stats(false));
  REQUIRE(plain.state_dict().empty());
  REQUIRE(plain.parameters().empty());
  plain.eval();
  Tensor z = plain(randn({6, 5}, gen));  // batch statistics even in eval
  require_close(mean(z, {0}), zeros({5}), 0, 1e-5, "normalised per feature");
}

TEST_CASE("layers: Dropout masks, scaling, seeding and eval mode") {
  Tensor x = ones({100, 100});
  nn::Dropout drop(0.3, 123);
  Tensor y = drop(x);
  const auto v = y.to_vector<float>();
  std::size_t zeros_n = 0;
  for (float e : v) {
    REQUIRE((e == 0.0f || e == Approx(1 / 0.7).epsilon(1e-6)));
    zeros_n += e == 0.0f;
  }
  // 10000 draws with p = 0.3: std 46, allow 5 sigma.
  REQUIRE(std::fabs(static_cast<double>(zeros_n) - 3000) < 230);

  // Same seed, same mask; the layer's generator advances between calls.
  nn::Dropout again(0.3, 123);
  require_equal(again(x), y, "same seed");
  REQUIRE(again(x).to_vector<float>() != v);

  // Eval mode: identity, no draws.
  drop.eval();
  const auto offset = drop.generator().offset();
  REQUIRE(drop(x).is_same(x));
  REQUIRE(drop.generator().offset() == offset);

  // From a parent generator: the parent advances, siblings get different streams, and the
  // construction is reproducible.
  Generator parent(7), parent2(7);
  nn::Dropout a(0.5, parent), b(0.5, parent), a2(0.5, parent2);
  REQUIRE(parent.offset() > 0);
  REQUIRE(a(x).to_vector<float>() != b(x).to_vector<float>());
  Generator p3(7);
  nn::Dropout a3(0.5, p3);
  require_equal(a2(x), a3(x), "same parent seed");

  REQUIRE(nn::Dropout(0.0, 1)(x).to_vector<float>() == x.to_vector<float>());
  REQUIRE_THROWS_AS(nn::Dropout(1.5, 1), ValueError);
  REQUIRE_THROWS_WITH(nn::Dropout(-0.1, 1), Catch::Contains("Dropout"));
}

TEST_CASE("layers: invalid options and inputs raise clear errors") {
  Generator gen(0);
  REQUIRE_THROWS_AS(nn::Linear(-1, 3, gen), ValueError);
  nn::Linear lin(4, 2, gen);
  REQUIRE_THROWS_AS(lin(zeros({3, 5})), ShapeError);
  REQUIRE_THROWS_WITH(lin(zeros({3, 5})), Catch::Contains("Linear") && Catch::Contains("[3, 5]"));

  REQUIRE_THROWS_WITH(nn::Conv2d(nn::Conv2dOptions(3, 4, 3).groups(2), gen),
                      Catch::Contains("Conv2d") && Catch::Contains("in_channels"));
  REQUIRE_THROWS_WITH(nn::Conv2d(nn::Conv2dOptions(4, 6, 3).groups(4), gen),
                      Catch::Contains("out_channels"));
  REQUIRE_THROWS_AS(nn::Conv2d(nn::Conv2dOptions(3, 4, 0), gen), ValueError);
  REQUIRE_THROWS_AS(nn::Conv2d(nn::Conv2dOptions(3, 4, 3).stride(0), gen), ValueError);
  REQUIRE_THROWS_AS(nn::Conv2d(nn::Conv2dOptions(3, 4, 3).padding(-1), gen), ValueError);
  REQUIRE_THROWS_AS(nn::Conv2d(nn::Conv2dOptions(3, 4, Shape{3, 3, 3}), gen), ValueError);
  nn::Conv2d conv(nn::Conv2dOptions(3, 4, 3), gen);
  REQUIRE_THROWS_WITH(conv(zeros({1, 2, 5, 5})), Catch::Contains("Conv2d") && Catch::Contains("3"));
  REQUIRE_THROWS_AS(conv(zeros({5, 5})), ShapeError);

  REQUIRE_THROWS_AS(nn::BatchNorm2d(0), ValueError);
  REQUIRE_THROWS_AS(nn::BatchNorm2d(nn::BatchNormOptions(3).momentum(1.5)), ValueError);
  REQUIRE_THROWS_AS(nn::BatchNorm2d(nn::BatchNormOptions(3).eps(0)), ValueError);
  nn::BatchNorm2d bn(3);
  REQUIRE_THROWS_AS(bn(zeros({2, 3})), ShapeError);
  REQUIRE_THROWS_WITH(bn(zeros({2, 3})), Catch::Contains("BatchNorm2d") && Catch::Contains("4D"));
  REQUIRE_THROWS_WITH(bn(zeros({2, 4, 2, 2})), Catch::Contains("num_features"));
  nn::BatchNorm1d bn1(3);
  REQUIRE_THROWS_WITH(bn1(zeros({2, 3, 2, 2})), Catch::Contains("BatchNorm1d"));

  REQUIRE_THROWS_WITH(nn::MaxPool2d(nn::MaxPool2dOptions(2).padding(2)),
                      Catch::Contains("MaxPool2d") && Catch::Contains("half"));
  REQUIRE_THROWS_AS(nn::MaxPool2d(0), ValueError);
  REQUIRE_THROWS_AS(nn::AvgPool2d(nn::AvgPool2dOptions(2).divisor_override(0)), ValueError);
  REQUIRE_THROWS_AS(nn::AdaptiveAvgPool2d(Shape{1, 2, 3}), ValueError);
  REQUIRE_THROWS_AS(nn::MaxPool2d(2)(zeros({2})), ShapeError);

  REQUIRE_THROWS_WITH(nn::CrossEntropyLoss(CrossEntropyOptions().reduction("avg")),
                      Catch::Contains("CrossEntropyLoss"));
  REQUIRE_THROWS_AS(nn::CrossEntropyLoss(CrossEntropyOptions().label_smoothing(1.5)), ValueError);
  REQUIRE_THROWS_AS(nn::CrossEntropyLoss(CrossEntropyOptions().weight(zeros({2, 2}))), ShapeError);
  REQUIRE_THROWS_WITH(nn::MSELoss("avg"), Catch::Contains("MSELoss"));
  REQUIRE_THROWS_AS(nn::MSELoss()(zeros({2, 3}), zeros({3, 2})), ShapeError);
}
