// Tests of the fused Conv-BN QAT layer (quant/modules/quant_conv_bn2d.h) and BN folding
// (quant/modules/fold_conv_bn.h): golden runs against torch.ao's ConvBn2d / ConvBnReLU2d
// (tests/fixtures/gen_conv_bn_qat.py: training steps with SGD, eval, frozen and unfrozen BN),
// float64 gradchecks in training, eval and frozen modes, the unquantized layer against a float
// Conv2d + BatchNorm2d, folding (float and quantized) against the eval-mode layer, the freeze
// switch over a model, state-dict layout and errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/autograd/grad_mode.h"
#include "core/autograd/gradcheck.h"
#include "core/factory.h"
#include "core/npy.h"
#include "nn/modules/activation.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/sequential.h"
#include "nn/optim/sgd.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "quant/modules/fake_quantize.h"
#include "quant/modules/fold_conv_bn.h"
#include "quant/modules/fused_fake_quantize.h"
#include "quant/modules/quant_conv_bn2d.h"
#include "quant/modules/quant_recipe.h"
#include "support/test_paths.h"
#include "test_modules_helpers.h"

using namespace qgrad;
using namespace qgrad::quant;
using qgrad_qm_test::require_bitwise;
using qgrad_qm_test::require_close;
using json = nlohmann::json;

namespace {

Tensor fixture(const std::string& name) {
  return load_npy(qgrad_test::fixture_dir() + "/conv_bn_qat/" + name + ".npy");
}

// |got - want| <= rel * (max|want| + |want|): for sums of many products, whose rounding error
// scales with the largest terms rather than with each element.
// floor: the least absolute tolerance (for gradients that are zero up to rounding).
void require_close_to_scale(const Tensor& got, const Tensor& want, double rel,
                            const std::string& what, double floor = 0) {
  const double scale = amax(abs(want)).item<double>();
  require_close(got, want, rel, std::max(rel * scale, floor), what);
}

void set_values(const Tensor& dst, const Tensor& src) {
  NoGradGuard no_grad;
  Tensor d = dst;
  d.copy_(src.reshape(dst.shape()));
}

struct GoldenCase {
  std::string name;
  nn::Conv2dOptions conv;
  double eps, momentum;
  bool relu, input_quant;
};

// Conv2d + BatchNorm2d with the fixture's initial values, fused with the torch_ao recipe's
// quantizers (per-channel symmetric qint8 weight; quint8 [0, 255] input when asked).
std::shared_ptr<QuantConvBn2d> golden_layer(const GoldenCase& c) {
  Generator gen(0);
  nn::Conv2d conv(c.conv, gen);
  set_values(conv.weight(), fixture(c.name + "_w0"));
  if (c.conv.bias_) set_values(conv.bias(), fixture(c.name + "_b0"));
  auto bn = std::make_shared<nn::BatchNorm2d>(
      nn::BatchNormOptions(c.conv.out_channels_).eps(c.eps).momentum(c.momentum));
  set_values(bn->weight(), fixture(c.name + "_gamma0"));
  set_values(bn->bias(), fixture(c.name + "_beta0"));
  set_values(bn->running_mean(), fixture(c.name + "_rm0"));
  set_values(bn->running_var(), fixture(c.name + "_rv0"));
  // The fixtures use get_default_qat_qconfig("fbgemm", version=0): FakeQuantize, not the fused
  // module of the torch_ao default recipe (version 1).
  json recipe{{"family", "torch_ao"},
              {"weight",
               {{"observer", "moving_average_minmax"},
                {"dtype", "qint8"},
                {"qscheme", "per_channel_symmetric"},
                {"quant_min", -128},
                {"quant_max", 127}}},
              {"input",
               {{"observer", "moving_average_minmax"},
                {"dtype", "quint8"},
                {"qscheme", "per_tensor_affine"},
                {"quant_min", 0},
                {"quant_max", 255}}}};
  if (!c.input_quant) recipe["input"] = nullptr;
  const QuantRecipe r = QuantRecipe::from_json(recipe);
  return QuantConvBn2d::from_float(conv, bn, r.make_input_quantizer(),
                                   r.make_weight_quantizer(conv.weight().shape()));
}

}  // namespace

TEST_CASE("quant.convbn: golden vs torch.ao ConvBn2d and ConvBnReLU2d over SGD steps",
          "[quant][convbn]") {
  const std::vector<GoldenCase> cases{
      {"c0", nn::Conv2dOptions(3, 4, 3).padding(1).bias(false), 1e-5, 0.1, false, false},
      {"c1", nn::Conv2dOptions(4, 6, 3).stride(2).padding(1).groups(2), 1e-3, 0.2, true, true},
  };
  for (const GoldenCase& c : cases) {
    INFO("case " << c.name);
    auto q = golden_layer(c);
    auto net = std::make_shared<nn::Sequential>();
    net->push_back(q);
    if (c.relu) net->push_back(std::make_shared<nn::ReLU>());  // ConvBnReLU2d = ConvBn2d + relu
    optim::SGD opt(net->parameters(), optim::SGDOptions(0.05));
    auto wq = std::dynamic_pointer_cast<FakeQuantize>(q->weight_quantizer());
    REQUIRE(wq != nullptr);
    REQUIRE((q->input_quantizer() != nullptr) == c.input_quant);
    const Tensor xs = fixture(c.name + "_x"), dys = fixture(c.name + "_dy");
    for (std::int64_t step = 0; step < 5; ++step) {
      INFO("step " << step);
      const auto at = [&](const std::string& k) {
        return fixture(c.name + "_" + k).select(0, step);
      };
      if (step == 3) {
        // Eval output after three training steps, then training with frozen BN.
        net->eval();
        REQUIRE_FALSE(q->bn()->is_training());
        {
          NoGradGuard no_grad;
          require_close_to_scale(net->forward(fixture(c.name + "_xe")), fixture(c.name + "_ye"),
                                 2e-5, "eval output");
        }
        net->train();
        REQUIRE(freeze_bn_stats(*net) == 1);
        REQUIRE(q->bn_frozen());
        REQUIRE_FALSE(q->bn()->is_training());
      }
      if (step == 4) {
        REQUIRE(update_bn_stats(*net) == 1);
        REQUIRE(q->bn()->is_training());
      }
      const Tensor x = xs.select(0, step).clone().set_requires_grad(true);
      const Tensor y = net->forward(x);
      require_close_to_scale(y, at("y"), 2e-5, "y");
      sum(y * dys.select(0, step)).backward();
      require_close_to_scale(x.grad(), at("dx"), 2e-5, "dx");
      require_close_to_scale(q->weight().grad(), at("dw"), 2e-5, "dW");
      // Zero up to rounding while BN uses batch statistics (it removes the bias again).
      if (c.conv.bias_) require_close_to_scale(q->bias().grad(), at("db"), 2e-5, "db", 1e-5);
      require_close_to_scale(q->bn()->weight().grad(), at("dgamma"), 2e-5, "dgamma");
      require_close_to_scale(q->bn()->bias().grad(), at("dbeta"), 2e-5, "dbeta");
      opt.step();
      opt.zero_grad();
      require_close(q->bn()->running_mean(), at("rm"), 1e-5, 1e-6, "running_mean");
      require_close(q->bn()->running_var(), at("rv"), 1e-5, 1e-6, "running_var");
      require_close(q->weight(), at("w"), 1e-5, 1e-6, "weight after SGD");
      require_close(wq->scale(), at("wscale"), 1e-5, 0, "weight fake-quant scale");
      REQUIRE(q->bn()->num_batches_tracked().item<double>() == at("nbt").item<double>());
    }
  }
}

TEST_CASE("quant.convbn: without quantizers the layer is Conv2d then BatchNorm2d",
          "[quant][convbn]") {
  // float64, so that s cancelling out of conv(x, W*s)/s is exact to ~1e-15.
  Generator gen(3);
  auto make = [](Generator& g) {
    auto conv = std::make_shared<nn::Conv2d>(nn::Conv2dOptions(3, 4, 3).stride(2).padding(1), g);
    auto bn = std::make_shared<nn::BatchNorm2d>(nn::BatchNormOptions(4).momentum(0.3));
    {
      NoGradGuard no_grad;
      Tensor(bn->weight()).copy_(tensor({0.7, -1.3, 2.0, 0.4}));
      Tensor(bn->bias()).copy_(tensor({0.1, 0.0, -0.2, 0.3}));
      Tensor(bn->running_var()).copy_(tensor({0.5, 2.0, 1.0, 3.0}));
      Tensor(bn->running_mean()).copy_(tensor({0.2, -0.1, 0.0, 0.5}));
    }
    conv->to(kFloat64);
    bn->to(kFloat64);
    return std::make_pair(conv, bn);
  };
  Generator g1(7), g2(7);
  auto [conv, bn] = make(g1);
  auto [conv2, bn2] = make(g2);
  auto q = QuantConvBn2d::from_float(*conv2, bn2, nullptr, nullptr);
  REQUIRE(q->weight().is_same(conv2->weight()));
  REQUIRE(q->bias().is_same(conv2->bias()));
  REQUIRE(q->bn() == bn2);
  for (const bool training : {true, false}) {
    INFO("training " << training);
    conv->train(training);
    bn->train(training);
    q->train(training);
    const Tensor x0 = randn({3, 3, 6, 5}, gen).to(kFloat64);
    const Tensor xa = x0.clone().set_requires_grad(true), xb = x0.clone().set_requires_grad(true);
    const Tensor ya = bn->forward(conv->forward(xa)), yb = q->forward(xb);
    require_close(yb, ya, 1e-12, 1e-12, "output");
    const Tensor dy = randn(ya.shape(), gen).to(kFloat64);
    ya.backward(dy);
    yb.backward(dy);
    require_close(xb.grad(), xa.grad(), 1e-12, 1e-12, "dx");
    require_close(q->weight().grad(), conv->weight().grad(), 1e-12, 1e-12, "dW");
    require_close(q->bias().grad(), conv->bias().grad(), 1e-12, 1e-12, "db");
    require_close(bn2->weight().grad(), bn->weight().grad(), 1e-12, 1e-12, "dgamma");
    require_close(bn2->bias().grad(), bn->bias().grad(), 1e-12, 1e-12, "dbeta");
    require_close(bn2->running_mean(), bn->running_mean(), 1e-12, 1e-15, "running_mean");
    require_close(bn2->running_var(), bn->running_var(), 1e-12, 1e-15, "running_var");
    REQUIRE(bn2->num_batches_tracked().item<std::int64_t>() ==
            bn->num_batches_tracked().item<std::int64_t>());
    conv->zero_grad();
    bn->zero_grad();
    q->zero_grad();
  }
  // Unbatched input: a batch of one (BN in eval mode here).
  const Tensor one = randn({3, 6, 5}, gen).to(kFloat64);
  require_bitwise(q->forward(one), q->forward(one.unsqueeze(0)).squeeze(0), "unbatched");
}

TEST_CASE("quant.convbn: gradcheck in float64 in training eval and frozen modes",
          "[quant][convbn]") {
  for (const std::string mode : {"train", "eval", "frozen"}) {
    INFO(mode);
    Generator gen(11);
    // momentum 0: the running statistics stay put while gradcheck evaluates many times.
    QuantConvBn2d q(nn::Conv2dOptions(2, 3, 3).stride({2, 1}).padding(1),
                    nn::BatchNormOptions(3).momentum(0.0).eps(1e-3), gen, nullptr, nullptr);
    q.to(kFloat64);
    {
      NoGradGuard no_grad;
      Tensor(q.bn()->weight()).copy_(tensor({0.8, -1.5, 1.2}));
      Tensor(q.bn()->bias()).copy_(tensor({0.1, -0.3, 0.2}));
      Tensor(q.bn()->running_var()).copy_(tensor({0.6, 1.7, 2.5}));
      Tensor(q.bn()->running_mean()).copy_(tensor({0.3, -0.2, 0.1}));
    }
    if (mode == "eval") q.eval();
    if (mode == "frozen") q.freeze_bn_stats();
    const Tensor x = randn({2, 2, 5, 4}, gen).to(kFloat64).set_requires_grad(true);
    const std::vector<Tensor> inputs{x, q.weight(), q.bias(), q.bn()->weight(), q.bn()->bias()};
    // The parameters are the module's own leaves: gradcheck perturbs them in place.
    const GradcheckResult r =
        gradcheck([&](const std::vector<Tensor>& in) { return q.forward(in[0]); }, inputs);
    INFO(r.message);
    REQUIRE(r.ok);
  }
}

TEST_CASE("quant.convbn: freeze_bn_stats keeps BN on running statistics in training mode",
          "[quant][convbn]") {
  Generator gen(5);
  auto q = std::make_shared<QuantConvBn2d>(nn::Conv2dOptions(2, 3, 3), nn::BatchNormOptions(3), gen,
                                           nullptr, nullptr);
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(q);
  net->push_back(std::make_shared<nn::ReLU>());
  const Tensor x = randn({4, 2, 6, 6}, gen);
  net->forward(x);
  REQUIRE(q->bn()->num_batches_tracked().item<std::int64_t>() == 1);
  REQUIRE(freeze_bn_stats(*net) == 1);
  net->train();  // does not undo the freeze
  REQUIRE(net->is_training());
  REQUIRE(q->is_training());
  REQUIRE_FALSE(q->bn()->is_training());
  const Tensor rm = q->bn()->running_mean().clone(), rv = q->bn()->running_var().clone();
  const Tensor y_frozen = net->forward(x);
  require_bitwise(q->bn()->running_mean(), rm, "running_mean frozen");
  require_bitwise(q->bn()->running_var(), rv, "running_var frozen");
  REQUIRE(q->bn()->num_batches_tracked().item<std::int64_t>() == 1);
  // Frozen training computes what eval computes.
  net->eval();
  require_bitwise(net->forward(x), y_frozen, "frozen == eval");
  // Unfreezing in eval mode keeps BN in eval (torch.ao would switch it to training).
  REQUIRE(update_bn_stats(*net) == 1);
  REQUIRE_FALSE(q->bn_frozen());
  REQUIRE_FALSE(q->bn()->is_training());
  net->train();
  REQUIRE(q->bn()->is_training());
  net->forward(x);
  REQUIRE(q->bn()->num_batches_tracked().item<std::int64_t>() == 2);
  // The member functions directly.
  q->freeze_bn_stats();
  REQUIRE_FALSE(q->bn()->is_training());
  q->update_bn_stats();
  REQUIRE(q->bn()->is_training());
  nn::ReLU no_fused;
  REQUIRE(freeze_bn_stats(no_fused) == 0);
}

TEST_CASE("quant.convbn: state dict layout and representation", "[quant][convbn]") {
  Generator gen(6);
  nn::Conv2d conv(nn::Conv2dOptions(2, 3, 3).padding(1), gen);
  auto bn = std::make_shared<nn::BatchNorm2d>(nn::BatchNormOptions(3));
  const QuantRecipe r = QuantRecipe::from_json({{"family", "torch_ao"}});
  auto q = QuantConvBn2d::from_float(conv, bn, r.make_input_quantizer(),
                                     r.make_weight_quantizer(conv.weight().shape()));
  const std::vector<std::string> keys = q->state_dict().keys();
  const std::vector<std::string> head{"weight",
                                      "bias",
                                      "bn.weight",
                                      "bn.bias",
                                      "bn.running_mean",
                                      "bn.running_var",
                                      "bn.num_batches_tracked"};
  REQUIRE(std::vector<std::string>(keys.begin(), keys.begin() + 7) == head);
  REQUIRE(keys[7].rfind("_input_quantizer.", 0) == 0);
  REQUIRE(keys.back().rfind("_weight_quantizer.", 0) == 0);
  REQUIRE(q->state_dict().at("_weight_quantizer.scale").shape() == Shape{3});
  REQUIRE(q->repr().find("QuantConvBn2d(\n  2, 3, kernel_size=(3, 3), stride=(1, 1), "
                         "padding=(1, 1)\n  (bn): BatchNorm2d(3, eps=1e-05") == 0);
  REQUIRE(q->num_parameters() == conv.num_parameters() + 6);
  // scale_factor() is gamma / sqrt(running_var + eps).
  {
    NoGradGuard no_grad;
    Tensor(bn->weight()).copy_(tensor({1.0f, -2.0f, 0.5f}));
    Tensor(bn->running_var()).copy_(tensor({4.0f, 1.0f, 0.25f}));
  }
  require_bitwise(q->scale_factor(),
                  tensor({1.0f, -2.0f, 0.5f}) / sqrt(tensor({4.0f, 1.0f, 0.25f}) + 1e-5),
                  "scale_factor");
}

TEST_CASE("quant.convbn: errors name the layer", "[quant][convbn]") {
  Generator gen(8);
  nn::Conv2d conv(nn::Conv2dOptions(2, 4, 3), gen);
  REQUIRE_THROWS_AS(QuantConvBn2d(conv, std::make_shared<nn::BatchNorm2d>(5), nullptr, nullptr),
                    ValueError);
  REQUIRE_THROWS_WITH(QuantConvBn2d(conv, std::make_shared<nn::BatchNorm2d>(5), nullptr, nullptr),
                      Catch::Contains("QuantConvBn2d") && Catch::Contains("5 features") &&
                          Catch::Contains("4 output channels"));
  REQUIRE_THROWS_WITH(
      QuantConvBn2d(conv, std::make_shared<nn::BatchNorm2d>(nn::BatchNormOptions(4).affine(false)),
                    nullptr, nullptr),
      Catch::Contains("QuantConvBn2d") && Catch::Contains("affine"));
  REQUIRE_THROWS_WITH(QuantConvBn2d(conv,
                                    std::make_shared<nn::BatchNorm2d>(
                                        nn::BatchNormOptions(4).track_running_stats(false)),
                                    nullptr, nullptr),
                      Catch::Contains("running statistics"));
  REQUIRE_THROWS_WITH(QuantConvBn2d(conv, nullptr, nullptr, nullptr), Catch::Contains("null"));
  auto q = QuantConvBn2d::from_float(conv, std::make_shared<nn::BatchNorm2d>(4), nullptr, nullptr);
  REQUIRE_THROWS_AS(q->forward(randn({2, 3, 5, 5}, gen)), ShapeError);
  REQUIRE_THROWS_WITH(q->forward(randn({2, 3, 5, 5}, gen)),
                      Catch::Contains("QuantConvBn2d") && Catch::Contains("in_channels"));
  REQUIRE_THROWS_WITH(q->forward(randn({5, 5}, gen)), Catch::Contains("QuantConvBn2d"));
  REQUIRE_THROWS_WITH(
      q->replace_module("bn", std::make_shared<nn::BatchNorm2d>(3)),
      Catch::Contains("QuantConvBn2d::replace_module") && Catch::Contains("3 features"));
  REQUIRE_THROWS_WITH(q->replace_module("bn", std::make_shared<nn::ReLU>()),
                      Catch::Contains("not a BatchNorm2d"));
  // A replacement BN is used by forward and takes the frozen state into account.
  auto bn2 = std::make_shared<nn::BatchNorm2d>(4);
  q->freeze_bn_stats();
  q->replace_module("bn", bn2);
  REQUIRE(q->bn() == bn2);
  REQUIRE_FALSE(bn2->is_training());
  // gamma == 0 makes the folded forward divide by zero: an error, not NaN.
  {
    NoGradGuard no_grad;
    Tensor(bn2->weight()).copy_(tensor({1.0f, 0.0f, 1.0f, 1.0f}));
  }
  REQUIRE_THROWS_AS(q->forward(randn({2, 2, 5, 5}, gen)), ValueError);
  REQUIRE_THROWS_WITH(q->forward(randn({2, 2, 5, 5}, gen)),
                      Catch::Contains("QuantConvBn2d") && Catch::Contains("zero in channel 1"));
}

TEST_CASE("quant.convbn: folding equals the eval-mode layer", "[quant][convbn]") {
  Generator gen(9);
  auto make_bn = [](std::int64_t c, double sign) {
    auto bn = std::make_shared<nn::BatchNorm2d>(nn::BatchNormOptions(c).eps(1e-3));
    NoGradGuard no_grad;
    std::vector<float> g, b, m, v;
    for (std::int64_t i = 0; i < c; ++i) {
      g.push_back(static_cast<float>(sign * (0.5 + 0.25 * static_cast<double>(i))));
      b.push_back(0.1f * static_cast<float>(i) - 0.2f);
      m.push_back(0.3f - 0.1f * static_cast<float>(i));
      v.push_back(0.5f + 0.4f * static_cast<float>(i));
    }
    const auto c1 = static_cast<std::int64_t>(g.size());
    Tensor(bn->weight()).copy_(from_vector<float>(g, {c1}));
    Tensor(bn->bias()).copy_(from_vector<float>(b, {c1}));
    Tensor(bn->running_mean()).copy_(from_vector<float>(m, {c1}));
    Tensor(bn->running_var()).copy_(from_vector<float>(v, {c1}));
    return bn;
  };
  const Tensor x = randn({2, 4, 7, 6}, gen);

  SECTION("float conv and bn, with and without a conv bias") {
    for (const bool bias : {true, false}) {
      nn::Conv2d conv(nn::Conv2dOptions(4, 6, 3).stride(2).groups(2).bias(bias), gen);
      auto bn = make_bn(6, -1.0);
      bn->eval();
      const auto f = fold_conv_bn(conv, *bn);
      REQUIRE(f->bias().defined());
      REQUIRE(f->options().stride_ == Shape{2, 2});
      REQUIRE(f->options().groups_ == 2);
      REQUIRE_FALSE(f->weight().is_same(conv.weight()));
      NoGradGuard no_grad;
      require_close_to_scale(f->forward(x), bn->forward(conv.forward(x)), 1e-5, "folded");
      // The formulas: W' = W*s, b' = (b - mean)*s + beta.
      const Tensor s = bn->weight() / sqrt(bn->running_var() + 1e-3);
      require_bitwise(f->weight(), conv.weight() * s.view({6, 1, 1, 1}), "W'");
      const Tensor b = bias ? conv.bias() : zeros({6});
      require_bitwise(f->bias(), (b - bn->running_mean()) * s + bn->bias(), "b'");
    }
  }

  SECTION("a trained QuantConvBn2d with torch_ao quantizers") {
    nn::Conv2d conv(nn::Conv2dOptions(4, 5, 3).padding(1), gen);
    const QuantRecipe r = QuantRecipe::from_json({{"family", "torch_ao"}});
    auto q = QuantConvBn2d::from_float(conv, make_bn(5, 1.0), r.make_input_quantizer(),
                                       r.make_weight_quantizer(conv.weight().shape()));
    optim::SGD opt(q->parameters(), optim::SGDOptions(0.1));
    for (int step = 0; step < 3; ++step) {
      sum(q->forward(randn({3, 4, 7, 6}, gen))).backward();
      opt.step();
      opt.zero_grad();
    }
    q->eval();
    // Observers off, as for export: both modules then see fixed scales.
    // The default torch_ao recipe builds torch.ao's fused observer + fake quant modules.
    for (const auto& m : {q->input_quantizer(), q->weight_quantizer()}) {
      auto fused = std::dynamic_pointer_cast<FusedMovingAvgObsFakeQuantize>(m);
      REQUIRE(fused != nullptr);
      fused->disable_observer();
    }
    NoGradGuard no_grad;
    const Tensor want = q->forward(x);
    // Float fold: the weights are not quantized, so it differs from the quantized layer...
    const auto f = fold_conv_bn(*q);
    REQUIRE_FALSE(f->is_training());
    const double float_diff = amax(abs(f->forward(x) - want)).item<double>();
    REQUIRE(float_diff > 0);
    REQUIRE(float_diff < 0.05 * amax(abs(want)).item<double>());
    // ...but folded into a QuantConv2d with the same quantizers it equals it.
    const auto qf = fold_quant_conv_bn(*q);
    REQUIRE(qf->weight_quantizer() == q->weight_quantizer());
    REQUIRE(qf->input_quantizer() == q->input_quantizer());
    require_bitwise(qf->weight(), q->weight() * q->scale_factor().view({5, 1, 1, 1}),
                    "folded weight is what the quantizer saw");
    require_close_to_scale(qf->forward(x), want, 1e-5, "quantized fold");
  }

  SECTION("float64 and errors") {
    nn::Conv2d conv(nn::Conv2dOptions(4, 3, 1), gen);
    auto bn = make_bn(3, 1.0);
    conv.to(kFloat64);
    bn->to(kFloat64);
    bn->eval();
    const auto f = fold_conv_bn(conv, *bn);
    REQUIRE(f->weight().dtype() == kFloat64);
    const Tensor x64 = x.to(kFloat64);
    require_close(f->forward(x64), bn->forward(conv.forward(x64)), 1e-12, 1e-12, "float64");
    REQUIRE_THROWS_AS(fold_conv_bn(conv, *make_bn(4, 1.0)), ValueError);
    REQUIRE_THROWS_WITH(fold_conv_bn(conv, *make_bn(4, 1.0)),
                        Catch::Contains("fold_conv_bn") && Catch::Contains("4 features"));
    nn::BatchNorm2d untracked(nn::BatchNormOptions(3).track_running_stats(false));
    REQUIRE_THROWS_WITH(fold_conv_bn(conv, untracked), Catch::Contains("running statistics"));
  }
}
