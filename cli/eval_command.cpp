// `qgrad eval`: argument parsing, model reconstruction from the checkpoint's config (quantized
// with the stored recipe for a QAT checkpoint), and the test-set pass.
#include "cli/eval_command.h"

#include <omp.h>

#include <cstdio>
#include <ostream>

#include "cli/command_options.h"
#include "cli/qat_setup.h"
#include "cli/stored_config.h"
#include "cli/train_config.h"
#include "cli/training_factory.h"
#include "cli/usage_error.h"
#include "nn/data/mnist.h"
#include "nn/serialize/checkpoint.h"
#include "quant/modules/lazy_buffer.h"

namespace qgrad::cli {

EvalResult run_eval(const EvalOptions& options, std::ostream& out) {
  serialize::Checkpoint ckpt = serialize::load_checkpoint(options.checkpoint);
  TrainConfig config = stored_train_config(ckpt, "eval", options.checkpoint);
  if (!options.data_dir.empty()) config.data.dir = options.data_dir;
  if (options.batch_size > 0) config.eval_batch_size = options.batch_size;
  config.threads = options.threads;  // this command's own --threads, not the training run's
  omp_set_num_threads(compute_threads(config));

  // The same model as training built: quantized with the stored (normalised) recipe, then the
  // checkpoint's state, which also sizes the quantizers' lazily sized buffers.
  std::shared_ptr<nn::UnaryModule> model = build_model(config);
  std::string quantized;
  if (std::optional<quant::QuantRecipe> recipe = quant_recipe(config))
    quantized = ", fake-quantized " + quantize_for_training(*model, *recipe).family;
  quant::load_quant_state_dict(*model, ckpt.model, /*strict=*/true);
  auto test_set = std::make_shared<data::MNIST>(config.data.dir, data::Split::Test);
  data::DataLoader loader(test_set,
                          data::DataLoaderOptions()
                              .batch_size(config.eval_batch_size)
                              .prefetch(background_loading(config)),
                          build_eval_transforms(config));
  EvalResult r = evaluate(*model, loader, kCPU);
  char line[512];
  std::snprintf(line, sizeof line,
                "%s%s (epoch %lld) on %s: test loss %.4f, test accuracy %.2f%% (%lld/%lld), %.1f "
                "s\n",
                config.model.c_str(), quantized.c_str(), static_cast<long long>(ckpt.epoch),
                config.data.dir.c_str(), r.loss, 100 * r.accuracy,
                static_cast<long long>(r.correct), static_cast<long long>(r.count), r.time_s);
  out << options.checkpoint << ": " << line << std::flush;
  return r;
}

std::string eval_usage() {
  return "usage: qgrad eval --checkpoint FILE [--data-dir DIR] [--batch-size N] [--threads N]\n"
         "\n"
         "Evaluates a checkpoint written by qgrad train on the test split and prints the test\n"
         "loss and accuracy. The model and normalisation come from the config stored in the\n"
         "checkpoint; a quantization-aware checkpoint is rebuilt with its recipe and evaluated\n"
         "fake-quantized, with the quantization parameters training left.\n"
         "\n"
         "  --checkpoint FILE  a .safetensors checkpoint (last, best or epoch_N) (required)\n"
         "  --data-dir DIR     dataset folder (default: data.dir of the training config)\n"
         "  --batch-size N     evaluation batch size, 1 to 1e9 (default: eval_batch_size, 1000)\n"
         "  --threads N        CPU threads, 1 to 4096 (default: all cores)\n"
         "\n"
         "exit status: 0 done, 1 error (a missing or damaged checkpoint or dataset), 2 bad usage\n";
}

int eval_command(const std::vector<std::string>& args, std::ostream& out) {
  EvalOptions o;
  const auto options = parse_command_options(
      "eval", args, {"--checkpoint", "--data-dir", "--batch-size", "--threads"});
  if (!options) {
    out << eval_usage();
    return 0;
  }
  for (const auto& [name, value] : *options) {
    if (name == "--checkpoint") o.checkpoint = value;
    if (name == "--data-dir") o.data_dir = value;
    if (name == "--batch-size")
      o.batch_size = parse_int_option("eval", name, value, 1, kMaxBatchSize);
    if (name == "--threads") o.threads = parse_int_option("eval", name, value, 1, kMaxThreads);
  }
  if (o.checkpoint.empty()) throw UsageError("eval: --checkpoint FILE is required");
  run_eval(o, out);
  return 0;
}

}  // namespace qgrad::cli
