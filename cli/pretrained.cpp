// Reading a pretrained state dict from a qgrad checkpoint or a plain safetensors file, and
// loading it into a float model or, for a quantized checkpoint, a model quantized with the same
// recipe.
#include "cli/pretrained.h"

#include <filesystem>

#include "cli/config_difference.h"
#include "cli/config_reader.h"
#include "cli/stored_config.h"
#include "core/error.h"
#include "nn/serialize/checkpoint.h"
#include "nn/serialize/safetensors.h"
#include "quant/modules/lazy_buffer.h"

namespace qgrad::cli {

namespace {

// The model name and normalised recipe of a checkpoint's stored training config (nothing when
// the checkpoint was not written by qgrad's command line: the keys decide then).
void read_stored_config(const serialize::Checkpoint& c, PretrainedFile& file) {
  if (c.metadata.find(kStoredConfigKey) == c.metadata.end()) return;
  // A damaged stored config is an error naming the file, not a reason to skip the checks.
  const nlohmann::json saved = stored_config_json(c, file.op, file.path);
  file.config = saved;
  const nlohmann::json model = saved.value("model", nlohmann::json());
  if (model.is_string()) file.model = model.get<std::string>();
  // An imported model ({"onnx": FILE}) has no zoo name: its state dict's keys decide.
  file.quant = stored_recipe(saved, file.op, file.path);
}

nlohmann::json without_calibration(nlohmann::json recipe) {
  recipe.erase("calibration");  // only used while calibrating, which a quantized file skips
  return recipe;
}

}  // namespace

PretrainedFile read_pretrained(const std::string& path, const std::string& op) {
  std::error_code ec;
  QGRAD_CHECK(std::filesystem::is_regular_file(path, ec), IOError, op, ": '", path,
              "' does not exist or is not a file");
  PretrainedFile file;
  file.path = path;
  file.op = op;
  try {
    serialize::SafetensorsContents contents = serialize::load_safetensors(path);
    if (contents.metadata.count("qgrad.format")) {
      const serialize::Checkpoint c = serialize::load_checkpoint(path);
      read_stored_config(c, file);
      file.state = c.model;
      file.checkpoint = true;
      file.epoch = c.epoch;
    } else {
      file.state = std::move(contents.tensors);
    }
  } catch (const IOError& e) {
    const std::string what = e.what();
    if (what.rfind(op + ": ", 0) == 0) throw;
    throw IOError(op + ": " + what);
  }
  QGRAD_CHECK(file.state.size() > 0, ValueError, op, ": '", path, "' holds no model tensors");
  return file;
}

PretrainedInfo load_pretrained(nn::Module& model, const std::string& model_name,
                               const PretrainedFile& file,
                               const std::optional<quant::QuantRecipe>& training_quant) {
  const std::string& path = file.path;
  const std::string& op = file.op;
  if (!file.model.empty() && file.model != model_name)
    throw ValueError(op + ": '" + path + "' holds a " + file.model +
                     " model, but this config trains " + model_name);
  if (file.quantized()) {
    if (!training_quant)
      throw ValueError(
          op + ": '" + path +
          "' is a checkpoint of a quantized model (quantization-aware training or qgrad ptq, "
          "quant family " +
          ConfigReader::shown(file.quant.value("family", nlohmann::json("?"))) +
          "); float training takes the weights of a float model. To fine-tune it with "
          "quantization, set \"quant\" to its recipe; to continue a training run, use "
          "\"resume\"");
    if (const auto d = first_difference(without_calibration(file.quant),
                                        without_calibration(training_quant->to_json()), "quant"))
      throw ValueError(op + ": '" + path +
                       "' holds a model quantized with another recipe: " + d->path + " is " +
                       ConfigReader::shown(d->was) + " there but " + ConfigReader::shown(d->now) +
                       " in this config. Fine-tuning a quantized checkpoint needs its recipe "
                       "(\"calibration\" may differ): \"quant\": " +
                       without_calibration(file.quant).dump());
  }
  try {
    if (file.quantized())
      quant::load_quant_state_dict(model, file.state, /*strict=*/true);
    else
      model.load_state_dict(file.state, /*strict=*/true);
  } catch (const ValueError& e) {
    throw ValueError(op + ": the tensors in '" + path + "' do not fit model " + model_name +
                     (file.quantized() ? " quantized with this recipe" : "") + ": " + e.what());
  }
  PretrainedInfo info;
  info.tensors = file.state.size();
  info.checkpoint = file.checkpoint;
  info.quantized = file.quantized();
  info.epoch = file.epoch;
  return info;
}

PretrainedInfo load_pretrained(nn::Module& model, const std::string& model_name,
                               const std::string& path) {
  return load_pretrained(model, model_name, read_pretrained(path), std::nullopt);
}

std::string describe(const PretrainedInfo& info, const std::string& path) {
  const std::string epoch = std::to_string(info.epoch);
  return "loaded " + std::to_string(info.tensors) + " tensors from " + path +
         (info.quantized ? " (quantized qgrad checkpoint, epoch " + epoch +
                               ": quantizer state loaded, no calibration)"
          : info.checkpoint ? " (qgrad checkpoint, epoch " + epoch + ")"
                            : " (state dict)");
}

}  // namespace qgrad::cli
