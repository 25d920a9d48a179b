// Parameterised layers and losses against PyTorch 1.13 (fixtures from tests/fixtures/gen_zoo.py):
// Linear, Conv2d, BatchNorm1d/2d (two training steps then evaluation, with running statistics
// and num_batches_tracked), the pooling layers, CrossEntropyLoss and MSELoss, each loaded with
// PyTorch's weights and compared in the forward output and every gradient; PyTorch's printouts;
// float64 gradchecks through the modules.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/autograd/gradcheck.h"
#include "core/factory.h"
#include "core/npy.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/dropout.h"
#include "nn/modules/linear.h"
#include "nn/modules/loss.h"
#include "nn/modules/pooling.h"
#include "nn_test_helpers.h"

using namespace qgrad;
using qgrad_test::require_close;

namespace {

Tensor load_zoo(const std::string& name) {
  return load_npy(std::string(QGRAD_FIXTURE_DIR) + "/zoo/" + name + ".npy");
}

// Loads `case`_weight / `case`_bias (those the module has) through load_state_dict.
void load_case_params(nn::Module& m, const std::string& c) {
  TensorDict dict("state dict entry");
  for (const auto& it : m.named_parameters()) dict.insert(it.key, load_zoo(c + "_" + it.key));
  m.load_state_dict(dict, /*strict=*/false);
}

// Runs x = `case`_x0 through m, checks y, then backpropagates `case`_gy and checks the input
// gradient and the gradient of every parameter.
void check_case(nn::UnaryModule& m, const std::string& c, double rtol, double atol) {
  INFO("case " << c);
  Tensor x = load_zoo(c + "_x0");
  x.set_requires_grad();
  Tensor y = m(x);
  require_close(y, load_zoo(c + "_y"), rtol, atol, "output");
  y.backward(load_zoo(c + "_gy"));
  require_close(x.grad(), load_zoo(c + "_gx0"), rtol, atol, "input gradient");
  for (const auto& it : m.named_parameters()) {
    REQUIRE(it.value.grad().defined());
    require_close(it.value.grad(), load_zoo(c + "_g" + it.key), rtol, atol,
                  "gradient of " + it.key);
  }
}

}  // namespace

TEST_CASE("layers golden: Linear matches PyTorch forward and backward") {
  Generator gen(1);
  nn::Linear lin(5, 3, gen);
  load_case_params(lin, "linear");
  check_case(lin, "linear", 1e-5, 1e-6);

  nn::Linear nobias(nn::LinearOptions(6, 2).bias(false), gen);
  REQUIRE(nobias.named_parameters().keys() == std::vector<std::string>{"weight"});
  load_case_params(nobias, "linear_nobias_3d");
  check_case(nobias, "linear_nobias_3d", 1e-5, 1e-6);
}

TEST_CASE("layers golden: Conv2d matches PyTorch (stride/padding, groups/dilation/no bias)") {
  Generator gen(2);
  nn::Conv2d conv(nn::Conv2dOptions(3, 4, 3).stride(2).padding(1), gen);
  load_case_params(conv, "conv_s2p1");
  check_case(conv, "conv_s2p1", 1e-4, 1e-5);

  nn::Conv2d grouped(
      nn::Conv2dOptions(4, 6, {3, 2}).padding({2, 1}).dilation(2).groups(2).bias(false), gen);
  REQUIRE(grouped.weight().shape() == Shape{6, 2, 3, 2});
  REQUIRE_FALSE(grouped.bias().defined());
  load_case_params(grouped, "conv_g2d2");
  check_case(grouped, "conv_g2d2", 1e-4, 1e-5);
}

TEST_CASE("layers golden: BatchNorm running statistics, train steps and eval match PyTorch") {
  struct Case {
    std::string name;
    bool two_d;
    nn::BatchNormOptions options;
  };
  const std::vector<Case> cases = {
      {"bn2d", true, nn::BatchNormOptions(4)},
      {"bn2d_cma", true, nn::BatchNormOptions(4).momentum(std::nullopt).eps(1e-3)},
      {"bn2d_noaffine", true, nn::BatchNormOptions(4).affine(false).momentum(0.3)},
      {"bn2d_notrack", true, nn::BatchNormOptions(4).track_running_stats(false)},
      {"bn1d", false, nn::BatchNormOptions(4)},
      {"bn1d_3d", false, nn::BatchNormOptions(4)},
  };
  for (const auto& c : cases) {
    std::shared_ptr<nn::BatchNormBase> bn;
    if (c.two_d)
      bn = std::make_shared<nn::BatchNorm2d>(c.options);
    else
      bn = std::make_shared<nn::BatchNorm1d>(c.options);
    if (c.options.affine_) load_case_params(*bn, c.name + "_s0");
    for (int step = 0; step < 3; ++step) {
      const std::string s = c.name + "_s" + std::to_string(step);
      if (step == 2) bn->eval();
      bn->zero_grad();
      check_case(*bn, s, 1e-4, 1e-5);
      if (c.options.track_running_stats_) {
        require_close(bn->running_mean(), load_zoo(s + "_running_mean"), 1e-5, 1e-6, "mean");
        require_close(bn->running_var(), load_zoo(s + "_running_var"), 1e-5, 1e-6, "var");
        REQUIRE(bn->num_batches_tracked().dtype() == kInt64);
        REQUIRE(bn->num_batches_tracked().dim() == 0);
        REQUIRE(bn->num_batches_tracked().item<std::int64_t>() ==
                load_zoo(s + "_num_batches_tracked").item<std::int64_t>());
      } else {
        REQUIRE_FALSE(bn->running_mean().defined());
        REQUIRE(bn->buffers().empty());
      }
    }
  }
}

TEST_CASE("layers golden: pooling layers match PyTorch") {
  nn::MaxPool2d maxpool(nn::MaxPool2dOptions(3).stride(2).padding(1));
  check_case(maxpool, "maxpool", 1e-6, 1e-7);
  nn::MaxPool2d maxpool2(
      nn::MaxPool2dOptions({3, 2}).stride({2, 1}).padding({1, 0}).dilation(2).ceil_mode(true));
  check_case(maxpool2, "maxpool_dil_ceil", 1e-6, 1e-7);
  nn::AvgPool2d avgpool(
      nn::AvgPool2dOptions(3).stride(2).padding(1).ceil_mode(true).count_include_pad(false));
  check_case(avgpool, "avgpool", 1e-5, 1e-6);
  nn::AvgPool2d avgpool2(2);
  check_case(avgpool2, "avgpool2", 1e-5, 1e-6);
  nn::AdaptiveAvgPool2d adaptive({3, 2});
  check_case(adaptive, "adaptive", 1e-5, 1e-6);
  REQUIRE(maxpool.parameters().empty());
  REQUIRE(adaptive.state_dict().empty());
}

TEST_CASE("layers golden: CrossEntropyLoss and MSELoss match PyTorch") {
  const Tensor logits = load_zoo("ce_x0");
  const Tensor target = load_zoo("ce_target");
  const Tensor cw = load_zoo("ce_class_weight");
  struct Case {
    std::string name;
    CrossEntropyOptions options;
  };
  for (const auto& c : std::vector<Case>{
           {"ce", CrossEntropyOptions()},
           {"ce_full", CrossEntropyOptions().weight(cw).ignore_index(2).label_smoothing(0.15)},
           {"ce_sum", CrossEntropyOptions().reduction("sum").label_smoothing(0.05)}}) {
    INFO(c.name);
    nn::CrossEntropyLoss loss(c.options);
    Tensor x = logits.clone();
    x.set_requires_grad();
    Tensor y = loss(x, target);
    require_close(y, load_zoo(c.name + "_y"), 1e-5, 1e-6, "loss");
    y.backward();
    require_close(x.grad(), load_zoo(c.name + "_gx0"), 1e-5, 1e-6, "gradient");
  }
  // The class weight is a buffer (as PyTorch's _WeightedLoss), absent without one.
  REQUIRE(nn::CrossEntropyLoss().state_dict().empty());
  nn::CrossEntropyLoss weighted(CrossEntropyOptions().weight(cw));
  REQUIRE(weighted.state_dict().keys() == std::vector<std::string>{"weight"});
  REQUIRE(weighted.parameters().empty());

  for (const std::string red : {"mean", "sum"}) {
    const std::string c = red == "mean" ? "mse" : "mse_sum";
    INFO(c);
    Tensor a = load_zoo("mse_x0").clone(), b = load_zoo("mse_x1").clone();
    a.set_requires_grad();
    b.set_requires_grad();
    nn::MSELoss loss(red);
    Tensor y = loss(a, b);
    require_close(y, load_zoo(c + "_y"), 1e-5, 1e-6, "loss");
    y.backward();
    require_close(a.grad(), load_zoo(c + "_gx0"), 1e-5, 1e-6, "input gradient");
    require_close(b.grad(), load_zoo(c + "_gx1"), 1e-5, 1e-6, "target gradient");
  }
}

TEST_CASE("layers golden: printouts equal PyTorch's") {
  std::ifstream f(std::string(QGRAD_FIXTURE_DIR) + "/zoo/repr.json");
  REQUIRE(f.good());
  const auto expected = nlohmann::json::parse(f);
  Generator gen(0);
  auto check = [&](const std::string& key, const nn::Module& m) {
    INFO(key);
    REQUIRE(m.repr() == expected.at(key).get<std::string>());
  };
  check("linear", nn::Linear(256, 120, gen));
  check("linear_nobias", nn::Linear(nn::LinearOptions(5, 3).bias(false), gen));
  check("conv", nn::Conv2d(nn::Conv2dOptions(1, 6, 5), gen));
  check("conv_s2p1", nn::Conv2d(nn::Conv2dOptions(3, 4, 3).stride(2).padding(1), gen));
  check(
      "conv_g2d2",
      nn::Conv2d(nn::Conv2dOptions(4, 6, {3, 2}).padding({2, 1}).dilation(2).groups(2).bias(false),
                 gen));
  check("bn2d", nn::BatchNorm2d(16));
  check("bn1d_custom", nn::BatchNorm1d(nn::BatchNormOptions(4)
                                           .eps(1e-3)
                                           .momentum(std::nullopt)
                                           .affine(false)
                                           .track_running_stats(false)));
  check("maxpool", nn::MaxPool2d(2));
  check("maxpool_s2p1", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)));
  check(
      "maxpool_dil_ceil",
      nn::MaxPool2d(
          nn::MaxPool2dOptions({3, 2}).stride({2, 1}).padding({1, 0}).dilation(2).ceil_mode(true)));
  check("avgpool", nn::AvgPool2d(2));
  check("avgpool_custom",
        nn::AvgPool2d(
            nn::AvgPool2dOptions(3).stride(2).padding(1).ceil_mode(true).count_include_pad(false)));
  check("adaptive", nn::AdaptiveAvgPool2d(1));
  check("adaptive_rect", nn::AdaptiveAvgPool2d({3, 2}));
  check("dropout", nn::Dropout(0.5, 0));
  check("dropout_quarter", nn::Dropout(0.25, 0));
  check("ce", nn::CrossEntropyLoss());
  check("mse", nn::MSELoss());
}

TEST_CASE("layers golden: gradcheck through Linear, Conv2d and BatchNorm2d in float64") {
  Generator gen(11);
  nn::Linear lin(4, 3, gen);
  nn::Conv2d conv(nn::Conv2dOptions(2, 3, 3).stride(2).padding(1).groups(1), gen);
  nn::BatchNorm2d bn(nn::BatchNormOptions(3).affine(true));
  for (nn::Module* m : std::vector<nn::Module*>{&lin, &conv, &bn}) m->to(kFloat64);
  auto opts = TensorOptions().dtype(kFloat64);
  {
    Tensor x = randn({2, 4}, gen, opts);
    x.set_requires_grad();
    // Parameters are leaves requiring grad, so gradcheck checks them too.
    auto r = gradcheck([&](const std::vector<Tensor>& in) { return lin(in[0]); },
                       {x, lin.weight(), lin.bias()});
    INFO(r.message);
    REQUIRE(r.ok);
  }
  {
    Tensor x = randn({2, 2, 5, 4}, gen, opts);
    x.set_requires_grad();
    auto r = gradcheck([&](const std::vector<Tensor>& in) { return conv(in[0]); },
                       {x, conv.weight(), conv.bias()});
    INFO(r.message);
    REQUIRE(r.ok);
  }
  {
    Tensor x = randn({3, 3, 2, 2}, gen, opts);
    x.set_requires_grad();
    auto r = gradcheck([&](const std::vector<Tensor>& in) { return bn(in[0]); },
                       {x, bn.weight(), bn.bias()});
    INFO(r.message);
    REQUIRE(r.ok);
    bn.eval();
    r = gradcheck([&](const std::vector<Tensor>& in) { return bn(in[0]); },
                  {x, bn.weight(), bn.bias()});
    INFO(r.message);
    REQUIRE(r.ok);
  }
}
