// `qgrad ptq`: argument parsing, the output path check, and the float -> quantize -> calibrate
// -> evaluate -> save flow.
#include "cli/ptq_command.h"

#include <omp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <ostream>

#include "cli/command_options.h"
#include "cli/dataset_factory.h"
#include "cli/device_option.h"
#include "cli/float_checkpoint.h"
#include "cli/pretrained.h"
#include "cli/stored_config.h"
#include "cli/train_config.h"
#include "cli/training_factory.h"
#include "cli/usage_error.h"
#include "core/error.h"
#include "core/version.h"
#include "distributed/init.h"
#include "nn/data/dataloader.h"
#include "nn/data/mnist.h"
#include "nn/serialize/checkpoint.h"
#include "quant/modules/synchronize_statistics.h"

namespace qgrad::cli {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Where the checkpoint goes: --out as a file when it ends in .safetensors, else a folder for
// <stem>_ptq.safetensors; without --out, that name next to the float checkpoint.
fs::path output_path(const PtqOptions& o) {
  const std::string name = fs::path(o.source.checkpoint).stem().string() + "_ptq.safetensors";
  if (o.out.empty()) return fs::path(o.source.checkpoint).parent_path() / name;
  if (ends_with(o.out, ".safetensors")) return fs::path(o.out);
  return fs::path(o.out) / name;
}

// Checked before any work: the nearest existing folder above the output must be a writable
// folder, the output itself no folder, and never the float checkpoint.
void check_writable(const fs::path& target, const PtqOptions& o) {
  std::error_code ec;
  const std::string shown = "ptq: --out '" + (o.out.empty() ? target.string() : o.out) + "'";
  if (fs::is_directory(target, ec))
    throw IOError(shown + ": '" + target.string() + "' is a folder, not a file");
  // A device, FIFO or socket, or the float checkpoint itself: UsageErrors.
  check_output_file("ptq", "--out", target.string(),
                    {{"the float checkpoint", o.source.checkpoint}});
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * fraction);
  return buf;
}

std::string result_row(const char* label, const EvalResult& r) {
  char line[160];
  std::snprintf(line, sizeof line, "  %-12s %9.4f %10s  (%lld/%lld)\n", label, r.loss,
                percent(r.accuracy).c_str(), static_cast<long long>(r.correct),
                static_cast<long long>(r.count));
  return line;
}

}  // namespace

PtqResult run_ptq(const PtqOptions& options, std::ostream& leader_out,
                  std::shared_ptr<distributed::ProcessGroup> group) {
  // Under mpirun -np N the ranks split each calibration batch and the evaluations; rank 0 alone
  // prints and writes.
  if (!group) group = distributed::init_process_group();
  const bool leader = group->rank() == 0;
  std::ostream silent(nullptr);  // a stream without a buffer: what it is given goes nowhere
  std::ostream& out = leader ? leader_out : silent;
  // Everything that can be wrong with the options first, before minutes of work.
  const quant::QuantRecipe recipe = ptq_recipe(options.recipe);
  const fs::path target = output_path(options);
  const FloatModelSource::Loaded source = options.source.load("ptq");
  const PretrainedFile& file = source.file;
  const TrainConfig& config = source.config;
  if (leader) check_writable(target, options);
  // Each calibration batch is split among the ranks: the same batches as one process.
  TrainConfig rank_config = config;
  if (group->size() > 1) {
    if (config.batch_size % group->size() != 0)
      throw UsageError("ptq: the calibration batch size " + std::to_string(config.batch_size) +
                       " does not split evenly among the " + std::to_string(group->size()) +
                       " ranks; give a --batch-size that is a multiple of " +
                       std::to_string(group->size()));
    rank_config.batch_size = config.batch_size / group->size();
  }
  const Device device = parse_device("ptq: --device", options.device);
  require_recipe_runs_on("ptq: --device " + options.device, device, config, recipe);

  std::shared_ptr<data::Dataset> train_set = make_dataset(config.data, data::Split::Train);
  std::shared_ptr<data::Dataset> test_set = make_dataset(config.data, data::Split::Test);
  data::DataLoader test_loader(test_set,
                               data::DataLoaderOptions()
                                   .batch_size(config.eval_batch_size)
                                   .prefetch(group->size() == 1 && background_loading(config))
                                   .workers(static_cast<int>(config.data.workers)),
                               build_eval_transforms(config));

  PtqResult r;
  std::shared_ptr<nn::UnaryModule> model = build_model(config);
  const PretrainedInfo loaded = load_pretrained(*model, config.model, file, std::nullopt);
  out << "qgrad ptq: " << config.model << ": " << describe(loaded, options.source.checkpoint)
      << "\n"
      << "  data " << data_source(config.data) << ": " << train_set->size() << " train / "
      << test_set->size() << " test images, " << omp_get_max_threads() << " threads\n"
      << std::flush;
  if (!device.is_cpu()) model->to(device);
  r.float_result = evaluate(*model, test_loader, device, group.get());

  r.layers = quantize_for_training(*model, recipe);
  if (group->size() > 1) quant::synchronize_statistics(*model, group);
  out << "  quant: " << describe(r.layers) << "\n"
      << "  calibration: " << describe_calibration(recipe) << "\n"
      << std::flush;
  if (!device.is_cpu()) model->to(device);  // the quantizers' new state
  r.calibration =
      calibrate_on_training_set(*model, recipe, train_set, rank_config, device, group.get());
  out << "  quant: " << describe(r.calibration, recipe) << "\n" << std::flush;
  r.quantized = evaluate(*model, test_loader, device, group.get());

  const double change = 100 * (r.quantized.accuracy - r.float_result.accuracy);
  char change_text[64];
  std::snprintf(change_text, sizeof change_text, "%+.2f points", change);
  char header[96];
  std::snprintf(header, sizeof header, "\n  %-12s %9s %10s\n", "", "test loss", "test acc");
  out << header << result_row("float", r.float_result)
      << result_row(("PTQ " + r.layers.family).c_str(), r.quantized) << "  accuracy change "
      << change_text << "\n"
      << std::flush;

  // The stored config rebuilds the quantized model; "pretrained" records where it came from.
  TrainConfig stored = config;
  stored.quant = recipe;
  stored.pretrained = fs::absolute(options.source.checkpoint).lexically_normal().string();
  stored.output.dir = target.parent_path().empty() ? "." : target.parent_path().string();
  const nlohmann::json ptq_meta{
      {"float_checkpoint", stored.pretrained},        {"method", describe_calibration(recipe)},
      {"calibration_batches", r.calibration.batches}, {"calibration_images", r.calibration.images},
      {"float_test_acc", r.float_result.accuracy},    {"ptq_test_acc", r.quantized.accuracy}};
  r.output = target.string();
  if (!leader) {
    group->barrier();  // returns once rank 0 has written the checkpoint
    return r;
  }
  if (!target.parent_path().empty()) fs::create_directories(target.parent_path());
  serialize::save_checkpoint(target.string(), *model, nullptr, nullptr, file.epoch, 0,
                             {{kStoredConfigKey, to_json(stored).dump()},
                              {kPtqMetadataKey, ptq_meta.dump()},
                              {"cli.qgrad_version", version_string()}});
  r.output = target.string();
  nlohmann::json finetune = recipe.to_json();
  finetune.erase("calibration");
  out << "saved " << r.output << "\n"
      << "  evaluate: qgrad eval --checkpoint " << r.output << "\n"
      << "  fine-tune (QAT): qgrad train with \"pretrained\": \"" << r.output
      << "\" and \"quant\": " << finetune.dump() << "\n"
      << std::flush;
  group->barrier();
  return r;
}

std::string ptq_usage() {
  return "usage: qgrad ptq --checkpoint FLOAT.safetensors [--recipe R] [--calibration-batches N]\n"
         "                 [--method max|entropy|mse|percentile] [--percentile P]\n"
         "                 [--out DIR_OR_FILE] [--model NAME] [--data-dir DIR]\n"
         "                 [--batch-size N] [--threads N] [--device D]\n"
         "\n"
         "Post-training quantization: quantizes a float model with a recipe, calibrates it on\n"
         "training batches (normalised, no augmentation), prints the float and the quantized\n"
         "test accuracy side by side and writes a quantized checkpoint that qgrad eval and\n"
         "qgrad export accept and qgrad train fine-tunes (\"pretrained\" with the same recipe).\n"
         "\n"
         "  --checkpoint FILE        float checkpoint of qgrad train, or a plain state dict with\n"
         "                           --model (required)\n"
         "  --recipe R               a named recipe (qgrad recipes), a JSON file, or inline\n"
         "                           JSON such as '{\"recipe\": \"nvidia_int8\"}' (default:\n"
         "                           nvidia_int8: int8, per-channel weights, max calibration)\n"
         "  --calibration-batches N  training batches to calibrate on, 1 to 1e6 (default: the\n"
         "                           recipe's calibration.batches, or 8 when it has none)\n"
         "  --method M               nvidia recipes: how layer inputs are calibrated: max, or\n"
         "                           the histogram methods entropy, mse, percentile (default:\n"
         "                           the recipe's; weights keep the recipe's calibrator)\n"
         "  --percentile P           with --method percentile, in (0, 100] (default 99.99)\n"
         "  --out DIR_OR_FILE        a .safetensors file, or a folder for\n"
         "                           <checkpoint stem>_ptq.safetensors (default: next to\n"
         "                           the checkpoint)\n"
         "  --model NAME             the model of a plain state dict: a zoo model, or the\n"
         "                           FILE.onnx that qgrad import read (checked against a\n"
         "                           checkpoint's)\n"
         "  --data-dir DIR           dataset folder (default: data.dir of the training config)\n"
         "  --batch-size N           calibration batch size, 1 to 1e9 (default: batch_size of\n"
         "                           the training config, 128)\n"
         "  --threads N              CPU threads, 1 to 4096 (default: all cores)\n"
         "  --device D               cpu, cuda or cuda:N: where the model is calibrated and\n"
         "                           evaluated (default cpu; on a GPU the recipe's quantizers\n"
         "                           must run there, or it is refused naming them)\n"
         "\n"
         "The checkpoint is written to a temporary name and renamed when complete.\n"
         "exit status: 0 done, 1 error (a missing or damaged checkpoint or dataset, an\n"
         "unwritable --out), 2 bad usage (also a quantized --checkpoint)\n";
}

int ptq_command(const std::vector<std::string>& args, std::ostream& out) {
  PtqOptions o;
  const auto options = parse_command_options(
      "ptq", args,
      {"--checkpoint", "--recipe", "--calibration-batches", "--method", "--percentile", "--out",
       "--model", "--data-dir", "--batch-size", "--threads", "--device"});
  if (!options) {
    out << ptq_usage();
    return 0;
  }
  for (const auto& [name, value] : *options) {
    if (!o.source.take_option("ptq", name, value)) o.recipe.take_option(name, value);
    if (name == "--out") o.out = value;
    if (name == "--device") {
      parse_device("ptq: --device", value);  // a bad name is a usage error before any work
      o.device = value;
    }
  }
  if (o.source.checkpoint.empty()) throw UsageError("ptq: --checkpoint FILE is required");
  if (o.recipe.recipe.empty()) throw UsageError("ptq: --recipe must not be empty");
  run_ptq(o, out);
  return 0;
}

}  // namespace qgrad::cli
