/// @file
/// Named, ready-made QAT recipes: a table of name, one-line description, the paper or reference
/// implementation the recipe follows, and the full recipe JSON (the schema of quant_recipe.h),
/// defined in one place (named_recipes.cpp). A recipe object may name one with "recipe":
/// {"recipe": "lsq_w4a4", "input": {"num_bits": 8}} expands to the named recipe with the keys
/// given next to the name merged over it: objects ("weight", "input", "calibration") merge key by
/// key, recursively; any other value (a number, a list, null) replaces the named recipe's value,
/// so "weight": null keeps weights float. A "family" other than the named recipe's is an error.
/// QuantRecipe::from_json expands names itself, so every place that reads a recipe (the "quant"
/// key of `qgrad train`, quantize_model) accepts them; `qgrad recipes` lists them. The LSQ
/// recipes keep the first and last layers at 8 bits, as the paper does, with "layers" rules on
/// "@first" and "@last"; "pact_w4a4" (the "pact" family: PACT's learned clipping and DoReFa
/// weights) does the same for its weights and leaves the first layer's input float.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qgrad::quant {

/// A built-in recipe that a recipe's "recipe" key names (see the file comment).
struct NamedRecipe {
  std::string name;         ///< the name a recipe's "recipe" key gives
  std::string description;  ///< one line
  std::string reference;    ///< the paper or implementation it follows
  nlohmann::json recipe;    ///< a full recipe object, without "recipe"
};

/// Every named recipe, in listing order.
const std::vector<NamedRecipe>& named_recipes();

/// The recipe called `name`; ValueError ("quant recipe: unknown recipe \"x\" (known: ...)")
/// listing the known names otherwise.
const NamedRecipe& named_recipe(const std::string& name);

/// `recipe` with its "recipe" key expanded as described above; a recipe object without "recipe"
/// (or anything that is not an object) is returned unchanged. ValueError for a "recipe" value
/// that is not a string, an unknown name or a different "family".
nlohmann::json expand_named_recipe(const nlohmann::json& recipe);

/// `over` merged into `base` as recipe overrides merge: objects key by key, recursively; any other
/// value replaces (also used by the per-layer rules, layer_rules.h).
void merge_recipe_json(nlohmann::json& base, const nlohmann::json& over);

}  // namespace qgrad::quant
