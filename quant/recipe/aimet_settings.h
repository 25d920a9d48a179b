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

struct AimetSettings {
  std::optional<std::int64_t> bitwidth;
  std::optional<bool> symmetric;
  std::optional<bool> per_channel;

  static auto fields() {
    return std::make_tuple(settings_field("bitwidth", &AimetSettings::bitwidth),
                           settings_field("symmetric", &AimetSettings::symmetric),
                           settings_field("per_channel", &AimetSettings::per_channel));
  }
  static AimetSettings parse(const nlohmann::json& j, QuantRole role, const std::string& path);
  QuantizerFactories factories(QuantRole role, const std::string& path) const;
  bool operator==(const AimetSettings& o) const { return settings_equal(*this, o); }
};

}  // namespace qgrad::quant
