// `qgrad sensitivity`: argument parsing, the per-layer measurements, the table, the JSON file
// and the picture.
#include "cli/sensitivity_command.h"

#include <omp.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <sstream>

#include "cli/command_options.h"
#include "cli/device_option.h"
#include "cli/float_checkpoint.h"
#include "cli/layer_sensitivity.h"
#include "cli/plot_command.h"
#include "cli/training_factory.h"
#include "cli/usage_error.h"
#include "core/file_io.h"

namespace qgrad::cli {

namespace fs = std::filesystem;

namespace {

std::string db(double v) {
  if (std::isinf(v)) return "inf";
  if (std::isnan(v)) return "n/a";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string recipe_label(const SensitivityOptions& o) {
  std::string label = o.recipe.recipe;
  if (label.size() > 72) label = label.substr(0, 69) + "...";
  if (!o.recipe.method.empty()) label += " (" + o.recipe.method + ")";
  return label;
}

}  // namespace

SensitivityFile run_sensitivity(const SensitivityOptions& o, std::ostream& out) {
  PtqRecipeOptions ro = o.recipe;
  ro.command = "sensitivity";
  const quant::QuantRecipe recipe = ptq_recipe(ro);  // calibrates, as PTQ does
  const FloatModelSource::Loaded loaded = o.source.load("sensitivity");
  const TrainConfig& config = loaded.config;
  const Device device = parse_device("sensitivity: --device", o.device);
  require_recipe_runs_on("sensitivity: --device " + o.device, device, config, recipe);
  check_output_folder("sensitivity", "--out", o.out);

  const SensitivityBench bench(config, loaded.file, o.images, device);
  SensitivityFile s;
  s.model = config.model;
  s.recipe = recipe_label(o);
  s.checkpoint = o.source.checkpoint;
  out << "qgrad sensitivity: " << config.model << " from " << o.source.checkpoint << ", recipe "
      << s.recipe << ", " << bench.test_images() << " test images, " << recipe.calibration_batches()
      << " calibration batches of " << config.batch_size << ", " << omp_get_max_threads()
      << " threads, on " << device << "\n"
      << std::flush;
  s.float_accuracy = bench.evaluate_float().accuracy;
  const nlohmann::json recipe_json = recipe.to_json();
  const LayerMeasurement all = bench.measure(recipe_json);
  s.quantized_accuracy = all.result.accuracy;

  // Every layer the recipe quantizes; a batch norm fused into its conv is part of the conv.
  std::vector<std::pair<std::string, std::string>> layers;
  for (std::size_t i = 0; i < all.layers.names.size(); ++i)
    if (all.layers.types[i] != "Identity")
      layers.emplace_back(all.layers.names[i], all.layers.types[i]);
  char line[256];
  std::snprintf(line, sizeof line, "\n  %-24s %-14s %9s %8s %11s %11s\n", "layer", "type",
                "accuracy", "change", "SQNR weight", "SQNR input");
  out << line;
  for (const auto& [name, type] : layers) {
    const LayerMeasurement m = bench.measure(recipe_json, name);
    LayerSensitivity l;
    l.name = name;
    l.accuracy = m.result.accuracy;
    std::string w = "-", in = "-";
    for (const auto& [role, v] : m.sqnr_db) {
      // JSON has no infinity: a quantizer without noise is written as null.
      l.sqnr_db.emplace_back(role, std::isinf(v) ? std::nan("") : v);
      if (role == "weight") w = db(v);
      if (role.rfind("input", 0) == 0) in = in == "-" ? db(v) : in + "/" + db(v);
    }
    std::sort(l.sqnr_db.begin(), l.sqnr_db.end());
    std::snprintf(line, sizeof line, "  %-24s %-14s %8.2f%% %+8.2f %11s %11s\n", name.c_str(),
                  type.c_str(), 100 * l.accuracy, 100 * (l.accuracy - s.float_accuracy), w.c_str(),
                  in.c_str());
    out << line << std::flush;
    s.layers.push_back(std::move(l));
  }
  std::snprintf(line, sizeof line, "  %-24s %-14s %8.2f%%\n  %-24s %-14s %8.2f%% %+8.2f\n", "float",
                "", 100 * s.float_accuracy, "all layers", "", 100 * s.quantized_accuracy,
                100 * (s.quantized_accuracy - s.float_accuracy));
  out << line;

  fs::create_directories(o.out);
  const std::string json_path = (fs::path(o.out) / "sensitivity.json").string();
  write_file_atomic(json_path, sensitivity_to_json(s).dump(2) + "\n");
  out << "wrote " << json_path << "\n";
  if (o.plot) {
    std::ostringstream plot_out;
    try {
      plot_command({json_path, "--out", o.out}, plot_out);
      out << plot_out.str();
    } catch (const std::exception& e) {
      out << "sensitivity: no picture: " << e.what() << "\n";  // the table and JSON are written
    }
  }
  return s;
}

std::string sensitivity_usage() {
  return "usage: qgrad sensitivity --checkpoint FLOAT.safetensors [--recipe R] [--method M]\n"
         "                         [--calibration-batches N] [--images N] [--out DIR]\n"
         "                         [--model NAME] [--data-dir DIR] [--batch-size N]\n"
         "                         [--threads N] [--device D] [--no-plot]\n"
         "\n"
         "Per-layer sensitivity of a float model to a recipe: for each layer the recipe\n"
         "quantizes, the test accuracy with only that layer quantized (calibrated post-training\n"
         "as qgrad ptq does) and the SQNR (dB) of each of its quantizers, on the first N test\n"
         "images. Prints a table and writes DIR/sensitivity.json and DIR/sensitivity.png.\n"
         "\n"
         "  --checkpoint FILE        float checkpoint of qgrad train (or a state dict with\n"
         "                           --model) (required)\n"
         "  --recipe R               named recipe, JSON file or inline JSON (default nvidia_int8)\n"
         "  --method M               nvidia recipes: max, entropy, mse or percentile (inputs)\n"
         "  --calibration-batches N  training batches to calibrate on (default: the recipe's, or "
         "8)\n"
         "  --images N               test images measured (default 2000)\n"
         "  --out DIR                output folder (default: the current folder)\n"
         "  --model NAME             the model of a plain state dict (a zoo model or the\n"
         "                           FILE.onnx that qgrad import read)\n"
         "  --data-dir DIR           dataset folder (default: data.dir of the training config)\n"
         "  --batch-size N           calibration batch size (default: the training config's)\n"
         "  --threads N              CPU threads (default: all cores)\n"
         "  --device D               cpu, cuda or cuda:N: where the models are calibrated and\n"
         "                           measured (default cpu)\n"
         "  --no-plot                no picture\n"
         "\n"
         "exit status: 0 done, 1 error, 2 bad usage\n";
}

int sensitivity_command(const std::vector<std::string>& args, std::ostream& out) {
  SensitivityOptions o;
  const auto options = parse_command_options(
      "sensitivity", args,
      {"--checkpoint", "--recipe", "--method", "--calibration-batches", "--images", "--out",
       "--model", "--data-dir", "--batch-size", "--threads", "--device"},
      nullptr, {"--no-plot"});
  if (!options) {
    out << sensitivity_usage();
    return 0;
  }
  const std::string cmd = "sensitivity";
  o.recipe.command = cmd;
  for (const auto& [name, value] : *options) {
    if (o.source.take_option(cmd, name, value) || o.recipe.take_option(name, value)) continue;
    if (name == "--images") o.images = parse_int_option(cmd, name, value, 1, 1 << 30);
    if (name == "--out") o.out = value;
    if (name == "--no-plot") o.plot = false;
    if (name == "--device") {
      parse_device("sensitivity: --device", value);  // a bad name is a usage error before any work
      o.device = value;
    }
  }
  if (o.source.checkpoint.empty()) throw UsageError("sensitivity: --checkpoint FILE is required");
  run_sensitivity(o, out);
  return 0;
}

}  // namespace qgrad::cli
