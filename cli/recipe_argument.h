// The --recipe argument of the CLI commands (ptq, autoquant, sensitivity, show): a named recipe
// such as "nvidia_int8", a JSON file, or inline JSON text starting with '{', read into the
// recipe's JSON object ({"recipe": name} for a name), which QuantRecipe::from_json (the one
// recipe parser) then reads. JSON text goes through parse_json (depth-bounded, no duplicate
// keys, no 1e400) for every command alike.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace qgrad::cli {

// UsageError "COMMAND: --recipe ..." for invalid JSON or a missing .json file; IOError for a
// recipe file that cannot be read. An unknown name is left to QuantRecipe::from_json, which
// lists the known ones.
nlohmann::json read_recipe_argument(const std::string& text, const std::string& command);

}  // namespace qgrad::cli
