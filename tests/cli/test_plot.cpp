// `qgrad plot`: run folders (metrics.jsonl written by MetricsLog) and the committed results.json
// and sensitivity.json of tests/fixtures/plot become valid PNG and SVG pictures that carry the
// run labels and layer names; bad arguments and bad files exit 2 naming the argument, key path
// and expectation and write nothing; a missing Python or matplotlib is an error (exit 1) saying
// what to install. The drawing tests need matplotlib and report SKIPPED (exit 77, which ctest
// shows as Skipped) where it is missing; the others run everywhere.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/command_dispatch.h"
#include "cli/metrics_log.h"
#include "cli/plot_command.h"
#include "cli/results_file.h"
#include "cli/sensitivity_file.h"
#include "cli/usage_error.h"
#include "cli_test_helpers.h"
#include "core/subprocess.h"
#include "support/test_paths.h"

using namespace qgrad::cli;
using nlohmann::json;
using qgrad::run_subprocess;
using qgrad::SubprocessResult;
using qgrad_cli_test::slurp;
using qgrad_cli_test::TempDir;
using qgrad_cli_test::write_text;
namespace fs = std::filesystem;

namespace {

const std::string kFixtures = qgrad_test::fixture_dir() + "/plot";

// A run folder as qgrad train leaves it: config.json and three epochs of metrics.jsonl.
void write_run(const std::string& dir, const std::string& model, bool qat, double acc_offset) {
  fs::create_directories(dir);
  json config{{"model", model}, {"epochs", 3}};
  config["quant"] = qat ? json{{"family", "lsq"}} : json(nullptr);
  write_text(dir + "/config.json", config.dump());
  MetricsLog log(dir + "/metrics.jsonl", 0);
  for (int e = 1; e <= 3; ++e) {
    EpochMetrics m;
    m.epoch = e;
    m.train_loss = 0.6 / e;
    m.test_acc = 0.80 + 0.03 * e + acc_offset;
    log.append(m);
  }
}

struct Outcome {
  int status;
  std::string out, err;
};

Outcome plot(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  std::vector<std::string> full{"plot"};
  full.insert(full.end(), args.begin(), args.end());
  const int status = run_command_line(full, out, err);
  return {status, out.str(), err.str()};
}

// Sets an environment variable for one scope (QGRAD_PYTHON), restoring the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

std::string python() {
  const char* env = std::getenv("QGRAD_PYTHON");
  return env && *env ? env : "/usr/bin/python3";
}

// Empty when the Python qgrad plot runs can import matplotlib, else why not.
std::string matplotlib_missing() {
  const SubprocessResult r = run_subprocess({python(), "-c", "import matplotlib"});
  if (r.status == 0) return "";
  // The last line says why ("ModuleNotFoundError: No module named 'matplotlib'").
  const std::string text = r.output.substr(0, r.output.find_last_not_of('\n') + 1);
  return python() + " cannot import matplotlib: " + text.substr(text.find_last_of('\n') + 1);
}

// ctest runs each test case alone (SKIP_RETURN_CODE 77): exit 77 there so the skip shows as
// Skipped; a run of the whole executable goes on, with the reason as a warning.
void skip_test(const std::string& reason) {
  std::cout << "SKIPPED: " << reason
            << " (install python3-matplotlib: QGRAD_WITH_PLOT=1 bash scripts/install_deps.sh)\n";
  if (Catch::getCurrentContext().getConfig()->getTestsOrTags().size() == 1) std::exit(77);
  WARN("SKIPPED: " << reason);
}

std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  if (!fs::exists(dir)) return names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

void check_png(const std::string& path) {
  INFO(path);
  const std::string bytes = qgrad_test::read_bytes(path);
  REQUIRE(bytes.size() > 8);
  CHECK(bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
  // A real chart at 150 dpi is tens of kilobytes; an empty canvas is a few.
  CHECK(bytes.size() > 20000);
}

std::string check_svg(const std::string& path) {
  INFO(path);
  const std::string text = slurp(path);
  CHECK(text.rfind("<?xml", 0) == 0);
  CHECK(text.find("<svg") != std::string::npos);
  CHECK(text.find("</svg>") != std::string::npos);
  CHECK(text.size() > 10000);
  return text;
}

}  // namespace

TEST_CASE("plot: the result file readers check the formats and round-trip", "[cli][plot]") {
  const json results = json::parse(slurp(kFixtures + "/results.json"));
  const ResultsFile r = results_from_json(results);
  REQUIRE(r.cells.size() == 7);
  CHECK(r.dataset.find("fashion-mnist") == 0);
  CHECK(r.cells[0].method == "float");
  CHECK_FALSE(r.cells[0].weight_bits);
  CHECK(std::isnan(r.cells[3].accuracy[2]));  // a null (diverged) seed
  CHECK(*r.cells[6].act_bits == 8);
  CHECK(results_from_json(results_to_json(r)).cells.size() == 7);
  CHECK(results_to_json(results_from_json(results_to_json(r))) == results_to_json(r));
  const auto [mean, stddev] = mean_and_std({0.5, std::nan(""), 0.7});
  CHECK(mean == Approx(0.6));
  CHECK(stddev == Approx(0.1414213562));
  CHECK(mean_and_std({0.5}).second == 0);
  CHECK(std::isnan(mean_and_std({std::nan("")}).first));

  const json sensitivity = json::parse(slurp(kFixtures + "/sensitivity.json"));
  const SensitivityFile s = sensitivity_from_json(sensitivity);
  REQUIRE(s.layers.size() == 5);
  CHECK(s.layers[0].name == "conv1");
  CHECK(s.layers[0].sqnr_db.size() == 2);
  CHECK(sensitivity_to_json(sensitivity_from_json(sensitivity_to_json(s))) ==
        sensitivity_to_json(s));

  // Each rule of docs/results_format.md, named by its key path.
  auto results_error = [&](const std::function<void(json&)>& edit) {
    json j = results;
    edit(j);
    try {
      results_from_json(j);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(results_error([](json& j) { j["schema"] = "qgrad.results/2"; }) ==
        "schema must be \"qgrad.results/1\", got \"qgrad.results/2\"");
  CHECK(results_error([](json& j) { j["cells"][1]["accuracy"][0] = 88.1; }) ==
        "cells[1].accuracy[0] must be a fraction in [0, 1] or null, got 88.1");
  CHECK_THAT(results_error([](json& j) { j["cells"][1]["mean"] = 0.5; }),
             Catch::StartsWith("cells[1].mean must be 0.901") &&
                 Catch::Contains("(computed from the accuracies), got 0.5"));
  CHECK(results_error([](json& j) { j["cells"][1]["accuracy"].erase(0); }) ==
        "cells[1].accuracy must be a list of 3 fractions or nulls (one per seed), got array of "
        "2 elements");
  CHECK(results_error([](json& j) { j["cells"][0]["weight_bits"] = 8; }) ==
        "cells[0].weight_bits must be null for a float cell");
  CHECK(results_error([](json& j) { j["cells"][2]["weight_bits"] = nullptr; }) ==
        "cells[2].weight_bits is required for a qat cell");
  CHECK(results_error([](json& j) { j["cells"][2]["method"] = "QAT"; }) ==
        "cells[2].method must be one of \"float\", \"qat\", \"ptq\", got \"QAT\"");
  CHECK_THAT(results_error([](json& j) { j["cells"][2]["seed"] = 1; }),
             Catch::StartsWith("unknown key 'cells[2].seed'"));
  CHECK_THAT(results_error([](json& j) { j["cell"] = json::array(); }),
             Catch::StartsWith("unknown key 'cell' (the results file accepts: schema,"));
  CHECK(results_error([](json& j) {
          j["cells"][2]["seeds"] = {1, 0, 2};
        }).find("cells[2].seeds must be a non-empty list of strictly increasing") == 0);
}

TEST_CASE("plot: bad arguments and bad files exit 2 naming them and write nothing", "[cli][plot]") {
  TempDir tmp;
  write_run(tmp.file("run_a"), "lenet5bn", false, 0);
  fs::create_directories(tmp.file("not_a_run"));
  const std::string out = tmp.file("pictures");
  auto expect_usage_error = [&](const std::vector<std::string>& args, const std::string& message) {
    const Outcome r = plot(args);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::StartsWith("qgrad plot: error: ") && Catch::Contains(message));
    CHECK(listing(out).empty());
  };
  expect_usage_error({},
                     "plot: expected at least one run folder, results.json or sensitivity.json");
  expect_usage_error({tmp.file("run_a"), "--out", out, "--format", "gif"},
                     "plot: --format must be png or svg, got 'gif'");
  expect_usage_error({tmp.file("run_a"), "--out", out, "--dpi", "300"},
                     "plot: unknown argument '--dpi' (see qgrad plot --help)");
  expect_usage_error({tmp.file("run_a"), "--out"}, "plot: --out needs a value");
  expect_usage_error({tmp.file("missing"), "--out", out},
                     "plot: '" + tmp.file("missing") +
                         "' does not exist (expected a run folder, a results.json or a "
                         "sensitivity.json)");
  expect_usage_error({tmp.file("not_a_run"), "--out", out},
                     "' is a folder without metrics.jsonl (expected a run folder of qgrad train)");
  write_text(tmp.file("other.json"), R"({"schema": "something/1"})");
  expect_usage_error({tmp.file("other.json"), "--out", out},
                     "' is neither a results.json nor a sensitivity.json (its \"schema\" must be "
                     "\"qgrad.results/1\" or \"qgrad.sensitivity/1\", got string \"something/1\"");
  json bad = json::parse(slurp(kFixtures + "/results.json"));
  bad["cells"][1]["accuracy"][0] = 88.1;
  write_text(tmp.file("bad_results.json"), bad.dump());
  expect_usage_error({tmp.file("run_a"), tmp.file("bad_results.json"), "--out", out},
                     "plot: '" + tmp.file("bad_results.json") +
                         "': cells[1].accuracy[0] must be a fraction in [0, 1] or null, got 88.1");
  json dup = json::parse(slurp(kFixtures + "/sensitivity.json"));
  dup["layers"][1]["name"] = "conv1";
  write_text(tmp.file("dup.json"), dup.dump());
  expect_usage_error({tmp.file("dup.json"), "--out", out},
                     "layers[1].name must be unique, got \"conv1\" twice");
  expect_usage_error(
      {kFixtures + "/sensitivity.json", kFixtures + "/sensitivity.json", "--out", out},
      "one sensitivity.json at a time");
  write_text(tmp.file("a_file"), "x");
  const Outcome file_out = plot({tmp.file("run_a"), "--out", tmp.file("a_file")});
  CHECK(file_out.status == 2);
  CHECK_THAT(file_out.err,
             Catch::Contains("--out '" + tmp.file("a_file") + "' exists and is not a folder"));

  // A run that has not finished an epoch is skipped; with nothing else it is an error.
  fs::create_directories(tmp.file("fresh"));
  write_text(tmp.file("fresh/metrics.jsonl"), "");
  const Outcome fresh = plot({tmp.file("fresh"), "--out", out});
  CHECK(fresh.status == 2);
  CHECK_THAT(fresh.out, Catch::Contains("has no epochs yet; run skipped"));
  CHECK_THAT(fresh.err, Catch::Contains("plot: nothing to draw"));
  CHECK(listing(out).empty());

  // A damaged (not JSON) file is a damaged-file error, exit 1, naming it.
  write_text(tmp.file("torn.json"), R"({"schema": "qgrad.results/1", "cells": [)");
  const Outcome torn = plot({tmp.file("torn.json"), "--out", out});
  CHECK(torn.status == 1);
  CHECK_THAT(torn.err, Catch::Contains(tmp.file("torn.json")));
  CHECK(listing(out).empty());
}

TEST_CASE("plot: a missing Python or matplotlib is an error naming what to install",
          "[cli][plot]") {
  TempDir tmp;
  write_run(tmp.file("run_a"), "lenet5bn", false, 0);
  const std::string out = tmp.file("pictures");
  CHECK_THAT(plot_script_path(), Catch::EndsWith("plot_runs.py"));
  {
    ScopedEnv env("QGRAD_PYTHON", tmp.file("no_such_python"));
    const Outcome r = plot({tmp.file("run_a"), "--out", out});
    CHECK(r.status == 1);
    CHECK_THAT(r.err,
               Catch::Contains("plot: cannot run Python '" + tmp.file("no_such_python") + "'") &&
                   Catch::Contains("install python3 and python3-matplotlib"));
  }
  {
    // python3 -S skips site-packages, where Debian's python3-matplotlib lives.
    write_text(tmp.file("bare_python"), "#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n");
    fs::permissions(tmp.file("bare_python"), fs::perms::owner_all);
    ScopedEnv env("QGRAD_PYTHON", tmp.file("bare_python"));
    const Outcome r = plot({tmp.file("run_a"), "--out", out});
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains("plot: matplotlib is missing for") &&
                          Catch::Contains("apt-get install python3-matplotlib"));
  }
  {
    // A drawing that fails (here a Python that only fails) reports its output; no picture.
    write_text(tmp.file("failing_python"), "#!/bin/sh\necho 'Traceback: boom' >&2\nexit 1\n");
    fs::permissions(tmp.file("failing_python"), fs::perms::owner_all);
    ScopedEnv env("QGRAD_PYTHON", tmp.file("failing_python"));
    const Outcome r = plot({tmp.file("run_a"), "--out", out});
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains("plot: drawing failed (") &&
                          Catch::Contains("exited with status 1):\nTraceback: boom"));
  }
  CHECK(listing(out).empty());
}

TEST_CASE("plot: run folders and result files become PNG pictures (qgrad binary)", "[cli][plot]") {
  if (const std::string why = matplotlib_missing(); !why.empty()) return skip_test(why);
  TempDir tmp;
  write_run(tmp.file("float_run"), "lenet5bn", false, 0);
  write_run(tmp.file("lsq_run"), "lenet5bn", true, -0.01);
  const std::string bin = qgrad_test::binary_dir() + "/cli/qgrad";
  const std::string log = tmp.file("plot.log");
  const int rc =
      std::system((bin + " plot " + tmp.file("float_run") + " " + tmp.file("lsq_run") + " " +
                   kFixtures + "/results.json " + kFixtures + "/sensitivity.json --out " +
                   tmp.file("pictures") + " > " + log + " 2>&1")
                      .c_str());
  INFO(slurp(log));
  REQUIRE(WIFEXITED(rc));
  REQUIRE(WEXITSTATUS(rc) == 0);
  CHECK_THAT(slurp(log), Catch::Contains("wrote " + tmp.file("pictures/training_curves.png")));
  // The three pictures and nothing else (no temporaries left behind).
  CHECK(listing(tmp.file("pictures")) ==
        std::vector<std::string>{"accuracy_vs_bits.png", "sensitivity.png", "training_curves.png"});
  for (const char* name : {"accuracy_vs_bits.png", "sensitivity.png", "training_curves.png"})
    check_png(tmp.file(std::string("pictures/") + name));
}

TEST_CASE("plot: a drawing that fails half-way leaves no picture behind", "[cli][plot]") {
  if (const std::string why = matplotlib_missing(); !why.empty()) return skip_test(why);
  TempDir tmp;
  write_run(tmp.file("run_a"), "lenet5bn", false, 0);
  // A folder where the second picture goes: both pictures are drawn to temporaries, then the
  // script must refuse before renaming the first, and remove both temporaries.
  const std::string out = tmp.file("out");
  fs::create_directories(out + "/sensitivity.png");
  const Outcome r = plot({tmp.file("run_a"), kFixtures + "/sensitivity.json", "--out", out});
  CHECK(r.status == 1);
  CHECK_THAT(r.err,
             Catch::Contains("plot: drawing failed (") &&
                 Catch::Contains("sensitivity.png is a folder; the picture would replace it"));
  CHECK(listing(out) == std::vector<std::string>{"sensitivity.png"});
  CHECK(listing(out + "/sensitivity.png").empty());
}

TEST_CASE("plot: values matplotlib cannot draw are one line naming the picture", "[cli][plot]") {
  // A loss of 1e308 passed the checks and ended in a matplotlib traceback.
  if (const std::string why = matplotlib_missing(); !why.empty()) return skip_test(why);
  TempDir tmp;
  write_run(tmp.file("run_a"), "lenet5bn", false, 0);
  std::string lines;
  for (int e = 1; e <= 2; ++e) {
    EpochMetrics m;
    m.epoch = e;
    m.train_loss = 1e308;
    m.test_acc = 0.5;
    lines += to_json(m).dump() + "\n";
  }
  write_text(tmp.file("run_a/metrics.jsonl"), lines);
  const std::string out = tmp.file("out");
  const Outcome r = plot({tmp.file("run_a"), "--out", out});
  INFO(r.err);
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains("matplotlib cannot draw training_curves (") &&
                        Catch::Contains("such as a loss of 1e308"));
  CHECK(r.err.find("Traceback") == std::string::npos);
  CHECK(listing(out).empty());
}

TEST_CASE("plot: SVG pictures carry the run labels, series and layer names", "[cli][plot]") {
  if (const std::string why = matplotlib_missing(); !why.empty()) return skip_test(why);
  TempDir tmp;
  write_run(tmp.file("float_run"), "lenet5bn", false, 0);
  // "$...$" would be a formula to matplotlib: a folder name must stay text.
  write_run(tmp.file("lsq_$x$_run"), "lenet5bn", true, -0.01);
  const std::string out = tmp.file("svg");
  const Outcome r =
      plot({tmp.file("float_run"), tmp.file("lsq_$x$_run"), kFixtures + "/results.json",
            kFixtures + "/sensitivity.json", "--out", out, "--format", "svg"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(listing(out) ==
        std::vector<std::string>{"accuracy_vs_bits.svg", "sensitivity.svg", "training_curves.svg"});
  const std::string curves = check_svg(out + "/training_curves.svg");
  CHECK_THAT(curves, Catch::Contains("float_run (lenet5bn, float)") &&
                         Catch::Contains("lsq_$x$_run (lenet5bn, QAT lsq)") &&
                         Catch::Contains("test accuracy (%)") && Catch::Contains("epoch"));
  const std::string bits = check_svg(out + "/accuracy_vs_bits.svg");
  CHECK_THAT(bits, Catch::Contains("lenet5bn lsq QAT (W=A)") &&
                       Catch::Contains("lenet5bn nvidia PTQ (A8)") &&
                       Catch::Contains("weight bit width"));
  const std::string layers = check_svg(out + "/sensitivity.svg");
  for (const char* name : {"conv1", "conv2", "fc1", "fc2", "fc3", "SQNR (dB)"})
    CHECK_THAT(layers, Catch::Contains(name));

  // Only the run: only training curves; old pictures of other kinds stay as they were.
  const Outcome again = plot({tmp.file("float_run"), "--out", out, "--format", "svg"});
  REQUIRE(again.status == 0);
  CHECK_THAT(slurp(out + "/training_curves.svg"), !Catch::Contains("lsq_$x$_run"));
  CHECK(listing(out).size() == 3);
}
