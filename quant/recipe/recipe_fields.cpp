// RecipeFields: key checks and typed reads with key-path errors.
#include "quant/recipe/recipe_fields.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/json_parse.h"

namespace qgrad::quant {

using json = nlohmann::json;

void recipe_error(const std::string& message) {
  throw ValueError("quant recipe: " + message);
}

std::string recipe_shown(const json& v) {
  if (v.is_structured()) return describe_json(v);
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 64) text = text.substr(0, 64) + "...";
  return text;
}

std::string recipe_joined(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + ("\"" + names[i] + "\"");
  return s;
}

RecipeFields::RecipeFields(const json& obj, std::string path,
                           const std::vector<std::string>& allowed)
    : obj_(obj), path_(std::move(path)) {
  if (!obj.is_object())
    recipe_error((path_.empty() ? "the recipe" : "\"" + path_ + "\"") +
                 " must be a JSON object, got " + recipe_shown(obj));
  const std::set<std::string> ok(allowed.begin(), allowed.end());
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (!ok.count(it.key()))
      recipe_error("unknown key " + where(it.key()) +
                   " (expected one of: " + recipe_joined(allowed) + ")");
}

std::string RecipeFields::where(const std::string& key) const {
  return "\"" + (path_.empty() ? key : path_ + "." + key) + "\"";
}

std::optional<std::int64_t> RecipeFields::integer(const std::string& key, std::int64_t lo,
                                                  std::int64_t hi) const {
  if (!has(key)) return std::nullopt;
  const json& v = at(key);
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (!v.is_number_integer())
    recipe_error(where(key) + " must be an integer in " + range + ", got " + recipe_shown(v));
  // nlohmann keeps 2^63..2^64-1 unsigned; get<int64_t>() would wrap them to negatives.
  if (v.is_number_unsigned() &&
      v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    recipe_error(where(key) + " must lie in " + range + ", got " + recipe_shown(v));
  const auto x = v.get<std::int64_t>();
  if (x < lo || x > hi)
    recipe_error(where(key) + " must lie in " + range + ", got " + recipe_shown(v));
  return x;
}

std::optional<RecipeNumber> RecipeFields::number(const std::string& key, double lo,
                                                 double hi) const {
  if (!has(key)) return std::nullopt;
  const json& v = at(key);
  if (!v.is_number()) recipe_error(where(key) + " must be a number, got " + recipe_shown(v));
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi)
    recipe_error(where(key) + " must lie in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                 "], got " + recipe_shown(v));
  return RecipeNumber::from_json(v);
}

std::optional<bool> RecipeFields::boolean(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  const json& v = at(key);
  if (!v.is_boolean()) recipe_error(where(key) + " must be true or false, got " + recipe_shown(v));
  return v.get<bool>();
}

std::optional<std::string> RecipeFields::choice(const std::string& key,
                                                const std::vector<std::string>& choices) const {
  if (!has(key)) return std::nullopt;
  const json& v = at(key);
  if (!v.is_string() ||
      std::find(choices.begin(), choices.end(), v.get<std::string>()) == choices.end())
    recipe_error(where(key) + " must be one of " + recipe_joined(choices) + ", got " +
                 recipe_shown(v));
  return v.get<std::string>();
}

}  // namespace qgrad::quant
