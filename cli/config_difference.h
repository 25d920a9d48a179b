// The first place where two JSON configs differ, as a dotted key path with the value on each
// side. `qgrad train` uses it to say which setting a resumed run changed, and "pretrained" to
// say where the recipe of a quantized checkpoint differs from the training recipe, so both
// errors name one key instead of dumping two whole objects.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace qgrad::cli {

struct ConfigDifference {
  std::string path;         // dotted, starting with the `path` given (e.g. "quant.input.num_bits")
  nlohmann::json was, now;  // null where the key is absent on that side
};

// nullopt when equal. Objects are compared key by key, following `now` (a config qgrad wrote
// itself, a few levels deep); anything else is compared whole.
std::optional<ConfigDifference> first_difference(const nlohmann::json& was,
                                                 const nlohmann::json& now,
                                                 const std::string& path);

}  // namespace qgrad::cli
