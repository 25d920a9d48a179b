// The training config that `qgrad train` stores in every checkpoint (metadata "cli.config"), read
// back by resume, eval and "pretrained". The text comes from a file that may be damaged or not
// qgrad's at all, so it goes through parse_json (depth-bounded, duplicate-free) and every problem
// is an IOError naming the operation, the checkpoint and the metadata entry: a broken checkpoint
// is not a mistake in the user's config (exit status 1, not 2).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cli/train_config.h"
#include "nn/serialize/checkpoint.h"

namespace qgrad::cli {

// The metadata key of the stored config.
constexpr const char* kStoredConfigKey = "cli.config";

// The stored config as a JSON object. Throws IOError "<op>: ..." naming `path` when the entry is
// missing, is not valid JSON or is not an object.
nlohmann::json stored_config_json(const serialize::Checkpoint& checkpoint, const std::string& op,
                                  const std::string& path);

// The stored config's recipe ("quant") normalised by QuantRecipe, so that a recipe written by
// another qgrad version (keys added since take their defaults) compares equal to today's; null
// when absent or null. An invalid recipe is an IOError naming `op` and the checkpoint `path`.
nlohmann::json stored_recipe(const nlohmann::json& saved, const std::string& op,
                             const std::string& path);

// The stored config, parsed and validated as parse_train_config does; a value it rejects is an
// IOError naming the checkpoint (not a UsageError).
TrainConfig stored_train_config(const serialize::Checkpoint& checkpoint, const std::string& op,
                                const std::string& path);

}  // namespace qgrad::cli
