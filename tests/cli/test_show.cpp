// `qgrad show` (cli/show_command.h): a trained QAT checkpoint prints every quantized layer with its
// quantizers' trained state (the scales the checkpoint holds), a config or a zoo name with a named
// recipe prints the quantized model before calibration (LSQ's 4-bit middle layers and 8-bit first
// and last), a float model has no quantizers, and bad arguments are usage errors (exit 2).
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "cli/command_dispatch.h"
#include "cli_test_helpers.h"
#include "nn/serialize/checkpoint.h"

using namespace qgrad;
using qgrad_cli_test::TempDir;

namespace {

struct Run {
  int status;
  std::string out, err;
};
Run show(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"show"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::ostringstream out, err;
  const int status = cli::run_command_line(argv, out, err);
  return {status, out.str(), err.str()};
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("show: a QAT checkpoint prints its layers and the quantizers' trained state", "[cli]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"));
  const std::string ckpt =
      qgrad_cli_test::train_tiny(tmp, "qat", nlohmann::json{{"recipe", "torch_ao_default"}});
  const Run r = show({"--checkpoint", ckpt});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("lenet5bn, fake-quantized torch_ao") != std::string::npos);
  CHECK(count_of(r.out, "QuantConv2d(") == 2);
  CHECK(count_of(r.out, "QuantLinear(") == 3);
  CHECK(count_of(r.out, "FusedMovingAvgObsFakeQuantize(") == 10);
  CHECK(r.out.find("44448 parameters, 10 quantizers") != std::string::npos);
  // The first layer's input scale as the checkpoint stores it (printed with 17 digits).
  const serialize::Checkpoint c = serialize::load_checkpoint(ckpt);
  const double scale = c.model["0._input_quantizer.scale"].item<double>();
  std::ostringstream want;
  want.precision(17);
  want << "scale=" << scale << ",";
  CHECK(r.out.find(want.str()) != std::string::npos);
}

TEST_CASE("show: a zoo model with a named recipe, a config, and a float model", "[cli]") {
  const Run lsq = show({"--model", "lenet5bn", "--recipe", "lsq_w4a4"});
  INFO(lsq.out << lsq.err);
  REQUIRE(lsq.status == 0);
  CHECK(lsq.out.find("lenet5bn, quantized lsq, not calibrated") != std::string::npos);
  // 8-bit first and last layers, 4-bit weights in between (LSQ's convention).
  CHECK(count_of(lsq.out, "quant_min=-128, quant_max=127") == 3);  // first input, first/last w
  CHECK(count_of(lsq.out, "quant_min=-8, quant_max=7") == 3);
  CHECK(lsq.out.find("10 quantizers") != std::string::npos);
  // PACT's activation and DoReFa's weight quantizers count too (they calibrate nothing): five
  // weights, and the inputs of every layer but the first (the image is not clipped).
  const Run pact = show({"--model", "lenet5bn", "--recipe", "pact_w4a4"});
  INFO(pact.out << pact.err);
  REQUIRE(pact.status == 0);
  CHECK(pact.out.find("parameters, 9 quantizers") != std::string::npos);

  TempDir tmp;
  {
    std::ofstream f(tmp.file("c.json"));
    f << R"({"model": "vggfm", "quant": {"recipe": "nvidia_int8"}})";
  }
  const Run cfg = show({"--config", tmp.file("c.json")});
  INFO(cfg.out << cfg.err);
  REQUIRE(cfg.status == 0);
  CHECK(cfg.out.find("vggfm, quantized nvidia, not calibrated") != std::string::npos);
  CHECK(cfg.out.find("TensorQuantizer(") != std::string::npos);

  const Run plain = show({"--model", "resnet20"});
  REQUIRE(plain.status == 0);
  CHECK(plain.out.find("quantizers") == std::string::npos);
  CHECK(plain.out.find("(layer3): Sequential(") != std::string::npos);
}

TEST_CASE("show: bad arguments are usage errors naming the problem", "[cli]") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{}, "exactly one of --checkpoint, --config and --model"},
      {{"--model", "lenet5bn", "--config", "x.json"}, "exactly one of"},
      {{"--checkpoint", "a", "--recipe", "lsq_w4a4"}, "--recipe goes with --model"},
      {{"--model", "lenet5bn", "--recipe", "nope"}, "nope"},
      {{"--model", "alexnet"}, "alexnet"},
      {{"--model", "lenet5bn", "--recipe", "{bad"}, "neither a recipe name nor valid JSON"},
      {{"--bogus"}, "unknown argument '--bogus'"},
      // It printed the float model, as if no recipe were given (issue 25).
      {{"--model", "lenet5bn", "--recipe", ""}, "show: --recipe must not be empty"},
  };
  for (const auto& [args, message] : cases) {
    const Run r = show(args);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find(message) != std::string::npos);
  }
  const Run missing = show({"--checkpoint", "/nonexistent/x.safetensors"});
  CHECK(missing.status == 1);
  CHECK(missing.err.find("/nonexistent/x.safetensors") != std::string::npos);
}

TEST_CASE("show: --recipe is read as every command reads it (issue 26)", "[cli]") {
  // A recipe file, as ptq, autoquant and sensitivity take it.
  TempDir tmp;
  {
    std::ofstream f(tmp.file("r.json"));
    f << R"({"recipe": "lsq_w4a4"})";
  }
  const Run file = show({"--model", "lenet5bn", "--recipe", tmp.file("r.json")});
  INFO(file.out << file.err);
  REQUIRE(file.status == 0);
  CHECK(file.out.find("lenet5bn, quantized lsq, not calibrated") != std::string::npos);
  // Inline JSON through parse_json: a duplicate key is an error, not the last value silently.
  const Run dup = show({"--model", "lenet5bn", "--recipe", R"({"family": "lsq", "family": "x"})"});
  CHECK(dup.status == 2);
  CHECK(dup.err.find("neither a recipe name nor valid JSON") != std::string::npos);
  CHECK(dup.err.find("duplicate") != std::string::npos);
}
