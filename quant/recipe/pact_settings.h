/// @file
/// PactSettings: the "weight" / "input" settings of the "pact" recipe family. Weights are
/// DoReFaWeightQuantizer ("num_bits" [8]); inputs are PactActivationQuantizer ("num_bits" [8],
/// "alpha" [10.0], the initial clipping level, > 0). num_bits lies in the PACT family's one
/// range (quant/learnable/pact_bits.h). Each member is set when the recipe gives the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "quant/recipe/quantizer_factories.h"
#include "quant/recipe/recipe_number.h"
#include "quant/recipe/settings_fields.h"

namespace qgrad::quant {

/// The "weight" / "input" settings of the "pact" recipe family (see the file comment);
/// each member is set when the recipe gives its key.
struct PactSettings {
  std::optional<std::int64_t> num_bits;  ///< "num_bits" [8]
  std::optional<RecipeNumber> alpha;     ///< inputs only

  /// The recipe keys and the members that hold them, {key, member} (settings_fields.h).
  static auto fields() {
    return std::make_tuple(settings_field("num_bits", &PactSettings::num_bits),
                           settings_field("alpha", &PactSettings::alpha));
  }
  /// Checks each key given (ValueError naming `path`.key).
  static PactSettings parse(const nlohmann::json& j, QuantRole role, const std::string& path);
  /// The quantizer factory of role these settings describe (the family's defaults for the keys
  /// left out); ValueError naming `path` for keys that do not go together.
  QuantizerFactories factories(QuantRole role, const std::string& path) const;
  /// Same keys given, with equal values.
  bool operator==(const PactSettings& o) const { return settings_equal(*this, o); }
};

}  // namespace qgrad::quant
