// Named QAT recipes (quant/modules/named_recipes.h): every recipe in the table parses into a
// QuantRecipe, quantizes lenet5bn, calibrates when it asks for it and runs a forward and backward
// pass to finite values; the contents that make each recipe what its description says; keys
// given next to "recipe" override the named values (objects merged key by key, null replacing);
// unknown names, non-string names and a different family are errors that list the known names.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <string>

#include "core/error.h"
#include "core/factory.h"
#include "core/generator.h"
#include "nn/models/zoo.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "quant/modules/calibrate.h"
#include "quant/modules/named_recipes.h"
#include "quant/modules/quant_recipe.h"
#include "quant/modules/quantize_model.h"
#include "quant/modules/quantizer_device.h"

using namespace qgrad;
using namespace qgrad::quant;
using json = nlohmann::json;

TEST_CASE("quant.named_recipes: every named recipe quantizes and runs lenet5bn",
          "[quant][named_recipes]") {
  std::set<std::string> names;
  for (const NamedRecipe& named : named_recipes()) {
    INFO(named.name);
    REQUIRE(names.insert(named.name).second);  // unique
    REQUIRE(!named.description.empty());
    REQUIRE(named.description.find('\n') == std::string::npos);
    REQUIRE(!named.reference.empty());
    REQUIRE(!named.recipe.contains("recipe"));
    // By name and as the table's JSON: the same normalised recipe.
    const QuantRecipe recipe = QuantRecipe::from_json(json{{"recipe", named.name}});
    REQUIRE(recipe.to_json() == QuantRecipe::from_json(named.recipe).to_json());
    REQUIRE(QuantRecipe::from_json(recipe.to_json()).to_json() == recipe.to_json());

    Generator gen(7);
    auto net = nn::lenet5bn(gen);
    const std::vector<std::string> swapped = quantize_model(*net, recipe);
    REQUIRE(swapped.size() == 5);  // 2 conv + 3 linear
    const Tensor x = randn({4, 1, 28, 28}, gen);
    if (recipe.calibration_batches() > 0)
      REQUIRE(calibrate_model(
                  *net, 2, [&](std::int64_t) { (*net)(x); }, recipe.calibration_options()) > 0);
    const Tensor y = (*net)(x);
    REQUIRE(y.shape() == Shape{4, 10});
    const Tensor loss = sum(y * y);
    REQUIRE(std::isfinite(loss.item<double>()));
    loss.backward();
  }
  for (const char* expected : {"torch_ao_default", "nvidia_int8", "lsq_w4a4", "lsq_w3a3",
                               "lsq_w2a2", "pact_w4a4", "fp8_e4m3"})
    REQUIRE(names.count(expected));
}

TEST_CASE("quant.named_recipes: the recipes' contents", "[quant][named_recipes]") {
  // torch_ao_default is the torch_ao family's default (PyTorch 1.13 fbgemm QAT qconfig).
  REQUIRE(QuantRecipe::from_json(json{{"recipe", "torch_ao_default"}}).to_json() ==
          QuantRecipe::from_json(json{{"family", "torch_ao"}}).to_json());
  const json nv = QuantRecipe::from_json(json{{"recipe", "nvidia_int8"}}).to_json();
  REQUIRE(nv["family"] == "nvidia");
  REQUIRE(nv["weight"]["axis"] == 0);
  REQUIRE(nv["weight"]["calib_method"] == "max");
  REQUIRE(nv["input"]["calib_method"] == "max");
  REQUIRE(nv["calibration"]["batches"] == 8);
  for (int bits : {4, 3, 2}) {
    const std::string name = "lsq_w" + std::to_string(bits) + "a" + std::to_string(bits);
    const json j = QuantRecipe::from_json(json{{"recipe", name}}).to_json();
    REQUIRE(j["family"] == "lsq");
    REQUIRE(j["weight"]["num_bits"] == bits);
    REQUIRE(j["input"]["num_bits"] == bits);
    REQUIRE(j["weight"]["signed"] == true);
    REQUIRE(j["input"]["signed"] == false);
    REQUIRE(j["input"]["learn_zero_point"] == false);
    REQUIRE(j["input"]["init"] == "lsq");
    REQUIRE(j["add"] == false);
  }
  const json fp8 = QuantRecipe::from_json(json{{"recipe", "fp8_e4m3"}}).to_json();
  REQUIRE(fp8["weight"]["num_bits"] == json{4, 3});
  REQUIRE(fp8["input"]["num_bits"] == json{4, 3});
  // ModelOpt's FP8 arithmetic (the recipe follows FP8_DEFAULT_CFG), not pq's scaled_e4m3.
  REQUIRE(fp8["weight"]["fp8_recipe"] == "modelopt");
  REQUIRE(fp8["input"]["fp8_recipe"] == "modelopt");
}

TEST_CASE("quant.named_recipes: keys next to the name override it", "[quant][named_recipes]") {
  const json j = expand_named_recipe(json{{"recipe", "lsq_w4a4"},
                                          {"family", "lsq"},
                                          {"input", {{"num_bits", 8}}},
                                          {"add", true},
                                          {"calibration", {{"batches", 2}}},
                                          {"exclude", {"0"}}});
  REQUIRE(j["input"]["num_bits"] == 8);    // overridden
  REQUIRE(j["input"]["signed"] == false);  // merged: the rest of the named input stays
  REQUIRE(j["input"]["init"] == "lsq");
  REQUIRE(j["weight"]["num_bits"] == 4);  // untouched
  REQUIRE(j["add"] == true);
  REQUIRE(j["calibration"] == json{{"batches", 2}});
  REQUIRE(j["exclude"] == json{"0"});
  REQUIRE(!j.contains("recipe"));
  const QuantRecipe r = QuantRecipe::from_json(
      json{{"recipe", "lsq_w4a4"}, {"weight", nullptr}, {"calibration", {{"batches", 3}}}});
  REQUIRE(!r.quantizes_weights());  // null replaces
  REQUIRE(r.quantizes_inputs());
  REQUIRE(r.calibration_batches() == 3);
  // A recipe without "recipe" is untouched.
  const json plain{{"family", "nvidia"}};
  REQUIRE(expand_named_recipe(plain) == plain);
  // An override the family rejects is reported by the parser as usual.
  REQUIRE_THROWS_WITH(
      QuantRecipe::from_json(json{{"recipe", "lsq_w2a2"}, {"weight", {{"num_bits", 1}}}}),
      Catch::Contains("\"weight.num_bits\" must lie in [2, 16], got 1"));
}

TEST_CASE("quant.named_recipes: unknown names and other errors", "[quant][named_recipes]") {
  REQUIRE_THROWS_AS(named_recipe("lsq_w5a5"), ValueError);
  REQUIRE_THROWS_WITH(QuantRecipe::from_json(json{{"recipe", "lsq_w5a5"}}),
                      Catch::Contains("unknown recipe \"lsq_w5a5\" (known: torch_ao_default, "
                                      "nvidia_int8, lsq_w4a4"));
  REQUIRE_THROWS_WITH(QuantRecipe::from_json(json{{"recipe", 4}}),
                      Catch::Contains("\"recipe\" must be the name of a recipe (one of "));
  REQUIRE_THROWS_WITH(
      QuantRecipe::from_json(json{{"recipe", "nvidia_int8"}, {"family", "lsq"}}),
      Catch::Contains("\"family\" \"lsq\" differs from the family of recipe \"nvidia_int8\""));
}

// Which quantized models may run on a GPU (quantizers_not_on), checked without one: torch_ao's
// quantizers with min/max observers (the fused one of torch_ao_default, FakeQuantize with a
// separate one) run there on every zoo model, as do Horizon's, the LSQ recipes'
// LearnableFakeQuantize, PACT's quantizers (with DoReFa weights), NVIDIA's TensorQuantizer
// (without histogram calibration; block formats and learn_amax included) and QuantConvBn2d
// (fuse_bn), so every named recipe does, and AIMET's; a histogram observer, NVIDIA's histogram
// quantizers and an int32 bias are named, in module-tree order, not the observer inside a named
// FakeQuantize; on the CPU nothing is refused.
TEST_CASE("quant.named_recipes: quantizers_not_on names what cannot run on a GPU",
          "[quant][recipes]") {
  for (const std::string& name : nn::model_names()) {
    auto model = nn::make_model(name, 0);
    quant::quantize_model(*model, quant::named_recipe("torch_ao_default").recipe);
    INFO(name);
    CHECK(quant::quantizers_not_on(*model, kCUDA).empty());
  }
  for (const quant::NamedRecipe& r : quant::named_recipes()) {
    auto model = nn::make_model("lenet5bn", 0);
    quant::quantize_model(*model, r.recipe);
    INFO(r.name);
    CHECK(quant::quantizers_not_on(*model, kCPU).empty());
    CHECK(quant::quantizers_not_on(*model, kCUDA).empty());  // every named recipe
  }
  auto minmax = nn::make_model("lenet5bn", 0);
  quant::quantize_model(*minmax,
                        nlohmann::json{{"family", "torch_ao"},
                                       {"weight", {{"observer", "minmax"}}},
                                       {"input", {{"observer", "moving_average_minmax"}}}});
  CHECK(quant::quantizers_not_on(*minmax, kCUDA).empty());
  auto hist = nn::make_model("lenet5bn", 0);
  quant::quantize_model(
      *hist, nlohmann::json{{"family", "nvidia"}, {"input", {{"calib_method", "histogram"}}}});
  CHECK(!quant::quantizers_not_on(*hist, kCUDA).empty());
  CHECK(quant::quantizers_not_on(*hist, kCPU).empty());
  // Block formats and learn_amax run there (the block scale kernels, the Clip).
  auto blocks = nn::make_model("lenet5bn", 0);
  quant::quantize_model(*blocks, nlohmann::json{{"family", "nvidia"},
                                                {"weight", {{"block_sizes", {{"-1", 4}}}}},
                                                {"input", {{"learn_amax", true}}}});
  CHECK(quant::quantizers_not_on(*blocks, kCUDA).empty());
  auto aimet = nn::make_model("lenet5bn", 0);
  quant::quantize_model(*aimet, nlohmann::json{{"family", "aimet"}});
  CHECK(quant::quantizers_not_on(*aimet, kCUDA).empty());
  auto horizon = nn::make_model("lenet5bn", 0);
  quant::quantize_model(*horizon, nlohmann::json{{"family", "horizon"}});
  CHECK(quant::quantizers_not_on(*horizon, kCUDA).empty());
  auto model = nn::make_model("lenet5bn", 0);
  quant::quantize_model(
      *model, nlohmann::json{{"family", "torch_ao"}, {"input", {{"observer", "histogram"}}}});
  const std::vector<std::string> refused = quant::quantizers_not_on(*model, kCUDA);
  REQUIRE(refused.size() == 5);
  CHECK(refused[0] == "0._input_quantizer (FakeQuantize)");
  for (const std::string& q : refused) CHECK(q.find("_weight_quantizer") == std::string::npos);
  auto fused_bn = nn::make_model("lenet5bn", 0);
  quant::quantize_model(*fused_bn, nlohmann::json{{"family", "torch_ao"}, {"fuse_bn", true}});
  CHECK(quant::quantizers_not_on(*fused_bn, kCUDA).empty());  // QuantConvBn2d runs there too
  CHECK(quant::quantizers_not_on(*fused_bn, kCPU).empty());
  auto int32 = nn::make_model("lenet5bn", 0);
  quant::quantize_model(*int32, nlohmann::json{{"family", "torch_ao"}, {"bias", "int32"}});
  const std::vector<std::string> bias = quant::quantizers_not_on(*int32, kCUDA);
  REQUIRE(!bias.empty());
  CHECK(bias[0] == "0 (QuantConv2d with an int32 bias)");
  CHECK(quant::quantizers_not_on(*int32, kCPU).empty());
}
