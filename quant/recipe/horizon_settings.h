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

struct HorizonSettings {
  std::optional<std::string> dtype;
  std::optional<bool> saturate;
  std::optional<std::string> round_mode;
  std::optional<bool> per_channel;
  std::optional<RecipeNumber> averaging_constant;

  static auto fields() {
    return std::make_tuple(
        settings_field("dtype", &HorizonSettings::dtype),
        settings_field("saturate", &HorizonSettings::saturate),
        settings_field("round_mode", &HorizonSettings::round_mode),
        settings_field("per_channel", &HorizonSettings::per_channel),
        settings_field("averaging_constant", &HorizonSettings::averaging_constant));
  }
  static HorizonSettings parse(const nlohmann::json& j, QuantRole role, const std::string& path);
  QuantizerFactories factories(QuantRole role, const std::string& path) const;
  bool operator==(const HorizonSettings& o) const { return settings_equal(*this, o); }
};

}  // namespace qgrad::quant
