// The quantizer state file (quant/modules/quantizer_state_file.h): for lenet5bn quantized by each
// family's recipe and calibrated / trained a step, the file written from it, applied to a freshly
// quantized copy of the same float model, makes that copy compute bit-identical outputs (which
// it does not before) and hold the same quantizer state; a file for other quantizers, other
// settings, a missing quantizer or a damaged entry is an error naming it; an unwritable path
// leaves no file.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "core/factory.h"
#include "nn/models/zoo.h"
#include "ops/binary/binary.h"
#include "quant/modules/calibrate.h"
#include "quant/modules/quant_recipe.h"
#include "quant/modules/quantize_model.h"
#include "quant/modules/quantizer_state_file.h"

using namespace qgrad;
using nlohmann::json;

namespace {

std::shared_ptr<nn::UnaryModule> fresh(const quant::QuantRecipe& r) {
  auto model = nn::make_model("lenet5bn", 1);  // the same float weights every time
  quant::quantize_model(*model, r);
  return model;
}

// Calibrated when the recipe calibrates, then two training-mode batches (observers, LSQ's
// learnable scale initialisation) so the state is not the construction default.
std::shared_ptr<nn::UnaryModule> prepared(const quant::QuantRecipe& r, const Tensor& x) {
  auto model = fresh(r);
  NoGradGuard no_grad;
  if (r.calibration_batches() > 0)
    quant::calibrate_model(
        *model, 1, [&](std::int64_t) { model->forward(x); }, r.calibration_options());
  model->forward(x * 0.5);
  model->forward(x);
  model->eval();
  return model;
}

std::vector<float> outputs(nn::UnaryModule& model, const Tensor& x) {
  NoGradGuard no_grad;
  return model.forward(x).contiguous().to_vector<float>();
}

}  // namespace

TEST_CASE("quantizer state file: a round trip restores bit-identical outputs for every family",
          "[quant]") {
  Generator gen(5);
  const Tensor x = randn({8, 1, 28, 28}, gen);
  const Tensor probe = randn({4, 1, 28, 28}, gen);
  for (const char* recipe :
       {R"({"family": "torch_ao"})", R"({"family": "torch_ao", "fuse_bn": true})",
        R"({"family": "nvidia"})", R"({"family": "lsq"})", R"({"family": "horizon"})",
        R"({"family": "aimet"})"}) {
    INFO(recipe);
    const quant::QuantRecipe r = quant::QuantRecipe::parse(recipe);
    auto a = prepared(r, x);
    const json file = json::parse(quant::quantizer_state_json(*a).dump());  // through text
    CHECK(file["format"] == "qgrad.quantizers");
    CHECK(file["quantizers"].size() == 10);  // input and weight of 2 convs and 3 linears
    CHECK(file["quantizers"].contains("0._input_quantizer"));
    CHECK(file["quantizers"]["0._weight_quantizer"]["family"] ==
          quant::quant_family_name(r.family()));

    // The rest of the model (BN running statistics) as a checkpoint would give it.
    auto b = fresh(r);
    b->eval();
    TensorDict rest;
    for (const auto& item : a->state_dict()) {
      bool quantizer = false;
      for (const auto& q : file["quantizers"].items())
        quantizer = quantizer || item.key.rfind(q.key() + ".", 0) == 0;
      if (!quantizer) rest.insert(item.key, item.value);
    }
    REQUIRE(rest.size() > 0);
    b->load_state_dict(rest, /*strict=*/false);
    bool same_before = false;  // some families refuse to run before calibration: not the same
    try {
      same_before = outputs(*b, probe) == outputs(*a, probe);
    } catch (const Error&) {
    }
    CHECK(!same_before);
    // Observers keep observing in eval mode (torch.ao, Horizon), so that forward changed `a`
    // too: both start again from the file.
    CHECK(quant::apply_quantizer_state(*a, file, "test") == 10);
    CHECK(quant::apply_quantizer_state(*b, file, "test") == 10);
    const std::vector<float> ya = outputs(*a, probe), yb = outputs(*b, probe);
    REQUIRE(ya.size() == yb.size());
    for (std::size_t i = 0; i < ya.size(); ++i)
      REQUIRE(std::memcmp(&ya[i], &yb[i], sizeof(float)) == 0);
    CHECK(quant::quantizer_state_json(*b) == quant::quantizer_state_json(*a));
  }
}

TEST_CASE("quantizer state file: wrong models, settings and entries are errors naming them",
          "[quant]") {
  Generator gen(5);
  const Tensor x = randn({8, 1, 28, 28}, gen);
  const quant::QuantRecipe ao = quant::QuantRecipe::parse(R"({"family": "torch_ao"})");
  const json file = quant::quantizer_state_json(*prepared(ao, x));

  auto nvidia = fresh(quant::QuantRecipe::parse(R"({"family": "nvidia"})"));
  CHECK_THROWS_WITH(quant::apply_quantizer_state(*nvidia, file, "quantizers 'q.json'"),
                    Catch::Contains("quantizers 'q.json': quantizer '") &&
                        Catch::Contains("the file has a \"FusedMovingAvgObsFakeQuantize\""));
  auto four_bit = fresh(quant::QuantRecipe::parse(
      R"({"family": "torch_ao", "input": {"observer": "fused_moving_average_minmax",
          "dtype": "quint8", "quant_min": 0, "quant_max": 15}})"));
  CHECK_THROWS_WITH(quant::apply_quantizer_state(*four_bit, file, "q"),
                    Catch::Contains("quantizer '0._input_quantizer': settings differ"));

  auto b = fresh(ao);
  json missing = file;
  missing["quantizers"].erase("9._weight_quantizer");
  CHECK_THROWS_WITH(quant::apply_quantizer_state(*b, missing, "q"),
                    Catch::Contains("'9._weight_quantizer' is missing from the file"));
  json extra = file;
  extra["quantizers"]["20._input_quantizer"] = file["quantizers"]["0._input_quantizer"];
  CHECK_THROWS_WITH(quant::apply_quantizer_state(*b, extra, "q"),
                    Catch::Contains("quantizer '20._input_quantizer' is not in the model"));
  json bad_shape = file;
  bad_shape["quantizers"]["0._weight_quantizer"]["state"]["scale"]["shape"] = {7};
  CHECK_THROWS_WITH(quant::apply_quantizer_state(*b, bad_shape, "q"),
                    Catch::Contains("quantizer '0._weight_quantizer' state 'scale'") &&
                        Catch::Contains("values for shape"));
  json unknown_key = file;
  unknown_key["quantizers"]["0._input_quantizer"]["state"]["bogus"] =
      file["quantizers"]["0._input_quantizer"]["state"]["scale"];
  CHECK_THROWS_WITH(quant::apply_quantizer_state(*b, unknown_key, "q"),
                    Catch::Contains("quantizer '0._input_quantizer'") && Catch::Contains("bogus"));
  // Integers are range-checked before they are stored: they wrapped into the tensor's dtype.
  json flag = file;
  // (torch.ao's FakeQuantize keeps its switches in uint8; the fused one in int64.)
  flag["quantizers"]["0._input_quantizer"]["state"]["fake_quant_enabled"] = {
      {"dtype", "uint8"}, {"shape", {1}}, {"values", {256}}};
  CHECK_THROWS_WITH(quant::apply_quantizer_state(*b, flag, "q"),
                    Catch::Contains("state 'fake_quant_enabled': 256 does not fit uint8 [0, 255]"));
  json zp = file;
  zp["quantizers"]["0._input_quantizer"]["state"]["zero_point"]["values"] = {std::int64_t{1} << 32};
  CHECK_THROWS_WITH(quant::apply_quantizer_state(*b, zp, "q"),
                    Catch::Contains("state 'zero_point': 4294967296 does not fit int32"));
  json huge = file;
  huge["quantizers"]["0._input_quantizer"]["state"]["zero_point"]["values"] = {std::uint64_t{1}
                                                                               << 63};
  CHECK_THROWS_WITH(quant::apply_quantizer_state(*b, huge, "q"), Catch::Contains("does not fit"));
  // The family is checked too.
  json family = file;
  family["quantizers"]["0._input_quantizer"]["family"] = "nvidia";
  CHECK_THROWS_WITH(quant::apply_quantizer_state(*b, family, "q"),
                    Catch::Contains("quantizer '0._input_quantizer': the file's family is "
                                    "\"nvidia\", the model's \"torch_ao\""));
  CHECK_THROWS_WITH(quant::apply_quantizer_state(*b, json{{"format", "other"}}, "q"),
                    Catch::Contains("not a qgrad quantizer state file"));
  // A format that is no string (found by fuzz_quantizer_state: nlohmann's type_error escaped).
  CHECK_THROWS_WITH(quant::apply_quantizer_state(*b, json{{"format", 1}}, "q"),
                    Catch::Contains("not a qgrad quantizer state file"));
  CHECK_THROWS_WITH(quant::load_quantizer_state(*b, "/nonexistent-dir/q.json"),
                    Catch::Contains("/nonexistent-dir/q.json"));
  auto float_model = nn::make_model("lenet5bn", 1);
  CHECK_THROWS_WITH(quant::quantizer_state_json(*float_model),
                    Catch::Contains("the model has no quantizer"));
}

TEST_CASE("quantizer state file: non-finite values survive; unwritable paths leave nothing",
          "[quant]") {
  // A fused observer that never saw data holds min_val = +inf, max_val = -inf.
  auto model = fresh(quant::QuantRecipe::parse(R"({"family": "torch_ao"})"));
  const json file = json::parse(quant::quantizer_state_json(*model).dump());
  CHECK(file["quantizers"]["0._input_quantizer"]["state"]["activation_post_process.min_val"]
            ["values"][0] == "inf");
  auto b = fresh(quant::QuantRecipe::parse(R"({"family": "torch_ao"})"));
  quant::apply_quantizer_state(*b, file, "q");
  CHECK(quant::quantizer_state_json(*b) == file);

  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "qgrad_qstate_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  CHECK_THROWS_WITH(quant::save_quantizer_state(*model, (dir / "no/such/q.json").string()),
                    Catch::Contains("no/such/q.json"));
  CHECK(std::filesystem::is_empty(dir));
  quant::save_quantizer_state(*model, (dir / "q.json").string());
  CHECK(quant::load_quantizer_state(*b, (dir / "q.json").string()) == 10);
  std::filesystem::remove_all(dir);
}
