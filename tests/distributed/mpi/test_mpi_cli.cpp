// `mpirun -np 2 qgrad train` and `qgrad ptq` in process (run_training / run_ptq on the job's
// ranks), against the same commands on one process with the global batch: rank 0 alone prints
// and writes, the epochs' metrics agree, a resume needs the same number of ranks, and
// distributed PTQ writes the quantizer state of single-process PTQ on the same batches.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "cli/cli_test_helpers.h"
#include "cli/ptq_command.h"
#include "cli/train_command.h"
#include "cli/usage_error.h"
#include "distributed/single_process_group.h"
#include "mpi_test_support.h"
#include "nn/serialize/checkpoint.h"

using namespace qgrad;
using namespace qgrad::cli;

namespace {

// A folder every rank sees: rank 0 makes it (and removes it when the test ends), the others
// learn its name.
class SharedDir {
 public:
  SharedDir() {
    auto g = qgrad_test::world();
    std::string name;
    if (g->rank() == 0) {
      own_.emplace();
      name = own_->path();
    }
    path_ = distributed::broadcast_string(*g, name);
  }
  ~SharedDir() { qgrad_test::world()->barrier(); }  // nobody reads it any more
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::optional<qgrad_test::TempDir> own_;
  std::string path_;
};

nlohmann::json tiny_config(const SharedDir& dir, const std::string& out, std::int64_t batch,
                           std::int64_t epochs, const nlohmann::json& quant) {
  nlohmann::json j{{"epochs", epochs},
                   {"batch_size", batch},
                   {"eval_batch_size", 50},
                   {"threads", 1},
                   {"data", {{"dir", dir.file("data")}}},
                   {"output", {{"progress", "off"}, {"dir", dir.file(out)}}}};
  if (!quant.is_null()) j["quant"] = quant;
  return j;
}

std::shared_ptr<distributed::ProcessGroup> alone() {
  return std::make_shared<distributed::SingleProcessGroup>();
}

}  // namespace

TEST_CASE("qgrad train on 2 ranks of batch B trains like one process of batch 2B", "[cli]") {
  auto g = qgrad_test::world();
  SharedDir dir;
  if (g->rank() == 0) qgrad_cli_test::write_synthetic_mnist(dir.file("data"), 256, 100);
  g->barrier();
  const nlohmann::json quant{{"recipe", "torch_ao_default"}};
  const std::string mine = "one_" + std::to_string(g->rank());
  for (const nlohmann::json& q : {nlohmann::json(), quant}) {
    INFO("quant " << q.dump());
    std::ostringstream two_out, one_out;
    // lenet5bn's batch norm with the global batch's statistics: the ranks then compute what one
    // process does (with each rank's own statistics they would not).
    nlohmann::json two_config = tiny_config(dir, "two", 16, 2, q);
    two_config["distributed"] = {{"sync_batchnorm", true}};
    const TrainOutcome two = run_training(parse_train_config(two_config), two_out, nullptr, g);
    if (g->rank() == 0) CHECK(two_out.str().find("SyncBatchNorm") != std::string::npos);
    const TrainOutcome one = run_training(parse_train_config(tiny_config(dir, mine, 32, 2, q)),
                                          one_out, nullptr, alone());
    // Rank 0 alone reports.
    CHECK(qgrad_test::same_on_all_ranks(from_vector<std::int64_t>(
        {g->rank() == 0 ? 1 : static_cast<std::int64_t>(two_out.str().empty())})));
    if (g->rank() == 0) CHECK(two_out.str().find("global batch 32") != std::string::npos);
    REQUIRE(two.epochs.size() == 2);
    REQUIRE(one.epochs.size() == 2);
    for (std::size_t e = 0; e < 2; ++e) {
      INFO("epoch " << e + 1);
      // The same examples in every step; float rounding apart (the global mean is summed in
      // another order), the same training. Fake quantization can round a value across a step
      // where the float weights differ in the last bits, so QAT gets a looser bound.
      const double tol = q.is_null() ? 1e-4 : 2e-2;
      CHECK(std::abs(two.epochs[e].train_loss - one.epochs[e].train_loss) <=
            tol * (1 + one.epochs[e].train_loss));
      CHECK(std::abs(two.epochs[e].test_loss - one.epochs[e].test_loss) <=
            tol * (1 + one.epochs[e].test_loss));
      CHECK(std::abs(two.epochs[e].test_acc - one.epochs[e].test_acc) <= (q.is_null() ? 0 : 0.03));
      // Every rank got the whole-set metrics.
      CHECK(qgrad_test::same_on_all_ranks(from_vector<double>(
          {two.epochs[e].train_loss, two.epochs[e].test_acc, two.epochs[e].test_loss})));
    }
    const serialize::Checkpoint c = serialize::load_checkpoint(dir.file("two/last.safetensors"));
    CHECK(c.metadata.at("cli.ranks") == "2");
    g->barrier();  // rank 0 removes the folder for the next run only after everybody read it
    if (g->rank() == 0) std::filesystem::remove_all(dir.file("two"));
    std::filesystem::remove_all(dir.file(mine));
    g->barrier();
  }
}

TEST_CASE("qgrad train: a 2-rank run resumes on 2 ranks only", "[cli]") {
  auto g = qgrad_test::world();
  SharedDir dir;
  if (g->rank() == 0) qgrad_cli_test::write_synthetic_mnist(dir.file("data"), 128, 50);
  g->barrier();
  std::ostringstream out;
  run_training(parse_train_config(tiny_config(dir, "run", 16, 1, nlohmann::json())), out, nullptr,
               g);
  nlohmann::json more = tiny_config(dir, "run", 16, 2, nlohmann::json());
  more["resume"] = dir.file("run/last.safetensors");
  // One process: a clear error (checked on every rank, each alone).
  CHECK_THROWS_WITH(
      run_training(parse_train_config(more), out, nullptr, alone()),
      Catch::Contains("trained by 2 data-parallel ranks") && Catch::Contains("mpirun -np 2"));
  g->barrier();
  const TrainOutcome resumed = run_training(parse_train_config(more), out, nullptr, g);
  // Rank 0 holds the whole run (from the metrics log), the others this call's epoch.
  CHECK(resumed.epochs.size() == (g->rank() == 0 ? 2u : 1u));
  CHECK(qgrad_test::same_on_all_ranks(from_vector<double>({resumed.epochs.back().test_acc})));
}

TEST_CASE("qgrad ptq on 2 ranks writes the quantizer state of one process on the same batches",
          "[cli]") {
  auto g = qgrad_test::world();
  SharedDir dir;
  if (g->rank() == 0) qgrad_cli_test::write_synthetic_mnist(dir.file("data"), 128, 50);
  g->barrier();
  // Each rank trains the same float model alone, in its own folder.
  const std::string mine = "float_" + std::to_string(g->rank());
  std::ostringstream out;
  run_training(parse_train_config(tiny_config(dir, mine, 32, 1, nlohmann::json())), out, nullptr,
               alone());
  for (const std::string recipe : {"torch_ao_default", "nvidia_int8"}) {
    INFO(recipe);
    PtqOptions o;
    o.source.checkpoint = dir.file(mine + "/last.safetensors");
    o.source.threads = 1;
    o.recipe.recipe = recipe;
    o.recipe.calibration_batches = 3;
    o.out = dir.file("ptq_two_" + recipe + ".safetensors");
    const PtqResult two = run_ptq(o, out, g);
    o.out = dir.file("ptq_one_" + recipe + "_" + std::to_string(g->rank()) + ".safetensors");
    const PtqResult one = run_ptq(o, out, alone());
    CHECK(two.calibration.images == one.calibration.images);
    CHECK(two.quantized.correct == one.quantized.correct);
    g->barrier();  // rank 0's file is complete
    const serialize::Checkpoint a = serialize::load_checkpoint(two.output);
    const serialize::Checkpoint b = serialize::load_checkpoint(one.output);
    qgrad_cli_test::require_same_tensors(a.model, b.model, "model");
  }
  // A calibration batch must split evenly.
  PtqOptions odd;
  odd.source.checkpoint = dir.file(mine + "/last.safetensors");
  odd.source.batch_size = 33;
  odd.out = dir.file("odd.safetensors");
  CHECK_THROWS_AS(run_ptq(odd, out, g), UsageError);
}
