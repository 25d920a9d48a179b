// qgrad train's JSON config: defaults, validation errors naming the key path, unknown keys, the
// "quant" recipe (validated and normalised by QuantRecipe), round trips through to_json, the
// --help key table covering every key, and the configs shipped in configs/ parsing.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <sstream>

#include <omp.h>

#include "cli/train_command.h"
#include "cli/train_config.h"
#include "cli/training_factory.h"
#include "cli/usage_error.h"
#include "cli_test_helpers.h"
#include "core/error.h"
#include "quant/modules/quant_recipe.h"
#include "support/test_paths.h"

using namespace qgrad;
using namespace qgrad::cli;
using nlohmann::json;

TEST_CASE("config: an empty config gives the documented defaults", "[cli]") {
  const TrainConfig c = parse_train_config(json::object());
  CHECK(c.model == "lenet5bn");
  CHECK(c.epochs == 3);
  CHECK(c.batch_size == 128);
  CHECK(c.seed == 0);
  CHECK(c.device == "cpu");
  CHECK(c.threads == 0);
  CHECK_FALSE(c.deterministic);
  CHECK(c.data.dir == "/usr/share/datasets/fashion-mnist");
  CHECK(c.data.normalize.enabled);
  CHECK(c.data.normalize.mean == std::vector<double>{0.2860});
  CHECK(c.data.normalize.std == std::vector<double>{0.3530});
  CHECK(c.data.augment.random_crop_padding == 0);
  CHECK_FALSE(c.data.augment.hflip);
  CHECK(c.optimizer.name == "sgd");
  CHECK(c.optimizer.lr == 0.05);
  CHECK(c.optimizer.momentum == 0.9);
  CHECK(c.optimizer.weight_decay == 5e-4);
  CHECK_FALSE(c.optimizer.nesterov);
  CHECK(c.schedule.name == "constant");
  CHECK(c.grad_clip == 0);
  CHECK(c.label_smoothing == 0);
  CHECK(c.output.dir.empty());
  CHECK(c.resume.empty());
  CHECK(c.pretrained.empty());
  CHECK_FALSE(c.quant);
  // null counts as absent.
  CHECK(parse_train_config(json(nullptr)).epochs == 3);
}

TEST_CASE("config: values are read and optimiser defaults depend on its name", "[cli]") {
  const TrainConfig c = parse_train_config(json::parse(R"({
    "model": "vggfm", "epochs": 2, "batch_size": 64, "seed": 7, "threads": 2, "deterministic": true,
    "data": {"dir": "/tmp/x", "normalize": {"mean": [0.1], "std": 0.2},
             "augment": {"random_crop_padding": 2, "hflip": true}},
    "optimizer": {"name": "adam", "betas": [0.8, 0.99], "eps": 1e-6},
    "schedule": {"name": "multistep", "milestones": [1, 2], "gamma": 0.5, "warmup_steps": 3},
    "grad_clip": 5, "label_smoothing": 0.1,
    "output": {"dir": "out", "checkpoint_every": 1, "progress": "off"}})"));
  CHECK(c.model == "vggfm");
  CHECK(c.epochs == 2);
  CHECK(c.seed == 7);
  CHECK(c.threads == 2);
  CHECK(c.deterministic);
  CHECK(c.data.normalize.mean == std::vector<double>{0.1});
  CHECK(c.data.normalize.std == std::vector<double>{0.2});
  CHECK(c.data.augment.random_crop_padding == 2);
  CHECK(c.data.augment.hflip);
  CHECK(c.optimizer.name == "adam");
  CHECK(c.optimizer.lr == 1e-3);
  CHECK(c.optimizer.weight_decay == 5e-4);
  CHECK(c.optimizer.beta1 == 0.8);
  CHECK(c.optimizer.beta2 == 0.99);
  CHECK(c.optimizer.eps == 1e-6);
  CHECK(c.schedule.milestones == std::vector<std::int64_t>{1, 2});
  CHECK(c.schedule.gamma == 0.5);
  CHECK(c.schedule.warmup_steps == 3);
  CHECK(c.grad_clip == 5);
  CHECK(c.label_smoothing == 0.1);
  CHECK(c.output.checkpoint_every == 1);
  CHECK(c.output.progress == "off");
  CHECK(parse_train_config(json::parse(R"({"optimizer": {"name": "adamw"}})"))
            .optimizer.weight_decay == 0.01);
  CHECK_FALSE(
      parse_train_config(json::parse(R"({"data": {"normalize": false}})")).data.normalize.enabled);
}

TEST_CASE("config: background loading is automatic unless data.prefetch says otherwise", "[cli]") {
  TrainConfig c = parse_train_config(json::object());
  CHECK_FALSE(c.data.prefetch.has_value());
  CHECK(to_json(c)["data"]["prefetch"].is_null());
  CHECK_FALSE(parse_train_config(json::parse(R"({"data": {"prefetch": null}})")).data.prefetch);
  const int procs = omp_get_num_procs();
  // Automatic: a loader thread only on a core the compute threads leave free.
  CHECK(compute_threads(c) == procs);
  CHECK_FALSE(background_loading(c));
  c.threads = procs;
  CHECK_FALSE(background_loading(c));
  if (procs > 1) {
    c.threads = procs - 1;
    CHECK(background_loading(c));
  }
  // Explicit settings win either way.
  for (bool on : {true, false}) {
    TrainConfig e = parse_train_config(json{{"data", {{"prefetch", on}}}});
    REQUIRE(e.data.prefetch == on);
    CHECK(to_json(e)["data"]["prefetch"] == on);
    CHECK(background_loading(e) == on);
    e.threads = 1;
    CHECK(background_loading(e) == on);
  }
  CHECK_THROWS_WITH(parse_train_config(json::parse(R"({"data": {"prefetch": "yes"}})")),
                    Catch::Contains("data.prefetch must be true or false, got \"yes\""));
}

TEST_CASE("config: bad values and unknown keys name the key path", "[cli]") {
  const std::vector<std::pair<std::string, std::string>> cases{
      {R"({"optimizer": {"lr": -1}})", "optimizer.lr must be a positive number, got -1"},
      {R"({"optimizer": {"lr": "0.1"}})", "optimizer.lr must be a positive number, got \"0.1\""},
      {R"({"epochs": -3})", "epochs must be an integer >= 1, got -3"},
      {R"({"epochs": 2.5})", "epochs must be an integer in [1, 100000], got 2.5"},
      {R"({"epochs": "3"})", "epochs must be an integer in [1, 100000], got \"3\""},
      {R"({"batch_size": 0})", "batch_size must be an integer >= 1, got 0"},
      {R"({"threads": 0})", "threads must be an integer >= 1, got 0"},
      {R"({"deterministic": 1})", "deterministic must be true or false, got 1"},
      {R"({"seed": -1})", "seed must be an integer >= 0, got -1"},
      {R"({"model": "resnet50"})",
       "model must be one of \"lenet5bn\", \"vggfm\", \"resnet20\", \"resnet32\", \"resnet56\", "
       "\"resnet18\", \"resnet18_cifar\", \"mobilenet_v2\", \"mobilenet_v2_cifar\", got "
       "\"resnet50\""},
      {R"({"optimizer": {"name": "rmsprop"}})", "optimizer.name must be one of \"sgd\""},
      {R"({"optimizer": {"momentum": 1.5}})", "optimizer.momentum must be a number in [0, 1)"},
      {R"({"optimizer": {"nesterov": true, "momentum": 0}})", "optimizer.nesterov needs"},
      {R"({"optimizer": {"name": "adam", "momentum": 0.9}})",
       "optimizer.momentum does not apply to optimizer.name \"adam\""},
      {R"({"optimizer": {"betas": [0.9, 0.99]}})",
       "optimizer.betas does not apply to optimizer.name \"sgd\""},
      {R"({"optimizer": {"name": "adamw", "betas": [0.9]}})",
       "optimizer.betas must be a list of 2 numbers"},
      {R"({"optimizer": {"lrr": 0.1}})", "unknown key 'optimizer.lrr'"},
      {R"({"batchsize": 64})", "unknown key 'batchsize'"},
      {R"({"data": {"augment": {"flip": true}}})", "unknown key 'data.augment.flip'"},
      {R"({"data": {"augment": {"hflip": 1}}})", "data.augment.hflip must be true or false, got 1"},
      {R"({"data": {"normalize": {"std": 0}}})", "data.normalize.std must be a positive number"},
      {R"({"data": {"normalize": {"mean": [0.1, 0.2], "std": [0.1, 0.2, 0.3]}}})",
       "data.normalize.mean and std must have the same number of channels"},
      {R"({"data": {"normalize": "yes"}})", "data.normalize must be an object"},
      {R"({"data": {"dir": ""}})", "data.dir must be a non-empty string"},
      {R"({"data": 3})", "data must be a JSON object, got 3"},
      {R"({"schedule": {"name": "linear"}})", "schedule.name must be one of"},
      {R"({"schedule": {"milestones": [1]}})",
       "schedule.milestones does not apply to schedule.name \"constant\""},
      {R"({"schedule": {"name": "cosine", "gamma": 0.1}})", "schedule.gamma does not apply"},
      {R"({"schedule": {"name": "multistep", "milestones": [2, 1]}})",
       "schedule.milestones must be a non-empty list of strictly increasing integers, each an "
       "integer in [1, 100000], got 1 at position 1"},
      {R"({"schedule": {"warmup_epochs": 1, "warmup_steps": 10}})",
       "schedule.warmup_steps and schedule.warmup_epochs cannot both be set"},
      {R"({"schedule": {"name": "multistep", "milestones": [1, 2], "warmup_epochs": 1}})",
       "schedule.milestones must come after the warm-up"},
      {R"({"schedule": {"name": "cosine", "warmup_epochs": 3}})",
       "schedule.warmup_epochs must be smaller than epochs"},
      {R"({"label_smoothing": 1})", "label_smoothing must be a number in [0, 1), got 1"},
      {R"({"grad_clip": 0})", "grad_clip must be a positive number, got 0"},
      {R"({"device": "tpu"})", "device must be \"cpu\", \"cuda\" or \"cuda:<index>\""},
      {R"({"output": {"progress": "fancy"}})", "output.progress must be one of"},
      {R"({"output": {"checkpoint_every": -1}})",
       "output.checkpoint_every must be an integer >= 0"},
      {R"({"resume": 5})", "resume must be a non-empty string, got 5"},
      {R"({"pretrained": ""})", "pretrained must be a non-empty string"},
      {R"({"quant": 8})", "quant must be a quantization recipe object"},
      {R"({"quant": {"bits": 8}})", "quant: unknown key \"bits\""},
      {R"({"quant": {"weight": {}}})", "quant: \"family\" is required"},
      {R"({"quant": {"family": "tensorrt"}})", "quant: \"family\" must be one of"},
      {R"({"quant": {"family": "torch_ao", "weight": {"qscheme": "per_row"}}})",
       "quant: \"weight.qscheme\" must be one of"},
      {R"({"quant": {"family": "lsq", "input": {"num_bits": 1}}})",
       "quant: \"input.num_bits\" must lie in [2, 16], got 1"},
      {R"({"quant": {"family": "aimet", "calibration": {"batches": 0}}})",
       "quant: \"calibration.batches\" must be >= 1 for the aimet family"},
      {R"({"quant": {"family": "nvidia", "calibration": {"method": "kl"}}})",
       "quant: \"calibration.method\" must be one of"},
      {R"({"quant": {"family": "nvidia", "exclude": "0"}})", "quant: \"exclude\" must be a list"},
      {R"([1, 2])", "the config must be a JSON object"},
  };
  for (const auto& [text, message] : cases) {
    INFO(text);
    REQUIRE_THROWS_AS(parse_train_config(json::parse(text)), UsageError);
    REQUIRE_THROWS_WITH(parse_train_config(json::parse(text)), Catch::Contains(message));
  }
}

TEST_CASE("config: the unknown-key message lists the accepted keys", "[cli]") {
  REQUIRE_THROWS_WITH(parse_train_config(json::parse(R"({"optimizer": {"lrr": 0.1}})")),
                      Catch::Contains("'optimizer' accepts: name, lr, weight_decay"));
}

TEST_CASE("config: the quant recipe is stored normalised", "[cli]") {
  const TrainConfig c = parse_train_config(
      json::parse(R"({"quant": {"family": "torch_ao"}, "pretrained": "float/last.safetensors"})"));
  CHECK(c.pretrained == "float/last.safetensors");
  REQUIRE(c.quant);
  const json q = c.quant->to_json();
  CHECK(q == quant::QuantRecipe::from_json({{"family", "torch_ao"}}).to_json());
  CHECK(q["weight"]["qscheme"] == "per_channel_symmetric");
  CHECK(q["calibration"]["batches"] == 0);
  const json resolved = to_json(c);
  CHECK(resolved["quant"] == q);
  CHECK(resolved["pretrained"] == "float/last.safetensors");
  const TrainConfig again = parse_train_config(resolved);
  REQUIRE(again.quant);
  CHECK(again.quant->to_json() == q);
  // Float training: null in the resolved config.
  const json float_config = to_json(parse_train_config(json::object()));
  CHECK(float_config["quant"].is_null());
  CHECK(float_config["pretrained"].is_null());
  CHECK_FALSE(parse_train_config(json::parse(R"({"quant": null})")).quant);
}

TEST_CASE("config: a named quant recipe is stored expanded, with its overrides", "[cli]") {
  const TrainConfig c = parse_train_config(json::parse(
      R"({"quant": {"recipe": "lsq_w4a4", "input": {"num_bits": 8}, "calibration": {"batches": 1}}})"));
  REQUIRE(c.quant);
  const json q = c.quant->to_json();
  CHECK(q["family"] == "lsq");
  CHECK(!q.contains("recipe"));
  CHECK(q["weight"]["num_bits"] == 4);
  CHECK(q["input"]["num_bits"] == 8);
  CHECK(q["input"]["signed"] == false);
  CHECK(q["calibration"]["batches"] == 1);
  const TrainConfig again = parse_train_config(to_json(c));
  REQUIRE(again.quant);
  CHECK(again.quant->to_json() == q);
  REQUIRE_THROWS_WITH(parse_train_config(json::parse(R"({"quant": {"recipe": "lsq_w9a9"}})")),
                      Catch::Contains("quant: unknown recipe \"lsq_w9a9\" (known: "));
}

TEST_CASE("config: to_json round-trips and fills in every key", "[cli]") {
  const std::vector<std::string> configs{
      "{}",
      R"({"optimizer": {"name": "adamw", "lr": 0.002}, "schedule": {"name": "cosine",
          "warmup_epochs": 1, "eta_min": 0.001}, "grad_clip": 1.5, "threads": 3})",
      R"({"schedule": {"name": "step", "step_size": 2, "gamma": 0.3},
          "data": {"normalize": false}, "resume": "a/b.safetensors", "output": {"dir": "o"}})",
      R"({"epochs": 8, "schedule": {"name": "multistep"}})",
      R"({"quant": {"family": "nvidia", "input": {"num_bits": 8, "calib_method": "histogram"},
          "calibration": {"method": "percentile", "batches": 4}}, "pretrained": "p.safetensors"})",
      R"({"quant": {"family": "lsq", "weight": {"num_bits": 4, "per_channel": true},
          "exclude": ["0", "13"], "fuse_bn": true}})",
  };
  for (const std::string& text : configs) {
    INFO(text);
    const json once = to_json(parse_train_config(json::parse(text)));
    const json twice = to_json(parse_train_config(once));
    CHECK(once == twice);
  }
  // Default milestones follow the number of epochs.
  CHECK(parse_train_config(json::parse(configs[3])).schedule.milestones ==
        std::vector<std::int64_t>{4, 6});
}

namespace {

// Dotted paths of the leaves of a JSON object (arrays are leaves, and so are the quantizer
// objects of a quant recipe, whose fields depend on the family).
void leaf_paths(const json& j, const std::string& prefix, std::set<std::string>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object() && path != "quant.weight" && path != "quant.input")
      leaf_paths(*it, path, out);
    else
      out.insert(path);
  }
}

}  // namespace

TEST_CASE("config: the --help key table documents exactly the accepted keys", "[cli]") {
  // The union of the keys of resolved configs covering every optimiser and schedule kind.
  std::set<std::string> accepted;
  for (const char* text : {R"({"optimizer": {"name": "sgd"}, "schedule": {"name": "step"}})",
                           R"({"optimizer": {"name": "adam"}, "schedule": {"name": "multistep"}})",
                           R"({"schedule": {"name": "cosine"}})"})
    leaf_paths(to_json(parse_train_config(json::parse(text))), "", accepted);
  leaf_paths(to_json(parse_train_config(json::parse(R"({"quant": {"family": "nvidia"}})"))), "",
             accepted);
  // The keys of the other data formats.
  leaf_paths(
      to_json(parse_train_config(json::parse(R"({"data": {"format": "cifar100", "dir": "d"}})"))),
      "", accepted);
  leaf_paths(to_json(parse_train_config(json::parse(
                 R"({"data": {"format": "npy", "train_images": "a", "train_labels": "b",
                              "test_images": "c", "test_labels": "d"}})"))),
             "", accepted);
  leaf_paths(to_json(parse_train_config(
                 json::parse(R"({"data": {"format": "image_folder", "dir": "d"}})"))),
             "", accepted);
  accepted.erase("data.normalize");  // a leaf only when false
  accepted.insert("qgrad");          // accepted on input, written only into a run's config.json
  accepted.insert("quant.recipe");   // accepted on input, stored expanded (named_recipes.h)
  accepted.insert("quant.layers");   // stored only when the recipe has per-layer rules
  std::set<std::string> documented;
  for (const ConfigKeyDoc& k : train_config_keys()) documented.insert(k.path);
  for (const std::string& k : accepted) {
    INFO(k);
    CHECK(documented.count(k) == 1);
  }
  for (const std::string& k : documented) {
    INFO(k);
    CHECK(accepted.count(k) == 1);
  }
  const std::string help = train_config_help();
  for (const ConfigKeyDoc& k : train_config_keys()) CHECK_THAT(help, Catch::Contains(k.path));
  CHECK_THAT(help, Catch::Contains("0.05 (sgd)"));
}

TEST_CASE("config: files that are missing or not JSON", "[cli]") {
  qgrad_cli_test::TempDir tmp;
  REQUIRE_THROWS_AS(load_train_config(tmp.file("missing.json")), IOError);
  REQUIRE_THROWS_WITH(load_train_config(tmp.file("missing.json")), Catch::Contains("missing.json"));
  qgrad_cli_test::write_text(tmp.file("bad.json"), "{\"epochs\": 3,}");
  REQUIRE_THROWS_AS(load_train_config(tmp.file("bad.json")), UsageError);
  REQUIRE_THROWS_WITH(load_train_config(tmp.file("bad.json")), Catch::Contains("not valid JSON"));
  qgrad_cli_test::write_text(tmp.file("ok.json"), "{\"epochs\": 5}");
  CHECK(load_train_config(tmp.file("ok.json")).epochs == 5);
}

TEST_CASE("config: the configs shipped in configs/ parse", "[cli]") {
  std::vector<std::string> files;
  for (const auto& dir :
       {qgrad_test::source_dir() + "/configs", qgrad_test::source_dir() + "/configs/qat"})
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".json") files.push_back(e.path().string());
  CHECK(files.size() >= 7);
  std::set<std::string> families;
  for (const std::string& f : files) {
    INFO(f);
    TrainConfig c;
    REQUIRE_NOTHROW(c = load_train_config(f));
    if (c.quant) families.insert(quant::quant_family_name(c.quant->family()));
  }
  CHECK(families == std::set<std::string>{"nvidia", "torch_ao", "lsq", "horizon", "aimet"});
  // The main job: torch_ao QAT of lenet5bn with the float config's training recipe.
  const TrainConfig qat =
      load_train_config(qgrad_test::source_dir() + "/configs/lenet5bn_qat.json");
  const TrainConfig flt = load_train_config(qgrad_test::source_dir() + "/configs/lenet5bn.json");
  REQUIRE(qat.quant);
  CHECK(qat.quant->to_json()["family"] == "torch_ao");
  json a = to_json(qat), b = to_json(flt);
  a.erase("quant");
  b.erase("quant");
  CHECK(a == b);
}

TEST_CASE("config: the distributed section's defaults, values and errors", "[cli]") {
  using namespace qgrad::cli;
  const TrainConfig d = parse_train_config(nlohmann::json::object());
  CHECK(d.distributed.bucket_mb == 1.0);
  CHECK_FALSE(d.distributed.sync_batchnorm);
  CHECK(d.distributed.broadcast_buffers);
  CHECK(d.distributed.backend == "mpi");
  const TrainConfig c = parse_train_config(nlohmann::json::parse(
      R"({"distributed": {"bucket_mb": 0.25, "sync_batchnorm": true, "broadcast_buffers": false,
          "backend": "nccl"}})"));
  CHECK(c.distributed.bucket_mb == 0.25);
  CHECK(c.distributed.sync_batchnorm);
  CHECK_FALSE(c.distributed.broadcast_buffers);
  CHECK(to_json(c)["distributed"]["backend"] == "nccl");
  CHECK(parse_train_config(to_json(c)).distributed.backend == "nccl");  // round trip
  CHECK_THROWS_WITH(
      parse_train_config(nlohmann::json::parse(R"({"distributed": {"bucket_mb": 0}})")),
      Catch::Contains("distributed.bucket_mb must be a positive number"));
  CHECK_THROWS_WITH(
      parse_train_config(nlohmann::json::parse(R"({"distributed": {"backend": "gloo"}})")),
      Catch::Contains("distributed.backend must be one of \"mpi\", \"nccl\""));
  CHECK_THROWS_WITH(parse_train_config(nlohmann::json::parse(R"({"distributed": {"ranks": 2}})")),
                    Catch::Contains("distributed.ranks"));
  // NCCL reduces GPU tensors: with the CPU it is a usage error before any work.
  std::ostringstream out;
  CHECK_THROWS_AS(run_training(c, out), UsageError);
}
