// float_checkpoint_config: the training config of a float checkpoint.
#include "cli/float_checkpoint.h"

#include <omp.h>

#include "cli/command_options.h"
#include "cli/training_factory.h"

#include "cli/usage_error.h"
#include "core/error.h"

namespace qgrad::cli {

TrainConfig float_checkpoint_config(const PretrainedFile& file, const std::string& model,
                                    const std::string& op) {
  TrainConfig config;
  if (file.config.is_object()) {
    try {
      config = parse_train_config(file.config);
    } catch (const UsageError& e) {
      throw IOError(op + ": the training config stored in checkpoint '" + file.path +
                    "' is invalid: " + e.what());
    }
    const std::string held = config.onnx.empty() ? config.model : config.onnx;
    if (!model.empty() && model != held)
      throw UsageError(op + ": --model " + model + " but checkpoint '" + file.path + "' holds a " +
                       held + " model");
  } else {
    if (model.empty())
      throw UsageError(op + ": '" + file.path +
                       "' has no stored training config (a plain state dict?): give --model "
                       "NAME (a zoo model, or the FILE.onnx qgrad import read) to say which "
                       "model it holds");
    try {
      // A path ending in .onnx names the ONNX file a state dict was imported from (qgrad import).
      const bool onnx = model.size() > 5 && model.compare(model.size() - 5, 5, ".onnx") == 0;
      config = parse_train_config(nlohmann::json{
          {"model", onnx ? nlohmann::json{{"onnx", model}} : nlohmann::json(model)}});
    } catch (const UsageError& e) {
      throw UsageError(op + ": --model: " + std::string(e.what()));
    }
  }
  if (file.quantized())
    throw UsageError(op + ": --checkpoint '" + file.path + "' is already quantized (quant family " +
                     file.quant.value("family", std::string("?")) + "); " + op +
                     " needs the checkpoint of a float model (qgrad train without \"quant\", or "
                     "a state dict with --model). To fine-tune a quantized checkpoint, use it as "
                     "\"pretrained\" in qgrad train");
  config.quant.reset();
  config.resume.clear();
  return config;
}

FloatModelSource::Loaded FloatModelSource::load(const std::string& op) const {
  Loaded l{read_pretrained(checkpoint, op), {}};
  l.config = float_checkpoint_config(l.file, model, op);
  if (!data_dir.empty()) l.config.data.dir = data_dir;
  if (batch_size > 0) l.config.batch_size = batch_size;
  l.config.threads = threads;  // this command's own --threads, not the training run's
  use_compute_threads(l.config);
  return l;
}

const std::vector<std::string>& FloatModelSource::option_names() {
  static const std::vector<std::string> names{"--checkpoint", "--model", "--data-dir",
                                              "--batch-size", "--threads"};
  return names;
}

bool FloatModelSource::take_option(const std::string& command, const std::string& name,
                                   const std::string& value) {
  if (name == "--checkpoint") {
    checkpoint = value;
  } else if (name == "--model") {
    model = value;
  } else if (name == "--data-dir") {
    data_dir = value;
  } else if (name == "--batch-size") {
    batch_size = parse_int_option(command, name, value, 1, kMaxBatchSize);
  } else if (name == "--threads") {
    threads = parse_int_option(command, name, value, 1, kMaxThreads);
  } else {
    return false;
  }
  return true;
}

}  // namespace qgrad::cli
