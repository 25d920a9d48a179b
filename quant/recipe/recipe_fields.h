// RecipeFields: the one place where the values of a QAT recipe are checked. It reads one JSON
// object of the recipe (the top level, "calibration", a "weight" / "input" quantizer, a layer
// rule's override), rejects keys it does not list, and reads each key against its type and
// range; every error is a ValueError "quant recipe: ..." naming the dotted key path
// ("\"weight.num_bits\" must lie in [2, 16], got 1", "\"layers[0].input.alpha\" ..."). Integers
// are never truncated or wrapped. A key that is absent reads as nullopt: the caller decides the
// default, so partial settings (layer rules) keep exactly the keys they were given.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quant/recipe/recipe_number.h"

namespace qgrad::quant {

// ValueError("quant recipe: " + message).
[[noreturn]] void recipe_error(const std::string& message);
// A value in an error message: scalars as JSON text (cut short), arrays and objects by type and
// size, never dumped whole.
std::string recipe_shown(const nlohmann::json& v);
// "\"a\", \"b\"".
std::string recipe_joined(const std::vector<std::string>& names);

class RecipeFields {
 public:
  // `path`: the object's dotted key path ("" for the top level); `allowed`: its keys.
  RecipeFields(const nlohmann::json& obj, std::string path,
               const std::vector<std::string>& allowed);

  bool has(const std::string& key) const { return obj_.contains(key); }
  const nlohmann::json& at(const std::string& key) const { return obj_.at(key); }
  // The quoted dotted path of `key`, as errors name it.
  std::string where(const std::string& key) const;

  std::optional<std::int64_t> integer(const std::string& key, std::int64_t lo,
                                      std::int64_t hi) const;
  std::optional<RecipeNumber> number(const std::string& key, double lo, double hi) const;
  std::optional<bool> boolean(const std::string& key) const;
  std::optional<std::string> choice(const std::string& key,
                                    const std::vector<std::string>& choices) const;

 private:
  const nlohmann::json& obj_;
  std::string path_;
};

}  // namespace qgrad::quant
