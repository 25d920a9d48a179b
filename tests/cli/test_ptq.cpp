// Post-training quantization through `qgrad ptq` (cli/ptq_command.h) on the small synthetic IDX
// dataset: a float run is quantized and calibrated with every NVIDIA calibration method and with
// torch.ao observers, the calibrated amax / scales are checked against the data (max
// calibration's amax is the largest |x| of the normalised images), the saved checkpoint
// reproduces the PTQ accuracy through `qgrad eval` and exports to ONNX, `qgrad train` fine-tunes
// it with "pretrained" and the same recipe (no calibration, quantizer state kept) and refuses
// another recipe, and bad arguments exit with a clear message and leave no file behind.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "cli/command_dispatch.h"
#include "cli/eval_command.h"
#include "cli/export_command.h"
#include "cli/ptq_command.h"
#include "cli/qat_setup.h"
#include "cli/train_command.h"
#include "cli/training_factory.h"
#include "cli/usage_error.h"
#include "cli_test_helpers.h"
#include "core/device.h"
#include "core/error.h"
#include "core/generator.h"
#include "nn/data/mnist.h"
#include "nn/models/zoo.h"
#include "nn/serialize/checkpoint.h"
#include "nn/serialize/safetensors.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "quant/modules/quant_recipe.h"

using namespace qgrad;
using namespace qgrad::cli;
using nlohmann::json;
using qgrad_cli_test::TempDir;

namespace {

// 128 training images (4 batches of 32), 100 test images.
TrainConfig float_config(const TempDir& tmp, std::int64_t epochs) {
  return parse_train_config(json{{"epochs", epochs},
                                 {"batch_size", 32},
                                 {"eval_batch_size", 64},
                                 {"threads", 2},
                                 {"data", {{"dir", tmp.file("data")}}},
                                 {"output", {{"progress", "off"}, {"dir", tmp.file("float")}}}});
}

// A float run to quantize: tmp/float/last.safetensors.
std::string train_float(const TempDir& tmp) {
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 128, 100);
  std::ostringstream out;
  run_training(float_config(tmp, 2), out);
  return tmp.file("float/last.safetensors");
}

PtqOptions ptq_options(const TempDir& tmp, const std::string& checkpoint, const std::string& out) {
  PtqOptions o;
  o.source.checkpoint = checkpoint;
  o.out = tmp.file(out);
  o.source.threads = 2;
  o.recipe.calibration_batches = 4;  // the whole training set
  return o;
}

float scalar(const TensorDict& d, const std::string& key) {
  const Tensor* t = d.find(key);
  REQUIRE(t != nullptr);
  REQUIRE(t->numel() == 1);
  return t->to(kFloat32).item<float>();
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return amax(abs(a.to(kFloat64) - b.to(kFloat64))).item<double>();
}

// Every file and folder below `dir`.
std::set<std::string> files_below(const std::string& dir) {
  std::set<std::string> s;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    s.insert(e.path().string() + (e.is_directory() ? "/" : ""));
  return s;
}

// `qgrad eval` of a written checkpoint, with another batching than the PTQ run's.
EvalResult eval_checkpoint(const std::string& path) {
  EvalOptions eo;
  eo.checkpoint = path;
  eo.batch_size = 7;
  eo.threads = 2;
  std::ostringstream out;
  return run_eval(eo, out);
}

}  // namespace

TEST_CASE(
    "ptq: every NVIDIA calibration method calibrates amax, and eval and export accept the result",
    "[cli]") {
  TempDir tmp;
  const std::string float_ckpt = train_float(tmp);

  // Max calibration of the first layer's input: the largest |x| of the normalised training
  // images, all of which the 4 calibration batches see. Computed here from the raw pixels.
  const data::MNIST train(tmp.file("data"), data::Split::Train);
  const std::vector<std::uint8_t> pixels = train.images().contiguous().to_vector<std::uint8_t>();
  double largest = 0;
  for (std::uint8_t p : pixels)
    largest = std::max(largest, std::abs((p / 255.0 - 0.2860) / 0.3530));

  std::map<std::string, float> input_amax;  // of layer 0, per method
  for (const std::string method : {"max", "entropy", "mse", "percentile"}) {
    INFO(method);
    PtqOptions o = ptq_options(tmp, float_ckpt, "ptq_" + method);
    o.recipe.method = method;
    if (method == "percentile") o.recipe.percentile = 90.0;
    std::ostringstream out;
    const PtqResult r = run_ptq(o, out);
    INFO(out.str());
    CHECK(r.output == tmp.file("ptq_" + method + "/last_ptq.safetensors"));
    CHECK(r.calibration.batches == 4);
    CHECK(r.calibration.images == 128);
    CHECK(r.calibration.quantizers == 10);
    CHECK(r.float_result.count == 100);
    CHECK(r.quantized.count == 100);
    // An 8-bit model of an easy problem stays far above chance (10%).
    CHECK(r.quantized.accuracy > 0.5);
    CHECK_THAT(out.str(), Catch::Contains("float") && Catch::Contains("PTQ nvidia") &&
                              Catch::Contains("accuracy change"));
    CHECK_THAT(out.str(),
               Catch::Contains(method == "max"          ? "max (inputs), max (weights)"
                               : method == "percentile" ? "percentile 90 histogram (inputs)"
                                                        : method + " histogram (inputs)"));

    const serialize::Checkpoint ckpt = serialize::load_checkpoint(r.output);
    // Calibration set every amax: a fresh quantized model has none (NaN: dynamic amax).
    for (const std::string layer : {"0", "4", "9", "11", "13"}) {
      INFO(layer);
      const float a = scalar(ckpt.model, layer + "._input_quantizer._amax");
      CHECK(std::isfinite(a));
      CHECK(a > 0);
      const Tensor* w = ckpt.model.find(layer + "._weight_quantizer._amax");
      REQUIRE(w != nullptr);
      CHECK(w->shape()[0] > 1);  // per channel
      const std::vector<float> wa = w->contiguous().to_vector<float>();
      for (float v : wa) CHECK((std::isfinite(v) && v > 0));
    }
    input_amax[method] = scalar(ckpt.model, "0._input_quantizer._amax");
    auto fresh = build_model(float_config(tmp, 1));
    quantize_for_training(*fresh, ptq_recipe(o.recipe));
    CHECK(std::isnan(scalar(fresh->state_dict(), "0._input_quantizer._amax")));

    // The stored config: the expanded recipe (with the calibration that ran), the float
    // checkpoint as "pretrained", and the ptq record.
    const json stored = json::parse(ckpt.metadata.at("cli.config"));
    CHECK(stored["quant"] == ptq_recipe(o.recipe).to_json());
    CHECK(stored["quant"]["input"]["calib_method"] == (method == "max" ? "max" : "histogram"));
    CHECK(stored["pretrained"] ==
          std::filesystem::absolute(float_ckpt).lexically_normal().string());
    const json record = json::parse(ckpt.metadata.at(kPtqMetadataKey));
    CHECK(record["calibration_batches"] == 4);
    CHECK(record["ptq_test_acc"] == r.quantized.accuracy);
    CHECK(ckpt.optimizer.empty());

    // qgrad eval rebuilds the quantized model from the stored recipe: the same predictions.
    const EvalResult e = eval_checkpoint(r.output);
    CHECK(e.correct == r.quantized.correct);
    CHECK(e.loss == Approx(r.quantized.loss).epsilon(1e-4));

#ifdef QGRAD_WITH_ONNX
    if (method == "max") {
      ExportOptions xo;
      xo.checkpoint = r.output;
      xo.onnx = tmp.file("ptq_max/model.onnx");
      std::ostringstream xout;
      run_export(xo, xout);
      CHECK_THAT(xout.str(), Catch::Contains("exported as QDQ (nvidia recipe) ONNX"));
      CHECK(std::filesystem::file_size(xo.onnx) > 1000);
    }
#endif
  }
  CHECK(input_amax["max"] == Approx(largest).epsilon(1e-6));
  // A 90th percentile of |x| lies in the dim background, far below the bright squares' max.
  CHECK(input_amax["percentile"] < 0.8 * input_amax["max"]);
  for (const std::string method : {"entropy", "mse"}) {
    INFO(method);
    CHECK(input_amax[method] <= input_amax["max"] * (1 + 1e-6));
  }
}

TEST_CASE("ptq: torch.ao recipes calibrate their observers, eval freezes them", "[cli]") {
  TempDir tmp;
  const std::string float_ckpt = train_float(tmp);
  for (const std::string observer : {"fused_moving_average_minmax", "moving_average_minmax"}) {
    INFO(observer);
    PtqOptions o = ptq_options(tmp, float_ckpt, "ptq_" + observer + "/q.safetensors");
    o.recipe.recipe = json{{"recipe", "torch_ao_default"},
                           {"input", {{"observer", observer}}},
                           {"weight", {{"observer", observer}}}}
                          .dump();
    o.recipe.calibration_batches = 0;  // a torch_ao recipe has none: ptq's default, 8
    std::ostringstream out;
    const PtqResult r = run_ptq(o, out);
    INFO(out.str());
    CHECK(r.output == tmp.file("ptq_" + observer + "/q.safetensors"));
    CHECK(r.calibration.batches == kDefaultPtqCalibrationBatches);
    CHECK(r.quantized.accuracy > 0.5);
    CHECK_THAT(out.str(), Catch::Contains(observer + " observer (inputs), " + observer +
                                          " observer (weights)"));
    const serialize::Checkpoint ckpt = serialize::load_checkpoint(r.output);
    for (const std::string layer : {"0", "13"}) {
      INFO(layer);
      // The observers saw the calibration data (a fresh observer holds +inf / -inf) and the
      // scale the quantized evaluation used came from them (a fresh one is 1).
      const std::string in = layer + "._input_quantizer.";
      const float mn = scalar(ckpt.model, in + "activation_post_process.min_val");
      const float mx = scalar(ckpt.model, in + "activation_post_process.max_val");
      CHECK(std::isfinite(mn));
      CHECK(std::isfinite(mx));
      CHECK(mx > mn);
      const float scale = scalar(ckpt.model, in + "scale");
      CHECK(scale != 1.0f);
      // reduce_range: [0, 127] over [min(mn, 0), max(mx, 0)] (fp32 arithmetic).
      CHECK(scale == Approx((std::max(mx, 0.0f) - std::min(mn, 0.0f)) / 127.0).epsilon(1e-5));
      CHECK(scalar(ckpt.model, in + "fake_quant_enabled") == 1.0f);
    }
    const EvalResult e = eval_checkpoint(r.output);
    CHECK(e.correct == r.quantized.correct);
#ifdef QGRAD_WITH_ONNX
    ExportOptions xo;
    xo.checkpoint = r.output;
    xo.onnx = tmp.file("ptq_" + observer + "/q.onnx");
    std::ostringstream xout;
    run_export(xo, xout);
    CHECK_THAT(xout.str(), Catch::Contains("exported as QDQ (torch_ao recipe) ONNX"));
#endif
  }
}

TEST_CASE("ptq: lsq, horizon and aimet recipes calibrate too, and eval reproduces them", "[cli]") {
  TempDir tmp;
  const std::string float_ckpt = train_float(tmp);
  for (const std::string family : {"lsq", "horizon", "aimet"}) {
    INFO(family);
    PtqOptions o = ptq_options(tmp, float_ckpt, family);
    o.recipe.recipe = json{{"family", family}}.dump();
    o.recipe.calibration_batches = 2;
    std::ostringstream out;
    const PtqResult r = run_ptq(o, out);
    INFO(out.str());
    CHECK(r.calibration.batches == 2);
    CHECK(r.calibration.quantizers == 10);
    CHECK(r.quantized.accuracy > 0.5);
    CHECK_THAT(out.str(), Catch::Contains(family + " initial ranges (inputs)"));
    const serialize::Checkpoint ckpt = serialize::load_checkpoint(r.output);
    CHECK(json::parse(ckpt.metadata.at("cli.config"))["quant"]["family"] == family);
    const EvalResult e = eval_checkpoint(r.output);
    CHECK(e.correct == r.quantized.correct);
  }
}

TEST_CASE("ptq: a PTQ checkpoint seeds QAT fine-tuning with the same recipe, and only with it",
          "[cli]") {
  TempDir tmp;
  const std::string float_ckpt = train_float(tmp);
  PtqOptions o = ptq_options(tmp, float_ckpt, "ptq");
  o.recipe.method = "entropy";
  std::ostringstream ptq_out;
  const PtqResult p = run_ptq(o, ptq_out);
  const serialize::Checkpoint ptq = serialize::load_checkpoint(p.output);
  const json recipe = json::parse(ptq.metadata.at("cli.config"))["quant"];

  // Fine-tuning with the PTQ recipe but another calibration: loaded, not calibrated again. With
  // a vanishing learning rate the weights stay the PTQ model's; NVIDIA amax is not learned.
  TrainConfig config = float_config(tmp, 1);
  json finetune = recipe;
  finetune["calibration"]["batches"] = 2;
  config.quant = quant::QuantRecipe::from_json(finetune);
  config.pretrained = p.output;
  config.optimizer.lr = 1e-12;
  config.output.dir = tmp.file("qat");
  std::ostringstream out;
  const TrainOutcome r = run_training(config, out);
  INFO(out.str());
  CHECK_THAT(out.str(), Catch::Contains("pretrained: loaded " + std::to_string(ptq.model.size()) +
                                        " tensors from " + p.output +
                                        " (quantized qgrad checkpoint, epoch 2: "
                                        "quantizer state loaded, no calibration)"));
  CHECK_THAT(out.str(), !Catch::Contains("calibrated"));
  const serialize::Checkpoint qat = serialize::load_checkpoint(tmp.file("qat/last.safetensors"));
  for (const std::string key :
       {"0._input_quantizer._amax", "13._input_quantizer._amax", "4._weight_quantizer._amax"}) {
    INFO(key);
    REQUIRE(qat.model.at(key).shape() == ptq.model.at(key).shape());
    CHECK(max_abs_diff(qat.model.at(key), ptq.model.at(key)) == 0);
  }
  for (const std::string key : {"0.weight", "13.bias"}) {
    INFO(key);
    CHECK(max_abs_diff(qat.model.at(key), ptq.model.at(key)) < 1e-6);
  }
  // The first fine-tuning epoch starts from the PTQ model's accuracy (batch norm statistics
  // move a little in training mode).
  CHECK(r.epochs[0].test_acc > 0.5);

  // Another recipe, or float training: refused before any folder is made.
  TrainConfig other = config;
  other.output.dir = tmp.file("other");
  json changed = recipe;
  changed["input"]["num_bits"] = 4;
  other.quant = quant::QuantRecipe::from_json(changed);
  REQUIRE_THROWS_AS(run_training(other, out), ValueError);
  REQUIRE_THROWS_WITH(run_training(other, out),
                      Catch::Contains("holds a model quantized with another recipe: "
                                      "quant.input.num_bits is 8 there but 4 in this config") &&
                          Catch::Contains("\"quant\": {"));
  other.quant.reset();
  REQUIRE_THROWS_WITH(run_training(other, out),
                      Catch::Contains("is a checkpoint of a quantized model") &&
                          Catch::Contains("\"nvidia\"") && Catch::Contains("set \"quant\""));
  // "resume" has no run to continue in a PTQ checkpoint: it points to "pretrained".
  other.quant = config.quant;
  other.resume = p.output;
  REQUIRE_THROWS_AS(run_training(other, out), UsageError);
  REQUIRE_THROWS_WITH(run_training(other, out),
                      Catch::Contains("was written by qgrad ptq") &&
                          Catch::Contains("give it as \"pretrained\" instead of \"resume\""));
  CHECK_FALSE(std::filesystem::exists(tmp.file("other")));
}

TEST_CASE("ptq: bad arguments exit with a clear message and write nothing", "[cli]") {
  TempDir tmp;
  const std::string float_ckpt = train_float(tmp);
  // A quantized checkpoint and a plain state dict to feed back in.
  std::ostringstream setup_out;
  const std::string quantized =
      run_ptq(ptq_options(tmp, float_ckpt, "q/q.safetensors"), setup_out).output;
  serialize::save_safetensors(tmp.file("plain.safetensors"),
                              serialize::load_checkpoint(float_ckpt).model);
  qgrad_cli_test::write_text(tmp.file("a_file"), "x");
  qgrad_cli_test::write_text(tmp.file("bad.json"), "{\"family\": ");
  REQUIRE(::mkfifo(tmp.file("fifo.safetensors").c_str(), 0600) == 0);

  const std::string out_dir = tmp.file("out");
  const std::vector<std::tuple<std::vector<std::string>, int, std::string>> cases{
      {{}, 2, "qgrad ptq: error: ptq: --checkpoint FILE is required"},
      {{"--checkpoint", tmp.file("none.safetensors")},
       1,
       "ptq: '" + tmp.file("none.safetensors") + "' does not exist"},
      {{"--checkpoint", float_ckpt, "--method", "minmax"},
       2,
       "ptq: --method must be one of max, entropy, mse, percentile, got 'minmax'"},
      {{"--checkpoint", float_ckpt, "--method", "entropy", "--recipe", "torch_ao_default"},
       2,
       "ptq: --method applies to nvidia recipes"},
      {{"--checkpoint", float_ckpt, "--percentile", "99"},
       2,
       "ptq: --percentile needs --method percentile"},
      {{"--checkpoint", float_ckpt, "--percentile", "120", "--method", "percentile"},
       2,
       "ptq: --percentile must be a number in (0, 100], got '120'"},
      {{"--checkpoint", float_ckpt, "--calibration-batches", "0"},
       2,
       "ptq: --calibration-batches must be an integer in [1, 1000000], got '0'"},
      {{"--checkpoint", float_ckpt, "--recipe", "nvidia_int4"},
       2,
       "ptq: --recipe: quant recipe: unknown recipe \"nvidia_int4\" (known: "},
      {{"--checkpoint", float_ckpt, "--recipe", tmp.file("bad.json")}, 2, "ptq: --recipe file"},
      {{"--checkpoint", float_ckpt, "--recipe",
        "{\"family\": \"nvidia\", \"weight\": null, "
        "\"input\": null}"},
       2,
       "ptq: --recipe quantizes nothing"},
      {{"--checkpoint", quantized},
       2,
       "ptq: --checkpoint '" + quantized + "' is already quantized (quant family nvidia)"},
      {{"--checkpoint", tmp.file("plain.safetensors")},
       2,
       "has no stored training config (a plain state dict?): give --model NAME"},
      {{"--checkpoint", float_ckpt, "--model", "vggfm"},
       2,
       "ptq: --model vggfm but checkpoint '" + float_ckpt + "' holds a lenet5bn model"},
      {{"--checkpoint", float_ckpt, "--out", tmp.file("a_file/sub/x.safetensors")},
       1,
       "ptq: --out '" + tmp.file("a_file/sub/x.safetensors") + "' cannot be written: '" +
           tmp.file("a_file") + "' is not a folder"},
      {{"--checkpoint", float_ckpt, "--out", float_ckpt}, 2, "is the float checkpoint itself"},
      // Calibrated, then renamed its result over the FIFO.
      {{"--checkpoint", float_ckpt, "--out", tmp.file("fifo.safetensors")},
       2,
       "ptq: --out '" + tmp.file("fifo.safetensors") + "' is a device, FIFO or socket"},
      {{"--checkpoint", float_ckpt, "--wat"}, 2, "ptq: unknown argument '--wat'"},
      {{"--checkpoint", float_ckpt, "--device", "gpu0"}, 2, "ptq: --device: "},
      // NVIDIA's histogram calibrator has no CUDA kernels: refused by name, GPU or not.
      {{"--checkpoint", float_ckpt, "--recipe",
        R"({"family": "nvidia", "input": {"calib_method": "histogram"}})", "--device", "cuda"},
       2,
       "ptq: --device cuda: the \"quant\" recipe gives quantizers that run on the CPU only in "
       "this version: 0._input_quantizer (TensorQuantizer)"},
  };
  for (const auto& [args, status, message] : cases) {
    std::vector<std::string> argv{"ptq", "--threads", "2", "--calibration-batches", "1"};
    argv.insert(argv.end(), args.begin(), args.end());
    if (std::find(args.begin(), args.end(), "--out") == args.end()) {
      argv.push_back("--out");
      argv.push_back(out_dir);
    }
    INFO(argv.back() << " " << message);
    const std::set<std::string> before = files_below(tmp.path());
    std::ostringstream out, err;
    CHECK(run_command_line(argv, out, err) == status);
    CHECK_THAT(err.str(), Catch::Contains(message));
    CHECK(files_below(tmp.path()) == before);
  }
  // torch_ao's and nvidia's (the default) recipes pass the quantizer check; without a GPU the
  // device is then refused.
  if (!cuda_is_available()) {
    for (const char* recipe : {"torch_ao_default", "nvidia_int8"}) {
      std::ostringstream o, e;
      CHECK(run_command_line({"ptq", "--checkpoint", float_ckpt, "--recipe", recipe, "--device",
                              "cuda", "--out", out_dir},
                             o, e) == 2);
      CHECK_THAT(e.str(), Catch::Contains("ptq: --device cuda is not available"));
    }
  }
  // eval's --device: a bad name, with --int8, and (without a GPU) a checkpoint whose quantizers
  // run there (the default recipe's) on a machine that has none.
  std::vector<std::pair<std::vector<std::string>, std::string>> eval_cases{
      {{"--checkpoint", quantized, "--device", "gpu0"}, "eval: --device: "},
      {{"--checkpoint", quantized, "--int8", "--device", "cuda"},
       "eval: --int8 runs on the CPU (oneDNN's int8 kernels); leave out --device cuda"},
  };
  if (!cuda_is_available())
    eval_cases.push_back(
        {{"--checkpoint", quantized, "--device", "cuda"}, "eval: --device cuda is not available"});
  for (const auto& [args, message] : eval_cases) {
    std::vector<std::string> argv{"eval", "--data-dir", tmp.file("data")};
    argv.insert(argv.end(), args.begin(), args.end());
    std::ostringstream o, e;
    INFO(message);
    CHECK(run_command_line(argv, o, e) == 2);
    CHECK_THAT(e.str(), Catch::Contains(message));
  }
  // The plain state dict with --model works, through the command line.
  std::ostringstream out, err;
  CHECK(run_command_line({"ptq", "--checkpoint", tmp.file("plain.safetensors"), "--model",
                          "lenet5bn", "--threads", "2", "--calibration-batches", "1", "--data-dir",
                          tmp.file("data"), "--out", out_dir},
                         out, err) == 0);
  INFO(err.str());
  CHECK_THAT(out.str(), Catch::Contains("(state dict)") &&
                            Catch::Contains("saved " + out_dir + "/plain_ptq.safetensors"));
  CHECK(eval_checkpoint(out_dir + "/plain_ptq.safetensors").count == 100);
}

TEST_CASE("ptq: --recipe's object-form layer rules keep their conflict check", "[cli][ptq]") {
  // The calibration options re-read the recipe's JSON; its rules were re-read in the list form,
  // whose order decides, so two equally specific rules that disagree passed silently.
  PtqRecipeOptions o;
  o.method = "max";
  Generator gen(0);
  o.recipe = R"({"family": "nvidia", "layers": {"0": {"weight": {"num_bits": 4}},
                                                  "@first": {"weight": {"num_bits": 6}}}})";
  auto model = nn::lenet5bn(gen);
  CHECK_THROWS_WITH(quantize_for_training(*model, ptq_recipe(o)),
                    Catch::Contains("layer '0'") && Catch::Contains("equally specific"));
  // Rules that agree, or a more specific one, still apply, with the options over them.
  o.recipe = R"({"recipe": "nvidia_int8", "layers": {"@first": {"weight": {"num_bits": 6}},
                                                      "*": {"weight": {"num_bits": 4}}}})";
  const quant::QuantRecipe r = ptq_recipe(o);
  CHECK(r.to_json()["input"]["calib_method"] == "max");
  auto model2 = nn::lenet5bn(gen);
  const QuantizedLayers q = quantize_for_training(*model2, r);
  CHECK(q.overrides.at("0").find("num_bits=6") != std::string::npos);
  CHECK(q.overrides.at("4").find("num_bits=4") != std::string::npos);
}
