/// @file
/// AimetSettings: the "weight" / "input" settings of the "aimet" recipe family,
/// AimetQuantizeDequantize: "bitwidth" [8] (1..32, AIMET's affine grid), "symmetric" [weights
/// true, inputs false], "per_channel" [weights true; inputs: an error] (encoding shape
/// [O, 1, ...]). Each member is set when the recipe gives the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "quant/recipe/quantizer_factories.h"
#include "quant/recipe/settings_fields.h"

namespace qgrad::quant {

/// The "weight" / "input" settings of the "aimet" recipe family (see the file comment);
/// each member is set when the recipe gives its key.
struct AimetSettings {
  std::optional<std::int64_t> bitwidth;  ///< "bitwidth" [8], 1..32
  std::optional<bool> symmetric;         ///< "symmetric" [weights true, inputs false]
  std::optional<bool> per_channel;       ///< "per_channel" [weights true; inputs: an error]

  /// The recipe keys and the members that hold them, {key, member} (settings_fields.h).
  static auto fields() {
    return std::make_tuple(settings_field("bitwidth", &AimetSettings::bitwidth),
                           settings_field("symmetric", &AimetSettings::symmetric),
                           settings_field("per_channel", &AimetSettings::per_channel));
  }
  /// `j`, a JSON object of the family's keys for role, read key by key (ValueError naming
  /// `path`.key for an unknown key or a wrong type or value).
  static AimetSettings parse(const nlohmann::json& j, QuantRole role, const std::string& path);
  /// The quantizer factory of role these settings describe (the family's defaults for the keys
  /// left out); ValueError naming `path` for keys that do not go together.
  QuantizerFactories factories(QuantRole role, const std::string& path) const;
  /// Same keys given, with equal values.
  bool operator==(const AimetSettings& o) const { return settings_equal(*this, o); }
};

}  // namespace qgrad::quant
