/// @file
/// LayerRules: the per-layer part of a QAT recipe (the "layers" key of quant_recipe.h), rules that
/// override the quantizers of the layers whose qualified names (as named_modules prints them:
/// "0", "layer3.1.conv2", "fc") match a pattern. Patterns are shell globs matched with POSIX
/// fnmatch ('*' and '?' also match dots, "[...]" sets), an exact name, or "@first" / "@last": the
/// first / last Conv2d or Linear of the model in module-tree order (the forward order of a
/// Sequential and of the zoo's models), which gives the LSQ paper's convention of 8-bit first and
/// last layers on any model. A rule is {"weight": {...} | null, "input": {...} | null}: an object
/// is merged key by key over the layer's quantizer settings so far (which start from the recipe's
/// top-level "weight" / "input", or the family's default when that is null), null leaves that
/// role float; a rule that leaves both float (or the rule null) keeps the layer float, as
/// "exclude" does. On a residual Add (QuantAdd) only "input" applies. A rule's objects are read
/// into the family's typed settings (quant/recipe/quantizer_settings.h) holding only the keys
/// they give, each key checked where it is read; the combinations are checked once merged.
///
/// Which rule wins when several match:
/// - the list form, [{"match": "pattern" | ["p1", "p2"], "weight": ..., "input": ...}, ...], is
///   applied in list order, so the last matching rule wins on the keys it sets (as TensorRT
///   Model Optimizer applies its quant_cfg patterns);
/// - the object form, {"pattern": {...}, ...}, has no order (JSON objects are unordered and
///   qgrad's reader sorts keys), so rules are applied from the least to the most specific: every
///   glob before every exact name or "@first" / "@last", globs by their number of literal
///   (non-wildcard) characters. Two equally specific rules that match one layer and set one key
///   to different values are an error that names both (write the list form to order them).
/// Every pattern must match at least one quantizable layer (Conv2d, Linear, Add) of the model,
/// or quantize_model reports it with the layer names it could have matched.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "quant/recipe/quantizer_settings.h"

namespace qgrad::quant {

/// Where a layer sits among the model's Conv2d and Linear layers (for "@first" / "@last").
struct LayerPosition {
  bool first = false;  ///< the layer is the model's first Conv2d or Linear
  bool last = false;   ///< the layer is the model's last Conv2d or Linear
};

/// The "layers" rules of a recipe, read and ordered for application (see the file comment).
class LayerRules {
 public:
  /// What a rule does to one role of a layer.
  struct RoleOverride {
    bool given = false;                         ///< the rule names the role
    std::optional<QuantizerSettings> settings;  ///< merged over the layer's; nullopt: float
    /// Same given flag and settings.
    bool operator==(const RoleOverride& o) const {
      return given == o.given && settings == o.settings;
    }
  };
  /// One rule: its patterns and what it does to each role.
  struct Rule {
    std::vector<std::string> patterns;  ///< the patterns that select the layers
    /// What the rule does to the weight.
    RoleOverride weight, input;  ///< what the rule does to the input
    bool exact = false;          ///< exact names, "@first" or "@last" only
    std::size_t literals = 0;    ///< literal characters of the least specific pattern
    std::string label;           ///< how errors name the rule: layers["layer3.*"] or layers[2]
    /// Weight or input, by role.
    const RoleOverride& role(QuantRole r) const { return r == QuantRole::Weight ? weight : input; }
  };

  LayerRules() = default;
  /// Validates "layers" (list or object form), reads each rule's settings as `family`'s, and
  /// orders the rules for application. ValueError ("quant recipe: \"layers...\" ...") for
  /// anything malformed.
  static LayerRules from_json(const nlohmann::json& layers, QuantFamily family);
  /// The list form, in application order (from_json reads it back to the same rules).
  nlohmann::json to_json() const;

  /// Whether there are no rules.
  bool empty() const { return rules_.empty(); }
  /// The rules, in application order.
  const std::vector<Rule>& rules() const { return rules_; }

  /// The rules matching `name`, in application order.
  std::vector<const Rule*> matching(const std::string& name, LayerPosition pos) const;
  /// `role` of layer `name` after the matching rules, starting from `base` (nullopt: float;
  /// `family_default` is then what a rule's settings merge over). nullopt when the role stays
  /// float. ValueError for two equally specific conflicting rules.
  std::optional<QuantizerSettings> resolve(const std::string& name, LayerPosition pos,
                                           QuantRole role,
                                           const std::optional<QuantizerSettings>& base,
                                           const QuantizerSettings& family_default) const;
  /// The patterns that match none of `layers` ({name, position}), quoted.
  std::vector<std::string> unmatched(
      const std::vector<std::pair<std::string, LayerPosition>>& layers) const;

  /// The same rules with the same settings, in the same application order. The labels and
  /// whether the rules came as a list are left out: to_json writes the list form, whose
  /// application order is the object form's, so from_json(to_json()) equals the rules read.
  bool operator==(const LayerRules& o) const;

 private:
  std::vector<Rule> rules_;
  bool ordered_ = false;  ///< the list form: order given, no ambiguity check
};

/// Whether `pattern` (a glob, an exact name, "@first" or "@last") selects layer `name`.
bool layer_pattern_matches(const std::string& pattern, const std::string& name, LayerPosition pos);

}  // namespace qgrad::quant
