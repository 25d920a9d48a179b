// `qgrad sensitivity` (cli/sensitivity_command.h) on the small synthetic IDX dataset, and its
// parts: SqnrProbe's SQNR against a by-hand computation, data::Subset, every quantized layer of
// lenet5bn measured alone (fewer bits: lower SQNR for every quantizer), the float accuracy equal
// to an ordinary evaluation, sensitivity.json passing its format's checker, and bad arguments
// exiting 2 without files.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "cli/command_dispatch.h"
#include "cli/sensitivity_command.h"
#include "cli/sensitivity_file.h"
#include "cli/train_command.h"
#include "cli_test_helpers.h"
#include "core/device.h"
#include "core/factory.h"
#include "core/file_io.h"
#include "core/generator.h"
#include "core/json_parse.h"
#include "nn/data/dataset.h"
#include "quant/modules/sqnr_probe.h"
#include "quant/modules/tensor_quantizer.h"

using namespace qgrad;
using namespace qgrad::cli;
using nlohmann::json;
using qgrad_cli_test::TempDir;

namespace {

std::string train_float(const TempDir& tmp) {
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 128, 100);
  return qgrad_cli_test::train_tiny(tmp, "f", nullptr, 2);
}

SensitivityOptions options(const TempDir& tmp, const std::string& ckpt, const std::string& recipe,
                           const std::string& out) {
  SensitivityOptions o;
  o.source.checkpoint = ckpt;
  o.recipe.recipe = recipe;
  o.recipe.calibration_batches = 2;
  o.images = 60;
  o.out = tmp.file(out);
  o.source.threads = 2;
  o.plot = false;
  return o;
}

}  // namespace

TEST_CASE("sensitivity: SqnrProbe measures 10 log10(signal / noise) of its quantizer",
          "[cli][sensitivity]") {
  // An 8-bit per-tensor quantizer with amax 1: q(x) = round(x * 127) / 127.
  auto q = std::make_shared<quant::TensorQuantizer>(
      nvidia::QuantDescriptor::from_json(json{{"num_bits", 8}, {"amax", 1.0}}));
  quant::SqnrProbe probe(q);
  CHECK(std::isnan(probe.sqnr_db()));  // nothing seen yet
  const std::vector<float> xs{0.3f, -0.71f, 0.05f, 0.999f, -0.2f, 0.5f};
  const Tensor x = from_vector<float>(xs, {2, 3});
  const Tensor y = probe.forward(x);
  const std::vector<float> ys = y.contiguous().to_vector<float>();
  const std::vector<float> direct = q->forward(x).contiguous().template to_vector<float>();
  double signal = 0, noise = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    CHECK(ys[i] == direct[i]);  // the probe changes nothing
    CHECK(ys[i] == static_cast<float>(std::nearbyint(xs[i] * 127.0f) / 127.0f));
    signal += static_cast<double>(xs[i]) * xs[i];
    noise += (static_cast<double>(xs[i]) - ys[i]) * (static_cast<double>(xs[i]) - ys[i]);
  }
  CHECK(probe.sqnr_db() == Approx(10 * std::log10(signal / noise)).epsilon(1e-12));
  probe.forward(x);  // the sums accumulate over batches; the ratio stays
  CHECK(probe.elements() == 12);
  CHECK(probe.sqnr_db() == Approx(10 * std::log10(signal / noise)).epsilon(1e-12));
  // Values on the grid: no noise, infinite SQNR.
  probe.reset();
  probe.forward(from_vector<float>({0.0f, 1.0f, -1.0f}, {3}));
  CHECK(std::isinf(probe.sqnr_db()));
  REQUIRE_THROWS_AS(quant::SqnrProbe(nullptr), ValueError);
}

TEST_CASE("sensitivity: data::Subset", "[cli][sensitivity]") {
  auto base = std::make_shared<data::TensorDataset>(arange(0, 10).to(kFloat32).reshape({10, 1}),
                                                    arange(0, 10));
  auto first = data::Subset::first(base, 4);
  REQUIRE(first->size() == 4);
  CHECK(first->get(3).target.item<std::int64_t>() == 3);
  CHECK(data::Subset::first(base, 99)->size() == 10);
  data::Subset picked(base, {7, 2});
  CHECK(picked.get(0).target.item<std::int64_t>() == 7);
  REQUIRE_THROWS_AS(picked.get(2), IndexError);
  REQUIRE_THROWS_AS(data::Subset(base, {10}), IndexError);
}

TEST_CASE("sensitivity: every quantized layer alone, fewer bits lose more signal",
          "[cli][sensitivity]") {
  TempDir tmp;
  const std::string ckpt = train_float(tmp);
  std::ostringstream out8, out3;
  const SensitivityFile s8 = run_sensitivity(options(tmp, ckpt, "nvidia_int8", "s8"), out8);
  const SensitivityFile s3 =
      run_sensitivity(options(tmp, ckpt, R"({"recipe": "nvidia_int8", "weight": {"num_bits": 3},
                             "input": {"num_bits": 3}})",
                              "s3"),
                      out3);
  INFO(out8.str() << out3.str());
  REQUIRE(s8.layers.size() == 5);
  const std::vector<std::string> names{"0", "4", "9", "11", "13"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    INFO(names[i]);
    CHECK(s8.layers[i].name == names[i]);
    CHECK(s8.layers[i].accuracy >= 0);
    CHECK(s8.layers[i].accuracy <= 1);
    REQUIRE(s8.layers[i].sqnr_db.size() == 2);  // input, weight (sorted by role)
    CHECK(s8.layers[i].sqnr_db[0].first == "input");
    CHECK(s8.layers[i].sqnr_db[1].first == "weight");
    for (std::size_t r = 0; r < 2; ++r) {
      // int8: about 6 dB per bit over the 3-bit quantizer of the same layer.
      CHECK(s8.layers[i].sqnr_db[r].second > s3.layers[i].sqnr_db[r].second + 10);
      CHECK(s3.layers[i].sqnr_db[r].second > 0);
    }
  }
  CHECK(s8.float_accuracy == s3.float_accuracy);
  // The written file passes the format's checker and holds the same numbers.
  const SensitivityFile back = sensitivity_from_json(
      parse_json(read_file(tmp.file("s3/sensitivity.json"), "test"), "sensitivity.json"));
  REQUIRE(back.layers.size() == 5);
  CHECK(back.layers[1].accuracy == s3.layers[1].accuracy);
  CHECK(back.quantized_accuracy == s3.quantized_accuracy);
  CHECK_THAT(out3.str(), Catch::Contains("all layers"));
}

TEST_CASE("sensitivity: bad arguments exit 2 and write nothing", "[cli][sensitivity]") {
  TempDir tmp;
  qgrad_cli_test::write_text(tmp.file("a_file"), "x");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{}, "sensitivity: --checkpoint FILE is required"},
      {{"--checkpoint", "x.safetensors", "--images", "0"},
       "sensitivity: --images must be an integer in [1, "},
      {{"--checkpoint", "x.safetensors", "--method", "kl"},
       "sensitivity: --method must be one of max, entropy, mse, percentile, got 'kl'"},
      {{"--checkpoint", "x.safetensors", "--recipe", "lsq_w5a5"},
       "sensitivity: --recipe: quant recipe: unknown recipe \"lsq_w5a5\""},
      {{"--checkpoint", "x.safetensors", "--device", "gpu0"}, "sensitivity: --device: "},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> full{"sensitivity", "--out", tmp.file("out")};
    full.insert(full.end(), args.begin(), args.end());
    std::ostringstream out, err;
    CHECK(run_command_line(full, out, err) == 2);
    CHECK_THAT(err.str(), Catch::Contains(message));
    CHECK_FALSE(std::filesystem::exists(tmp.file("out")));
  }
  const std::string ckpt = train_float(tmp);
  std::ostringstream out, err;
  CHECK(run_command_line({"sensitivity", "--checkpoint", ckpt, "--out", tmp.file("a_file")}, out,
                         err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("--out '" + tmp.file("a_file") + "' is a file"));
  // An --out that cannot be written fails before the measurements, not when saving them.
  std::ostringstream out2, err2;
  CHECK(run_command_line({"sensitivity", "--checkpoint", ckpt, "--out", tmp.file("a_file/sub")},
                         out2, err2) == 1);
  CHECK_THAT(err2.str(),
             Catch::Contains("--out '" + tmp.file("a_file/sub") + "' cannot be written: '" +
                             tmp.file("a_file") + "' is not a folder"));
  CHECK(out2.str().find("layer") == std::string::npos);
  // --device: a recipe with CPU-only quantizers is refused by name, GPU or not; the default
  // recipe's run there, so without a GPU the device itself is refused. Nothing is measured.
  std::ostringstream out3, err3;
  CHECK(run_command_line(
            {"sensitivity", "--checkpoint", ckpt, "--out", tmp.file("o3"), "--recipe",
             R"({"family": "nvidia", "input": {"calib_method": "histogram"}})", "--device", "cuda"},
            out3, err3) == 2);
  CHECK_THAT(err3.str(), Catch::Contains("sensitivity: --device cuda: the \"quant\" recipe gives "
                                         "quantizers that run on the CPU only"));
  if (!cuda_is_available()) {
    std::ostringstream out4, err4;
    CHECK(run_command_line(
              {"sensitivity", "--checkpoint", ckpt, "--out", tmp.file("o4"), "--device", "cuda"},
              out4, err4) == 2);
    CHECK_THAT(err4.str(), Catch::Contains("sensitivity: --device cuda is not available"));
  }
  CHECK_FALSE(std::filesystem::exists(tmp.file("o3")));
  CHECK_FALSE(std::filesystem::exists(tmp.file("o4")));
}
