// Per-layer recipe rules (the "layers" key, quant/modules/layer_rules.h): pattern matching (globs
// spanning dots, exact names, "@first" / "@last"), which rule wins (object form: the most
// specific; list form: the last), equally specific rules that disagree, null keeping a role or a
// layer float (with fuse_bn keeping the pair float), patterns that match no layer, malformed
// rules and values the family rejects (reported at parse time with the rule's path), the
// normalised list form round-tripping, and the LSQ named recipes' 8-bit first and last layers.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "core/error.h"
#include "core/factory.h"
#include "core/generator.h"
#include "nn/models/zoo.h"
#include "quant/modules/learnable_fake_quantize.h"
#include "quant/modules/quant_add.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_conv_bn2d.h"
#include "quant/modules/quant_linear.h"
#include "quant/modules/quant_recipe.h"
#include "quant/modules/quantize_model.h"
#include "quant/modules/tensor_quantizer.h"

using namespace qgrad;
using namespace qgrad::quant;
using json = nlohmann::json;

namespace {

std::shared_ptr<nn::Module> find(nn::Module& model, const std::string& name) {
  const auto modules = model.named_modules();
  const std::shared_ptr<nn::Module>* m = modules.find(name);
  REQUIRE(m != nullptr);
  return *m;
}

// The weight / input quantizer of a quantized Conv2d, ConvBn2d or Linear (nullptr: float role;
// throws for a layer that is not quantized).
std::shared_ptr<nn::UnaryModule> quantizer(nn::Module& model, const std::string& name,
                                           const std::string& role) {
  const auto m = find(model, name);
  if (auto c = std::dynamic_pointer_cast<QuantConv2d>(m))
    return role == "weight" ? c->weight_quantizer() : c->input_quantizer();
  if (auto c = std::dynamic_pointer_cast<QuantConvBn2d>(m))
    return role == "weight" ? c->weight_quantizer() : c->input_quantizer();
  if (auto l = std::dynamic_pointer_cast<QuantLinear>(m))
    return role == "weight" ? l->weight_quantizer() : l->input_quantizer();
  FAIL("layer " << name << " is not quantized (" << m->name() << ")");
  return nullptr;
}

// The bit width of an nvidia TensorQuantizer (0: none).
int nv_bits(nn::Module& model, const std::string& name, const std::string& role) {
  auto q = std::dynamic_pointer_cast<TensorQuantizer>(quantizer(model, name, role));
  return q ? q->descriptor().num_bits().bits() : 0;
}

// quant_max of an LSQ quantizer: 2^(b-1)-1 signed, 2^b-1 unsigned.
std::int64_t lsq_max(nn::Module& model, const std::string& name, const std::string& role) {
  auto q = std::dynamic_pointer_cast<LearnableFakeQuantize>(quantizer(model, name, role));
  REQUIRE(q != nullptr);
  return q->quant_max();
}

std::shared_ptr<nn::Module> quantized_resnet20(const json& recipe) {
  Generator gen(3);
  std::shared_ptr<nn::Module> net = nn::resnet20(gen);
  quantize_model(*net, QuantRecipe::from_json(recipe));
  return net;
}

}  // namespace

TEST_CASE("quant.layer_rules: patterns", "[quant][layer_rules]") {
  const LayerPosition none, first{true, false}, last{false, true};
  CHECK(layer_pattern_matches("layer3.*", "layer3.1.conv2", none));  // '*' spans dots
  CHECK(layer_pattern_matches("*conv?", "layer3.1.conv2", none));
  CHECK(layer_pattern_matches("layer[12].0.conv1", "layer2.0.conv1", none));
  CHECK_FALSE(layer_pattern_matches("layer[12].0.conv1", "layer3.0.conv1", none));
  CHECK(layer_pattern_matches("fc", "fc", none));
  CHECK_FALSE(layer_pattern_matches("fc", "fc1", none));  // exact names are whole names
  CHECK(layer_pattern_matches("@first", "anything", first));
  CHECK_FALSE(layer_pattern_matches("@first", "anything", last));
  CHECK(layer_pattern_matches("@last", "fc", last));

  // "@first" / "@last" are the first and last Conv2d / Linear in tree order (adds do not count).
  Generator gen(1);
  auto net = nn::resnet20(gen);
  const std::vector<QuantizableLayer> layers = quantizable_layers(*net);
  REQUIRE(layers.front().name == "conv1");
  REQUIRE(layers.front().position.first);
  REQUIRE(layers.back().name == "fc");
  REQUIRE(layers.back().position.last);
  int adds = 0;
  for (const QuantizableLayer& l : layers) adds += l.is_add;
  REQUIRE(adds == 9);
  REQUIRE(layers.size() == 9 + 19 + 2 + 1);  // adds, block convs + conv1, downsamples, fc
}

TEST_CASE("quant.layer_rules: the most specific pattern wins in the object form",
          "[quant][layer_rules]") {
  const json recipe = {{"family", "nvidia"},
                       {"weight", {{"num_bits", 8}, {"axis", 0}}},
                       {"calibration", {{"batches", 0}}},
                       {"layers",
                        {{"*", {{"weight", {{"num_bits", 6}}}}},
                         {"layer3.*", {{"weight", {{"num_bits", 4}}}}},
                         {"layer3.1.conv2", {{"weight", {{"num_bits", 3}}}}},
                         {"@last", {{"weight", {{"num_bits", 7}}}}}}}};
  auto net = quantized_resnet20(recipe);
  CHECK(nv_bits(*net, "conv1", "weight") == 6);
  CHECK(nv_bits(*net, "layer1.0.conv1", "weight") == 6);
  CHECK(nv_bits(*net, "layer3.0.conv1", "weight") == 4);
  CHECK(nv_bits(*net, "layer3.1.conv2", "weight") == 3);  // exact beats "layer3.*" beats "*"
  CHECK(nv_bits(*net, "layer3.2.conv2", "weight") == 4);
  CHECK(nv_bits(*net, "fc", "weight") == 7);  // "@last" is as specific as an exact name
  // Objects merge over the layer's settings: the axis of the top-level weight stays.
  auto w = std::dynamic_pointer_cast<TensorQuantizer>(quantizer(*net, "layer3.0.conv1", "weight"));
  CHECK(w->descriptor().axis().axes == std::vector<std::int64_t>{0});
  // Inputs untouched by the rules keep the top-level setting.
  CHECK(nv_bits(*net, "layer3.1.conv2", "input") == 8);
}

TEST_CASE("quant.layer_rules: the last matching rule wins in the list form",
          "[quant][layer_rules]") {
  auto rules = [](const json& list) {
    return json{{"family", "nvidia"}, {"calibration", {{"batches", 0}}}, {"layers", list}};
  };
  // The exact rule first, then "*": "*" wins everywhere, also over "layer3.1.conv2".
  auto a = quantized_resnet20(
      rules(json::array({{{"match", "layer3.1.conv2"}, {"weight", {{"num_bits", 3}}}},
                         {{"match", "*"}, {"weight", {{"num_bits", 5}}}}})));
  CHECK(nv_bits(*a, "layer3.1.conv2", "weight") == 5);
  // The other order: the exact rule wins; several patterns in one rule.
  auto b = quantized_resnet20(rules(json::array(
      {{{"match", "*"}, {"weight", {{"num_bits", 5}}}},
       {{"match", json::array({"layer3.1.conv2", "fc"})}, {"weight", {{"num_bits", 3}}}}})));
  CHECK(nv_bits(*b, "layer3.1.conv2", "weight") == 3);
  CHECK(nv_bits(*b, "fc", "weight") == 3);
  CHECK(nv_bits(*b, "layer3.1.conv1", "weight") == 5);
}

TEST_CASE("quant.layer_rules: equally specific rules that disagree are an error",
          "[quant][layer_rules]") {
  // "*conv2" and "layer*" both have five literal characters and both match layer1.0.conv2.
  const json recipe = {
      {"family", "nvidia"},
      {"calibration", {{"batches", 0}}},
      {"layers",
       {{"*conv2", {{"weight", {{"num_bits", 4}}}}}, {"layer*", {{"weight", {{"num_bits", 6}}}}}}}};
  Generator gen(3);
  auto net = nn::resnet20(gen);
  REQUIRE_THROWS_WITH(
      quantize_model(*net, QuantRecipe::from_json(recipe)),
      Catch::Contains("\"layers[*conv2]\" and \"layers[layer*]\" both match layer") &&
          Catch::Contains("equally specific") && Catch::Contains("list of {\"match\""));
  // Agreeing on the key they share is fine.
  json agree = recipe;
  agree["layers"]["layer*"]["weight"]["num_bits"] = 4;
  auto ok = quantized_resnet20(agree);
  CHECK(nv_bits(*ok, "layer1.0.conv2", "weight") == 4);
}

TEST_CASE("quant.layer_rules: null keeps a role or a layer float", "[quant][layer_rules]") {
  const json recipe = {{"family", "nvidia"},
                       {"calibration", {{"batches", 0}}},
                       {"layers",
                        {{"fc", {{"weight", nullptr}}},
                         {"conv1", nullptr},
                         {"layer1.0.add", {{"input", nullptr}}}}}};
  auto net = quantized_resnet20(recipe);
  CHECK(nv_bits(*net, "fc", "weight") == 0);  // float weight ...
  CHECK(nv_bits(*net, "fc", "input") == 8);   // ... quantized input
  CHECK(find(*net, "conv1")->name() == "Conv2d");
  CHECK(find(*net, "layer1.0.add")->name() == "Add");
  CHECK(std::dynamic_pointer_cast<QuantAdd>(find(*net, "layer1.1.add")) != nullptr);

  // With fuse_bn, a conv the rules keep float keeps its batch norm: both stay float.
  json fused = recipe;
  fused["fuse_bn"] = true;
  auto f = quantized_resnet20(fused);
  CHECK(find(*f, "conv1")->name() == "Conv2d");
  CHECK(find(*f, "bn1")->name() == "BatchNorm2d");
  CHECK(find(*f, "layer1.0.conv1")->name() == "QuantConvBn2d");

  // A role the top level leaves float can be quantized per layer, starting from the family's
  // default ({"num_bits": 8, "axis": 0} for nvidia weights).
  auto g = quantized_resnet20(json{{"family", "nvidia"},
                                   {"weight", nullptr},
                                   {"calibration", {{"batches", 0}}},
                                   {"layers", {{"fc", {{"weight", {{"num_bits", 4}}}}}}}});
  CHECK(nv_bits(*g, "fc", "weight") == 4);
  CHECK(nv_bits(*g, "layer1.0.conv1", "weight") == 0);
}

TEST_CASE("quant.layer_rules: errors", "[quant][layer_rules]") {
  auto parse = [](const json& layers) {
    return QuantRecipe::from_json(json{{"family", "lsq"}, {"layers", layers}});
  };
  REQUIRE_THROWS_WITH(parse(json{{"fc", {{"wieght", {{"num_bits", 4}}}}}}),
                      Catch::Contains("unknown key \"layers[fc].wieght\""));
  REQUIRE_THROWS_WITH(parse(json{{"fc", 4}}), Catch::Contains("\"layers[fc]\" must be an object"));
  REQUIRE_THROWS_WITH(parse(json{{"fc", json::object()}}),
                      Catch::Contains("sets neither \"weight\" nor \"input\""));
  REQUIRE_THROWS_WITH(parse(json{{"@middle", {{"weight", nullptr}}}}),
                      Catch::Contains("only '@' selectors are \"@first\" and \"@last\""));
  REQUIRE_THROWS_WITH(parse(json::array({{{"weight", nullptr}}})),
                      Catch::Contains("\"layers[0]\" must be an object with \"match\""));
  REQUIRE_THROWS_WITH(parse(json::array({{{"match", json::array()}, {"weight", nullptr}}})),
                      Catch::Contains("\"layers[0].match\" must not be an empty list"));
  REQUIRE_THROWS_WITH(parse(json("fc")), Catch::Contains("\"layers\" must be an object"));
  // A NUL would end fnmatch's C string: "0\0x" matched layer 0 silently.
  const std::string nul_key = std::string("0\0x", 3);
  REQUIRE_THROWS_WITH(parse(json{{nul_key, {{"weight", nullptr}}}}),
                      Catch::Contains("\"layers key 0\\u0000x\" contains a NUL character"));
  REQUIRE_THROWS_WITH(parse(json::array({{{"match", nul_key}, {"weight", nullptr}}})),
                      Catch::Contains("\"layers[0].match\" contains a NUL character"));
  // A value the family rejects is reported at parse time with the rule's path.
  REQUIRE_THROWS_WITH(parse(json{{"fc", {{"weight", {{"num_bits", 1}}}}}}),
                      Catch::Contains("\"layers[fc].weight.num_bits\" must lie in [2, 16], got 1"));
  REQUIRE_THROWS_WITH(parse(json{{"fc", {{"input", {{"per_channel", true}}}}}}),
                      Catch::Contains("\"layers[fc].input.per_channel\" is supported for weights"));

  // A pattern that matches no layer names the layers it could have matched.
  Generator gen(2);
  auto net = nn::lenet5bn(gen);
  const json recipe = {{"family", "lsq"}, {"layers", {{"layr3.*", {{"weight", nullptr}}}}}};
  REQUIRE_THROWS_WITH(quantize_model(*net, QuantRecipe::from_json(recipe)),
                      Catch::Contains("\"layers\" pattern \"layr3.*\" matches "
                                      "no Conv2d, Linear or Add of the model (its layers: 0, 4, "
                                      "9, 11, 13)"));
  REQUIRE(find(*net, "0")->name() == "Conv2d");  // nothing was replaced
}

TEST_CASE("quant.layer_rules: the normalised list form round-trips", "[quant][layer_rules]") {
  const json recipe = {{"family", "nvidia"},
                       {"calibration", {{"batches", 0}}},
                       {"layers",
                        {{"layer3.1.conv2", {{"weight", {{"num_bits", 3}}}}},
                         {"*", {{"weight", {{"num_bits", 6}}}, {"input", nullptr}}},
                         {"layer3.*", {{"weight", {{"num_bits", 4}}}}}}}};
  const json normal = QuantRecipe::from_json(recipe).to_json();
  REQUIRE(normal["layers"].is_array());
  // Least specific first, so that applying the list in order gives the same layers.
  REQUIRE(normal["layers"][0]["match"] == "*");
  REQUIRE(normal["layers"][1]["match"] == "layer3.*");
  REQUIRE(normal["layers"][2]["match"] == "layer3.1.conv2");
  REQUIRE(QuantRecipe::from_json(normal).to_json() == normal);
  auto a = quantized_resnet20(recipe);
  auto b = quantized_resnet20(normal);
  Generator gen(3);
  for (const QuantizableLayer& l : quantizable_layers(*nn::resnet20(gen))) {
    if (l.is_add) continue;
    INFO(l.name);
    CHECK(nv_bits(*a, l.name, "weight") == nv_bits(*b, l.name, "weight"));
    CHECK(nv_bits(*b, l.name, "input") == 0);
  }
}

TEST_CASE("quant.layer_rules: the LSQ recipes keep the first and last layers at 8 bits",
          "[quant][layer_rules][named_recipes]") {
  for (int bits : {4, 3, 2}) {
    const std::string name = "lsq_w" + std::to_string(bits) + "a" + std::to_string(bits);
    INFO(name);
    for (const std::string& model : {std::string("lenet5bn"), std::string("resnet20")}) {
      auto net = nn::make_model(model, 5);
      quantize_model(*net, QuantRecipe::from_json(json{{"recipe", name}}));
      const std::vector<std::string> names =
          model == "lenet5bn" ? std::vector<std::string>{"0", "4", "9", "11", "13"}
                              : std::vector<std::string>{"conv1", "layer2.0.conv1", "fc"};
      const std::string first = names.front(), last = names.back();
      CHECK(lsq_max(*net, first, "weight") == 127);  // signed 8-bit
      CHECK(lsq_max(*net, first, "input") == 127);   // signed: the image has negative values
      CHECK(lsq_max(*net, last, "weight") == 127);
      CHECK(lsq_max(*net, last, "input") == 255);  // unsigned 8-bit after a ReLU
      for (std::size_t i = 1; i + 1 < names.size(); ++i) {
        CHECK(lsq_max(*net, names[i], "weight") == (1 << (bits - 1)) - 1);
        CHECK(lsq_max(*net, names[i], "input") == (1 << bits) - 1);
      }
    }
  }
}
