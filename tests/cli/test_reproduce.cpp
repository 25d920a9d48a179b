// `qgrad reproduce` (cli/reproduce_command.h) on the small synthetic IDX dataset with a tiny
// budget: every runnable cell of the paper table runs (FP32, PTQ, QAT fine-tuning from the FP32
// weights), results.json passes its own checker and results.md lists every row; started again,
// finished cells are skipped (same numbers), a cell whose record is gone is re-run from its run
// folder, a finished folder of other settings is refused, and bad arguments exit 2.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "cli/command_dispatch.h"
#include "cli/interrupted.h"
#include "cli/reproduce_cells.h"
#include "cli/reproduce_command.h"
#include "cli/results_file.h"
#include "cli/usage_error.h"
#include "cli_test_helpers.h"
#include "core/device.h"
#include "core/file_io.h"
#include "core/json_parse.h"
#include "support/cifar_files.h"

using namespace qgrad;
using namespace qgrad::cli;
using nlohmann::json;
using qgrad_cli_test::TempDir;

namespace {

ReproduceOptions tiny(const TempDir& tmp, std::vector<std::int64_t> seeds) {
  ReproduceOptions o;
  o.models = {"lenet5bn"};
  o.seeds = std::move(seeds);
  o.epochs = 1;
  o.qat_epochs = 1;
  o.batch_size = 32;
  o.calibration_batches = 2;
  o.threads = 2;
  o.out = tmp.file("r");
  o.data_dir = tmp.file("data");
  o.plots = false;
  return o;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("reproduce: every cell runs, the result files check, a second start resumes",
          "[cli][reproduce]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 128, 100);
  std::size_t runnable = 0;
  for (const ReproduceCell& c : reproduce_cells()) runnable += !c.method.empty();
  REQUIRE(runnable == 9);

  std::ostringstream out1;
  const ResultsFile first = run_reproduce(tiny(tmp, {0}), out1);
  INFO(out1.str());
  REQUIRE(first.cells.size() == runnable);
  for (const ResultCell& c : first.cells) {
    INFO(c.method << " " << c.recipe.value_or("-"));
    REQUIRE(c.accuracy.size() == 1);
    CHECK(c.accuracy[0] >= 0);
    CHECK(c.accuracy[0] <= 1);
  }
  // The written file passes the format's checker and holds what was returned.
  const json written = parse_json(read_file(tmp.file("r/results.json"), "test"), "results.json");
  const ResultsFile back = results_from_json(written);
  REQUIRE(back.cells.size() == runnable);
  CHECK(back.cells[3].recipe == first.cells[3].recipe);
  CHECK(back.cells[3].mean == first.cells[3].mean);
  // The PTQ cells are PTQ of the FP32 model: quantizing a converged small model at 8 bits keeps
  // its accuracy within a few images of 100.
  CHECK(std::abs(first.cells[1].mean - first.cells[0].mean) <= 0.05);
  const std::string md = read_file(tmp.file("r/results.md"), "test");
  CHECK(md.find("| FP32 | ") != std::string::npos);
  CHECK(md.find("| PACT W4A4 (DoReFa weights; first and last layer weights 8-bit) | ") !=
        std::string::npos);
  CHECK(md.find("69.2 (PACT paper) |") != std::string::npos);
  CHECK(md.find("| LSQ W2A2 (first and last layer 8-bit) | ") != std::string::npos);
  CHECK(std::filesystem::exists(tmp.file("r/lenet5bn/seed0/lsq_w4a4/cell.json")));
  CHECK(std::filesystem::exists(tmp.file("r/lenet5bn/seed0/ptq_int8_entropy/ptq.safetensors")));

  // Again with a second seed: seed 0 is skipped with the same numbers, seed 1 runs.
  std::ostringstream out2;
  const ResultsFile second = run_reproduce(tiny(tmp, {0, 1}), out2);
  CHECK(count(out2.str(), "seed 0 ") == runnable);
  CHECK(count(out2.str(), ": done before") == runnable);
  CHECK(count(out2.str(), "seed 1 ") == runnable);
  for (std::size_t i = 0; i < runnable; ++i) {
    CHECK(second.cells[i].accuracy[0] == first.cells[i].accuracy[0]);
    CHECK(second.cells[i].seeds == std::vector<std::int64_t>{0, 1});
  }

  // A cell without its record runs again: its training resumes from the run folder's
  // last.safetensors (already at the last epoch), giving the same accuracy.
  std::filesystem::remove(tmp.file("r/lenet5bn/seed1/lsq_w3a3/cell.json"));
  std::ostringstream out3;
  const ResultsFile third = run_reproduce(tiny(tmp, {0, 1}), out3);
  CHECK(count(out3.str(), ": done before") == 2 * runnable - 1);
  CHECK(out3.str().find("seed 1 lsq_w3a3 ... ") != std::string::npos);
  for (std::size_t i = 0; i < runnable; ++i)
    CHECK(third.cells[i].accuracy[1] == second.cells[i].accuracy[1]);

  // A finished folder of other settings is not reused.
  ReproduceOptions other = tiny(tmp, {0});
  other.qat_epochs = 2;
  std::ostringstream out4;
  REQUIRE_THROWS_WITH(run_reproduce(other, out4), Catch::Contains("was run with other settings") &&
                                                      Catch::Contains("give another --out"));
  // Nor one trained on other data (it was published as the same table's cell).
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data2"), 128, 100);
  ReproduceOptions moved = tiny(tmp, {0});
  moved.data_dir = tmp.file("data2");
  std::ostringstream out5;
  REQUIRE_THROWS_WITH(run_reproduce(moved, out5),
                      Catch::Contains("was run with other settings") && Catch::Contains("data2"));
}

// --dataset cifar10 on small files in the real binary format: FP32 and one QAT cell of a model
// built for 3x32x32 images, results.json says the dataset, results.md has APoT's anchors.
TEST_CASE("reproduce: --dataset cifar10 runs the table on CIFAR-10's binary files",
          "[cli][reproduce]") {
  TempDir tmp;
  qgrad_test::write_synthetic_cifar10(tmp.file("data"), 32, 64);
  ReproduceOptions o = tiny(tmp, {0});
  o.dataset = "cifar10";
  o.cells = "fp32,lsq_w4a4";
  std::ostringstream out;
  const ResultsFile r = run_reproduce(o, out);
  INFO(out.str());
  REQUIRE(r.cells.size() == 2);
  for (const ResultCell& c : r.cells) {
    CHECK(c.accuracy[0] >= 0);
    CHECK(c.accuracy[0] <= 1);
  }
  const json written = parse_json(read_file(tmp.file("r/results.json"), "test"), "results.json");
  CHECK(written.at("dataset") == "cifar10");
  const std::string md = read_file(tmp.file("r/results.md"), "test");
  CHECK(md.find("# qgrad reproduce: CIFAR-10") != std::string::npos);
  CHECK(md.find("Published (CIFAR-10 ResNet-20)") != std::string::npos);
  CHECK(md.find("92.96 (APoT FP) |") != std::string::npos);
  CHECK(md.find("92.45 (APoT 4-bit) |") != std::string::npos);
  CHECK(md.find("qgrad reproduce --dataset cifar10 --models lenet5bn") != std::string::npos);
  // The stored training config reads CIFAR with its augmentation.
  const json cfg =
      parse_json(read_file(tmp.file("r/lenet5bn/seed0/fp32/config.json"), "test"), "config");
  CHECK(cfg.at("data").at("format") == "cifar10");
  // Without --data-dir, or with an unknown dataset: usage errors before anything runs.
  ReproduceOptions no_dir = o;
  no_dir.data_dir.clear();
  std::ostringstream e1, e2;
  CHECK_THROWS_WITH(run_reproduce(no_dir, e1), Catch::Contains("needs --data-dir"));
  ReproduceOptions bad = o;
  bad.dataset = "imagenet";
  CHECK_THROWS_WITH(run_reproduce(bad, e2), Catch::Contains("--dataset must be"));
}

TEST_CASE("reproduce: Ctrl-C in a training cell is Interrupted (exit 130), then it resumes",
          "[cli][reproduce]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 128, 100);
  ReproduceOptions o = tiny(tmp, {0});
  o.cells = "fp32";
  // As a Ctrl-C after the second batch: the cell saves its checkpoint and stops. It was a
  // UsageError (exit 2), while Ctrl-C in a PTQ cell ends the process (130).
  o.stop_training = [](std::int64_t step) { return step >= 2; };
  std::ostringstream out1;
  CHECK_THROWS_AS(run_reproduce(o, out1), Interrupted);
  CHECK_THROWS_WITH(run_reproduce(o, out1), Catch::Contains("reproduce: interrupted in ") &&
                                                Catch::Contains("start the same command again"));
  CHECK(kInterruptedStatus == 130);
  o.stop_training = nullptr;
  std::ostringstream out2;
  const ResultsFile done = run_reproduce(o, out2);
  INFO(out2.str());
  REQUIRE(done.cells.size() == 1);
  CHECK(done.cells[0].accuracy.size() == 1);
}

TEST_CASE("reproduce: bad arguments exit 2 before anything runs", "[cli][reproduce]") {
  TempDir tmp;
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--cells", "fp32,lsq_w5a5"}, "--cells: unknown cell 'lsq_w5a5' (known: fp32, "},
      {{"--seeds", "1,0"}, "--seeds must be strictly increasing, got '1,0'"},
      {{"--seeds", "0,,1"}, "--seeds must be a comma-separated list"},
      {{"--models", "alexnet"}, "--models: unknown model 'alexnet'"},
      {{"--models", "lenet5bn,vggfm,lenet5bn"}, "--models names 'lenet5bn' twice"},
      {{"--epochs", "0"}, "--epochs must be an integer in [1, 100000], got '0'"},
      {{"--quick=yes"}, "--quick takes no value"},
      {{"--frobnicate", "1"}, "unknown argument '--frobnicate'"},
      {{"--device", "gpu"}, "--device: Device::parse: expected 'cpu', 'cuda' or 'cuda:N'"},
      // A cell whose quantizers are CPU-only is refused on the GPU, with or without one here.
      {{"--device", "cuda", "--quick", "--cells", "ptq_int8_entropy"},
       "--device cuda (cell ptq_int8_entropy, lenet5bn): the \"quant\" recipe gives quantizers "
       "that run on the CPU only"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> full{"reproduce", "--out", tmp.file("out")};
    full.insert(full.end(), args.begin(), args.end());
    std::ostringstream out, err;
    INFO(args[0]);
    CHECK(run_command_line(full, out, err) == 2);
    CHECK_THAT(err.str(), Catch::Contains("qgrad reproduce: error: reproduce: " + message) ||
                              Catch::Contains("qgrad reproduce: error: " + message));
    CHECK_FALSE(std::filesystem::exists(tmp.file("out")));
  }
  // --quick: lenet5bn, seed 0, 2 FP32 epochs and 1 QAT epoch unless given.
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 64, 40);
  {
    std::ostringstream out, err;
    CHECK(run_command_line(
              {"reproduce", "--quick", "--no-plots", "--cells", "fp32,lsq_w4a4", "--batch-size",
               "32", "--threads", "2", "--data-dir", tmp.file("data"), "--out", tmp.file("quick")},
              out, err) == 0);
    INFO(out.str() << err.str());
    CHECK_THAT(out.str(), Catch::Contains("lenet5bn seed 0 fp32 ... ") &&
                              Catch::Contains("lenet5bn seed 0 lsq_w4a4 ... ") &&
                              !Catch::Contains("seed 1"));
    const std::string md = read_file(tmp.file("quick/results.md"), "test");
    CHECK_THAT(md, Catch::Contains("--epochs 2 --qat-epochs 1 --cells fp32,lsq_w4a4"));
    CHECK(std::filesystem::exists(tmp.file("quick/lenet5bn/seed0/fp32/metrics.jsonl")));
  }
  if (!cuda_is_available()) {
    std::ostringstream o, e;
    CHECK(run_command_line({"reproduce", "--quick", "--device", "cuda", "--data-dir",
                            tmp.file("data"), "--out", tmp.file("gpu")},
                           o, e) == 2);
    CHECK_THAT(e.str(), Catch::Contains("is not available"));
    CHECK_FALSE(std::filesystem::exists(tmp.file("gpu")));
  }
  std::ostringstream out, err;
  CHECK(run_command_line({"reproduce", "--help"}, out, err) == 0);
  CHECK_THAT(out.str(), Catch::Contains("--quick") && Catch::Contains("lsq_w2a2"));
}
