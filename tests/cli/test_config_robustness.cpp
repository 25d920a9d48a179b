// Regression tests for issue 9 in reading `qgrad train` configs: hostile JSON (100 000 nested
// brackets, 1e400, duplicate keys) is a usage error naming the file (exit status 2), never a
// crash or an nlohmann exception; integer keys have upper bounds and are never truncated; the
// schedule lengths in batches and the data loader's batch count cannot overflow. Each checks the
// exception type (or exit status) and the words of its message.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <limits>
#include <sstream>

#include "cli/command_dispatch.h"
#include "cli/train_config.h"
#include "cli/training_factory.h"
#include "cli/usage_error.h"
#include "cli_test_helpers.h"
#include "core/error.h"
#include "core/factory.h"
#include "nn/data/dataloader.h"
#include "nn/data/dataset.h"
#include "nn/models/zoo.h"
#include "nn/optim/sgd.h"
#include "support/test_paths.h"

using namespace qgrad;
using namespace qgrad::cli;
using nlohmann::json;
using qgrad_cli_test::slurp;
using qgrad_cli_test::TempDir;
using qgrad_cli_test::write_text;

namespace {

int run_binary(const std::string& args, const std::string& log) {
  const std::string bin = qgrad_test::binary_dir() + "/cli/qgrad";
  const int rc = std::system((bin + " " + args + " > " + log + " 2>&1").c_str());
  REQUIRE(WIFEXITED(rc));
  return WEXITSTATUS(rc);
}

}  // namespace

TEST_CASE("config robustness: 100 000 nested brackets in a config are a usage error, not a crash",
          "[cli]") {
  TempDir tmp;
  write_text(tmp.file("deep.json"), qgrad_cli_test::kDeepJson);
  REQUIRE_THROWS_AS(load_train_config(tmp.file("deep.json")), UsageError);
  REQUIRE_THROWS_WITH(load_train_config(tmp.file("deep.json")),
                      Catch::Contains("deep.json") && Catch::Contains("nesting deeper than 64"));
  // The real binary (it segfaulted): exit status 2 and the file named.
  const int rc = run_binary("train --config " + tmp.file("deep.json"), tmp.file("log"));
  INFO(slurp(tmp.file("log")));
  CHECK(rc == 2);
  CHECK_THAT(slurp(tmp.file("log")), Catch::Contains("nesting deeper"));
  // Nested values inside a valid object: the error names the key and never dumps the value.
  const std::string nested =
      "{\"data\": {\"normalize\": " + std::string(50, '[') + std::string(50, ']') + "}}";
  REQUIRE_THROWS_WITH(parse_train_config_text(nested, "config 'n.json'"),
                      Catch::Contains("config 'n.json': data.normalize must be an object") &&
                          Catch::Contains("got array of 1 element"));
}

TEST_CASE("config robustness: 1e400 and duplicate keys in a config exit 2 naming the file",
          "[cli]") {
  TempDir tmp;
  write_text(tmp.file("big.json"), R"({"optimizer": {"lr": 1e400}})");
  std::ostringstream out, err;
  CHECK(run_command_line({"train", "--config", tmp.file("big.json")}, out, err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("big.json") && Catch::Contains("out of range"));
  write_text(tmp.file("dup.json"), R"({"epochs": 1, "epochs": 2})");
  REQUIRE_THROWS_AS(load_train_config(tmp.file("dup.json")), UsageError);
  REQUIRE_THROWS_WITH(load_train_config(tmp.file("dup.json")),
                      Catch::Contains("dup.json") && Catch::Contains("duplicate key \"epochs\""));
  // A bad value names the file too (exit 2).
  write_text(tmp.file("neg.json"), R"({"optimizer": {"lr": -1}})");
  REQUIRE_THROWS_WITH(load_train_config(tmp.file("neg.json")),
                      Catch::Contains("config file '" + tmp.file("neg.json") +
                                      "': optimizer.lr must be a positive number, got -1"));
  // A directory is not a config (IOError, exit 1).
  REQUIRE_THROWS_AS(load_train_config(tmp.path()), IOError);
}

TEST_CASE(
    "config robustness: integer keys reject values beyond their bounds instead of overflowing",
    "[cli]") {
  const std::string max64 = std::to_string(std::numeric_limits<std::int64_t>::max());
  struct Case {
    std::string text, message;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"batch_size": )" + max64 + "}", "batch_size must be an integer <= 1000000000"},
           {R"({"eval_batch_size": )" + max64 + "}",
            "eval_batch_size must be an integer <= 1000000000"},
           {R"({"epochs": 100001})", "epochs must be an integer <= 100000"},
           {R"({"epochs": 18446744073709551615})", "epochs must be an integer in [1, 100000]"},
           {R"({"schedule": {"name": "step", "step_size": 100000000000000000}})",
            "schedule.step_size must be an integer <= 100000"},
           {R"({"schedule": {"name": "multistep", "milestones": [2, )" + max64 + "]}}",
            "schedule.milestones must be a non-empty list of strictly increasing integers, each "
            "an integer in [1, 100000], got " +
                max64 + " at position 1"},
           {R"({"schedule": {"warmup_steps": 1000000000000}})",
            "schedule.warmup_steps must be an integer <= 1000000000"},
           {R"({"output": {"checkpoint_every": 9223372036854775807}})",
            "output.checkpoint_every must be an integer <= 100000"},
           {R"({"threads": 100000})", "threads must be an integer <= 4096"},
           {R"({"batch_size": 128.0})", "batch_size must be an integer in [1, 1000000000]"},
           {R"({"seed": 18446744073709551615})", "seed must be an integer >= 0"},
           {R"({"quant": {"family": "nvidia", "weight": {"num_bits": 4294967304}}})",
            "quant: \"weight\": QuantDescriptor.from_json: 'num_bits' must be a bit count in "
            "[0, 64], got number 4294967304"},
       }) {
    INFO(c.text);
    REQUIRE_THROWS_AS(parse_train_config_text(c.text, "config 'x.json'"), UsageError);
    REQUIRE_THROWS_WITH(parse_train_config_text(c.text, "config 'x.json'"),
                        Catch::Contains(c.message));
  }
  // The largest values are accepted and their defaults computed without overflow.
  const TrainConfig c = parse_train_config_text(
      R"({"epochs": 100000, "batch_size": 1000000000, "schedule": {"name": "multistep"}})", "c");
  CHECK(c.schedule.milestones == std::vector<std::int64_t>{50000, 75000});
  CHECK(parse_train_config_text(R"({"epochs": 7, "schedule": {"name": "multistep"}})", "c")
            .schedule.milestones == std::vector<std::int64_t>{4, 6});
}

TEST_CASE("config robustness: schedule lengths in batches are computed with overflow checks",
          "[cli]") {
  TrainConfig c = parse_train_config(json{{"schedule", {{"name", "step"}}}});
  auto model = nn::make_model("lenet5bn", 0);
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.1));
  // Beyond the config's bounds (a programmatic TrainConfig): an error, not a negative step size.
  c.epochs = std::numeric_limits<std::int64_t>::max() / 2;
  REQUIRE_THROWS_AS(build_scheduler(c, sgd, 4), UsageError);
  REQUIRE_THROWS_WITH(build_scheduler(c, sgd, 4),
                      Catch::Contains("epochs") && Catch::Contains("does not fit"));
  c.epochs = 3;
  c.schedule.step_size = std::numeric_limits<std::int64_t>::max() / 2;
  REQUIRE_THROWS_WITH(build_scheduler(c, sgd, 4), Catch::Contains("schedule.step_size"));
}

TEST_CASE("config robustness: a batch size near INT64_MAX gives one batch, not zero", "[cli]") {
  auto set = std::make_shared<data::TensorDataset>(from_vector<float>({1, 2, 3, 4, 5}, {5, 1}),
                                                   from_vector<std::int64_t>({0, 1, 0, 1, 0}));
  for (const bool drop_last : {false, true}) {
    data::DataLoader loader(set, data::DataLoaderOptions()
                                     .batch_size(std::numeric_limits<std::int64_t>::max())
                                     .drop_last(drop_last)
                                     .prefetch(false));
    CHECK(loader.batches_per_epoch() == (drop_last ? 0 : 1));
    if (!drop_last) CHECK(loader.next()->data.shape()[0] == 5);
  }
}

TEST_CASE("config robustness: an argument that is not UTF-8 exits 2 before any work", "[cli]") {
  // It reached the first JSON write (the run's config, a checkpoint's metadata) and failed there
  // with nlohmann's raw type_error 316, after the training or calibration.
  TempDir tmp;
  const std::string latin1 = tmp.file("caf\xe9");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"train", "--config", latin1}, "argument 3"},
      {{"ptq", "--checkpoint", "x.safetensors", "--out", latin1}, "argument 5"}};
  for (const auto& [args, which] : cases) {
    std::ostringstream out, err;
    CHECK(run_command_line(args, out, err) == 2);
    CHECK_THAT(err.str(), Catch::Contains(which) && Catch::Contains("not valid UTF-8") &&
                              Catch::Contains("caf\xef\xbf\xbd"));
  }
  CHECK(std::filesystem::is_empty(tmp.path()));
}
