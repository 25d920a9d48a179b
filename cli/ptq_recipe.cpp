// Resolving the --recipe argument of `qgrad ptq` and applying the calibration options over it.
#include "cli/ptq_recipe.h"

#include <cstdio>

#include "cli/command_options.h"
#include "cli/recipe_argument.h"
#include "cli/usage_error.h"
#include "core/error.h"
#include "core/json_parse.h"
#include "quant/modules/named_recipes.h"

namespace qgrad::cli {

namespace {

using json = nlohmann::json;

double parse_percentile(const std::string& command, const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(v > 0 && v <= 100))
    throw UsageError(command + ": --percentile must be a number in (0, 100], got '" + text + "'");
  return v;
}

}  // namespace

const std::vector<std::string>& PtqRecipeOptions::option_names() {
  static const std::vector<std::string> names{"--recipe", "--method", "--percentile",
                                              "--calibration-batches"};
  return names;
}

bool PtqRecipeOptions::take_option(const std::string& name, const std::string& value) {
  if (name == "--recipe") {
    recipe = value;
  } else if (name == "--method") {
    method = value;
  } else if (name == "--percentile") {
    percentile = parse_percentile(command, value);
  } else if (name == "--calibration-batches") {
    calibration_batches = parse_int_option(command, name, value, 1, 1000000);
  } else {
    return false;
  }
  return true;
}

quant::QuantRecipe ptq_recipe(const PtqRecipeOptions& options) {
  const PtqRecipeOptions& o = options;
  json j = read_recipe_argument(options.recipe, options.command);
  if (!j.is_object())
    throw UsageError(o.command +
                     ": --recipe must be a recipe name, a JSON file or a JSON object, got " +
                     describe_json(j));
  // Expanded first so the options below override a named recipe's values, not the reverse.
  quant::QuantRecipe parsed = [&] {
    try {
      return quant::QuantRecipe::from_json(j);
    } catch (const ValueError& e) {
      throw UsageError(o.command + ": --recipe: " + std::string(e.what()));
    }
  }();
  if (!parsed.quantizes_weights() && !parsed.quantizes_inputs())
    throw UsageError(o.command +
                     ": --recipe quantizes nothing (\"weight\" and \"input\" are both null)");
  // The options edit the recipe's JSON, read again below, so that from_json checks what they
  // combine into with its usual messages. Every key but "layers" is taken normalised (every
  // default written out, so the options have objects to edit); "layers" stays as given (after
  // a named recipe's expansion): to_json writes the rules as a list, and the list form would
  // drop the object form's check that equally specific rules agree.
  const json given_layers = quant::expand_named_recipe(j).value("layers", json());
  j = parsed.to_json();
  if (!given_layers.is_null()) j["layers"] = given_layers;

  const std::string family = quant::quant_family_name(parsed.family());
  if (!options.method.empty() && options.method != "max" && options.method != "entropy" &&
      options.method != "mse" && options.method != "percentile")
    throw UsageError(o.command + ": --method must be one of max, entropy, mse, percentile, got '" +
                     options.method + "'");
  if (!options.method.empty()) {
    if (parsed.family() != quant::QuantFamily::NVIDIA)
      throw UsageError(o.command +
                       ": --method applies to nvidia recipes (pytorch_quantization's max and "
                       "histogram calibrators), but this recipe's family is " +
                       family +
                       ", which calibrates with the quantizers its recipe describes (for "
                       "torch_ao, set \"observer\" in the recipe's \"input\" and \"weight\")");
    if (!j["input"].is_object())
      throw UsageError(o.command +
                       ": --method sets how the layer inputs are calibrated, but the recipe "
                       "does not quantize inputs (\"input\" is null)");
    if (options.method == "max") {
      j["input"]["calib_method"] = "max";
    } else {
      j["input"]["calib_method"] = "histogram";
      j["calibration"]["method"] = options.method;
    }
  }
  if (options.percentile) {
    if (options.method != "percentile")
      throw UsageError(o.command + ": --percentile needs --method percentile");
    j["calibration"]["percentile"] = *options.percentile;
  }
  j["calibration"]["batches"] = options.calibration_batches > 0    ? options.calibration_batches
                                : parsed.calibration_batches() > 0 ? parsed.calibration_batches()
                                                                   : kDefaultPtqCalibrationBatches;
  try {
    return quant::QuantRecipe::from_json(j);
  } catch (const ValueError& e) {
    throw UsageError(o.command +
                     ": --recipe with the calibration options: " + std::string(e.what()));
  }
}

std::string describe_calibration(const quant::QuantRecipe& recipe) {
  const json j = recipe.to_json();
  const quant::QuantFamily family = recipe.family();
  auto role = [&](const char* name) -> std::string {
    const json& q = j[name];
    const std::string whose = std::string(" (") + name + "s)";
    if (!q.is_object()) return std::string("float") + whose;
    if (family == quant::QuantFamily::TorchAO)
      return q.value("observer", std::string("?")) + " observer" + whose;
    if (family != quant::QuantFamily::NVIDIA)
      return std::string(quant::quant_family_name(family)) + " initial ranges" + whose;
    if (q.value("dynamic", false)) return "dynamic amax" + whose;
    if (q.value("calib_method", std::string("max")) != "histogram") return "max" + whose;
    const quant::CalibrationOptions& c = recipe.calibration_options();
    char p[32];
    std::snprintf(p, sizeof p, " %g", c.histogram.percentile);
    return c.method + (c.method == "percentile" ? p : "") + " histogram" + whose;
  };
  return role("input") + ", " + role("weight");
}

}  // namespace qgrad::cli
