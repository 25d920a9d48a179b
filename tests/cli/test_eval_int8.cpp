// `qgrad eval --int8` on short QAT runs over a small synthetic dataset: the int8 conversion of a
// torch.ao and a pytorch_quantization lenet5bn agrees with the fake-quantized model (accuracy,
// top-1 agreement) and the report names the implementations (oneDNN's, qgrad's direct convolution);
// a float checkpoint is a usage error, a quantizer int8 cannot express (8-bit DoReFa weights) an
// error naming the layer, and PACT W4A4 and Horizon checkpoints run.
#include <catch2/catch.hpp>

#include <sstream>

#include "cli/command_options.h"
#include "cli/eval_command.h"
#include "cli/train_command.h"
#include "cli/train_config.h"
#include "cli/usage_error.h"
#include "cli_test_helpers.h"
#include "core/error.h"

using namespace qgrad;
using namespace qgrad::cli;
using nlohmann::json;
using qgrad_cli_test::TempDir;
using qgrad_cli_test::train_tiny;

TEST_CASE(
    "eval --int8: the int8 model agrees with the fake-quantized one and names its oneDNN "
    "implementations",
    "[cli]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 128, 100);
  for (const json& recipe : {json{{"family", "torch_ao"}},
                             json{{"family", "nvidia"}, {"calibration", {{"batches", 2}}}}}) {
    INFO(recipe.dump());
    EvalOptions eo;
    eo.checkpoint = train_tiny(tmp, recipe["family"].get<std::string>(), recipe);
    eo.batch_size = 7;  // 15 batches, the last one of 2 images: several primitive shapes
    eo.threads = 2;
    std::ostringstream plain_out, out;
    const EvalResult plain = run_eval(eo, plain_out);
    eo.int8 = true;
    const Int8Comparison c = run_eval_int8(eo, out);
    INFO(out.str());
    CHECK(c.count == 100);
    CHECK(c.fake_quant_correct == plain.correct);  // the same fake-quantized evaluation
    CHECK(c.agree >= 99);                          // measured: 100 of 100 for both recipes
    CHECK(std::abs(c.int8_correct - c.fake_quant_correct) <= 1);
    CHECK(c.fake_quant_time_s > 0);
    CHECK(c.int8_time_s > 0);
    CHECK_THAT(out.str(), Catch::Contains("fake-quant  accuracy") &&
                              Catch::Contains("int8        accuracy") &&
                              Catch::Contains("top-1 agreement") &&
                              Catch::Contains("layer '0' (QuantConv2d): int8 direct conv 1->6") &&
                              Catch::Contains("layer '4' (QuantConv2d): int8 conv 6->16") &&
                              Catch::Contains("layer '13' (QuantLinear): int8 linear 84->10"));
  }
}

TEST_CASE(
    "eval --int8: a float checkpoint is a usage error, 8-bit DoReFa weights name the layer, PACT "
    "W4A4 and Horizon run",
    "[cli]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 64, 20);
  EvalOptions eo;
  eo.checkpoint = train_tiny(tmp, "float", nullptr);
  eo.int8 = true;
  std::ostringstream out;
  CHECK_THROWS_AS(run_eval_int8(eo, out), UsageError);
  CHECK_THROWS_WITH(run_eval_int8(eo, out),
                    Catch::Contains("--int8 needs a quantization-aware checkpoint") &&
                        Catch::Contains("was trained float"));
  // DoReFa's 8-bit weights (the pact family's default) have no int8 form; 4-bit ones do.
  eo.checkpoint = train_tiny(tmp, "pact", json{{"family", "pact"}});
  CHECK_THROWS_WITH(run_eval_int8(eo, out),
                    Catch::Contains("int8 convert: layer '0' (QuantConv2d) weight quantizer") &&
                        Catch::Contains("DoReFaWeightQuantizer) has num_bits 8"));
  eo.checkpoint = train_tiny(
      tmp, "pact4",
      json{{"family", "pact"}, {"weight", {{"num_bits", 4}}}, {"input", {{"num_bits", 4}}}});
  std::ostringstream pact_out;
  CHECK_NOTHROW(run_eval_int8(eo, pact_out));
  CHECK(pact_out.str().find("int8") != std::string::npos);
  eo.checkpoint =
      train_tiny(tmp, "horizon", json{{"family", "horizon"}, {"calibration", {{"batches", 2}}}});
  std::ostringstream horizon_out;
  CHECK_NOTHROW(run_eval_int8(eo, horizon_out));
  CHECK(horizon_out.str().find("int8") != std::string::npos);

  CHECK_THROWS_WITH(
      parse_command_options("eval", {"--int8=1"}, {"--checkpoint"}, nullptr, {"--int8"}),
      Catch::Contains("eval: --int8 takes no value"));
  const auto opts = parse_command_options("eval", {"--int8", "--checkpoint", "f"}, {"--checkpoint"},
                                          nullptr, {"--int8"});
  REQUIRE(opts);
  CHECK(opts->at(0) == std::make_pair(std::string("--int8"), std::string()));
}
