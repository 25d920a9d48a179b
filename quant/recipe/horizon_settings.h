/// @file
/// HorizonSettings: the "weight" / "input" settings of the "horizon" recipe family,
/// HorizonFakeQuantize: "dtype" ["qint8"] | "qint16" | "qint4" | "quint4", "saturate" [true],
/// "round_mode" ["half_to_even"] | "half_up", "per_channel" [weights true, axis 0; inputs: an
/// error], "averaging_constant" [0.01]. Each member is set when the recipe gives the key.
#pragma once

#include <optional>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "quant/recipe/quantizer_factories.h"
#include "quant/recipe/recipe_number.h"
#include "quant/recipe/settings_fields.h"

namespace qgrad::quant {

/// The "weight" / "input" settings of the "horizon" recipe family (see the file comment);
/// each member is set when the recipe gives its key.
struct HorizonSettings {
  std::optional<std::string> dtype;       ///< "dtype" ["qint8"] | "qint16" | "qint4" | "quint4"
  std::optional<bool> saturate;           ///< "saturate" [true]
  std::optional<std::string> round_mode;  ///< "round_mode" ["half_to_even"] | "half_up"
  std::optional<bool> per_channel;        ///< "per_channel" [weights true; inputs: an error]
  std::optional<RecipeNumber> averaging_constant;  ///< "averaging_constant" [0.01]

  /// The recipe keys and the members that hold them, {key, member} (settings_fields.h).
  static auto fields() {
    return std::make_tuple(
        settings_field("dtype", &HorizonSettings::dtype),
        settings_field("saturate", &HorizonSettings::saturate),
        settings_field("round_mode", &HorizonSettings::round_mode),
        settings_field("per_channel", &HorizonSettings::per_channel),
        settings_field("averaging_constant", &HorizonSettings::averaging_constant));
  }
  /// `j`, a JSON object of the family's keys for role, read key by key (ValueError naming
  /// `path`.key for an unknown key or a wrong type or value).
  static HorizonSettings parse(const nlohmann::json& j, QuantRole role, const std::string& path);
  /// The quantizer factory of role these settings describe (the family's defaults for the keys
  /// left out); ValueError naming `path` for keys that do not go together.
  QuantizerFactories factories(QuantRole role, const std::string& path) const;
  /// Same keys given, with equal values.
  bool operator==(const HorizonSettings& o) const { return settings_equal(*this, o); }
};

}  // namespace qgrad::quant
