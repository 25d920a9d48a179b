// Reading the training config stored in a checkpoint: parse_json, an object check, and
// validation errors re-thrown as IOError naming the checkpoint.
#include "cli/stored_config.h"

#include "cli/usage_error.h"
#include "core/error.h"
#include "core/json_parse.h"
#include "quant/modules/quant_recipe.h"

namespace qgrad::cli {

namespace {

std::string describe_source(const std::string& op, const std::string& path) {
  return op + ": the training config stored in checkpoint '" + path + "' (metadata '" +
         kStoredConfigKey + "')";
}

}  // namespace

nlohmann::json stored_config_json(const serialize::Checkpoint& checkpoint, const std::string& op,
                                  const std::string& path) {
  auto it = checkpoint.metadata.find(kStoredConfigKey);
  QGRAD_CHECK(it != checkpoint.metadata.end(), IOError, op, ": checkpoint '", path, "' has no '",
              kStoredConfigKey, "' metadata (not written by qgrad train)");
  const std::string what = describe_source(op, path);
  nlohmann::json saved = parse_json(it->second, what);
  QGRAD_CHECK(saved.is_object(), IOError, what, " must be a JSON object, got ",
              describe_json(saved));
  return saved;
}

nlohmann::json stored_recipe(const nlohmann::json& saved, const std::string& op,
                             const std::string& path) {
  const nlohmann::json quant = saved.value("quant", nlohmann::json());
  if (!quant.is_object()) return nullptr;
  try {
    return quant::QuantRecipe::from_json(quant).to_json();
  } catch (const ValueError& e) {
    throw IOError(op + ": the recipe stored in checkpoint '" + path + "' is invalid: " + e.what());
  }
}

TrainConfig stored_train_config(const serialize::Checkpoint& checkpoint, const std::string& op,
                                const std::string& path) {
  const nlohmann::json saved = stored_config_json(checkpoint, op, path);
  try {
    return parse_train_config(saved);
  } catch (const UsageError& e) {
    throw IOError(describe_source(op, path) + " is invalid: " + e.what());
  }
}

}  // namespace qgrad::cli
