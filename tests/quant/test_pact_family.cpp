// The "pact" recipe family: DoReFa weight quantization (quant/learnable/dorefa.h) takes 2^k
// evenly spaced values in [-1, 1] in the order of the weights, its straight-through gradient is
// the gradient of tanh(w) / max|tanh(w)|; PactActivationQuantizer learns alpha (its gradient
// counts the clipped elements); the pact_w4a4 named recipe quantizes lenet5bn as it says (first
// layer input float, first and last weights at 8 bits) and trains alpha; recipe errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"
#include "core/factory.h"
#include "core/generator.h"
#include "nn/models/zoo.h"
#include "nn/optim/sgd.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "quant/learnable/dorefa.h"
#include "quant/modules/dorefa_weight_quantizer.h"
#include "quant/modules/pact_activation_quantizer.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_linear.h"
#include "quant/modules/quant_recipe.h"
#include "quant/modules/quantize_model.h"

using namespace qgrad;
using namespace qgrad::quant;
using json = nlohmann::json;

TEST_CASE("pact family: DoReFa weights take 2^k levels from -1 to 1, in order", "[quant][pact]") {
  Generator gen(4);
  const Tensor w = randn({6, 5, 3}, gen) * 0.3;
  for (int bits : {1, 2, 4, 8}) {
    INFO(bits);
    const std::vector<float> wv = w.contiguous().to_vector<float>();
    const std::vector<float> q =
        learnable::dorefa_quantize_weight(w, bits).contiguous().to_vector<float>();
    const double n = std::pow(2.0, bits) - 1;
    double tmax = 0;
    for (float x : wv) tmax = std::max(tmax, std::abs(std::tanh(static_cast<double>(x))));
    std::set<float> levels(q.begin(), q.end());
    CHECK(levels.size() <= static_cast<std::size_t>(n + 1));
    for (std::size_t i = 0; i < wv.size(); ++i) {
      // Level index: round((tanh(w) / max|tanh| + 1) / 2 * n); ties are measure-zero here.
      const double level = std::nearbyint((std::tanh(wv[i]) / tmax + 1) / 2 * n);
      CHECK(q[i] == Approx(2 * level / n - 1).margin(1e-6));
    }
    // The largest |w| maps to +-1, and the order of the weights is kept.
    const auto imax = static_cast<std::size_t>(
        std::max_element(wv.begin(), wv.end(),
                         [](float a, float b) { return std::abs(a) < std::abs(b); }) -
        wv.begin());
    CHECK(std::abs(q[imax]) == Approx(1.0f));
    for (std::size_t i = 0; i < wv.size(); ++i)
      for (std::size_t j = 0; j < wv.size(); ++j)
        if (wv[i] < wv[j]) CHECK(q[i] <= q[j]);
  }
  REQUIRE_THROWS_AS(learnable::dorefa_quantize_weight(w, 0), ValueError);
  REQUIRE_THROWS_AS(learnable::dorefa_quantize_weight(zeros({3}), 4), ValueError);
}

TEST_CASE("pact family: DoReFa's straight-through gradient is that of tanh(w) / max|tanh(w)|",
          "[quant][pact]") {
  Generator gen(9);
  const Tensor w0 = randn({4, 7}, gen) * 0.5;
  const Tensor g = randn({4, 7}, gen);
  Tensor w1 = w0.clone().set_requires_grad(true);
  sum(learnable::dorefa_quantize_weight(w1, 3) * g).backward();
  Tensor w2 = w0.clone().set_requires_grad(true);
  const Tensor t = tanh(w2);
  sum(t / amax(abs(t)) * g).backward();
  const std::vector<float> a = w1.grad().contiguous().to_vector<float>();
  const std::vector<float> b = w2.grad().contiguous().to_vector<float>();
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).margin(1e-6));
}

TEST_CASE("pact family: PactActivationQuantizer learns alpha", "[quant][pact]") {
  PactActivationQuantizer q(2, 1.0);
  const Tensor x = from_vector<float>({-0.5f, 0.2f, 0.5f, 0.9f, 1.5f, 3.0f}, {6});
  const Tensor y = q.forward(x);
  // d = 1/3: clip to [0, 1], round to thirds.
  const std::vector<float> yv = y.contiguous().to_vector<float>();
  const std::vector<float> want{0.0f, 1.0f / 3, 2.0f / 3, 1.0f, 1.0f, 1.0f};
  for (std::size_t i = 0; i < yv.size(); ++i) CHECK(yv[i] == Approx(want[i]).margin(1e-6));
  sum(y).backward();
  CHECK(q.alpha().grad().item<double>() == Approx(2.0));  // 1.5 and 3.0 are clipped at alpha
  REQUIRE_THROWS_AS(PactActivationQuantizer(4, 0.0), ValueError);
  REQUIRE_THROWS_AS(PactActivationQuantizer(0, 1.0), ValueError);
}

TEST_CASE("pact family: the pact_w4a4 recipe on lenet5bn", "[quant][pact][named_recipes]") {
  Generator gen(2);
  auto net = nn::lenet5bn(gen);
  REQUIRE(quantize_model(*net, QuantRecipe::from_json(json{{"recipe", "pact_w4a4"}})).size() == 5);
  const auto modules = net->named_modules();
  auto quantizers = [&](const std::string& name) {
    const auto m = *modules.find(name);
    if (auto c = std::dynamic_pointer_cast<QuantConv2d>(m))
      return std::make_pair(c->weight_quantizer(), c->input_quantizer());
    auto l = std::dynamic_pointer_cast<QuantLinear>(m);
    REQUIRE(l != nullptr);
    return std::make_pair(l->weight_quantizer(), l->input_quantizer());
  };
  const auto [w0, i0] = quantizers("0");
  CHECK(std::dynamic_pointer_cast<DoReFaWeightQuantizer>(w0)->num_bits() == 8);
  CHECK(i0 == nullptr);  // the image stays float
  for (const char* mid : {"4", "9", "11"}) {
    const auto [w, i] = quantizers(mid);
    CHECK(std::dynamic_pointer_cast<DoReFaWeightQuantizer>(w)->num_bits() == 4);
    CHECK(std::dynamic_pointer_cast<PactActivationQuantizer>(i)->num_bits() == 4);
  }
  const auto [w13, i13] = quantizers("13");
  CHECK(std::dynamic_pointer_cast<DoReFaWeightQuantizer>(w13)->num_bits() == 8);
  auto pact13 = std::dynamic_pointer_cast<PactActivationQuantizer>(i13);
  CHECK(pact13->num_bits() == 8);

  // One SGD step moves alpha (it is a parameter of the model).
  const double before = pact13->alpha().item<double>();
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.5));
  const Tensor x = randn({8, 1, 28, 28}, gen) * 3.0;
  const Tensor y = net->forward(x);
  sum(y * y).backward();
  opt.step();
  CHECK(pact13->alpha().item<double>() != before);
}

TEST_CASE("pact family: recipe errors", "[quant][pact]") {
  REQUIRE_THROWS_WITH(QuantRecipe::from_json(json{{"family", "pact"}, {"weight", {{"alpha", 2}}}}),
                      Catch::Contains("unknown key \"weight.alpha\""));
  REQUIRE_THROWS_WITH(
      QuantRecipe::from_json(json{{"family", "pact"}, {"input", {{"num_bits", 0}}}}),
      Catch::Contains("\"input.num_bits\" must lie in [1, 16], got 0"));
  REQUIRE_THROWS_WITH(
      QuantRecipe::from_json(json{{"family", "pact"}, {"input", {{"alpha", -1.0}}}}),
      Catch::Contains("\"input.alpha\" must lie in"));
}
