// `qgrad autoquant`: argument parsing, the per-layer, per-width measurements, the search and
// the comparison with a uniform width.
#include "cli/autoquant_command.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <set>

#include "cli/command_options.h"
#include "cli/device_option.h"
#include "cli/float_checkpoint.h"
#include "cli/layer_sensitivity.h"
#include "cli/training_factory.h"
#include "cli/usage_error.h"
#include "core/file_io.h"
#include "quant/modules/quant_recipe.h"
#include "quant/modules/quantize_model.h"

namespace qgrad::cli {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The weight quantizer's bit-width key of a family.
std::string bits_key(const std::string& family) {
  if (family == "nvidia" || family == "lsq" || family == "pact") return "num_bits";
  if (family == "aimet") return "bitwidth";
  throw UsageError("autoquant: --recipe is of the " + family +
                   " family, whose weights have no bit-width key; use an nvidia, lsq, pact or "
                   "aimet recipe");
}

std::vector<int> parse_bits(const std::string& text) {
  std::vector<int> bits;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const int b = static_cast<int>(parse_int_option("autoquant", "--bits", item, 2, 16));
    if (std::find(bits.begin(), bits.end(), b) != bits.end())
      throw UsageError("autoquant: --bits lists " + std::to_string(b) + " twice");
    bits.push_back(b);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return bits;
}

std::string kib(std::int64_t weight_bits) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f KiB", static_cast<double>(weight_bits) / 8 / 1024);
  return b;
}

}  // namespace

AutoquantResult run_autoquant(const AutoquantOptions& o, std::ostream& out) {
  const BitBudget budget = BitBudget::parse(o.budget);
  PtqRecipeOptions ro = o.recipe;
  ro.command = "autoquant";
  const quant::QuantRecipe recipe = ptq_recipe(ro);
  if (!recipe.quantizes_weights())
    throw UsageError("autoquant: --recipe keeps the weights float (\"weight\": null)");
  const json base = recipe.to_json();
  const std::string key = bits_key(base.at("family").get<std::string>());
  const FloatModelSource::Loaded loaded = o.source.load("autoquant");
  const TrainConfig& config = loaded.config;
  const Device device = parse_device("autoquant: --device", o.device);
  require_recipe_runs_on("autoquant: --device " + o.device, device, config, recipe);
  check_output_folder("autoquant", "--out", o.out);

  const SensitivityBench bench(config, loaded.file, o.images, device);
  AutoquantResult r;
  r.float_accuracy = bench.evaluate_float().accuracy;

  // The layers whose weights the recipe quantizes, and their weight counts. A layer whose weight
  // quantizer a "layers" rule sets is the user's choice: its measured cost would not move with
  // the width tried (the rule wins over the top-level width), so allocating it would push it to
  // the narrowest width while the written recipe dropped the rule. It keeps its rule instead.
  {
    auto model = build_model(config);
    std::set<std::string> fixed;
    for (const quant::QuantizableLayer& l : quant::quantizable_layers(*model))
      for (const quant::LayerRules::Rule* rule : recipe.layer_rules().matching(l.name, l.position))
        if (rule->weight.given) fixed.insert(l.name);
    const TensorDict params = model->named_parameters();
    const QuantizedLayers q = quantize_for_training(*model, recipe);
    for (std::size_t i = 0; i < q.names.size(); ++i) {
      if (q.types[i] == "Identity" || q.types[i] == "QuantAdd") continue;
      const Tensor* w = params.find(q.names[i] + ".weight");
      if (w == nullptr) continue;
      if (fixed.count(q.names[i]))
        r.fixed_layers.push_back(q.names[i]);
      else
        r.layers.push_back({q.names[i], w->numel(), {}});
    }
  }
  // With no layer to allocate, the average width is 0 / 0 (it printed "-nan bits on average").
  if (r.layers.empty())
    throw UsageError(
        "autoquant: the recipe quantizes the weights of no layer (every layer is excluded or "
        "kept float by its rules) or its rules fix every layer's weights: there is nothing to "
        "allocate bits to");
  out << "qgrad autoquant: " << config.model << ", budget " << budget.str() << ", widths";
  for (int b : o.bits) out << " " << b;
  out << ", " << r.layers.size() << " layers x " << o.bits.size() << " widths measured on "
      << bench.test_images() << " test images (float " << 100 * r.float_accuracy << "%)\n";
  if (!r.fixed_layers.empty()) {
    out << "kept as --recipe's rules set them (not allocated, outside the budget):";
    for (const std::string& name : r.fixed_layers) out << " " << name;
    out << "\n";
  }
  out << std::flush;

  // The cost of each layer at each width: weights only, inputs float.
  for (LayerCosts& l : r.layers)
    for (int b : o.bits) {
      json j = base;
      j["input"] = nullptr;
      j["weight"][key] = b;
      l.costs.push_back(r.float_accuracy - bench.measure(j, l.name).result.accuracy);
    }
  r.allocation = allocate_bits(r.layers, o.bits, budget);

  // The chosen widths as per-layer rules, in model order (list form: applied in order), after
  // the recipe's own rules (to_json writes them as a list), which they do not touch.
  r.recipe = base;
  json rules =
      base.contains("layers") && base["layers"].is_array() ? base["layers"] : json::array();
  for (std::size_t i = 0; i < r.layers.size(); ++i)
    rules.push_back({{"match", r.layers[i].name}, {"weight", {{key, r.allocation.bits[i]}}}});
  r.recipe["layers"] = rules;
  r.recipe = quant::QuantRecipe::from_json(r.recipe).to_json();
  r.mixed_accuracy = bench.measure(r.recipe).result.accuracy;
  r.uniform_bits = uniform_bits(r.layers, o.bits, budget);
  r.uniform_accuracy = std::nan("");
  if (r.uniform_bits > 0) {
    json u = base;
    u["weight"][key] = r.uniform_bits;
    r.uniform_accuracy = bench.measure(u).result.accuracy;
    for (const LayerCosts& l : r.layers) r.uniform_weight_bits += l.weights * r.uniform_bits;
  }

  char line[256];
  std::snprintf(line, sizeof line, "\n  %-24s %9s", "layer", "weights");
  out << line;
  for (int b : o.bits) {
    std::snprintf(line, sizeof line, " %7s", ("drop@" + std::to_string(b)).c_str());
    out << line;
  }
  out << "  bits\n";
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    std::snprintf(line, sizeof line, "  %-24s %9lld", r.layers[i].name.c_str(),
                  static_cast<long long>(r.layers[i].weights));
    out << line;
    for (double c : r.layers[i].costs) {
      std::snprintf(line, sizeof line, " %+7.2f", 100 * c);
      out << line;
    }
    out << "  " << r.allocation.bits[i] << "\n";
  }
  std::int64_t n = 0;
  for (const LayerCosts& l : r.layers) n += l.weights;
  std::snprintf(line, sizeof line,
                "\n  mixed precision: %.2f%% (float %.2f%%), weights %s, %.2f bits on average\n",
                100 * r.mixed_accuracy, 100 * r.float_accuracy,
                kib(r.allocation.weight_bits).c_str(),
                static_cast<double>(r.allocation.weight_bits) / static_cast<double>(n));
  out << line;
  if (r.uniform_bits > 0) {
    std::snprintf(line, sizeof line, "  uniform %d-bit:   %.2f%%, weights %s\n", r.uniform_bits,
                  100 * r.uniform_accuracy, kib(r.uniform_weight_bits).c_str());
    out << line;
  } else {
    out << "  uniform: no candidate width fits the budget on every layer\n";
  }
  fs::create_directories(o.out);
  r.recipe_path = (fs::path(o.out) / "autoquant_recipe.json").string();
  write_file_atomic(r.recipe_path, r.recipe.dump(2) + "\n");
  out << "wrote " << r.recipe_path << " (use it as \"quant\" in qgrad train, or with qgrad ptq "
      << "--recipe)\n";
  return r;
}

std::string autoquant_usage() {
  return "usage: qgrad autoquant --checkpoint FLOAT.safetensors --budget B [--bits 8,4,2]\n"
         "                       [--recipe R] [--method M] [--calibration-batches N]\n"
         "                       [--images N] [--out DIR] [--model NAME] [--data-dir DIR]\n"
         "                       [--batch-size N] [--threads N] [--device D]\n"
         "\n"
         "Chooses per-layer weight bit widths within a budget from each layer's measured\n"
         "accuracy loss at each width (only that layer's weights quantized, post-training\n"
         "calibrated), greedily: every layer starts at the widest width, and the step down\n"
         "with the least loss per bit saved is taken until the budget holds. Writes\n"
         "DIR/autoquant_recipe.json (a recipe with per-layer rules) and compares its accuracy\n"
         "with the widest uniform width that fits the budget.\n"
         "\n"
         "  --checkpoint FILE        float checkpoint (or a state dict with --model) (required)\n"
         "  --budget B               avg_weight_bits<=4 (weights, by count) or size_bytes<=N\n"
         "                           (weight storage) (required)\n"
         "  --bits 8,4,2             candidate widths, 2 to 16 (default 8,4,2)\n"
         "  --recipe R               nvidia, lsq or aimet recipe: name, JSON file or inline JSON\n"
         "                           (default nvidia_int8; its inputs stay as it says)\n"
         "  --method M               nvidia recipes: input calibration max, entropy, mse,\n"
         "                           percentile\n"
         "  --calibration-batches N  training batches to calibrate on (default: the recipe's, or "
         "8)\n"
         "  --images N               test images measured (default 2000)\n"
         "  --out DIR                output folder (default: the current folder)\n"
         "  --model NAME             the model of a plain state dict (a zoo model or the\n"
         "                           FILE.onnx that qgrad import read)\n"
         "  --data-dir DIR, --batch-size N, --threads N  as qgrad ptq\n"
         "  --device D               cpu, cuda or cuda:N: where the models are calibrated and\n"
         "                           measured (default cpu)\n"
         "\n"
         "exit status: 0 done, 1 error (also a budget no width reaches), 2 bad usage\n";
}

int autoquant_command(const std::vector<std::string>& args, std::ostream& out) {
  AutoquantOptions o;
  const auto options = parse_command_options(
      "autoquant", args,
      {"--checkpoint", "--budget", "--bits", "--recipe", "--method", "--calibration-batches",
       "--images", "--out", "--model", "--data-dir", "--batch-size", "--threads", "--device"});
  if (!options) {
    out << autoquant_usage();
    return 0;
  }
  const std::string cmd = "autoquant";
  o.recipe.command = cmd;
  for (const auto& [name, value] : *options) {
    if (o.source.take_option(cmd, name, value) || o.recipe.take_option(name, value)) continue;
    if (name == "--budget") o.budget = value;
    if (name == "--bits") o.bits = parse_bits(value);
    if (name == "--images") o.images = parse_int_option(cmd, name, value, 1, 1 << 30);
    if (name == "--out") o.out = value;
    if (name == "--device") {
      parse_device("autoquant: --device", value);  // a bad name is a usage error before any work
      o.device = value;
    }
  }
  if (o.source.checkpoint.empty()) throw UsageError("autoquant: --checkpoint FILE is required");
  if (o.budget.empty())
    throw UsageError("autoquant: --budget is required (e.g. \"avg_weight_bits<=4\")");
  BitBudget::parse(o.budget);  // a bad budget is reported before the checkpoint is read
  run_autoquant(o, out);
  return 0;
}

}  // namespace qgrad::cli
