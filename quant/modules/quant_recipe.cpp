// QuantRecipe: reading the recipe's JSON into the typed recipe, checking it, writing it back.
#include "quant/modules/quant_recipe.h"

#include <algorithm>

#include "core/error.h"
#include "core/json_parse.h"
#include "quant/modules/named_recipes.h"
#include "quant/recipe/recipe_fields.h"

namespace qgrad::quant {

using json = nlohmann::json;

namespace {

// A bound far beyond any use that keeps the images counted during calibration within int64.
constexpr std::int64_t kMaxCalibrationBatches = 1000000;

}  // namespace

QuantRecipe QuantRecipe::from_json(const json& given) {
  // {"recipe": "lsq_w4a4", ...}: the named recipe with the other keys merged over it.
  const json j = expand_named_recipe(given);
  // "recipe" is listed for the unknown-key message; expand_named_recipe has removed it.
  RecipeFields top(j, "",
                   {"recipe", "family", "weight", "input", "layers", "add", "fuse_bn", "bias",
                    "exclude", "calibration"});
  if (!top.has("family"))
    recipe_error("\"family\" is required (one of " + recipe_joined(quant_family_names()) +
                 "), or \"recipe\" naming a recipe (qgrad recipes lists them)");
  QuantRecipe r;
  r.family_ = *quant_family_named(*top.choice("family", quant_family_names()));
  for (const QuantRole role : {QuantRole::Weight, QuantRole::Input}) {
    const std::string key = quant_role_name(role);
    if (top.has(key) && !top.at(key).is_null() && !top.at(key).is_object())
      recipe_error(top.where(key) + " must be an object or null, got " + recipe_shown(top.at(key)));
  }
  for (const QuantRole role : {QuantRole::Weight, QuantRole::Input}) {
    const std::string key = quant_role_name(role);
    std::optional<QuantizerSettings>& settings = role == QuantRole::Weight ? r.weight_ : r.input_;
    if (!top.has(key))
      settings = default_quantizer_settings(r.family_, role);
    else if (!top.at(key).is_null())
      settings = parse_quantizer_settings(r.family_, top.at(key), role, key);
    if (!settings) continue;
    const QuantizerFactories f = quantizer_factories(*settings, role, key);
    if (role == QuantRole::Weight)
      r.weight_factory_ = f.weight;
    else
      r.input_factory_ = f.input;
  }
  r.add_ = top.boolean("add").value_or(true);
  r.fuse_bn_ = top.boolean("fuse_bn").value_or(false);
  r.int32_bias_ = top.choice("bias", {"float", "int32"}).value_or("float") == "int32";
  if (r.int32_bias_ && r.fuse_bn_)
    recipe_error(
        "\"bias\": \"int32\" needs \"fuse_bn\": false (a fused conv + batch norm's folded bias "
        "changes with the batch statistics every step; keep the batch norm float after the conv)");
  if (top.has("layers")) r.layer_rules_ = LayerRules::from_json(top.at("layers"), r.family_);

  if (top.has("exclude")) {
    const json& e = top.at("exclude");
    if (!e.is_array())
      recipe_error("\"exclude\" must be a list of module names, got " + recipe_shown(e));
    for (const json& n : e) {
      if (!n.is_string())
        recipe_error("\"exclude\" entries must be strings, got " + recipe_shown(n));
      r.exclude_.push_back(n.get<std::string>());
    }
  }

  const json cal = top.has("calibration") ? top.at("calibration") : json::object();
  RecipeFields c(cal, "calibration",
                 {"batches", "method", "percentile", "start_bin", "stride", "strict"});
  r.calibration_batches_ = c.integer("batches", 0, kMaxCalibrationBatches)
                               .value_or(default_calibration_batches(r.family_));
  r.calibration_.method = c.choice("method", {"entropy", "mse", "percentile"}).value_or("entropy");
  if (const std::optional<RecipeNumber> p = c.number("percentile", 0.0, 100.0)) {
    r.calibration_.histogram.percentile = p->value();
    if (p->value() <= 0) recipe_error(c.where("percentile") + " must be > 0");
  }
  r.calibration_.histogram.start_bin =
      c.integer("start_bin", 0, std::int64_t{1} << 30).value_or(128);
  r.calibration_.histogram.stride = c.integer("stride", 1, std::int64_t{1} << 30).value_or(1);
  r.calibration_.strict = c.boolean("strict").value_or(true);
  const bool rules_quantize =
      std::any_of(r.layer_rules_.rules().begin(), r.layer_rules_.rules().end(),
                  [](const LayerRules::Rule& x) { return x.weight.settings || x.input.settings; });
  if (r.family_ == QuantFamily::AIMET && r.calibration_batches_ == 0 &&
      (r.quantizes_weights() || r.quantizes_inputs() || rules_quantize))
    recipe_error(
        c.where("batches") +
        " must be >= 1 for the aimet family (its quantizers need compute_encodings before use)");

  // Build one quantizer of each kind now, so that values the quantizers reject are reported at
  // parse time (a convolution and a linear weight shape).
  auto probe = [](const std::string& path, const QuantizerFactories& f) {
    try {
      if (f.weight) {
        f.weight({4, 4, 3, 3});
        f.weight({4, 4});
      }
      if (f.input) f.input();
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.rfind("quant recipe:", 0) == 0) throw;
      recipe_error("\"" + path + "\": " + what);
    }
  };
  probe("weight", QuantizerFactories{r.weight_factory_, {}});
  probe("input", QuantizerFactories{{}, r.input_factory_});
  // Each rule on its own over the top-level settings, for the same reason; the combinations that
  // several matching rules make are checked per layer by layer().
  for (const LayerRules::Rule& rule : r.layer_rules_.rules())
    for (const QuantRole role : {QuantRole::Weight, QuantRole::Input}) {
      const LayerRules::RoleOverride& o = rule.role(role);
      if (!o.settings) continue;
      const std::optional<QuantizerSettings>& top_level =
          role == QuantRole::Weight ? r.weight_ : r.input_;
      QuantizerSettings settings =
          top_level ? *top_level : default_quantizer_settings(r.family_, role);
      merge_quantizer_settings(settings, *o.settings);
      const std::string path = rule.label + "." + quant_role_name(role);
      probe(path, quantizer_factories(settings, role, path));
    }
  return r;
}

QuantRecipe QuantRecipe::parse(const std::string& text) {
  json j;
  try {
    // Depth-bounded, duplicate keys and numbers beyond double's range rejected.
    j = parse_json(text, "recipe text");
  } catch (const IOError& e) {
    recipe_error(std::string("invalid JSON in ") + e.what());
  }
  return from_json(j);
}

json QuantRecipe::to_json() const {
  json j;
  j["family"] = quant_family_name(family_);
  j["weight"] = weight_ ? quantizer_settings_json(*weight_) : json();
  j["input"] = input_ ? quantizer_settings_json(*input_) : json();
  j["add"] = add_;
  j["fuse_bn"] = fuse_bn_;
  j["bias"] = int32_bias_ ? "int32" : "float";
  if (!layer_rules_.empty()) j["layers"] = layer_rules_.to_json();
  j["exclude"] = exclude_;
  j["calibration"] = {{"batches", calibration_batches_},
                      {"method", calibration_.method},
                      {"percentile", calibration_.histogram.percentile},
                      {"start_bin", calibration_.histogram.start_bin},
                      {"stride", calibration_.histogram.stride},
                      {"strict", calibration_.strict}};
  return j;
}

bool QuantRecipe::operator==(const QuantRecipe& o) const {
  const CalibrationOptions &a = calibration_, &b = o.calibration_;
  return family_ == o.family_ && weight_ == o.weight_ && input_ == o.input_ &&
         layer_rules_ == o.layer_rules_ && add_ == o.add_ && fuse_bn_ == o.fuse_bn_ &&
         int32_bias_ == o.int32_bias_ && exclude_ == o.exclude_ &&
         calibration_batches_ == o.calibration_batches_ && a.method == b.method &&
         a.histogram.percentile == b.histogram.percentile &&
         a.histogram.start_bin == b.histogram.start_bin &&
         a.histogram.stride == b.histogram.stride && a.strict == b.strict;
}

std::shared_ptr<nn::UnaryModule> QuantRecipe::make_weight_quantizer(
    const Shape& weight_shape) const {
  return weight_factory_ ? weight_factory_(weight_shape) : nullptr;
}

std::shared_ptr<nn::UnaryModule> QuantRecipe::make_input_quantizer() const {
  return input_factory_ ? input_factory_() : nullptr;
}

QuantRecipe::LayerQuantizers QuantRecipe::layer(const std::string& name, LayerPosition pos) const {
  LayerQuantizers out;
  if (layer_rules_.matching(name, pos).empty()) {
    out.weight = weight_;
    out.input = input_;
    out.make_weight = weight_factory_;
    out.make_input = input_factory_;
    return out;
  }
  const std::string at = "layers[" + name + "].";
  out.weight = layer_rules_.resolve(name, pos, QuantRole::Weight, weight_,
                                    default_quantizer_settings(family_, QuantRole::Weight));
  out.input = layer_rules_.resolve(name, pos, QuantRole::Input, input_,
                                   default_quantizer_settings(family_, QuantRole::Input));
  if (out.weight)
    out.make_weight = quantizer_factories(*out.weight, QuantRole::Weight, at + "weight").weight;
  if (out.input)
    out.make_input = quantizer_factories(*out.input, QuantRole::Input, at + "input").input;
  return out;
}

}  // namespace qgrad::quant
