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

struct PactSettings {
  std::optional<std::int64_t> num_bits;
  std::optional<RecipeNumber> alpha;  ///< inputs only

  static auto fields() {
    return std::make_tuple(settings_field("num_bits", &PactSettings::num_bits),
                           settings_field("alpha", &PactSettings::alpha));
  }
  /// Checks each key given (ValueError naming `path`.key).
  static PactSettings parse(const nlohmann::json& j, QuantRole role, const std::string& path);
  QuantizerFactories factories(QuantRole role, const std::string& path) const;
  bool operator==(const PactSettings& o) const { return settings_equal(*this, o); }
};

}  // namespace qgrad::quant
