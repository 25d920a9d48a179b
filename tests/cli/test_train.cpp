// End to end on a small synthetic IDX dataset: a short training run writes its metrics, config
// and checkpoints; eval reproduces the run's test accuracy from a checkpoint; resuming from an
// epoch-boundary or a mid-epoch checkpoint gives bit-identical weights, optimiser state and
// metrics to an uninterrupted run; resuming with a changed config is refused. The same through
// the real `qgrad` binary, exit statuses included.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/command_dispatch.h"
#include "cli/eval_command.h"
#include "cli/train_command.h"
#include "cli/usage_error.h"
#include "cli_test_helpers.h"
#include "core/device.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/version.h"
#include "nn/models/zoo.h"
#include "nn/serialize/checkpoint.h"
#include "support/test_paths.h"

using namespace qgrad;
using namespace qgrad::cli;
using nlohmann::json;
using qgrad_cli_test::require_same_checkpoint;
using qgrad_cli_test::slurp;
using qgrad_cli_test::TempDir;

namespace {

TrainConfig tiny_config(const std::string& data_dir, const std::string& out_dir,
                        std::int64_t epochs) {
  json j{{"epochs", epochs},
         {"batch_size", 32},
         {"eval_batch_size", 64},
         {"threads", 2},
         {"data", {{"dir", data_dir}}},
         {"output", {{"progress", "off"}}}};
  if (!out_dir.empty()) j["output"]["dir"] = out_dir;
  return parse_train_config(j);
}

}  // namespace

TEST_CASE("train: a short run writes metrics and config and checkpoints and eval agrees", "[cli]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"));
  const TrainConfig config = tiny_config(tmp.file("data"), tmp.file("run"), 1);
  std::ostringstream out;
  const TrainOutcome r = run_training(config, out);
  INFO(out.str());
  CHECK_FALSE(r.interrupted);
  CHECK(r.output_dir == tmp.file("run"));
  REQUIRE(r.epochs.size() == 1);
  const EpochMetrics& m = r.epochs[0];
  CHECK(m.epoch == 1);
  CHECK(std::isfinite(m.train_loss));
  CHECK(m.images_per_s > 0);
  CHECK(m.lr == 0.05);
  // 8 SGD steps on an easy synthetic problem: far above chance (10%).
  CHECK(m.test_acc > 0.3);
  CHECK_THAT(out.str(),
             Catch::Contains("epoch 1/1: train loss") && Catch::Contains("best test accuracy"));
  for (const char* f : {"config.json", "metrics.jsonl", "last.safetensors", "best.safetensors"})
    CHECK(std::filesystem::exists(tmp.file(std::string("run/") + f)));
  CHECK_FALSE(std::filesystem::exists(tmp.file("run/epoch_1.safetensors")));
  const json saved = json::parse(slurp(tmp.file("run/config.json")));
  CHECK(saved["output"]["dir"] == tmp.file("run"));
  CHECK(saved["optimizer"]["lr"] == 0.05);
  // Which qgrad ran, and the file still parses as a config (the key is informational).
  CHECK(saved["qgrad"]["version"] == qgrad::version());
  CHECK(saved["qgrad"]["commit"] == qgrad::git_commit());
  CHECK(parse_train_config(saved).optimizer.lr == 0.05);
  CHECK(serialize::load_checkpoint(tmp.file("run/last.safetensors"))
            .metadata.at("cli.qgrad_version") == qgrad::version_string());
  const std::vector<EpochMetrics> logged = MetricsLog::read(tmp.file("run/metrics.jsonl"));
  REQUIRE(logged.size() == 1);
  CHECK(logged[0].test_acc == m.test_acc);

  std::ostringstream eval_out;
  EvalOptions eo;
  eo.checkpoint = tmp.file("run/last.safetensors");
  eo.batch_size = 7;  // a different batching must not change the result
  const EvalResult e = run_eval(eo, eval_out);
  CHECK(e.count == 100);
  CHECK(e.accuracy == m.test_acc);
  CHECK(e.loss == Approx(m.test_loss).epsilon(1e-5));
  CHECK_THAT(eval_out.str(), Catch::Contains("test accuracy") &&
                                 Catch::Contains("compiled (batch norm folded, fused)"));
  // --no-fuse: the module's forward, the same result up to float rounding.
  eo.fuse = false;
  std::ostringstream module_out;
  const EvalResult unfused = run_eval(eo, module_out);
  CHECK(unfused.accuracy == e.accuracy);
  CHECK(unfused.loss == Approx(e.loss).epsilon(1e-5));
  CHECK_THAT(module_out.str(), Catch::Contains("module forward (--no-fuse)"));
}

TEST_CASE("train: output.dir is a folder, and an earlier run there is never overwritten", "[cli]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"));
  std::ostringstream out;
  // A file: a usage error (exit 2) before any work; it was a filesystem error (exit 1).
  qgrad_cli_test::write_text(tmp.file("a_file"), "x");
  CHECK_THROWS_AS(run_training(tiny_config(tmp.file("data"), tmp.file("a_file"), 1), out),
                  UsageError);
  CHECK_THROWS_WITH(
      run_training(tiny_config(tmp.file("data"), tmp.file("a_file"), 1), out),
      Catch::Contains("train: output.dir '" + tmp.file("a_file") + "' is a file, not a folder"));
  // A FIFO is named as what it is (it was called "a file").
  REQUIRE(::mkfifo(tmp.file("fifo").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(run_training(tiny_config(tmp.file("data"), tmp.file("fifo"), 1), out),
                    Catch::Contains("train: output.dir '" + tmp.file("fifo") +
                                    "' is a device, FIFO or socket, not a folder"));

  // A second run into the folder of a finished one: refused, the first run's files untouched.
  run_training(tiny_config(tmp.file("data"), tmp.file("run"), 1), out);
  const std::string before = read_file(tmp.file("run/last.safetensors"), "test");
  CHECK_THROWS_AS(run_training(tiny_config(tmp.file("data"), tmp.file("run"), 1), out), UsageError);
  CHECK_THROWS_WITH(run_training(tiny_config(tmp.file("data"), tmp.file("run"), 1), out),
                    Catch::Contains("output.dir '" + tmp.file("run") + "' holds an earlier run") &&
                        Catch::Contains("last.safetensors") &&
                        Catch::Contains("continue it with \"resume\""));
  CHECK(read_file(tmp.file("run/last.safetensors"), "test") == before);
  // Resuming that run into its own folder is what continues it; resuming another run into it
  // would overwrite it.
  TrainConfig more = tiny_config(tmp.file("data"), tmp.file("run"), 1);
  more.resume = tmp.file("run/last.safetensors");
  CHECK_FALSE(run_training(more, out).interrupted);
  run_training(tiny_config(tmp.file("data"), tmp.file("other"), 1), out);
  TrainConfig cross = tiny_config(tmp.file("data"), tmp.file("run"), 1);
  cross.resume = tmp.file("other/last.safetensors");
  CHECK_THROWS_WITH(run_training(cross, out), Catch::Contains("holds an earlier run"));
}

TEST_CASE("train: resuming gives bit-identical results to an uninterrupted run", "[cli]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"));
  std::ostringstream out;
  // Uninterrupted: 2 epochs, keeping the epoch-1 checkpoint.
  TrainConfig full = tiny_config(tmp.file("data"), tmp.file("full"), 2);
  full.output.checkpoint_every = 1;
  const TrainOutcome a = run_training(full, out);
  REQUIRE(a.epochs.size() == 2);
  REQUIRE(std::filesystem::exists(tmp.file("full/epoch_1.safetensors")));

  {  // from the end of epoch 1
    TrainConfig resumed = tiny_config(tmp.file("data"), tmp.file("resumed"), 2);
    resumed.resume = tmp.file("full/epoch_1.safetensors");
    const TrainOutcome b = run_training(resumed, out);
    require_same_checkpoint(tmp.file("full/last.safetensors"),
                            tmp.file("resumed/last.safetensors"));
    // The new folder's metrics start with epoch 1's, carried over from the checkpoint's folder.
    REQUIRE(b.epochs.size() == 2);
    CHECK(b.epochs[0].images_per_s == a.epochs[0].images_per_s);
    CHECK(b.epochs[1].train_loss == a.epochs[1].train_loss);
    CHECK(b.epochs[1].test_acc == a.epochs[1].test_acc);
    CHECK(MetricsLog::read(tmp.file("resumed/metrics.jsonl")).size() == 2);
  }

  {  // from the middle of epoch 1 (as after Ctrl-C), into the same folder
    TrainConfig first = tiny_config(tmp.file("data"), tmp.file("cut"), 2);
    const TrainOutcome c = run_training(first, out, [](std::int64_t step) { return step == 3; });
    CHECK(c.interrupted);
    CHECK(c.epochs.empty());
    CHECK_THAT(out.str(), Catch::Contains("interrupted at epoch 1, batch 3/8"));
    const serialize::Checkpoint cut = serialize::load_checkpoint(tmp.file("cut/last.safetensors"));
    CHECK(cut.epoch == 0);
    CHECK(cut.step == 3);
    CHECK(cut.extra.at("loader.batch").item<std::int64_t>() == 3);

    TrainConfig second = tiny_config(tmp.file("data"), "", 2);  // output: the checkpoint's folder
    second.resume = tmp.file("cut/last.safetensors");
    const TrainOutcome d = run_training(second, out);
    CHECK(d.output_dir == tmp.file("cut"));
    require_same_checkpoint(tmp.file("full/last.safetensors"), tmp.file("cut/last.safetensors"));
    REQUIRE(d.epochs.size() == 2);
    for (int e = 0; e < 2; ++e) {
      CHECK(d.epochs[e].train_loss == a.epochs[e].train_loss);
      CHECK(d.epochs[e].train_acc == a.epochs[e].train_acc);
      CHECK(d.epochs[e].test_acc == a.epochs[e].test_acc);
    }
  }

  {  // with a config that changes the run: refused
    TrainConfig changed = tiny_config(tmp.file("data"), tmp.file("changed"), 2);
    changed.batch_size = 16;
    changed.resume = tmp.file("full/epoch_1.safetensors");
    REQUIRE_THROWS_AS(run_training(changed, out), UsageError);
    REQUIRE_THROWS_WITH(run_training(changed, out),
                        Catch::Contains("'batch_size' is 32 in the checkpoint"));
    changed.batch_size = 32;
    changed.optimizer.lr = 0.1;
    REQUIRE_THROWS_WITH(run_training(changed, out),
                        Catch::Contains("'optimizer.lr' is 0.05 in the checkpoint") &&
                            Catch::Contains("but 0.1 in this config"));
    // Another thread count is allowed, with a note that the last bits will differ.
    changed.optimizer.lr = 0.05;
    changed.threads = 1;
    std::ostringstream note;
    run_training(changed, note);
    CHECK_THAT(note.str(), Catch::Contains("note: the checkpoint was trained with 2 threads"));
  }
}

TEST_CASE("train: usage and config errors through the command line", "[cli]") {
  TempDir tmp;
  std::ostringstream out, err;
  CHECK(run_command_line({"--help"}, out, err) == 0);
  CHECK_THAT(out.str(), Catch::Contains("train") && Catch::Contains("eval") &&
                            Catch::Contains("optimizer.lr") && Catch::Contains("0.05"));
  out.str("");
  CHECK(run_command_line({"train", "--help"}, out, err) == 0);
  CHECK_THAT(out.str(), Catch::Contains("--config") && Catch::Contains("schedule.milestones"));
  out.str("");
  CHECK(run_command_line({"eval", "--help"}, out, err) == 0);
  CHECK_THAT(out.str(), Catch::Contains("--checkpoint") && Catch::Contains("--batch-size"));
  CHECK(err.str().empty());

  CHECK(run_command_line({}, out, err) == 2);
  CHECK(run_command_line({"frobnicate"}, out, err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("unknown command 'frobnicate'"));
  err.str("");
  CHECK(run_command_line({"train", "--bogus"}, out, err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("unknown argument '--bogus'"));
  err.str("");
  CHECK(run_command_line({"eval"}, out, err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("--checkpoint FILE is required"));
  err.str("");
  CHECK(run_command_line({"eval", "--checkpoint", "x", "--batch-size", "0"}, out, err) == 2);
  CHECK_THAT(err.str(),
             Catch::Contains("--batch-size must be an integer in [1, 1000000000], got '0'"));
  // Beyond int (compute_threads narrows to int) or int64: usage errors, never truncated.
  err.str("");
  CHECK(run_command_line({"eval", "--checkpoint", "x", "--threads", "4294967297"}, out, err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("--threads must be an integer in [1, 4096]"));
  err.str("");
  CHECK(run_command_line({"eval", "--checkpoint", "x", "--batch-size=99999999999999999999"}, out,
                         err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("--batch-size must be an integer in [1, 1000000000]"));

  qgrad_cli_test::write_text(tmp.file("bad.json"), R"({"optimizer": {"lr": -1}})");
  err.str("");
  CHECK(run_command_line({"train", "--config", tmp.file("bad.json")}, out, err) == 2);
  CHECK(err.str() == "qgrad train: error: config file '" + tmp.file("bad.json") +
                         "': optimizer.lr must be a positive number, got -1\n");

  // A missing dataset is not a usage error (exit 1), and the message names the folder.
  qgrad_cli_test::write_text(
      tmp.file("nodata.json"),
      json{{"data", {{"dir", tmp.file("nowhere")}}}, {"output", {{"dir", tmp.file("o")}}}}.dump());
  err.str("");
  CHECK(run_command_line({"train", "--config=" + tmp.file("nodata.json")}, out, err) == 1);
  CHECK_THAT(err.str(), Catch::Contains(tmp.file("nowhere")));

  err.str("");
  CHECK(run_command_line({"eval", "--checkpoint", tmp.file("missing.safetensors")}, out, err) == 1);
  CHECK_THAT(err.str(), Catch::Contains("missing.safetensors"));

  if (!cuda_is_available()) {
    qgrad_cli_test::write_text(tmp.file("cuda.json"), R"({"device": "cuda"})");
    err.str("");
    CHECK(run_command_line({"train", "--config", tmp.file("cuda.json")}, out, err) == 2);
    CHECK_THAT(err.str(), Catch::Contains("device \"cuda\" is not available"));
  }
}

TEST_CASE("train: the qgrad binary trains and evaluates", "[cli]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"));
  const std::string bin = qgrad_test::binary_dir() + "/cli/qgrad";
  REQUIRE(std::filesystem::exists(bin));
  qgrad_cli_test::write_text(tmp.file("c.json"),
                             json{{"epochs", 1},
                                  {"batch_size", 64},
                                  {"threads", 2},
                                  {"data", {{"dir", tmp.file("data")}}},
                                  {"output", {{"dir", tmp.file("run")}, {"log_interval_s", 0}}}}
                                 .dump());
  const std::string log = tmp.file("train.log");
  int rc =
      std::system((bin + " train --config " + tmp.file("c.json") + " > " + log + " 2>&1").c_str());
  const std::string text = slurp(log);
  INFO(text);
  REQUIRE(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 0);
  // Not a terminal: plain progress lines (one per batch at interval 0), no carriage returns.
  CHECK_THAT(text, Catch::Contains("epoch 1/1 batch 1/4"));
  CHECK(text.find('\r') == std::string::npos);
  CHECK_THAT(text, Catch::Contains("best test accuracy"));

  rc = std::system(
      (bin + " eval --checkpoint " + tmp.file("run/best.safetensors") + " > " + log + " 2>&1")
          .c_str());
  INFO(slurp(log));
  REQUIRE(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 0);
  CHECK_THAT(slurp(log), Catch::Contains("test accuracy"));

  rc = std::system(
      (bin + " train --config " + tmp.file("missing.json") + " > " + log + " 2>&1").c_str());
  CHECK(WEXITSTATUS(rc) == 1);
  qgrad_cli_test::write_text(tmp.file("bad.json"), R"({"epochs": 0})");
  rc = std::system(
      (bin + " train --config " + tmp.file("bad.json") + " > " + log + " 2>&1").c_str());
  CHECK(WEXITSTATUS(rc) == 2);
  CHECK_THAT(slurp(log), Catch::Contains("epochs must be an integer >= 1, got 0"));
}

// AddressSanitizer reserves terabytes of address space, so it cannot run under `ulimit -v`.
#if defined(__SANITIZE_ADDRESS__)
#define QGRAD_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QGRAD_TEST_UNDER_ASAN 1
#endif
#endif

TEST_CASE("train: threads that a memory limit cannot start are a usage error", "[cli]") {
#ifdef QGRAD_TEST_UNDER_ASAN
  WARN("not run under AddressSanitizer (it cannot start under a virtual memory limit)");
#else
  // libgomp aborted the process ("libgomp: Thread creation failed", exit 1) at the first
  // parallel region.
  TempDir tmp;
  const std::string bin = qgrad_test::binary_dir() + "/cli/qgrad";
  qgrad_cli_test::write_text(
      tmp.file("c.json"),
      json{{"epochs", 1}, {"threads", 4096}, {"output", {{"dir", tmp.file("run")}}}}.dump());
  const std::string log = tmp.file("train.log");
  const int rc = std::system(("bash -c 'ulimit -v 3000000 && exec " + bin + " train --config " +
                              tmp.file("c.json") + "' > " + log + " 2>&1")
                                 .c_str());
  const std::string text = slurp(log);
  INFO(text);
  REQUIRE(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 2);
  CHECK_THAT(text, Catch::Contains("threads: 4096 threads cannot run here") &&
                       Catch::Contains("use fewer"));
  CHECK_FALSE(std::filesystem::exists(tmp.file("run")));
#endif
}

TEST_CASE("train: grad_clip bounds each step's update by the clipped gradient norm", "[cli]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"));  // 256 images: 8 steps of 32
  // Plain SGD (no momentum or weight decay): a step moves the parameters by exactly lr times the
  // clipped gradient, whose total norm is at most grad_clip.
  auto train = [&](const std::string& name, double clip) {
    json j{{"epochs", 1},
           {"batch_size", 32},
           {"eval_batch_size", 64},
           {"threads", 2},
           {"optimizer", {{"lr", 0.05}, {"momentum", 0.0}, {"weight_decay", 0.0}}},
           {"data", {{"dir", tmp.file("data")}}},
           {"output", {{"progress", "off"}, {"dir", tmp.file(name)}}}};
    if (clip > 0) j["grad_clip"] = clip;
    std::ostringstream out;
    run_training(parse_train_config(j), out);
    return serialize::load_checkpoint(tmp.file(name + "/last.safetensors")).model;
  };
  // The seed's initial parameters (not the buffers, which clipping does not touch).
  const TensorDict init = nn::make_model("lenet5bn", 0)->named_parameters();
  auto distance = [&](const TensorDict& w) {  // over the parameters, all together
    double s = 0;
    for (const auto& it : init) {
      const std::vector<double> a = it.value.to_vector<double>(),
                                b = w.at(it.key).to_vector<double>();
      for (std::size_t i = 0; i < a.size(); ++i) s += (b[i] - a[i]) * (b[i] - a[i]);
    }
    return std::sqrt(s);
  };
  const double bound = 8 * 0.05 * 1e-3;
  const double clipped = distance(train("clipped", 1e-3)), unclipped = distance(train("free", 0));
  INFO("moved " << clipped << " with grad_clip 1e-3 (bound " << bound << "), " << unclipped
                << " without");
  CHECK(clipped > 0);
  CHECK(clipped <= bound * (1 + 1e-4));
  CHECK(unclipped > 10 * bound);
}
