// Quantization-aware training through `qgrad train` on a small synthetic IDX dataset: a short
// run of every quantizer family quantizes the five layers of lenet5bn, writes checkpoints whose
// state holds the quantizer buffers, and `qgrad eval` rebuilds the quantized model and
// reproduces the run's test accuracy; resuming a QAT run (stateful moving-average observers,
// calibrated amax) gives bit-identical state; "pretrained" weights initialise the model before
// quantization, with clear errors for files that do not fit; every named recipe (named_recipes.h)
// fine-tunes and its expanded recipe is stored and rebuilt by eval.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

#include "cli/command_dispatch.h"
#include "cli/eval_command.h"
#include "cli/pretrained.h"
#include "cli/qat_setup.h"
#include "cli/train_command.h"
#include "cli/training_factory.h"
#include "cli/usage_error.h"
#include "cli_test_helpers.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/generator.h"
#include "nn/serialize/checkpoint.h"
#include "nn/serialize/safetensors.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "quant/modules/frozen_quantizer_statistics.h"
#include "quant/modules/named_recipes.h"
#include "quant/modules/quant_recipe.h"

using namespace qgrad;
using namespace qgrad::cli;
using nlohmann::json;
using qgrad_cli_test::require_same_checkpoint;
using qgrad_cli_test::slurp;
using qgrad_cli_test::TempDir;

namespace {

// 4 batches of 32 per epoch.
void write_data(const TempDir& tmp) {
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 128, 100);
}

json tiny_json(const std::string& data_dir, const std::string& out_dir, std::int64_t epochs,
               const json& quant) {
  json j{{"epochs", epochs},
         {"batch_size", 32},
         {"eval_batch_size", 64},
         {"threads", 2},
         {"data", {{"dir", data_dir}}},
         {"output", {{"progress", "off"}}},
         {"quant", quant}};
  if (!out_dir.empty()) j["output"]["dir"] = out_dir;
  return j;
}

TrainConfig tiny_config(const std::string& data_dir, const std::string& out_dir,
                        std::int64_t epochs, const json& quant) {
  return parse_train_config(tiny_json(data_dir, out_dir, epochs, quant));
}

// A state-dict key that only a quantizer of the family has, for the first conv and the last
// linear layer.
std::vector<std::string> quantizer_keys(const std::string& family) {
  std::vector<std::string> keys;
  for (const char* layer : {"0", "13"}) {
    const std::string l = layer;
    if (family == "nvidia") {
      keys.push_back(l + "._input_quantizer._amax");
      keys.push_back(l + "._weight_quantizer._amax");
    } else if (family == "torch_ao" || family == "horizon") {
      keys.push_back(l + "._input_quantizer.scale");
      keys.push_back(l + "._input_quantizer.activation_post_process.min_val");
      keys.push_back(l + "._weight_quantizer.scale");
      keys.push_back(l + "._weight_quantizer.activation_post_process.max_val");
    } else if (family == "lsq") {
      keys.push_back(l + "._input_quantizer.scale");
      keys.push_back(l + "._input_quantizer.zero_point");
      keys.push_back(l + "._weight_quantizer.scale");
      keys.push_back(l + "._weight_quantizer.initialized");
    } else {
      keys.push_back(l + "._input_quantizer.min");
      keys.push_back(l + "._input_quantizer.max");
      keys.push_back(l + "._weight_quantizer.max");
      keys.push_back(l + "._weight_quantizer.initialized");
    }
  }
  return keys;
}

// A copy of the model's state (state_dict() shares the buffers' storage).
TensorDict snapshot(const nn::Module& model) {
  TensorDict copy;
  for (const auto& it : model.state_dict()) copy.insert(it.key, it.value.clone());
  return copy;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return amax(abs(a.to(kFloat64) - b.to(kFloat64))).item<double>();
}

}  // namespace

TEST_CASE("qat: every family fine-tunes lenet5bn and eval reproduces the fake-quantized accuracy",
          "[cli]") {
  TempDir tmp;
  write_data(tmp);
  // The usual QAT flow: float training first, then each family fine-tunes from those weights
  // (calibrating a randomly initialised model, as nvidia, horizon and aimet recipes do, gives
  // ranges far from the trained model's: see docs/benchmarks.md).
  std::ostringstream float_out;
  const TrainOutcome f =
      run_training(tiny_config(tmp.file("data"), tmp.file("float"), 2, nullptr), float_out);
  REQUIRE(f.epochs.size() == 2);
  for (const std::string family : {"nvidia", "torch_ao", "lsq", "horizon", "aimet"}) {
    INFO(family);
    json recipe{{"family", family}};
    const bool calibrates = family == "nvidia" || family == "horizon" || family == "aimet";
    if (calibrates) recipe["calibration"] = {{"batches", 2}};
    TrainConfig config = tiny_config(tmp.file("data"), tmp.file(family), 1, recipe);
    config.pretrained = tmp.file("float/last.safetensors");
    std::ostringstream out;
    const TrainOutcome r = run_training(config, out);
    INFO(out.str());
    REQUIRE(r.epochs.size() == 1);
    CHECK(std::isfinite(r.epochs[0].train_loss));
    // 4 fine-tuning steps of an easy problem: far above chance (10%) with any 8-bit recipe.
    CHECK(r.epochs[0].test_acc > 0.5);
    CHECK_THAT(out.str(), Catch::Contains("quant: " + family +
                                          " recipe, 5 layers quantized: 0 (QuantConv2d), 4 "
                                          "(QuantConv2d), 9 (QuantLinear), 11 (QuantLinear), 13 "
                                          "(QuantLinear)"));
    if (calibrates)
      CHECK_THAT(out.str(), Catch::Contains("quant: calibrated 10 quantizers on 2 training "
                                            "batches (64 images, no augmentation)"));
    else
      CHECK_THAT(out.str(), Catch::Contains("quant: no calibration"));

    // config.json and the checkpoint's config hold the normalised recipe.
    const json expected = quant::QuantRecipe::from_json(recipe).to_json();
    CHECK(json::parse(slurp(tmp.file(family + "/config.json")))["quant"] == expected);
    const serialize::Checkpoint ckpt =
        serialize::load_checkpoint(tmp.file(family + "/last.safetensors"));
    CHECK(json::parse(ckpt.metadata.at("cli.config"))["quant"] == expected);
    for (const std::string& key : quantizer_keys(family)) {
      INFO(key);
      const Tensor* t = ckpt.model.find(key);
      REQUIRE(t != nullptr);
      CHECK(t->numel() > 0);
      if (t->dtype() == kFloat32) CHECK(std::isfinite(amax(abs(*t)).item<double>()));
    }
    // The weights are shared with the float layers: same keys as a float model.
    CHECK(ckpt.model.find("0.weight") != nullptr);
    CHECK(ckpt.model.find("1.running_mean") != nullptr);

    // eval rebuilds the quantized model from the stored recipe: same accuracy, another batching.
    EvalOptions eo;
    eo.checkpoint = tmp.file(family + "/last.safetensors");
    eo.batch_size = 7;
    eo.threads = 2;
    std::ostringstream eval_out;
    const EvalResult e = run_eval(eo, eval_out);
    CHECK(e.count == 100);
    CHECK(e.accuracy == r.epochs[0].test_acc);
    CHECK(e.loss == Approx(r.epochs[0].test_loss).epsilon(1e-4));
    CHECK_THAT(eval_out.str(), Catch::Contains("lenet5bn, fake-quantized " + family));
  }
}

TEST_CASE("qat: evaluation freezes the quantizer statistics and restores them after", "[cli]") {
  // Recipes whose quantizers learn from every batch they see: moving-average observers
  // (torch_ao, horizon) and LSQ with observer initialisation (static estimation).
  for (const json& recipe : {json{{"family", "torch_ao"}},
                             json{{"family", "horizon"}, {"calibration", {{"batches", 0}}}},
                             json{{"family", "lsq"}, {"input", {{"init", "observer"}}}}}) {
    INFO(recipe.dump());
    const TrainConfig config = tiny_config("unused", "", 1, recipe);
    auto model = build_model(config);
    quantize_for_training(*model, *config.quant);
    Generator gen(3);
    model->forward(randn({4, 1, 28, 28}, gen));  // a training step's forward
    const TensorDict before = snapshot(*model);
    const Tensor big = randn({4, 1, 28, 28}, gen) * 50.0;
    model->eval();  // as evaluate() does (batch norm keeps its running statistics)
    {
      quant::FrozenQuantizerStatistics frozen(*model);
      CHECK(frozen.frozen() >= 5);
      model->forward(big);
    }
    // Nothing learned from `big`, and every switch is back as it was.
    qgrad_cli_test::require_same_tensors(snapshot(*model), before, "after the frozen forward");
    model->forward(big);  // switched back on: the statistics move (in eval mode too, as PyTorch)
    const TensorDict after = snapshot(*model);
    const std::string k = "0._input_quantizer.activation_post_process.max_val";
    CHECK(max_abs_diff(after.at(k), before.at(k)) > 0);
  }
}

TEST_CASE("qat: eval of a QAT checkpoint equals the training's test accuracy on every batching",
          "[cli]") {
  TempDir tmp;
  write_data(tmp);
  std::ostringstream out;
  const TrainOutcome r = run_training(
      tiny_config(tmp.file("data"), tmp.file("run"), 1, {{"family", "torch_ao"}}), out);
  REQUIRE(r.epochs.size() == 1);
  for (std::int64_t batch : {3, 13, 100}) {
    INFO(batch);
    EvalOptions eo;
    eo.checkpoint = tmp.file("run/last.safetensors");
    eo.batch_size = batch;
    eo.threads = 2;
    std::ostringstream eval_out;
    CHECK(run_eval(eo, eval_out).accuracy == r.epochs[0].test_acc);
  }
}

TEST_CASE("qat: resuming a QAT run gives bit-identical results", "[cli]") {
  TempDir tmp;
  write_data(tmp);
  // torch_ao: moving-average observers whose statistics change every step, also with the batch
  // norms fused into QuantConvBn2d layers. nvidia: amax calibrated before training (a resumed
  // run must not calibrate again).
  for (const json& recipe :
       {json{{"family", "torch_ao"}}, json{{"family", "torch_ao"}, {"fuse_bn", true}},
        json{{"family", "nvidia"}, {"calibration", {{"batches", 2}}}}}) {
    const std::string family =
        recipe["family"].get<std::string>() + (recipe.contains("fuse_bn") ? "_fused" : "");
    INFO(family);
    std::ostringstream out;
    TrainConfig full = tiny_config(tmp.file("data"), tmp.file(family + "_full"), 2, recipe);
    full.output.checkpoint_every = 1;
    const TrainOutcome a = run_training(full, out);
    REQUIRE(a.epochs.size() == 2);
    const serialize::Checkpoint e1 =
        serialize::load_checkpoint(tmp.file(family + "_full/epoch_1.safetensors"));
    const serialize::Checkpoint e2 =
        serialize::load_checkpoint(tmp.file(family + "_full/last.safetensors"));
    if (family != "nvidia") {  // the observers moved during epoch 2
      const std::string k = "4._input_quantizer.activation_post_process.max_val";
      CHECK(max_abs_diff(e1.model.at(k), e2.model.at(k)) > 0);
    } else {  // the calibrated amax stays
      const std::string k = "4._input_quantizer._amax";
      CHECK(max_abs_diff(e1.model.at(k), e2.model.at(k)) == 0);
    }

    // From the end of epoch 1 into a new folder.
    TrainConfig resumed = tiny_config(tmp.file("data"), tmp.file(family + "_resumed"), 2, recipe);
    resumed.resume = tmp.file(family + "_full/epoch_1.safetensors");
    std::ostringstream resumed_out;
    const TrainOutcome b = run_training(resumed, resumed_out);
    CHECK_THAT(resumed_out.str(),
               Catch::Contains("quant: quantizer state restored from the checkpoint") &&
                   !Catch::Contains("calibrated"));
    require_same_checkpoint(tmp.file(family + "_full/last.safetensors"),
                            tmp.file(family + "_resumed/last.safetensors"));
    REQUIRE(b.epochs.size() == 2);
    CHECK(b.epochs[1].train_loss == a.epochs[1].train_loss);
    CHECK(b.epochs[1].test_acc == a.epochs[1].test_acc);

    // From the middle of epoch 1 (as after Ctrl-C), into the same folder.
    TrainConfig first = tiny_config(tmp.file("data"), tmp.file(family + "_cut"), 2, recipe);
    const TrainOutcome c = run_training(first, out, [](std::int64_t step) { return step == 3; });
    CHECK(c.interrupted);
    TrainConfig second = tiny_config(tmp.file("data"), "", 2, recipe);
    second.resume = tmp.file(family + "_cut/last.safetensors");
    const TrainOutcome d = run_training(second, out);
    require_same_checkpoint(tmp.file(family + "_full/last.safetensors"),
                            tmp.file(family + "_cut/last.safetensors"));
    REQUIRE(d.epochs.size() == 2);
    for (int ep = 0; ep < 2; ++ep) {
      CHECK(d.epochs[ep].train_loss == a.epochs[ep].train_loss);
      CHECK(d.epochs[ep].test_acc == a.epochs[ep].test_acc);
    }
  }

  // A recipe that differs from the checkpoint's is refused, and a float checkpoint cannot be
  // resumed as a QAT run (that is what "pretrained" is for).
  std::ostringstream out;
  TrainConfig other = tiny_config(tmp.file("data"), tmp.file("other"), 2,
                                  {{"family", "torch_ao"}, {"input", nullptr}});
  other.resume = tmp.file("torch_ao_full/epoch_1.safetensors");
  REQUIRE_THROWS_AS(run_training(other, out), UsageError);
  // The message names the first key that differs and both values.
  REQUIRE_THROWS_WITH(run_training(other, out),
                      Catch::Contains("resume: 'quant.input' is object of 6 elements in the "
                                      "checkpoint") &&
                          Catch::Contains("but null in this config"));
  TrainConfig float_run = tiny_config(tmp.file("data"), tmp.file("float"), 1, nullptr);
  run_training(float_run, out);
  TrainConfig qat_from_float = tiny_config(tmp.file("data"), tmp.file("q"), 2, {{"family", "lsq"}});
  qat_from_float.resume = tmp.file("float/last.safetensors");
  REQUIRE_THROWS_WITH(run_training(qat_from_float, out),
                      Catch::Contains("'quant' is null in the checkpoint") &&
                          Catch::Contains("\"pretrained\" instead of \"resume\""));

  // A checkpoint from an older qgrad, whose stored recipe lacks keys added since ("bias"),
  // resumes: the stored recipe is read with their defaults.
  serialize::Checkpoint older =
      serialize::load_checkpoint(tmp.file("torch_ao_full/epoch_1.safetensors"));
  json stored = json::parse(older.metadata.at("cli.config"));
  REQUIRE(stored["quant"].at("bias") == "float");
  stored["quant"].erase("bias");
  older.metadata["cli.config"] = stored.dump();
  serialize::save_checkpoint(tmp.file("older.safetensors"), older);
  TrainConfig from_older =
      tiny_config(tmp.file("data"), tmp.file("from_older"), 2, {{"family", "torch_ao"}});
  from_older.resume = tmp.file("older.safetensors");
  run_training(from_older, out);
  require_same_checkpoint(tmp.file("torch_ao_full/last.safetensors"),
                          tmp.file("from_older/last.safetensors"));
}

TEST_CASE("qat: pretrained float weights initialise the model before quantization", "[cli]") {
  TempDir tmp;
  write_data(tmp);
  std::ostringstream out;
  // A float run to start from.
  run_training(tiny_config(tmp.file("data"), tmp.file("float"), 1, nullptr), out);
  const std::string float_ckpt = tmp.file("float/last.safetensors");
  const serialize::Checkpoint trained = serialize::load_checkpoint(float_ckpt);

  {  // load_pretrained itself, from a checkpoint and from a plain state-dict file
    const TrainConfig config = tiny_config(tmp.file("data"), "", 1, nullptr);
    auto model = build_model(config);
    const PretrainedInfo info = load_pretrained(*model, "lenet5bn", float_ckpt);
    CHECK(info.checkpoint);
    CHECK(info.epoch == 1);
    CHECK(info.tensors == trained.model.size());
    qgrad_cli_test::require_same_tensors(model->state_dict(), trained.model, "from checkpoint");
    serialize::save_safetensors(tmp.file("plain.safetensors"), trained.model);
    auto model2 = build_model(config);
    CHECK_FALSE(load_pretrained(*model2, "lenet5bn", tmp.file("plain.safetensors")).checkpoint);
    qgrad_cli_test::require_same_tensors(model2->state_dict(), trained.model, "from state dict");
  }

  {  // QAT from the float weights: with a vanishing learning rate the trained weights stay
     // those of the float checkpoint, not the seed's initialisation.
    // With fused Conv-BN layers: the float batch norms' keys move ("1.weight" -> "0.bn.weight").
    TrainConfig config = tiny_config(tmp.file("data"), tmp.file("qat"), 1,
                                     {{"family", "torch_ao"}, {"fuse_bn", true}});
    config.pretrained = float_ckpt;
    config.optimizer.lr = 1e-12;
    config.seed = 5;  // another initialisation than the float run's
    std::ostringstream qat_out;
    const TrainOutcome r = run_training(config, qat_out);
    CHECK_THAT(qat_out.str(),
               Catch::Contains("0 (QuantConvBn2d with batch norm 1), 4 "
                               "(QuantConvBn2d with batch norm 5), 9 (QuantLinear)"));
    CHECK_THAT(qat_out.str(),
               Catch::Contains("pretrained: loaded " + std::to_string(trained.model.size()) +
                               " tensors from " + float_ckpt + " (qgrad checkpoint, epoch 1)"));
    const serialize::Checkpoint qat = serialize::load_checkpoint(tmp.file("qat/last.safetensors"));
    for (const auto& [k_qat, k_float] :
         std::vector<std::pair<std::string, std::string>>{{"0.weight", "0.weight"},
                                                          {"4.weight", "4.weight"},
                                                          {"9.weight", "9.weight"},
                                                          {"13.bias", "13.bias"},
                                                          {"0.bn.weight", "1.weight"},
                                                          {"4.bn.bias", "5.bias"}}) {
      INFO(k_qat);
      CHECK(max_abs_diff(qat.model.at(k_qat), trained.model.at(k_float)) < 1e-6);
    }
    CHECK(json::parse(qat.metadata.at("cli.config"))["pretrained"] == float_ckpt);
    // The float model's accuracy carries over (the quantized model is close to it).
    CHECK(r.epochs[0].test_acc > 0.5);

    // Resuming ignores "pretrained" (the checkpoint holds the weights) and says so.
    TrainConfig resume = config;
    resume.epochs = 2;
    resume.resume = tmp.file("qat/last.safetensors");
    resume.output.dir = tmp.file("qat2");
    std::ostringstream resume_out;
    run_training(resume, resume_out);
    CHECK_THAT(resume_out.str(),
               Catch::Contains("pretrained: not loaded, the resumed checkpoint holds the weights"));
  }

  // Files that do not fit.
  const TrainConfig config = tiny_config(tmp.file("data"), "", 1, nullptr);
  auto model = build_model(config);
  REQUIRE_THROWS_AS(load_pretrained(*model, "lenet5bn", tmp.file("missing.safetensors")), IOError);
  REQUIRE_THROWS_WITH(
      load_pretrained(*model, "lenet5bn", tmp.file("missing.safetensors")),
      Catch::Contains("pretrained: '" + tmp.file("missing.safetensors") + "' does not exist"));
  qgrad_cli_test::write_text(tmp.file("junk.safetensors"), "not a safetensors file");
  REQUIRE_THROWS_AS(load_pretrained(*model, "lenet5bn", tmp.file("junk.safetensors")), IOError);
  REQUIRE_THROWS_WITH(load_pretrained(*model, "lenet5bn", tmp.file("junk.safetensors")),
                      Catch::Contains("pretrained: ") && Catch::Contains("junk.safetensors"));
  TensorDict partial = trained.model;
  partial.erase("13.bias");
  partial.insert("fc.weight", zeros({2, 2}));
  serialize::save_safetensors(tmp.file("partial.safetensors"), partial);
  REQUIRE_THROWS_AS(load_pretrained(*model, "lenet5bn", tmp.file("partial.safetensors")),
                    ValueError);
  REQUIRE_THROWS_WITH(load_pretrained(*model, "lenet5bn", tmp.file("partial.safetensors")),
                      Catch::Contains("do not fit model lenet5bn") &&
                          Catch::Contains("\"13.bias\"") && Catch::Contains("\"fc.weight\""));
  REQUIRE_THROWS_WITH(load_pretrained(*model, "vggfm", float_ckpt),
                      Catch::Contains("holds a lenet5bn model, but this config trains vggfm"));
  REQUIRE_THROWS_WITH(
      load_pretrained(*model, "lenet5bn", tmp.file("qat/last.safetensors")),
      Catch::Contains("quantization-aware training") && Catch::Contains("\"torch_ao\""));
  // The model is unchanged by a failed load.
  qgrad_cli_test::require_same_tensors(model->state_dict(), build_model(config)->state_dict(),
                                       "after failed loads");

  // Through the command line: exit status 1 and the message.
  json j = tiny_json(tmp.file("data"), tmp.file("cmd"), 1, {{"family", "torch_ao"}});
  j["pretrained"] = tmp.file("partial.safetensors");
  qgrad_cli_test::write_text(tmp.file("c.json"), j.dump());
  std::ostringstream cmd_out, cmd_err;
  CHECK(run_command_line({"train", "--config", tmp.file("c.json")}, cmd_out, cmd_err) == 1);
  CHECK_THAT(cmd_err.str(), Catch::StartsWith("qgrad train: error: pretrained: the tensors in") &&
                                Catch::Contains("partial.safetensors"));
  CHECK_FALSE(std::filesystem::exists(tmp.file("cmd")));  // no output folder for a failed start
}

TEST_CASE("qat: a bad quant recipe is a usage error naming the key", "[cli]") {
  TempDir tmp;
  const std::vector<std::pair<std::string, std::string>> cases{
      {R"({"quant": {"family": "tensorrt"}})", "quant: \"family\" must be one of"},
      {R"({"quant": {"family": "nvidia", "wieght": {}}})", "quant: unknown key \"wieght\""},
      {R"({"quant": {"family": "torch_ao", "input": {"observer": "kalman"}}})",
       "quant: \"input.observer\" must be one of"},
      // Known only once the model is built: exit 2 all the same.
      {R"({"quant": {"family": "lsq", "exclude": ["0", "fc"]}, "data": {"dir": "DATA"},
           "output": {"dir": "OUT"}})",
       "quant: quantize_model: \"exclude\" names 'fc', which is not a module of the model"},
      {R"({"quant": {"family": "lsq", "layers": {"*fc*": {"weight": {"num_bits": 2}}}},
           "data": {"dir": "DATA"}, "output": {"dir": "OUT"}})",
       "quant: quantize_model: \"layers\" pattern \"*fc*\" matches no Conv2d, "
       "Linear or Add of the model (its layers: 0, 4, 9, 11, 13)"},
      {R"({"quant": {"family": "lsq", "layers": {"0": {"weight": {"num_bits": 1}}}}})",
       "quant: \"layers[0].weight.num_bits\" must lie in [2, 16], got 1"},
      // Equally specific object-form rules that disagree on a layer: the library's error.
      {R"({"model": "resnet20", "quant": {"family": "lsq", "layers": {
             "layer1.*": {"weight": {"num_bits": 4}}, "*0.conv1": {"weight": {"num_bits": 6}}}},
           "data": {"dir": "DATA"}, "output": {"dir": "OUT"}})",
       "quant: quant recipe: \"layers[*0.conv1]\" and \"layers[layer1.*]\" both match layer "
       "'layer1.0.conv1', are equally specific and set its \"weight\" differently"},
  };
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 32, 10);
  for (auto [text, message] : cases) {
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"DATA", tmp.file("data")}, {"OUT", tmp.file("out")}})
      if (text.find(from) != std::string::npos) text.replace(text.find(from), from.size(), to);
    INFO(text);
    qgrad_cli_test::write_text(tmp.file("q.json"), text);
    std::ostringstream out, err;
    CHECK(run_command_line({"train", "--config", tmp.file("q.json")}, out, err) == 2);
    // Errors found while parsing name the file first; those found later, the key alone.
    const std::string file_prefix = "config file '" + tmp.file("q.json") + "': ";
    CHECK_THAT(err.str(), Catch::StartsWith("qgrad train: error: " + message) ||
                              Catch::StartsWith("qgrad train: error: " + file_prefix + message));
  }
}

TEST_CASE("qat: a config's object-form layer rules keep their specificity order and conflicts",
          "[cli]") {
  // "layer1.*" and "*0.conv1" have seven literal characters each; both match layer1.0.conv1.
  auto config = [](const std::string& second, int second_bits) {
    return parse_train_config(json{{"model", "resnet20"},
                                   {"quant",
                                    {{"family", "lsq"},
                                     {"layers",
                                      {{"layer1.*", {{"weight", {{"num_bits", 4}}}}},
                                       {second, {{"weight", {{"num_bits", second_bits}}}}}}}}}});
  };
  // As `qgrad train` builds the model: the config read, then the model quantized with its recipe.
  auto quantized = [](const TrainConfig& c) {
    auto model = build_model(c);
    return quantize_for_training(*model, *c.quant);
  };
  const TrainConfig conflict = config("*0.conv1", 6);
  REQUIRE_THROWS_AS(quantized(conflict), UsageError);
  REQUIRE_THROWS_WITH(quantized(conflict),
                      Catch::StartsWith("quant: quant recipe: \"layers[*0.conv1]\" and "
                                        "\"layers[layer1.*]\" both match layer 'layer1.0.conv1', "
                                        "are equally specific") &&
                          Catch::Contains("write \"layers\" as a list of {\"match\": ...} rules"));
  // Agreeing on the layer, or one rule more specific than the other (it wins), is fine; the
  // stored form (the list in application order) reads back to the same recipe.
  for (const auto& [second, bits] :
       {std::pair<std::string, int>{"*0.conv1", 4}, {"layer1.0.conv1", 6}, {"*.0.conv1", 6}}) {
    INFO(second << " " << bits);
    const TrainConfig ok = config(second, bits);
    const QuantizedLayers q = quantized(ok);
    CHECK(q.overrides.at("layer1.0.conv1") == "weight num_bits=" + std::to_string(bits));
    CHECK(q.overrides.at("layer1.0.conv2") == "weight num_bits=4");
    const TrainConfig stored = parse_train_config(to_json(ok));
    REQUIRE(stored.quant);
    CHECK(*stored.quant == *ok.quant);
    CHECK(stored.quant->to_json() == ok.quant->to_json());
  }
}

TEST_CASE("qat: the quantized-layers line of resnet20 names its residual adds", "[cli]") {
  const TrainConfig config = parse_train_config(
      json{{"model", "resnet20"}, {"quant", {{"family", "torch_ao"}, {"exclude", {"fc"}}}}});
  auto model = build_model(config);
  const QuantizedLayers q = quantize_for_training(*model, *config.quant);
  CHECK(q.names.size() == 30);  // 21 convolutions and 9 adds; fc excluded
  const std::string line = describe(q);
  CHECK_THAT(line, Catch::StartsWith("torch_ao recipe, 30 layers quantized: conv1 (QuantConv2d), "
                                     "layer1.0.conv1 (QuantConv2d), layer1.0.conv2 (QuantConv2d), "
                                     "layer1.0.add (QuantAdd)"));
  CHECK_THAT(line,
             Catch::Contains("layer2.0.downsample.0 (QuantConv2d)") && !Catch::Contains("fc ("));

  // Fused: each Conv-BN pair is one layer.
  const TrainConfig fused = parse_train_config(
      json{{"model", "resnet20"}, {"quant", {{"family", "torch_ao"}, {"fuse_bn", true}}}});
  auto fused_model = build_model(fused);
  const std::string fused_line = describe(quantize_for_training(*fused_model, *fused.quant));
  CHECK_THAT(fused_line,
             Catch::StartsWith("torch_ao recipe, 31 layers quantized: conv1 (QuantConvBn2d with "
                               "batch norm bn1), layer1.0.conv1 (QuantConvBn2d with batch norm "
                               "layer1.0.bn1), layer1.0.conv2 (QuantConvBn2d with batch norm "
                               "layer1.0.bn2), layer1.0.add (QuantAdd)"));
  CHECK_THAT(fused_line, Catch::Contains("layer2.0.downsample.0 (QuantConvBn2d with batch norm "
                                         "layer2.0.downsample.1)") &&
                             Catch::EndsWith("fc (QuantLinear)"));

  // Per-layer rules: each matched layer says what its rules changed.
  const TrainConfig rules =
      parse_train_config(json{{"model", "resnet20"},
                              {"quant",
                               {{"family", "torch_ao"},
                                {"layers",
                                 {{"layer3.*", {{"weight", {{"quant_min", -8}, {"quant_max", 7}}}}},
                                  {"layer3.0.conv1", {{"input", nullptr}}},
                                  {"layer1.0.add", nullptr},
                                  {"@last", {{"weight", {{"observer", "minmax"}}}}}}}}}});
  auto rules_model = build_model(rules);
  const std::string rules_line = describe(quantize_for_training(*rules_model, *rules.quant));
  CHECK_THAT(rules_line,
             Catch::StartsWith("torch_ao recipe, 30 layers quantized: conv1 (QuantConv2d), ") &&
                 !Catch::Contains("layer1.0.add (") &&
                 Catch::Contains("layer3.0.conv1 (QuantConv2d; weight quant_max=7 "
                                 "quant_min=-8, input float)") &&
                 Catch::Contains("layer3.0.conv2 (QuantConv2d; weight quant_max=7 quant_min=-8)") &&
                 Catch::Contains("layer3.0.add (QuantAdd; as the recipe)") &&
                 Catch::EndsWith("fc (QuantLinear; weight observer=\"minmax\")"));
}

TEST_CASE("qat: every named recipe fine-tunes lenet5bn and eval rebuilds it", "[cli]") {
  TempDir tmp;
  write_data(tmp);
  std::ostringstream float_out;
  REQUIRE(run_training(tiny_config(tmp.file("data"), tmp.file("float"), 1, nullptr), float_out)
              .epochs.size() == 1);
  for (const quant::NamedRecipe& named : quant::named_recipes()) {
    INFO(named.name);
    // Calibrating recipes calibrate on 2 batches here: an override next to the name.
    const json recipe = named.recipe.contains("calibration")
                            ? json{{"recipe", named.name}, {"calibration", {{"batches", 2}}}}
                            : json{{"recipe", named.name}};
    TrainConfig config = tiny_config(tmp.file("data"), tmp.file(named.name), 1, recipe);
    config.pretrained = tmp.file("float/last.safetensors");
    std::ostringstream out;
    const TrainOutcome r = run_training(config, out);
    INFO(out.str());
    REQUIRE(r.epochs.size() == 1);
    CHECK(std::isfinite(r.epochs[0].train_loss));
    CHECK_THAT(out.str(), Catch::Contains("quant: " + named.recipe["family"].get<std::string>() +
                                          " recipe, 5 layers quantized"));
    const json stored = json::parse(slurp(tmp.file(named.name + "/config.json")))["quant"];
    CHECK(!stored.contains("recipe"));
    CHECK(stored == quant::QuantRecipe::from_json(recipe).to_json());
    EvalOptions eo;
    eo.checkpoint = tmp.file(named.name + "/last.safetensors");
    eo.threads = 2;
    std::ostringstream eval_out;
    const EvalResult e = run_eval(eo, eval_out);
    CHECK(e.accuracy == r.epochs[0].test_acc);
  }
}
