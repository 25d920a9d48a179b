// Reading a pretrained state dict from a qgrad checkpoint or a plain safetensors file.
#include "cli/pretrained.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/config_reader.h"
#include "cli/stored_config.h"
#include "core/error.h"
#include "nn/serialize/checkpoint.h"
#include "nn/serialize/safetensors.h"

namespace qgrad::cli {

namespace {

// Refuses a checkpoint whose stored training config says it is not a float `model_name`.
void check_checkpoint_config(const serialize::Checkpoint& c, const std::string& model_name,
                             const std::string& path) {
  if (c.metadata.find(kStoredConfigKey) == c.metadata.end())
    return;  // not written by qgrad train: the keys decide
  // A damaged stored config is an error naming the file, not a reason to skip the checks.
  const nlohmann::json saved = stored_config_json(c, "pretrained", path);
  const nlohmann::json quant = saved.value("quant", nlohmann::json());
  if (quant.is_object())
    throw ValueError("pretrained: '" + path +
                     "' is a checkpoint of quantization-aware training (quant family " +
                     ConfigReader::shown(quant.value("family", nlohmann::json("?"))) +
                     "); \"pretrained\" takes the weights of a float model (to continue that "
                     "run, use \"resume\")");
  const nlohmann::json model = saved.value("model", nlohmann::json());
  if (model.is_string() && model.get<std::string>() != model_name)
    throw ValueError("pretrained: '" + path + "' holds a " + model.get<std::string>() +
                     " model, but this config trains " + model_name);
}

}  // namespace

PretrainedInfo load_pretrained(nn::Module& model, const std::string& model_name,
                               const std::string& path) {
  std::error_code ec;
  QGRAD_CHECK(std::filesystem::is_regular_file(path, ec), IOError, "pretrained: '", path,
              "' does not exist or is not a file");
  PretrainedInfo info;
  TensorDict state;
  try {
    serialize::SafetensorsContents file = serialize::load_safetensors(path);
    if (file.metadata.count("qgrad.format")) {
      const serialize::Checkpoint c = serialize::load_checkpoint(path);
      check_checkpoint_config(c, model_name, path);
      state = c.model;
      info.checkpoint = true;
      info.epoch = c.epoch;
    } else {
      state = std::move(file.tensors);
    }
  } catch (const IOError& e) {
    const std::string what = e.what();
    if (what.rfind("pretrained: ", 0) == 0) throw;
    throw IOError("pretrained: " + what);
  }
  QGRAD_CHECK(state.size() > 0, ValueError, "pretrained: '", path, "' holds no model tensors");
  try {
    model.load_state_dict(state, /*strict=*/true);
  } catch (const ValueError& e) {
    throw ValueError("pretrained: the tensors in '" + path + "' do not fit model " + model_name +
                     ": " + e.what());
  }
  info.tensors = state.size();
  return info;
}

std::string describe(const PretrainedInfo& info, const std::string& path) {
  return "loaded " + std::to_string(info.tensors) + " tensors from " + path +
         (info.checkpoint ? " (qgrad checkpoint, epoch " + std::to_string(info.epoch) + ")"
                          : " (state dict)");
}

}  // namespace qgrad::cli
