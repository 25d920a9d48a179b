// Regression tests for issue 9 in training and evaluation: a damaged config stored in a
// checkpoint (bit flip, array, 100 000 nested brackets, 1e400) is an IOError naming the file,
// empty dataset splits are errors, a diverging run (nan loss) stops by default or continues
// without ever marking a nan model best, a resume reads nan metrics (null) back and drops a torn
// last metrics line, temporaries left by a killed write are removed on start, and a batch larger
// than the dataset is reported. Each checks the exception type (or exit status) and the words of
// its message.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/command_dispatch.h"
#include "cli/eval_command.h"
#include "cli/metrics_log.h"
#include "cli/summary_table.h"
#include "cli/train_command.h"
#include "cli_test_helpers.h"
#include "core/error.h"
#include "nn/models/zoo.h"
#include "nn/serialize/checkpoint.h"

using namespace qgrad;
using namespace qgrad::cli;
using nlohmann::json;
using qgrad_cli_test::slurp;
using qgrad_cli_test::TempDir;
using qgrad_cli_test::write_text;
namespace fs = std::filesystem;

namespace {

// 64 training and 32 test images: two batches of 32 per epoch, a fraction of a second each.
json small_run(const std::string& data_dir, const std::string& out_dir) {
  return json{{"epochs", 1},
              {"batch_size", 32},
              {"eval_batch_size", 32},
              {"threads", 2},
              {"data", {{"dir", data_dir}}},
              {"output", {{"dir", out_dir}, {"progress", "off"}}}};
}

// A checkpoint of an untrained lenet5bn whose stored config is `config_text`.
void write_checkpoint_with_config(const std::string& path, const std::string& config_text) {
  auto model = nn::make_model("lenet5bn", 0);
  serialize::save_checkpoint(path, *model, nullptr, nullptr, 1, 1, {{"cli.config", config_text}});
}

}  // namespace

TEST_CASE("train robustness: a damaged config stored in a checkpoint is an IOError naming the file",
          "[cli]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 64, 32);
  const std::string good = to_json(parse_train_config(json::object())).dump();
  std::string flipped = good;
  flipped[flipped.size() / 2] = '\x01';  // a bit flip inside the JSON text
  struct Case {
    std::string name, text, message;
  };
  for (const Case& c : std::vector<Case>{
           {"flipped", flipped, "not valid JSON"},
           {"array", "[1, 2]", "must be a JSON object, got array of 2 elements"},
           {"deep", qgrad_cli_test::kDeepJson, "nesting deeper than 64"},
           {"huge", R"({"epochs": 1e400})", "out of range"},
           {"badvalue", R"({"epochs": 0})", "is invalid: epochs must be an integer >= 1, got 0"},
       }) {
    INFO(c.name);
    const std::string ckpt = tmp.file(c.name + ".safetensors");
    write_checkpoint_with_config(ckpt, c.text);
    EvalOptions eo;
    eo.checkpoint = ckpt;
    std::ostringstream out;
    REQUIRE_THROWS_AS(run_eval(eo, out), IOError);
    REQUIRE_THROWS_WITH(run_eval(eo, out), Catch::Contains("eval: the training config stored in "
                                                           "checkpoint '" +
                                                           ckpt + "'") &&
                                               Catch::Contains(c.message));
    if (c.name == "badvalue") continue;  // resume compares keys, it does not validate them
    TrainConfig r = parse_train_config(small_run(tmp.file("data"), tmp.file("r")));
    r.resume = ckpt;
    REQUIRE_THROWS_AS(run_training(r, out), IOError);
    REQUIRE_THROWS_WITH(run_training(r, out), Catch::Contains("resume: the training config") &&
                                                  Catch::Contains(ckpt) &&
                                                  Catch::Contains(c.message));
    r.resume.clear();
    r.pretrained = ckpt;
    REQUIRE_THROWS_AS(run_training(r, out), IOError);
    REQUIRE_THROWS_WITH(run_training(r, out), Catch::Contains("pretrained: the training config") &&
                                                  Catch::Contains(c.message));
  }
  // Through the command line: exit status 1 (a broken file, not a usage error).
  std::ostringstream out, err;
  CHECK(run_command_line({"eval", "--checkpoint", tmp.file("array.safetensors")}, out, err) == 1);
  CHECK_THAT(err.str(), Catch::Contains("array.safetensors"));
}

TEST_CASE("train robustness: an empty train or test split is an error", "[cli]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("notrain"), 0, 32);
  qgrad_cli_test::write_synthetic_mnist(tmp.file("notest"), 64, 0);
  std::ostringstream out;
  // data::MNIST refuses an image file without images (it trained nothing and exited 0).
  const TrainConfig a = parse_train_config(small_run(tmp.file("notrain"), tmp.file("a")));
  REQUIRE_THROWS_AS(run_training(a, out), IOError);
  REQUIRE_THROWS_WITH(run_training(a, out),
                      Catch::Contains(tmp.file("notrain") + "/train-images-idx3-ubyte") &&
                          Catch::Contains("holds no images"));
  const TrainConfig b = parse_train_config(small_run(tmp.file("notest"), tmp.file("b")));
  REQUIRE_THROWS_WITH(run_training(b, out),
                      Catch::Contains(tmp.file("notest") + "/t10k-images-idx3-ubyte") &&
                          Catch::Contains("holds no images"));
  CHECK_FALSE(fs::exists(tmp.file("a")));  // nothing was written
  // eval of a checkpoint whose data folder has no test images (it printed 0.00% and exited 0).
  const std::string ckpt = tmp.file("c.safetensors");
  write_checkpoint_with_config(ckpt, to_json(b).dump());
  EvalOptions eo;
  eo.checkpoint = ckpt;
  REQUIRE_THROWS_AS(run_eval(eo, out), IOError);
  REQUIRE_THROWS_WITH(run_eval(eo, out),
                      Catch::Contains(tmp.file("notest") + "/t10k-images-idx3-ubyte") &&
                          Catch::Contains("holds no images"));
}

TEST_CASE("train robustness: a diverging run stops naming the epoch and step, and is never best",
          "[cli]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 64, 32);
  json j = small_run(tmp.file("data"), tmp.file("stop"));
  j["epochs"] = 2;
  j["batch_size"] = 8;  // 8 steps in epoch 1: the loss is nan long before the epoch ends
  j["optimizer"] = {{"lr", 1e9}};
  write_text(tmp.file("stop.json"), j.dump());
  std::ostringstream out, err;
  CHECK(run_command_line({"train", "--config", tmp.file("stop.json")}, out, err) == 1);
  CHECK_THAT(err.str(), Catch::Contains("the training loss is nan at epoch 1, batch ") &&
                            Catch::Contains("/8 (step ") &&
                            Catch::Contains("Lower optimizer.lr (now 1e+09)") &&
                            Catch::Contains("grad_clip") && Catch::Contains("nonfinite_loss"));
  CHECK_FALSE(fs::exists(tmp.file("stop/best.safetensors")));
  CHECK_FALSE(fs::exists(tmp.file("stop/last.safetensors")));

  // Two steps per epoch: the weights are nan after epoch 1 while its training losses were not,
  // so the test loss stops the run.
  j["batch_size"] = 32;
  j["output"]["dir"] = tmp.file("stop_test");
  REQUIRE_THROWS_AS(run_training(parse_train_config(j), out), TrainingDiverged);
  j["output"]["dir"] = tmp.file("stop_test2");  // the first run's metrics stay in stop_test
  REQUIRE_THROWS_WITH(run_training(parse_train_config(j), out),
                      Catch::Contains("the test loss is nan after epoch 1"));
  CHECK_FALSE(fs::exists(tmp.file("stop_test/best.safetensors")));
  CHECK_FALSE(fs::exists(tmp.file("stop_test2/best.safetensors")));
  j["batch_size"] = 32;

  // "continue": the run goes on, writes nan metrics as null, and never marks a nan model best.
  j["nonfinite_loss"] = "continue";
  j["output"]["dir"] = tmp.file("cont");
  j["output"]["checkpoint_every"] = 1;
  const TrainConfig c = parse_train_config(j);
  const TrainOutcome r = run_training(c, out);
  REQUIRE(r.epochs.size() == 2);
  CHECK(std::isnan(r.epochs[1].train_loss));
  CHECK_THAT(out.str(), Catch::Contains("had a non-finite loss") &&
                            Catch::Contains("no epoch with finite losses"));
  CHECK_FALSE(fs::exists(tmp.file("cont/best.safetensors")));
  CHECK(fs::exists(tmp.file("cont/last.safetensors")));
  CHECK_THAT(slurp(tmp.file("cont/metrics.jsonl")), Catch::Contains("\"train_loss\":null"));

  // Resume after the nan epoch (null read back as NaN), with a torn last metrics line (a kill
  // mid-write) and temporaries of killed checkpoint writes in the folder.
  const std::vector<EpochMetrics> logged = MetricsLog::read(tmp.file("cont/metrics.jsonl"));
  REQUIRE(logged.size() == 2);
  CHECK(std::isnan(logged[1].test_loss));
  std::ofstream(tmp.file("cont/metrics.jsonl"), std::ios::app) << R"({"epoch": 3, "train_lo)";
  for (const char* t : {"last.safetensors.tmp.999999999.1", "epoch_7.safetensors.tmp.999999999.2",
                        "metrics.jsonl.tmp.999999999.3", "config.json.tmp.999999999.4"})
    write_text(tmp.file(std::string("cont/") + t), "partial");
  write_text(tmp.file("cont/unrelated.tmp.999999999.5"), "kept");
  TrainConfig again = c;
  again.output.dir.clear();
  again.resume = tmp.file("cont/epoch_1.safetensors");
  std::ostringstream resumed;
  const TrainOutcome s = run_training(again, resumed);
  INFO(resumed.str());
  REQUIRE(s.epochs.size() == 2);
  CHECK(std::isnan(s.epochs[1].train_loss));
  CHECK_THAT(resumed.str(), Catch::Contains("warning: metrics log") &&
                                Catch::Contains("dropped the torn last line 3"));
  CHECK_THAT(resumed.str(), Catch::Contains("removed 1 temporary file of last.safetensors") &&
                                Catch::Contains("of epoch_7.safetensors") &&
                                Catch::Contains("of metrics.jsonl") &&
                                Catch::Contains("of config.json"));
  for (const auto& e : fs::directory_iterator(tmp.file("cont"))) {
    const std::string name = e.path().filename().string();
    INFO(name);
    CHECK(
        (name.find(".tmp.999999999.") == std::string::npos || name == "unrelated.tmp.999999999.5"));
  }
  CHECK(fs::exists(tmp.file("cont/unrelated.tmp.999999999.5")));
}

TEST_CASE("train robustness: metrics lines: null is NaN, a torn last line is dropped, others fail",
          "[cli]") {
  TempDir tmp;
  const std::string line = to_json(EpochMetrics{1, std::nan(""), 0.1, 2, 0.5, 9, 0.1, 1, 1}).dump();
  CHECK_THAT(line, Catch::Contains("\"train_loss\":null"));
  write_text(tmp.file("m.jsonl"), line + "\n" + R"({"epoch": 2, "tr)");
  std::string warning;
  const std::vector<EpochMetrics> m = MetricsLog::read(tmp.file("m.jsonl"), &warning);
  REQUIRE(m.size() == 1);
  CHECK(std::isnan(m[0].train_loss));
  CHECK_THAT(warning, Catch::Contains("torn last line 2"));
  // A damaged line before the end is an error naming the file and line.
  write_text(tmp.file("bad.jsonl"), R"({"epoch": 2, "tr)"
                                    "\n" +
                                        line + "\n");
  REQUIRE_THROWS_AS(MetricsLog::read(tmp.file("bad.jsonl")), IOError);
  REQUIRE_THROWS_WITH(MetricsLog::read(tmp.file("bad.jsonl")),
                      Catch::Contains("bad.jsonl' line 1"));
  write_text(tmp.file("deep.jsonl"), qgrad_cli_test::kDeepJson + "\n");
  REQUIRE_THROWS_WITH(MetricsLog::read(tmp.file("deep.jsonl")), Catch::Contains("nesting deeper"));
  write_text(tmp.file("epoch.jsonl"), R"({"epoch": 1.5})"
                                      "\n");
  REQUIRE_THROWS_WITH(MetricsLog::read(tmp.file("epoch.jsonl")),
                      Catch::Contains("no integer 'epoch' >= 1"));
  // The summary never calls a nan epoch best.
  std::vector<EpochMetrics> two{
      EpochMetrics{1, 1, 0.5, 1, 0.4, 9, 0.1, 1, 1},
      EpochMetrics{2, std::nan(""), 0.9, std::nan(""), 0.9, 9, 0.1, 1, 1}};
  CHECK_THAT(format_summary_table(two), Catch::Contains("best test accuracy 40.00% (epoch 1)"));
}

TEST_CASE("train robustness: a batch larger than the training set trains with a warning", "[cli]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 64, 32);
  json j = small_run(tmp.file("data"), tmp.file("run"));
  j["batch_size"] = 1000000000;
  std::ostringstream out;
  const TrainOutcome r = run_training(parse_train_config(j), out);
  REQUIRE(r.epochs.size() == 1);
  CHECK_THAT(out.str(), Catch::Contains("warning: batch_size 1000000000 is larger than the 64 "
                                        "training images") &&
                            Catch::Contains("1 epochs x 1 batches"));
}
